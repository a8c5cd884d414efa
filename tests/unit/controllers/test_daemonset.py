"""The DaemonSet controller with simulated kubelets, the garbage collector and the real scheduler,
on virtual time against the real API: one pod per eligible node (selectors, taints and the
automatic tolerations), new and removed nodes, rolling updates with maxUnavailable and maxSurge,
OnDelete, ControllerRevisions and the status `kubectl rollout status ds` reads."""

from __future__ import annotations

import pytest

from phalanx.cluster.bootstrap import node_object
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.daemonset import DaemonSetsController, should_run, target_node

from .harness import ControllerCluster


class Cluster(ControllerCluster):
    nodes = ["n1", "n2", "n3"]

    def make_controllers(self, env, factory, **kw):
        self.ds = DaemonSetsController(env.client, factory, **kw)
        return [self.ds]

    def pods(self):
        return [p for p in self.ds.pods.list("default") if not p["metadata"].get("deletionTimestamp")]

    def running_nodes(self):
        return sorted(p["spec"].get("nodeName") for p in self.pods()
                      if p.get("status", {}).get("phase") == "Running")

    def daemonset(self, name="agent"):
        return self.ds.daemonsets.get(f"default/{name}")

    def status(self, name="agent"):
        return (self.daemonset(name) or {}).get("status") or {}

    def rolled_out(self, name="agent"):
        """kubectl's DaemonSetStatusViewer says `successfully rolled out`."""
        d = self.daemonset(name)
        st = self.status(name)
        return (d is not None and d["metadata"]["generation"] <= st.get("observedGeneration", 0)
                and st.get("updatedNumberScheduled", 0) >= st["desiredNumberScheduled"]
                and st.get("numberAvailable", 0) >= st["desiredNumberScheduled"])

    def hashes(self):
        return sorted({p["metadata"]["labels"]["controller-revision-hash"] for p in self.pods()})


def daemonset(name="agent", image="agent:1", **spec):
    tspec = {"containers": [{"name": "a", "image": image}]}
    tspec.update(spec.pop("pod", {}))
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": tspec}, **spec}}


async def set_image(env, image, name="agent"):
    ds = await env.client.get("apps/v1", "DaemonSet", "default", name)
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = image
    await env.client.update(ds)


async def test_one_pod_per_node_through_the_scheduler_with_daemon_tolerations(env):
    async with Cluster(env) as cl:
        await env.client.create(daemonset())
        assert await env.run_until(lambda: cl.running_nodes() == ["n1", "n2", "n3"] and cl.rolled_out())
        st = cl.status()
        assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"],
                st["numberAvailable"], st["updatedNumberScheduled"], st["numberMisscheduled"]) == (3, 3, 3, 3, 3, 0)
        pod = cl.pods()[0]
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"][0]["matchFields"] == [
            {"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]
        keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in keys
        assert ("node.kubernetes.io/not-ready", "NoExecute") in keys
        assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
        revs = cl.ds.revisions.list("default")
        assert [r["metadata"]["name"] for r in revs] == [f"agent-{cl.hashes()[0]}"]
        assert revs[0]["revision"] == 1


async def test_new_node_gets_a_pod_and_a_removed_node_loses_it(env):
    async with Cluster(env) as cl:
        await env.client.create(daemonset())
        assert await env.run_until(lambda: len(cl.running_nodes()) == 3)
        obj, status = node_object(NodeSpec("n4"), 4)
        created = await env.client.create(obj)
        created["status"] = status
        await env.client.update_status(created)
        assert await env.run_until(lambda: cl.running_nodes() == ["n1", "n2", "n3", "n4"] and cl.rolled_out())
        assert cl.status()["desiredNumberScheduled"] == 4
        await env.client.delete("v1", "Node", None, "n2")
        assert await env.run_until(lambda: sorted(p["spec"].get("nodeName") for p in cl.pods()) == ["n1", "n3", "n4"]
                                   and cl.status()["desiredNumberScheduled"] == 3)


async def test_node_selector_and_taints_pick_the_nodes(env):
    async with Cluster(env) as cl:
        n1 = await env.client.get("v1", "Node", None, "n1")
        n1["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        await env.client.update(n1)
        n3 = await env.client.get("v1", "Node", None, "n3")
        n3["metadata"]["labels"]["tier"] = "edge"
        await env.client.update(n3)
        await env.client.create(daemonset("plain"))
        await env.client.create(daemonset("tolerant", pod={"tolerations": [{"key": "dedicated", "operator": "Exists"}]}))
        await env.client.create(daemonset("edge", pod={"nodeSelector": {"tier": "edge"}}))
        assert await env.run_until(lambda: all(cl.rolled_out(n) for n in ("plain", "tolerant", "edge")))

        def nodes_of(name):
            return sorted(p["spec"]["nodeName"] for p in cl.pods() if p["metadata"]["labels"]["app"] == name)
        assert nodes_of("plain") == ["n2", "n3"]
        assert nodes_of("tolerant") == ["n1", "n2", "n3"]
        assert nodes_of("edge") == ["n3"]
        # a NoExecute taint evicts the daemon pod; the NoSchedule one left it misscheduled-free
        n2 = await env.client.get("v1", "Node", None, "n2")
        n2["spec"]["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
        await env.client.update(n2)
        assert await env.run_until(lambda: nodes_of("plain") == ["n3"] and cl.status("plain")["desiredNumberScheduled"] == 1)


async def test_cordoned_nodes_still_run_daemon_pods(env):
    async with Cluster(env) as cl:
        n1 = await env.client.get("v1", "Node", None, "n1")
        n1["spec"]["unschedulable"] = True
        await env.client.update(n1)
        await env.client.create(daemonset())
        assert await env.run_until(lambda: cl.running_nodes() == ["n1", "n2", "n3"])


@pytest.mark.parametrize("rolling", [{"maxUnavailable": 1, "maxSurge": 0}, {"maxUnavailable": 0, "maxSurge": 1}])
async def test_rolling_update_replaces_every_pod_with_the_new_revision(env, rolling):
    async with Cluster(env) as cl:
        await env.client.create(daemonset(updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling}))
        assert await env.run_until(lambda: cl.rolled_out() and len(cl.running_nodes()) == 3)
        first = cl.hashes()
        most_pods = []  # pods not terminating, after every pod event
        cl.ds.pods.add_event_handler(on_add=lambda p: most_pods.append(len(cl.pods())),
                                     on_update=lambda o, n: most_pods.append(len(cl.pods())))
        await set_image(env, "agent:2")
        assert await env.run_until(lambda: cl.rolled_out() and len(cl.hashes()) == 1 and cl.hashes() != first
                                   and len(cl.running_nodes()) == 3)
        assert all(p["spec"]["containers"][0]["image"] == "agent:2" for p in cl.pods())
        assert max(most_pods) == (4 if rolling["maxSurge"] else 3)
        revs = cl.ds.revisions.list("default")
        assert sorted(r["revision"] for r in revs) == [1, 2]
        # back to the first template: its revision is rolled forward, no new one is made
        await set_image(env, "agent:1")
        assert await env.run_until(lambda: cl.rolled_out() and cl.hashes() == first and len(cl.running_nodes()) == 3)
        revs = cl.ds.revisions.list("default")
        assert {r["metadata"]["name"]: r["revision"] for r in revs}[f"agent-{first[0]}"] == 3


async def test_on_delete_replaces_only_deleted_pods(env):
    async with Cluster(env) as cl:
        await env.client.create(daemonset(updateStrategy={"type": "OnDelete"}))
        assert await env.run_until(lambda: len(cl.running_nodes()) == 3)
        first = cl.hashes()
        await set_image(env, "agent:2")
        assert await env.run_until(lambda: cl.status().get("observedGeneration") == 2)
        assert not await env.run_until(lambda: cl.hashes() != first, within=30)
        assert cl.status().get("updatedNumberScheduled", 0) == 0
        victim = cl.pods()[0]["metadata"]["name"]
        await env.client.delete("v1", "Pod", "default", victim)
        assert await env.run_until(lambda: len(cl.hashes()) == 2 and len(cl.running_nodes()) == 3
                                   and cl.status().get("updatedNumberScheduled") == 1)


def test_should_run_reads_the_template_against_the_node():
    ds = daemonset(pod={"nodeSelector": {"zone": "a"}})
    node = {"metadata": {"name": "x", "labels": {"zone": "a"}}, "spec": {}}
    assert should_run(ds, node) == (True, True)
    node["metadata"]["labels"]["zone"] = "b"
    assert should_run(ds, node) == (False, False)
    node["metadata"]["labels"]["zone"] = "a"
    node["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert should_run(ds, node) == (False, True)
    node["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert should_run(ds, node) == (True, True)


def test_target_node_of_an_unbound_pod_comes_from_its_affinity():
    pod = {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]}}}}}
    assert target_node(pod) == "n7"


async def test_a_restarted_controller_keeps_the_pods_and_revision(env):
    async with Cluster(env) as cl:
        await env.client.create(daemonset())
        assert await env.run_until(lambda: cl.rolled_out() and len(cl.running_nodes()) == 3)
        pods = sorted(p["metadata"]["name"] for p in cl.pods())
        await cl.ds.stop()
        fresh = DaemonSetsController(env.client, cl.factory, clock=env.clock)
        fresh.start()
        assert await env.run_until(lambda: fresh.synced, within=10)
        assert not await env.run_until(lambda: sorted(p["metadata"]["name"] for p in cl.pods()) != pods, within=30)
        assert len(fresh.revisions.list("default")) == 1
        await fresh.stop()
