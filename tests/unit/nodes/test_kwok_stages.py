"""KWOK's published default stage files, unmodified, drive the simulated kubelet's pods and nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.client import InformerFactory
from phalanx.cluster.spec import NodeSpec
from phalanx.nodes.kubelet import SimulatedKubelets
from phalanx.nodes.stages import load_stages

KWOK_STAGES = Path(__file__).resolve().parents[4] / "shared" / "data" / "kwok-stages"
FILES = ("pod-ready", "pod-complete", "pod-delete", "node-initialize", "node-heartbeat", "node-not-ready")


def kwok_stages():
    if not KWOK_STAGES.is_dir():
        pytest.skip(f"KWOK's stage files are not in {KWOK_STAGES} (shared test data)")
    out = []
    for name in FILES:
        out += load_stages((KWOK_STAGES / f"{name}.yaml").read_text(), f"{name}.yaml")
    return out


def pod(name, owner=None):
    md = {"name": name, "namespace": "default"}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "terminationGracePeriodSeconds": 30}}


async def start(env):
    env.bootstrap([NodeSpec("n1")])
    factory = InformerFactory(env.client, clock=env.clock)
    k = SimulatedKubelets(env.client, factory, clock=env.clock, stages=kwok_stages())
    k.start()
    await env.run_until(lambda: k.synced, within=5)
    return k, factory


def phase(k, name):
    return ((k.pods.get(f"default/{name}") or {}).get("status") or {}).get("phase")


async def test_kwok_pod_stages_run_complete_and_delete(env):
    k, f = await start(env)
    await env.client.create(pod("web"))
    await env.client.bind("default", "web", "n1")
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
    await env.client.create(pod("job-pod", owner))
    await env.client.bind("default", "job-pod", "n1")

    await env.run_until(lambda: phase(k, "web") == "Running" and phase(k, "job-pod") == "Succeeded", within=10)
    st = k.pods.get("default/web")["status"]
    assert st["podIP"] and st["hostIP"]
    assert {c["type"]: c["status"] for c in st["conditions"]}["Ready"] == "True"
    assert "running" in st["containerStatuses"][0]["state"]
    term = k.pods.get("default/job-pod")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")

    await env.client.delete("v1", "Pod", "default", "web")
    await env.run_until(lambda: k.pods.get("default/web") is None, within=10)
    await k.stop(), await f.stop()


async def test_kwok_node_stages_initialize_heartbeat_and_fail_a_node(env):
    k, f = await start(env)
    await env.client.create({"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": "kwok-0"}, "spec": {"providerID": "phalanx://kwok-0"}})

    def node():
        return k.nodes.get("kwok-0") or {}

    def ready():
        return next((c for c in (node().get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})

    await env.run_until(lambda: ready().get("status") == "True", within=10)
    assert node()["status"]["phase"] == "Running"
    assert node()["status"]["allocatable"] == {"cpu": "1k", "memory": "1Ti", "pods": "1M"}
    beat = ready()["lastHeartbeatTime"]
    assert await env.run_until(lambda: ready().get("lastHeartbeatTime") != beat, within=60)

    await env.client.patch("v1", "Node", None, "kwok-0",
                           {"metadata": {"labels": {"node-not-ready.stage.kwok.x-k8s.io": "true"}}})
    assert await env.run_until(lambda: ready().get("status") == "False", within=10)
    assert (ready()["reason"], ready()["message"]) == ("nodeFailed", "node failed")
    await k.stop(), await f.stop()
