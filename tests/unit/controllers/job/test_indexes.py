"""Indexed completion: compressed index ranges, which indexes still need a pod, index pod names,
and the per-index backoff."""

from __future__ import annotations

import pytest

from phalanx.controllers.job.indexes import (Intervals, first_pending_indexes, indexes_ready_for_creation,
                                             pod_generate_name_with_index)


@pytest.mark.parametrize("text,completions,expected", [
    ("", 5, ""), ("0-2,4", 5, "0-2,4"), ("0,1", 5, "0,1"), ("1,2,3", 10, "1-3"), ("3-9", 5, "3,4"), ("7", 5, ""),
])
def test_intervals_round_trip(text, completions, expected):
    assert str(Intervals.parse(text, completions)) == expected


def test_intervals_merge_and_count():
    iv = Intervals.parse("0-2", 10).with_indexes([4, 3, 9])
    assert str(iv) == "0-4,9" and iv.total() == 6 and iv.has(9) and not iv.has(5)


def test_generate_name_with_index_truncates_the_job_name():
    assert pod_generate_name_with_index("pi", 3) == "pi-3-"
    long = "j" * 60
    gen = pod_generate_name_with_index(long, 12)
    assert len(gen) == 58 and gen.endswith("-12-")



@pytest.mark.parametrize("non_pending,count,completions,expected", [
    ("", 3, 5, [0, 1, 2]),
    ("0-1,3", 5, 5, [2, 4]),
    ("0-4", 2, 5, []),
    ("1", 0, 5, []),
    ("2-3", 10, 6, [0, 1, 4, 5]),
])
def test_first_pending_indexes(non_pending, count, completions, expected):
    assert first_pending_indexes(Intervals.parse(non_pending, completions), count, completions) == expected


def failed_at(finished: str, failures: int = 0) -> dict:
    return {"metadata": {"annotations": {"batch.kubernetes.io/job-index-failure-count": str(failures)}},
            "status": {"phase": "Failed", "containerStatuses": [
                {"name": "main", "state": {"terminated": {"exitCode": 1, "finishedAt": finished}}}]}}


@pytest.mark.parametrize("delayed,now_offset,expected", [
    ({}, 0, ([0, 1], 0.0)),                                  # no failed pod: both ready
    ({1: failed_at("2026-01-01T00:00:00Z")}, 5, ([0], 0.0)),  # index 1 waits out its 10 s backoff
    ({0: failed_at("2026-01-01T00:00:00Z"), 1: failed_at("2026-01-01T00:00:00Z", failures=1)}, 5,
     ([], 5.0)),                                             # none ready: the shortest wait is returned
    ({1: failed_at("2026-01-01T00:00:00Z")}, 11, ([0, 1], 0.0)),
])
def test_indexes_ready_for_creation(delayed, now_offset, expected):
    start = 1767225600.0  # 2026-01-01T00:00:00Z
    assert indexes_ready_for_creation([0, 1], delayed, start + now_offset) == expected
