"""`build_api`: the served catalogue follows the runtime config, and every API it builds validates
strictly, patches with schema merge keys, records managed fields and allocates Service IPs."""

from __future__ import annotations

import orjson
import pytest

from phalanx.apiserver import build_api
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.errors import StatusError
from phalanx.store import MemoryStore


def new_api(runtime_config: dict | None = None):
    api = build_api(MemoryStore(), FeatureGates.from_config({}), runtime_config=runtime_config)
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    return api


def served(api) -> set[str]:
    return {rt.api_version for rt in api.types}


@pytest.mark.parametrize("runtime_config, present, absent", [
    (None, {"v1", "scheduling.k8s.io/v1alpha2", "resource.k8s.io/v1"}, set()),
    ({"api/alpha": "false"}, {"v1", "resource.k8s.io/v1"}, {"scheduling.k8s.io/v1alpha2"}),
    ({"api/all": "false"}, {"v1", "batch/v1"}, {"scheduling.k8s.io/v1alpha2"}),
    ({"api/alpha": "false", "scheduling.k8s.io/v1alpha2": "true"}, {"scheduling.k8s.io/v1alpha2"}, set()),
    ({"scheduling.k8s.io/v1alpha2/": "false"}, {"v1"}, {"scheduling.k8s.io/v1alpha2"}),
    ({"batch/v1": "false"}, {"v1"}, {"batch/v1"}),
])
def test_runtime_config_decides_the_served_group_versions(runtime_config, present, absent):
    versions = served(new_api(runtime_config))
    assert present <= versions and not (absent & versions)


def configmap(**extra) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, **extra}


def test_strict_field_validation_is_always_wired():
    api = new_api()
    rt = api.resource("", "v1", "configmaps")
    body = configmap(foo=1)
    with pytest.raises(StatusError) as e:
        api.create(rt, "default", body, field_validation="Strict", raw=orjson.dumps(body))
    assert (e.value.code, e.value.message) == (
        400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo"')


def test_managed_fields_are_always_recorded():
    api = new_api()
    created = api.create(api.resource("", "v1", "configmaps"), "default", configmap(data={"k": "v"}),
                         field_manager="kubectl-create")
    [entry] = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-create", "Update")
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:k": {}}}


def test_strategic_merge_patch_uses_the_schema_merge_keys():
    api = new_api()
    rt = api.resource("", "v1", "pods")
    api.create(rt, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"containers": [{"name": "a", "image": "one"}, {"name": "b", "image": "two"}]}})
    patched, _ = api.patch(rt, "default", "p", "application/strategic-merge-patch+json",
                           b'{"spec":{"containers":[{"name":"b","image":"three"}]}}')
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [("a", "one"), ("b", "three")]


def test_server_side_apply_is_wired():
    api = new_api()
    rt = api.resource("", "v1", "configmaps")
    obj, created = api.patch(rt, "default", "cm", "application/apply-patch+yaml",
                             b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n",
                             field_manager="applier")
    assert created and obj["metadata"]["managedFields"][0]["operation"] == "Apply"


@pytest.mark.parametrize("spec, expect", [
    ({"ports": [{"port": 80}]}, {"type": "ClusterIP", "node_ports": [None]}),
    ({"type": "NodePort", "ports": [{"port": 80}]}, {"type": "NodePort", "node_ports": ["allocated"]}),
])
def test_services_get_cluster_ips_and_node_ports(spec, expect):
    api = new_api()
    rt = api.resource("", "v1", "services")
    svc = api.create(rt, "default", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": spec})
    s = svc["spec"]
    assert s["clusterIP"].startswith("10.") and s["clusterIPs"] == [s["clusterIP"]]
    assert ["allocated" if 30000 <= p.get("nodePort", 0) <= 32767 else p.get("nodePort") for p in s["ports"]] == \
        expect["node_ports"]
    updated = api.update(rt, "default", "web", {**svc, "spec": {**s, "clusterIP": "", "clusterIPs": []}})
    assert updated["spec"]["clusterIP"] == s["clusterIP"]  # an update that omits the address keeps it
