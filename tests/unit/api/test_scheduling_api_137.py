"""A Kubernetes 1.37 `rest.API`: scheduling.k8s.io v1beta1/v1alpha3 created, read in either version,
decoded strictly and patched with 1.37's schemas; a 1.36 API does not serve them."""

from __future__ import annotations

import orjson
import pytest

from phalanx.apiserver import build_api
from phalanx.apiserver.rest import API
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

GROUP = "scheduling.k8s.io"
WORKLOAD = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "wl"},
            "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}},
                                            "resourceClaims": [{"name": "a", "resourceClaimName": "a"}]}]}}


def api_of(release: str) -> API:
    api = build_api(MemoryStore(), FeatureGates({}, release=release))
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    return api


def test_the_api_knows_its_release():
    assert api_of("1.37").release == "1.37"
    assert api_of("1.36").release == "1.36"
    with pytest.raises(StatusError):
        api_of("1.36").resource(GROUP, "v1beta1", "workloads")


def test_strict_decoding_uses_the_1_37_schemas():
    api = api_of("1.37")
    body = orjson.loads(orjson.dumps(WORKLOAD))
    body["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCout"] = 3
    with pytest.raises(StatusError) as e:
        api.create(api.resource(GROUP, "v1beta1", "workloads"), "default", body, field_validation="Strict")
    assert e.value.code == 400
    assert e.value.message == ('Workload in version "v1beta1" cannot be handled as a Workload: strict decoding '
                               'error: unknown field "spec.podGroupTemplates[0].schedulingPolicy.gang.minCout"')


def test_v1alpha3_reads_and_patches_what_v1beta1_wrote():
    api = api_of("1.37")
    api.create(api.resource(GROUP, "v1beta1", "workloads"), "default", orjson.loads(orjson.dumps(WORKLOAD)))
    alpha = api.get(api.resource(GROUP, "v1alpha3", "workloads"), "default", "wl")
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    template = {**WORKLOAD["spec"]["podGroupTemplates"][0], "schedulingPolicy": {"gang": {"minCount": 5}}}
    patch = {"spec": {"podGroupTemplates": [template]}}  # no patchMergeKey: the list is replaced
    patched, _ = api.patch(api.resource(GROUP, "v1alpha3", "workloads"), "default", "wl",
                           "application/strategic-merge-patch+json", orjson.dumps(patch))
    assert patched["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert patched["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    stored = api.get(api.resource(GROUP, "v1beta1", "workloads"), "default", "wl")
    assert stored["apiVersion"] == "scheduling.k8s.io/v1beta1" and stored["spec"] == patched["spec"]


def test_status_claims_merge_by_name_with_the_1_37_schema():
    api = api_of("1.37")
    api.create(api.resource(GROUP, "v1beta1", "workloads"), "default", orjson.loads(orjson.dumps(WORKLOAD)))
    pod_groups = api.resource(GROUP, "v1beta1", "podgroups")
    claims = [{"name": "a", "resourceClaimName": "a"}, {"name": "b", "resourceClaimTemplateName": "b"}]
    api.create(pod_groups, "default", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"},
        "spec": {"workloadRef": {"workloadName": "wl", "templateName": "workers"},
                 "schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": claims}})
    for name in ("a", "b"):
        status = {"status": {"resourceClaimStatuses": [{"name": name, "resourceClaimName": f"{name}-1"}]}}
        pg, _ = api.patch(pod_groups, "default", "pg", "application/strategic-merge-patch+json",
                          orjson.dumps(status), subresource="status")
    merged = sorted(pg["status"]["resourceClaimStatuses"], key=lambda c: c["name"])
    assert merged == [{"name": "a", "resourceClaimName": "a-1"}, {"name": "b", "resourceClaimName": "b-1"}]
