"""Kubernetes' published scalability envelope as one phalanx cluster: 5,000 nodes and 150,000 pods.

Creates a real cluster with `phalanx create cluster` (SQLite store, the HTTP API, controllers,
scheduler and simulated kubelets in the control-plane process), fills it with Deployments through
the real kubectl until every pod is Running, and measures what issue 14's last target row asks:

- the control plane's resident memory once all pods run (and its peak),
- how long `kubectl get pods -A` takes (the real kubectl: chunked lists of 500, server-side Tables),
- how long a restart takes to recover: `phalanx stop cluster` + `phalanx start cluster`, until the
  API answers, `kubectl get pods -A` lists every pod, and every Deployment is Available again;
- and, once all pods run and again after the restart, the correctness checks of `phalanx bench
  --cluster` over the final state (`sim.clusterchecks.final_state_checks`: no node over its
  allocatable, ...); a failed check makes the exit code 1.

    python benchmarks/envelope.py                          # 5,000 nodes, 150,000 pods
    python benchmarks/envelope.py --nodes 500 --pods 15000 # a tenth, to try it
    python benchmarks/envelope.py --json out.json

Pods fill the nodes evenly (at most 110 per node, the kubelet's default `maxPods`). The figures are
printed as they come and, with `--json`, written as one document.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from phalanx.cluster.config import load_cluster_config
from phalanx.machinery.featuregates import FeatureGates
from phalanx.sim.clusterchecks import RestReader, final_state_checks

CLUSTER = "envelope"
REPLICAS_PER_DEPLOYMENT = 1000


def cluster_config(nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "phalanx.dev/v1alpha1", "kind": "Cluster", "name": CLUSTER, "storage": "sqlite",
        "nodePools": [
            {"name": "cp", "role": "control-plane"},
            {"name": "node", "count": nodes,
             "labels": {"topology.kubernetes.io/zone": "zone-{i//500}"},
             "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
        ],
    }


def deployments(pods: int) -> list[dict[str, Any]]:
    out = []
    for i in range(0, pods, REPLICAS_PER_DEPLOYMENT):
        name = f"envelope-{i // REPLICAS_PER_DEPLOYMENT:03}"
        out.append({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": min(REPLICAS_PER_DEPLOYMENT, pods - i),
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                                           "resources": {"requests": {"cpu": "10m",
                                                                                      "memory": "16Mi"}}}]}}},
        })
    return out


class Bench:
    def __init__(self, tmp: Path):
        bindir = Path(sys.executable).parent
        self.phalanx = [str(bindir / "phalanx")] if (bindir / "phalanx").exists() else [sys.executable, "-m", "phalanx"]
        kubectl = bindir / "kubectl" if (bindir / "kubectl").exists() else Path(shutil.which("kubectl") or "kubectl")
        self.kubectl = [str(kubectl), "--cache-dir", str(tmp / "cache")]
        self.home = tmp / "home"
        self.env = dict(os.environ, PHALANX_HOME=str(self.home), KUBECONFIG=str(tmp / "kubeconfig"))

    def run(self, args: list[str], *, input: str | None = None, timeout: float = 3600) -> str:
        p = subprocess.run(args, env=self.env, input=input, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:4])}...: {p.stderr.strip()[-2000:]}")
        return p.stdout

    def kubectl_run(self, *args: str, input: str | None = None) -> str:
        return self.run(self.kubectl + list(args), input=input)

    def pid(self) -> int:
        return int((self.home / "clusters" / CLUSTER / "pid").read_text().strip())

    def memory(self) -> dict[str, float]:
        status = Path(f"/proc/{self.pid()}/status").read_text().splitlines()
        fields = {line.split(":")[0]: line.split()[1] for line in status if line.startswith(("VmRSS", "VmHWM"))}
        return {"rssMiB": int(fields["VmRSS"]) / 1024, "peakRssMiB": int(fields["VmHWM"]) / 1024}

    def available(self) -> tuple[int, int]:
        doc = json.loads(self.kubectl_run("get", "deployments", "-n", "default", "-o", "json"))
        want = sum(d["spec"].get("replicas", 0) for d in doc["items"])
        have = sum((d.get("status") or {}).get("availableReplicas", 0) for d in doc["items"])
        return have, want

    def wait_available(self, pods: int, timeout: float, label: str) -> float:
        t0 = time.perf_counter()
        last = -1.0
        while True:
            try:
                have, want = self.available()
            except (RuntimeError, subprocess.TimeoutExpired):
                have, want = 0, pods
            elapsed = time.perf_counter() - t0
            if want == pods and have == pods:
                return elapsed
            if elapsed - last >= 30:
                print(f"  {label}: {have:,}/{pods:,} available after {elapsed:.0f} s", flush=True)
                last = elapsed
            if elapsed > timeout:
                raise TimeoutError(f"{label}: {have:,}/{pods:,} available after {elapsed:.0f} s")
            time.sleep(2)

    def time_get_pods(self, pods: int) -> float:
        t0 = time.perf_counter()
        out = self.kubectl_run("get", "pods", "-A", "--no-headers")
        took = time.perf_counter() - t0
        listed = sum(1 for line in out.splitlines() if line.startswith("default "))
        if listed != pods:
            raise RuntimeError(f"kubectl get pods -A listed {listed:,} pods in default, expected {pods:,}")
        return took


def correctness(bench: Bench, config: Path, label: str) -> list[str]:
    """The final-state checks over HTTP; the names of those that failed."""
    parsed = load_cluster_config(str(config))
    results = final_state_checks(RestReader.from_kubeconfig(Path(bench.env["KUBECONFIG"])),
                                 FeatureGates.from_config(parsed.feature_gates, parsed.release))
    failed = [f"{r['name']}: {r.get('detail', '')}" for r in results if not r["ok"]]
    print(f"  {label}: {len(results) - len(failed)}/{len(results)} checks passed"
          + "".join(f"\n    FAILED {f}" for f in failed), flush=True)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--timeout", type=float, default=7200, help="longest wait for all pods to run")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running (its PHALANX_HOME is printed)")
    args = ap.parse_args()
    if args.pods > args.nodes * 110:
        ap.error(f"--pods {args.pods} exceeds 110 pods per node on {args.nodes} nodes")
    tmp = Path(tempfile.mkdtemp(prefix="phalanx-envelope-"))
    bench = Bench(tmp)
    config = tmp / "cluster.yaml"
    config.write_text(yaml.safe_dump(cluster_config(args.nodes)))
    figures: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods}
    failed: list[str] = []
    try:
        t0 = time.perf_counter()
        bench.run(bench.phalanx + ["create", "cluster", "--name", CLUSTER, "--config", str(config),
                                   "--wait", "600s", "-q"])
        figures["createClusterSeconds"] = round(time.perf_counter() - t0, 1)
        print(f"cluster of {args.nodes:,} nodes created in {figures['createClusterSeconds']} s", flush=True)

        manifest = yaml.safe_dump_all(deployments(args.pods))
        t0 = time.perf_counter()
        bench.kubectl_run("apply", "-f", "-", input=manifest)
        figures["applySeconds"] = round(time.perf_counter() - t0, 1)
        figures["allRunningSeconds"] = round(bench.wait_available(args.pods, args.timeout, "fill")
                                             + figures["applySeconds"], 1)
        print(f"{args.pods:,} pods Running {figures['allRunningSeconds']} s after the apply", flush=True)
        figures.update({k: round(v) for k, v in bench.memory().items()})
        print(f"control plane RSS {figures['rssMiB']:,} MiB (peak {figures['peakRssMiB']:,} MiB)", flush=True)
        failed += correctness(bench, config, "all Running")

        gets = sorted(bench.time_get_pods(args.pods) for _ in range(3))
        figures["getPodsSeconds"] = [round(g, 2) for g in gets]
        print(f"kubectl get pods -A: median {gets[1]:.2f} s (runs {', '.join(f'{g:.2f}' for g in gets)})", flush=True)

        bench.run(bench.phalanx + ["stop", "cluster", "--name", CLUSTER])
        t0 = time.perf_counter()
        bench.run(bench.phalanx + ["start", "cluster", "--name", CLUSTER, "--wait", "600s"])
        figures["restartApiSeconds"] = round(time.perf_counter() - t0, 1)
        bench.time_get_pods(args.pods)
        figures["restartListedSeconds"] = round(time.perf_counter() - t0, 1)
        bench.wait_available(args.pods, 600, "restart")
        figures["restartRecoveredSeconds"] = round(time.perf_counter() - t0, 1)
        figures.update({f"afterRestart{k[0].upper()}{k[1:]}": round(v) for k, v in bench.memory().items()})
        print(f"restart: API answers at {figures['restartApiSeconds']} s, every pod listed at "
              f"{figures['restartListedSeconds']} s, every Deployment Available at "
              f"{figures['restartRecoveredSeconds']} s; RSS {figures['afterRestartRssMiB']:,} MiB", flush=True)
        failed += correctness(bench, config, "after the restart")
    finally:
        if args.keep:
            print(f"cluster left running: PHALANX_HOME={bench.home} KUBECONFIG={bench.env['KUBECONFIG']}")
        else:
            subprocess.run(bench.phalanx + ["delete", "cluster", "--name", CLUSTER], env=bench.env,
                           capture_output=True, timeout=300)
            shutil.rmtree(tmp, ignore_errors=True)
        figures["failedChecks"] = failed
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
