"""What one sync of a Job knows, and the Job's status tracking: which finished pods are counted,
`status.uncountedTerminatedPods` before the counters (a crash between the two steps never counts
a pod twice), `completedIndexes` / `failedIndexes`, the interim conditions that become Complete or
Failed once no pod is left terminating, and the JobStatus as the API serializes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...machinery.meta import deep_copy
from ..podcontrol import pod_phase
from .backoff import BackoffRecord
from .conditions import (COMPLETE, FAILED, FAILURE_TARGET, SUCCESS_CRITERIA_MET, condition_true, ensure_condition,
                         find_condition, new_condition)
from .indexes import Intervals
from .pod_failure_policy import match_pod_failure_policy
from .util import completion_index, has_backoff_limit_per_index, has_tracking_finalizer, int_or, is_indexed, \
    is_pod_failed, uid_of

Obj = dict[str, Any]

MAX_UNCOUNTED_PODS = 500

# batch/v1 JobStatus fields in the order the API serializes them
STATUS_FIELD_ORDER = ("conditions", "startTime", "completionTime", "active", "succeeded", "failed", "terminating",
                      "completedIndexes", "failedIndexes", "uncountedTerminatedPods", "ready")


@dataclass
class SyncContext:
    """The Job being synced (a private copy), its pods, and what the sync found so far. `pods` are
    the pods no longer active that still hold the tracking finalizer (those whose end is still to
    count, `podstate.py`), `active_pods` the active ones."""

    job: Obj
    pods: list[Obj]
    active_pods: list[Obj]
    ready: int
    terminating: int
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_rm_finalizers: set[str]
    succeeded: int = 0
    failed: int = 0
    finished: dict | None = None
    prev_succeeded_indexes: Intervals = field(default_factory=Intervals)
    succeeded_indexes: Intervals = field(default_factory=Intervals)
    failed_indexes: Intervals | None = None
    new_backoff: BackoffRecord | None = None
    delayed_deletion: dict[int, Obj] = field(default_factory=dict)
    pod_group: str | None = None  # the PodGroup the pods join (Kubernetes 1.37 WorkloadWithJob)
    terminating_pods: list[Obj] = field(default_factory=list)
    active_indexes: dict[int, int] = field(default_factory=dict)  # completion index -> active pods
    with_finalizer: set[str] = field(default_factory=set)  # uids of the pods holding the finalizer
    has_pods: bool = False
    failed_pods: list[Obj] = field(default_factory=list)  # phase Failed; filled when podFailurePolicy is set


@dataclass
class FinishedPods:
    """Finished pods whose tracking finalizer can go, and what counting them changed."""

    to_remove: list[Obj] = field(default_factory=list)
    new_succeeded_indexes: list[int] = field(default_factory=list)
    reached_max: bool = False
    changed: bool = False


def valid_pods(ctx: SyncContext, uncounted: set[str] | None, pred: Callable[[Obj], bool]) -> list[Obj]:
    """Tracked pods (finalizer present, not yet counted, index in range) that satisfy `pred`."""
    out = []
    completions = int_or((ctx.job.get("spec") or {}).get("completions"))
    indexed = is_indexed(ctx.job)
    for p in ctx.pods:
        uid = uid_of(p)
        if not has_tracking_finalizer(p) or (uncounted and uid in uncounted) or uid in ctx.expected_rm_finalizers:
            continue
        if indexed and not 0 <= completion_index(p) < completions:
            continue
        if pred(p):
            out.append(p)
    return out


def new_finished_pods(ctx: SyncContext) -> tuple[list[Obj], list[Obj]]:
    """The tracked pods that succeeded and failed since the status last counted them."""
    succeeded = valid_pods(ctx, ctx.uncounted_succeeded, lambda p: pod_phase(p) == "Succeeded")
    failed = valid_pods(ctx, ctx.uncounted_failed, lambda p: is_pod_failed(p, ctx.job))
    return succeeded, failed


def can_remove_finalizer(ctx: SyncContext, pod: Obj, considered_failed: bool) -> bool:
    """A finished pod's finalizer can go, unless it is the failed pod its index's replacement waits for."""
    if ctx.job["metadata"].get("deletionTimestamp") or ctx.finished is not None or pod_phase(pod) == "Succeeded":
        return True
    if not considered_failed:
        return False
    if has_backoff_limit_per_index(ctx.job):
        ix = completion_index(pod)
        if ix >= 0:
            p = ctx.delayed_deletion.get(ix)
            if p is not None and uid_of(p) == uid_of(pod):
                return False
    return True


def clean_uncounted(status: Obj, with_finalizer: set[str]) -> bool:
    """Move uncounted pods whose finalizer is gone into the counters."""
    unc = status["uncountedTerminatedPods"]
    updated = False
    for field_, counter in (("succeeded", "succeeded"), ("failed", "failed")):
        keep = [u for u in unc[field_] if u in with_finalizer]
        if len(keep) != len(unc[field_]):
            updated = True
            status[counter] = int_or(status.get(counter)) + len(unc[field_]) - len(keep)
            unc[field_] = keep
    return updated


def collect_finished_pods(ctx: SyncContext, pods: list[Obj]) -> FinishedPods:
    """Walk the tracked pods: each finished one whose finalizer can go is listed for removal and
    recorded (uncounted uids, new succeeded indexes), at most MAX_UNCOUNTED_PODS at a time."""
    found = FinishedPods()
    unc = ctx.job["status"]["uncountedTerminatedPods"]
    success_target = ctx.finished is not None and ctx.finished.get("type") == SUCCESS_CRITERIA_MET
    for pod in pods:
        if not has_tracking_finalizer(pod) or uid_of(pod) in ctx.expected_rm_finalizers:
            continue
        considered_failed = is_pod_failed(pod, ctx.job)
        if not can_remove_finalizer(ctx, pod, considered_failed):
            continue
        found.to_remove.append(pod)
        if pod_phase(pod) == "Succeeded" and uid_of(pod) not in ctx.uncounted_failed:
            found.changed = _record_succeeded(ctx, pod, found) or found.changed
        elif considered_failed or (ctx.finished is not None and not success_target):
            found.changed = _record_failed(ctx, pod) or found.changed
        if len(found.new_succeeded_indexes) + len(unc["succeeded"]) + len(unc["failed"]) >= MAX_UNCOUNTED_PODS:
            found.reached_max = True
            break
    return found


def _record_succeeded(ctx: SyncContext, pod: Obj, found: FinishedPods) -> bool:
    if is_indexed(ctx.job):
        ix = completion_index(pod)
        if 0 <= ix < int_or(ctx.job["spec"].get("completions")) and not ctx.prev_succeeded_indexes.has(ix):
            found.new_succeeded_indexes.append(ix)
            return True
        return False
    uid = uid_of(pod)
    if uid in ctx.uncounted_succeeded:
        return False
    ctx.job["status"]["uncountedTerminatedPods"]["succeeded"].append(uid)
    return True


def _record_failed(ctx: SyncContext, pod: Obj) -> bool:
    uid = uid_of(pod)
    if uid in ctx.uncounted_failed:
        return False
    if is_indexed(ctx.job) and not 0 <= completion_index(pod) < int_or(ctx.job["spec"].get("completions")):
        return False
    policy = ctx.job["spec"].get("podFailurePolicy")
    if policy and not match_pod_failure_policy(policy, pod)[1]:
        return False
    ctx.job["status"]["uncountedTerminatedPods"]["failed"].append(uid)
    return True


def update_indexes_status(ctx: SyncContext, new_succeeded_indexes: list[int]) -> bool:
    """`succeeded`, `completedIndexes` and `failedIndexes` of an Indexed Job; True when they changed."""
    status = ctx.job["status"]
    changed = False
    ctx.succeeded_indexes = ctx.succeeded_indexes.with_indexes(new_succeeded_indexes)
    text = str(ctx.succeeded_indexes)
    if text != (status.get("completedIndexes") or ""):
        changed = True
    status["succeeded"] = ctx.succeeded_indexes.total()
    status["completedIndexes"] = text
    failed_text = str(ctx.failed_indexes) if ctx.failed_indexes is not None else None
    if failed_text != status.get("failedIndexes"):
        status["failedIndexes"] = failed_text
        changed = True
    return changed


def promote_interim_condition(ctx: SyncContext, now: str) -> bool:
    """Write the interim FailureTarget / SuccessCriteriaMet condition, and aim for Failed / Complete
    next; True when the conditions changed."""
    status = ctx.job["status"]
    changed = False
    finished = ctx.finished
    if finished is not None and finished.get("type") == FAILURE_TARGET:
        status.setdefault("conditions", []).append(finished)
        changed = True
        finished = ctx.finished = new_condition(now, FAILED, finished.get("reason", ""), finished.get("message", ""))
    if finished is not None and finished.get("type") == SUCCESS_CRITERIA_MET and finished.get("status") == "True":
        if not condition_true(ctx.job, SUCCESS_CRITERIA_MET):
            status.setdefault("conditions", []).append(finished)
            changed = True
        ctx.finished = new_condition(now, COMPLETE, finished.get("reason", ""), finished.get("message", ""))
    return changed


def enact_job_finished(ctx: SyncContext, now: str) -> bool:
    """Set the final condition (and completionTime) once every pod is counted and none terminates."""
    if ctx.finished is None:
        return False
    status = ctx.job["status"]
    unc = status["uncountedTerminatedPods"]
    if unc["succeeded"] or unc["failed"] or ctx.terminating > 0:
        return False
    c = ctx.finished
    ensure_condition(ctx.job, now, c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
    complete = find_condition(ctx.job, COMPLETE) if c["type"] == COMPLETE else None
    if complete is not None:
        status["completionTime"] = complete["lastTransitionTime"]
    return True


def status_for_write(status: Obj) -> Obj:
    """The JobStatus as the API serializes it: zero counters and empty lists omitted."""
    out = deep_copy(status)
    for f in ("active", "succeeded", "failed"):
        if not out.get(f):
            out.pop(f, None)
    if not out.get("completedIndexes"):
        out.pop("completedIndexes", None)
    if out.get("failedIndexes") is None:
        out.pop("failedIndexes", None)
    unc = out.get("uncountedTerminatedPods") or {}
    out["uncountedTerminatedPods"] = {k: v for k, v in unc.items() if v}
    if not out.get("conditions"):
        out.pop("conditions", None)
    ordered = {k: out.pop(k) for k in STATUS_FIELD_ORDER if k in out}
    ordered.update(out)
    return ordered
