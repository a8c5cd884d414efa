"""What a simulation measures, read from the cluster's informers as it runs: per job, per moment, and
an event log that two runs of the same seed reproduce exactly.

    observer = Observer(factory, clock, start=t0, nodes=spec.nodes, levels={"rack": "example.com/rack"})
    observer.submitted(arrival, name)          # the engine, when it creates a job
    observer.sample()                          # every `sampleEvery` of simulated time
    observer.jobs["train-3"].jct               # per-job records
    summarize(observer.job_rows(), observer.samples)

Per job (`JobRecord`; times are simulated seconds since the scenario started):

- `submitted`: when the engine created it; `first_scheduled`: its first pod bound to a node;
  `gang_scheduled`: `minCount` of its pods bound (gang wait = gang_scheduled - submitted);
  `started`: `minCount` of its pods Running; `finished`: the Job's (JobSet's) `Complete`/`Failed`
  condition (`Completed` for a JobSet);
- queueing delay = started - submitted; JCT = finished - submitted;
- `preempted` / `evicted`: pods that got a `DisruptionTarget` condition (reason
  `PreemptionByScheduler`, or any other: taint eviction after a failure);
- placement spread: how many distinct values of each topology level (rack, block, zone, ...) the
  pods bound when the gang was complete span.

Per sample: GPU allocation (devices in allocated ResourceClaims / devices in ResourceSlices; a shared
claim counts once), CPU allocation (requests of bound, unfinished pods / allocatable of schedulable
nodes), running and pending gangs, fragmentation (the share of free GPUs that sit in domains of the
next waiting gang's topology level that cannot host it: fewer free devices than it needs, counted
per node; a gang without a constraint has the whole cluster as its domain; None when nothing waits
for GPUs), preemptions and evictions so far, nodes down.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from ..cluster.spec import NodeSpec
from ..machinery.quantity import milli_value
from .jobs import JobArrival
from .objects import JOB_LABEL

Obj = dict[str, Any]
PREEMPTION_REASON = "PreemptionByScheduler"
FINISHED = {"Complete": "Complete", "Completed": "Complete", "Failed": "Failed"}


@dataclass
class JobRecord:
    name: str
    kind: str
    pods: int
    min_count: int
    gpus_per_pod: int
    topology: str | None
    shared_claim: bool
    priority: int | None
    user: str | None
    arrival: float
    submitted: float | None = None
    first_scheduled: float | None = None
    gang_scheduled: float | None = None
    started: float | None = None
    finished: float | None = None
    status: str = "Pending"  # Pending, Running, Complete, Failed, Rejected
    preempted: int = 0
    evicted: int = 0
    spread: dict[str, int] = field(default_factory=dict)
    message: str = ""
    bound: int = 0
    running: int = 0
    nodes: set[str] = field(default_factory=set)

    @property
    def gang_wait(self) -> float | None:
        return _minus(self.gang_scheduled, self.submitted)

    @property
    def queueing_delay(self) -> float | None:
        return _minus(self.started, self.submitted)

    @property
    def jct(self) -> float | None:
        return _minus(self.finished, self.submitted)

    def row(self) -> dict[str, Any]:
        """What reports and the JSON/CSV outputs hold of this job."""
        out = {k: v for k, v in asdict(self).items() if k not in ("bound", "running", "nodes", "spread")}
        out.update(gpus=self.pods * self.gpus_per_pod if not self.shared_claim else self.gpus_per_pod,
                   gang_wait=self.gang_wait, queueing_delay=self.queueing_delay, jct=self.jct)
        for level, n in self.spread.items():
            out[f"spread_{level}"] = n
        return out


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


class Observer:
    """Follows Pods, Jobs, JobSets, ResourceClaims and ResourceSlices through informers of the
    cluster's shared factory (read-only: nothing is written)."""

    def __init__(self, factory: Any, clock: Any, *, start: float, nodes: Iterable[NodeSpec],
                 levels: dict[str, str], log_events: bool = True):
        self.clock, self.start = clock, start
        self.levels = dict(levels)
        self.node_labels = {n.name: n.labels for n in nodes}
        self.schedulable = {n.name for n in nodes if n.role != "control-plane"}
        self.cpu_allocatable = sum(milli_value(n.capacity.get("cpu", "0")) for n in nodes if n.name in self.schedulable)
        self.jobs: dict[str, JobRecord] = {}
        self.order: list[str] = []  # submission order
        self.active: dict[str, JobRecord] = {}  # submitted, not finished nor rejected (submission order)
        self.events: list[tuple] = []  # (t, what, ...): the run's event log
        self.log_events = log_events
        self.samples: list[dict[str, Any]] = []
        self.event_count = 0  # informer events seen (progress: events/s)
        self.preemptions = 0
        self.evictions = 0
        self.nodes_down: set[str] = set()
        self._pod_cpu: dict[str, int] = {}  # pod uid -> milli CPU counted as allocated
        self._pod_state: dict[str, tuple[bool, bool, bool]] = {}  # uid -> (bound, running, disrupted)
        self.cpu_used = 0
        self._claim_devices: dict[str, list[str]] = {}  # claim uid -> node of each allocated device
        self.gpus_used: Counter = Counter()  # node -> devices allocated
        self.gpus_total: Counter = Counter()  # node -> devices published
        self._slice_devices: dict[str, tuple[str, int]] = {}  # slice uid -> (node, devices)
        factory.informer("v1", "Pod").add_event_handler(on_add=self._pod, on_update=lambda o, n: self._pod(n),
                                                        on_delete=self._pod_deleted)
        factory.informer("batch/v1", "Job").add_event_handler(on_add=self._job, on_update=lambda o, n: self._job(n))
        factory.informer("jobset.x-k8s.io/v1alpha2", "JobSet").add_event_handler(
            on_add=self._job, on_update=lambda o, n: self._job(n))
        factory.informer("resource.k8s.io/v1", "ResourceClaim").add_event_handler(
            on_add=self._claim, on_update=lambda o, n: self._claim(n), on_delete=self._claim_deleted)
        factory.informer("resource.k8s.io/v1", "ResourceSlice").add_event_handler(
            on_add=self._slice, on_update=lambda o, n: self._slice(n), on_delete=self._slice_deleted)

    def now(self) -> float:
        return self.clock.now() - self.start

    def log(self, *event: Any) -> None:
        if self.log_events:
            self.events.append((round(self.now(), 6), *event))

    # -- the engine's side ------------------------------------------------------------------------
    def submitted(self, a: JobArrival, name: str) -> JobRecord:
        rec = JobRecord(name=name, kind=a.kind, pods=a.pods, min_count=a.min_count or a.pods,
                        gpus_per_pod=a.gpus_per_pod, topology=a.topology, shared_claim=a.shared_claim,
                        priority=a.priority, user=a.user, arrival=a.arrival, submitted=self.now())
        self.jobs[name] = rec
        self.order.append(name)
        self.active[name] = rec
        self.log("submit", name)
        return rec

    def rejected(self, rec: JobRecord, message: str) -> None:
        rec.status, rec.message = "Rejected", message
        self.active.pop(rec.name, None)
        self.log("reject", rec.name, message)

    def failure(self, nodes: list[str], what: str, on: bool) -> None:
        if what == "down":
            if on:
                self.nodes_down.update(nodes)
            else:
                self.nodes_down.difference_update(nodes)
        self.log("fail" if on else "recover", what, tuple(nodes))

    # -- informer handlers -------------------------------------------------------------------------
    def _job_of(self, obj: Obj) -> JobRecord | None:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        name = labels.get(JOB_LABEL)
        return self.jobs.get(name) if name else None

    def _pod(self, pod: Obj) -> None:
        self.event_count += 1
        rec = self._job_of(pod)
        uid = pod["metadata"].get("uid", "")
        bound_before, running_before, disrupted_before = self._pod_state.get(uid, (False, False, False))
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        phase = status.get("phase")
        terminal = phase in ("Succeeded", "Failed")
        self._count_cpu(uid, pod, bool(node) and not terminal)
        disruption = next((c for c in status.get("conditions") or () if c.get("type") == "DisruptionTarget"
                           and c.get("status") == "True"), None)
        state = (bool(node), phase == "Running" or (running_before and not terminal), disruption is not None)
        self._pod_state[uid] = state
        if rec is None:
            return
        if node and not bound_before:
            self._bound(rec, pod["metadata"]["name"], node)
        if phase == "Running" and not running_before:
            rec.running += 1
            if rec.started is None and rec.running >= rec.min_count:
                rec.started = self.now()
                rec.status = "Running"
                self.log("start", rec.name)
        if disruption is not None and not disrupted_before:
            self._disrupted(rec, pod["metadata"]["name"], disruption.get("reason", ""))

    def _bound(self, rec: JobRecord, pod: str, node: str) -> None:
        rec.bound += 1
        rec.nodes.add(node)
        if rec.first_scheduled is None:
            rec.first_scheduled = self.now()
        self.log("bind", pod, node)
        if rec.gang_scheduled is None and rec.bound >= rec.min_count:
            rec.gang_scheduled = self.now()
            rec.spread = {level: len({self.node_labels.get(n, {}).get(key) for n in rec.nodes})
                          for level, key in self.levels.items()}

    def _disrupted(self, rec: JobRecord, pod: str, reason: str) -> None:
        if reason == PREEMPTION_REASON:
            rec.preempted += 1
            self.preemptions += 1
            self.log("preempt", pod)
        else:
            rec.evicted += 1
            self.evictions += 1
            self.log("evict", pod, reason)

    def _pod_deleted(self, pod: Obj) -> None:
        self.event_count += 1
        uid = pod["metadata"].get("uid", "")
        self._count_cpu(uid, pod, False)
        bound, running, _ = self._pod_state.pop(uid, (False, False, False))
        rec = self._job_of(pod)
        if rec is not None and rec.finished is None:
            # a pod gone before its job finished (preempted, evicted): the gang must form again
            rec.bound -= bound
            rec.running -= running

    def _count_cpu(self, uid: str, pod: Obj, allocated: bool) -> None:
        before = self._pod_cpu.pop(uid, 0)
        self.cpu_used -= before
        if allocated:
            cpu = before or sum(milli_value(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0"))
                                for c in (pod.get("spec") or {}).get("containers") or ())
            self._pod_cpu[uid] = cpu
            self.cpu_used += cpu

    def _job(self, job: Obj) -> None:
        self.event_count += 1
        rec = self._job_of(job)
        if rec is None or rec.finished is not None:
            return
        for c in (job.get("status") or {}).get("conditions") or ():
            status = FINISHED.get(c.get("type", ""))
            if status and c.get("status") == "True":
                rec.finished, rec.status = self.now(), status
                self.active.pop(rec.name, None)
                self.log("finish", rec.name, status)
                return

    def _claim(self, claim: Obj) -> None:
        self.event_count += 1
        uid = claim["metadata"].get("uid", "")
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = ((allocation.get("devices") or {}).get("results")) or []
        nodes = [r.get("pool", "") for r in results]
        if nodes == self._claim_devices.get(uid, []):
            return
        self._claim_deleted(claim)
        if nodes:
            self._claim_devices[uid] = nodes
            self.gpus_used.update(nodes)

    def _claim_deleted(self, claim: Obj) -> None:
        for node in self._claim_devices.pop(claim["metadata"].get("uid", ""), ()):
            self.gpus_used[node] -= 1

    def _slice(self, s: Obj) -> None:
        self._slice_deleted(s)
        spec = s.get("spec") or {}
        node = spec.get("nodeName") or (spec.get("pool") or {}).get("name", "")
        n = len(spec.get("devices") or ())
        self._slice_devices[s["metadata"].get("uid", "")] = (node, n)
        self.gpus_total[node] += n

    def _slice_deleted(self, s: Obj) -> None:
        node, n = self._slice_devices.pop(s["metadata"].get("uid", ""), ("", 0))
        if n:
            self.gpus_total[node] -= n

    # -- samples ---------------------------------------------------------------------------------
    def sample(self) -> dict[str, Any]:
        total_gpus = sum(self.gpus_total.values())
        used_gpus = sum(self.gpus_used.values())
        running = pending = pending_gpus = 0
        for rec in self.active.values():
            if rec.started is not None:
                running += 1
            elif rec.gang_scheduled is None:
                pending += 1
                pending_gpus += rec.gpus_per_pod * (1 if rec.shared_claim else rec.pods)
        row = {"t": round(self.now(), 3), "gpu_allocation": used_gpus / total_gpus if total_gpus else 0.0,
               "gpus_used": used_gpus, "gpus_total": total_gpus,
               "cpu_allocation": self.cpu_used / self.cpu_allocatable if self.cpu_allocatable else 0.0,
               "running_gangs": running, "pending_gangs": pending, "pending_gpus": pending_gpus,
               "fragmentation": self.fragmentation(), "preemptions": self.preemptions, "evictions": self.evictions,
               "nodes_down": len(self.nodes_down)}
        self.samples.append(row)
        return row

    def next_waiting(self) -> JobRecord | None:
        """The gang the scheduler would try next: highest priority, then earliest submitted."""
        best: JobRecord | None = None
        for rec in self.active.values():
            if rec.gang_scheduled is not None or rec.gpus_per_pod <= 0:
                continue
            if best is None or (rec.priority or 0) > (best.priority or 0):
                best = rec
        return best

    def fragmentation(self) -> float | None:
        rec = self.next_waiting()
        if rec is None:
            return None
        free = {n: self.gpus_total[n] - self.gpus_used[n] for n in self.gpus_total
                if n not in self.nodes_down and self.gpus_total[n] > 0}
        total_free = sum(free.values())
        if total_free <= 0:
            return None
        key = self.levels.get(rec.topology) if rec.topology else None  # no constraint: the cluster is one domain
        domains: dict[Any, list[int]] = defaultdict(list)
        for node, n in free.items():
            domains[self.node_labels.get(node, {}).get(key) if key else None].append(n)
        stranded = sum(sum(counts) for counts in domains.values() if not _can_host(rec, counts))
        return stranded / total_free

    # -- results ---------------------------------------------------------------------------------
    def job_rows(self) -> list[dict[str, Any]]:
        return [self.jobs[name].row() for name in self.order]


def _can_host(rec: JobRecord, free_per_node: list[int]) -> bool:
    """Whether nodes with these free devices can hold the gang's devices (counted per node: a pod's
    devices come from its own node; a shared claim's from one node)."""
    g = rec.gpus_per_pod
    if rec.shared_claim:
        return any(n >= g for n in free_per_node)
    return sum(n // g for n in free_per_node) >= rec.min_count


# -- summary ----------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _count(rows: list[dict[str, Any]], test: Any) -> int:
    return sum(1 for r in rows if test(r))


def _job_counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def rejected(r: dict[str, Any]) -> bool:
        return bool(r["status"] == "Rejected")
    return {"jobs_submitted": _count(rows, lambda r: not rejected(r)), "jobs_rejected": _count(rows, rejected),
            "jobs_completed": _count(rows, lambda r: r["status"] == "Complete"),
            "jobs_failed": _count(rows, lambda r: r["status"] == "Failed"),
            "jobs_started": _count(rows, lambda r: r["started"] is not None),
            "jobs_never_started": _count(rows, lambda r: r["started"] is None and not rejected(r))}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(rows: list[dict[str, Any]], samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary table of one run: percentiles of queueing delay, gang wait and JCT, mean
    allocation, makespan, jobs completed."""
    out = _job_counts(rows)
    for metric in ("queueing_delay", "gang_wait", "jct"):
        values = [r[metric] for r in rows if r[metric] is not None]
        for q in (50, 90, 99):
            out[f"{metric}_p{q}"] = percentile(values, q)
        out[f"{metric}_mean"] = _mean(values)
    for metric in ("gpu_allocation", "cpu_allocation", "pending_gangs", "fragmentation"):
        out[f"{metric}_mean"] = _mean([s[metric] for s in samples if s.get(metric) is not None])
    out["gpu_allocation_max"] = max((s["gpu_allocation"] for s in samples), default=None)
    finished = [r["finished"] for r in rows if r["finished"] is not None]
    out["makespan"] = max(finished) if finished else None
    out["preemptions"] = sum(r["preempted"] for r in rows)
    out["evictions"] = sum(r["evicted"] for r in rows)
    return out
