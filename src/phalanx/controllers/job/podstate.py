"""Per-Job pod state kept from the pod informer's events, so that a Job sync reads only what it
needs (the active pods, the finished pods still to count) instead of walking every pod of the Job.

    states = JobPodStates()
    # pod informer handlers:
    states.observe(old_or_None, new)      # add / update
    states.forget(pod)                    # delete
    # in a sync:
    state = states.for_job(job, lambda: pod_informer.by_index(INDEX_CONTROLLER_UID, uid))

A Job's `JobPods` sorts the pods it controls into buckets, each updated in O(1) per event:
`active` (with `ready` and the count of active pods per completion index), `terminating`,
`finishing` (no longer active but still holding the `batch.kubernetes.io/job-tracking` finalizer:
the pods whose end the status has yet to count), `failed` (phase Failed, for the pod failure
policy's FailJob rules), `with_finalizer` (uids), and `unmatched`
(controlled pods the Job's selector no longer matches: to release). Nothing here is the source of
truth: the state of a Job is built from the informer's cache the first time a sync asks for it
(so a restarted controller rebuilds it), then follows the informer's events, which the informer
delivers in the same step as it updates its cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...machinery.selectors import LabelSelector
from ...machinery.meta import controller_of
from ..podcontrol import is_pod_active, is_pod_ready, is_pod_terminating, pod_phase, selector_of
from .util import completion_index, has_tracking_finalizer, uid_of

Obj = dict[str, Any]


class JobPods:
    """The pods one Job controls, by what a sync needs of them (see the module docstring)."""

    __slots__ = ("selector_spec", "selector", "members", "active", "ready", "active_indexes", "index_of",
                 "terminating", "finishing", "failed", "with_finalizer", "unmatched")

    def __init__(self, selector_spec: Any, selector: LabelSelector):
        self.selector_spec = selector_spec
        self.selector = selector
        self.members: set[str] = set()  # every claimed pod
        self.active: dict[str, Obj] = {}
        self.ready: set[str] = set()
        self.active_indexes: dict[int, int] = {}  # completion index -> active pods holding it
        self.index_of: dict[str, int] = {}  # active pod uid -> its completion index
        self.terminating: dict[str, Obj] = {}
        self.finishing: dict[str, Obj] = {}
        self.failed: dict[str, Obj] = {}  # phase Failed, counted or not (the FailJob rules look at all)
        self.with_finalizer: set[str] = set()
        self.unmatched: dict[str, Obj] = {}

    def put(self, pod: Obj) -> None:
        """Record the pod's current form (replacing what was recorded for its uid)."""
        uid = uid_of(pod)
        self.remove(uid)
        if not self.selector.matches((pod.get("metadata") or {}).get("labels") or {}):
            self.unmatched[uid] = pod
            return
        self.members.add(uid)
        tracked = has_tracking_finalizer(pod)
        if tracked:
            self.with_finalizer.add(uid)
        if is_pod_active(pod):
            self.active[uid] = pod
            if is_pod_ready(pod):
                self.ready.add(uid)
            ix = completion_index(pod)
            self.index_of[uid] = ix
            self.active_indexes[ix] = self.active_indexes.get(ix, 0) + 1
            return
        if is_pod_terminating(pod):
            self.terminating[uid] = pod
        elif pod_phase(pod) == "Failed":
            self.failed[uid] = pod
        if tracked:
            self.finishing[uid] = pod

    def remove(self, uid: str) -> None:
        """Forget the pod with this uid (no-op when unknown)."""
        self.unmatched.pop(uid, None)
        if uid not in self.members:
            return
        self.members.discard(uid)
        self.with_finalizer.discard(uid)
        if self.active.pop(uid, None) is not None:
            self.ready.discard(uid)
            ix = self.index_of.pop(uid)
            left = self.active_indexes[ix] - 1
            if left:
                self.active_indexes[ix] = left
            else:
                del self.active_indexes[ix]
        self.terminating.pop(uid, None)
        self.finishing.pop(uid, None)
        self.failed.pop(uid, None)


def _controller_uid(pod: Obj) -> str | None:
    ref = controller_of(pod)
    return ref.get("uid") if ref is not None else None


class JobPodStates:
    """`JobPods` by Job uid, for the Jobs a sync has asked about, kept up to date from pod events."""

    def __init__(self) -> None:
        self.jobs: dict[str, JobPods] = {}

    def for_job(self, job: Obj, cached_pods: Callable[[], Iterable[Obj]]) -> JobPods:
        """The Job's state; built from `cached_pods()` (the informer's pods the Job controls) the
        first time, or again when the Job's selector is not the one the state was built with."""
        uid = uid_of(job)
        spec_selector = (job.get("spec") or {}).get("selector")
        state = self.jobs.get(uid)
        if state is not None and state.selector_spec == spec_selector:
            return state
        state = JobPods(spec_selector, selector_of(job))
        for pod in cached_pods():
            state.put(pod)
        self.jobs[uid] = state
        return state

    def drop(self, job_uid: str) -> None:
        self.jobs.pop(job_uid, None)

    def observe(self, old: Obj | None, new: Obj) -> None:
        """A pod was added or updated: move it between Jobs when its controller changed."""
        owner = _controller_uid(new)
        if old is not None:
            old_owner = _controller_uid(old)
            if old_owner is not None and old_owner != owner:
                state = self.jobs.get(old_owner)
                if state is not None:
                    state.remove(uid_of(old))
        if owner is not None:
            state = self.jobs.get(owner)
            if state is not None:
                state.put(new)

    def forget(self, pod: Obj) -> None:
        owner = _controller_uid(pod)
        if owner is not None:
            state = self.jobs.get(owner)
            if state is not None:
                state.remove(uid_of(pod))
