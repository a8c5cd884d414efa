"""Job conditions as batch/v1 writes them: the types, reasons and messages, reading them off a Job,
and making or updating one (upstream's `ensureJobConditionStatus`)."""

from __future__ import annotations

from typing import Any

from ...machinery.timestamps import rfc3339_seconds

Obj = dict[str, Any]


# condition types and reasons (batch/v1)
COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
FAILURE_TARGET, SUCCESS_CRITERIA_MET = "FailureTarget", "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"
REASON_DEADLINE = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
REASON_FAILED_INDEXES = "FailedIndexes"
REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"
MSG_FAILED_INDEXES = "Job has failed indexes"
MSG_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"


def find_condition(job: Obj, ctype: str) -> dict | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def condition_true(job: Obj, ctype: str) -> bool:
    c = find_condition(job, ctype)
    return bool(c and c.get("status") == "True")


def is_job_finished(job: Obj) -> bool:
    """util.IsJobFinished: a Complete or Failed condition that is True."""
    return condition_true(job, COMPLETE) or condition_true(job, FAILED)


def finish_time(job: Obj) -> float | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in (COMPLETE, FAILED) and c.get("status") == "True":
            return rfc3339_seconds(c.get("lastTransitionTime"))
    return None


def new_condition(now: str, ctype: str, reason: str, message: str, status: str = "True") -> dict:
    """A condition whose probe and transition times are `now` (RFC 3339)."""
    return {"type": ctype, "status": status, "lastProbeTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def ensure_condition(job: Obj, now: str, ctype: str, status: str, reason: str, message: str) -> bool:
    """ensureJobConditionStatus: update a condition of that type when anything differs; add one
    only when its status is not False. True when the conditions changed."""
    conds = job["status"].setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == ctype:
            if c.get("status") != status or c.get("reason") != reason or c.get("message") != message:
                conds[i] = new_condition(now, ctype, reason, message, status)
                return True
            return False
    if status != "False":
        conds.append(new_condition(now, ctype, reason, message, status))
        return True
    return False
