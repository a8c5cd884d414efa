"""The disruption controller and the eviction subresource together, on virtual time against the
real API: PDB status from a Deployment's pods, 429 when a budget has no room, eviction with the
DisruptionTarget condition and `disruptedPods` when it has."""

from __future__ import annotations

import pytest

from phalanx.apiserver.eviction import VIOLATION_MSG, Evictions
from phalanx.controllers.deployment import DeploymentController
from phalanx.controllers.disruption import DisruptionController, scaled_value
from phalanx.controllers.replicaset import ReplicaSetController
from phalanx.machinery.errors import StatusError

from .harness import ControllerCluster


class Cluster(ControllerCluster):
    def make_controllers(self, env, factory, **kw):
        self.disruption = DisruptionController(env.client, factory, **kw)
        return [self.disruption, DeploymentController(env.client, factory, **kw),
                ReplicaSetController(env.client, factory, **kw)]

    def pdb(self, name):
        return self.disruption.pdbs.get(f"default/{name}")

    def pods(self):
        return [p for p in self.disruption.pods.list("default") if not p["metadata"].get("deletionTimestamp")]

    def ready(self, n):
        return len([p for p in self.pods() if any(c["type"] == "Ready" and c["status"] == "True"
                                                  for c in p.get("status", {}).get("conditions", []))]) == n


def deployment(replicas=3):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def pdb(name, **spec):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def status_of(cl, name):
    st = (cl.pdb(name) or {}).get("status") or {}
    return (st.get("currentHealthy"), st.get("desiredHealthy"), st.get("expectedPods"), st.get("disruptionsAllowed"))


@pytest.mark.parametrize("spec,expected", [
    ({"minAvailable": 3}, (3, 3, 3, 0)),
    ({"minAvailable": 2}, (3, 2, 3, 1)),
    ({"maxUnavailable": 1}, (3, 2, 3, 1)),
    ({"minAvailable": "50%"}, (3, 2, 3, 1)),
    ({"maxUnavailable": "50%"}, (3, 1, 3, 2)),
])
async def test_budget_status_counts_healthy_pods_against_the_deployment(env, spec, expected):
    async with Cluster(env) as cl:
        await env.client.create(deployment())
        assert await env.run_until(lambda: cl.ready(3))
        await env.client.create(pdb("b", **spec))
        assert await env.run_until(lambda: status_of(cl, "b") == expected)
        st = cl.pdb("b")["status"]
        assert st["observedGeneration"] == cl.pdb("b")["metadata"]["generation"]
        cond = st["conditions"][0]
        assert cond["type"] == "DisruptionAllowed"
        assert (cond["status"], cond["reason"]) == (("True", "SufficientPods") if expected[3]
                                                    else ("False", "InsufficientPods"))


async def test_eviction_is_refused_with_429_when_the_budget_has_no_room(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment())
        assert await env.run_until(lambda: cl.ready(3))
        await env.client.create(pdb("all", minAvailable=3))
        assert await env.run_until(lambda: status_of(cl, "all") == (3, 3, 3, 0))
        victim = cl.pods()[0]["metadata"]["name"]
        with pytest.raises(StatusError) as e:
            Evictions(env.api).evict("default", victim, {"metadata": {"name": victim}})
        assert (e.value.code, e.value.reason, e.value.message) == (429, "TooManyRequests", VIOLATION_MSG)
        assert e.value.details["causes"][0]["message"] == "The disruption budget all needs 3 healthy pods and has 3 currently"
        assert not (await env.client.get("v1", "Pod", "default", victim))["metadata"].get("deletionTimestamp")


async def test_eviction_with_room_marks_and_deletes_the_pod_then_the_budget_is_spent(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment())
        assert await env.run_until(lambda: cl.ready(3))
        await env.client.create(pdb("two", minAvailable=2))
        assert await env.run_until(lambda: status_of(cl, "two") == (3, 2, 3, 1))
        first, second = [p["metadata"]["name"] for p in cl.pods()[:2]]
        result = Evictions(env.api).evict("default", first, {"metadata": {"name": first}})
        assert result["status"] == "Success"
        evicted = await env.client.get("v1", "Pod", "default", first)
        assert evicted["metadata"].get("deletionTimestamp")
        cond = next(c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (cond["status"], cond["reason"], cond["message"]) == ("True", "EvictionByEvictionAPI",
                                                                     "Eviction API: evicting")
        with pytest.raises(StatusError) as e:
            Evictions(env.api).evict("default", second, {"metadata": {"name": second}})
        assert e.value.code == 429
        # the replacement becomes ready and the budget has room again
        assert await env.run_until(lambda: status_of(cl, "two") == (3, 2, 3, 1))
        assert "disruptedPods" not in cl.pdb("two")["status"]


async def test_pending_pods_are_evicted_without_asking_the_budget(env):
    async with Cluster(env, bind=False) as cl:
        await env.client.create(deployment(1))
        assert await env.run_until(lambda: len(cl.pods()) == 1)
        await env.client.create(pdb("all", minAvailable=1))
        name = cl.pods()[0]["metadata"]["name"]
        Evictions(env.api).evict("default", name, {"metadata": {"name": name}})
        assert await env.run_until(lambda: name not in [p["metadata"]["name"] for p in cl.pods()])


async def test_a_pod_without_scalable_controller_fails_the_budget_safe(env):
    async with Cluster(env) as cl:
        job = await env.client.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "j", "namespace": "default"}, "spec": {"suspend": True, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
        await env.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "lone", "namespace": "default", "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j",
                                 "uid": job["metadata"]["uid"], "controller": True}]},
            "spec": {"containers": [{"name": "c", "image": "x"}]}})
        await env.client.create(pdb("pct", maxUnavailable="10%"))
        assert await env.run_until(lambda: ((cl.pdb("pct") or {}).get("status") or {}).get("conditions"))
        cond = cl.pdb("pct")["status"]["conditions"][0]
        assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SyncFailed",
                                                                     'found no controllers for pod "lone"')


def test_scaled_values_round_up():
    assert scaled_value("50%", 3) == 2
    assert scaled_value(2, 10) == 2
    assert scaled_value("10%", 3) == 1


async def test_eviction_body_must_name_the_pod_and_dry_run_changes_nothing(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment(2))
        assert await env.run_until(lambda: cl.ready(2))
        await env.client.create(pdb("one", maxUnavailable=1))
        assert await env.run_until(lambda: status_of(cl, "one") == (2, 1, 2, 1))
        name = cl.pods()[0]["metadata"]["name"]
        with pytest.raises(StatusError) as e:
            Evictions(env.api).evict("default", name, {"metadata": {"name": "other"}})
        assert (e.value.code, e.value.message) == (400, "name in URL does not match name in Eviction object")
        Evictions(env.api).evict("default", name, {"metadata": {"name": name}, "deleteOptions": {"dryRun": ["All"]}})
        pod = await env.client.get("v1", "Pod", "default", name)
        assert not pod["metadata"].get("deletionTimestamp")
        assert not any(c["type"] == "DisruptionTarget" for c in pod["status"]["conditions"])
        assert (await env.client.get("policy/v1", "PodDisruptionBudget", "default", "one"))["status"][
            "disruptionsAllowed"] == 1


async def test_an_unfinished_eviction_is_forgotten_after_the_deletion_timeout(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment(2))
        assert await env.run_until(lambda: cl.ready(2))
        await env.client.create(pdb("one", maxUnavailable=1))
        assert await env.run_until(lambda: status_of(cl, "one") == (2, 1, 2, 1))
        # what the eviction subresource writes, without the pod's deletion following
        budget = await env.client.get("policy/v1", "PodDisruptionBudget", "default", "one")
        name = cl.pods()[0]["metadata"]["name"]
        budget["status"]["disruptionsAllowed"] = 0
        budget["status"]["disruptedPods"] = {name: budget["metadata"]["creationTimestamp"]}
        await env.client.update_status(budget)
        assert await env.run_until(lambda: status_of(cl, "one") == (1, 1, 2, 0))
        assert await env.run_until(lambda: status_of(cl, "one") == (2, 1, 2, 1), within=200)
        assert "disruptedPods" not in cl.pdb("one")["status"]


async def test_two_budgets_for_one_pod_answer_500(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment(1))
        assert await env.run_until(lambda: cl.ready(1))
        await env.client.create(pdb("a", maxUnavailable=1))
        await env.client.create(pdb("b", maxUnavailable=1))
        name = cl.pods()[0]["metadata"]["name"]
        with pytest.raises(StatusError) as e:
            Evictions(env.api).evict("default", name, {"metadata": {"name": name}})
        assert (e.value.code, e.value.message) == (500, "This pod has more than one PodDisruptionBudget, which the "
                                                        "eviction subresource does not support.")


async def test_a_not_ready_pod_passes_a_healthy_budget_without_spending_it(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment(3))
        assert await env.run_until(lambda: cl.ready(3))
        await env.client.create(pdb("two", minAvailable=2))
        assert await env.run_until(lambda: status_of(cl, "two") == (3, 2, 3, 1))
        pod = await env.client.get("v1", "Pod", "default", cl.pods()[0]["metadata"]["name"])
        for c in pod["status"]["conditions"]:
            if c["type"] == "Ready":
                c["status"] = "False"
        await env.client.update_status(pod)
        assert await env.run_until(lambda: status_of(cl, "two") == (2, 2, 3, 0))
        Evictions(env.api).evict("default", pod["metadata"]["name"], {"metadata": {"name": pod["metadata"]["name"]}})
        gone = await env.client.get("v1", "Pod", "default", pod["metadata"]["name"])
        assert gone["metadata"].get("deletionTimestamp")
        assert "disruptedPods" not in (await env.client.get("policy/v1", "PodDisruptionBudget", "default", "two"))[
            "status"]
