"""batch/v1 Job `spec.scheduling` (Kubernetes 1.37, WorkloadWithJob) through the real API: served
only on 1.37 with the gate, upstream's field paths and messages, immutable except gang.minCount."""

from __future__ import annotations

import copy

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient, VirtualClock
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore


async def client(release="1.37", **gates) -> InProcessClient:
    fg = FeatureGates({"GenericWorkload": True, **gates}, release=release)
    clock = VirtualClock()
    c = InProcessClient(build_api(MemoryStore(), fg, now=clock.datetime), clock=clock, field_manager="t")
    await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return c


def a_job(scheduling, name="train", parallelism=3):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"parallelism": parallelism, "completions": parallelism, "scheduling": scheduling,
                     "template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}


async def causes(c, obj):
    with pytest.raises(StatusError) as e:
        await c.create(obj)
    assert e.value.code == 422 and e.value.reason == "Invalid"
    return [(x["field"], x["reason"], x["message"]) for x in e.value.details["causes"]]


async def test_served_on_1_37_with_the_gate():
    c = await client(WorkloadWithJob=True)
    created = await c.create(a_job({"schedulingPolicy": {"gang": {}}}))
    assert created["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}


async def test_cleared_on_create_with_the_gate_off():
    c = await client()
    created = await c.create(a_job({"schedulingPolicy": {"gang": {"minCount": 0}}}))
    assert "scheduling" not in created["spec"]


async def test_1_36_jobs_are_untouched():
    c = await client(release="1.36", WorkloadWithJob=True)
    created = await c.create(a_job({"schedulingPolicy": {"gang": {"minCount": 0}}}))
    assert created["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 0}}}  # no 1.37 rules


@pytest.mark.parametrize("scheduling,expected", [
    ({"schedulingPolicy": {}},
     [("spec.scheduling.schedulingPolicy", "FieldValueInvalid", 'Invalid value: "": must specify one of: `basic`, `gang`')]),
    ({"schedulingPolicy": {"basic": {}, "gang": {}}},
     [("spec.scheduling.schedulingPolicy", "FieldValueInvalid",
       'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`')]),
    ({"schedulingPolicy": {"gang": {"minCount": 0}}},
     [("spec.scheduling.schedulingPolicy.gang.minCount", "FieldValueInvalid",
       "Invalid value: 0: must be greater than or equal to 1")]),
    ({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}},
     [("spec.scheduling.schedulingConstraints.topology", "FieldValueTooMany",
       "Too many: 2: must have at most 1 items")]),
    ({"schedulingConstraints": {"topology": [{"key": "-bad-"}]}}, None),
    ({"disruptionMode": {"single": {}, "all": {}}, "schedulingPolicy": {"gang": {}}},
     [("spec.scheduling.disruptionMode", "FieldValueInvalid",
       'Invalid value: "{single, all}": must specify exactly one of: `single`, `all`')]),
    ({"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]},
     [("spec.scheduling.resourceClaims", "FieldValueTooMany", "Too many: 5: must have at most 4 items")]),
    ({"resourceClaims": [{"name": "gpu"}]},
     [("spec.scheduling.resourceClaims[0]", "FieldValueInvalid",
       'Invalid value: "": must specify one of: `resourceClaimName`, `resourceClaimTemplateName`')]),
])
async def test_validation(scheduling, expected):
    got = await causes(await client(WorkloadWithJob=True), a_job(scheduling))
    if expected is None:
        assert [f for f, _, _ in got] == ["spec.scheduling.schedulingConstraints.topology[0].key"]
    else:
        assert got == expected


async def test_only_gang_min_count_and_parallelism_may_change():
    c = await client(WorkloadWithJob=True)
    await c.create(a_job({"schedulingPolicy": {"gang": {}}, "disruptionMode": {"single": {}}}))
    j = await c.get("batch/v1", "Job", "default", "train")
    j["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 2
    j["spec"]["parallelism"] = 4
    j = await c.update(j)
    assert j["spec"]["scheduling"]["schedulingPolicy"] == {"gang": {"minCount": 2}} and j["spec"]["parallelism"] == 4
    for path, value in ((("schedulingPolicy",), {"basic": {}}), (("disruptionMode",), {"all": {}})):
        bad = copy.deepcopy(j)
        bad["spec"]["scheduling"][path[0]] = value
        with pytest.raises(StatusError) as e:
            await c.update(bad)
        assert [(x["field"], x["message"]) for x in e.value.details["causes"]] == \
            [(f"spec.scheduling.{path[0]}", "Invalid value: null: field is immutable")]
    bad = copy.deepcopy(j)
    del bad["spec"]["scheduling"]
    with pytest.raises(StatusError) as e:
        await c.update(bad)
    assert e.value.details["causes"][0]["field"] == "spec.scheduling"


def test_openapi_documents_have_the_field_on_1_37_only():
    from phalanx.api import openapi, registry
    jobs = [registry.lookup("batch", "v1", "jobs")]
    doc137 = openapi.openapi_v3_document("batch", "v1", jobs, "1.37")["components"]["schemas"]
    doc136 = openapi.openapi_v3_document("batch", "v1", jobs, "1.36")["components"]["schemas"]
    assert "scheduling" in doc137["io.k8s.api.batch.v1.JobSpec"]["properties"]
    assert "io.k8s.api.scheduling.v1alpha3.WorkloadPodGroupGangSchedulingPolicy" in doc137
    assert "scheduling" not in doc136["io.k8s.api.batch.v1.JobSpec"]["properties"]
    assert openapi.document_hash("batch", "v1", jobs, "1.37") != openapi.document_hash("batch", "v1", jobs, "1.36")
