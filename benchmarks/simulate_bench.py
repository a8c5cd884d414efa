"""`phalanx simulate` at datacenter scale: one simulated day on the 4,096-node GPU topology.

Runs examples/simulate/gpu-day.yaml (20,000 jobs: gangs of 1-64 pods, per-pod and shared GPU
claims, rack and block constraints) in this process, as `phalanx simulate` runs a variant, and
reports what issue 18's targets name: wall time (target <= 5 min), simulated time / wall time
(>= 1,000x), peak RSS (<= 4 GiB), with the machine's load average, which slows wall-clock figures.
A benchmark, not a test: it asserts nothing.

    .venv/bin/python benchmarks/simulate_bench.py [--duration 3h] [--scenario FILE] [--json out.json]

`--duration` cuts the day short (the stream is the day's, up to that time) for a quicker look.
Run it with PYTHONHASHSEED=0 to get the event log `phalanx simulate` would (the figures do not
depend on it). Profile with py-spy: `py-spy record -r 40 -o out.svg -- python benchmarks/simulate_bench.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from phalanx.machinery.durations import parse_duration  # noqa: E402
from phalanx.simulate.engine import ProgressReport, run_variant  # noqa: E402
from phalanx.simulate.run import format_progress  # noqa: E402
from phalanx.simulate.scenario import load_scenario  # noqa: E402

SCENARIO = ROOT / "examples" / "simulate" / "gpu-day.yaml"
TARGETS = {"wallSeconds": 300.0, "speedup": 1000.0, "peakRSSBytes": 4 * 2**30}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(SCENARIO))
    ap.add_argument("--duration", default=None, help="simulate only this much of the day (Go duration)")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args()
    scenario = load_scenario(args.scenario)
    if args.duration:
        scenario.duration = parse_duration(args.duration)

    def progress(p: ProgressReport) -> None:
        print(format_progress(p), file=sys.stderr, flush=True)

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    result = run_variant(scenario, scenario.variants[0], progress=None if args.quiet else progress, log_events=False)
    wall = time.perf_counter() - t0
    run = result.run
    figures = {"scenario": scenario.name, "simulatedSeconds": run["simulatedSeconds"], "wallSeconds": wall,
               "speedup": run["simulatedSeconds"] / wall, "peakRSSBytes": run["peakRSSBytes"],
               "jobs": result.summary["jobs_submitted"], "jobsCompleted": result.summary["jobs_completed"],
               "pods": sum(j["pods"] for j in result.jobs), "informerEvents": run["informerEvents"],
               "gpuAllocationMean": result.summary["gpu_allocation_mean"],
               "loadAverage": {"before": load_before, "after": os.getloadavg()}, "cpus": os.cpu_count()}
    print(f"{scenario.name}: {figures['simulatedSeconds'] / 3600:.1f} h simulated in {wall:,.0f} s wall "
          f"({figures['speedup']:,.0f}x; target >= {TARGETS['speedup']:,.0f}x, <= {TARGETS['wallSeconds']:.0f} s "
          f"for the day), peak RSS {figures['peakRSSBytes'] / 2**30:.2f} GiB (target <= 4 GiB)")
    print(f"{figures['jobs']:,} jobs ({figures['jobsCompleted']:,} completed), {figures['pods']:,} pods, "
          f"{figures['informerEvents']:,} informer events; GPU allocation {100 * figures['gpuAllocationMean']:.0f} % "
          f"on average; load average {load_before[0]:.1f} -> {figures['loadAverage']['after'][0]:.1f} "
          f"on {figures['cpus']} CPUs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
