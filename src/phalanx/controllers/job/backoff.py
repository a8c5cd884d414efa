"""The Job's failure backoff: when a pod ended, the exponential delay (10 s doubling to 10 min)
before a failed pod is replaced, per Job in memory as upstream keeps it, and whether container
restarts of `OnFailure` pods used up `backoffLimit`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...machinery.timestamps import rfc3339_seconds
from ..podcontrol import pod_condition, pod_phase
from .util import int_or

Obj = dict[str, Any]

DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0
DEFAULT_BACKOFF_LIMIT = 6


def pod_finished_time(pod: Obj) -> float:
    """When the pod ended: its containers' latest finishedAt, else Ready=False's transition, else the
    deletion time minus the grace period, else its creation."""
    st = pod.get("status") or {}
    latest = None
    statuses = st.get("containerStatuses") or []
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated")
        t = rfc3339_seconds((term or {}).get("finishedAt"))
        if t is None:
            latest = None
            break
        latest = t if latest is None else max(latest, t)
    if statuses and latest is not None:
        return latest
    ready = pod_condition(pod, "Ready")
    if ready and ready.get("status") == "False":
        t = rfc3339_seconds(ready.get("lastTransitionTime"))
        if t is not None:
            return t
    md = pod.get("metadata") or {}
    t = rfc3339_seconds(md.get("deletionTimestamp"))
    if t is not None:
        return t - (md.get("deletionGracePeriodSeconds") or 0)
    return rfc3339_seconds(md.get("creationTimestamp")) or 0.0


@dataclass
class BackoffRecord:
    key: str
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def remaining(self, now: float, base: float = DEFAULT_POD_FAILURE_BACKOFF,
                  cap: float = MAX_POD_FAILURE_BACKOFF) -> float:
        return remaining_for_failures(now, base, cap, self.failures_after_last_success, self.last_failure_time)


def remaining_for_failures(now: float, base: float, cap: float, failures: int, last: float | None) -> float:
    if failures == 0 or last is None:
        return 0.0
    backoff = base
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= cap:
            backoff = cap
            break
    elapsed = now - last
    return 0.0 if backoff < elapsed else backoff - elapsed


class BackoffStore:
    """Per-Job count of pod failures since the last success (in memory, as upstream)."""

    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def new_record(self, key: str, succeeded: list[Obj], failed: list[Obj]) -> BackoffRecord:
        old = self._records.get(key)
        rec = BackoffRecord(key, old.failures_after_last_success, old.last_failure_time) if old else BackoffRecord(key)
        s_times = sorted(pod_finished_time(p) for p in succeeded)
        f_times = sorted(pod_finished_time(p) for p in failed)
        if not s_times:
            if f_times:
                rec.failures_after_last_success += len(f_times)
                rec.last_failure_time = f_times[-1]
            return rec
        rec.failures_after_last_success, rec.last_failure_time = 0, None
        last_success = s_times[-1]
        for t in reversed(f_times):
            if t <= last_success:
                break
            if rec.last_failure_time is None:
                rec.last_failure_time = t
            rec.failures_after_last_success += 1
        return rec

    def update(self, rec: BackoffRecord) -> None:
        self._records[rec.key] = rec

    def remove(self, key: str) -> None:
        self._records.pop(key, None)



def past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
    """Container restarts of OnFailure pods count toward backoffLimit: any restart with
    `backoffLimit: 0`, otherwise at least backoffLimit restarts among running/pending pods."""
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    total = 0
    for p in pods:
        if pod_phase(p) in ("Running", "Pending"):
            st = p.get("status") or {}
            for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
                total += cs.get("restartCount") or 0
    limit = int_or(spec.get("backoffLimit"), DEFAULT_BACKOFF_LIMIT)
    return total > 0 if limit == 0 else total >= limit
