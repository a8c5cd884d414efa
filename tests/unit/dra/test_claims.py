"""phalanx.dra.claims: claim names, the PodGroup matching rule, ownership and reservation checks,
with upstream's messages."""

from __future__ import annotations

import pytest

from phalanx.dra import claims as c


def pod(name="p", ns="ns", uid="pod-uid", group=None, claims=(), statuses=None):
    spec: dict = {"resourceClaims": list(claims)}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": uid}, "spec": spec,
           "status": {}}
    if statuses is not None:
        obj["status"]["resourceClaimStatuses"] = statuses
    return obj


def pod_group(name="pg", ns="ns", uid="pg-uid", claims=(), statuses=None):
    obj = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
           "metadata": {"name": name, "namespace": ns, "uid": uid}, "spec": {"resourceClaims": list(claims)},
           "status": {}}
    if statuses is not None:
        obj["status"]["resourceClaimStatuses"] = statuses
    return obj


def claim(name="claim", ns="ns", owner=None, reserved=()):
    md: dict = {"name": name, "namespace": ns, "uid": "claim-uid"}
    if owner is not None:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": md, "spec": {},
            "status": {"reservedFor": list(reserved)} if reserved else {}}


def owner_ref(obj, controller=True):
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": controller}


TEMPLATE_CLAIM = {"name": "gpu", "resourceClaimTemplateName": "tmpl"}
NAMED_CLAIM = {"name": "gpu", "resourceClaimName": "existing"}
EMPTY_CLAIM = {"name": "gpu"}


@pytest.mark.parametrize("the_pod, pod_claim, name, check, error", [
    (pod(), NAMED_CLAIM, "existing", False, None),
    (pod(statuses=[{"name": "gpu", "resourceClaimName": "p-gpu-x7k2z"}]), TEMPLATE_CLAIM, "p-gpu-x7k2z", True, None),
    (pod(statuses=[{"name": "gpu"}]), TEMPLATE_CLAIM, None, True, None),
    (pod(statuses=[{"name": "other", "resourceClaimName": "o"}]), TEMPLATE_CLAIM, None, False,
     (c.ClaimNotCreated, 'pod "ns/p": ResourceClaim not created yet')),
    (pod(), EMPTY_CLAIM, None, False,
     (c.APIUnsupported, 'pod "ns/p", spec.resourceClaim "gpu": none of the supported fields are set')),
])
def test_claim_name(the_pod, pod_claim, name, check, error):
    got_name, got_check, err = c.claim_name(the_pod, pod_claim)
    assert (got_name, got_check) == (name, check)
    if error is None:
        assert err is None
    else:
        assert isinstance(err, error[0]) and str(err) == error[1]


@pytest.mark.parametrize("group, group_claim, name, check, message", [
    (pod_group(), NAMED_CLAIM, "existing", False, None),
    (pod_group(statuses=[{"name": "gpu", "resourceClaimName": "pg-gpu-abcde"}]), TEMPLATE_CLAIM, "pg-gpu-abcde",
     True, None),
    (pod_group(statuses=[{"name": "x", "resourceClaimName": "y"}]), TEMPLATE_CLAIM, None, False,
     "PodGroup ns/pg: ResourceClaim not created yet"),
    (pod_group(), EMPTY_CLAIM, None, False,
     "PodGroup ns/pg, spec.resourceClaim gpu: none of the supported fields are set"),
])
def test_name_from_pod_group(group, group_claim, name, check, message):
    got_name, got_check, err = c.name_from_pod_group(group, group_claim)
    assert (got_name, got_check) == (name, check)
    assert (str(err) if err else None) == message


@pytest.mark.parametrize("owner, claim_name, expected", [
    ("training-workers", "shared-gpu", "training-workers-shared-gpu-"),
    ("p", "c", "p-c-"),
    # 56 characters with the dashes: still the plain form.
    ("a" * 30, "b" * 24, "a" * 30 + "-" + "b" * 24 + "-"),
    # Longer than 57: both parts cut in proportion, one dash, no trailing dash.
    ("a" * 60, "b" * 20, "a" * (60 * 57 // 82) + "-" + "b" * (20 * 57 // 82)),
    ("my-very-long-statefulset-name-with-a-suffix-0", "a-rather-long-claim-name",
     # 71 characters: 45 * 57 // 71 = 36 and 24 * 57 // 71 = 19 characters are kept.
     "my-very-long-statefulset-name-with-a-a-rather-long-claim"),
])
def test_generated_claim_name_prefix(owner, claim_name, expected):
    got = c.generated_claim_name_prefix(owner, claim_name)
    assert got == expected
    assert len(got) <= 58


def test_generated_prefix_leaves_room_for_five_random_characters():
    for owner_len in range(1, 120, 7):
        for claim_len in range(1, 64, 5):
            assert len(c.generated_claim_name_prefix("o" * owner_len, "c" * claim_len)) + 5 <= 63


GROUPED = pod(group="pg", claims=[TEMPLATE_CLAIM])


@pytest.mark.parametrize("the_pod, group, pod_claim, enabled, matches", [
    (GROUPED, pod_group(claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM, True, True),
    (GROUPED, pod_group(claims=[NAMED_CLAIM]), NAMED_CLAIM, True, True),
    # The gate is off: never the PodGroup's.
    (GROUPED, pod_group(claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM, False, False),
    (GROUPED, None, TEMPLATE_CLAIM, True, False),
    # Same template, other claim name / same name, other template / template vs claim name.
    (GROUPED, pod_group(claims=[{"name": "other", "resourceClaimTemplateName": "tmpl"}]), TEMPLATE_CLAIM, True,
     False),
    (GROUPED, pod_group(claims=[{"name": "gpu", "resourceClaimTemplateName": "other"}]), TEMPLATE_CLAIM, True,
     False),
    (GROUPED, pod_group(claims=[{"name": "gpu", "resourceClaimName": "tmpl"}]), TEMPLATE_CLAIM, True, False),
    # The pod is in another PodGroup, in none, or the PodGroup lives in another namespace.
    (pod(group="other"), pod_group(claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM, True, False),
    (pod(), pod_group(claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM, True, False),
    (GROUPED, pod_group(ns="elsewhere", claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM, True, False),
])
def test_matching_pod_group_claim(the_pod, group, pod_claim, enabled, matches):
    got = c.matching_pod_group_claim(the_pod, group, pod_claim, workload_claims_enabled=enabled)
    assert (got is not None) == matches
    if matches:
        assert got["name"] == pod_claim["name"]


POD_REF = {"resource": "pods", "name": "p", "uid": "pod-uid"}
GROUP_REF = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "pg", "uid": "pg-uid"}


@pytest.mark.parametrize("the_pod, group, pod_claim, expected, message", [
    (GROUPED, None, TEMPLATE_CLAIM, POD_REF, None),
    (GROUPED, pod_group(claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM, GROUP_REF, None),
    (GROUPED, pod_group(claims=[NAMED_CLAIM]), TEMPLATE_CLAIM, POD_REF, None),
    (GROUPED, pod_group(claims=[{"name": "not-gpu", "resourceClaimTemplateName": "tmpl"},
                                TEMPLATE_CLAIM]), TEMPLATE_CLAIM, GROUP_REF, None),
    (GROUPED, None, EMPTY_CLAIM, None, "Pod ns/p claim gpu: none of the supported fields are set"),
    (GROUPED, pod_group(name="not-pg"), TEMPLATE_CLAIM, None,
     "Pod ns/p belongs to PodGroup ns/pg, not PodGroup ns/not-pg"),
    (GROUPED, pod_group(ns="not-ns"), TEMPLATE_CLAIM, None,
     "Pod ns/p belongs to PodGroup ns/pg, not PodGroup not-ns/pg"),
    (pod(), pod_group(), TEMPLATE_CLAIM, None, "Pod ns/p does not belong to a PodGroup"),
])
def test_consumer_reference(the_pod, group, pod_claim, expected, message):
    ref, err = c.consumer_reference(the_pod, group, pod_claim)
    assert ref == expected
    assert (str(err) if err else None) == message
    if ref is not None and ref["resource"] == "pods":
        assert "apiGroup" not in ref  # the core group's "" is omitted, as upstream's JSON omits it


def test_consumer_reference_with_the_gate_off_is_always_the_pod():
    ref, err = c.consumer_reference(GROUPED, pod_group(claims=[TEMPLATE_CLAIM]), TEMPLATE_CLAIM,
                                    workload_claims_enabled=False)
    assert (ref, err) == (POD_REF, None)


OWNER_POD = pod(name="podOwner", ns="kube-system", uid="1")
OTHER_POD = pod(name="podNotOwner", ns="kube-system", uid="2")
OWNER_GROUP = pod_group(name="podGroupOwner", ns="kube-system", uid="3")


def grouped(p, group_name):
    p = {**p, "spec": {**p["spec"], "schedulingGroup": {"podGroupName": group_name}}}
    return p


@pytest.mark.parametrize("the_pod, the_claim, accept, message", [
    (OWNER_POD, claim("claimWithOwner", "kube-system", owner_ref(OWNER_POD)), False, None),
    (OTHER_POD, claim("claimWithOwner", "kube-system", owner_ref(OWNER_POD)), False,
     "ResourceClaim kube-system/claimWithOwner was not created for Pod kube-system/podNotOwner (Pod is not owner)"),
    (OWNER_POD, claim("claimNoOwner", "kube-system"), False,
     "ResourceClaim kube-system/claimNoOwner was not created for Pod kube-system/podOwner (Pod is not owner)"),
    (OWNER_POD, claim("userClaimWithOwner", "user-namespace", owner_ref(OWNER_POD)), False,
     "ResourceClaim user-namespace/userClaimWithOwner is not in the same namespace as Pod kube-system/podOwner"),
    (grouped(OWNER_POD, "podGroupOwner"), claim("c", "kube-system", owner_ref(OWNER_GROUP)), True, None),
    (grouped(OWNER_POD, "podGroupOwner"),
     claim("c", "kube-system", {**owner_ref(OWNER_GROUP), "apiVersion": "scheduling.k8s.io/v25"}), True, None),
    # Not accepted with the gate off.
    (grouped(OWNER_POD, "podGroupOwner"), claim("c", "kube-system", owner_ref(OWNER_GROUP)), False,
     "ResourceClaim kube-system/c was not created for Pod kube-system/podOwner (Pod is not owner)"),
    (grouped(OWNER_POD, "podGroupNotOwner"), claim("claimWithPodGroupOwner", "kube-system", owner_ref(OWNER_GROUP)),
     True, "ResourceClaim kube-system/claimWithPodGroupOwner was not created for Pod kube-system/podOwner "
           "(neither Pod nor PodGroup podGroupNotOwner is the owner)"),
    (grouped(OWNER_POD, "podGroupOwner"), claim("claimNoOwner", "kube-system"), True,
     "ResourceClaim kube-system/claimNoOwner was not created for Pod kube-system/podOwner "
     "(neither Pod nor PodGroup podGroupOwner is the owner)"),
    # An owner of another kind with the PodGroup's name is not the PodGroup.
    (grouped(OWNER_POD, "podGroupOwner"),
     claim("c", "kube-system", {**owner_ref(OWNER_GROUP), "apiVersion": "example.com/v1"}), True,
     "ResourceClaim kube-system/c was not created for Pod kube-system/podOwner "
     "(neither Pod nor PodGroup podGroupOwner is the owner)"),
])
def test_is_for_pod(the_pod, the_claim, accept, message):
    err = c.is_for_pod(the_pod, the_claim, accept)
    assert (str(err) if err else None) == message


@pytest.mark.parametrize("group, the_claim, message", [
    (OWNER_GROUP, claim("claimWithPodGroupOwner", "kube-system", owner_ref(OWNER_GROUP)), None),
    (pod_group(name="podGroupNotOwner", ns="kube-system", uid="9"),
     claim("claimWithPodGroupOwner", "kube-system", owner_ref(OWNER_GROUP)),
     "ResourceClaim kube-system/claimWithPodGroupOwner was not created for PodGroup kube-system/podGroupNotOwner "
     "(PodGroup is not owner)"),
    (OWNER_GROUP, claim("claimNoOwner", "kube-system"),
     "ResourceClaim kube-system/claimNoOwner was not created for PodGroup kube-system/podGroupOwner "
     "(PodGroup is not owner)"),
    (OWNER_GROUP, claim("u", "user-namespace", owner_ref(OWNER_GROUP)),
     "ResourceClaim user-namespace/u is not in the same namespace as PodGroup kube-system/podGroupOwner"),
])
def test_is_for_pod_group(group, the_claim, message):
    err = c.is_for_pod_group(group, the_claim)
    assert (str(err) if err else None) == message


RESERVED_POD = pod(name="podReserved", uid="r1")
RESERVED_GROUP_REF = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "pgReserved", "uid": "g1"}


@pytest.mark.parametrize("the_pod, reserved, accept, expected", [
    (pod(uid="x"), [], False, False),
    (RESERVED_POD, [{"resource": "pods", "name": "podReserved", "uid": "r1"}], False, True),
    (pod(uid="x"), [{"resource": "pods", "name": "podReserved", "uid": "r1"}], False, False),
    (RESERVED_POD, [{"resource": "pods", "name": "a", "uid": "o"}, {"resource": "pods", "name": "b", "uid": "r1"}],
     False, True),
    (grouped(pod(uid="x"), "pgReserved"), [RESERVED_GROUP_REF], True, True),
    (grouped(pod(uid="x"), "pgReserved"), [RESERVED_GROUP_REF], False, False),  # gate off
    (grouped(pod(uid="x"), "pgOther"), [RESERVED_GROUP_REF], True, False),
    # Only a podgroups entry counts as the PodGroup's, whatever its name.
    (grouped(pod(uid="x"), "pgReserved"), [{"apiGroup": "example.com", "resource": "podgroups", "name": "pgReserved",
                                            "uid": "g1"}], True, False),
])
def test_is_reserved_for_pod(the_pod, reserved, accept, expected):
    assert c.is_reserved_for_pod(the_pod, claim(reserved=reserved), accept) is expected


def test_owners_and_pod_group_reservation():
    group = pod_group()
    the_claim = claim(owner={**owner_ref(group), "blockOwnerDeletion": True}, reserved=[c.pod_group_reference(group)])
    assert c.owning_pod_group(the_claim) == ("pg", "pg-uid")
    assert c.owning_pod(the_claim) is None
    assert c.is_reserved_for_pod_group(group, the_claim)
    assert not c.is_reserved_for_pod_group(pod_group(uid="other"), the_claim)
    assert c.owning_pod(claim(owner=owner_ref(pod()))) == ("p", "pod-uid")
    assert c.owning_pod(claim(owner=owner_ref(pod(), controller=False))) is None


def test_claim_statuses_equal():
    a = [{"name": "x", "resourceClaimName": "y"}]
    assert c.claim_statuses_equal(a, [dict(a[0])])
    assert c.claim_statuses_equal(None, [])
    assert not c.claim_statuses_equal(a, [])
    assert not c.claim_statuses_equal(a, [{"name": "x", "resourceClaimName": "z"}])


def test_constants_match_the_api_module():
    from phalanx.api.resource import constants as resource
    assert c.POD_CLAIM_NAME_ANNOTATION == resource.POD_CLAIM_NAME_ANNOTATION
    assert c.DELETE_PROTECTION_FINALIZER == resource.FINALIZER
