"""What bootstrap writes besides namespaces and nodes: APF defaults, APIServices, kube-system pods;
idempotent across restarts."""

from __future__ import annotations

from phalanx.apiserver import build_api
from phalanx.cluster.bootstrap import bootstrap
from phalanx.cluster.spec import ClusterSpec, NodeSpec
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

SPEC = ClusterSpec(nodes=[NodeSpec(name="kind-control-plane", role="control-plane"), NodeSpec(name="kind-worker")])


def _names(api, group, plural, namespace=None):
    return sorted(o["metadata"]["name"] for o in api.list(api.resource(group, "v1", plural), namespace)["items"])


def test_bootstrap_writes_apf_defaults_api_services_and_system_pods_once():
    store = MemoryStore()
    api = build_api(store, FeatureGates())
    bootstrap(api, SPEC)
    schemas = _names(api, "flowcontrol.apiserver.k8s.io", "flowschemas")
    assert {"exempt", "catch-all", "global-default", "service-accounts"} <= set(schemas)
    services = api.list(api.resource("apiregistration.k8s.io", "v1", "apiservices"), None)["items"]
    assert "v1." in {s["metadata"]["name"] for s in services}
    assert all(s["status"]["conditions"][0]["status"] == "True" for s in services)
    pods = api.list(api.resource("", "v1", "pods"), "kube-system")["items"]
    etcd = next(p for p in pods if p["metadata"]["name"] == "etcd-kind-control-plane")
    assert etcd["metadata"]["ownerReferences"][0]["kind"] == "Node"
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    bootstrap(api, SPEC)  # a restart: nothing is made twice
    after = {p["metadata"]["name"]: p["metadata"]["uid"]
             for p in api.list(api.resource("", "v1", "pods"), "kube-system")["items"]}
    assert after == before and _names(api, "flowcontrol.apiserver.k8s.io", "flowschemas") == schemas


def test_api_services_of_group_versions_no_longer_served_go():
    api = build_api(MemoryStore(), FeatureGates())
    bootstrap(api, ClusterSpec(nodes=[]))
    rt = api.resource("apiregistration.k8s.io", "v1", "apiservices")
    gone = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.gone.example.com", "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
            "spec": {"group": "gone.example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15}}
    api.create(rt, "", gone)
    bootstrap(api, ClusterSpec(nodes=[]))
    assert "v1.gone.example.com" not in _names(api, "apiregistration.k8s.io", "apiservices")
