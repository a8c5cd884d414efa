"""The ResourceClaim controller against the real API on virtual time: per-pod claims, one claim per
PodGroup (DRAWorkloadResourceClaims), reservation cleanup, and the deletion chain with the garbage
collector and the PodGroup protection controller. The scheduler's PreBind is simulated by writing
the finalizer, `status.allocation` and `status.reservedFor` as the DynamicResources plugin does."""

from __future__ import annotations

import re

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient
from phalanx.machinery.featuregates import FeatureGates
from phalanx.controllers.garbagecollector import GarbageCollector
from phalanx.controllers.podgroupprotection import PodGroupProtectionController
from phalanx.controllers.resourceclaim import ResourceClaimController

from .harness import Running, shared_factory

NS = "default"
RESOURCE = "resource.k8s.io/v1"
SCHEDULING = "scheduling.k8s.io/v1alpha2"
GENERATED = "[bcdfghjklmnpqrstvwxz2456789]{5}"
FINALIZER = "resource.kubernetes.io/delete-protection"


# -- builders -----------------------------------------------------------------------------------------

def template(name="gpu-claim-template", labels=None, annotations=None):
    meta = {}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": RESOURCE, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": NS},
            "spec": {"metadata": meta,
                     "spec": {"devices": {"requests": [{"name": "gpu",
                                                        "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}


def workload(name="training-workload"):
    return {"apiVersion": SCHEDULING, "kind": "Workload", "metadata": {"name": name, "namespace": NS},
            "spec": {"controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "training-job"},
                     "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 6}},
                                            "resourceClaims": [{"name": "shared-gpu",
                                                                "resourceClaimTemplateName": "gpu-claim-template"}]}]}}


def pod_group(name="training-workers", claims=None):
    if claims is None:
        claims = [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}]
    return {"apiVersion": SCHEDULING, "kind": "PodGroup", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 6}}, "resourceClaims": claims}}


def pod(name, group="training-workers", claim_name="shared-gpu", template_name="gpu-claim-template",
        resource_claim_name=None):
    claim = {"name": claim_name}
    if resource_claim_name:
        claim["resourceClaimName"] = resource_claim_name
    else:
        claim["resourceClaimTemplateName"] = template_name
    spec = {"terminationGracePeriodSeconds": 0, "resourceClaims": [claim],
            "containers": [{"name": "worker", "image": "busybox", "resources": {"claims": [{"name": claim_name}]}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def user_claim(name):
    return {"apiVersion": RESOURCE, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


# -- environment --------------------------------------------------------------------------------------

def use_gates(env, **gates):
    """Rebuild the env's API and client with the given feature gates (same store and clock)."""
    env.api = build_api(env.store, FeatureGates.from_config(gates), now=env.clock.datetime)
    env.client = InProcessClient(env.api, clock=env.clock, field_manager="unit-test")


class Cluster(Running):
    def __init__(self, env, gc=False, protection=False, gates=None):
        self.env = env
        self.factory = shared_factory(env)
        self.controllers = [ResourceClaimController(env.client, self.factory, gates=gates or env.api.gates,
                                                    clock=env.clock)]
        if gc:
            self.controllers.append(GarbageCollector(env.client, self.factory, clock=env.clock))
        if protection:
            self.controllers.append(PodGroupProtectionController(env.client, self.factory, clock=env.clock))

    async def __aenter__(self):
        if self.env.store.get("core/namespaces", "", NS) is None:
            await self.env.namespace(NS)
        return await super().__aenter__()

    # reads straight from the store: what a user would see with kubectl
    def claims(self):
        return self.env.store.list("resource.k8s.io/resourceclaims", NS)[0]

    def claim(self, name):
        return self.env.store.get("resource.k8s.io/resourceclaims", NS, name)

    def pod(self, name):
        return self.env.store.get("core/pods", NS, name)

    def pod_group(self, name="training-workers"):
        return self.env.store.get("scheduling.k8s.io/podgroups", NS, name)

    def events(self, reason):
        return [e for e in self.env.store.list("core/events", NS)[0] if e["reason"] == reason]

    async def run_until(self, predicate, within=60):
        return await self.env.run_until(predicate, within=within)


def pod_claim_status(p, claim_name="shared-gpu"):
    for s in (p or {}).get("status", {}).get("resourceClaimStatuses") or []:
        if s["name"] == claim_name:
            return s.get("resourceClaimName")
    return None


def group_claim_status(pg, claim_name="shared-gpu"):
    for s in (pg or {}).get("status", {}).get("resourceClaimStatuses") or []:
        if s["name"] == claim_name:
            return s.get("resourceClaimName")
    return None


def owned_by(claim, kind, name):
    refs = claim["metadata"].get("ownerReferences") or []
    return len(refs) == 1 and refs[0]["kind"] == kind and refs[0]["name"] == name


async def allocate(env, claim_name, consumer):
    """What the scheduler's PreBind writes: finalizer, then allocation + reservedFor on /status."""
    claim = await env.client.get(RESOURCE, "ResourceClaim", NS, claim_name)
    claim["metadata"].setdefault("finalizers", []).append(FINALIZER)
    claim = await env.client.update(claim)
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "worker-1",
                                                "device": "gpu-0"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]}},
        "reservedFor": [consumer],
    }
    return await env.client.update_status(claim)


async def reserve_also(env, claim_name, consumer):
    claim = await env.client.get(RESOURCE, "ResourceClaim", NS, claim_name)
    claim["status"]["reservedFor"].append(consumer)
    return await env.client.update_status(claim)


def pod_ref(p):
    return {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}


def group_ref(pg):
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": pg["metadata"]["name"],
            "uid": pg["metadata"]["uid"]}


async def set_phase(env, name, phase):
    p = await env.client.get("v1", "Pod", NS, name)
    p["status"]["phase"] = phase
    return await env.client.update_status(p)


# -- the tutorial ---------------------------------------------------------------------------------------

async def test_tutorial_one_claim_owned_by_the_pod_group_and_shared_by_six_pods(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template(labels={"team": "ml"}, annotations={"note": "from-template"}))
        await c.create(workload())
        pg = await c.create(pod_group())

        assert await cl.run_until(lambda: group_claim_status(cl.pod_group()) is not None)
        claims = cl.claims()
        assert len(claims) == 1
        claim = claims[0]
        name = claim["metadata"]["name"]
        assert re.fullmatch(f"training-workers-shared-gpu-{GENERATED}", name)
        assert group_claim_status(cl.pod_group()) == name
        assert claim["metadata"]["ownerReferences"] == [
            {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "name": "training-workers",
             "uid": pg["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        assert claim["metadata"]["annotations"] == {"note": "from-template",
                                                    "resource.kubernetes.io/pod-claim-name": "shared-gpu"}
        assert claim["metadata"]["labels"] == {"team": "ml"}
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"

        names = [f"training-job-workers-{j}-{i}" for j in range(3) for i in range(2)]
        for n in names:
            await c.create(pod(n))
        assert await cl.run_until(lambda: all(pod_claim_status(cl.pod(n)) == name for n in names))
        await env.clock.advance(30)
        assert [cl["metadata"]["name"] for cl in cl.claims()] == [name]  # no per-pod claims
        managers = {m["manager"] for m in cl.pod(names[0])["metadata"]["managedFields"]
                    if m.get("subresource") == "status"}
        assert "ResourceClaimController" in managers
        assert cl.pod_group()["status"]["resourceClaimStatuses"] == [{"name": "shared-gpu", "resourceClaimName": name}]


async def test_pods_created_before_the_pod_group_wait_for_its_claim(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        for n in ("a", "b"):
            await c.create(pod(n))
        await env.clock.advance(30)
        assert cl.claims() == []  # no per-pod claims while the PodGroup is unknown
        await c.create(workload())
        await c.create(pod_group())
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("a")) and pod_claim_status(cl.pod("b")))
        assert len(cl.claims()) == 1
        assert pod_claim_status(cl.pod("a")) == cl.claims()[0]["metadata"]["name"]


@pytest.mark.parametrize("claim_name, template_name, why", [
    ("other-gpu", "gpu-claim-template", "same template, other claim name"),
    ("shared-gpu", "other-template", "same claim name, other template"),
])
async def test_a_pod_claim_that_does_not_match_gets_its_own_claim(env, claim_name, template_name, why):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        await c.create(template("other-template"))
        await c.create(workload())
        await c.create(pod_group())
        assert await cl.run_until(lambda: group_claim_status(cl.pod_group()) is not None)
        shared = group_claim_status(cl.pod_group())
        await c.create(pod("matching"))
        p = await c.create(pod("odd", claim_name=claim_name, template_name=template_name))
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("odd"), claim_name) is not None
                                  and pod_claim_status(cl.pod("matching")) is not None), why
        own = pod_claim_status(cl.pod("odd"), claim_name)
        assert own != shared and pod_claim_status(cl.pod("matching")) == shared
        assert re.fullmatch(f"odd-{claim_name}-{GENERATED}", own)
        claim = cl.claim(own)
        assert claim["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "odd", "uid": p["metadata"]["uid"], "controller": True,
             "blockOwnerDeletion": True}]
        assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == claim_name
        assert len(cl.claims()) == 2


async def test_gate_off_every_pod_gets_its_own_claim(env):
    use_gates(env, DRAWorkloadResourceClaims=False)
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        await c.create(workload())
        pg = await c.create(pod_group())
        assert "resourceClaims" not in pg["spec"]  # dropped by the API server
        names = [f"training-job-workers-{j}-{i}" for j in range(3) for i in range(2)]
        for n in names:
            await c.create(pod(n))
        assert await cl.run_until(lambda: all(pod_claim_status(cl.pod(n)) for n in names))
        claims = {cl_["metadata"]["name"]: cl_ for cl_ in cl.claims()}
        assert len(claims) == 6
        for n in names:
            own = pod_claim_status(cl.pod(n))
            assert re.fullmatch(f"{n}-shared-gpu-{GENERATED}", own)
            assert owned_by(claims[own], "Pod", n)
        assert not (cl.pod_group().get("status") or {}).get("resourceClaimStatuses")


async def test_a_claim_with_a_long_pod_name_is_cut_in_proportion(env):
    async with Cluster(env) as cl:
        await env.client.create(template())
        long_name = "a-very-long-pod-name-created-by-some-workload-controller-x7"
        await env.client.create(pod(long_name, group=None, claim_name="a-long-claim-name"))
        assert await cl.run_until(lambda: pod_claim_status(cl.pod(long_name), "a-long-claim-name"))
        own = pod_claim_status(cl.pod(long_name), "a-long-claim-name")
        base = len(long_name) + len("a-long-claim-name") + 2
        prefix = long_name[:len(long_name) * 57 // base] + "-" + "a-long-claim-name"[:17 * 57 // base]
        assert re.fullmatch(re.escape(prefix) + GENERATED, own) and len(own) <= 63


# -- templates that appear late --------------------------------------------------------------------

async def test_template_created_after_the_pod_group(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(workload())
        await c.create(pod_group())
        await env.clock.advance(600)  # long enough for the retry backoff to grow past minutes
        assert cl.claims() == []
        assert not (cl.pod_group().get("status") or {}).get("resourceClaimStatuses")
        [event] = cl.events("FailedResourceClaimCreation")
        assert event["involvedObject"]["kind"] == "PodGroup" and event["count"] > 1
        assert event["message"] == ('PodGroupResourceClaim shared-gpu: resource claim template "gpu-claim-template": '
                                    'resourceclaimtemplate.resource.k8s.io "gpu-claim-template" not found')
        await c.create(template())
        # The template's arrival requeues the PodGroup at once, not at the next backoff retry.
        assert await cl.run_until(lambda: group_claim_status(cl.pod_group()) is not None, within=1)
        assert len(cl.claims()) == 1


async def test_missing_template_is_an_event_on_the_pod_and_a_retry(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(pod("solo", group=None, claim_name="gpu", template_name="late-template"))
        assert await cl.run_until(lambda: cl.events("FailedResourceClaimCreation"))
        event = cl.events("FailedResourceClaimCreation")[0]
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "solo"
        assert event["source"]["component"] == "resource_claim"
        assert event["message"] == ('PodResourceClaim gpu: resource claim template "late-template": '
                                    'resourceclaimtemplate.resource.k8s.io "late-template" not found')
        await env.clock.advance(600)
        assert cl.claims() == []
        await c.create(template("late-template"))
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("solo"), "gpu") is not None, within=1)
        assert re.fullmatch(f"solo-gpu-{GENERATED}", pod_claim_status(cl.pod("solo"), "gpu"))


async def test_an_orphan_claim_from_a_failed_status_write_is_reused(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        # Stop the controller first so it cannot race the "orphan" into existence itself.
        for ctl in cl.controllers:
            await ctl.stop()
        p = await c.create(pod("solo", group=None))
        orphan = user_claim("solo-shared-gpu-zzzzz")
        orphan["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "shared-gpu"}
        orphan["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "solo",
                                                  "uid": p["metadata"]["uid"], "controller": True,
                                                  "blockOwnerDeletion": True}]
        await c.create(orphan)
        ctl = ResourceClaimController(env.client, shared_factory(env),
                                      gates=env.api.gates, clock=env.clock)
        ctl.start()
        try:
            assert await cl.run_until(lambda: pod_claim_status(cl.pod("solo")) is not None)
            assert pod_claim_status(cl.pod("solo")) == "solo-shared-gpu-zzzzz"
            assert len(cl.claims()) == 1
        finally:
            await ctl.stop()
            await ctl.factory.stop()


# -- reservation cleanup ---------------------------------------------------------------------------

async def test_a_finished_pods_generated_claim_is_unreserved_deallocated_and_deleted(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        p = await c.create(pod("solo", group=None))
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("solo")) is not None)
        name = pod_claim_status(cl.pod("solo"))
        await allocate(env, name, pod_ref(p))
        await c.bind(NS, "solo", "worker-1")
        await set_phase(env, "solo", "Running")
        await env.clock.advance(10)
        assert cl.claim(name)["status"]["reservedFor"] == [pod_ref(p)]
        await set_phase(env, "solo", "Succeeded")
        assert await cl.run_until(lambda: cl.claim(name) is None)
        # the finished pod stays (a Job keeps it); its claim is not created again
        await env.clock.advance(60)
        assert cl.claims() == [] and pod_claim_status(cl.pod("solo")) == name


async def test_reservations_of_gone_pods_are_removed_from_a_shared_user_claim(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(user_claim("shared"))
        p1 = await c.create(pod("p1", group=None, resource_claim_name="shared"))
        p2 = await c.create(pod("p2", group=None, resource_claim_name="shared"))
        await allocate(env, "shared", pod_ref(p1))
        await reserve_also(env, "shared", pod_ref(p2))
        await env.clock.advance(10)
        assert len(cl.claim("shared")["status"]["reservedFor"]) == 2
        assert pod_claim_status(cl.pod("p1")) is None  # no status entry for a claim the user made

        await c.delete("v1", "Pod", NS, "p1", grace_period=0)
        assert await cl.run_until(lambda: cl.claim("shared")["status"].get("reservedFor") == [pod_ref(p2)])
        assert cl.claim("shared")["status"]["allocation"] is not None

        await c.delete("v1", "Pod", NS, "p2", grace_period=0)
        assert await cl.run_until(lambda: FINALIZER not in (cl.claim("shared")["metadata"].get("finalizers") or []))
        claim = cl.claim("shared")
        assert not claim["status"].get("reservedFor")
        assert claim["status"].get("allocation") is None
        assert claim["metadata"]["name"] == "shared"  # a user's claim is deallocated, never deleted


async def test_a_reservation_for_a_pod_deleted_before_it_was_scheduled_is_removed(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(user_claim("shared"))
        p1 = await c.create(pod("p1", group=None, resource_claim_name="shared"))
        ghost = pod_ref(p1) | {"name": "never-existed", "uid": "ghost-uid"}
        await allocate(env, "shared", pod_ref(p1))
        await reserve_also(env, "shared", ghost)
        # The entry for a pod the API does not know is dropped; the live pod's entry stays.
        assert await cl.run_until(lambda: cl.claim("shared")["status"].get("reservedFor") == [pod_ref(p1)])


async def test_a_scheduled_pod_gets_its_allocated_claim_reserved(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(user_claim("shared"))
        p1 = await c.create(pod("p1", group=None, resource_claim_name="shared"))
        p2 = await c.create(pod("p2", group=None, resource_claim_name="shared"))
        await allocate(env, "shared", pod_ref(p1))
        await c.bind(NS, "p2", "worker-1")  # bound by something that knows no DRA
        assert await cl.run_until(lambda: len(cl.claim("shared")["status"].get("reservedFor") or []) == 2)
        assert pod_ref(p2) in cl.claim("shared")["status"]["reservedFor"]


# -- PodGroup reservations and the deletion chain ----------------------------------------------------

async def test_pod_group_reservation_persists_without_pods_and_goes_with_the_pod_group(env):
    async with Cluster(env, gc=True, protection=True) as cl:
        c = env.client
        await c.create(template())
        await c.create(workload())
        pg = await c.create(pod_group())
        names = [f"w-{i}" for i in range(3)]
        for n in names:
            await c.create(pod(n))
        assert await cl.run_until(lambda: all(pod_claim_status(cl.pod(n)) for n in names))
        name = group_claim_status(cl.pod_group())
        await allocate(env, name, group_ref(pg))
        for n in names:
            await c.bind(NS, n, "worker-1")
            await set_phase(env, n, "Running")
        await env.clock.advance(10)
        assert cl.claim(name)["status"]["reservedFor"] == [group_ref(pg)]  # one entry for the whole group

        # Watch the claim from here on to see the order of what happens to it.
        seen = []
        stream = c.watch(RESOURCE, "ResourceClaim", NS, resource_version=cl.claim(name)["metadata"]["resourceVersion"])

        # Deleting the PodGroup while its pods run leaves it terminating.
        await c.delete(SCHEDULING, "PodGroup", NS, "training-workers")
        await env.clock.advance(30)
        assert cl.pod_group()["metadata"].get("deletionTimestamp")
        assert cl.claim(name)["status"]["reservedFor"] == [group_ref(pg)]

        for n in names:
            await c.delete("v1", "Pod", NS, n, grace_period=0)
        # The pods are gone; the PodGroup's protection goes with them, then the PodGroup, then the claim.
        assert await cl.run_until(lambda: cl.claim(name) is None)
        assert cl.pod_group() is None

        async for type_, obj in stream:
            seen.append((type_, obj))
            if type_ == "DELETED":
                break
        await stream.aclose()
        states = [(t, bool(o["status"].get("reservedFor")), o["status"].get("allocation") is not None,
                   FINALIZER in (o["metadata"].get("finalizers") or [])) for t, o in seen]
        unreserved = next(i for i, s in enumerate(states) if not s[1])
        assert not states[unreserved][2], "unreserved and deallocated in one /status write"
        assert states[unreserved][3], "the finalizer goes after the allocation"
        assert any(not s[3] for s in states[unreserved:]) and states[-1][0] == "DELETED"


async def test_pod_group_reservation_survives_its_pods(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        await c.create(workload())
        pg = await c.create(pod_group())
        await c.create(pod("w-0"))
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("w-0")))
        name = group_claim_status(cl.pod_group())
        await allocate(env, name, group_ref(pg))
        await c.delete("v1", "Pod", NS, "w-0", grace_period=0)
        await env.clock.advance(60)
        claim = cl.claim(name)
        assert claim["status"]["reservedFor"] == [group_ref(pg)] and claim["status"]["allocation"] is not None


async def test_a_user_claim_of_a_deleted_pod_group_is_deallocated_but_kept(env):
    async with Cluster(env, gc=True, protection=True) as cl:
        c = env.client
        await c.create(user_claim("team-gpu"))
        await c.create(workload())
        pg = await c.create(pod_group(claims=[{"name": "shared-gpu", "resourceClaimName": "team-gpu"}]))
        await allocate(env, "team-gpu", group_ref(pg))
        await env.clock.advance(10)
        assert not (cl.pod_group().get("status") or {}).get("resourceClaimStatuses")  # nothing was generated
        await c.delete(SCHEDULING, "PodGroup", NS, "training-workers")
        assert await cl.run_until(lambda: cl.pod_group() is None)
        assert await cl.run_until(lambda: FINALIZER not in (cl.claim("team-gpu")["metadata"].get("finalizers") or []))
        claim = cl.claim("team-gpu")
        assert not claim["status"].get("reservedFor") and claim["status"].get("allocation") is None
        await env.clock.advance(60)
        assert cl.claim("team-gpu") is not None


async def test_a_reservation_for_a_replaced_pod_group_is_removed(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(user_claim("team-gpu"))
        await c.create(workload())
        pg = await c.create(pod_group(claims=[]))
        await allocate(env, "team-gpu", group_ref(pg) | {"uid": "uid-of-an-earlier-podgroup"})
        assert await cl.run_until(lambda: not cl.claim("team-gpu")["status"].get("reservedFor"))
        assert cl.claim("team-gpu")["status"].get("allocation") is None


async def test_gate_off_leaves_pod_group_reservations_alone(env):
    use_gates(env, DRAWorkloadResourceClaims=False)
    async with Cluster(env) as cl:
        c = env.client
        await c.create(user_claim("team-gpu"))
        stale = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "gone", "uid": "gone-uid"}
        await allocate(env, "team-gpu", stale)
        await env.clock.advance(60)
        assert cl.claim("team-gpu")["status"]["reservedFor"] == [stale]


# -- Kubernetes 1.37 -----------------------------------------------------------------------------------

def v1beta1(obj):
    """The same object as Kubernetes 1.37 spells it (`v1beta1`; the PodGroup has no template ref here)."""
    return dict(obj, apiVersion="scheduling.k8s.io/v1beta1")


def use_release_137(env, **gates):
    env.api = build_api(env.store, FeatureGates.from_config(gates, release="1.37"), now=env.clock.datetime,
                        release="1.37")
    env.client = InProcessClient(env.api, clock=env.clock, field_manager="unit-test")


async def test_1_37_one_claim_owned_by_the_v1beta1_pod_group(env):
    use_release_137(env, DRAWorkloadResourceClaims=True)
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        await c.create(v1beta1(pod_group()))
        names = [f"w-{i}" for i in range(3)]
        for n in names:
            await c.create(pod(n))
        assert await cl.run_until(lambda: all(pod_claim_status(cl.pod(n)) for n in names))
        [claim] = cl.claims()
        assert {pod_claim_status(cl.pod(n)) for n in names} == {claim["metadata"]["name"]}
        [ref] = claim["metadata"]["ownerReferences"]
        assert (ref["apiVersion"], ref["kind"], ref["name"]) == \
            ("scheduling.k8s.io/v1beta1", "PodGroup", "training-workers")
        assert group_claim_status(cl.pod_group()) == claim["metadata"]["name"]


async def test_1_37_gate_off_a_pod_claim_matching_its_pod_group_gets_no_claim(env):
    """KEP-5729 in 1.37: with DRAWorkloadResourceClaims off in the controller (a PodGroup written
    while it was on), the pods' claims that match the PodGroup's fail closed; 1.36 made one each."""
    use_release_137(env, DRAWorkloadResourceClaims=True)
    c = env.client
    await env.namespace(NS)
    await c.create(template())
    await c.create(v1beta1(pod_group()))
    await c.create(pod("matching"))
    await c.create(pod("other-name", claim_name="own-gpu"))  # not the PodGroup's claim: a claim of its own
    await c.create(pod("waiting", group="not-there-yet"))  # its PodGroup may bring the claim: wait
    gates_off = FeatureGates.from_config({"DRAWorkloadResourceClaims": False}, release="1.37")
    async with Cluster(env, gates=gates_off) as cl:
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("other-name"), "own-gpu"))
        await env.run_until(lambda: False, within=5)  # let the controller do whatever else it would
        owners = sorted(cl_["metadata"]["ownerReferences"][0]["name"] for cl_ in cl.claims())
        assert owners == ["other-name"]
        assert pod_claim_status(cl.pod("matching")) is None
        assert pod_claim_status(cl.pod("waiting")) is None
        assert not (cl.pod_group().get("status") or {}).get("resourceClaimStatuses")


# -- the status write ------------------------------------------------------------------------------

async def test_the_claim_status_is_written_by_the_controllers_field_manager_on_status(env):
    async with Cluster(env) as cl:
        c = env.client
        await c.create(template())
        await c.create(pod("solo", group=None))
        assert await cl.run_until(lambda: pod_claim_status(cl.pod("solo")) is not None)
        stored = await c.get("v1", "Pod", NS, "solo")
        entry = next(m for m in stored["metadata"]["managedFields"] if m["manager"] == "ResourceClaimController")
        assert entry["subresource"] == "status" and entry["operation"] == "Apply"
        assert entry["fieldsV1"]["f:status"]["f:resourceClaimStatuses"]['k:{"name":"shared-gpu"}'] == \
            {".": {}, "f:name": {}, "f:resourceClaimName": {}}
        assert stored["status"]["resourceClaimStatuses"] == [
            {"name": "shared-gpu", "resourceClaimName": pod_claim_status(stored)}]


async def test_a_claim_status_applied_over_a_stale_copy_keeps_what_changed_meanwhile(env):
    ctl = ResourceClaimController(env.client, shared_factory(env), gates=env.api.gates, clock=env.clock)
    c = env.client
    env.bootstrap([])
    stale = await c.create(pod("solo", group=None))
    fresh = await c.get("v1", "Pod", NS, "solo")
    fresh["metadata"]["labels"] = {"changed": "meanwhile"}
    await c.update(fresh)
    await ctl._apply_claim_statuses("v1", "Pod", stale, {"shared-gpu": "solo-shared-gpu-abcde"})
    stored = await c.get("v1", "Pod", NS, "solo")
    assert stored["status"]["resourceClaimStatuses"] == [{"name": "shared-gpu", "resourceClaimName": "solo-shared-gpu-abcde"}]
    assert stored["metadata"]["labels"] == {"changed": "meanwhile"}
    rv = stored["metadata"]["resourceVersion"]
    # nothing to change: nothing written
    await ctl._apply_claim_statuses("v1", "Pod", stored, {"shared-gpu": "solo-shared-gpu-abcde"})
    assert (await c.get("v1", "Pod", NS, "solo"))["metadata"]["resourceVersion"] == rv
    await ctl.factory.stop()
