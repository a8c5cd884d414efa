"""KWOK's default stage files, unmodified, drive a phalanx cluster through `kubelet.stages`.

The files are read from the shared test data (`../shared/data/kwok-stages/`, beside the
repository); the test is skipped when that folder is absent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .conftest import Cluster, create_cluster

KWOK_STAGES = Path(__file__).resolve().parents[3] / "shared" / "data" / "kwok-stages"
FILES = ("pod-ready", "pod-complete", "pod-delete", "node-initialize", "node-heartbeat", "node-not-ready")


def poll(fn, timeout: float = 60.0, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value {value!r}")
        time.sleep(interval)


@pytest.fixture(scope="module")
def kwok_cluster(tmp_path_factory):
    if not KWOK_STAGES.is_dir():
        pytest.skip(f"KWOK's stage files are not in {KWOK_STAGES} (shared test data)")
    entries = "\n".join(f"  - {KWOK_STAGES / f'{name}.yaml'}" for name in FILES)
    config = f"apiVersion: phalanx.dev/v1alpha1\nkind: Cluster\nkubelet:\n  stages:\n{entries}\n"
    c = create_cluster(tmp_path_factory.mktemp("kwok"), "kwok", config=config)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def get(c: Cluster, *args: str) -> dict:
    return c.kubectl("get", *args, "-o", "json").check().json()


def test_kwok_pod_stages_run_complete_jobs_and_delete(kwok_cluster: Cluster):
    c = kwok_cluster
    c.kubectl("run", "web", "--image=nginx").check()
    c.kubectl("create", "job", "batch", "--image=busybox").check()
    c.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s", timeout=90).check()
    pod = get(c, "pod", "web")
    assert pod["status"]["phase"] == "Running" and pod["status"]["podIP"]
    assert "running" in pod["status"]["containerStatuses"][0]["state"]
    c.kubectl("wait", "--for=condition=complete", "job/batch", "--timeout=60s", timeout=90).check()
    c.kubectl("delete", "pod", "web", "--timeout=60s", timeout=90).check()
    assert c.kubectl("get", "pod", "web").returncode != 0


def test_kwok_node_stages_initialize_and_fail_a_node(kwok_cluster: Cluster):
    c = kwok_cluster
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kwok-node-0"},
            "spec": {"providerID": "phalanx://kwok-node-0"}}
    c.kubectl("apply", "-f", "-", input=json.dumps(node)).check()

    def ready() -> dict:
        conds = (get(c, "node", "kwok-node-0").get("status") or {}).get("conditions") or []
        return next((x for x in conds if x["type"] == "Ready"), {})

    poll(lambda: ready().get("status") == "True")
    assert get(c, "node", "kwok-node-0")["status"]["allocatable"]["pods"] == "1M"
    c.kubectl("label", "node", "kwok-node-0", "node-not-ready.stage.kwok.x-k8s.io=true").check()
    poll(lambda: ready().get("status") == "False", timeout=30)
    assert ready()["reason"] == "nodeFailed"
    rows = c.kubectl("get", "node", "kwok-node-0", "--no-headers").check().stdout.split()
    assert rows[1] == "NotReady"
