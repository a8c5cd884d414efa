"""Run one variant of a scenario in virtual time with phalanx's real components, in this process.

    scenario = load_scenario("examples/simulate/small.yaml")
    result = run_variant(scenario, scenario.variants[0], progress=print_progress)
    result.summary["jct_p90"], result.jobs[0]["queueing_delay"], result.samples[-1]["gpu_allocation"]

The cluster is the variant's cluster config built in process — API over a memory store, every
component of `cluster/components.py` (scheduler, Job/JobSet controllers, ResourceClaim controller,
garbage collector, TTL controller, simulated kubelets and DRA drivers) — all on one `VirtualClock`,
without HTTP. The engine then plays the scenario against it, writing through the API only:

- each job of the stream is created at its arrival time as a Job or JobSet with its Workload and
  PodGroup (`objects.py`); finished jobs are deleted by the TTL controller
  (`ttlSecondsAfterFinished: 0`), their pods, PodGroups and claims by the garbage collector, so the
  store stays small over a long run;
- each failure sets, and on recovery clears, the Node annotations `fault.phalanx.dev/node: "down"`
  or `fault.phalanx.dev/devices: "gpu-0,gpu-3"` (`*`: all); what a failed node or device does is the
  components' business;
- the `Observer` (`observe.py`) measures, sampling the cluster every `sampleEvery`.

Virtual time jumps to the next due thing (an arrival, a failure, a sample, a pod's `run-for`, a
back-off) whenever the event loop is idle (`VirtualClock.run_until`); the run ends at the
scenario's `duration`, or earlier once the stream is exhausted and every job has finished.

Determinism: the seed seeds the generators, the scheduler's tie-breaks (`RuntimeOptions.seed`),
the names the API generates (`generateName`) and the uids it assigns; the same seed gives the same
event log (`result.events`). Hash randomization reorders sets of strings between processes, so the
CLI runs variants with a fixed `PYTHONHASHSEED` (`run.py`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .. import __version__
from ..client import InProcessClient
from ..client.clock import Clock, VirtualClock
from ..cluster.controlplane import ControlPlane, tune_gc
from ..cluster.runtime import RuntimeOptions
from ..machinery.errors import StatusError
from ..sim.metrics import peak_rss_bytes
from ..store import MemoryStore
from .jobs import JobArrival
from .objects import FIELD_MANAGER, ObjectBuilder, job_name, level_key, topology_levels
from .observe import Observer, summarize
from .scenario import Failure, Scenario, Variant

log = logging.getLogger("phalanx.simulate")

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: simulated time 0
FAULT_NODE = "fault.phalanx.dev/node"
FAULT_DEVICES = "fault.phalanx.dev/devices"
SETTLE_BEFORE_START = 30.0  # simulated seconds for the cluster to publish slices and sync caches
# Components a simulated batch cluster does not need (kube-controller-manager's `--controllers`
# names): nothing in a scenario makes Deployments, Services, volumes or PDBs.
UNNEEDED_CONTROLLERS = frozenset({
    "replicaset-controller", "deployment-controller", "replicationcontroller-controller",
    "certificatesigningrequest-signing-controller", "crd-autoregister", "flowschema-status", "crd-finalizer",
    "crd-naming", "statefulset-controller", "persistentvolume-binder-controller",
    "persistentvolume-protection-controller", "disruption-controller", "cronjob-controller", "daemonset-controller",
    "endpoints-controller", "endpointslice-controller"})
# Without failures nothing reads node Leases: the kubelets renew them once a day instead of every
# ~80 s at 4,096 nodes (millions of writes a simulated day), and the controllers that watch for
# silent nodes do not run.
FAILURE_CONTROLLERS = frozenset({"node-lifecycle-controller", "taint-eviction-controller",
                                 "device-taint-eviction-controller"})
IDLE_LEASE_PERIOD = 86400.0
PROGRESS_EVERY = 1.0  # wall seconds between progress reports

Progress = Callable[["ProgressReport"], None]


@dataclass
class ProgressReport:
    variant: str
    simulated: float  # seconds of simulated time so far
    horizon: float
    submitted: int
    finished: int
    running: int
    pending: int
    events_per_second: float
    wall: float
    eta: float | None  # wall seconds left at the current rate
    done: bool = False


@dataclass
class RunResult:
    scenario: str
    variant: str
    seed: int
    kubernetes_version: str
    phalanx_version: str
    jobs: list[dict[str, Any]]
    samples: list[dict[str, Any]]
    summary: dict[str, Any]
    events: list[tuple]
    run: dict[str, Any] = field(default_factory=dict)  # wall time, simulated time, ratio, peak RSS

    def meta(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "variant": self.variant, "seed": self.seed,
                "kubernetesVersion": self.kubernetes_version, "phalanxVersion": self.phalanx_version, **self.run}


def run_variant(scenario: Scenario, variant: Variant, *, seed: int | None = None, progress: Progress | None = None,
                log_events: bool = True) -> RunResult:
    """Run `variant` to the end in a new event loop (the process's own: one variant per process
    when several run at once)."""
    return asyncio.run(Simulation(scenario, variant, seed=seed, progress=progress, log_events=log_events).run())


class Simulation:
    def __init__(self, scenario: Scenario, variant: Variant, *, seed: int | None = None,
                 progress: Progress | None = None, log_events: bool = True, clock: Clock | None = None):
        """`clock`: a VirtualClock by default; the real clock runs the same scenario in real time
        (the fidelity test: seconds-long jobs, compared with the same run in virtual time)."""
        self.scenario, self.variant = scenario, variant
        self.seed = scenario.seed if seed is None else seed
        self.progress = progress
        self.log_events = log_events
        self.clock: Any = clock or VirtualClock(start=START - SETTLE_BEFORE_START)
        self.virtual = isinstance(self.clock, VirtualClock)
        self.t0 = START
        self.spec = variant.cluster
        self.horizon = scenario.duration
        self.names: set[str] = set()
        self.shared: set[tuple[str, str]] = set()
        self.stream_done = False
        self.pending_failures = 0
        self._faults: dict[str, dict[str, set[str]]] = {}  # node -> {"down": {failure ids}, "devices": {...}}
        self._last_report = (0.0, 0.0, 0)  # wall, simulated, events

    # -- the run ---------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        random_state, thresholds, frozen = random.getstate(), gc.get_threshold(), gc.get_freeze_count()
        random.seed(self.seed)
        wall0 = time.perf_counter()
        try:
            cp = await self._start_cluster()
            try:
                await self._play(cp)
            finally:
                await cp.stop()
        finally:
            random.setstate(random_state)
            if self.virtual and not frozen:
                gc.unfreeze()
            gc.set_threshold(*thresholds)
        return self._result(time.perf_counter() - wall0)

    async def _start_cluster(self) -> ControlPlane:
        uid_rng = random.Random(f"uid:{self.seed}")
        failures = bool(self.scenario.failures)
        cp = ControlPlane(self.spec, store=MemoryStore(), runtime=RuntimeOptions(
            clock=self.clock, seed=self.seed, record_events=False, managed_fields=False,
            lease_period=None if failures else IDLE_LEASE_PERIOD,
            disabled_controllers=UNNEEDED_CONTROLLERS | (frozenset() if failures else FAILURE_CONTROLLERS)))
        cp.api.new_uid = lambda: str(uuid.UUID(int=uid_rng.getrandbits(128), version=4))
        await cp.start_in_process()
        self.cp = cp
        self.client = InProcessClient(cp.api, clock=self.clock, field_manager=FIELD_MANAGER, record_events=False)
        factory = cp.components[0].factory
        label_keys = {k for n in self.spec.nodes for k in n.labels}
        levels = topology_levels(label_keys)
        self.observer = Observer(factory, self.clock, start=self.t0, nodes=self.spec.nodes, levels=levels,
                                 log_events=self.log_events)
        factory.start()
        self.builder = ObjectBuilder(release=self.spec.release, topology_keys={
            level: key for level in self._levels_used(levels) if (key := level_key(level, label_keys))},
            tolerations=self._tolerations())
        if self.virtual:
            await self.clock.advance(START - self.clock.now())
            tune_gc()
        else:
            await self._wait_until_ready()
            # start on a whole second, as simulated time 0 is: timestamps the API writes have whole
            # seconds, and a pod's run-for counts from its startTime
            await asyncio.sleep(math.ceil(self.clock.now()) - self.clock.now())
            self.t0 = self.observer.start = float(math.ceil(self.clock.now() - 0.001))
        return cp

    async def _wait_until_ready(self, timeout: float = 60.0) -> None:
        """Real time: until the DRA drivers' slices stop changing (and at least a second passed)."""
        seen, stable_since, deadline = -1, time.monotonic(), time.monotonic() + timeout
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            total = sum(self.observer.gpus_total.values())
            if total != seen:
                seen, stable_since = total, time.monotonic()
            elif time.monotonic() - stable_since >= 1.0:
                return

    def _levels_used(self, levels: dict[str, str]) -> set[str]:
        used = set(levels) | {lv for e in self.scenario.entries for lv in e.topologies}
        if isinstance(self.variant.overrides.get("topology"), str):
            used.add(self.variant.overrides["topology"])
        return used

    def _tolerations(self) -> list[dict[str, Any]]:
        """Jobs tolerate the taints of the cluster's worker pools (a GPU pool's `NoSchedule`), as a
        user's GPU jobs would."""
        keys = sorted({t.get("key", "") for n in self.spec.nodes if n.role != "control-plane"
                       for t in n.taints if t.get("effect") in ("NoSchedule", "PreferNoSchedule")})
        return [{"key": k, "operator": "Exists"} for k in keys if k]

    async def _play(self, cp: ControlPlane) -> None:
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._feed(self.scenario.stream(self.variant, self.seed)), name="simulate feed"),
                 loop.create_task(self._sample(), name="simulate samples"),
                 loop.create_task(self._fail(self.scenario.failures), name="simulate failures")]
        end = self.t0 + self.horizon
        try:
            if self.virtual:
                await self.clock.run_until(lambda: self._should_stop(end), within=self.horizon + 1.0)
            else:
                while not self._should_stop(end):
                    await asyncio.sleep(0.02)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.observer.sample()
        self._report(force=True)

    def _should_stop(self, end: float) -> bool:
        self._report()
        if self.clock.now() >= end:
            return True
        return self.stream_done and not self.observer.active and self.pending_failures == 0

    # -- the stream ------------------------------------------------------------------------------
    async def _feed(self, stream: Iterator[JobArrival]) -> None:
        for arrival in stream:
            delay = self.t0 + arrival.arrival - self.clock.now()
            if delay > 0:
                await self.clock.sleep(delay)
            await self._submit(arrival)
        self.stream_done = True

    def _unique(self, text: str) -> str:
        name = base = job_name(text)
        n = 1
        while name in self.names:
            n += 1
            suffix = f"-{n}"
            name = base[:52 - len(suffix)].rstrip("-") + suffix
        self.names.add(name)
        return name

    async def _submit(self, arrival: JobArrival) -> None:
        name = self._unique(arrival.name)
        rec = self.observer.submitted(arrival, name)
        try:
            await self._ensure_shared(arrival)
            job = await self.client.create(self.builder.job_object(arrival, name))
        except StatusError as e:
            self.observer.rejected(rec, f"{e.reason}: {e.message}")
            return
        try:
            for obj in self.builder.group_objects(arrival, name, job):
                await self.client.create(obj)
        except StatusError as e:
            self.observer.rejected(rec, f"{e.reason}: {e.message}")
            await self.client.delete(job["apiVersion"], job["kind"], job["metadata"]["namespace"], name,
                                     propagation="Background")

    async def _ensure_shared(self, arrival: JobArrival) -> None:
        for obj in self.builder.shared_objects(arrival):
            key = (obj["kind"], obj["metadata"]["name"])
            if key in self.shared:
                continue
            try:
                await self.client.create(obj)
            except StatusError as e:
                if e.code != 409:
                    raise
            self.shared.add(key)

    # -- samples and failures ----------------------------------------------------------------------
    async def _sample(self) -> None:
        every = self.scenario.sample_every
        while True:
            self.observer.sample()
            await self.clock.sleep(every)

    async def _fail(self, failures: list[Failure]) -> None:
        timeline: list[tuple[float, int, bool, Failure]] = []
        for i, f in enumerate(failures):
            timeline.append((f.at, i, True, f))
            if f.recover_after is not None:
                timeline.append((f.at + f.recover_after, i, False, f))
        timeline.sort(key=lambda item: (item[0], item[1], item[2]))
        self.pending_failures = len(timeline)
        for at, i, on, failure in timeline:
            delay = self.t0 + at - self.clock.now()
            if delay > 0:
                await self.clock.sleep(delay)
            await self._apply_failure(i, failure, on)
            self.pending_failures -= 1

    async def _apply_failure(self, index: int, failure: Failure, on: bool) -> None:
        nodes = failure.nodes_of(self.spec)
        what = "devices" if failure.devices else "down"
        for node in nodes:
            faults = self._faults.setdefault(node, {"down": set(), "devices": set()})
            held = faults[what]
            ident = f"{index}:{','.join(failure.devices or [])}"
            held.add(ident) if on else held.discard(ident)
            await self._write_fault_annotations(node, faults)
        self.observer.failure(nodes, what if what == "down" else f"devices {','.join(failure.devices or [])}", on)

    async def _write_fault_annotations(self, node: str, faults: dict[str, set[str]]) -> None:
        devices: set[str] = set()
        for ident in faults["devices"]:
            devices.update(ident.partition(":")[2].split(","))
        device_value = "*" if "*" in devices else ",".join(sorted(devices)) or None
        annotations = {FAULT_NODE: "down" if faults["down"] else None, FAULT_DEVICES: device_value}
        try:
            await self.client.patch("v1", "Node", None, node, {"metadata": {"annotations": annotations}})
        except StatusError as e:
            log.warning("failure annotations on node %s: %s", node, e.message)

    # -- progress and results ------------------------------------------------------------------------
    def _report(self, force: bool = False) -> None:
        if self.progress is None:
            return
        wall = time.perf_counter()
        last_wall, last_sim, last_events = self._last_report
        if not force and wall - last_wall < PROGRESS_EVERY:
            return
        simulated = self.clock.now() - self.t0
        events = self.observer.event_count
        elapsed = wall - last_wall if last_wall else 0.0
        rate = (simulated - last_sim) / elapsed if elapsed > 0 else 0.0
        eta = (self.horizon - simulated) / rate if rate > 0 else None
        self._last_report = (wall, simulated, events)
        active = self.observer.active.values()
        self.progress(ProgressReport(
            variant=self.variant.name, simulated=simulated, horizon=self.horizon,
            submitted=len(self.observer.order), finished=len(self.observer.order) - len(self.observer.active),
            running=sum(1 for r in active if r.started is not None),
            pending=sum(1 for r in active if r.gang_scheduled is None),
            events_per_second=(events - last_events) / elapsed if elapsed > 0 else 0.0,
            wall=wall, eta=0.0 if force else eta, done=force))

    def _result(self, wall: float) -> RunResult:
        rows = self.observer.job_rows()
        simulated = max(0.0, self.clock.now() - self.t0)
        return RunResult(
            scenario=self.scenario.name, variant=self.variant.name, seed=self.seed,
            kubernetes_version=self.spec.kubernetes_version, phalanx_version=__version__,
            jobs=rows, samples=self.observer.samples, summary=summarize(rows, self.observer.samples),
            events=self.observer.events,
            run={"wallSeconds": wall, "simulatedSeconds": simulated,
                 "speedup": simulated / wall if wall > 0 else None, "peakRSSBytes": peak_rss_bytes(),
                 "informerEvents": self.observer.event_count, "nodes": len(self.spec.nodes)})
