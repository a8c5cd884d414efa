"""Pods of one template through `rest.API.create`: what the create path remembers per template
(managedFields per shape, validation per spec) never lets one pod stand for another."""

from __future__ import annotations

import pytest

from phalanx.apiserver import build_api
from phalanx.apiserver.rest import API
from phalanx.cluster.bootstrap import bootstrap
from phalanx.cluster.spec import ClusterSpec
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore


@pytest.fixture()
def api() -> API:
    api = build_api(MemoryStore(), FeatureGates())
    bootstrap(api, ClusterSpec(nodes=[]))
    return api


def pod(name: str, *, image: str = "registry.k8s.io/pause:3.10", volumes: list | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": image}]}
    if volumes is not None:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "a"}}, "spec": spec}


def create(api: API, body: dict) -> dict:
    return api.create(api.resource("", "v1", "pods"), "default", body, field_manager="kubectl",
                      field_validation="Strict")


def token_volume(obj: dict) -> str:
    return next(v["name"] for v in obj["spec"]["volumes"] if v["name"].startswith("kube-api-access-"))


def test_each_pod_of_a_template_owns_its_own_token_volume_in_managed_fields(api):
    first, second = create(api, pod("p1")), create(api, pod("p2"))
    for obj in (first, second):
        volumes = obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:volumes"]
        assert list(volumes) == [f'k:{{"name":"{token_volume(obj)}"}}', "."]
    assert token_volume(first) != token_volume(second)


def test_a_pod_unlike_its_template_is_still_refused(api):
    create(api, pod("p1"))
    with pytest.raises(StatusError) as e:
        create(api, pod("p2", image=" registry.k8s.io/pause:3.10"))
    assert e.value.code == 422
    assert e.value.details["causes"][0]["field"] == "spec.containers[0].image"


def test_one_token_volume_name_twice_is_refused_after_two_distinct_ones_passed(api):
    """Generated names stand in by position: a spec that repeats one is not the spec that has two."""
    projected = {"projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    create(api, pod("p1", volumes=[{"name": "kube-api-access-bbbbb", **projected},
                                   {"name": "kube-api-access-ccccc", **projected}]))
    with pytest.raises(StatusError) as e:
        create(api, pod("p2", volumes=[{"name": "kube-api-access-ddddd", **projected},
                                       {"name": "kube-api-access-ddddd", **projected}]))
    assert e.value.code == 422
    assert e.value.details["causes"][0]["reason"] == "FieldValueDuplicate"
