"""`fields.to_release`: a Workload or PodGroup written for Kubernetes 1.36 (`v1alpha2`) converted to
1.37's `v1beta1` and back, field by field, and every other object left alone."""

from __future__ import annotations

import asyncio
import copy

import pytest

from phalanx.api.scheduling.fields import to_release

PG_1_36 = {
    "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
    "metadata": {"name": "gang-0", "namespace": "ns", "labels": {"a": "b"}},
    "spec": {
        "podGroupTemplateRef": {"workload": {"workloadName": "training", "podGroupTemplateName": "workers"}},
        "priorityClassName": "high", "priority": 100, "disruptionMode": "PodGroup",
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
        "resourceClaims": [{"name": "r", "resourceClaimName": "claim-0"}],
    },
}

PG_1_37 = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
    "metadata": {"name": "gang-0", "namespace": "ns", "labels": {"a": "b"}},
    "spec": {
        "workloadRef": {"workloadName": "training", "templateName": "workers"},
        "priorityClassName": "high", "priority": 100, "disruptionMode": {"all": {}},
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
        "resourceClaims": [{"name": "r", "resourceClaimName": "claim-0"}],
    },
}

WL_1_36 = {
    "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
    "metadata": {"name": "training", "namespace": "ns"},
    "spec": {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "training"},
        "podGroupTemplates": [
            {"name": "leader", "schedulingPolicy": {"basic": {}}, "disruptionMode": "Pod"},
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": "PodGroup",
             "priorityClassName": "high"},
            {"name": "defaulted", "schedulingPolicy": {"basic": {}}},
        ],
    },
}

WL_1_37 = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
    "metadata": {"name": "training", "namespace": "ns"},
    "spec": {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "training"},
        "podGroupTemplates": [
            {"name": "leader", "schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}},
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": {"all": {}},
             "priorityClassName": "high"},
            {"name": "defaulted", "schedulingPolicy": {"basic": {}}},
        ],
    },
}


def test_a_1_36_pod_group_becomes_its_1_37_spelling():
    assert to_release(PG_1_36, "1.37") == PG_1_37


def test_a_1_36_workload_becomes_its_1_37_spelling():
    assert to_release(WL_1_36, "1.37") == WL_1_37


def test_disruption_mode_pod_is_single():
    pg = copy.deepcopy(PG_1_36)
    pg["spec"]["disruptionMode"] = "Pod"
    assert to_release(pg, "1.37")["spec"]["disruptionMode"] == {"single": {}}


def test_a_reference_without_template_name_keeps_only_the_workload_name():
    pg = copy.deepcopy(PG_1_36)
    pg["spec"]["podGroupTemplateRef"] = {"workload": {"workloadName": "training"}}
    assert to_release(pg, "1.37")["spec"]["workloadRef"] == {"workloadName": "training"}


def test_a_standalone_pod_group_gains_no_reference():
    pg = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g"},
          "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    assert to_release(pg, "1.37") == {**pg, "apiVersion": "scheduling.k8s.io/v1beta1"}


def test_the_input_is_not_changed():
    before = copy.deepcopy(PG_1_36), copy.deepcopy(WL_1_36)
    to_release(PG_1_36, "1.37")
    to_release(WL_1_36, "1.37")
    assert (PG_1_36, WL_1_36) == before


@pytest.mark.parametrize("obj", [PG_1_37, WL_1_37])
def test_1_37_objects_convert_back_to_1_36(obj):
    original = PG_1_36 if obj["kind"] == "PodGroup" else WL_1_36
    assert to_release(obj, "1.36") == original


def test_v1alpha3_converts_to_1_36_as_v1beta1_does():
    assert to_release({**PG_1_37, "apiVersion": "scheduling.k8s.io/v1alpha3"}, "1.36") == PG_1_36


@pytest.mark.parametrize("obj,release", [(PG_1_36, "1.36"), (WL_1_37, "1.37")])
def test_an_object_already_in_the_release_is_returned_as_is(obj, release):
    assert to_release(obj, release) is obj


@pytest.mark.parametrize("obj", [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
     "spec": {"disruptionMode": "Pod", "schedulingGroup": {"podGroupName": "g"}}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10},
    {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": {"name": "c"},
     "spec": {"workloadRef": {"workloadName": "w", "templateName": "t"}}},
])
@pytest.mark.parametrize("release", ["1.36", "1.37"])
def test_other_objects_are_left_alone(obj, release):
    assert to_release(obj, release) is obj


def test_a_disruption_mode_neither_release_spells_is_kept_for_the_api_to_reject():
    pg = copy.deepcopy(PG_1_36)
    pg["spec"]["disruptionMode"] = "Everything"
    assert to_release(pg, "1.37")["spec"]["disruptionMode"] == "Everything"


def test_an_unknown_release_is_an_error():
    with pytest.raises(ValueError, match="1.35"):
        to_release(PG_1_36, "1.35")


def test_a_1_37_cluster_accepts_what_the_conversion_writes():
    from phalanx.apiserver import build_api
    from phalanx.client import InProcessClient
    from phalanx.cluster.bootstrap import bootstrap
    from phalanx.cluster.spec import ClusterSpec
    from phalanx.machinery.featuregates import FeatureGates
    from phalanx.store import MemoryStore

    gates = FeatureGates({"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True,
                          "DynamicResourceAllocation": True, "DRAWorkloadResourceClaims": True},
                         was_defaults=False, release="1.37")
    api = build_api(MemoryStore(), gates)
    bootstrap(api, ClusterSpec(nodes=[]))
    client = InProcessClient(api)

    async def create_all() -> tuple[dict, dict]:
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        await client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                             "metadata": {"name": "high"}, "value": 100})
        # 1.37 also wants one priority configuration across a Workload's templates (1.36 did not)
        same_priority = copy.deepcopy(WL_1_36)
        for t in same_priority["spec"]["podGroupTemplates"]:
            t["priorityClassName"] = "high"
        wl = await client.create(to_release(same_priority, "1.37"), namespace="ns")
        pg = await client.create(to_release(PG_1_36, "1.37"), namespace="ns")
        return wl, pg

    wl, pg = asyncio.run(create_all())
    assert [t.get("disruptionMode") for t in wl["spec"]["podGroupTemplates"]] == [
        {"single": {}}, {"all": {}}, None]
    assert pg["spec"]["workloadRef"] == {"workloadName": "training", "templateName": "workers"}
    assert pg["spec"]["disruptionMode"] == {"all": {}}
