"""Benchmark: topology-aware gang scheduling, scheduler_perf's `TopologyAwareScheduling` shape.

Not a test. Run:  .venv/bin/python benchmarks/tas_placement_bench.py [--nodes 5000] [--per-rack 100]
                  [--gangs 750] [--gang-size 4] [--pod-cpu 100m]
                  [--exhaustive | --compare | --no-topology]

Shape (kubernetes test/integration/scheduler_perf podgroup/tas): nodes of 4 CPU / 32Gi / 110 pods
labelled `topology.kubernetes.io/zone=zone-(i/100)` and `topology.kubernetes.io/rack=
rack-(i/perRack)`; PodGroups with gang `minCount = gang size` and
`schedulingConstraints.topology: [{key: topology.kubernetes.io/rack}]`; pods of 100m CPU / 100Mi
(`--pod-cpu 1` makes racks fill up, so gangs move on from rack to rack).
An in-process API server and the phalanx scheduler on virtual time (no kubelets).

Prints the average and p99 PodGroup cycle time (what upstream's
`scheduler_podgroup_scheduling_attempt_duration_seconds` measures), placements tried / skipped,
and the rack each gang landed in. `--exhaustive` switches the placement search's pruning off
(upstream's try-every-placement), so the two runs can be compared: the racks must be the same.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"


async def run(args: argparse.Namespace) -> dict[str, str]:
    from phalanx.apiserver import build_api
    from phalanx.client import InformerFactory, InProcessClient, VirtualClock
    from phalanx.cluster.bootstrap import bootstrap
    from phalanx.machinery.featuregates import FeatureGates
    from phalanx.cluster.spec import ClusterSpec, NodeSpec
    from phalanx.scheduler import placementsearch
    from phalanx.scheduler.scheduler import Scheduler
    from phalanx.store import MemoryStore

    if args.exhaustive:
        placementsearch._bound_plugins = lambda fw: None  # type: ignore[assignment]
        placementsearch._capacity_plugin = lambda fw: None  # type: ignore[assignment]
    clock = VirtualClock()
    gates = FeatureGates()
    api = build_api(MemoryStore(), gates, now=clock.datetime)
    nodes = [NodeSpec(f"node-{i}", capacity={"cpu": "4", "memory": "32Gi", "pods": "110"},
                      labels={ZONE: f"zone-{i // 100}", RACK: f"rack-{i // args.per_rack}"})
             for i in range(args.nodes)]
    t0 = time.perf_counter()
    bootstrap(api, ClusterSpec(nodes=nodes))
    client = InProcessClient(api, clock=clock, field_manager="bench")
    factory = InformerFactory(InProcessClient(api, clock=clock), clock=clock)
    sched = Scheduler(InProcessClient(api, clock=clock, field_manager="default-scheduler"), factory,
                      gates=gates, clock=clock)
    durations: list[float] = []
    inner = sched.schedule_pod_group

    async def timed(group):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        await inner(group)
        durations.append(time.perf_counter() - t)
    sched.schedule_pod_group = timed  # type: ignore[method-assign]
    sched.start()
    await clock.run_until(lambda: sched.synced, within=30)
    print(f"{args.nodes} nodes in racks of {args.per_rack}: set up in {time.perf_counter() - t0:.1f}s")
    for g in range(args.gangs):
        await client.create({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                             "metadata": {"name": f"gang-{g}", "namespace": "default"},
                             "spec": {"schedulingPolicy": {"gang": {"minCount": args.gang_size}},
                                      **({} if args.no_topology else
                                         {"schedulingConstraints": {"topology": [{"key": RACK}]}})}})
    pods = args.gangs * args.gang_size
    t0 = time.perf_counter()
    for i in range(pods):
        await client.create({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": f"pod-{i}", "namespace": "default"},
                             "spec": {"schedulingGroup": {"podGroupName": f"gang-{i // args.gang_size}"},
                                      "containers": [{"name": "pause", "image": "pause", "resources": {
                                          "requests": {"cpu": args.pod_cpu, "memory": "100Mi"}}}]}})
    bound = lambda: sum(1 for p in api.list(api.resource("", "v1", "pods"), "default")["items"]  # noqa: E731
                        if p["spec"].get("nodeName"))
    await clock.run_until(lambda: sched.stats["bound"] >= pods, within=3600)
    wall = time.perf_counter() - t0
    await sched.stop()
    await factory.stop()
    d = sorted(durations)
    print(f"{'exhaustive' if args.exhaustive else 'pruned'}: {bound()}/{pods} pods bound in {wall:.1f}s wall; "
          f"{len(d)} group cycles: avg {statistics.mean(d) * 1e3:.2f} ms, p50 {d[len(d) // 2] * 1e3:.2f} ms, "
          f"p99 {d[int(len(d) * 0.99)] * 1e3:.2f} ms")
    print(f"placements tried {sched.stats['placements_tried']}, skipped {sched.stats['placements_skipped']}")
    racks: dict[str, str] = {}
    node_rack = {n.name: n.labels[RACK] for n in nodes}
    for p in api.list(api.resource("", "v1", "pods"), "default")["items"]:
        g = p["spec"]["schedulingGroup"]["podGroupName"]
        r = node_rack.get(p["spec"].get("nodeName") or "", "-")
        racks[g] = r if racks.get(g, r) == r else "SPLIT"
    return racks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--per-rack", type=int, default=100)
    ap.add_argument("--gangs", type=int, default=750)
    ap.add_argument("--gang-size", type=int, default=4)
    ap.add_argument("--exhaustive", action="store_true")
    ap.add_argument("--no-topology", action="store_true", help="plain gangs (the baseline)")
    ap.add_argument("--pod-cpu", default="100m", help="CPU request per pod (1 fills a rack every 100 gangs)")
    ap.add_argument("--compare", action="store_true", help="run pruned, then exhaustive, and compare racks")
    args = ap.parse_args()
    racks = asyncio.run(run(args))
    print(f"racks used: {len(set(racks.values()))}; split gangs: {sum(1 for r in racks.values() if r == 'SPLIT')}")
    if args.compare and not args.exhaustive:
        args.exhaustive = True
        other = asyncio.run(run(args))
        diff = [g for g in racks if racks[g] != other.get(g)]
        print(f"same rack for every gang as the exhaustive search: {not diff} ({len(diff)} differ)")


if __name__ == "__main__":
    main()
