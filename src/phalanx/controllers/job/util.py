"""Small reads of a Job and its pods the Job controller's modules share: the well-known names
(finalizer, annotations, controller name), the Job's modes, and which pods count as failed."""

from __future__ import annotations

from typing import Any

from ..podcontrol import pod_phase

Obj = dict[str, Any]

COMPONENT = "job-controller"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
JOB_INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"


def is_indexed(job: Obj) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def has_backoff_limit_per_index(job: Obj) -> bool:
    return (job.get("spec") or {}).get("backoffLimitPerIndex") is not None


def job_suspended(job: Obj) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def only_replace_failed_pods(job: Obj) -> bool:
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def managed_by_external(job: Obj) -> str | None:
    mb = (job.get("spec") or {}).get("managedBy")
    return mb if mb and mb != JOB_CONTROLLER_NAME else None


def has_tracking_finalizer(pod: Obj) -> bool:
    return JOB_TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or [])


def completion_index(pod: Obj) -> int:
    """The pod's completion index annotation, or -1 when missing or invalid."""
    v: Any = ((pod.get("metadata") or {}).get("annotations") or {}).get(JOB_COMPLETION_INDEX)
    try:
        i = int(v)
    except (TypeError, ValueError):
        return -1
    return i if i >= 0 else -1


def is_pod_failed(pod: Obj, job: Obj) -> bool:
    """A Failed pod, or (unless only failed pods are replaced) a deleted pod that did not succeed."""
    if pod_phase(pod) == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and pod_phase(pod) != "Succeeded"



def int_or(v: Any, default: int = 0) -> int:
    """`v` when it is an int (not a bool), else `default`."""
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def parse_int32(v: Any) -> int:
    """A non-negative int32 from an annotation value, 0 when missing or out of range."""
    try:
        i = int(v)
    except (TypeError, ValueError):
        return 0
    return i if 0 <= i <= 2**31 - 1 else 0


def uid_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("uid", "")
