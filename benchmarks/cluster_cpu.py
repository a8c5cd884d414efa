"""CPU per pod of a whole control plane in one process: `phalanx bench --cluster` without HTTP.

A `ControlPlane` with every component (controllers, simulated kubelets and DRA drivers, the
scheduler) on SQLite in a temporary directory, in this process; a shape from
`phalanx.sim.clustershapes` created through an in-process client, as kubectl's apply would; the
pods followed through a store listener to the shape's end. What it reports is this process's CPU
time from the apply to the end, per pod, with the API writes and SQLite commits made meanwhile:
figures that another busy process on the machine disturbs far less than wall time, so a change
can be compared with the tree before it (run both with their own PYTHONPATH, several times).

    PYTHONPATH=src .venv/bin/python benchmarks/cluster_cpu.py --shape deployment --pods 2000 \
        --config examples/clusters/phalanx-gpu-topology.yaml [--runs 3] [--profile out.prof] [--py-spy out.raw]

`--py-spy OUT.raw` samples the measured phase with py-spy (this process, from the first create to
the end) and prints the share of samples per component, as `phalanx bench --cluster` does.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from phalanx.client.inprocess import InProcessClient
from phalanx.cluster.config import load_cluster_config
from phalanx.cluster.controlplane import ControlPlane, tune_gc
from phalanx.sim.clusterbench import Sampler
from phalanx.sim.clustershapes import NAMESPACE, ShapeParams, build_shape


class Follow:
    """Counts the shape's pods that are bound, Running and ready, and finished (a store listener)."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.running: set[str] = set()
        self.finished: set[str] = set()

    def __call__(self, ev: Any) -> None:
        if ev.key != "core/pods" or ev.namespace != NAMESPACE:
            return
        pod = ev.object
        status = pod.get("status") or {}
        if (pod.get("spec") or {}).get("nodeName"):
            self.bound.add(ev.name)
        if status.get("phase") in ("Succeeded", "Failed"):
            self.finished.add(ev.name)
        elif status.get("phase") == "Running" and any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []):
            self.running.add(ev.name)


async def settle(window: float = 0.3) -> None:
    """Until this process is idle: the drivers' slices and the kubelets' Leases are written."""
    quiet = 0
    while quiet < 2:
        c0 = time.process_time()
        await asyncio.sleep(window)
        quiet = quiet + 1 if time.process_time() - c0 < window * 0.1 else 0


async def one_run(args: argparse.Namespace, profiler: cProfile.Profile | None) -> dict[str, Any]:
    spec = load_cluster_config(args.config, name="cpu")
    shape = build_shape(ShapeParams(args.shape, args.pods, args.parallelism, args.gangs, args.run_for, nodes=args.nodes))
    with tempfile.TemporaryDirectory(prefix="phalanx-cluster-cpu-") as tmp:
        cp = ControlPlane(spec, state_dir=tmp, token="bench")
        await cp.start()
        tune_gc()
        await settle()
        client = InProcessClient(cp.api, field_manager="kubectl")
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        follow = Follow()
        cp.store.listeners.append(follow)
        done = follow.finished if shape.finishes else follow.running
        rv0, commits0 = cp.store.resource_version, getattr(cp.store, "commits", 0)
        commit_s0 = getattr(cp.store, "commit_seconds", 0.0)
        t0, c0, l0 = time.perf_counter(), time.process_time(), time.thread_time()
        sampler = Sampler(os.getpid(), Path(args.py_spy), rate=100) if args.py_spy else None
        if profiler:
            profiler.enable()
        for obj in shape.manifests + shape.objects:
            await client.create(obj)
        while len(done) < shape.pods and time.perf_counter() - t0 < args.timeout:
            await asyncio.sleep(0.01)
        if profiler:
            profiler.disable()
        cpu, wall, loop_cpu = time.process_time() - c0, time.perf_counter() - t0, time.thread_time() - l0
        shares = sampler.stop() if sampler is not None else {}
        writes, commits = cp.store.resource_version - rv0, getattr(cp.store, "commits", 0) - commits0
        commit_s = getattr(cp.store, "commit_seconds", 0.0) - commit_s0
        await cp.stop()
    return {"pods": shape.pods, "completed": len(done) >= shape.pods, "wallSeconds": round(wall, 2),
            "cpuSeconds": round(cpu, 2), "cpuMsPerPod": round(cpu / shape.pods * 1000, 3),
            # the event loop's thread alone: what bounds the rate (other threads: SQLite's writer)
            "loopCpuMsPerPod": round(loop_cpu / shape.pods * 1000, 3), "writes": writes,
            "writesPerPod": round(writes / shape.pods, 1), "commits": commits,
            "commitSeconds": round(commit_s, 2),  # wall time the loop spent in SQLite commits
            "loadAverage": [round(x, 2) for x in os.getloadavg()], **({"cpuSplit": shares} if shares else {})}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="deployment", choices=["deployment", "indexed-job", "jobset", "basic", "gang"])
    ap.add_argument("--pods", type=int, default=None)
    ap.add_argument("--parallelism", type=int, default=None)
    ap.add_argument("--gangs", type=int, default=None)
    ap.add_argument("--nodes", type=int, default=None)
    ap.add_argument("--run-for", default="10s")
    ap.add_argument("--config", default=None)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--profile", default=None, metavar="OUT.prof", help="cProfile the measured phase (all runs)")
    ap.add_argument("--py-spy", default=None, metavar="OUT.raw", help="py-spy the measured phase (the last run)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    profiler = cProfile.Profile() if args.profile else None
    runs = [asyncio.run(one_run(args, profiler)) for _ in range(args.runs)]
    for r in runs:
        print(json.dumps(r))
    for key in ("cpuMsPerPod", "loopCpuMsPerPod", "wallSeconds"):
        print(f"{key}: median {statistics.median(r[key] for r in runs)} of {len(runs)} run(s)", file=sys.stderr)
    if profiler and args.profile:
        profiler.dump_stats(args.profile)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=2)


if __name__ == "__main__":
    main()
