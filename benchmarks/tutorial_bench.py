"""Time to a cluster and time to running: the user's tutorial, measured with the real kubectl.

For each run: `phalanx create cluster --config examples/dra-integration/kind.yaml` until it returns
(the API answers /readyz), then the tutorial's four `kubectl apply` commands, then polling
`kubectl get pods -l jobset.sigs.k8s.io/jobset-name=training-job` until six pods are Running.
Reported: create-cluster seconds, apply-to-six-Running seconds (from the first apply), the median
of `--runs` runs and the spread. A benchmark, not a test: it asserts nothing.

    .venv/bin/python benchmarks/tutorial_bench.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "dra-integration"
BIN = Path(sys.executable).parent


def run_once() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PHALANX_HOME=f"{tmp}/home", KUBECONFIG=f"{tmp}/kubeconfig")
        kubectl = [str(BIN / "kubectl"), "--cache-dir", f"{tmp}/cache"]
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "phalanx"), "create", "cluster", "--name", "bench", "--config",
                        str(EXAMPLE / "kind.yaml"), "-q"], env=env, check=True, capture_output=True)
        created = time.perf_counter() - t0
        try:
            t1 = time.perf_counter()
            for f in ("resourceclaimtemplate", "workload", "podgroup", "jobset"):
                subprocess.run(kubectl + ["apply", "-f", str(EXAMPLE / f"{f}.yaml")], env=env, check=True,
                               capture_output=True)
            applied = time.perf_counter() - t1
            while True:
                out = subprocess.run(kubectl + ["get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=training-job",
                                                "--no-headers"], env=env, capture_output=True, text=True).stdout
                rows = [r.split() for r in out.splitlines()]
                if len(rows) == 6 and all(r[2] == "Running" for r in rows):
                    break
                if time.perf_counter() - t1 > 120:
                    raise RuntimeError("six pods did not reach Running in 120s")
                time.sleep(0.05)
            running = time.perf_counter() - t1
        finally:
            subprocess.run([str(BIN / "phalanx"), "delete", "cluster", "--name", "bench"], env=env,
                           capture_output=True)
        return {"create_cluster_s": created, "apply_s": applied, "apply_to_six_running_s": running}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [run_once() for _ in range(args.runs)]
    for key in ("create_cluster_s", "apply_s", "apply_to_six_running_s"):
        vals = [r[key] for r in runs]
        print(f"{key:<26} median {statistics.median(vals):6.2f}s  (min {min(vals):.2f}, max {max(vals):.2f}, "
              f"{len(vals)} runs)")
    print("apply_s is the four `kubectl apply` commands alone (each a kubectl process: discovery, OpenAPI, POST).")


if __name__ == "__main__":
    main()
