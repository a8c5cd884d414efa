"""The opcodes of a workload template, as scheduler_perf defines them.

    op = make_op(resolved_op_dict, case)      # resolved by phalanx.sim.workload.resolve_ops
    await op.run(ctx)                         # ctx: phalanx.sim.harness.RunContext

| opcode | fields (upstream's names) |
|---|---|
| `createNodes` | `count`, `nodeTemplatePath` (default: 4 CPU, 32Gi, 110 pods, Ready), `templateParams`, `uniqueNodeLabelStrategy.labelKey`, `labelNodePrepareStrategy.{labelKey,labelValues}` |
| `createNamespaces` | `prefix`, `count` |
| `createPods` | `count`, `countMultiplier`, `namespace` (default `namespace-<op index>`), `podTemplatePath` (default: the case's `defaultPodTemplatePath`, else a 100m/500Mi pause pod), `templateParams`, `collectMetrics`, `skipWaitToCompletion`, `steadyState` + `duration` |
| `createPodGroups` | `count`, `namespace`, `templatePath`, `templateParams`; waits until the scheduler sees them |
| `waitForPodGroups` | `namespace`, `count` |
| `createAny` | `templatePath`, `count` (default 1), `namespace`, `templateParams` |
| `createResourceDriver` | `driverName`, `nodes` (glob), `maxClaimsPerNode`: one ResourceSlice per node, devices `instance-0..N-1` |
| `allocResourceClaims` | `namespace`: allocates every unallocated claim there on a random node |
| `churn` | `mode` (`create` / `recreate`), `number`, `templatePaths`, `intervalMilliseconds` (500), `namespace`; runs in the background until the workload ends |
| `barrier` | `namespaces`, `stageRequirement` (`Scheduled` / `Attempted`) |
| `sleep` | `duration` |
| `deletePods` | `namespace`, `labelSelector`, `deletePodsPerSecond`, `skipWaitToCompletion` (pods are deleted with grace period 0: there is no kubelet to finish a graceful deletion) |
| `startCollectingMetrics` / `stopCollectingMetrics` | `name`, `namespaces` |

Objects are rendered from their templates (`phalanx.sim.template`) with `.Index` (the object's
number in its op) and `templateParams`, and created through the in-process client like any API
client. Every wait has a timeout and a stall limit: an op whose pods stop being scheduled is
reported as not completed (`ctx.incomplete`), never waited on forever. Ops for features that are
still being built (DRA, topology, gang preemption) create the same objects regardless, so a run
shows truthfully what schedules and what does not.
"""

from __future__ import annotations

import asyncio
import fnmatch
import itertools
import time
from typing import Any, ClassVar

from ..machinery.errors import StatusError
from .template import Template
from .workload import TestCase, WorkloadError, parse_duration

DEFAULT_NODE_TEMPLATE = """\
apiVersion: v1
kind: Node
metadata:
  generateName: scheduler-perf-
spec: {}
status:
  capacity:
    pods: "110"
    cpu: "4"
    memory: 32Gi
  conditions:
  - status: "True"
    type: Ready
  phase: Running
"""

DEFAULT_POD_TEMPLATE = """\
apiVersion: v1
kind: Pod
metadata:
  generateName: pod-
spec:
  containers:
  - image: registry.k8s.io/pause:3.10.1
    name: pause
    ports:
    - containerPort: 80
    resources:
      limits:
        cpu: 100m
        memory: 500Mi
      requests:
        cpu: 100m
        memory: 500Mi
"""

RESOURCE_V1 = "resource.k8s.io/v1"


def _int(spec: dict, key: str, default: int | None = None, *, where: str) -> int:
    v = spec.get(key, default)
    if v is None:
        raise WorkloadError(f"{where}: {key} must be set")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v < 0:
        raise WorkloadError(f"{where}: {key} must be a non-negative integer, got {v!r}")
    return int(v)


class Op:
    """One op of a workload; subclasses parse their fields in `__init__` and act in `run`."""

    opcode: ClassVar[str] = ""
    known: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, spec: dict[str, Any], case: TestCase):
        self.spec = spec
        self.case = case
        self.index: int = spec.get("index", 0)
        self.where = f"{case.name} op {self.index} ({self.opcode})"
        unknown = set(spec) - self.known - {"opcode", "index"}
        if unknown:
            raise WorkloadError(f"{self.where}: unknown field(s) {', '.join(sorted(unknown))}")

    @property
    def collects_metrics(self) -> bool:
        return False

    def label(self) -> str:
        return f"op {self.index} {self.opcode}"

    async def run(self, ctx: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class CreateNodes(Op):
    opcode = "createNodes"
    known = frozenset({"count", "nodeTemplatePath", "templateParams", "uniqueNodeLabelStrategy",
                       "labelNodePrepareStrategy"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.count = _int(spec, "count", where=self.where)
        self.template_path = spec.get("nodeTemplatePath")
        self.params = dict(spec.get("templateParams") or {})
        self.unique_label = (spec.get("uniqueNodeLabelStrategy") or {}).get("labelKey")
        prep = spec.get("labelNodePrepareStrategy") or {}
        self.label_key = prep.get("labelKey")
        self.label_values = list(prep.get("labelValues") or [])
        if self.label_key and not self.label_values:
            raise WorkloadError(f"{self.where}: labelNodePrepareStrategy needs labelValues")

    async def run(self, ctx):
        tmpl = ctx.template(self.template_path, DEFAULT_NODE_TEMPLATE)
        nodes = list(ctx.render(tmpl, self.count, self.params))
        for i, node in enumerate(nodes):
            md = node.setdefault("metadata", {})
            labels = md["labels"] = md.get("labels") or {}
            if self.unique_label:
                labels[self.unique_label] = f"node-{ctx.nodes_created + i}"
            if self.label_key:
                labels[self.label_key] = self.label_values[i % len(self.label_values)]
        created = await ctx.create_objects(nodes)
        ctx.nodes_created += len(created)
        if not created:
            return
        last, informer = created[-1]["metadata"]["name"], ctx.scheduler.nodes
        # Watch events arrive in order: once the last node is in the informer, all of them are.
        await ctx.wait(lambda: informer.get(last) is not None,
                       what=f"{self.count} nodes in the scheduler's cache", label=self.label())


class CreateNamespaces(Op):
    opcode = "createNamespaces"
    known = frozenset({"prefix", "count", "namespaceTemplatePath"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.prefix = spec.get("prefix") or ""
        if not self.prefix:
            raise WorkloadError(f"{self.where}: prefix must be set")
        self.count = _int(spec, "count", where=self.where)
        if spec.get("namespaceTemplatePath"):
            raise WorkloadError(f"{self.where}: namespaceTemplatePath is not supported")

    async def run(self, ctx):
        for i in range(self.count):
            await ctx.ensure_namespace(f"{self.prefix}-{i}")


class CreatePods(Op):
    opcode = "createPods"
    known = frozenset({"count", "countMultiplier", "namespace", "podTemplatePath", "templateParams",
                       "collectMetrics", "skipWaitToCompletion", "steadyState", "duration", "persistentVolumeTemplatePath",
                       "persistentVolumeClaimTemplatePath"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        count = _int(spec, "count", where=self.where)
        mult = _int(spec, "countMultiplier", 1, where=self.where)
        self.count = count * mult
        self.namespace = spec.get("namespace") or f"namespace-{self.index}"
        self.template_path = spec.get("podTemplatePath") or case.default_pod_template_path
        self.params = dict(spec.get("templateParams") or {})
        self.collect = bool(spec.get("collectMetrics", False))
        self.skip_wait = bool(spec.get("skipWaitToCompletion", False))
        self.steady = bool(spec.get("steadyState", False))
        self.duration = parse_duration(spec["duration"]) if spec.get("duration") is not None else None
        if self.steady and self.duration is None:
            raise WorkloadError(f"{self.where}: steadyState needs duration")
        if spec.get("persistentVolumeTemplatePath") or spec.get("persistentVolumeClaimTemplatePath"):
            raise WorkloadError(f"{self.where}: persistent volumes are not supported")

    @property
    def collects_metrics(self) -> bool:
        return self.collect

    def label(self) -> str:
        return f"op {self.index} createPods {self.count} in {self.namespace}"

    async def run(self, ctx):
        await ctx.ensure_namespace(self.namespace)
        tmpl = ctx.template(self.template_path, DEFAULT_POD_TEMPLATE)
        ctx.pod_namespaces.add(self.namespace)
        if self.steady:
            await self._steady_state(ctx, tmpl)
            return
        pods = ctx.render(tmpl, self.count, self.params, namespace=self.namespace)
        # Measured pods are created while the scheduler's cycles are held, then released: the
        # measurement is scheduling alone, as upstream's scheduler has its own cores. With
        # --overlap-create they are created while it runs (both share this thread).
        hold = self.collect and not ctx.options.overlap_create
        if self.collect and not hold:
            ctx.start_measurement(self.label(), [self.namespace], op_index=self.index)
        if hold:
            ctx.scheduler.hold()
        try:
            t0 = time.perf_counter()
            created = await ctx.create_objects(pods, track_op=self.index)
            if hold:
                informer = ctx.scheduler.pods
                last = created[-1]["metadata"] if created else None
                if last is not None:
                    await ctx.wait(lambda: informer.get_by_name(last["namespace"], last["name"]) is not None,
                                   what="the created pods in the scheduler's cache", label=self.label())
                ctx.start_measurement(self.label(), [self.namespace], op_index=self.index,
                                      creation_seconds=time.perf_counter() - t0)
        finally:
            if hold:
                ctx.scheduler.release()
        if self.skip_wait:
            return
        tracker = ctx.tracker
        await ctx.wait(lambda: tracker.bound_by_op[self.index] >= self.count,
                       progress=lambda: tracker.bound_by_op[self.index],
                       what=f"{self.count} pods scheduled", label=self.label())
        if self.collect:
            await ctx.stop_measurement()

    async def _steady_state(self, ctx, tmpl: Template) -> None:
        """Keep `count` pods pending: each pod that gets scheduled is deleted and replaced, until
        `duration` has passed; throughput counts the pods scheduled meanwhile."""
        tracker, numbers = ctx.tracker, itertools.count()
        scheduled: list[dict] = []
        tracker.listeners[self.index] = scheduled.append
        if self.collect:
            ctx.start_measurement(self.label(), [self.namespace], op_index=self.index)

        async def create(n: int) -> None:
            objs = [ctx.render_one(tmpl, next(numbers), self.params, namespace=self.namespace) for _ in range(n)]
            await ctx.create_objects(objs, track_op=self.index)

        await create(self.count)
        end = ctx.clock.now() + self.duration
        try:
            while ctx.clock.now() < end:
                if not scheduled:
                    ok = await ctx.wait(lambda: bool(scheduled) or ctx.clock.now() >= end,
                                        progress=lambda: tracker.bound_by_op[self.index],
                                        what="steady-state pods scheduled", label=self.label(),
                                        timeout=max(0.0, end - ctx.clock.now()) + 1.0)
                    if not ok:
                        break
                    continue
                done, scheduled[:] = list(scheduled), []
                for pod in done:
                    md = pod["metadata"]
                    try:
                        await ctx.client.delete("v1", "Pod", md["namespace"], md["name"], grace_period=0)
                    except StatusError as e:
                        if e.code != 404:
                            raise
                await create(len(done))
                await ctx.tick()
        finally:
            tracker.listeners.pop(self.index, None)
        if self.collect:
            await ctx.stop_measurement()


class CreatePodGroups(Op):
    opcode = "createPodGroups"
    known = frozenset({"count", "namespace", "templatePath", "templateParams"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.count = _int(spec, "count", where=self.where)
        self.namespace = spec.get("namespace") or f"namespace-{self.index}"
        self.template_path = spec.get("templatePath")
        if not self.template_path:
            raise WorkloadError(f"{self.where}: templatePath must be set")
        self.params = dict(spec.get("templateParams") or {})

    async def run(self, ctx):
        await ctx.ensure_namespace(self.namespace)
        objs = ctx.render(ctx.template(self.template_path), self.count, self.params, namespace=self.namespace)
        created = await ctx.create_objects(objs)
        await wait_for_pod_groups(ctx, [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in created],
                                  self.label())


async def wait_for_pod_groups(ctx, keys: list[str], label: str) -> None:
    informer = ctx.scheduler.podgroups
    if informer is None:  # GenericWorkload off: the scheduler does not watch PodGroups
        return
    await ctx.wait(lambda: all(informer.get(k) is not None for k in keys),
                   what=f"{len(keys)} PodGroups in the scheduler's cache", label=label)


class WaitForPodGroups(Op):
    opcode = "waitForPodGroups"
    known = frozenset({"count", "namespace"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.count = _int(spec, "count", where=self.where)
        self.namespace = spec.get("namespace")

    async def run(self, ctx):
        informer = ctx.scheduler.podgroups
        if informer is None:
            return
        await ctx.wait(lambda: len(informer.list(self.namespace)) >= self.count,
                       what=f"{self.count} PodGroups in the scheduler's cache", label=self.label())


class CreateAny(Op):
    opcode = "createAny"
    known = frozenset({"templatePath", "count", "namespace", "templateParams"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.template_path = spec.get("templatePath")
        if not self.template_path:
            raise WorkloadError(f"{self.where}: templatePath must be set")
        self.count = _int(spec, "count", 1, where=self.where)
        self.namespace = spec.get("namespace")
        self.params = dict(spec.get("templateParams") or {})

    async def run(self, ctx):
        if self.namespace:
            await ctx.ensure_namespace(self.namespace)
        objs = ctx.render(ctx.template(self.template_path), self.count, self.params, namespace=self.namespace)
        created = await ctx.create_objects(objs)
        pod_groups = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in created
                      if o.get("kind") == "PodGroup"]
        if pod_groups:
            await wait_for_pod_groups(ctx, pod_groups, self.label())


class CreateResourceDriver(Op):
    opcode = "createResourceDriver"
    known = frozenset({"driverName", "nodes", "maxClaimsPerNode"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.driver = spec.get("driverName")
        self.nodes = spec.get("nodes")
        if not self.driver or not self.nodes:
            raise WorkloadError(f"{self.where}: driverName and nodes must be set")
        self.max_claims = _int(spec, "maxClaimsPerNode", 0, where=self.where)

    def slice_for(self, node: str) -> dict:
        devices = [{"name": f"instance-{i}",
                    "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                                   "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
                    "capacity": {"memory": {"value": "1Gi"}}} for i in range(self.max_claims)]
        spec: dict[str, Any] = {"driver": self.driver, "nodeName": node,
                                "pool": {"name": node, "generation": 0, "resourceSliceCount": 1}}
        if devices:
            spec["devices"] = devices
        return {"apiVersion": RESOURCE_V1, "kind": "ResourceSlice", "metadata": {"name": node}, "spec": spec}

    async def run(self, ctx):
        nodes, _ = await ctx.client.list("v1", "Node")
        names = sorted(n["metadata"]["name"] for n in nodes if fnmatch.fnmatchcase(n["metadata"]["name"], self.nodes))
        await ctx.create_objects([self.slice_for(n) for n in names])
        ctx.log(f"{self.label()}: {len(names)} ResourceSlices of {self.max_claims} devices for driver {self.driver}")


class AllocResourceClaims(Op):
    opcode = "allocResourceClaims"
    known = frozenset({"namespace"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.namespace = spec.get("namespace")

    async def run(self, ctx):
        from ..dra.allocator import AllocatorCache, allocate
        from ..dra.devices import devices_in_use
        from ..machinery.timestamps import now_rfc3339
        from ..client.clock import to_datetime

        claims, _ = await ctx.client.list(RESOURCE_V1, "ResourceClaim", self.namespace)
        if not claims:
            return
        all_claims, _ = await ctx.client.list(RESOURCE_V1, "ResourceClaim")
        slices, _ = await ctx.client.list(RESOURCE_V1, "ResourceSlice")
        classes = {c["metadata"]["name"]: c for c in (await ctx.client.list(RESOURCE_V1, "DeviceClass"))[0]}
        nodes, _ = await ctx.client.list("v1", "Node")
        in_use = devices_in_use(all_claims)
        cache = AllocatorCache()
        allocated = 0
        for claim in claims:
            if (claim.get("status") or {}).get("allocation"):
                continue
            ctx.rng.shuffle(nodes)
            for node in nodes:
                outcome = allocate([claim], node, slices, classes, in_use, gates=ctx.gates, cache=cache)
                if not outcome.success:
                    continue
                result = dict(outcome.results[0])
                result.setdefault("allocationTimestamp", now_rfc3339(to_datetime(ctx.clock.now())))
                claim.setdefault("status", {})["allocation"] = result
                await ctx.client.update_status(claim)
                in_use |= devices_in_use([claim])
                allocated += 1
                break
            else:
                raise WorkloadError(f"{self.where}: could not allocate claim {allocated} out of {len(claims)}")
            if allocated % 200 == 0:
                await asyncio.sleep(0)
        ctx.log(f"{self.label()}: allocated {allocated} ResourceClaims")


class Churn(Op):
    opcode = "churn"
    known = frozenset({"mode", "number", "templatePaths", "intervalMilliseconds", "namespace"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.mode = spec.get("mode")
        if self.mode not in ("create", "recreate"):
            raise WorkloadError(f"{self.where}: mode must be create or recreate")
        self.number = _int(spec, "number", 0 if self.mode == "create" else 1, where=self.where)
        self.paths = list(spec.get("templatePaths") or [])
        if not self.paths:
            raise WorkloadError(f"{self.where}: templatePaths must be set")
        self.interval = _int(spec, "intervalMilliseconds", 500, where=self.where) / 1000.0
        self.namespace = spec.get("namespace") or f"namespace-{self.index}"

    async def run(self, ctx):
        await ctx.ensure_namespace(self.namespace)
        templates = [ctx.template(p) for p in self.paths]
        ctx.background(self._loop(ctx, templates), self.label())

    async def _loop(self, ctx, templates: list[Template]) -> None:
        """Upstream's churn: `create` makes one object per template every interval (`number`
        intervals, 0 = forever); `recreate` keeps a ring of `number` slots per template and, every
        interval, deletes the object in the current slot or creates one there."""
        numbers = itertools.count()
        ring: list[list[dict | None]] = [[None] * max(1, self.number) for _ in templates]
        ticks = 0
        while self.mode == "recreate" or not self.number or ticks < self.number:
            await ctx.clock.sleep(self.interval)
            for t, tmpl in enumerate(templates):
                if self.mode == "create":
                    await ctx.create_objects([ctx.render_one(tmpl, next(numbers), {}, namespace=self.namespace)])
                    continue
                slot = ticks % len(ring[t])
                obj = ring[t][slot]
                if obj is None:
                    ring[t][slot] = (await ctx.create_objects(
                        [ctx.render_one(tmpl, next(numbers), {}, namespace=self.namespace)]))[0]
                    continue
                md = obj["metadata"]
                try:
                    await ctx.client.delete(obj["apiVersion"], obj["kind"], md.get("namespace"), md["name"],
                                            grace_period=0 if obj["kind"] == "Pod" else None)
                except StatusError as e:
                    if e.code != 404:
                        raise
                ring[t][slot] = None
            ticks += 1


class Barrier(Op):
    opcode = "barrier"
    known = frozenset({"namespaces", "stageRequirement", "labelSelector"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.namespaces = spec.get("namespaces")
        self.stage = spec.get("stageRequirement") or "Scheduled"
        if self.stage not in ("Scheduled", "Attempted"):
            raise WorkloadError(f"{self.where}: stageRequirement must be Scheduled or Attempted")
        if spec.get("labelSelector"):
            raise WorkloadError(f"{self.where}: labelSelector is not supported")

    async def run(self, ctx):
        namespaces = list(self.namespaces or ctx.pod_namespaces)
        tracker, attempted = ctx.tracker, ctx.scheduler.recorder.attempted

        def waiting() -> int:
            keys = [k for ns in namespaces for k in tracker.unbound.get(ns, ())]
            if self.stage == "Attempted":
                return sum(1 for k in keys if k not in attempted)
            return len(keys)
        await ctx.wait(lambda: waiting() == 0, progress=lambda: -waiting(),
                       what=f"pods in {', '.join(namespaces)} {self.stage.lower()}", label=self.label())


class Sleep(Op):
    opcode = "sleep"
    known = frozenset({"duration"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        if spec.get("duration") is None:
            raise WorkloadError(f"{self.where}: duration must be set")
        self.duration = parse_duration(spec["duration"])

    async def run(self, ctx):
        end = ctx.clock.now() + self.duration
        await ctx.wait(lambda: ctx.clock.now() >= end, what="sleep", label=self.label(),
                       timeout=self.duration + 1.0, stall=self.duration + 1.0)


class DeletePods(Op):
    opcode = "deletePods"
    known = frozenset({"namespace", "labelSelector", "deletePodsPerSecond", "skipWaitToCompletion"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.namespace = spec.get("namespace")
        if not self.namespace:
            raise WorkloadError(f"{self.where}: namespace must be set")
        self.selector = spec.get("labelSelector")
        if isinstance(self.selector, dict):
            self.selector = ",".join(f"{k}={v}" for k, v in self.selector.items())
        self.rate = _int(spec, "deletePodsPerSecond", 0, where=self.where)
        self.skip_wait = bool(spec.get("skipWaitToCompletion", False))

    async def run(self, ctx):
        pods, _ = await ctx.client.list("v1", "Pod", self.namespace, label_selector=self.selector)
        if self.skip_wait:
            ctx.background(self._delete(ctx, pods), self.label())
        else:
            await self._delete(ctx, pods)

    async def _delete(self, ctx, pods: list[dict]) -> None:
        for pod in pods:
            md = pod["metadata"]
            try:
                await ctx.client.delete("v1", "Pod", md["namespace"], md["name"], grace_period=0)
            except StatusError as e:
                if e.code != 404:
                    raise
            if self.rate:
                await ctx.clock.sleep(1.0 / self.rate)


class StartCollectingMetrics(Op):
    opcode = "startCollectingMetrics"
    known = frozenset({"name", "namespaces", "labelSelector"})

    def __init__(self, spec, case):
        super().__init__(spec, case)
        self.name = spec.get("name") or f"op {self.index}"
        self.namespaces = list(spec.get("namespaces") or [])

    @property
    def collects_metrics(self) -> bool:
        return True

    async def run(self, ctx):
        ctx.start_measurement(self.name, self.namespaces or None, op_index=self.index)


class StopCollectingMetrics(Op):
    opcode = "stopCollectingMetrics"
    known = frozenset()

    async def run(self, ctx):
        await ctx.stop_measurement()


OPS: dict[str, type[Op]] = {cls.opcode: cls for cls in (
    CreateNodes, CreateNamespaces, CreatePods, CreatePodGroups, WaitForPodGroups, CreateAny, CreateResourceDriver,
    AllocResourceClaims, Churn, Barrier, Sleep, DeletePods, StartCollectingMetrics, StopCollectingMetrics)}


def make_op(spec: dict[str, Any], case: TestCase) -> Op:
    cls = OPS.get(spec.get("opcode", ""))
    if cls is None:
        raise WorkloadError(f"{case.name} op {spec.get('index', '?')}: unknown opcode {spec.get('opcode')!r} "
                            f"(known: {', '.join(sorted(OPS))})")
    return cls(spec, case)

