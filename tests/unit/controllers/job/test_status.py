"""Job status bookkeeping: conditions (ensureJobConditionStatus), the JobStatus as written, the
backoff before failed pods are replaced."""

from __future__ import annotations

import pytest

from phalanx.controllers.job.backoff import remaining_for_failures
from phalanx.controllers.job.conditions import ensure_condition, is_job_finished
from phalanx.controllers.job.status import status_for_write

NOW = "2026-01-01T00:00:00Z"


def job_with(*conditions: dict) -> dict:
    return {"status": {"conditions": list(conditions)}}


def cond(ctype: str, status: str = "True", reason: str = "R", message: str = "m") -> dict:
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastProbeTime": "2025-12-31T00:00:00Z", "lastTransitionTime": "2025-12-31T00:00:00Z"}


@pytest.mark.parametrize("existing,args,changed,after", [
    ([], ("Suspended", "True", "JobSuspended", "Job suspended"), True,
     [("Suspended", "True", "JobSuspended", NOW)]),
    ([], ("Suspended", "False", "JobResumed", "Job resumed"), False, []),  # a False condition is not added
    ([cond("Suspended", reason="JobSuspended", message="Job suspended")],
     ("Suspended", "True", "JobSuspended", "Job suspended"), False,
     [("Suspended", "True", "JobSuspended", "2025-12-31T00:00:00Z")]),
    ([cond("Suspended", reason="JobSuspended", message="Job suspended")],
     ("Suspended", "False", "JobResumed", "Job resumed"), True, [("Suspended", "False", "JobResumed", NOW)]),
])
def test_ensure_condition(existing, args, changed, after):
    job = job_with(*existing)
    assert ensure_condition(job, NOW, *args) is changed
    assert [(c["type"], c["status"], c["reason"], c["lastTransitionTime"]) for c in job["status"]["conditions"]] \
        == after


@pytest.mark.parametrize("conditions,finished", [
    ([], False),
    ([cond("SuccessCriteriaMet")], False),
    ([cond("Complete")], True),
    ([cond("Failed")], True),
    ([cond("Failed", status="False")], False),
])
def test_a_job_is_finished_by_a_true_complete_or_failed_condition(conditions, finished):
    assert is_job_finished(job_with(*conditions)) is finished


def test_status_is_written_in_api_order_without_zero_counters_and_empty_lists():
    status = {"ready": 0, "uncountedTerminatedPods": {"succeeded": [], "failed": ["u1"]}, "active": 0,
              "succeeded": 2, "startTime": NOW, "conditions": [], "completedIndexes": "", "failedIndexes": None,
              "terminating": 0}
    assert list(status_for_write(status).items()) == [
        ("startTime", NOW), ("succeeded", 2), ("terminating", 0),
        ("uncountedTerminatedPods", {"failed": ["u1"]}), ("ready", 0)]


@pytest.mark.parametrize("failures,elapsed,remaining", [
    (0, 0, 0.0),      # nothing failed: no wait
    (1, 4, 6.0),      # 10 s after the first failure
    (2, 4, 16.0),     # doubling
    (3, 50, 0.0),     # 40 s passed
    (20, 0, 600.0),   # capped at 10 min
])
def test_failure_backoff(failures, elapsed, remaining):
    assert remaining_for_failures(1000.0 + elapsed, 10.0, 600.0, failures, 1000.0) == remaining
