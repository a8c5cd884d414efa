"""Simulated storage on virtual time against the real API: the default class, a claim waiting for
its first consumer, provisioning on the scheduler's node, static binding, the pod held until its
claim is Bound, in-use protection and reclaiming."""

from __future__ import annotations

from phalanx.controllers.storageprotection import StorageProtection
from phalanx.controllers.volumeprovisioner import VolumeProvisioner

from .harness import ControllerCluster


class Cluster(ControllerCluster):
    nodes = ["n1", "n2"]

    def make_controllers(self, env, factory, **kw):
        self.provisioner = VolumeProvisioner(env.client, factory, **kw)
        self.protection = StorageProtection(env.client, factory, **kw)
        return [self.provisioner, self.protection]

    def claim(self, name="data"):
        return self.provisioner.claims.get(f"default/{name}")

    def volume(self, name):
        return self.provisioner.volumes.get(name)

    def pod(self, name="p"):
        return self.protection.pods.get(f"default/{name}")


def claim(name="data", cls=None):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}
    if cls is not None:
        spec["storageClassName"] = cls
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def pod(name="p", claim_name="data"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]}}


async def _reasons(env):
    items, _ = await env.client.list("v1", "Event", "default")
    return [e["reason"] for e in sorted(items, key=lambda e: e["metadata"]["creationTimestamp"] + e["metadata"]["name"])
            if (e.get("involvedObject") or {}).get("kind") == "PersistentVolumeClaim"]


async def test_claim_waits_for_its_first_consumer_then_is_provisioned_on_its_node(env):
    async with Cluster(env) as cl:
        created = await env.client.create(claim())
        assert created["spec"]["storageClassName"] == "standard"
        assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
        await env.run_until(lambda: False, within=5)
        assert cl.claim()["status"]["phase"] == "Pending"
        assert "WaitForFirstConsumer" in await _reasons(env)
        await env.client.create(pod())
        assert await env.run_until(lambda: (cl.pod().get("status") or {}).get("phase") == "Running")
        c = cl.claim()
        node = cl.pod()["spec"]["nodeName"]
        assert c["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}
        assert c["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        assert c["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        pv = cl.volume(c["spec"]["volumeName"])
        assert pv["metadata"]["name"] == f"pvc-{c['metadata']['uid']}"
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "rancher.io/local-path"
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete" and pv["status"]["phase"] == "Bound"
        assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [node]
        assert [r for r in await _reasons(env) if r.startswith("Provisioning")] == ["Provisioning",
                                                                                    "ProvisioningSucceeded"]


async def test_claim_in_use_stays_until_its_pod_goes_and_its_volume_is_reclaimed(env):
    async with Cluster(env) as cl:
        await env.client.create(claim())
        await env.client.create(pod())
        assert await env.run_until(lambda: (cl.pod().get("status") or {}).get("phase") == "Running")
        volume = cl.claim()["spec"]["volumeName"]
        await env.client.delete("v1", "PersistentVolumeClaim", "default", "data")
        await env.run_until(lambda: False, within=5)
        assert cl.claim()["metadata"].get("deletionTimestamp")  # Terminating while the pod uses it
        await env.client.delete("v1", "Pod", "default", "p")
        assert await env.run_until(lambda: cl.claim() is None and cl.volume(volume) is None)


async def test_immediate_class_binds_an_available_volume_that_fits(env):
    async with Cluster(env) as cl:
        await env.client.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                 "metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner"})
        for name, size in (("small", "1Gi"), ("big", "5Gi")):
            await env.client.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                                     "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                                              "storageClassName": "manual", "hostPath": {"path": f"/mnt/{name}"}}})
        await env.client.create(claim(cls="manual"))
        assert await env.run_until(lambda: (cl.claim().get("status") or {}).get("phase") == "Bound")
        assert cl.claim()["spec"]["volumeName"] == "big"
        assert cl.volume("big")["spec"]["claimRef"]["name"] == "data"
        assert await env.run_until(lambda: (cl.volume("small").get("status") or {}).get("phase") == "Available")


async def test_kubelet_starts_a_pod_only_once_its_claim_is_bound(env):
    async with Cluster(env) as cl:
        await env.client.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                 "metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner"})
        await env.client.create(claim(cls="manual"))
        p = pod()
        p["spec"]["nodeName"] = "n1"
        await env.client.create(p)
        await env.run_until(lambda: False, within=5)
        status = cl.pod()["status"]
        assert status["phase"] == "Pending"
        assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
        await env.client.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "disk"},
                                 "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"],
                                          "storageClassName": "manual", "hostPath": {"path": "/mnt/disk"}}})
        assert await env.run_until(lambda: cl.pod()["status"]["phase"] == "Running")
        assert cl.claim()["status"]["phase"] == "Bound"


async def test_pod_waits_unschedulable_for_an_immediate_claim_and_is_retried_once_bound(env):
    async with Cluster(env) as cl:
        await env.client.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                 "metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner"})
        await env.client.create(claim(cls="manual"))
        await env.client.create(pod())

        def scheduled_condition():
            conds = (cl.pod().get("status") or {}).get("conditions") or []
            return next((c for c in conds if c["type"] == "PodScheduled"), None)
        assert await env.run_until(lambda: scheduled_condition() is not None)
        cond = scheduled_condition()
        assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
        assert "pod has unbound immediate PersistentVolumeClaims" in cond["message"]
        await env.client.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "disk"},
                                 "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"],
                                          "storageClassName": "manual", "hostPath": {"path": "/mnt/disk"}}})
        # the claim's update is a queue event: well before the 5-minute flush of unschedulable pods
        assert await env.run_until(lambda: (cl.pod().get("status") or {}).get("phase") == "Running", within=60)
