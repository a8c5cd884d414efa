"""The Deployment and ReplicaSet controllers with simulated kubelets, the garbage collector and a
real scheduler, on virtual time against the real API: scaling, rolling updates, Recreate,
revisions, history cleanup, and the status `kubectl rollout status` reads.

"""

from __future__ import annotations

import pytest

from phalanx.controllers.deployment import (DeploymentController, compute_hash, max_surge, max_unavailable,
                                            scaled_value)
from phalanx.controllers.podcontrol import safe_encode_string
from phalanx.controllers.replicaset import ReplicaSetController

from .harness import ControllerCluster

NODES = ["n1", "n2", "n3"]


class Cluster(ControllerCluster):
    nodes = NODES

    def make_controllers(self, env, factory, **kw):
        self.deployments = DeploymentController(env.client, factory, **kw)
        self.replicasets = ReplicaSetController(env.client, factory, **kw)
        return [self.deployments, self.replicasets]

    def deploy(self, name):
        return self.deployments.deployments.get(f"default/{name}")

    def rss(self, name):
        return sorted((rs for rs in self.replicasets.replica_sets.list("default")
                       if rs["metadata"]["name"].startswith(name + "-")),
                      key=lambda rs: rs["metadata"]["creationTimestamp"] + rs["metadata"]["name"])

    def pods(self, app):
        return [p for p in self.replicasets.pods.list("default")
                if (p["metadata"].get("labels") or {}).get("app") == app and not p["metadata"].get("deletionTimestamp")]

    def rollout_status(self, name):
        """kubectl's DeploymentStatusViewer: (message, done)."""
        d = self.deploy(name)
        st, spec = d.get("status") or {}, d["spec"]
        if d["metadata"]["generation"] > st.get("observedGeneration", 0):
            return "Waiting for deployment spec update to be observed...", False
        for c in st.get("conditions") or []:
            if c["type"] == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded":
                return f'deployment "{name}" exceeded its progress deadline', False
        replicas = spec["replicas"]
        updated, total = st.get("updatedReplicas", 0), st.get("replicas", 0)
        available = st.get("availableReplicas", 0)
        if updated < replicas:
            return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of {replicas} new replicas '
                    f"have been updated...", False)
        if total > updated:
            return (f'Waiting for deployment "{name}" rollout to finish: {total - updated} old replicas are pending '
                    f"termination...", False)
        if available < updated:
            return (f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} updated replicas '
                    f"are available...", False)
        return f'deployment "{name}" successfully rolled out', True

    def rolled_out(self, name):
        return self.rollout_status(name)[1]

    async def events(self, name, kind="Deployment"):
        items, _ = await self.env.client.list("v1", "Event", "default")
        return [(e["reason"], e["message"]) for e in items
                if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == kind]


def deployment(name, replicas=2, image="nginx:1.25", strategy=None, **spec):
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}},
                               "spec": {"terminationGracePeriodSeconds": 0,
                                        "containers": [{"name": "web", "image": image}]}}, **spec}}
    if strategy:
        d["spec"]["strategy"] = strategy
    return d



async def set_image(env, name, image):
    """kubectl set image deployment/<name> web=<image> (a strategic merge patch of the template)."""
    await env.client.patch("apps/v1", "Deployment", "default", name,
                           {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}},
                           "application/strategic-merge-patch+json")

# -- pure helpers ---------------------------------------------------------------------------------------
def test_safe_encode_string_maps_decimal_digits_as_upstream():
    # rand.SafeEncodeString of a decimal FNV sum: why real pod-template-hashes only use 4-9, b, c, d, f
    assert safe_encode_string("0123456789") == "456789bcdf"


def test_compute_hash_is_stable_and_depends_on_template_and_collisions():
    t = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
    same = {"spec": {"containers": [{"image": "a", "name": "c"}]}, "metadata": {"labels": {"app": "x"}}}
    assert compute_hash(t, None) == compute_hash(same, None)
    assert compute_hash(t, None) != compute_hash(t, 1)
    assert compute_hash(t, 1) != compute_hash(t, 2)
    other = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "b"}]}}
    assert compute_hash(t, None) != compute_hash(other, None)


@pytest.mark.parametrize("value,total,up,expected", [
    ("25%", 4, True, 1), ("25%", 5, True, 2), ("25%", 5, False, 1), (3, 10, False, 3), ("0%", 10, True, 0),
])
def test_int_or_percent_scaling(value, total, up, expected):
    assert scaled_value(value, total, up) == expected


def test_fenceposts_never_both_zero():
    d = {"spec": {"replicas": 1, "strategy": {"type": "RollingUpdate",
                                               "rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "25%"}}}}
    assert (max_surge(d), max_unavailable(d)) == (0, 1)


# -- the controllers ------------------------------------------------------------------------------------
async def test_deployment_rolls_out_with_upstream_names_labels_and_status(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("web", replicas=2))
        assert await env.run_until(lambda: cl.rolled_out("web"), within=60)
        assert cl.rollout_status("web")[0] == 'deployment "web" successfully rolled out'
        d = cl.deploy("web")
        [rs] = cl.rss("web")
        pth = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{pth}" and set(pth) <= set("456789bcdf")
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pth}
        assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": pth}
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "2"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "3"
        assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        st = d["status"]
        assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"], st["availableReplicas"]) == (2, 2, 2, 2)
        assert "unavailableReplicas" not in st and st["observedGeneration"] == d["metadata"]["generation"]
        conds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in st["conditions"]}
        assert conds["Available"] == ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        assert conds["Progressing"] == ("True", "NewReplicaSetAvailable",
                                        f'ReplicaSet "web-{pth}" has successfully progressed.')
        pods = cl.pods("web")
        assert len(pods) == 2
        for p in pods:
            assert p["metadata"]["generateName"] == f"web-{pth}-"
            assert p["metadata"]["labels"] == {"app": "web", "pod-template-hash": pth}
            assert p["metadata"]["ownerReferences"][0]["name"] == f"web-{pth}"
        rs_status = cl.rss("web")[0]["status"]
        assert (rs_status["replicas"], rs_status["fullyLabeledReplicas"], rs_status["readyReplicas"],
                rs_status["availableReplicas"]) == (2, 2, 2, 2)
        assert ("ScalingReplicaSet", f"Scaled up replica set web-{pth} from 0 to 2") in await cl.events("web")
        rs_events = await cl.events(f"web-{pth}", "ReplicaSet")
        assert sum(1 for r, m in rs_events if r == "SuccessfulCreate" and m.startswith(f"Created pod: web-{pth}-")) == 2


async def test_scale_two_to_five_to_one(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("scaled", replicas=2))
        assert await env.run_until(lambda: cl.rolled_out("scaled"), within=60)
        # kubectl scale deployment/scaled --replicas=5 (the /scale subresource)
        await env.client.patch("apps/v1", "Deployment", "default", "scaled", {"spec": {"replicas": 5}},
                               subresource="scale")
        assert await env.run_until(lambda: cl.rolled_out("scaled") and len(cl.pods("scaled")) == 5, within=60)
        [rs] = cl.rss("scaled")
        assert rs["spec"]["replicas"] == 5
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
        await env.client.patch("apps/v1", "Deployment", "default", "scaled", {"spec": {"replicas": 1}},
                               subresource="scale")
        assert await env.run_until(lambda: cl.rolled_out("scaled") and len(cl.pods("scaled")) == 1
                                   and cl.deploy("scaled")["status"]["replicas"] == 1, within=60)
        name = rs["metadata"]["name"]
        events = await cl.events("scaled")
        assert ("ScalingReplicaSet", f"Scaled up replica set {name} from 2 to 5") in events
        assert ("ScalingReplicaSet", f"Scaled down replica set {name} from 5 to 1") in events
        assert len(cl.rss("scaled")) == 1


async def test_rolling_update_of_the_image_replaces_every_pod(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("roll", replicas=4))
        assert await env.run_until(lambda: cl.rolled_out("roll"), within=60)
        [old] = cl.rss("roll")
        # kubectl set image deployment/roll web=nginx:1.26
        await set_image(env, "roll", "nginx:1.26")
        # while rolling: never more than replicas + maxSurge pods, never fewer than replicas - maxUnavailable ready
        seen_total = []

        def done():
            pods = cl.pods("roll")
            seen_total.append(len(pods))
            return cl.rolled_out("roll") and len(cl.rss("roll")) == 2 and \
                all(p["spec"]["containers"][0]["image"] == "nginx:1.26" for p in pods) and len(pods) == 4

        assert await env.run_until(done, within=120)
        assert max(seen_total) <= 5
        rss = cl.rss("roll")
        new = [rs for rs in rss if rs["metadata"]["uid"] != old["metadata"]["uid"]][0]
        old_now = [rs for rs in rss if rs["metadata"]["uid"] == old["metadata"]["uid"]][0]
        assert old_now["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 4
        assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert cl.deploy("roll")["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert new["metadata"]["labels"]["pod-template-hash"] != old["metadata"]["labels"]["pod-template-hash"]
        events = [m for r, m in await cl.events("roll") if r == "ScalingReplicaSet"]
        assert f"Scaled up replica set {new['metadata']['name']} from 0 to 1" in events
        assert any(m.startswith(f"Scaled down replica set {old['metadata']['name']} from 4 to ") for m in events)
        assert cl.rollout_status("roll")[0] == 'deployment "roll" successfully rolled out'


async def test_rolling_back_to_an_old_template_reuses_its_replica_set(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("back", replicas=2))
        assert await env.run_until(lambda: cl.rolled_out("back"), within=60)
        [first] = cl.rss("back")
        for image in ("nginx:1.26", "nginx:1.25"):
            await set_image(env, "back", image)
            assert await env.run_until(lambda: cl.rolled_out("back") and all(
                p["spec"]["containers"][0]["image"] == image for p in cl.pods("back")), within=120)
        assert len(cl.rss("back")) == 2
        again = [rs for rs in cl.rss("back") if rs["metadata"]["uid"] == first["metadata"]["uid"]][0]
        ann = again["metadata"]["annotations"]
        assert ann["deployment.kubernetes.io/revision"] == "3"
        assert ann["deployment.kubernetes.io/revision-history"] == "1"


async def test_recreate_stops_old_pods_before_starting_new_ones(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("re", replicas=3, strategy={"type": "Recreate"}))
        assert await env.run_until(lambda: cl.rolled_out("re"), within=60)
        await set_image(env, "re", "nginx:2")
        mixed = []

        def done():
            images = {p["spec"]["containers"][0]["image"] for p in cl.pods("re")}
            mixed.append(len(images) > 1)
            return cl.rolled_out("re") and images == {"nginx:2"} and len(cl.pods("re")) == 3

        assert await env.run_until(done, within=120)
        assert not any(mixed)  # never old and new pods at once


async def test_revision_history_limit_deletes_the_oldest_replica_sets(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("hist", replicas=1, revisionHistoryLimit=1))
        assert await env.run_until(lambda: cl.rolled_out("hist"), within=60)
        for image in ("v2", "v3", "v4"):
            await set_image(env, "hist", image)
            assert await env.run_until(lambda: cl.rolled_out("hist") and all(
                p["spec"]["containers"][0]["image"] == image for p in cl.pods("hist")), within=120)
        assert await env.run_until(lambda: len(cl.rss("hist")) == 2, within=60)
        revisions = sorted(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in cl.rss("hist"))
        assert revisions == ["3", "4"]


async def test_replica_set_adopts_orphans_and_replaces_deleted_pods(env):
    async with Cluster(env) as cl:
        orphan = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "solo"}},
                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
        await env.client.create(orphan)
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "solo", "namespace": "default"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "solo"}},
                       "template": {"metadata": {"labels": {"app": "solo"}},
                                    "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}
        created = await env.client.create(rs)
        assert await env.run_until(lambda: len(cl.pods("solo")) == 2 and all(
            (p["metadata"].get("ownerReferences") or [{}])[0].get("uid") == created["metadata"]["uid"]
            for p in cl.pods("solo")), within=30)
        assert any(p["metadata"]["name"] == "stray" for p in cl.pods("solo"))
        await env.client.delete("v1", "Pod", "default", "stray")
        assert await env.run_until(lambda: len(cl.pods("solo")) == 2 and
                                   not any(p["metadata"]["name"] == "stray" for p in cl.pods("solo")), within=60)
        st = cl.replicasets.replica_sets.get("default/solo")["status"]
        assert st["replicas"] == 2 and st["observedGeneration"] == 1


async def test_a_rollout_that_cannot_progress_exceeds_its_deadline(env):
    async with Cluster(env, bind=False) as cl:  # nothing schedules the pods
        await env.client.create(deployment("stuck", replicas=2, progressDeadlineSeconds=60))
        assert await env.run_until(lambda: cl.rollout_status("stuck")[0].startswith(
            'Waiting for deployment "stuck" rollout to finish: 0 of 2 updated replicas are available'), within=30)
        assert await env.run_until(lambda: cl.rollout_status("stuck")[0] ==
                                   'deployment "stuck" exceeded its progress deadline', within=300)
        st = cl.deploy("stuck")["status"]
        conds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in st["conditions"]}
        rs = cl.rss("stuck")[0]["metadata"]["name"]
        assert conds["Progressing"] == ("False", "ProgressDeadlineExceeded",
                                        f'ReplicaSet "{rs}" has timed out progressing.')
        assert conds["Available"] == ("False", "MinimumReplicasUnavailable",
                                      "Deployment does not have minimum availability.")
        assert st["unavailableReplicas"] == 2 and "availableReplicas" not in st


async def test_min_ready_seconds_delays_availability(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("patient", replicas=1, minReadySeconds=30))
        assert await env.run_until(lambda: cl.deploy("patient")["status"].get("readyReplicas") == 1, within=30)
        assert not cl.deploy("patient")["status"].get("availableReplicas")
        assert not cl.rolled_out("patient")
        assert await env.run_until(lambda: cl.rolled_out("patient"), within=60)
        assert cl.rss("patient")[0]["spec"]["minReadySeconds"] == 30


async def test_paused_deployment_holds_template_changes_until_resumed(env):
    async with Cluster(env) as cl:
        await env.client.create(deployment("held", replicas=2))
        assert await env.run_until(lambda: cl.rolled_out("held"), within=60)
        # kubectl rollout pause; kubectl set image; kubectl scale
        await env.client.patch("apps/v1", "Deployment", "default", "held", {"spec": {"paused": True}})
        await env.client.patch("apps/v1", "Deployment", "default", "held",
                               {"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web",
                                                                                             "image": "nginx:9"}]}}}},
                               "application/strategic-merge-patch+json")
        assert await env.run_until(lambda: len(cl.pods("held")) == 3, within=60)
        await env.clock.advance(60)
        assert len(cl.rss("held")) == 1  # scaled, not rolled
        assert {p["spec"]["containers"][0]["image"] for p in cl.pods("held")} == {"nginx:1.25"}
        c = next(c for c in cl.deploy("held")["status"]["conditions"] if c["type"] == "Progressing")
        assert (c["status"], c["reason"], c["message"]) == ("Unknown", "DeploymentPaused", "Deployment is paused")
        await env.client.patch("apps/v1", "Deployment", "default", "held", {"spec": {"paused": False}})
        assert await env.run_until(lambda: cl.rolled_out("held") and len(cl.rss("held")) == 2 and
                                   {p["spec"]["containers"][0]["image"] for p in cl.pods("held")} == {"nginx:9"},
                                   within=120)
