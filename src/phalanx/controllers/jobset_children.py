"""A JobSet's child Jobs and its `status.replicatedJobsStatus`, kept up to date from Job events.

    index = ChildJobIndex.build(js, jobs_of_js, current_statuses)  # once, or when it must start over
    index.mark(job_key)                                            # from the Job informer's handlers
    index.refresh(js, lookup)                                      # in the sync: the marked Jobs only
    index.owned()                                                  # ChildJobs by category
    index.statuses(js)                                             # replicatedJobsStatus

The JobSet controller reads every child Job for each sync; for a JobSet of hundreds of Jobs whose
status changes one Job at a time, it keeps them here instead: each Job's category (active,
successful, failed, or of an older restart attempt) and what it adds to its replicatedJob's counts
(ready, succeeded, failed, active, suspended), so a sync looks again only at the Jobs whose events
came in since the last one. The status entries it returns are the very objects of the last sync for
every replicatedJob whose counts did not change (never changed in place: they are shared with the
JobSet written to the API), so comparing and writing the status costs what changed.

An index is only a cache of what the informer holds: the controller builds a new one whenever it
cannot trust it (a new JobSet uid, another restart attempt, other replicatedJobs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..machinery.meta import controller_of

Obj = dict[str, Any]

REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
RESTARTS_KEY = "jobset.sigs.k8s.io/restart-attempt"

ACTIVE, SUCCESSFUL, FAILED, PREVIOUS = "active", "successful", "failed", "previous"
COUNT_FIELDS = ("ready", "succeeded", "failed", "active", "suspended")


@dataclass
class ChildJobs:
    active: list[Obj] = field(default_factory=list)
    successful: list[Obj] = field(default_factory=list)
    failed: list[Obj] = field(default_factory=list)
    previous: list[Obj] = field(default_factory=list)  # from an older restart attempt

    def all(self) -> list[Obj]:
        return self.active + self.successful + self.failed + self.previous


def job_finished_type(job: Obj) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def _restarts(js: Obj) -> int:
    return int((js.get("status") or {}).get("restarts") or 0)


def _rjob_names(js: Obj) -> tuple[str, ...]:
    return tuple(rj.get("name", "") for rj in (js.get("spec") or {}).get("replicatedJobs") or []
                 if isinstance(rj, dict))


def restart_attempt(job: Obj) -> int:
    try:
        return int((job["metadata"].get("labels") or {}).get(RESTARTS_KEY, ""))
    except ValueError:
        raise ValueError(f"invalid value for label {RESTARTS_KEY}, must be integer") from None


def _replicas(rj: Obj) -> int:
    r = rj.get("replicas", 1)
    return r if isinstance(r, int) else 1


def _job_is_ready(job: Obj) -> bool:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    pods = spec.get("parallelism", 1) or 0
    if spec.get("completions") is not None and spec["completions"] < pods:
        pods = spec["completions"]
    return int(status.get("succeeded") or 0) + int(status.get("ready") or 0) >= pods


@dataclass(frozen=True)
class _Child:
    job: Obj
    rjob: str
    category: str
    counts: tuple[int, int, int, int, int]  # what it adds to its replicatedJob, in COUNT_FIELDS order


def classify(job: Obj, restarts: int) -> _Child:
    """The Job's category and its share of its replicatedJob's counts."""
    rjob = (job["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME_KEY, "")
    if restart_attempt(job) < restarts:
        return _Child(job, rjob, PREVIOUS, (0, 0, 0, 0, 0))
    finished = job_finished_type(job)
    if finished == "Failed":
        return _Child(job, rjob, FAILED, (0, 0, 1, 0, 0))
    if finished is not None:
        return _Child(job, rjob, SUCCESSFUL, (0, 1, 0, 0, 0))
    counts = (int(_job_is_ready(job)), 0, 0, int(int((job.get("status") or {}).get("active") or 0) > 0),
              int(bool((job.get("spec") or {}).get("suspend"))))
    return _Child(job, rjob, ACTIVE, counts)


class ChildJobIndex:
    """The child Jobs of one JobSet (uid, restart attempt and replicatedJobs fixed) by key."""

    def __init__(self, uid: str, restarts: int, rjobs: tuple[str, ...]):
        self.uid = uid
        self.restarts = restarts
        self.rjobs = rjobs
        self.children: dict[str, _Child] = {}
        self.by_category: dict[str, dict[str, Obj]] = {c: {} for c in (ACTIVE, SUCCESSFUL, FAILED, PREVIOUS)}
        self.counts: dict[str, list[int]] = {}
        self.entries: dict[str, Obj] = {}  # replicatedJob name -> its status entry as last returned
        self.changed: set[str] = set(rjobs)  # replicatedJobs whose entry must be made again
        self.dirty: set[str] = set()  # Job keys with events since the last refresh
        self.suspended = 0  # active Jobs with spec.suspend
        self._expected: tuple[Any, frozenset[str]] = (None, frozenset())  # (replicatedJobs, Job names)

    @classmethod
    def build(cls, js: Obj, jobs: list[Obj], current: list[Obj] | None) -> "ChildJobIndex":
        """From every Job the JobSet controls; `current`: its status entries now (reused where equal)."""
        md = js["metadata"]
        index = cls(md.get("uid", ""), _restarts(js), _rjob_names(js))
        children = [(f"{j['metadata'].get('namespace', '')}/{j['metadata']['name']}", classify(j, index.restarts))
                    for j in jobs if j["metadata"].get("namespace") == md.get("namespace")]
        for key, child in children:
            index._add(key, child)
        for entry in current or []:
            if isinstance(entry, dict) and entry.get("name") in index.counts:
                index.entries[entry["name"]] = entry
        return index

    def fits(self, js: Obj) -> bool:
        """Whether this index still describes `js` (else build a new one)."""
        return (self.uid == js["metadata"].get("uid", "") and self.restarts == _restarts(js)
                and self.rjobs == _rjob_names(js))

    def mark(self, job_key: str) -> None:
        self.dirty.add(job_key)

    def refresh(self, js: Obj, lookup: Callable[[str], Obj | None]) -> None:
        """Look again at the Jobs marked since the last refresh: `lookup(key)` is the informer's
        Job now (None when gone). A Job no longer controlled by this JobSet leaves the index.
        Raises ValueError (the index unchanged for that Job) on an invalid restart-attempt label."""
        dirty, self.dirty = self.dirty, set()
        namespace = js["metadata"].get("namespace")
        for key in sorted(dirty):
            job = lookup(key)
            mine = (job is not None and job["metadata"].get("namespace") == namespace
                    and (controller_of(job) or {}).get("uid") == self.uid)
            old = self.children.get(key)
            if old is not None and (not mine or old.job is not job):
                self._remove(key, old)
            if mine and (old is None or old.job is not job):
                assert job is not None
                try:
                    child = classify(job, self.restarts)
                except ValueError:
                    self.dirty.add(key)
                    raise
                self._add(key, child)

    def _add(self, key: str, child: _Child) -> None:
        self.children[key] = child
        self.by_category[child.category][key] = child.job
        self._count(child, 1)

    def _remove(self, key: str, child: _Child) -> None:
        del self.children[key]
        del self.by_category[child.category][key]
        self._count(child, -1)

    def _count(self, child: _Child, sign: int) -> None:
        if child.category == PREVIOUS:
            return
        counts = self.counts.setdefault(child.rjob, [0, 0, 0, 0, 0])
        for i, n in enumerate(child.counts):
            counts[i] += sign * n
        self.suspended += sign * child.counts[4]
        self.changed.add(child.rjob)

    def owned(self) -> ChildJobs:
        by = self.by_category
        return ChildJobs(list(by[ACTIVE].values()), list(by[SUCCESSFUL].values()), list(by[FAILED].values()),
                         list(by[PREVIOUS].values()))

    def names(self) -> set[str]:
        """The names of every Job in the index (of this attempt or an older one)."""
        return {key.partition("/")[2] for key in self.children}

    def all_created(self, js: Obj, job_name: Callable[[str, int], str]) -> bool:
        """Whether every Job the JobSet's replicatedJobs call for exists in this restart attempt
        (`job_name(replicatedJob, index)` names them); the names are worked out again only when
        the spec's replicatedJobs are another object."""
        rjobs = (js.get("spec") or {}).get("replicatedJobs") or []
        if self._expected[0] is not rjobs:
            names = frozenset(job_name(rj.get("name", ""), i) for rj in rjobs if isinstance(rj, dict)
                              for i in range(_replicas(rj)))
            self._expected = (rjobs, names)
        expected = self._expected[1]
        if len(self.children) - len(self.by_category[PREVIOUS]) < len(expected):
            return False
        current = {key.partition("/")[2] for c in (ACTIVE, SUCCESSFUL, FAILED) for key in self.by_category[c]}
        return expected <= current

    def statuses(self) -> list[Obj]:
        """`status.replicatedJobsStatus`, one entry per replicatedJob in spec order; an entry whose
        counts did not change since the last call is the same object as then."""
        for name in self.changed:
            if name not in self.rjobs:
                continue
            entry = {"name": name, **dict(zip(COUNT_FIELDS, self.counts.get(name) or (0, 0, 0, 0, 0)))}
            if self.entries.get(name) != entry:
                self.entries[name] = entry
        self.changed.clear()
        return [self.entries[name] for name in self.rjobs]


__all__ = ["ChildJobIndex", "ChildJobs", "classify", "job_finished_type", "restart_attempt"]
