"""`phalanx bench --cluster` on its smallest shapes, for correctness only (never timed): every pod
reaches Running (or Succeeded), the end-of-run checks pass (no pod bound twice, no node over its
allocatable, gangs all-or-nothing, claims allocated and reserved, no device allocated twice) and
nothing is left after teardown."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import PHALANX

ROOT = Path(__file__).resolve().parents[2]
GPU_CONFIG = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
name: gpu-small
featureGates:
  GenericWorkload: true
  GangScheduling: true
  TopologyAwareWorkloadScheduling: true
  DRAWorkloadResourceClaims: true
runtimeConfig:
  api/alpha: "true"
nodePools:
- name: cp
  role: control-plane
- name: gpu
  count: 4
  labels:
    example.com/rack: "rack-{i//2}"
  taints:
  - key: example.com/gpu
    value: "present"
    effect: NoSchedule
- name: cpu
  count: 1
"""


def _bench(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out.json"
    env = dict(os.environ)
    env.pop("HTTPS_PROXY", None)
    env.pop("https_proxy", None)
    p = subprocess.run([str(PHALANX), "bench", "--compare", "", "--json", str(out), "--timeout", "120", *args],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    (run,) = json.loads(out.read_text())["runs"]
    failed = [c for c in run["checks"] if not c["ok"]]
    assert not failed, failed
    assert {c["name"] for c in run["checks"]} >= {"noLeftoverObjects"}
    return run


def _assert_all_ran(run: dict, final: str = "allRunning") -> None:
    assert run["completed"]
    assert final in run["phases"], run["phases"]
    names = {c["name"] for c in run["checks"]}
    assert {"podsBoundOnce", "nodesNeverOvercommitted", "gangsIntact", "devicesNotDoubleAllocated"} <= names


def test_deployment_runs_then_scales_to_zero(tmp_path):
    run = _bench(tmp_path, "--cluster", "deployment", "--pods", "20")
    _assert_all_ran(run)
    assert "allGone" in run["phases"]


def test_jobset_gangs_share_their_podgroup_claim_within_a_rack(tmp_path):
    config = tmp_path / "gpu.yaml"
    config.write_text(GPU_CONFIG)
    run = _bench(tmp_path, "--cluster", "jobset", "--pods", "16", "--gangs", "4", "--config", str(config))
    _assert_all_ran(run)
    checks = {c["name"]: c for c in run["checks"]}
    assert checks["gangsIntact"]["checked"] == 4
    assert checks["sharedClaimsOneReservation"]["checked"] == 4
    assert checks["topologyRespected"]["checked"] == 4


def test_indexed_job_completes(tmp_path):
    run = _bench(tmp_path, "--cluster", "indexed-job", "--pods", "12", "--parallelism", "6", "--run-for", "1s")
    _assert_all_ran(run, "allFinished")


def test_gang_shape_with_the_scheduler_in_its_own_process(tmp_path):
    run = _bench(tmp_path, "--cluster", "gang", "--pods", "12", "--nodes", "3", "--external-scheduler")
    _assert_all_ran(run)
    assert "schedulerStarted" in run["phases"] and run["schedulerProcessCpuSeconds"] > 0


def test_fanout_counts_what_the_watchers_received(tmp_path):
    run = _bench(tmp_path, "--cluster", "fanout", "--pods", "20", "--watchers", "3", "--nodes", "1")
    assert run["withoutWatchers"]["creates"] == 20 and run["with3Watchers"]["creates"] == 20
    assert run["watchEventsDelivered"] >= 3 * 20  # every watcher saw at least each pod's ADDED


@pytest.mark.parametrize("shape", ["deployment", "jobset"])
def test_too_large_a_shape_is_refused_with_a_clear_message(tmp_path, shape):
    p = subprocess.run([str(PHALANX), "bench", "--cluster", shape, "--compare", ""], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2
    assert "give --config with more nodes" in p.stderr
