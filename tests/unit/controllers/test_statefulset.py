"""The StatefulSet controller with the simulated volume provisioner, kubelets, the garbage collector
and the real scheduler (VolumeBinding included), on virtual time against the real API: ordered
creation with claims bound to provisioned volumes, revisions and rolling updates in reverse ordinal
order, partitions, scaling down in order with claims retained, and Parallel management."""

from __future__ import annotations

import pytest

from phalanx.controllers.statefulset import StatefulSetController
from phalanx.controllers.storageprotection import StorageProtection
from phalanx.controllers.volumeprovisioner import VolumeProvisioner

from .harness import ControllerCluster


class Cluster(ControllerCluster):
    nodes = ["n1", "n2"]

    def make_controllers(self, env, factory, **kw):
        self.sts = StatefulSetController(env.client, factory, **kw)
        self.provisioner = VolumeProvisioner(env.client, factory, **kw)
        return [self.sts, self.provisioner, StorageProtection(env.client, factory, **kw)]

    def set_(self, name="web"):
        return self.sts.sets.get(f"default/{name}")

    def pods(self):
        return {p["metadata"]["name"]: p for p in self.sts.pods.list("default")
                if not p["metadata"].get("deletionTimestamp")}

    def claims(self):
        return {c["metadata"]["name"]: c for c in self.sts.claims.list("default")}

    def rolled_out(self, name="web"):
        s = self.set_(name)
        st = s.get("status") or {}
        return (st.get("observedGeneration") == s["metadata"]["generation"]
                and st.get("readyReplicas") == s["spec"]["replicas"] == st.get("updatedReplicas")
                and st.get("currentRevision") == st.get("updateRevision") and len(self.pods()) == s["spec"]["replicas"])


def statefulset(replicas=3, image="nginx:1.25", policy="OrderedReady"):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "serviceName": "web", "podManagementPolicy": policy,
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": image}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


async def _events(env, reason):
    items, _ = await env.client.list("v1", "Event", "default")
    return [e["message"] for e in items if e.get("reason") == reason
            and (e.get("involvedObject") or {}).get("kind") == "StatefulSet"]


async def _set_image(env, image):
    await env.client.patch("apps/v1", "StatefulSet", "default", "web",
                           {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}})


async def test_ordered_creation_binds_each_claim_to_a_provisioned_volume(env):
    async with Cluster(env) as cl:
        await env.client.create(statefulset())
        assert await env.run_until(cl.rolled_out)
        assert await _events(env, "SuccessfulCreate") == [
            "create Claim www-web-0 Pod web-0 in StatefulSet web success",
            "create Pod web-0 in StatefulSet web successful",
            "create Claim www-web-1 Pod web-1 in StatefulSet web success",
            "create Pod web-1 in StatefulSet web successful",
            "create Claim www-web-2 Pod web-2 in StatefulSet web success",
            "create Pod web-2 in StatefulSet web successful"]
        pods = cl.pods()
        for i in range(3):
            pod = pods[f"web-{i}"]
            assert pod["spec"]["hostname"] == f"web-{i}" and pod["spec"]["subdomain"] == "web"
            assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
            claim = cl.claims()[f"www-web-{i}"]
            assert claim["spec"]["storageClassName"] == "standard"
            assert claim["status"]["phase"] == "Bound"
            assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == pod["spec"]["nodeName"]
            pv = await env.client.get("v1", "PersistentVolume", None, claim["spec"]["volumeName"])
            assert pv["status"]["phase"] == "Bound" and pv["spec"]["claimRef"]["name"] == f"www-web-{i}"
            terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            assert terms[0]["matchExpressions"][0]["values"] == [pod["spec"]["nodeName"]]
        st = cl.set_()["status"]
        assert (st["replicas"], st["readyReplicas"], st["currentReplicas"], st["availableReplicas"]) == (3, 3, 3, 3)


async def test_image_update_rolls_pods_in_reverse_ordinal_order(env):
    async with Cluster(env) as cl:
        await env.client.create(statefulset())
        assert await env.run_until(cl.rolled_out)
        first = cl.set_()["status"]["currentRevision"]
        await _set_image(env, "nginx:1.26")
        assert await env.run_until(lambda: cl.rolled_out() and cl.set_()["status"]["currentRevision"] != first)
        assert await _events(env, "SuccessfulDelete") == [
            f"delete Pod web-{i} in StatefulSet web successful" for i in (2, 1, 0)]
        revision = cl.set_()["status"]["updateRevision"]
        assert all(p["metadata"]["labels"]["controller-revision-hash"] == revision
                   and p["spec"]["containers"][0]["image"] == "nginx:1.26" for p in cl.pods().values())
        revisions, _ = await env.client.list("apps/v1", "ControllerRevision", "default")
        assert sorted(r["revision"] for r in revisions) == [1, 2]


async def test_partition_keeps_lower_ordinals_at_the_current_revision(env):
    async with Cluster(env) as cl:
        await env.client.create(statefulset())
        assert await env.run_until(cl.rolled_out)
        await env.client.patch("apps/v1", "StatefulSet", "default", "web",
                               {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}})
        await _set_image(env, "nginx:1.26")
        assert await env.run_until(lambda: (cl.set_().get("status") or {}).get("updatedReplicas") == 1
                                   and (cl.set_().get("status") or {}).get("readyReplicas") == 3)
        images = {n: p["spec"]["containers"][0]["image"] for n, p in cl.pods().items()}
        assert images == {"web-0": "nginx:1.25", "web-1": "nginx:1.25", "web-2": "nginx:1.26"}


async def test_scale_down_removes_highest_ordinals_first_and_keeps_claims(env):
    async with Cluster(env) as cl:
        await env.client.create(statefulset())
        assert await env.run_until(cl.rolled_out)
        await env.client.patch("apps/v1", "StatefulSet", "default", "web", {"spec": {"replicas": 1}})
        assert await env.run_until(lambda: cl.rolled_out() and set(cl.pods()) == {"web-0"})
        assert await _events(env, "SuccessfulDelete") == [
            "delete Pod web-2 in StatefulSet web successful", "delete Pod web-1 in StatefulSet web successful"]
        assert set(cl.claims()) == {"www-web-0", "www-web-1", "www-web-2"}


async def test_parallel_creates_every_pod_at_once(env):
    async with Cluster(env) as cl:
        await env.client.create(statefulset(policy="Parallel"))
        assert await env.run_until(cl.rolled_out)
        assert set(cl.pods()) == {"web-0", "web-1", "web-2"}


async def test_invalid_statefulset_is_refused_with_field_causes(env):
    env.bootstrap()
    bad = statefulset()
    bad["spec"]["podManagementPolicy"] = "Sometimes"
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    try:
        await env.client.create(bad)
    except Exception as e:  # StatusError
        causes = {c["field"]: c["message"] for c in e.details["causes"]}
    assert causes["spec.podManagementPolicy"].startswith("Unsupported value: \"Sometimes\"")
    assert "`selector` does not match template `labels`" in causes["spec.template.metadata.labels"]


async def test_delete_retention_policy_removes_claims_with_their_pods_and_set(env):
    async with Cluster(env) as cl:
        sts = statefulset()
        sts["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete", "whenScaled": "Delete"}
        await env.client.create(sts)
        assert await env.run_until(cl.rolled_out)
        await env.client.patch("apps/v1", "StatefulSet", "default", "web", {"spec": {"replicas": 2}})
        assert await env.run_until(lambda: cl.rolled_out() and set(cl.claims()) == {"www-web-0", "www-web-1"})
        await env.client.delete("apps/v1", "StatefulSet", "default", "web")
        assert await env.run_until(lambda: not cl.claims() and not cl.pods())


async def test_min_ready_seconds_holds_the_next_ordinal_until_available(env):
    async with Cluster(env) as cl:
        sts = statefulset(replicas=2)
        sts["spec"]["minReadySeconds"] = 30
        await env.client.create(sts)
        assert await env.run_until(lambda: "web-0" in cl.pods() and cl.set_()["status"].get("readyReplicas") == 1)
        await env.run_until(lambda: False, within=10)
        assert set(cl.pods()) == {"web-0"} and cl.set_()["status"].get("availableReplicas", 0) == 0
        assert await env.run_until(lambda: (cl.set_().get("status") or {}).get("availableReplicas") == 2)


async def test_revisions_beyond_the_history_limit_are_deleted(env):
    async with Cluster(env) as cl:
        sts = statefulset(replicas=1)
        sts["spec"]["revisionHistoryLimit"] = 1
        await env.client.create(sts)
        assert await env.run_until(cl.rolled_out)
        for tag in ("1.26", "1.27", "1.28"):
            await _set_image(env, f"nginx:{tag}")
            assert await env.run_until(lambda: cl.rolled_out() and
                                       cl.pods()["web-0"]["spec"]["containers"][0]["image"] == f"nginx:{tag}")
        assert await env.run_until(lambda: len(cl.sts.revisions.list("default")) == 2)
        assert sorted(r["revision"] for r in cl.sts.revisions.list("default")) == [3, 4]


async def test_a_failed_pod_is_recreated_under_its_name(env):
    async with Cluster(env) as cl:
        await env.client.create(statefulset(replicas=1))
        assert await env.run_until(cl.rolled_out)
        uid = cl.pods()["web-0"]["metadata"]["uid"]
        await env.client.patch("v1", "Pod", "default", "web-0", {"status": {"phase": "Failed", "reason": "Evicted"}},
                               subresource="status")  # as an eviction by the node ends a pod
        assert await env.run_until(lambda: "web-0" in cl.pods() and cl.pods()["web-0"]["metadata"]["uid"] != uid
                                   and cl.rolled_out())
        assert await _events(env, "RecreatingFailedPod") == ["StatefulSet default/web is recreating failed Pod web-0"]


async def test_ordinals_start_names_the_pods_and_claims(env):
    async with Cluster(env) as cl:
        sts = statefulset(replicas=2)
        sts["spec"]["ordinals"] = {"start": 5}
        await env.client.create(sts)
        assert await env.run_until(cl.rolled_out)
        assert set(cl.pods()) == {"web-5", "web-6"} and set(cl.claims()) == {"www-web-5", "www-web-6"}


async def test_on_delete_updates_a_pod_only_when_it_is_deleted(env):
    async with Cluster(env) as cl:
        sts = statefulset(replicas=2)
        sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
        await env.client.create(sts)
        assert await env.run_until(lambda: (cl.set_().get("status") or {}).get("readyReplicas") == 2)
        await _set_image(env, "nginx:1.26")
        assert await env.run_until(lambda: cl.set_()["status"].get("updateRevision") !=
                                   cl.set_()["status"].get("currentRevision"))
        await env.run_until(lambda: False, within=10)
        assert {p["spec"]["containers"][0]["image"] for p in cl.pods().values()} == {"nginx:1.25"}
        uid = cl.pods()["web-1"]["metadata"]["uid"]
        await env.client.delete("v1", "Pod", "default", "web-1")
        assert await env.run_until(lambda: "web-1" in cl.pods() and cl.pods()["web-1"]["metadata"]["uid"] != uid
                                   and cl.set_()["status"].get("updatedReplicas") == 1)
        images = {n: p["spec"]["containers"][0]["image"] for n, p in cl.pods().items()}
        assert images == {"web-0": "nginx:1.25", "web-1": "nginx:1.26"}
        await env.client.delete("v1", "Pod", "default", "web-0")
        assert await env.run_until(cl.rolled_out)  # every pod updated: the update revision is current


class _RecordingClient:
    """Deletes and events, recorded: enough for the rolling-update step alone."""

    field_manager = "test"

    def __init__(self):
        self.deleted = []

    async def delete(self, api_version, kind, namespace, name, **kw):
        self.deleted.append(name)
        return {}

    async def create_event(self, *args, **kw):
        return None


def _running_pod(ordinal, revision, ready=True):
    return {"metadata": {"name": f"web-{ordinal}", "namespace": "default",
                         "labels": {"controller-revision-hash": revision}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


@pytest.mark.parametrize("max_unavailable,ready,deleted", [
    (None, [True] * 4, ["web-3"]),                     # default 1
    (2, [True] * 4, ["web-3", "web-2"]),
    ("50%", [True] * 4, ["web-3", "web-2"]),
    (2, [False, True, True, True], ["web-3"]),        # web-0 already unavailable takes one of the two
    (3, [True] * 4, ["web-3", "web-2"]),              # partition 2 keeps web-0 and web-1
])
async def test_rolling_update_deletes_up_to_max_unavailable_from_the_top(max_unavailable, ready, deleted):
    from phalanx.client import InformerFactory
    client = _RecordingClient()
    ctrl = StatefulSetController(client, InformerFactory(client))
    set_ = statefulset(replicas=4)
    set_["metadata"]["uid"] = "u"
    ru = {"partition": 2 if max_unavailable == 3 else 0}
    if max_unavailable is not None:
        ru["maxUnavailable"] = max_unavailable
    set_["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": ru}
    replicas = {i: _running_pod(i, "web-old", ready[i]) for i in range(4)}
    await ctrl._rolling_update(set_, replicas, {"metadata": {"name": "web-new"}}, 0, 4)
    assert client.deleted == deleted


async def test_a_deleted_claim_of_a_pending_pod_is_created_again(env):
    async with Cluster(env) as cl:
        sts = statefulset(replicas=1)
        sts["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "none"}  # the pod stays Pending
        await env.client.create(sts)
        assert await env.run_until(lambda: "www-web-0" in cl.claims() and "web-0" in cl.pods())
        await env.client.delete("v1", "PersistentVolumeClaim", "default", "www-web-0")
        assert await env.run_until(lambda: "www-web-0" in cl.claims() and
                                   not cl.claims()["www-web-0"]["metadata"].get("deletionTimestamp"))
