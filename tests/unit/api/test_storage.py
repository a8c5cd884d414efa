"""PersistentVolumeClaim, PersistentVolume, StorageClass and StatefulSet through the real API:
defaults, upstream's validation messages, update rules, DefaultStorageClass admission and the
columns `kubectl get` prints."""

from __future__ import annotations

import pytest

from phalanx.machinery.errors import StatusError


def pvc(name="data", **spec):
    s = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": s}


def sc(name, default=False, **fields):
    md = {"name": name}
    if default:
        md["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": md,
            "provisioner": "example.com/disk", **fields}


async def causes(coro):
    with pytest.raises(StatusError) as e:
        await coro
    assert e.value.code == 422
    return {c["field"]: c["message"] for c in e.value.details["causes"]}


async def test_claim_defaults_and_the_default_class(env):
    env.bootstrap()
    created = await env.client.create(pvc())
    assert created["spec"]["storageClassName"] == "standard"  # kind's default class
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"] == {"phase": "Pending"}
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    explicit = await env.client.create(pvc("none", storageClassName=""))
    assert explicit["spec"]["storageClassName"] == ""  # "" asks for no class at all


async def test_newest_default_class_wins(env):
    """Of two default classes the newer one is given (then the one whose name sorts first)."""
    env.bootstrap()
    await env.clock.advance(10)
    await env.client.create(sc("zz-fast", default=True))
    created = await env.client.create(pvc())
    assert created["spec"]["storageClassName"] == "zz-fast"


async def test_claim_validation_messages(env):
    env.bootstrap()
    got = await causes(env.client.create(pvc(accessModes=[], resources={"requests": {"storage": "-1Gi"}},
                                             volumeMode="Raw")))
    assert got == {"spec.accessModes": "Required value: at least 1 access mode is required",
                   "spec.resources[storage]": 'Invalid value: "-1Gi": must be greater than zero',
                   "spec.volumeMode": 'Unsupported value: "Raw": supported values: "Block", "Filesystem"'}
    got = await causes(env.client.create(pvc(accessModes=["ReadWriteOncePod", "ReadWriteOnce"])))
    assert got == {"spec.accessModes": "Forbidden: may not use ReadWriteOncePod with other access modes"}


async def test_claim_spec_is_immutable_but_requests(env):
    env.bootstrap()
    await env.client.create(pvc())
    got = await causes(env.client.patch("v1", "PersistentVolumeClaim", "default", "data",
                                        {"spec": {"accessModes": ["ReadWriteMany"]}}))
    assert got["spec"].startswith("Forbidden: spec is immutable after creation except resources.requests")
    grown = await env.client.patch("v1", "PersistentVolumeClaim", "default", "data",
                                   {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    assert grown["spec"]["resources"]["requests"]["storage"] == "2Gi"


async def test_volume_defaults_and_validation(env):
    env.bootstrap()
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "disk"},
          "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/mnt"}}}
    created = await env.client.create(pv)
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert created["status"]["phase"] == "Pending"
    pending_since = created["status"]["lastPhaseTransitionTime"]
    await env.clock.advance(5)
    created["status"]["phase"] = "Available"
    available = await env.client.update_status(created)
    assert available["status"]["lastPhaseTransitionTime"] > pending_since  # a phase change is stamped
    bad = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "bad"}, "spec": {"accessModes": []}}
    got = await causes(env.client.create(bad))
    assert got == {"spec.accessModes": "Required value: at least 1 access mode is required",
                   "spec.capacity": "Required value", "spec": "Required value: must specify a volume type"}


async def test_storage_class_defaults_and_immutable_fields(env):
    created = await env.client.create(sc("fast"))
    assert (created["reclaimPolicy"], created["volumeBindingMode"]) == ("Delete", "Immediate")
    got = await causes(env.client.patch("storage.k8s.io/v1", "StorageClass", None, "fast",
                                        {"provisioner": "other.io/x", "parameters": {"a": "b"}}))
    assert got == {"provisioner": "Forbidden: updates to provisioner are forbidden.",
                   "parameters": "Forbidden: updates to parameters are forbidden."}
    got = await causes(env.client.create(sc("bad", reclaimPolicy="Recycle", volumeBindingMode="Later")))
    assert got == {"reclaimPolicy": 'Unsupported value: "Recycle": supported values: "Delete", "Retain"',
                   "volumeBindingMode": 'Unsupported value: "Later": supported values: "Immediate", '
                                        '"WaitForFirstConsumer"'}


def test_printer_rows():
    from datetime import datetime, timezone

    from phalanx.api import load_all, registry
    from phalanx.api.registry import StrategyContext
    from phalanx.machinery.featuregates import FeatureGates
    load_all()
    ctx = StrategyContext(gates=FeatureGates(), now=lambda: datetime(2026, 1, 1, 0, 1, tzinfo=timezone.utc))
    md = {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}
    claim = {"metadata": {**md, "namespace": "d"},
             "spec": {"volumeName": "pv1", "storageClassName": "standard", "volumeMode": "Filesystem",
                      "resources": {"requests": {"storage": "1Gi"}}},
             "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany",
                                                                                         "ReadWriteOnce"]}}
    rt = registry.lookup("", "v1", "persistentvolumeclaims")
    assert [c.name for c in rt.strategy.columns] == ["Name", "Status", "Volume", "Capacity", "Access Modes",
                                                     "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"]
    assert rt.strategy.row(claim, ctx) == ["x", "Bound", "pv1", "1Gi", "RWO,RWX", "standard", "<unset>", "60s",
                                           "Filesystem"]
    volume = {"metadata": md, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                       "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "standard",
                                       "claimRef": {"namespace": "d", "name": "x"}},
              "status": {"phase": "Bound"}}
    rt = registry.lookup("", "v1", "persistentvolumes")
    assert rt.strategy.row(volume, ctx) == ["x", "1Gi", "RWO", "Delete", "Bound", "d/x", "standard", "<unset>", "",
                                            "60s", "<unset>"]
    cls = {"metadata": {**md, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
           "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
    rt = registry.lookup("storage.k8s.io", "v1", "storageclasses")
    assert rt.strategy.row(cls, ctx) == ["x (default)", "rancher.io/local-path", "Delete", "Immediate", False, "60s"]


async def test_statefulset_defaults_and_update_rules(env):
    env.bootstrap()
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx",
                                                          "volumeMounts": [{"name": "www", "mountPath": "/d"}]}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    created = await env.client.create(sts)
    spec = created["spec"]
    assert (spec["replicas"], spec["podManagementPolicy"], spec["revisionHistoryLimit"]) == (1, "OrderedReady", 10)
    # MaxUnavailableStatefulSet is beta (on) since 1.35
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert spec["volumeClaimTemplates"][0]["status"] == {"phase": "Pending"}
    got = await causes(env.client.patch("apps/v1", "StatefulSet", "default", "web", {"spec": {"updateStrategy": {
        "rollingUpdate": {"maxUnavailable": 0, "partition": -1}}}}))
    assert got == {"spec.updateStrategy.rollingUpdate.maxUnavailable": "Invalid value: 0: cannot be 0",
                   "spec.updateStrategy.rollingUpdate.partition":
                       "Invalid value: -1: must be greater than or equal to 0"}
    got = await causes(env.client.patch("apps/v1", "StatefulSet", "default", "web", {"spec": {"serviceName": "x"}}))
    assert got["spec"].startswith("Forbidden: updates to statefulset spec for fields other than 'replicas'")
    scaled = await env.client.patch("apps/v1", "StatefulSet", "default", "web", {"spec": {"replicas": 4}})
    assert scaled["spec"]["replicas"] == 4
    sts["metadata"]["name"] = "explicit"
    sts["spec"]["updateStrategy"] = {"type": "RollingUpdate"}  # no rollingUpdate given: none defaulted
    assert (await env.client.create(sts))["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
