"""A JobArrival as API objects: what each job becomes, accepted as written by a 1.36 and a 1.37 API."""

from __future__ import annotations

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient, VirtualClock
from phalanx.machinery.featuregates import FeatureGates
from phalanx.simulate.jobs import JobArrival
from phalanx.simulate.objects import ObjectBuilder, is_grouped, job_name, level_key, topology_levels
from phalanx.store import MemoryStore

GATES = {"1.36": {"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True,
                  "DRAWorkloadResourceClaims": True},
         "1.37": {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "DRAWorkloadResourceClaims": True}}
RUNTIME = {"1.36": {"api/alpha": "true"},
           "1.37": {"scheduling.k8s.io/v1beta1": "true", "scheduling.k8s.io/v1alpha3": "true"}}


def builder(release: str) -> ObjectBuilder:
    return ObjectBuilder(release=release, topology_keys={"rack": "example.com/rack"},
                         tolerations=[{"key": "example.com/gpu", "operator": "Exists"}])


GANG = JobArrival(name="train-1", arrival=0, duration=5400, pods=8, gpus_per_pod=2, topology="rack",
                  shared_claim=False, priority=100)


def test_gang_job_objects():
    b = builder("1.36")
    job = b.job_object(GANG, "train-1")
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["completionMode"], spec["ttlSecondsAfterFinished"]) == \
        (8, 8, "Indexed", 0)
    pod = spec["template"]
    assert pod["metadata"]["annotations"] == {"phalanx.dev/run-for": "5400.000s"}
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "train-1"}
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "gpus-2"}]
    assert pod["spec"]["tolerations"] == [{"key": "example.com/gpu", "operator": "Exists"}]
    assert pod["spec"]["priorityClassName"] == "sim-priority-100"
    workload, group = b.group_objects(GANG, "train-1", {**job, "metadata": {**job["metadata"], "uid": "u1"}})
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 8}}
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": "example.com/rack"}]}
    assert group["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert workload["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train-1"}


def test_shared_claim_is_the_pod_groups():
    a = JobArrival(name="dev", arrival=0, pods=3, gpus_per_pod=1, shared_claim=True)
    group = builder("1.36").group_objects(a, "dev", {"apiVersion": "batch/v1", "kind": "Job",
                                                     "metadata": {"name": "dev", "uid": "u"}})[1]
    assert group["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "gpus-1"}]


def test_single_pod_without_constraint_has_no_group():
    a = JobArrival(name="solo", arrival=0, gpus_per_pod=1)
    assert not is_grouped(a)
    assert "schedulingGroup" not in builder("1.36").job_object(a, "solo")["spec"]["template"]["spec"]
    job = builder("1.36").job_object(JobArrival(name="forever", arrival=0), "forever")
    assert "annotations" not in job["spec"]["template"]["metadata"]  # runs until the scenario ends


@pytest.mark.parametrize("release", ["1.36", "1.37"])
@pytest.mark.parametrize("kind", ["Job", "JobSet"])
async def test_the_api_accepts_them(release, kind):
    clock = VirtualClock()
    api = build_api(MemoryStore(), FeatureGates.from_config(GATES[release], release), runtime_config=RUNTIME[release],
                    release=release, now=clock.datetime)
    client = InProcessClient(api, clock=clock)
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    b = builder(release)
    a = JobArrival(name="t", arrival=0, duration=60, pods=4, gpus_per_pod=1, topology="rack", shared_claim=True,
                   priority=5, kind=kind)
    for obj in b.shared_objects(a):
        await client.create(obj)
    job = await client.create(b.job_object(a, "t"))
    workload, group = [await client.create(o) for o in b.group_objects(a, "t", job)]
    assert group["apiVersion"] == ("scheduling.k8s.io/v1alpha2" if release == "1.36" else "scheduling.k8s.io/v1beta1")
    ref = group["spec"].get("podGroupTemplateRef", {}).get("workload") or group["spec"]["workloadRef"]
    assert ref["workloadName"] == "t"
    assert group["spec"]["priority"] == 5  # from the PriorityClass, by admission


def test_names_and_levels():
    assert job_name("Alibaba/J_17.x") == "alibaba-j-17-x"
    assert len(job_name("a" * 80)) == 52
    keys = ["topology.kubernetes.io/zone", "example.com/rack", "example.com/block", "kubernetes.io/hostname"]
    assert level_key("rack", keys) == "example.com/rack"
    assert level_key("example.com/rack", keys) == "example.com/rack"
    assert level_key("row", keys) is None
    assert topology_levels(keys) == {"zone": "topology.kubernetes.io/zone", "block": "example.com/block",
                                     "rack": "example.com/rack"}
