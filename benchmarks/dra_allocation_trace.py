"""The DRA allocations a workload makes, in order, for comparing two trees (a change to the
scheduler's DRA path or the allocator must not change a single allocation).

    PYTHONPATH=src python benchmarks/dra_allocation_trace.py [--workload CASE/NAME] [--file dra.yaml] > a.json
    (the other tree)                                                                      > b.json
    cmp a.json b.json

Runs the workload in process on virtual time, with seeded generated names and uids and
PYTHONHASHSEED=0 (deterministic: same tree, same trace), and records
every allocation the scheduler writes in PreBind (the claim's devices and node selector, the
pod's order of creation in place of its generated name). Prints one JSON document: the trace and
its SHA-256."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import uuid
from typing import Any

import phalanx.apiserver.rest as rest

from phalanx.client import VirtualClock
from phalanx.scheduler.framework.dra_manager import DRAManager
from phalanx.sim.harness import RunOptions, run_workload
from phalanx.sim.workload import load_workload_file, select

WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")

# The steady-state shapes reduced: 50 DRA nodes of 10 devices (other workloads: their own params).
STEADY_STATE_PARAMS = {"nodesWithDRA": 50, "nodesWithoutDRA": 0, "initClaims": 250, "maxClaimsPerNode": 10,
                  "duration": "3s"}


def _allocation_entry(claim: dict[str, Any], order: dict[str, int]) -> dict[str, Any] | None:
    allocation = (claim.get("status") or {}).get("allocation")
    if allocation is None:
        return None
    devices = [[r.get("request"), r.get("driver"), r.get("pool"), r.get("device")]
               for r in (allocation.get("devices") or {}).get("results") or []]
    consumers = [order.setdefault(r.get("name", ""), len(order))
                 for r in (claim.get("status") or {}).get("reservedFor") or []]
    return {"devices": devices, "nodeSelector": allocation.get("nodeSelector"), "consumers": consumers}


def trace(file: str, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cases = load_workload_file(file)
    selected = select(cases, [name])
    if not selected:
        raise SystemExit(f"{file}: no workload {name}")
    case, workload = selected[0]
    workload.params.update(params)
    out: list[dict[str, Any]] = []
    order: dict[str, int] = {}
    original = DRAManager.assume

    def recording_assume(self: DRAManager, claim: dict[str, Any]) -> None:
        entry = _allocation_entry(claim, order)
        if entry is not None:
            out.append(entry)
        original(self, claim)

    DRAManager.assume = recording_assume  # type: ignore[method-assign]
    # generated names and uids from seeded sources: the same tree gives the same trace
    random.seed(0)
    uid_rng = random.Random(1)
    rest.new_uid = lambda: str(uuid.UUID(int=uid_rng.getrandbits(128), version=4))  # type: ignore[attr-defined]
    try:
        result = run_workload(case, workload, RunOptions(clock=VirtualClock(), stall=60, timeout=600,
                                                         store_limit=False))
    finally:
        DRAManager.assume = original  # type: ignore[method-assign]
    if result["status"] != "completed" or not all(c["ok"] for c in result["checks"]):
        raise SystemExit(f"{name}: run {result['status']}, checks {result['checks']}")
    return out


def main(argv: list[str] | None = None) -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":  # set iteration order depends on the hash seed
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default=os.path.join(WORKLOADS, "dra.yaml"))
    ap.add_argument("--workload", default="SteadyStateClusterResourceClaimTemplate/half_500nodes")
    ap.add_argument("--param", action="append", default=[], help="NAME=VALUE over the reduced defaults")
    args = ap.parse_args(argv)
    params = dict(STEADY_STATE_PARAMS) if args.workload.startswith("SteadyState") else {}
    for p in args.param:
        k, _, v = p.partition("=")
        params[k] = int(v) if v.isdigit() else v
    entries = trace(args.file, args.workload, params)
    text = json.dumps(entries, sort_keys=True)
    json.dump({"workload": args.workload, "params": params, "allocations": len(entries),
               "sha256": hashlib.sha256(text.encode()).hexdigest(), "trace": entries}, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
