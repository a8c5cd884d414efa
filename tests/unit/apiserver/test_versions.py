"""Resources served in several versions (1.37's Workload and PodGroup at v1beta1 and v1alpha3): one
object, stored once, read and written in either version; and which kinds each release serves."""

from __future__ import annotations

import pytest

from phalanx.apiserver import build_api
from phalanx.apiserver.rest import API
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

GROUP = "scheduling.k8s.io"


def api_of(release: str, runtime_config: dict | None = None) -> API:
    api = build_api(MemoryStore(), FeatureGates(release=release), runtime_config=runtime_config)
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "ns"}})
    return api


def pod_group(api_version: str, name: str = "pg") -> dict:
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}


def served(api: API) -> set[str]:
    return {rt.api_version for rt in api.types if rt.group == GROUP}


def test_each_release_serves_its_own_versions():
    assert served(api_of("1.36")) == {f"{GROUP}/v1", f"{GROUP}/v1alpha2"}
    assert served(api_of("1.37")) == {f"{GROUP}/v1", f"{GROUP}/v1beta1", f"{GROUP}/v1alpha3"}
    assert {rt.kind for rt in api_of("1.37").types if rt.api_version == f"{GROUP}/v1alpha3"} == \
        {"Workload", "PodGroup", "CompositePodGroup"}


def test_runtime_config_switches_beta_versions_off():
    assert served(api_of("1.37", {"api/beta": "false"})) == {f"{GROUP}/v1", f"{GROUP}/v1alpha3"}
    assert served(api_of("1.37", {f"{GROUP}/v1alpha3": "false"})) == {f"{GROUP}/v1", f"{GROUP}/v1beta1"}


def test_one_object_in_two_versions():
    api = api_of("1.37")
    alpha3 = api.resource(GROUP, "v1alpha3", "podgroups")
    beta1 = api.resource(GROUP, "v1beta1", "podgroups")
    created = api.create(alpha3, "ns", pod_group(f"{GROUP}/v1alpha3"))
    assert created["apiVersion"] == f"{GROUP}/v1alpha3"
    assert api.store.get(f"{GROUP}/podgroups", "ns", "pg")["apiVersion"] == f"{GROUP}/v1beta1"  # stored once, as v1beta1
    assert api.get(beta1, "ns", "pg")["apiVersion"] == f"{GROUP}/v1beta1"
    assert api.get(alpha3, "ns", "pg")["metadata"]["uid"] == created["metadata"]["uid"]
    assert [o["apiVersion"] for o in api.list(alpha3, "ns")["items"]] == [f"{GROUP}/v1alpha3"]
    assert api.list(alpha3, "ns")["apiVersion"] == f"{GROUP}/v1alpha3"


def test_writes_in_either_version_reach_the_same_object():
    api = api_of("1.37")
    alpha3 = api.resource(GROUP, "v1alpha3", "podgroups")
    beta1 = api.resource(GROUP, "v1beta1", "podgroups")
    api.create(beta1, "ns", pod_group(f"{GROUP}/v1beta1"))
    patched, _ = api.patch(alpha3, "ns", "pg", "application/merge-patch+json",
                           b'{"metadata": {"labels": {"via": "v1alpha3"}}}')
    assert patched["apiVersion"] == f"{GROUP}/v1alpha3"
    # A JSON patch sees the object in the version the request names.
    api.patch(alpha3, "ns", "pg", "application/json-patch+json",
              b'[{"op": "test", "path": "/apiVersion", "value": "scheduling.k8s.io/v1alpha3"}]')
    current = api.get(beta1, "ns", "pg")
    assert current["metadata"]["labels"] == {"via": "v1alpha3"}
    updated = api.update(alpha3, "ns", "pg", {**current, "apiVersion": f"{GROUP}/v1alpha3"})
    assert updated["apiVersion"] == f"{GROUP}/v1alpha3"
    assert updated["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]  # a no-op stays one
    deleted, _ = api.delete(alpha3, "ns", "pg")
    assert deleted["apiVersion"] in (f"{GROUP}/v1alpha3", "v1")


def test_a_body_must_name_the_version_of_its_url():
    api = api_of("1.37")
    with pytest.raises(StatusError) as e:
        api.create(api.resource(GROUP, "v1beta1", "podgroups"), "ns", pod_group(f"{GROUP}/v1alpha3"))
    assert e.value.message == ("the API version in the data (scheduling.k8s.io/v1alpha3) does not match the "
                               "expected API version (scheduling.k8s.io/v1beta1)")


async def test_watches_see_their_own_version():
    api = api_of("1.37")
    alpha3 = api.resource(GROUP, "v1alpha3", "podgroups")
    beta1 = api.resource(GROUP, "v1beta1", "podgroups")
    w_alpha, w_beta = api.watch(alpha3, "ns", resource_version="1"), api.watch(beta1, "ns", resource_version="1")
    api.create(beta1, "ns", pod_group(f"{GROUP}/v1beta1"))
    assert await w_alpha.wait(1) and await w_beta.wait(1)
    assert [(t, o["apiVersion"]) for t, o in w_alpha.ready()] == [("ADDED", f"{GROUP}/v1alpha3")]
    assert [(t, o["apiVersion"]) for t, o in w_beta.ready()] == [("ADDED", f"{GROUP}/v1beta1")]
