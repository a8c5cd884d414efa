"""WorkloadWithJob on Kubernetes 1.37: the names, the management modes, what `spec.scheduling`
compiles into, and the controller creating v1beta1 Workloads and PodGroups before the pods."""

from __future__ import annotations

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient
from phalanx.controllers.job.workload import compute_pod_group_name, compute_workload_name
from phalanx.controllers.podcontrol import fnv32a, safe_encode_string
from phalanx.controllers.job.workload137 import (MANAGE_BOTH, MANAGE_NONE, MANAGE_POD_GROUP_ONLY, is_new_job,
                                                 management_mode, pod_group_for_job, resolved_policy,
                                                 workload_for_job)
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates

from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.job.controller import JobController
from phalanx.nodes.kubelet import SimulatedKubelets

from ..harness import shared_factory
from .test_controller import Cluster as _Cluster136, job

V1BETA1 = "scheduling.k8s.io/v1beta1"
UID = "0b6f6f1e-8d0c-4bb8-9a0e-3f0d3a9d1c11"


def gates_1_37(**extra) -> FeatureGates:
    return FeatureGates({"GenericWorkload": True, "WorkloadWithJob": True, **extra}, release="1.37")


@pytest.fixture
def env137(make_env):
    e = make_env()
    e.api = build_api(e.store, gates_1_37(), now=e.clock.datetime)
    e.client = InProcessClient(e.api, clock=e.clock, field_manager="unit-test")
    return e


def a_job(name="train", *, annotations=None, owner=None, scheduling=None, parallelism=3, template_spec=None):
    md = {"name": name, "namespace": "default", "uid": UID}
    if annotations:
        md["annotations"] = annotations
    if owner:
        md["ownerReferences"] = [owner]
    spec = {"parallelism": parallelism, "template": {"spec": template_spec or {}}}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": spec, "status": {}}


# -- names ---------------------------------------------------------------------------------------------
def test_fnv32a_and_safe_encode_string_known_values():
    assert fnv32a(b"hello") == 0x4F9F2CAB  # the FNV-1a 32-bit test vector
    assert fnv32a(b"") == 0x811C9DC5
    # SafeEncodeString maps each character c to "bcdfghjklmnpqrstvwxz2456789"[ord(c) % 27]
    assert safe_encode_string("1335831723") == "5779d75c67"


def test_workload_name_is_the_job_name_and_the_hash_of_its_uid():
    expected_hash = safe_encode_string(str(fnv32a(f'(types.UID)"{UID}"'.encode())))
    assert compute_workload_name(a_job()) == f"train-{expected_hash}"


def test_long_names_are_truncated_to_253():
    wl = compute_workload_name(a_job("x" * 300))
    assert len(wl) == 253 and wl.startswith("x" * 242 + "-")
    pg = compute_pod_group_name(wl, "x" * 250 + "-pgt-0")
    assert len(pg) == 253


def test_pod_group_name_is_workload_template_and_their_hash():
    h = safe_encode_string(str(fnv32a(b"train-abc" + b"train-pgt-0")))
    assert compute_pod_group_name("train-abc", "train-pgt-0") == f"train-abc-train-pgt-0-{h}"


# -- modes ---------------------------------------------------------------------------------------------
OWNER = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "u1", "controller": True}
CRON = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "u2", "controller": True}


@pytest.mark.parametrize("j,mode", [
    (a_job(), MANAGE_BOTH),
    (a_job(owner=OWNER, annotations={"scheduling.k8s.io/group-template-name": "workers"}), MANAGE_POD_GROUP_ONLY),
    (a_job(owner=OWNER), MANAGE_NONE),
    (a_job(owner=CRON), MANAGE_NONE),  # upstream: any controller owner, CronJob included
    (a_job(template_spec={"schedulingGroup": {"podGroupName": "mine"}}), MANAGE_NONE),
])
def test_management_modes(j, mode):
    assert management_mode(j) == mode


def test_a_job_that_started_or_was_suspended_is_not_new():
    assert is_new_job(a_job(), False)
    assert not is_new_job(a_job(), True)
    for status in ({"startTime": "2026-01-01T00:00:00Z"}, {"succeeded": 1}, {"failed": 1},
                   {"conditions": [{"type": "Suspended", "status": "False"}]}):
        j = a_job()
        j["status"] = status
        assert not is_new_job(j, False)


# -- compiling spec.scheduling ---------------------------------------------------------------------------
@pytest.mark.parametrize("scheduling,parallelism,policy", [
    (None, 3, {"basic": {}}),
    ({}, 3, {"basic": {}}),
    ({"schedulingPolicy": {"gang": {}}}, 3, {"gang": {"minCount": 3}}),
    ({"schedulingPolicy": {"gang": {}}}, 0, {"gang": {"minCount": 1}}),
    ({"schedulingPolicy": {"gang": {"minCount": 2}}}, 5, {"gang": {"minCount": 2}}),
])
def test_policy_defaults(scheduling, parallelism, policy):
    j = a_job(scheduling=scheduling, parallelism=parallelism)
    assert resolved_policy(j) == policy
    assert "minCount" not in (((j["spec"].get("scheduling") or {}).get("schedulingPolicy") or {}).get("gang") or {}) \
        or scheduling["schedulingPolicy"]["gang"].get("minCount") == 2  # never written back


def test_workload_and_pod_group_shape():
    sched = {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": "rack"}]},
             "disruptionMode": {"all": {}}, "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}
    j = a_job(scheduling=sched)
    wl = workload_for_job(j)
    assert wl["apiVersion"] == V1BETA1 and wl["metadata"]["name"] == compute_workload_name(j)
    assert wl["metadata"]["ownerReferences"][0]["uid"] == UID and wl["metadata"]["ownerReferences"][0]["controller"]
    assert wl["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    (t,) = wl["spec"]["podGroupTemplates"]
    assert t == {"name": "train-pgt-0", "schedulingPolicy": {"gang": {"minCount": 3}},
                 "schedulingConstraints": {"topology": [{"key": "rack"}]}, "disruptionMode": {"all": {}},
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}
    wl["metadata"]["uid"] = "wl-uid"
    pg = pod_group_for_job(j, wl, t, link_workload=True)
    assert pg["metadata"]["name"] == compute_pod_group_name(wl["metadata"]["name"], "train-pgt-0")
    assert [(r["kind"], r.get("controller")) for r in pg["metadata"]["ownerReferences"]] == \
        [("Job", True), ("Workload", None)]
    assert pg["spec"] == {"workloadRef": {"workloadName": wl["metadata"]["name"], "templateName": "train-pgt-0"},
                          "schedulingPolicy": {"gang": {"minCount": 3}},
                          "schedulingConstraints": {"topology": [{"key": "rack"}]}, "disruptionMode": {"all": {}},
                          "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}


def test_delegated_pod_group_names_its_parent_composite_and_has_no_workload_owner():
    j = a_job(owner=OWNER, annotations={"scheduling.k8s.io/group-template-name": "workers",
                                        "scheduling.k8s.io/parent-compositepodgroup": "js-root"})
    wl = {"metadata": {"name": "js-wl", "uid": "w"}, "spec": {}}
    pg = pod_group_for_job(j, wl, {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}},
                           link_workload=False)
    assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job"]
    assert pg["spec"]["parentCompositePodGroupName"] == "js-root"
    assert pg["spec"]["workloadRef"] == {"workloadName": "js-wl", "templateName": "workers"}


class Cluster(_Cluster136):
    """The Job controller and kubelets on a 1.37 API; no scheduler (pods stay pending: binding
    v1beta1 gangs is the scheduler's part)."""

    def __init__(self, env, gates=None):
        env.bootstrap([NodeSpec("n1")])
        self.env = env
        self.factory = shared_factory(env)
        self.jobs = JobController(env.client, self.factory, feature_gates=gates, clock=env.clock)
        self.controllers = [self.jobs, SimulatedKubelets(env.client, self.factory, clock=env.clock)]


# -- the controller on a 1.37 API ----------------------------------------------------------------------
def gang_job(name, parallelism=3, scheduling=None, **kw):
    j = job(name, completions=parallelism, parallelism=parallelism, mode="Indexed", run_for=None, **kw)
    j["spec"]["scheduling"] = scheduling if scheduling is not None else {"schedulingPolicy": {"gang": {}}}
    return j


async def listed(env, kind):
    items, _ = await env.client.list(V1BETA1, kind, "default")
    return items


async def test_gang_job_gets_a_workload_and_pod_group_before_its_pods(env137):
    env = env137
    async with Cluster(env, gates=env.api.gates) as cl:
        created = await env.client.create(gang_job("gang"))
        assert created["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}
        assert await env.run_until(lambda: len(cl.pods("gang")) == 3, within=10)
        (wl,) = await listed(env, "Workload")
        (pg,) = await listed(env, "PodGroup")
        assert wl["metadata"]["name"] == compute_workload_name(created)
        assert wl["spec"]["podGroupTemplates"][0]["name"] == "gang-pgt-0"
        assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        assert pg["metadata"]["name"] == compute_pod_group_name(wl["metadata"]["name"], "gang-pgt-0")
        assert pg["spec"]["workloadRef"] == {"workloadName": wl["metadata"]["name"], "templateName": "gang-pgt-0"}
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in cl.pods("gang")} == {pg["metadata"]["name"]}
        stored = await env.client.get("batch/v1", "Job", "default", "gang")
        assert stored["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}  # the default is not written back
        events = await cl.events("gang")
        assert ("WorkloadCreated", f"Created Workload {wl['metadata']['name']} for Job gang") in events
        assert ("PodGroupCreated", f"Created PodGroup {pg['metadata']['name']} for Job gang") in events


async def test_job_without_scheduling_gets_a_basic_workload(env137):
    env = env137
    async with Cluster(env, gates=env.api.gates) as cl:
        await env.client.create(job("plain", completions=2, parallelism=2, run_for=None))
        assert await env.run_until(lambda: len(cl.pods("plain")) == 2, within=10)
        (wl,) = await listed(env, "Workload")
        (pg,) = await listed(env, "PodGroup")
        assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"basic": {}}
        assert pg["spec"]["schedulingPolicy"] == {"basic": {}}
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in cl.pods("plain")} == {pg["metadata"]["name"]}


async def test_scaling_a_gang_resizes_its_workload_and_pod_group(env137):
    env = env137
    async with Cluster(env, gates=env.api.gates) as cl:
        await env.client.create(gang_job("elastic"))
        assert await env.run_until(lambda: len(cl.pods("elastic")) == 3, within=10)
        j = await env.client.get("batch/v1", "Job", "default", "elastic")
        j["spec"]["parallelism"] = j["spec"]["completions"] = 5
        await env.client.update(j)

        async def min_counts():
            (wl,) = await listed(env, "Workload")
            (pg,) = await listed(env, "PodGroup")
            return (wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"],
                    pg["spec"]["schedulingPolicy"]["gang"]["minCount"])

        assert await env.run_until(lambda: len(cl.pods("elastic")) == 5, within=10)
        assert await min_counts() == (5, 5)
        j = await env.client.get("batch/v1", "Job", "default", "elastic")
        j["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 4
        await env.client.update(j)
        await env.clock.advance(5)
        assert await env.run_until(lambda: True, within=5)
        assert await min_counts() == (4, 4)


async def test_a_job_owned_by_another_controller_without_delegation_gets_nothing(env137):
    env = env137
    async with Cluster(env, gates=env.api.gates) as cl:
        j = gang_job("child", parallelism=2)
        j["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly",
                                             "uid": "u2", "controller": True}]
        await env.client.create(j)
        assert await env.run_until(lambda: len(cl.pods("child")) == 2, within=10)
        assert await listed(env, "Workload") == [] and await listed(env, "PodGroup") == []
        assert all("schedulingGroup" not in p["spec"] for p in cl.pods("child"))


async def test_delegated_job_creates_only_its_pod_group_from_the_parents_workload(env137):
    env = env137
    async with Cluster(env, gates=env.api.gates) as cl:
        await env.client.create({"apiVersion": V1BETA1, "kind": "Workload",
                                 "metadata": {"name": "js-wl", "namespace": "default"},
                                 "spec": {"controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet",
                                                            "name": "js"},
                                          "podGroupTemplates": [{"name": "workers",
                                                                 "schedulingPolicy": {"gang": {"minCount": 2}}}]}})
        j = job("js-workers-0", completions=2, parallelism=2, mode="Indexed", run_for=None)
        j["metadata"]["ownerReferences"] = [dict(OWNER)]
        j["metadata"]["annotations"] = {"scheduling.k8s.io/group-template-name": "workers"}
        await env.client.create(j)
        assert await env.run_until(lambda: len(cl.pods("js-workers-0")) == 2, within=10)
        (wl,) = await listed(env, "Workload")
        (pg,) = await listed(env, "PodGroup")
        assert wl["metadata"]["name"] == "js-wl"
        assert pg["metadata"]["name"] == compute_pod_group_name("js-wl", "workers")
        assert pg["spec"]["workloadRef"] == {"workloadName": "js-wl", "templateName": "workers"}
        assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job"]
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in cl.pods("js-workers-0")} == \
            {pg["metadata"]["name"]}


async def test_gate_off_on_1_37_creates_nothing(make_env):
    env = make_env()
    gates = FeatureGates({"GenericWorkload": True}, release="1.37")
    env.api = build_api(env.store, gates, now=env.clock.datetime)
    env.client = InProcessClient(env.api, clock=env.clock, field_manager="unit-test")
    async with Cluster(env, gates=gates) as cl:
        created = await env.client.create(gang_job("off"))
        assert "scheduling" not in created["spec"]
        assert await env.run_until(lambda: len(cl.pods("off")) == 3, within=10)
        assert await listed(env, "Workload") == []
        assert all("schedulingGroup" not in p["spec"] for p in cl.pods("off"))


async def test_a_second_workload_for_the_job_makes_new_pods_fall_back_to_default_scheduling(env137):
    env = env137
    async with Cluster(env, gates=env.api.gates) as cl:
        await env.client.create(gang_job("twice", parallelism=2))
        assert await env.run_until(lambda: len(cl.pods("twice")) == 2, within=10)
        (wl,) = await listed(env, "Workload")
        extra = {k: v for k, v in wl.items() if k in ("apiVersion", "kind", "spec")}
        extra["metadata"] = {"name": "twice-extra", "namespace": "default",
                             "ownerReferences": wl["metadata"]["ownerReferences"]}
        await env.client.create(extra)
        gone = cl.pods("twice")[0]["metadata"]["name"]
        await env.client.delete("v1", "Pod", "default", gone)
        assert await env.run_until(
            lambda: len([p for p in cl.pods("twice") if p["metadata"]["name"] != gone]) == 2, within=30)
        (replacement,) = [p for p in cl.pods("twice") if "schedulingGroup" not in p["spec"]]
        assert replacement["metadata"]["name"] != gone


class RefusingWorkloads(InProcessClient):
    """The API as a webhook that denies Workloads would make it."""

    async def create(self, obj, **kw):
        if obj.get("kind") == "Workload":
            raise StatusError(403, "Forbidden", 'workloads.scheduling.k8s.io "x" is forbidden: denied')
        return await super().create(obj, **kw)


async def test_a_refused_workload_is_reported_and_holds_the_pods_back(env137):
    env = env137
    cl = Cluster(env, gates=env.api.gates)
    refusing = RefusingWorkloads(env.api, clock=env.clock, field_manager="job-controller")
    cl.jobs = JobController(refusing, cl.factory, feature_gates=env.api.gates, clock=env.clock)
    cl.controllers[0] = cl.jobs
    async with cl:
        await env.client.create(gang_job("refused", parallelism=2))

        async def reported():
            return any(r == "FailedWorkloadCreate" for r, _ in await cl.events("refused"))

        ok = False
        for _ in range(20):
            await env.clock.advance(1)
            if await reported():
                ok = True
                break
        assert ok
        (msg,) = {m for r, m in await cl.events("refused") if r == "FailedWorkloadCreate"}
        assert msg == 'Failed to create Workload for Job refused: workloads.scheduling.k8s.io "x" is forbidden: denied'
        assert cl.pods("refused") == []
