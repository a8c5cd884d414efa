"""Micro-benchmark: one pod's PreFilter + Filter + PreScore + Score + host selection over 5,000 nodes.

Not a test. Run:  .venv/bin/python benchmarks/scheduler_filter_micro.py [--nodes 5000] [--pods 2000]

Shape follows scheduler_perf's SchedulingBasic: nodes of 4 CPU / 32Gi / 110 pods with hostname
and zone labels, 1,000 pods already running, then pods of 100m CPU / 500Mi scheduled one after the
other with the default profile (each is assumed onto the snapshot, so the cluster fills up).
Prints µs per pod for the scheduling algorithm alone (`schedule_pod`) and for the whole cycle
(`scheduling_cycle`: + assume, Reserve, Permit), and for a few pod shapes that take slow paths.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from phalanx.scheduler.framework import CycleState, Framework, PodInfo, Snapshot


def node(i: int) -> dict:
    name = f"node-{i}"
    cap = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": f"zone-{i % 10}"}},
            "spec": {}, "status": {"capacity": cap, "allocatable": dict(cap)}}


def pod(name: str, node_name: str = "", **spec_extra: object) -> dict:
    spec = {"containers": [{"name": "pause", "image": "pause",
                            "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    spec.update(spec_extra)
    return {"metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": "bench"}},
            "spec": spec, "status": {}}


def build(num_nodes: int, init_pods: int) -> Snapshot:
    nodes = [node(i) for i in range(num_nodes)]
    pods = [pod(f"init-{i}", f"node-{i % num_nodes}") for i in range(init_pods)]
    return Snapshot.from_nodes_and_pods(nodes, pods)


def bench(label: str, fw: Framework, snap: Snapshot, pods: list[PodInfo], full_cycle: bool, rounds: int = 5) -> float:
    """µs per pod: the best of `rounds` equal slices (the machine is shared; the minimum is the
    least disturbed measurement), with the median shown too."""
    per_round = max(1, len(pods) // rounds)
    results = []
    for r in range(rounds):
        batch = pods[r * per_round:(r + 1) * per_round]
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for pi in batch:
                if full_cycle:
                    fw.scheduling_cycle(pi, snap)
                else:
                    fw.schedule_pod(CycleState(), pi, snap)
            results.append((time.perf_counter() - t0) / len(batch) * 1e6)
        finally:
            gc.enable()
    best, median = min(results), statistics.median(results)
    print(f"{label:<58} {best:9.1f} µs/pod best, {median:9.1f} median   ({1e6 / best:7.0f} pods/s)")
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init-pods", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=2000)
    args = ap.parse_args()

    print(f"{args.nodes} nodes, {args.init_pods} running pods; default profile")
    snap = build(args.nodes, args.init_pods)
    fw = Framework(snapshot=snap, seed=1)
    print(f"feasible nodes searched per pod: {fw.num_feasible_nodes_to_find(args.nodes)}")

    plain = [PodInfo(pod(f"p-{i}")) for i in range(args.pods)]
    bench("plain pod, schedule_pod (Filter+Score)", fw, snap, plain, False)
    cycle = [PodInfo(pod(f"c-{i}")) for i in range(args.pods)]
    bench("plain pod, scheduling_cycle (+assume/Reserve/Permit)", fw, snap, cycle, True)

    n = max(50, args.pods // 10)
    sel = [PodInfo(pod(f"s-{i}", nodeSelector={"topology.kubernetes.io/zone": "zone-3"})) for i in range(n)]
    bench("nodeSelector pod, schedule_pod", fw, snap, sel, False)
    pinned = [PodInfo(pod(f"d-{i}", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [f"node-{i}"]}]}]}}}))
        for i in range(n)]
    bench("DaemonSet-style pod (matchFields name), schedule_pod", fw, snap, pinned, False)
    spread = [PodInfo(pod(f"t-{i}", topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "bench"}}}])) for i in range(n // 5)]
    bench("topology-spread pod (zone, DoNotSchedule), schedule_pod", fw, snap, spread, False)


if __name__ == "__main__":
    main()
