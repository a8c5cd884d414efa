"""What a benchmark run measures, the way scheduler_perf measures it.

- `ThroughputCollector`: every second of wall time, how many pods of the measured namespaces were
  bound since the last sample (upstream's throughput collector: the first sample after the first
  bound pod is only a baseline, seconds without progress are folded into the next sample, which is
  then counted once per elapsed interval). `SchedulingThroughput` is the average of the samples and
  their nearest-rank percentiles Perc50/90/95/99, in pods/s.
- `InstrumentedScheduler`: the real `Scheduler` (it can also `hold()` its cycles while the
  harness creates the measured pods), with the wall time of every pod attempt
  (`scheduler_scheduling_attempt_duration_seconds`) and pod-group attempt
  (`scheduler_podgroup_scheduling_attempt_duration_seconds`) by result, and of each extension point
  (`scheduler_framework_extension_point_duration_seconds`), taken from outside: the cycle methods
  are overridden here and the framework's `run_*` methods wrapped per instance. Nothing is
  recorded unless a `MeasurementSink` is attached (only measured ops are counted, as upstream
  resets its metrics when a measured op starts).
- `peak_rss_bytes()` / `current_rss_bytes()`: the process's peak (getrusage) and current RSS.
- `store_write_limit()`: the physical limit of a run: how fast a fresh in-memory store behind the
  same API accepts the run's bindings and claim status writes with nothing else running.

    sink = MeasurementSink(); scheduler.recorder.attach(sink) ... scheduler.recorder.detach(sink)
    sink.summary()   # {"podAttempts": {...}, "podGroupAttempts": {...}, "extensionPoints": {...}}
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import time
from array import array
from typing import Any, Callable, Iterable

from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..scheduler.scheduler import Scheduler

# Extension point name (upstream's `extension_point` label) -> Framework method timed for it.
FRAMEWORK_POINTS = {
    "PreFilter": "run_pre_filter_plugins",
    "Filter": "find_nodes_that_pass_filters",
    "PostFilter": "run_post_filter_plugins",
    "PreScore": "run_pre_score_plugins",
    "Score": "run_score_plugins",
    "Reserve": "run_reserve_plugins_reserve",
    "Unreserve": "run_reserve_plugins_unreserve",
    "Permit": "run_permit_plugins",
    "PlacementGenerate": "run_placement_generate_plugins",
    "PlacementFeasible": "run_placement_feasible_plugins",
    "PlacementScore": "run_placement_score_plugins",
}

SAMPLE_INTERVAL = 1.0  # seconds of wall time between throughput samples (upstream's 1s)


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest rank, as scheduler_perf computes its percentiles."""
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, int(math.ceil(len(sorted_values) * p / 100.0)) - 1)]


def distribution(values: Iterable[float], scale: float = 1.0) -> dict[str, float]:
    """Average and Perc50/90/95/99 (values multiplied by `scale`), plus the count."""
    vals = sorted(v * scale for v in values)
    if not vals:
        return {"count": 0}
    return {"count": len(vals), "Average": sum(vals) / len(vals), "Perc50": percentile(vals, 50),
            "Perc90": percentile(vals, 90), "Perc95": percentile(vals, 95), "Perc99": percentile(vals, 99),
            "Max": vals[-1]}


def peak_rss_bytes() -> int:
    """The process's peak resident set size so far (Linux reports kilobytes, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if os.uname().sysname == "Darwin" else peak * 1024


def current_rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# -- attempts and extension points ------------------------------------------------------------------

class MeasurementSink:
    """Durations observed while attached: pod and pod-group attempts by result, extension points."""

    def __init__(self) -> None:
        self.pod_attempts: dict[str, array] = {}
        self.group_attempts: dict[str, array] = {}
        self.points: dict[str, array] = {}

    def attempt(self, group: bool, result: str, seconds: float) -> None:
        target = self.group_attempts if group else self.pod_attempts
        target.setdefault(result, array("d")).append(seconds)

    def point(self, name: str, seconds: float) -> None:
        self.points.setdefault(name, array("d")).append(seconds)

    def summary(self) -> dict[str, Any]:
        def by_result(d: dict[str, array]) -> dict[str, Any]:
            out = {result: distribution(v, 1000.0) for result, v in sorted(d.items())}
            if d:
                out["all"] = distribution([x for v in d.values() for x in v], 1000.0)
            return out
        points = {}
        for name, v in self.points.items():
            dist = distribution(v, 1000.0)
            dist["totalSeconds"] = sum(v)
            points[name] = dist
        return {"unit": "ms", "podAttempts": by_result(self.pod_attempts),
                "podGroupAttempts": by_result(self.group_attempts),
                "extensionPoints": dict(sorted(points.items(), key=lambda kv: -kv[1]["totalSeconds"]))}


class Recorder:
    """Fans observations out to the attached sinks; costs one check when none is attached."""

    def __init__(self) -> None:
        self.sinks: list[MeasurementSink] = []
        self.attempted: set[str] = set()  # pod keys that had at least one scheduling attempt

    def attach(self, sink: MeasurementSink) -> None:
        self.sinks.append(sink)

    def detach(self, sink: MeasurementSink) -> None:
        if sink in self.sinks:
            self.sinks.remove(sink)

    def attempt(self, group: bool, result: str, seconds: float) -> None:
        for s in self.sinks:
            s.attempt(group, result, seconds)

    def point(self, name: str, seconds: float) -> None:
        for s in self.sinks:
            s.point(name, seconds)


def _timed(fn: Callable, name: str, recorder: Recorder) -> Callable:
    clock = time.perf_counter

    def wrapper(*args, **kwargs):
        if not recorder.sinks:
            return fn(*args, **kwargs)
        t0 = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            recorder.point(name, clock() - t0)
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _timed_async(fn: Callable, name: str, recorder: Recorder) -> Callable:
    """`_timed` for a coroutine function (the binding cycle's PreBind and Bind)."""
    async def wrapper(*args, **kwargs):
        if not recorder.sinks:
            return await fn(*args, **kwargs)
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            recorder.point(name, time.perf_counter() - t0)
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


class InstrumentedScheduler(Scheduler):
    """`Scheduler` with attempt and extension-point timings; behaviour is unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.recorder = Recorder()
        self._released = asyncio.Event()
        self._released.set()
        for fw in self.frameworks.values():
            for point, method in FRAMEWORK_POINTS.items():
                bound = getattr(fw, method, None)
                if bound is not None:
                    setattr(fw, method, _timed(bound, point, self.recorder))
            for point, method in (("PreBind", "run_pre_bind_plugins"), ("Bind", "run_bind_plugins")):
                setattr(fw, method, _timed_async(getattr(fw, method), point, self.recorder))

    @property
    def unavailable_plugins(self) -> list[str]:
        """Plugins the profile enables that this build does not have (e.g. DynamicResources)."""
        return sorted({p for fw in self.frameworks.values() for p in getattr(fw, "unavailable_plugins", [])})

    def hold(self) -> None:
        """Hold scheduling cycles (informers and binding go on) until `release()`: the harness
        creates the measured pods meanwhile, so their creation does not take the scheduler's CPU
        (upstream's API server and scheduler run on separate cores)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    async def schedule_one(self, qpi: Any) -> None:
        if not self._released.is_set():
            await self._released.wait()
        rec = self.recorder
        rec.attempted.add(qpi.pod_info.key)
        if not rec.sinks:
            return await super().schedule_one(qpi)
        attempts, unschedulable = self.stats["attempts"], self.stats["unschedulable"]
        t0 = time.perf_counter()
        try:
            await super().schedule_one(qpi)
        finally:
            dt = time.perf_counter() - t0
            if self.stats["attempts"] != attempts:
                rec.attempt(False, "unschedulable" if self.stats["unschedulable"] != unschedulable else "scheduled", dt)

    async def schedule_pod_group(self, group: Any) -> None:
        if not self._released.is_set():
            await self._released.wait()
        rec = self.recorder
        rec.attempted.update(group.members.keys())
        if not rec.sinks:
            return await super().schedule_pod_group(group)
        attempts, scheduled = self.stats["group_attempts"], self.stats["groups_scheduled"]
        t0 = time.perf_counter()
        try:
            await super().schedule_pod_group(group)
        finally:
            dt = time.perf_counter() - t0
            if self.stats["group_attempts"] != attempts:
                rec.attempt(True, "scheduled" if self.stats["groups_scheduled"] != scheduled else "unschedulable", dt)


# -- throughput -------------------------------------------------------------------------------------

class ThroughputCollector:
    """Samples `count()` (pods bound so far in the measured namespaces) every second of wall time.

    Runs as an asyncio task on real time; `stop()` returns the samples. `timeline` keeps
    (seconds since start, pods bound since start, pods/s of the sample) for the plot. A tick that
    comes late says the event loop was busy in one piece for that long: the longest lag and every
    lag over one interval (`loopStalls`) are reported, and the process's RSS is sampled too.
    """

    def __init__(self, count: Callable[[], int], interval: float = SAMPLE_INTERVAL):
        self.count = count
        self.interval = interval
        self.samples: list[float] = []
        self.timeline: list[tuple[float, int, float]] = []
        self.start_time = 0.0
        self.base = 0
        self.max_lag = 0.0
        self.stalls: list[tuple[float, float]] = []  # (seconds since start, how late the tick was)
        self.rss_max = 0
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self.start_time = time.perf_counter()
        self.base = self.count()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="throughput-collector")

    async def _run(self) -> None:
        last_count = self.count()
        last_time = self.start_time
        started = False
        tick = self.start_time
        while True:
            tick += self.interval
            await asyncio.sleep(max(0.0, tick - time.perf_counter()))
            now = time.perf_counter()
            lag = now - tick
            self.max_lag = max(self.max_lag, lag)
            if lag > self.interval:
                # The event loop was blocked past a whole interval: drop the missed ticks (as Go's
                # Ticker does); the next sample covers the whole gap.
                self.stalls.append((tick - self.start_time, lag))
                tick = now
            rss = current_rss_bytes()
            if rss > self.rss_max:
                self.rss_max = rss
            scheduled = self.count() - self.base
            if scheduled <= 0:
                continue
            if not started:
                # The first sample is a baseline: creating and scheduling started independently.
                started = True
                last_count, last_time = scheduled, now
                self.timeline.append((now - self.start_time, scheduled, 0.0))
                continue
            new = scheduled - last_count
            if new == 0:  # no pod this interval: fold it into the next sample
                continue
            elapsed = now - last_time
            rate = new / elapsed
            # One sample per interval the rate covers (upstream records a gap's rate once per
            # skipped interval, so percentiles weigh time, not samples).
            self.samples.extend([rate] * max(1, round(elapsed / self.interval)))
            self.timeline.append((now - self.start_time, scheduled, rate))
            last_count, last_time = scheduled, now

    async def stop(self) -> dict[str, Any]:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        out: dict[str, Any] = {"unit": "pods/s", "samples": len(self.samples),
                               "maxLoopLagSeconds": round(self.max_lag, 3),
                               "loopStalls": [(round(t, 1), round(d, 2)) for t, d in self.stalls]}
        if self.samples:
            vals = sorted(self.samples)
            out.update({"Average": sum(vals) / len(vals), "Perc50": percentile(vals, 50),
                        "Perc90": percentile(vals, 90), "Perc95": percentile(vals, 95),
                        "Perc99": percentile(vals, 99)})
        return out


# -- the physical limit -----------------------------------------------------------------------------

def _fresh(obj: dict) -> dict:
    """An object as a client would first create it: no server-set metadata, no status, unbound."""
    md = {k: v for k, v in obj["metadata"].items()
          if k in ("name", "namespace", "labels", "annotations", "ownerReferences")}
    out = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    out["metadata"] = md
    if out.get("kind") == "Pod":
        # Unbound, and without the priority fields that the Priority admission plugin would check
        # against PriorityClasses the fresh store does not have (a binding does not look at them).
        out["spec"] = {k: v for k, v in out["spec"].items() if k not in ("nodeName", "priority", "priorityClassName",
                                                                          "preemptionPolicy")}
    return deep_copy(out)  # admission may change nested parts: never the run's (shared) objects


def store_write_limit(pods: list[dict], claims: list[dict], gates: Any, store: Any = None) -> dict[str, Any]:
    """Time the run's writes on a fresh store (a `MemoryStore` unless `store` is given) behind
    `rest.API`: one `pods/binding` per pod and one `/status` update per allocated claim (the
    allocation and reservation the run wrote), with no informer, watcher or controller attached.
    Also the raw `Store.update` rate for pods.

    The objects are first created untimed from the run's own (unbound, status-less) copies."""
    from ..apiserver import build_api
    from ..cluster.bootstrap import bootstrap
    from ..cluster.spec import ClusterSpec
    from ..store import MemoryStore

    api = build_api(store if store is not None else MemoryStore(), gates)
    bootstrap(api, ClusterSpec(nodes=[]))
    pod_rt = api.resource("", "v1", "pods")
    claim_rt = api.resource("resource.k8s.io", "v1", "resourceclaims")
    targets, claim_writes = _create_untimed(api, pods, claims)
    t0 = time.perf_counter()
    for ns, name, uid, node in targets:
        api.bind(ns, name, {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns,
                                                                                "uid": uid},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    t_bind = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in claim_writes:
        api.update(claim_rt, c["metadata"]["namespace"], c["metadata"]["name"], c, subresource="status")
    t_claims = time.perf_counter() - t0
    t_raw = _time_raw_store_updates(api.store, pod_rt.key, targets)
    total = t_bind + t_claims
    n, m = len(targets), len(claim_writes)
    return {"bindings": n, "claimStatusWrites": m, "seconds": total,
            "writesPerSecond": (n + m) / total if total > 0 else None,
            "podsPerSecond": _rate(n, total), "bindingsPerSecond": _rate(n, t_bind),
            "claimStatusWritesPerSecond": _rate(m, t_claims), "rawStoreUpdatesPerSecond": _rate(n, t_raw)}


def _rate(count: int, seconds: float) -> float | None:
    """Writes per second; None when nothing was written or timed."""
    return count / seconds if seconds > 0 and count else None


def _create_untimed(api: Any, pods: list[dict], claims: list[dict]) -> tuple[list[tuple], list[dict]]:
    """Create the namespaces, pods and claims (untimed); returns the pods' (namespace, name, uid,
    node) to bind and the claims as their status writes will send them."""

    ns_rt = api.resource("", "v1", "namespaces")
    for ns in sorted({p["metadata"].get("namespace", "") for p in pods + claims} - {""}):
        try:
            api.create(ns_rt, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except StatusError as e:
            if e.reason != "AlreadyExists":
                raise
    pod_rt = api.resource("", "v1", "pods")
    claim_rt = api.resource("resource.k8s.io", "v1", "resourceclaims")
    targets = []
    for p in pods:
        created = api.create(pod_rt, p["metadata"]["namespace"], _fresh(p))
        targets.append((created["metadata"]["namespace"], created["metadata"]["name"], created["metadata"]["uid"],
                        p["spec"]["nodeName"]))
    claim_writes = []
    for c in claims:
        created = api.create(claim_rt, c["metadata"]["namespace"], _fresh(c))
        new = deep_copy(created)
        new["status"] = deep_copy(c.get("status") or {})
        claim_writes.append(new)
    return targets, claim_writes


def _time_raw_store_updates(store: Any, pod_key: Any, targets: list[tuple]) -> float:
    """The bare store: a bound copy of each pod written with Store.update (no API logic at all)."""

    bound = []
    for ns, name, _, node in targets:
        cur = deep_copy(store.get(pod_key, ns, name))
        cur["spec"]["nodeName"] = node + "-again"
        bound.append((ns, name, cur))
    t0 = time.perf_counter()
    for ns, name, obj in bound:
        store.update(pod_key, ns, name, obj)
    return time.perf_counter() - t0
