"""ReplicationController, networking.k8s.io, certificates.k8s.io, apiregistration and flowcontrol:
defaults, validation and table cells as upstream has them; and the kube-system pods of bootstrap."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

from phalanx.api import load_all, registry
from phalanx.api.apiregistration import local_api_services
from phalanx.api.registry import StrategyContext
from phalanx.cluster.spec import ClusterSpec, NodeSpec
from phalanx.cluster.systempods import MAX_NODES_WITH_NODE_PODS, system_pods
from phalanx.machinery.featuregates import FeatureGates

load_all()
NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
CTX = StrategyContext(gates=FeatureGates(), now=lambda: NOW)


def create(group, plural, obj):
    rt = registry.lookup(group, "v1", plural)
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("creationTimestamp", "2026-05-01T11:00:00Z")
    rt.strategy.default(obj, CTX)
    rt.strategy.prepare_for_create(obj, CTX)
    return obj, [e.message() for e in rt.strategy.validate(obj, CTX)], rt


RC = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
      "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_rc_selector_labels_and_replicas_default_from_the_template():
    rc, errs, rt = create("", "replicationcontrollers", RC)
    assert errs == []
    assert rc["spec"]["selector"] == {"app": "web"} and rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["replicas"] == 1
    assert rt.strategy.row(rc, CTX)[:4] == ["web", 1, 0, 0]


def test_rc_selector_must_match_the_template():
    bad = copy.deepcopy(RC)
    bad["spec"]["selector"] = {"app": "other"}
    _, errs, _ = create("", "replicationcontrollers", bad)
    assert errs == ['spec.template.metadata.labels: Invalid value: {"app":"web"}: '
                    "`selector` does not match template `labels`"]


def test_ingress_rules_and_backends_are_validated():
    ing = {"metadata": {"name": "i"}, "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [
        {"path": "web", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {}}}}]}}]}}
    _, errs, _ = create("networking.k8s.io", "ingresses", ing)
    assert errs == ['spec.rules[0].http.paths[0].path: Invalid value: "web": must be an absolute path',
                    "spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required"]
    _, errs, _ = create("networking.k8s.io", "ingresses", {"metadata": {"name": "i"}, "spec": {}})
    assert errs == ["spec: Invalid value: {}: either `defaultBackend` or `rules` must be specified"]


def test_network_policy_types_default_from_the_rules():
    np, errs, rt = create("networking.k8s.io", "networkpolicies",
                          {"metadata": {"name": "n"}, "spec": {"podSelector": {}, "egress": [{}]}})
    assert errs == [] and np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert rt.strategy.row(np, CTX)[1] == "<none>"


def test_csr_needs_a_pem_request_a_signer_and_usages():
    _, errs, _ = create("certificates.k8s.io", "certificatesigningrequests",
                        {"metadata": {"name": "c"}, "spec": {"request": "bm90IGEgcGVt"}})
    assert errs == ["spec.request: Invalid value: []: PEM block type must be CERTIFICATE REQUEST",
                    "spec.signerName: Required value", "spec.usages: Required value"]


def test_api_services_are_local_and_available():
    [core, apps] = local_api_services([("apps", "v1"), ("", "v1")], "2026-05-01T11:00:00Z")
    assert core["metadata"]["name"] == "v1." and apps["metadata"]["name"] == "v1.apps"
    obj, errs, rt = create("apiregistration.k8s.io", "apiservices", {**apps, "status": {}})
    assert errs == []
    obj["status"] = apps["status"]
    assert rt.strategy.row(obj, CTX)[1:3] == ["Local", "True"]


def _spec(workers: int) -> ClusterSpec:
    nodes = [NodeSpec(name="kind-control-plane", role="control-plane")]
    nodes += [NodeSpec(name=f"kind-worker{i or ''}") for i in range(workers)]
    return ClusterSpec(nodes=nodes)


def test_system_pods_are_kinds_and_bound_to_their_nodes():
    pods = system_pods(_spec(2), "v1.36.4")
    names = sorted(p["metadata"]["name"] for p in pods)
    assert "etcd-kind-control-plane" in names and "kube-scheduler-kind-control-plane" in names
    assert sum(n.startswith("coredns-") for n in names) == 2
    assert sum(n.startswith("kube-proxy-") for n in names) == 3 and sum(n.startswith("kindnet-") for n in names) == 3
    assert all(p["spec"]["nodeName"] and p["metadata"]["namespace"] == "kube-system" for p in pods)
    assert names == sorted(p["metadata"]["name"] for p in system_pods(_spec(2), "v1.36.4"))  # stable names
    assert system_pods(ClusterSpec(nodes=[]), "v1.36.4") == []


def test_large_clusters_get_the_control_plane_pods_only():
    pods = system_pods(_spec(MAX_NODES_WITH_NODE_PODS), "v1.36.4")
    assert not any(p["metadata"]["name"].startswith("kube-proxy-") for p in pods)
    assert len(pods) == 6
