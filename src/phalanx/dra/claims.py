"""Which ResourceClaim a pod (or PodGroup) claim names, who it was made for, and who may use it.

The behaviour of upstream's `k8s.io/dynamic-resource-allocation/resourceclaim` helpers, shared by
every DRA consumer in phalanx (the ResourceClaim controller, the scheduler's DynamicResources
plugin, the simulated kubelet). Objects are plain JSON dicts; nothing here talks to the API.

    name, must_check_owner, err = claim_name(pod, pod_claim)
    if err is None and name is not None:
        claim = claims.get(f"{namespace}/{name}")
        if must_check_owner and is_for_pod(pod, claim, accept_pod_group_owner=gate_on) is not None:
            ...  # a claim of that name exists but was not generated for this pod (or its PodGroup)

    group_claim = matching_pod_group_claim(pod, pod_group, pod_claim)   # None: classic per-pod DRA
    ref, err = consumer_reference(pod, pod_group, pod_claim)             # what goes into reservedFor
    is_reserved_for_pod(pod, claim, accept_pod_group=gate_on)

Functions that can fail the way upstream's do return the error (a `ClaimError`) instead of
raising it, as their Go counterparts return one: callers tell "not created yet" (`ClaimNotCreated`)
from "the API has a field this code does not know" (`APIUnsupported`) by type.

The PodGroup side (gate `DRAWorkloadResourceClaims`) follows Kubernetes 1.36: a pod claim is
served by its PodGroup's claim when the pod belongs to that PodGroup (same namespace,
`spec.schedulingGroup.podGroupName` equal to its name) and the two entries have the same `name`,
`resourceClaimName` and `resourceClaimTemplateName`. Callers pass `pod_group=None` (or
`workload_claims_enabled=False`) when the gate is off, which makes every claim a per-pod claim.
"""

from __future__ import annotations

from typing import Any, Mapping, NotRequired, TypedDict

from ..machinery.meta import list_at as _list

Obj = dict[str, Any]

# -- constants (k8s.io/api resource/v1, scheduling/v1alpha2) ---------------------------------------
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
WORKLOAD_RESOURCE_CLAIMS_GATE = "DRAWorkloadResourceClaims"

POD_GROUP_API_GROUP = "scheduling.k8s.io"
POD_GROUP_API_VERSION = "scheduling.k8s.io/v1alpha2"
POD_GROUP_KIND = "PodGroup"
POD_GROUP_RESOURCE = "podgroups"
POD_RESOURCE = "pods"

# Generated names: base + 5 random characters must fit a 63-character DNS label.
GENERATED_NAME_MAX_BASE_LENGTH = 57

# The `error` half of upstream's sentinel errors (`errors.Is` targets).
API_UNSUPPORTED_MESSAGE = "none of the supported fields are set"
CLAIM_NOT_CREATED_MESSAGE = "ResourceClaim not created yet"


class ClaimError(Exception):
    """Why a claim name or consumer could not be determined; `str(err)` is upstream's message."""


class APIUnsupported(ClaimError):
    """Neither `resourceClaimName` nor `resourceClaimTemplateName` is set (upstream ErrAPIUnsupported)."""


class ClaimNotCreated(ClaimError):
    """A template claim whose generated name is not recorded in the status yet (ErrClaimNotFound)."""


class PodGroupMismatch(ClaimError):
    """The pod does not belong to the PodGroup it was checked against."""


# -- small accessors --------------------------------------------------------------------------------

def _md(obj: Obj | None) -> dict[str, Any]:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, dict) else {}


def _ref(obj: Obj | None) -> str:
    md = _md(obj)
    return f"{md.get('namespace', '')}/{md.get('name', '')}"




def pod_group_name(pod: Obj) -> str | None:
    """`spec.schedulingGroup.podGroupName`, or None for a pod outside any PodGroup."""
    sg = ((pod or {}).get("spec") or {}).get("schedulingGroup")
    name = sg.get("podGroupName") if isinstance(sg, dict) else None
    return name or None


def pod_claims(pod: Obj) -> list[dict[str, Any]]:
    """`pod.spec.resourceClaims` entries."""
    return [c for c in _list((pod or {}).get("spec"), "resourceClaims") if isinstance(c, dict)]


def pod_group_claims(pod_group: Obj) -> list[dict[str, Any]]:
    """`podGroup.spec.resourceClaims` entries."""
    return [c for c in _list((pod_group or {}).get("spec"), "resourceClaims") if isinstance(c, dict)]


def controller_ref(obj: Obj) -> dict[str, Any] | None:
    """The ownerReference with `controller: true`, if any (metav1.GetControllerOf)."""
    for ref in _list(_md(obj), "ownerReferences"):
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    """metav1.IsControlledBy: the controller reference carries the owner's uid."""
    ref = controller_ref(obj)
    return ref is not None and bool(ref.get("uid")) and ref.get("uid") == _md(owner).get("uid")


def _is_pod_group_ref(ref: dict[str, Any]) -> bool:
    """A PodGroup owner reference, whatever the API version (`scheduling.k8s.io/<any>`)."""
    return ref.get("kind") == POD_GROUP_KIND and (ref.get("apiVersion") or "").startswith(POD_GROUP_API_GROUP + "/")


def owning_pod(claim: Obj) -> tuple[str, str] | None:
    """(name, uid) of the Pod controlling a claim generated for it, else None."""
    ref = controller_ref(claim)
    if ref and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
        return ref.get("name", ""), ref.get("uid", "")
    return None


def owning_pod_group(claim: Obj) -> tuple[str, str] | None:
    """(name, uid) of the PodGroup controlling a claim generated for it, else None."""
    ref = controller_ref(claim)
    if ref and _is_pod_group_ref(ref):
        return ref.get("name", ""), ref.get("uid", "")
    return None


# -- names ------------------------------------------------------------------------------------------

def claim_name(pod: Obj, pod_claim: dict[str, Any]) -> tuple[str | None, bool, ClaimError | None]:
    """The ResourceClaim a `pod.spec.resourceClaims` entry stands for (upstream `Name`).

    - `(name, False, None)` for `resourceClaimName`: the claim is the user's, no owner check;
    - `(name, True, None)` for a template claim recorded in `pod.status.resourceClaimStatuses`:
      call `is_for_pod` before using it;
    - `(None, True, None)` when the status entry has no name (no claim was needed);
    - `(None, False, ClaimNotCreated)` when the status has no entry yet;
    - `(None, False, APIUnsupported)` when neither field is set.
    """
    if pod_claim.get("resourceClaimName") is not None:
        return pod_claim["resourceClaimName"], False, None
    if pod_claim.get("resourceClaimTemplateName") is not None:
        for status in _list((pod or {}).get("status"), "resourceClaimStatuses"):
            if isinstance(status, dict) and status.get("name") == pod_claim.get("name"):
                return status.get("resourceClaimName") or None, True, None
        return None, False, ClaimNotCreated(f'pod "{_ref(pod)}": {CLAIM_NOT_CREATED_MESSAGE}')
    return None, False, APIUnsupported(
        f'pod "{_ref(pod)}", spec.resourceClaim "{pod_claim.get("name", "")}": {API_UNSUPPORTED_MESSAGE}')


def name_from_pod_group(pod_group: Obj, claim: dict[str, Any]) -> tuple[str | None, bool, ClaimError | None]:
    """`claim_name` for a `podGroup.spec.resourceClaims` entry, resolved through
    `podGroup.status.resourceClaimStatuses` (upstream `NameFromPodGroup`)."""
    if claim.get("resourceClaimName") is not None:
        return claim["resourceClaimName"], False, None
    if claim.get("resourceClaimTemplateName") is not None:
        for status in _list((pod_group or {}).get("status"), "resourceClaimStatuses"):
            if isinstance(status, dict) and status.get("name") == claim.get("name"):
                return status.get("resourceClaimName") or None, True, None
        return None, False, ClaimNotCreated(f"PodGroup {_ref(pod_group)}: {CLAIM_NOT_CREATED_MESSAGE}")
    return None, False, APIUnsupported(
        f"PodGroup {_ref(pod_group)}, spec.resourceClaim {claim.get('name', '')}: {API_UNSUPPORTED_MESSAGE}")


def generated_claim_name_prefix(owner_name: str, claim_name_: str) -> str:
    """The `generateName` of a claim generated for `<owner>` and its claim entry:
    `<owner>-<claim>-`; when that is longer than 57 characters both parts are cut in proportion
    to their length and joined by one dash (no trailing dash), as upstream does."""
    base = f"{owner_name}-{claim_name_}-"
    if len(base) <= GENERATED_NAME_MAX_BASE_LENGTH:
        return base
    n = len(base)
    return owner_name[: len(owner_name) * GENERATED_NAME_MAX_BASE_LENGTH // n] + "-" + \
        claim_name_[: len(claim_name_) * GENERATED_NAME_MAX_BASE_LENGTH // n]


# -- PodGroup matching ------------------------------------------------------------------------------

def pod_matches_pod_group(pod: Obj, pod_group: Obj) -> PodGroupMismatch | None:
    """None when the pod belongs to the PodGroup (same namespace, podGroupName = its name)."""
    group = pod_group_name(pod)
    if group is None:
        return PodGroupMismatch(f"Pod {_ref(pod)} does not belong to a PodGroup")
    pmd, gmd = _md(pod), _md(pod_group)
    if group != gmd.get("name") or pmd.get("namespace") != gmd.get("namespace"):
        return PodGroupMismatch(f"Pod {_ref(pod)} belongs to PodGroup {pmd.get('namespace', '')}/{group}, "
                                f"not PodGroup {_ref(pod_group)}")
    return None


def claims_match(pod_claim: dict[str, Any], group_claim: dict[str, Any]) -> bool:
    """The matching rule: equal `name`, `resourceClaimName` and `resourceClaimTemplateName`
    (both unset counts as equal)."""
    return (pod_claim.get("name") == group_claim.get("name")
            and pod_claim.get("resourceClaimName") == group_claim.get("resourceClaimName")
            and pod_claim.get("resourceClaimTemplateName") == group_claim.get("resourceClaimTemplateName"))


def matching_pod_group_claim(pod: Obj, pod_group: Obj | None, pod_claim: dict[str, Any], *,
                             workload_claims_enabled: bool = True) -> dict[str, Any] | None:
    """The PodGroup's `spec.resourceClaims` entry that serves this pod claim, or None (then the
    claim is a classic per-pod claim). None also when the gate is off, no PodGroup is given or the
    pod does not belong to it."""
    if not workload_claims_enabled or pod_group is None or pod_matches_pod_group(pod, pod_group) is not None:
        return None
    for group_claim in pod_group_claims(pod_group):
        if claims_match(pod_claim, group_claim):
            return group_claim
    return None


class ConsumerReference(TypedDict):
    """A ResourceClaim `status.reservedFor` entry (ResourceClaimConsumerReference)."""

    apiGroup: NotRequired[str]  # omitted for the core group, as its JSON encoding omits it
    resource: str
    name: str
    uid: str


def pod_reference(pod: Obj) -> ConsumerReference:
    """A `reservedFor` entry for a pod (the core group's empty apiGroup is omitted, as the
    JSON encoding of ResourceClaimConsumerReference omits it)."""
    md = _md(pod)
    return {"resource": POD_RESOURCE, "name": md.get("name", ""), "uid": md.get("uid", "")}


def pod_group_reference(pod_group: Obj) -> ConsumerReference:
    """A `reservedFor` entry for a PodGroup."""
    md = _md(pod_group)
    return {"apiGroup": POD_GROUP_API_GROUP, "resource": POD_GROUP_RESOURCE, "name": md.get("name", ""),
            "uid": md.get("uid", "")}


def consumer_reference(pod: Obj, pod_group: Obj | None, pod_claim: dict[str, Any], *,
                       workload_claims_enabled: bool = True) -> tuple[ConsumerReference | None, ClaimError | None]:
    """Whom a claim used through `pod_claim` gets reserved for (upstream `BindTo`): the PodGroup
    when the claim matches one of its claims, otherwise the pod. Errors: a claim entry with
    neither field set, or a PodGroup the pod does not belong to."""
    if pod_claim.get("resourceClaimName") is None and pod_claim.get("resourceClaimTemplateName") is None:
        return None, APIUnsupported(f"Pod {_ref(pod)} claim {pod_claim.get('name', '')}: {API_UNSUPPORTED_MESSAGE}")
    if workload_claims_enabled and pod_group is not None:
        mismatch = pod_matches_pod_group(pod, pod_group)
        if mismatch is not None:
            return None, mismatch
        if any(claims_match(pod_claim, c) for c in pod_group_claims(pod_group)):
            return pod_group_reference(pod_group), None
    return pod_reference(pod), None


def is_pod_group_consumer(ref: dict[str, Any]) -> bool:
    return isinstance(ref, dict) and ref.get("apiGroup") == POD_GROUP_API_GROUP and \
        ref.get("resource") == POD_GROUP_RESOURCE


def is_pod_consumer(ref: Mapping[str, object]) -> bool:
    return isinstance(ref, dict) and not ref.get("apiGroup") and ref.get("resource") == POD_RESOURCE


# -- ownership and reservation ----------------------------------------------------------------------

def is_for_pod(pod: Obj, claim: Obj, accept_pod_group_owner: bool = False) -> ClaimError | None:
    """None when the claim was generated for the pod (controller reference = the pod) or, with
    `accept_pod_group_owner` (gate on), for the pod's PodGroup (controller reference of kind
    PodGroup in `scheduling.k8s.io/*` named like `spec.schedulingGroup.podGroupName`)."""
    cmd, pmd = _md(claim), _md(pod)
    if cmd.get("namespace") != pmd.get("namespace"):
        return ClaimError(f"ResourceClaim {_ref(claim)} is not in the same namespace as Pod {_ref(pod)}")
    if is_controlled_by(claim, pod):
        return None
    group = pod_group_name(pod)
    if accept_pod_group_owner and group is not None:
        ref = controller_ref(claim)
        if ref is not None and _is_pod_group_ref(ref) and ref.get("name") == group:
            return None
        return ClaimError(f"ResourceClaim {_ref(claim)} was not created for Pod {_ref(pod)} "
                          f"(neither Pod nor PodGroup {group} is the owner)")
    return ClaimError(f"ResourceClaim {_ref(claim)} was not created for Pod {_ref(pod)} (Pod is not owner)")


def is_for_pod_group(pod_group: Obj, claim: Obj) -> ClaimError | None:
    """None when the claim was generated for the PodGroup (its controller reference)."""
    if _md(claim).get("namespace") != _md(pod_group).get("namespace"):
        return ClaimError(f"ResourceClaim {_ref(claim)} is not in the same namespace as PodGroup {_ref(pod_group)}")
    if is_controlled_by(claim, pod_group):
        return None
    return ClaimError(f"ResourceClaim {_ref(claim)} was not created for PodGroup {_ref(pod_group)} "
                      f"(PodGroup is not owner)")


def reserved_for(claim: Obj) -> list[dict[str, Any]]:
    return [r for r in _list((claim or {}).get("status"), "reservedFor") if isinstance(r, dict)]


def is_reserved_for_pod(pod: Obj, claim: Obj, accept_pod_group: bool = False) -> bool:
    """True when `reservedFor` holds the pod's uid or, with `accept_pod_group` (gate on), a
    `podgroups` entry named like the pod's PodGroup (the uid is not compared: pods do not know it,
    and the PodGroup's protection finalizer keeps the name from being reused meanwhile)."""
    uid = _md(pod).get("uid")
    group = pod_group_name(pod) if accept_pod_group else None
    for ref in reserved_for(claim):
        if uid and ref.get("uid") == uid:
            return True
        if group is not None and is_pod_group_consumer(ref) and ref.get("name") == group:
            return True
    return False


def is_reserved_for_pod_group(pod_group: Obj, claim: Obj) -> bool:
    uid = _md(pod_group).get("uid")
    return bool(uid) and any(ref.get("uid") == uid for ref in reserved_for(claim))


def can_be_reserved(claim: Obj) -> bool:
    """Whether another consumer may be added: upstream puts no limit on sharing here (the API
    caps `reservedFor` at 256 entries)."""
    return True


def is_allocated(claim: Obj) -> bool:
    return ((claim or {}).get("status") or {}).get("allocation") is not None


def claim_statuses_equal(a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None) -> bool:
    """Same entries (`name`, `resourceClaimName`) in the same order (upstream PodGroupStatusEqual)."""
    a, b = a or [], b or []
    if len(a) != len(b):
        return False
    return all(x.get("name") == y.get("name") and x.get("resourceClaimName") == y.get("resourceClaimName")
               for x, y in zip(a, b))


__all__ = [
    "POD_CLAIM_NAME_ANNOTATION", "DELETE_PROTECTION_FINALIZER", "WORKLOAD_RESOURCE_CLAIMS_GATE",
    "POD_GROUP_API_GROUP", "POD_GROUP_API_VERSION", "POD_GROUP_KIND", "POD_GROUP_RESOURCE", "POD_RESOURCE",
    "GENERATED_NAME_MAX_BASE_LENGTH", "API_UNSUPPORTED_MESSAGE", "CLAIM_NOT_CREATED_MESSAGE",
    "ClaimError", "APIUnsupported", "ClaimNotCreated", "PodGroupMismatch",
    "pod_group_name", "pod_claims", "pod_group_claims", "controller_ref", "is_controlled_by", "owning_pod",
    "owning_pod_group", "claim_name", "name_from_pod_group", "generated_claim_name_prefix",
    "pod_matches_pod_group", "claims_match", "matching_pod_group_claim", "pod_reference", "pod_group_reference",
    "ConsumerReference", "consumer_reference", "is_pod_group_consumer", "is_pod_consumer", "is_for_pod", "is_for_pod_group",
    "reserved_for", "is_reserved_for_pod", "is_reserved_for_pod_group", "can_be_reserved", "is_allocated",
    "claim_statuses_equal",
]
