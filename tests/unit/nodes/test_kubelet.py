"""The simulated kubelet moves bound pods through upstream's lifecycle, on virtual time."""

from __future__ import annotations

import pytest

from phalanx.client import InformerFactory
from phalanx.cluster.spec import NodeSpec
from phalanx.nodes.kubelet import SimulatedKubelets, StageDelays, run_for_seconds


def pod(name, node=None, annotations=None, restart="Never"):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
         "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 30,
                  "containers": [{"name": "c", "image": "busybox"}]}}
    return p


async def start(env, **kw):
    env.bootstrap([NodeSpec("n1"), NodeSpec("n2")])
    factory = InformerFactory(env.client, clock=env.clock)
    k = SimulatedKubelets(env.client, factory, clock=env.clock, **kw)
    k.start()
    await env.run_until(lambda: k.synced, within=5)
    return k, factory


async def stop(k, factory):
    await k.stop()
    await factory.stop()


@pytest.mark.parametrize("annotation, seconds", [
    ("30s", 30), ("1m30s", 90), ("500ms", 0.5), ("0", 0), (None, None), ("x", None), ("-5s", None), ("30", None),
])
def test_run_for_annotation(annotation, seconds):
    annotations = {} if annotation is None else {"phalanx.dev/run-for": annotation}
    assert run_for_seconds({"metadata": {"annotations": annotations}}) == seconds


async def test_bound_pod_runs_with_upstream_conditions(env):
    k, f = await start(env)
    await env.client.create(pod("a"))
    await env.client.bind("default", "a", "n1")

    await env.run_until(lambda: (k.pods.get("default/a") or {}).get("status", {}).get("phase") == "Running", within=10)
    p = await env.client.get("v1", "Pod", "default", "a")
    st = p["status"]
    assert st["phase"] == "Running"
    conds = {c["type"]: c["status"] for c in st["conditions"]}
    assert conds == {"PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
                     "ContainersReady": "True", "PodScheduled": "True"}
    assert st["podIP"].startswith("10.244.") and st["hostIP"].startswith("172.18.")
    assert st["containerStatuses"][0]["ready"] is True and "running" in st["containerStatuses"][0]["state"]
    assert st["startTime"]
    await stop(k, f)


async def test_a_host_network_pod_has_its_nodes_address(env):
    k, f = await start(env)
    p = pod("h")
    p["spec"]["hostNetwork"] = True
    await env.client.create(p)
    await env.client.bind("default", "h", "n1")
    await env.run_until(lambda: (k.pods.get("default/h") or {}).get("status", {}).get("phase") == "Running", within=10)
    st = (await env.client.get("v1", "Pod", "default", "h"))["status"]
    assert st["podIP"] == st["hostIP"] and st["podIPs"] == [{"ip": st["hostIP"]}]
    await stop(k, f)


async def test_unbound_pod_is_left_alone(env):
    k, f = await start(env)
    await env.client.create(pod("idle"))
    await env.run_until(lambda: False, within=5)
    p = await env.client.get("v1", "Pod", "default", "idle")
    assert p["status"]["phase"] == "Pending" and "containerStatuses" not in p["status"]
    await stop(k, f)


async def test_run_for_and_exit_code(env):
    k, f = await start(env)
    await env.client.create(pod("ok", annotations={"phalanx.dev/run-for": "30s"}))
    await env.client.create(pod("bad", annotations={"phalanx.dev/run-for": "10s", "phalanx.dev/exit-code": "2"}))
    await env.client.bind("default", "ok", "n1")
    await env.client.bind("default", "bad", "n2")
    phase = lambda n: (k.pods.get(f"default/{n}") or {}).get("status", {}).get("phase")  # noqa: E731
    await env.run_until(lambda: phase("bad") == "Failed", within=60)
    assert phase("ok") == "Running"
    await env.run_until(lambda: phase("ok") == "Succeeded", within=60)
    bad = await env.client.get("v1", "Pod", "default", "bad")
    term = bad["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (2, "Error")
    await stop(k, f)


async def test_on_failure_restarts_the_container(env):
    k, f = await start(env)
    await env.client.create(pod("r", annotations={"phalanx.dev/run-for": "10s", "phalanx.dev/exit-code": "1"},
                                restart="OnFailure"))
    await env.client.bind("default", "r", "n1")
    restarts = lambda: ((k.pods.get("default/r") or {}).get("status", {}).get("containerStatuses") or [{}])[0].get("restartCount", 0)  # noqa: E731
    await env.run_until(lambda: restarts() >= 2, within=60)
    p = await env.client.get("v1", "Pod", "default", "r")
    assert p["status"]["phase"] == "Running"
    assert p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    await stop(k, f)


async def test_graceful_deletion_removes_the_pod(env):
    k, f = await start(env, delays=StageDelays(terminating=5))
    await env.client.create(pod("d"))
    await env.client.bind("default", "d", "n1")
    await env.run_until(lambda: (k.pods.get("default/d") or {}).get("status", {}).get("phase") == "Running", within=10)
    await env.client.delete("v1", "Pod", "default", "d")
    p = await env.client.get("v1", "Pod", "default", "d")
    assert p["metadata"]["deletionTimestamp"] and p["metadata"]["deletionGracePeriodSeconds"] == 30
    await env.run_until(lambda: k.pods.get("default/d") is None, within=60)
    await stop(k, f)


async def test_container_creating_stage(env):
    k, f = await start(env, delays=StageDelays(container_creating=20))
    await env.client.create(pod("slow"))
    await env.client.bind("default", "slow", "n1")
    waiting = lambda: (((k.pods.get("default/slow") or {}).get("status", {}).get("containerStatuses") or [{}])[0]
                       .get("state", {}).get("waiting", {}).get("reason"))  # noqa: E731
    await env.run_until(lambda: waiting() == "ContainerCreating", within=5)
    await env.run_until(lambda: (k.pods.get("default/slow") or {}).get("status", {}).get("phase") == "Running", within=60)
    await stop(k, f)


async def test_node_leases_are_renewed(env):
    k, f = await start(env, lease_period=10)
    await env.run_until(lambda: False, within=25)
    lease = await env.client.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", "n1")
    assert lease["spec"]["holderIdentity"] == "n1" and lease["spec"]["renewTime"]
    await stop(k, f)


async def set_down(env, node, down):
    obj = await env.client.get("v1", "Node", None, node)
    annotations = obj["metadata"].setdefault("annotations", {})
    if down:
        annotations["fault.phalanx.dev/node"] = "down"
    else:
        annotations.pop("fault.phalanx.dev/node", None)
    await env.client.update(obj)


async def test_a_failed_node_neither_heartbeats_nor_works_and_comes_back_ready(env):
    k, f = await start(env, lease_duration=4)
    await env.run_until(lambda: False, within=2)
    await set_down(env, "n1", True)
    await env.run_until(lambda: False, within=2)
    renewed = (await env.client.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", "n1"))["spec"]["renewTime"]
    await env.client.create(pod("a"))
    await env.client.bind("default", "a", "n1")
    await env.run_until(lambda: False, within=30)
    lease = await env.client.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", "n1")
    assert lease["spec"]["renewTime"] == renewed and lease["spec"]["leaseDurationSeconds"] == 4
    other = await env.client.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", "n2")
    assert other["spec"]["renewTime"] > renewed
    assert "phase" not in (await env.client.get("v1", "Pod", "default", "a")).get("status", {}) or \
        (await env.client.get("v1", "Pod", "default", "a"))["status"].get("phase") == "Pending"

    # the node controller gave up on it meanwhile
    node = await env.client.get("v1", "Node", None, "n1")
    for c in node["status"]["conditions"]:
        c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
    await env.client.update_status(node)
    await env.run_until(lambda: False, within=5)
    assert all(c["status"] == "Unknown" for c in (await env.client.get("v1", "Node", None, "n1"))["status"]["conditions"])

    await set_down(env, "n1", False)
    assert await env.run_until(lambda: (k.pods.get("default/a") or {}).get("status", {}).get("phase") == "Running",
                               within=10)
    node = await env.client.get("v1", "Node", None, "n1")
    assert {c["type"]: (c["status"], c["reason"]) for c in node["status"]["conditions"]} == {
        "Ready": ("True", "KubeletReady"), "MemoryPressure": ("False", "KubeletHasSufficientMemory"),
        "DiskPressure": ("False", "KubeletHasNoDiskPressure"), "PIDPressure": ("False", "KubeletHasSufficientPID")}
    lease = await env.client.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", "n1")
    assert lease["spec"]["renewTime"] > renewed
    events, _ = await env.client.list("v1", "Event", "default")
    assert [e["message"] for e in events if e["reason"] == "NodeReady"] == ["Node n1 status is now: NodeReady"]
    await stop(k, f)


async def test_pods_marked_not_ready_while_their_node_was_away_are_ready_again(env):
    k, f = await start(env)
    await env.client.create(pod("a"))
    await env.client.bind("default", "a", "n1")
    assert await env.run_until(lambda: (k.pods.get("default/a") or {}).get("status", {}).get("phase") == "Running",
                               within=10)
    await set_down(env, "n1", True)
    p = await env.client.get("v1", "Pod", "default", "a")
    for c in p["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "False"
    await env.client.update_status(p)
    await env.run_until(lambda: False, within=5)
    ready = lambda: next(c["status"] for c in k.pods.get("default/a")["status"]["conditions"]  # noqa: E731
                         if c["type"] == "Ready")
    assert ready() == "False"
    await set_down(env, "n1", False)
    assert await env.run_until(lambda: ready() == "True", within=10)
    await stop(k, f)


def test_lease_renewal_interval_follows_the_lease_duration_and_the_cluster_size():
    from phalanx.nodes.heartbeat import NodeHeartbeats
    beats = NodeHeartbeats(None, None, None, lambda n: True, lease_duration=40)
    assert beats.interval(10) == 10          # a quarter of the lease, as upstream's kubelet
    assert beats.interval(3000) == 15        # one renewal per node every nodes/200 seconds
    assert beats.interval(10_000) == 20      # never past half the lease
    assert NodeHeartbeats(None, None, None, lambda n: True, lease_duration=1).interval(5) == 0.25
