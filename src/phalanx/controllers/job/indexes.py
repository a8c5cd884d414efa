"""Indexed completion: the compressed index ranges of `completedIndexes` / `failedIndexes`
("0-2,4"), which indexes still need a pod, the names and annotations of an index's pod, and
`backoffLimitPerIndex` (an index's failure count, its delayed replacement)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ...machinery.meta import deep_copy
from ..podcontrol import pod_phase
from .backoff import DEFAULT_POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF, pod_finished_time, remaining_for_failures
from .pod_failure_policy import match_pod_failure_policy
from .util import (JOB_COMPLETION_INDEX, JOB_INDEX_FAILURE_COUNT, JOB_INDEX_IGNORED_FAILURE_COUNT, completion_index,
                   has_tracking_finalizer, int_or, is_pod_failed, parse_int32)

Obj = dict[str, Any]

COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
MAX_GENERATED_NAME_LENGTH = 58


class Intervals:
    """An ordered list of disjoint [first, last] index intervals (upstream's orderedIntervals)."""

    __slots__ = ("items",)

    def __init__(self, items: list[tuple[int, int]] | None = None):
        self.items: list[tuple[int, int]] = list(items or [])

    @classmethod
    def parse(cls, text: str | None, completions: int) -> "Intervals":
        out: list[list[int]] = []
        if not text:
            return cls()
        for part in text.split(","):
            limits = part.split("-")
            try:
                first = int(limits[0])
            except ValueError:
                continue
            if first >= completions:
                break
            if len(limits) > 1:
                try:
                    last = int(limits[1])
                except ValueError:
                    continue
                last = min(last, completions - 1)
            else:
                last = first
            if out and out[-1][1] == first - 1:
                out[-1][1] = last
            else:
                out.append([first, last])
        return cls([(a, b) for a, b in out])

    def merge(self, other: "Intervals") -> "Intervals":
        result: list[list[int]] = []

        def push(iv: tuple[int, int]) -> None:
            if not result or iv[0] > result[-1][1] + 1:
                result.append([iv[0], iv[1]])
            elif result[-1][1] < iv[1]:
                result[-1][1] = iv[1]

        a, b, i, j = self.items, other.items, 0, 0
        while i < len(a) and j < len(b):
            if a[i][0] < b[j][0]:
                push(a[i])
                i += 1
            else:
                push(b[j])
                j += 1
        for iv in a[i:]:
            push(iv)
        for iv in b[j:]:
            push(iv)
        return Intervals([(x, y) for x, y in result])

    def with_indexes(self, indexes: list[int]) -> "Intervals":
        return self.merge(Intervals([(i, i) for i in sorted(set(indexes))]))

    def total(self) -> int:
        return sum(b - a + 1 for a, b in self.items)

    def has(self, ix: int) -> bool:
        return any(a <= ix <= b for a, b in self.items)

    def __str__(self) -> str:
        parts = []
        for a, b in self.items:
            if b == a:
                parts.append(str(a))
            elif b == a + 1:
                parts.append(f"{a},{b}")
            else:
                parts.append(f"{a}-{b}")
        return ",".join(parts)

    def __len__(self) -> int:
        return len(self.items)



def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """`<job>-<index>-`, the job name truncated so the prefix stays within 58 characters."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix



def abs_failure_count(pod: Obj) -> int:
    """The index's failures so far: counted plus ignored (by the pod failure policy)."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return parse_int32(ann.get(JOB_INDEX_FAILURE_COUNT)) + parse_int32(ann.get(JOB_INDEX_IGNORED_FAILURE_COUNT))


def add_completion_index_env(template: Obj) -> None:
    """Env `JOB_COMPLETION_INDEX` from the pod's completion-index label on every container."""
    spec = template.setdefault("spec", {})
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            env = c.setdefault("env", [])
            if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                continue
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": f"metadata.labels['{JOB_COMPLETION_INDEX}']"}}})


def add_index_failure_count_annotation(template: Obj, job: Obj, replaced: Obj | None) -> None:
    """The replacement of `replaced` carries its index's failure counts, plus `replaced` itself."""
    failures, ignored = 0, 0
    if replaced is not None:
        ann = (replaced.get("metadata") or {}).get("annotations") or {}
        failures = parse_int32(ann.get(JOB_INDEX_FAILURE_COUNT))
        ignored = parse_int32(ann.get(JOB_INDEX_IGNORED_FAILURE_COUNT))
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        if policy and not match_pod_failure_policy(policy, replaced)[1]:
            ignored += 1
        else:
            failures += 1
    ann = template.setdefault("metadata", {}).setdefault("annotations", {})
    ann[JOB_INDEX_FAILURE_COUNT] = str(failures)
    if ignored > 0:
        ann[JOB_INDEX_IGNORED_FAILURE_COUNT] = str(ignored)


def indexed_pod_template(template: Obj, job: Obj, ix: int, replaced: Obj | None) -> tuple[Obj, str]:
    """A copy of `template` for index `ix` (annotation, label, hostname, failure counts) and its
    generateName."""
    job_name = job["metadata"]["name"]
    t = deep_copy(template)
    md = t.setdefault("metadata", {})
    md.setdefault("annotations", {})[JOB_COMPLETION_INDEX] = str(ix)
    md.setdefault("labels", {})[JOB_COMPLETION_INDEX] = str(ix)
    t.setdefault("spec", {})["hostname"] = f"{job_name}-{ix}"
    if (job.get("spec") or {}).get("backoffLimitPerIndex") is not None:
        add_index_failure_count_annotation(t, job, replaced)
    return t, pod_generate_name_with_index(job_name, ix)


def succeeded_indexes(job: Obj, pods: list[Obj]) -> tuple[Intervals, Intervals]:
    """`completedIndexes` as the status has it, and with the succeeded pods still tracked."""
    completions = int_or((job.get("spec") or {}).get("completions"))
    prev = Intervals.parse((job.get("status") or {}).get("completedIndexes"), completions)
    new = [completion_index(p) for p in pods
           if pod_phase(p) == "Succeeded" and 0 <= completion_index(p) < completions and has_tracking_finalizer(p)]
    return prev, prev.with_indexes(new)


def failed_indexes(job: Obj, pods: list[Obj]) -> Intervals:
    """`failedIndexes` with the indexes whose failures reached `backoffLimitPerIndex`."""
    completions = int_or((job.get("spec") or {}).get("completions"))
    prev = Intervals.parse((job.get("status") or {}).get("failedIndexes"), completions)
    new = [completion_index(p) for p in pods if 0 <= completion_index(p) < completions
           and has_tracking_finalizer(p) and is_index_failed(job, p)]
    return prev.with_indexes(new)


def is_index_failed(job: Obj, pod: Obj) -> bool:
    """The pod's index failed: a FailIndex rule matched, or its counted failures reached the limit."""
    counted = False
    if is_pod_failed(pod, job):
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        if policy:
            _, count, action = match_pod_failure_policy(policy, pod)
            if action == "FailIndex":
                return True
            counted = count
        else:
            counted = True
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    limit = int_or(job["spec"].get("backoffLimitPerIndex"))
    return counted and parse_int32(ann.get(JOB_INDEX_FAILURE_COUNT)) >= limit


def first_pending_indexes(non_pending: Intervals, count: int, completions: int) -> list[int]:
    """The first `count` indexes below `completions` that are not in `non_pending`."""
    if count == 0:
        return []
    out: list[int] = []
    candidate = 0
    for first, last in non_pending.items:
        while candidate < completions and len(out) < count and candidate < first:
            out.append(candidate)
            candidate += 1
        if candidate < last + 1:
            candidate = last + 1
    while candidate < completions and len(out) < count:
        out.append(candidate)
        candidate += 1
    return out


def pods_with_delayed_deletion(failed_pods: list[Obj], active_indexes: Collection[int], succeeded: Intervals,
                               failed: Intervals | None) -> dict[int, Obj]:
    """Per index still pending, its latest failed pod: that pod's finalizer stays until the index's
    replacement exists, so the replacement can carry the index's failure count."""
    out: dict[int, Obj] = {}
    for p in failed_pods:
        ix = completion_index(p)
        if succeeded.has(ix) or (failed and failed.has(ix)) or ix in active_indexes:
            continue
        last = out.get(ix)
        if last is None or (abs_failure_count(last) <= abs_failure_count(p)
                            and pod_finished_time(p) >= pod_finished_time(last)):
            out[ix] = p
    return out


def indexes_ready_for_creation(indexes: list[int], delayed: dict[int, Obj], now: float) -> tuple[list[int], float]:
    """The indexes whose per-index backoff has passed; when none has, the shortest wait left."""
    ready: list[int] = []
    min_remaining: float | None = None
    for ix in indexes:
        last = delayed.get(ix)
        remaining = 0.0
        if last is not None:
            remaining = remaining_for_failures(now, DEFAULT_POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF,
                                               abs_failure_count(last) + 1, pod_finished_time(last))
        if remaining == 0:
            ready.append(ix)
        elif min_remaining is None or remaining < min_remaining:
            min_remaining = remaining
    if ready:
        return ready, 0.0
    return ready, min_remaining or 0.0
