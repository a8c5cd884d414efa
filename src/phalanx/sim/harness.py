"""Run one workload of a workload file against an in-process cluster and say what happened.

    cases = load_workload_file(path)
    for case, workload in select(cases, ["GangScheduling/5000Nodes_1000Gangs_3000Pods"]):
        result = run_workload(case, workload, RunOptions(timeout=600))
        result["status"]                   # "completed" | "did not complete" | "error"
        result["measurements"][0]["SchedulingThroughput"]["Average"]

The cluster is what scheduler_perf builds around kube-scheduler: the API (`rest.API` over a
`MemoryStore`), the real `Scheduler` (instrumented, `phalanx.sim.metrics`) on an informer factory
of in-process clients, the ResourceClaim controller when the test case uses DRA, and the simulated
kubelets only when the test case asks for them (`kubelets: true`; scheduler_perf runs none). Nodes
are plain API objects.

Release: the cluster is Kubernetes 1.36 unless `RunOptions(kubernetes_version="v1.37.1")` says
otherwise; then its gates and API are 1.37's, the gates 1.37 merged into GenericWorkload
(GangScheduling, WorkloadAwarePreemption) set GenericWorkload instead (`mappedFeatureGates` in the
result), and the `v1alpha2` Workloads and PodGroups the templates write are created as `v1beta1`
(`phalanx.api.scheduling.fields.to_release`). The result's `kubernetesVersion` says which it was.

Time: by default every component runs on the real clock and everything is measured in wall time
(`RunOptions(clock=None)`). A `VirtualClock` can be given instead (the CI smoke test does): waits
then move virtual time and backoffs cost nothing, but throughput samples are meaningless.

Each run ends with the correctness checks (`phalanx.sim.checks`) and the physical limit of the
run (`metrics.store_write_limit`): scheduling throughput is reported as a fraction of how fast the
store alone took the same bindings and claim status writes.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import sys
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import yaml

from ..api.scheduling.fields import to_release
from ..apiserver import build_api
from ..apiserver.rest import API
from ..client import InformerFactory, InProcessClient
from ..client.clock import REAL_CLOCK
from ..machinery.featuregates import GATES_BY_RELEASE, MERGED_GATES, FeatureGates
from ..machinery.releases import PATCH_VERSIONS, UnsupportedVersion, parse_version
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..store import MemoryStore
from . import checks as checks_mod
from .metrics import (InstrumentedScheduler, MeasurementSink, ThroughputCollector, current_rss_bytes, peak_rss_bytes,
                      store_write_limit)
from .ops import Op, make_op
from .template import Template, TemplateError
from .workload import TestCase, Workload, WorkloadError, resolve_ops

_YAML_LOADER: type[yaml.CSafeLoader | yaml.SafeLoader]
try:
    _YAML_LOADER = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _YAML_LOADER = yaml.SafeLoader

DRA_OPCODES = {"createResourceDriver", "allocResourceClaims"}
CREATE_CHUNK = 100  # objects created between two yields to the event loop


class DidNotComplete(Exception):
    """A wait gave up: the run is reported as not completed, with what it was waiting for."""


@dataclass
class RunOptions:
    timeout: float = 1800.0   # longest wait of one op (scheduler_perf allows 30 minutes per test)
    stall: float = 60.0       # give up when nothing progresses for this long
    clock: Any = None         # None: the real clock; a VirtualClock for tests
    kubelets: bool | None = None  # None: as the test case says
    profiler: Any = None      # a cProfile.Profile, enabled while metrics are collected
    profile_path: str | None = None  # run_workload_isolated: the child profiles into this file
    store_limit: bool = True  # measure the physical limit after the run
    overlap_create: bool = False  # create measured pods while the scheduler runs (default: held)
    seed: int = 0
    # the cluster's Kubernetes version (`v1.37.1`, `1.37`): its API, gates and object versions
    kubernetes_version: str = PATCH_VERSIONS["1.36"]
    progress: Callable[[str], None] | None = None


# -- the tracker -----------------------------------------------------------------------------------

class PodTracker:
    """Follows the scheduler's pod informer: which pods the run created, which got bound, when."""

    def __init__(self) -> None:
        self.op_of: dict[str, int] = {}            # uid -> op index (pods created by ops)
        self.ns_of: dict[str, str] = {}
        self.created_by_op: Counter = Counter()
        self.bound_by_op: Counter = Counter()
        self.bound_by_ns: Counter = Counter()      # every bind seen, per namespace (cumulative)
        self.bound_total = 0
        self.unbound: dict[str, set[str]] = defaultdict(set)  # ns -> uids created and not bound yet
        self.listeners: dict[int, Callable[[dict], None]] = {}  # op index -> called with each bound pod
        self.last_bind = 0.0
        self.wake = asyncio.Event()

    def attach(self, informer: Any) -> None:
        informer.add_event_handler(on_add=self._add, on_update=self._update, on_delete=self._delete)

    def created(self, pod: dict, op_index: int) -> None:
        md = pod["metadata"]
        uid = md["uid"]
        if uid in self.op_of:
            return
        self.op_of[uid] = op_index
        self.ns_of[uid] = md.get("namespace", "")
        self.created_by_op[op_index] += 1
        if not (pod.get("spec") or {}).get("nodeName"):
            self.unbound[md.get("namespace", "")].add(uid)

    def _bound(self, pod: dict) -> None:
        md = pod["metadata"]
        uid, ns = md.get("uid"), md.get("namespace", "")
        self.bound_total += 1
        self.bound_by_ns[ns] += 1
        self.last_bind = time.perf_counter()
        self.unbound.get(ns, set()).discard(uid)
        op = self.op_of.get(uid)
        if op is not None:
            self.bound_by_op[op] += 1
            listener = self.listeners.get(op)
            if listener is not None:
                listener(pod)
        self.wake.set()

    def _add(self, pod: dict) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self._bound(pod)

    def _update(self, old: dict, new: dict) -> None:
        if (new.get("spec") or {}).get("nodeName") and not (old.get("spec") or {}).get("nodeName"):
            self._bound(new)

    def _delete(self, pod: dict) -> None:
        md = pod.get("metadata") or {}
        self.unbound.get(md.get("namespace", ""), set()).discard(md.get("uid"))
        self.wake.set()

    def bound_in(self, namespaces: list[str] | None) -> int:
        if namespaces is None:
            return self.bound_total
        return sum(self.bound_by_ns[ns] for ns in namespaces)


# -- one measurement ---------------------------------------------------------------------------------

class GCTimer:
    """Wall time spent in Python's cyclic garbage collector while attached (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections: Counter = Counter()
        self.longest = 0.0
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            d = time.perf_counter() - self._t0
            self.seconds += d
            self.longest = max(self.longest, d)
            self.collections[info.get("generation", -1)] += 1

    def attach(self) -> None:
        gc.callbacks.append(self)

    def detach(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)

    def summary(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "longestSeconds": self.longest,
                "collectionsByGeneration": {str(k): v for k, v in sorted(self.collections.items())}}


class Measurement:
    """Metrics collected from a `collectMetrics` op (or start/stopCollectingMetrics) to its end."""

    def __init__(self, ctx: "RunContext", name: str, namespaces: list[str] | None, op_index: int | None,
                 creation_seconds: float | None = None):
        self.ctx, self.name, self.namespaces, self.op_index = ctx, name, namespaces, op_index
        self.creation_seconds = creation_seconds
        tracker = ctx.tracker
        self.collector = ThroughputCollector(lambda: tracker.bound_in(namespaces))
        self.sink = MeasurementSink()
        self.gc = GCTimer()
        self.rss_max = 0

    def start(self) -> None:
        ctx = self.ctx
        # as upstream's runtime.GC() before collecting: setup garbage is not measured; then the same
        # collector tuning the control plane process uses (phalanx.cluster.controlplane.tune_gc)
        from phalanx.cluster.controlplane import tune_gc
        tune_gc()
        self.stats_before = Counter(ctx.scheduler.stats)
        self.base = ctx.tracker.bound_in(self.namespaces)
        self.rss_max = current_rss_bytes()
        ctx.scheduler.recorder.attach(self.sink)
        self.gc.attach()
        self.collector.start()
        self.t0 = time.perf_counter()
        self.cpu0 = time.process_time()
        ctx.profile(True)

    async def stop(self, completed: bool) -> dict[str, Any]:
        ctx = self.ctx
        t1 = time.perf_counter()
        cpu = time.process_time() - self.cpu0
        ctx.profile(False)
        throughput = await self.collector.stop()
        ctx.scheduler.recorder.detach(self.sink)
        self.gc.detach()
        scheduled = ctx.tracker.bound_in(self.namespaces) - self.base
        last = ctx.tracker.last_bind if scheduled else self.t0
        busy = max(last - self.t0, 1e-9)
        stats = Counter(ctx.scheduler.stats)
        stats.subtract(self.stats_before)
        rss = [s for s in (self.rss_max, self.collector.rss_max, current_rss_bytes()) if s]
        return {
            "name": self.name, "namespaces": self.namespaces, "completed": completed,
            "wallSeconds": t1 - self.t0, "cpuSeconds": cpu, "podsScheduled": scheduled,
            # pods per CPU second of this process: comparable across runs on a busy machine
            "cpuThroughput": scheduled / cpu if scheduled and cpu > 0 else 0.0,
            "podCreationSeconds": self.creation_seconds, "createdWhileScheduling": self.creation_seconds is None,
            # pods / (last bind - start): what a reader means by "how fast", also when the
            # per-second samples are too few (short runs)
            "overallThroughput": scheduled / busy if scheduled else 0.0,
            "SchedulingThroughput": throughput, "timeline": self.collector.timeline,
            **self.sink.summary(),
            "schedulerStats": {k: v for k, v in stats.items() if v},
            "garbageCollector": self.gc.summary(),
            "peakRSSBytes": peak_rss_bytes(), "rssMaxSampledBytes": max(rss) if rss else 0,
        }


# -- the run context --------------------------------------------------------------------------------

class RunContext:
    """What ops act on: the API, a client, the scheduler, templates, waits and measurements."""

    def __init__(self, case: TestCase, workload: Workload, gates: FeatureGates, options: RunOptions,
                 clock: Any, api: API, client: InProcessClient, scheduler: InstrumentedScheduler):
        self.case, self.workload, self.gates, self.options = case, workload, gates, options
        self.clock, self.api, self.client, self.scheduler = clock, api, client, scheduler
        self.release: str = gates.release
        self.virtual = hasattr(clock, "run_until")
        self.tracker = PodTracker()
        self.tracker.attach(scheduler.pods)
        self.rng = random.Random(options.seed)
        self.nodes_created = 0
        self.pod_namespaces: set[str] = set()
        self._namespaces: set[str] = set()
        self._templates: dict[str, Template] = {}
        # per template: the last rendered text and the object it parsed to (a template without
        # {{.Index}} renders the same text for every object: parse it once, copy it after)
        self._last_parsed: dict[int, tuple[str, dict]] = {}
        self._tasks: list[tuple[str, asyncio.Task]] = []
        self.measurement: Measurement | None = None
        self.measurements: list[dict[str, Any]] = []
        self.incomplete: list[dict[str, Any]] = []
        self._profiling = False

    def log(self, message: str) -> None:
        if self.options.progress is not None:
            self.options.progress(message)

    # -- templates and objects ---------------------------------------------------------------------
    def template(self, path: str | None, default: str | None = None) -> Template:
        if not path:
            if default is None:
                raise WorkloadError(f"{self.case.name}: a template path is required")
            path = f"<default {hash(default):x}>"
            text = default
        else:
            text = None
        full = path if text is not None else self.case.path(path)
        tmpl = self._templates.get(full)
        if tmpl is None:
            if text is None:
                try:
                    with open(full) as f:
                        text = f.read()
                except OSError as e:
                    raise WorkloadError(f"{self.case.name}: template {path}: {e.strerror}") from None
            try:
                tmpl = Template(text, name=path)
            except TemplateError as e:
                raise WorkloadError(str(e)) from None
            self._templates[full] = tmpl
        return tmpl

    def render_one(self, tmpl: Template, index: int, params: dict[str, Any], namespace: str | None = None) -> dict:
        try:
            text = tmpl.render({**params, "Index": index})
            last = self._last_parsed.get(id(tmpl))
            if last is not None and last[0] == text:
                obj = deep_copy(last[1])
            else:
                obj = yaml.load(text, Loader=_YAML_LOADER)
                if isinstance(obj, dict):
                    kept = deep_copy(obj)
                    if kept == obj:  # JSON values only (a YAML timestamp would not survive the copy)
                        self._last_parsed[id(tmpl)] = (text, kept)
        except (TemplateError, yaml.YAMLError) as e:
            raise WorkloadError(f"{tmpl.name}: {e}") from None
        if not isinstance(obj, dict) or not obj.get("kind"):
            raise WorkloadError(f"{tmpl.name}: the template does not render an object with a kind")
        if namespace:
            obj.setdefault("metadata", {})["namespace"] = namespace
        return obj

    def render(self, tmpl: Template, count: int, params: dict[str, Any], namespace: str | None = None) -> Iterator[dict]:
        """The objects, rendered one at a time as they are created (50,000 rendered pods held at
        once would be the harness's memory, not the cluster's)."""
        return (self.render_one(tmpl, i, params, namespace) for i in range(count))

    async def ensure_namespace(self, name: str) -> None:
        if name in self._namespaces:
            return
        try:
            await self.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except StatusError as e:
            if e.reason != "AlreadyExists":
                raise
        self._namespaces.add(name)

    async def create_objects(self, objs: Iterable[dict], track_op: int | None = None) -> list[dict]:
        """Create `objs`; returns a reference to each (apiVersion, kind, name, namespace, uid), not
        the objects themselves, so the harness holds no copy of what the cluster stores."""
        created = []
        for i, obj in enumerate(objs):
            obj = to_release(obj, self.release)  # a template's v1alpha2 Workload or PodGroup on 1.37
            try:
                rt = self.api.resource_for_kind(obj.get("apiVersion", ""), obj["kind"])
            except StatusError as e:
                raise WorkloadError(f"cannot create {obj.get('apiVersion')} {obj.get('kind')}: {e.message}") from None
            md = obj.setdefault("metadata", {})
            ns = None
            if rt.namespaced:
                ns = md.get("namespace") or "default"
                md["namespace"] = ns
                await self.ensure_namespace(ns)
            else:
                md.pop("namespace", None)
            try:
                out = await self.client.create(obj, namespace=ns, handover=True)  # rendered here, never reused
            except StatusError as e:
                name = md.get("name") or md.get("generateName", "") + "*"
                raise WorkloadError(f"creating {obj['kind']} {name}: {e.message}") from None
            if track_op is not None and out.get("kind") == "Pod":
                self.tracker.created(out, track_op)
            omd = out["metadata"]
            created.append({"apiVersion": out.get("apiVersion"), "kind": out.get("kind"),
                            "metadata": {"name": omd.get("name"), "namespace": omd.get("namespace"),
                                         "uid": omd.get("uid")}})
            if (i + 1) % CREATE_CHUNK == 0:
                await asyncio.sleep(0)
        return created

    # -- waits -------------------------------------------------------------------------------------
    async def wait(self, done: Callable[[], bool], *, what: str, label: str, progress: Callable[[], Any] | None = None,
                   timeout: float | None = None, stall: float | None = None) -> bool:
        """Wait until `done()`; raise DidNotComplete after `timeout`, or after `stall` seconds in which
        `progress()` did not change. Seconds are the run's clock (wall time unless virtual)."""
        timeout = self.options.timeout if timeout is None else timeout
        stall = self.options.stall if stall is None else stall
        clock = self.clock
        start = clock.now()
        state = {"last": progress() if progress else None, "changed": start, "why": ""}

        def check() -> bool:
            if done():
                return True
            now = clock.now()
            if progress is not None:
                p = progress()
                if p != state["last"]:
                    state["last"], state["changed"] = p, now
                elif now - state["changed"] >= stall:
                    state["why"] = f"no progress for {stall:g}s"
                    return True
            if now - start >= timeout:
                state["why"] = f"timed out after {timeout:g}s"
                return True
            return False

        if self.virtual:
            await clock.run_until(check, within=timeout + 1.0)
            if not state["why"] and not done():
                state["why"] = f"timed out after {timeout:g}s"
        else:
            wake = self.tracker.wake
            while not check():
                wake.clear()
                try:
                    await asyncio.wait_for(wake.wait(), 0.05)
                except asyncio.TimeoutError:
                    pass
        if state["why"] and not done():
            entry = {"op": label, "waitingFor": what, "reason": state["why"]}
            if progress is not None:
                entry["progress"] = progress()
            self.incomplete.append(entry)
            raise DidNotComplete(f"{label}: waiting for {what}: {state['why']}")
        return True

    async def tick(self) -> None:
        """Let the other tasks run; on a virtual clock also move time on a little (a loop that
        never waits would otherwise never see virtual time pass)."""
        if self.virtual:
            await self.clock.advance(0.1)
        else:
            await asyncio.sleep(0)

    # -- measurements, profiling, background work -------------------------------------------------
    def start_measurement(self, name: str, namespaces: list[str] | None, op_index: int | None = None,
                          creation_seconds: float | None = None) -> None:
        if self.measurement is not None:
            raise WorkloadError(f"{self.case.name}: metrics are already being collected ({self.measurement.name})")
        self.measurement = Measurement(self, name, namespaces, op_index, creation_seconds)
        self.measurement.start()

    async def stop_measurement(self, completed: bool = True) -> None:
        m, self.measurement = self.measurement, None
        if m is not None:
            self.measurements.append(await m.stop(completed))

    def profile(self, on: bool) -> None:
        prof = self.options.profiler
        if prof is None or on == self._profiling:
            return
        prof.enable() if on else prof.disable()
        self._profiling = on

    def background(self, coro: Any, label: str) -> None:
        self._tasks.append((label, asyncio.get_running_loop().create_task(coro, name=label)))

    async def stop_background(self) -> list[str]:
        errors = []
        for label, task in self._tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                errors.append(f"{label}: {task.exception()}")
            task.cancel()
        for _, task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []
        return errors


# -- the cluster and the run --------------------------------------------------------------------------

def effective_gates(case: TestCase, workload: Workload, release: str = "1.36") \
        -> tuple[FeatureGates, dict[str, bool], list[str], dict[str, str]]:
    """Upstream defaults of `release` plus the test case's and workload's gates; gates phalanx does
    not know (scheduler_perf's SchedulerQueueingHints, ...) are ignored and listed. Gates `release`
    merged into another (1.37: GangScheduling and WorkloadAwarePreemption into GenericWorkload) set
    the gate they joined; the last value is {merged gate: gate it set}."""
    wanted, mapped = _map_merged_gates(case, workload, release)
    specs = GATES_BY_RELEASE[release]
    known = {k: v for k, v in wanted.items() if k in specs}
    ignored = sorted(k for k in wanted if k not in specs)
    gates = FeatureGates(was_defaults=False, release=release)
    for name, value in known.items():
        if specs[name].locked and value != specs[name].default:
            ignored.append(name)
            continue
        gates.set(name, value)
    errs = gates.validate()
    if errs:
        raise WorkloadError(f"{case.name}/{workload.name}: " + "; ".join(errs))
    return gates, known, ignored, mapped


def _map_merged_gates(case: TestCase, workload: Workload, release: str) -> tuple[dict[str, bool], dict[str, str]]:
    """The wanted gates with those `release` merged replaced by the gate they joined. A merged gate
    whose value differs from its target's (or another gate merged into it) cannot be expressed in
    `release`: that is an error, not a silent choice."""
    wanted = case.gates_for(workload)
    merged = MERGED_GATES[release]
    mapped = {name: merged[name] for name in wanted if name in merged}
    out = {k: v for k, v in wanted.items() if k not in merged}
    for name, into in mapped.items():
        if out.setdefault(into, wanted[name]) != wanted[name]:
            settings = ", ".join(f"{n}={str(wanted[n]).lower()}" for n in [*mapped, into] if n in wanted)
            raise WorkloadError(f"{case.name}/{workload.name}: feature gates {settings} cannot be expressed in "
                                f"Kubernetes {release}: {name} was merged into {into}")
    return out, mapped


def uses_dra(case: TestCase, workload: Workload, ops: list[dict]) -> bool:
    return bool(case.gates_for(workload).get("DynamicResourceAllocation")) or \
        any(op["opcode"] in DRA_OPCODES for op in ops)


async def run_workload_async(case: TestCase, workload: Workload, options: RunOptions | None = None) -> dict[str, Any]:
    from ..cluster.bootstrap import bootstrap
    from ..cluster.spec import ClusterSpec

    options = options or RunOptions()
    t_start = time.perf_counter()
    result: dict[str, Any] = {"testCase": case.name, "workload": workload.name, "loadAverageAtStart": _loadavg(),
                              "labels": case.labels + workload.labels, "params": workload.params,
                              "source": case.source, "status": "error"}
    try:
        release, result["kubernetesVersion"] = parse_version(options.kubernetes_version)
        resolved = resolve_ops(case, workload)
        ops: list[Op] = [make_op(spec, case) for spec in resolved]
        gates, explicit, ignored, mapped = effective_gates(case, workload, release)
    except (WorkloadError, UnsupportedVersion) as e:
        result["error"] = str(e)
        return result
    result.update(featureGates=explicit, ignoredFeatureGates=ignored, mappedFeatureGates=mapped)
    if case.scheduler_config_path:
        result["notes"] = [f"schedulerConfigPath {case.scheduler_config_path} is not supported: default profile used"]

    clock = options.clock or REAL_CLOCK
    virtual = hasattr(clock, "run_until")
    api = build_api(MemoryStore(), gates, now=getattr(clock, "datetime") if virtual else None, release=release)
    bootstrap(api, ClusterSpec(nodes=[]))
    factory = InformerFactory(InProcessClient(api, clock=clock, shared_reads=True), clock=clock)
    scheduler = InstrumentedScheduler(InProcessClient(api, clock=clock, field_manager="default-scheduler"), factory,
                                      gates=gates, clock=clock)
    named = [("scheduler", scheduler)] + _optional_components(case, workload, options, resolved, api, factory,
                                                               gates, clock)
    components = [c for _, c in named]
    result["components"] = [name for name, _ in named]
    result["unavailablePlugins"] = scheduler.unavailable_plugins
    client = InProcessClient(api, clock=clock, field_manager="scheduler-perf")
    ctx = RunContext(case, workload, gates, options, clock, api, client, scheduler)
    op_times: list[dict[str, Any]] = []
    for c in components:
        c.start()
    try:
        await _run_ops(ctx, ops, components, result, op_times)
    finally:
        await _stop_run(ctx, components, factory, result)
    result["incomplete"] = ctx.incomplete
    result["opTimings"] = op_times
    result["measurements"] = ctx.measurements
    result["schedulerStats"] = dict(scheduler.stats)
    result["checks"] = checks_mod.run_checks(api, _expectations(ops, ctx), gates)
    result["peakRSSBytes"] = peak_rss_bytes()
    if options.store_limit and ctx.measurements:
        _add_store_limits(result, api, ctx, gates)
    result["threshold"] = threshold_result(case, workload, result)
    result["loadAverageAtEnd"] = _loadavg()
    result["wallSeconds"] = time.perf_counter() - t_start
    return result


def _optional_components(case: TestCase, workload: Workload, options: RunOptions, resolved: list[dict], api: API,
                         factory: InformerFactory, gates: FeatureGates, clock: Any) -> list[tuple[str, Any]]:
    """The ResourceClaim controller when the workload uses DRA, simulated kubelets when asked for."""
    out: list[tuple[str, Any]] = []
    if uses_dra(case, workload, resolved):
        from ..controllers.resourceclaim import ResourceClaimController
        out.append(("resourceclaim-controller", ResourceClaimController(
            InProcessClient(api, clock=clock, field_manager="kube-controller-manager"), factory, gates=gates,
            clock=clock)))
    kubelets = case.kubelets if options.kubelets is None else options.kubelets
    if kubelets:
        from ..nodes.kubelet import SimulatedKubelets
        out.append(("simulated-kubelets", SimulatedKubelets(
            InProcessClient(api, clock=clock, field_manager="kubelet"), factory, clock=clock)))
    return out


async def _run_ops(ctx: RunContext, ops: list[Op], components: list[Any], result: dict[str, Any],
                   op_times: list[dict[str, Any]]) -> None:
    """Wait for the components to sync, then run the ops in order; the run's status says how it went
    (a bug in phalanx shows up as an error of this run, not a crash of all)."""
    name = f"{ctx.case.name}/{ctx.workload.name}"
    try:
        ready = lambda: all(getattr(c, "synced", True) for c in components)  # noqa: E731
        if hasattr(ctx.clock, "run_until"):
            await ctx.clock.run_until(ready, within=30)
        else:
            while not ready():
                await asyncio.sleep(0.01)
        result["status"] = "completed"
        for op in ops:
            t0 = time.perf_counter()
            ctx.log(f"{name}: {op.label()} ...")
            try:
                await op.run(ctx)
            finally:
                op_times.append({"op": op.label(), "seconds": time.perf_counter() - t0})
    except DidNotComplete as e:
        result["status"] = "did not complete"
        ctx.log(f"{name}: DID NOT COMPLETE: {e}")
    except WorkloadError as e:
        result["error"] = str(e)
        result["status"] = "error"
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()
        result["status"] = "error"


async def _stop_run(ctx: RunContext, components: list[Any], factory: InformerFactory,
                    result: dict[str, Any]) -> None:
    if ctx.measurement is not None:
        await ctx.stop_measurement(completed=False)
    bg_errors = await ctx.stop_background()
    if bg_errors:
        result.setdefault("notes", []).extend(bg_errors)
    ctx.profile(False)
    for c in reversed(components):
        try:
            await c.stop()
        except Exception:  # pragma: no cover - best effort
            pass
    await factory.stop()


def _expectations(ops: list[Op], ctx: RunContext) -> dict[str, tuple[int, int]]:
    """(pods created, pods bound) of each op that waited for its pods to be scheduled."""
    return {op.label(): (ctx.tracker.created_by_op[op.index], ctx.tracker.bound_by_op[op.index])
            for op in ops if op.opcode == "createPods" and not op.skip_wait and not op.steady}  # type: ignore[attr-defined]


def _add_store_limits(result: dict[str, Any], api: API, ctx: RunContext, gates: FeatureGates) -> None:
    """The store-only write limits (MemoryStore, then the SQLite a phalanx cluster runs on) and the
    throughput's ratio to each; a limit that fails says why instead."""
    thr = headline_throughput(result)
    for sqlite, limit_key, ratio_key in ((False, "storeWriteLimit", "ratioToStoreLimit"),
                                         (True, "sqliteWriteLimit", "ratioToSQLiteLimit")):
        try:
            limit = _store_limit(api, ctx, gates, sqlite=sqlite)
        except Exception as e:  # the limit is a side figure: report why it is missing
            limit = {"error": f"{type(e).__name__}: {e}"}
        result[limit_key] = limit
        if thr is not None and limit.get("podsPerSecond"):
            result[ratio_key] = thr / limit["podsPerSecond"]


def _loadavg() -> list[float] | None:
    """The machine's 1/5/15-minute load: a busy machine slows wall-clock figures down."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return None


def _store_limit(api: API, ctx: RunContext, gates: FeatureGates, sqlite: bool = False) -> dict[str, Any]:
    """The physical limit for the measured pods: their bindings and their claims' status writes
    (on a MemoryStore, or with `sqlite` on a SQLiteStore in a temporary directory)."""
    namespaces: set[str] = set()
    for m in ctx.measurements:
        namespaces.update(m["namespaces"] or ctx.pod_namespaces)
    pods = [p for p in api.list(api.resource("", "v1", "pods"), None)["items"]
            if p["metadata"].get("namespace") in namespaces and (p.get("spec") or {}).get("nodeName")]
    claims = []
    try:
        claim_rt = api.resource("resource.k8s.io", "v1", "resourceclaims")
        claims = [c for c in api.list(claim_rt, None)["items"]
                  if c["metadata"].get("namespace") in namespaces and (c.get("status") or {}).get("allocation")]
    except StatusError:
        pass
    if not pods:
        return {"bindings": 0, "claimStatusWrites": len(claims)}
    # Steady-state ops delete what they schedule: replay as many writes as pods were scheduled,
    # cycling through the objects that are left (claims in the same proportion).
    target = sum(m.get("podsScheduled") or 0 for m in ctx.measurements)
    if target > len(pods):
        ratio = len(claims) / len(pods)
        pods = _replicate(pods, target)
        claims = _replicate(claims, round(target * ratio)) if claims else claims
    if not sqlite:
        return store_write_limit(pods, claims, gates)
    # On a thread with no event loop, the SQLiteStore commits each write as it is made; on this
    # thread (a running loop) it would queue them all for one group commit after the timing.
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-limit") as pool:
        return pool.submit(_sqlite_write_limit, pods, claims, gates).result()


def _sqlite_write_limit(pods: list[dict], claims: list[dict], gates: FeatureGates) -> dict[str, Any]:
    """`store_write_limit` on a SQLiteStore in a temporary directory, a commit per write (call it
    where no event loop runs)."""
    import tempfile

    from ..store.sqlite import SQLiteStore
    with tempfile.TemporaryDirectory(prefix="phalanx-bench-") as d:
        store = SQLiteStore(os.path.join(d, "store.db"))
        try:
            result = store_write_limit(pods, claims, gates, store=store)
            result["commits"] = store.commits
            return result
        finally:
            store.close()


def _replicate(objs: list[dict], n: int) -> list[dict]:
    out = []
    for i in range(n):
        o = dict(objs[i % len(objs)])
        if i >= len(objs):
            o["metadata"] = {**o["metadata"], "name": f"{o['metadata']['name']}-replay-{i}"}
        out.append(o)
    return out


def headline_throughput(result: dict[str, Any]) -> float | None:
    for m in result.get("measurements") or []:
        avg = (m.get("SchedulingThroughput") or {}).get("Average")
        if avg is not None:
            return avg
        if m.get("overallThroughput"):
            return m["overallThroughput"]
    return None


def threshold_result(case: TestCase, workload: Workload, result: dict[str, Any]) -> dict[str, Any] | None:
    """Upstream's threshold check: SchedulingThroughput Average >= threshold, or for another metric
    (`thresholdMetricSelector`) its data bucket against the threshold (`expectLower`: <=)."""
    threshold = workload.threshold
    if isinstance(threshold, dict):
        threshold = threshold.get("default")
    if not threshold:
        return None
    sel = case.threshold_selector(workload)
    name, bucket = sel.get("name"), sel.get("dataBucket", "Average")
    measured = None
    for m in result.get("measurements") or []:
        if name == "SchedulingThroughput":
            measured = (m.get("SchedulingThroughput") or {}).get(bucket)
        elif name in ("scheduler_podgroup_scheduling_attempt_duration_seconds",
                      "scheduler_scheduling_attempt_duration_seconds"):
            table = m.get("podGroupAttempts" if "podgroup" in name else "podAttempts") or {}
            res = (sel.get("labels") or {}).get("result", "all")
            ms = (table.get(res) or {}).get(bucket)
            measured = ms / 1000.0 if ms is not None else None
        if measured is not None:
            break
    lower = bool(sel.get("expectLower"))
    met = None if measured is None else (measured <= threshold if lower else measured >= threshold)
    return {"metric": name, "dataBucket": bucket, "threshold": threshold, "expectLower": lower,
            "measured": measured, "met": met}


def run_workload(case: TestCase, workload: Workload, options: RunOptions | None = None) -> dict[str, Any]:
    """`run_workload_async` on a fresh event loop."""
    return asyncio.run(run_workload_async(case, workload, options))


def run_workload_isolated(case: TestCase, workload: Workload, options: RunOptions | None = None) -> dict[str, Any]:
    """`run_workload` in a forked child process, so that every run starts from the same heap (a
    run's garbage and the allocator's high-water mark do not slow or inflate the next one) and
    `peakRSSBytes` is that run's own. With `options.profile_path` the child profiles its measured
    ops into that file. Needs the `fork` start method (Linux, macOS)."""
    import multiprocessing

    import orjson

    options = options or RunOptions()
    mp = multiprocessing.get_context("fork")
    reader, writer = mp.Pipe(duplex=False)

    def child() -> None:
        reader.close()
        try:
            if options.profile_path:
                import cProfile
                options.profiler = cProfile.Profile()
            result = run_workload(case, workload, options)
            if options.profiler is not None and options.profile_path:
                options.profiler.dump_stats(options.profile_path)
        except BaseException as e:  # noqa: BLE001 - whatever happens, the parent gets a result
            result = {"testCase": case.name, "workload": workload.name, "status": "error",
                      "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        writer.send_bytes(orjson.dumps(result, default=str))
        writer.close()

    proc = mp.Process(target=child, name=f"bench {case.name}/{workload.name}")
    proc.start()
    writer.close()
    try:
        data = reader.recv_bytes()
    except EOFError:
        data = None
    proc.join()
    if data is None:
        return {"testCase": case.name, "workload": workload.name, "status": "error",
                "error": f"the run's process exited with code {proc.exitcode} before reporting"}
    return orjson.loads(data)


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
