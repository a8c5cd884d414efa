"""The official kubernetes Python client 36.x creates, lists, watches and patches PodGroups and
ResourceClaims on a phalanx cluster."""

from __future__ import annotations

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402

from .conftest import Cluster  # noqa: E402


@pytest.fixture
def api_client(cluster: Cluster):
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


def test_podgroup_create_list_watch_patch(api_client, ns: str):
    sched = client.SchedulingV1alpha2Api(api_client)
    pg = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "pg1"},
          "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    created = sched.create_namespaced_pod_group(ns, pg)
    assert created.metadata.name == "pg1"
    assert created.spec.scheduling_policy.gang.min_count == 2
    names = [p.metadata.name for p in sched.list_namespaced_pod_group(ns).items]
    assert names == ["pg1"]
    w = watch.Watch()
    events = []
    for ev in w.stream(sched.list_namespaced_pod_group, ns, timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert events == [("ADDED", "pg1")]
    patched = sched.patch_namespaced_pod_group("pg1", ns, {"metadata": {"labels": {"team": "ml"}}})
    assert patched.metadata.labels == {"team": "ml"}


def test_resourceclaim_create_list_watch_patch(api_client, ns: str):
    res = client.ResourceV1Api(api_client)
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "rc1"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    created = res.create_namespaced_resource_claim(ns, claim)
    assert created.spec.devices.requests[0].exactly.allocation_mode == "ExactCount"
    assert [c.metadata.name for c in res.list_namespaced_resource_claim(ns).items] == ["rc1"]
    # The 36.x client derives the watch type from the list's docstring (V1ResourceClaimList), but
    # its model is named ResourceV1ResourceClaim: name it explicitly.
    w = watch.Watch(return_type="ResourceV1ResourceClaim")
    for ev in w.stream(res.list_namespaced_resource_claim, ns, timeout_seconds=5):
        assert ev["type"] == "ADDED" and ev["object"].metadata.name == "rc1"
        w.stop()
    patched = res.patch_namespaced_resource_claim("rc1", ns, {"metadata": {"annotations": {"a": "b"}}})
    assert patched.metadata.annotations == {"a": "b"}
