"""The ResourceClaim controller: kube-controller-manager's `resource-claim-controller`, with the
PodGroup-level claims of Kubernetes 1.36 and 1.37 (gate `DRAWorkloadResourceClaims`).

    ResourceClaimController(client, factory, gates=gates, clock=clock).start()

What it does, as upstream does:

- **Pods** (`pod:<ns>/<name>`): for each `spec.resourceClaims` entry with a
  `resourceClaimTemplateName`, create a ResourceClaim from the template named
  `<pod>-<claim>-<5 random>` (`generateName`, 57-character proportional truncation), owned by the
  pod (controller, blockOwnerDeletion), annotated `resource.kubernetes.io/pod-claim-name: <claim>`,
  with the template's labels, annotations and claim spec; then record
  `status.resourceClaimStatuses[{name, resourceClaimName}]` with a server-side apply (forced) of
  pod `/status` by field manager `ResourceClaimController`; a write that would change nothing is
  skipped. An orphan claim owned by the pod with the
  same annotation (left by a failed status write) is reused, never duplicated. A missing template
  is a Warning event `FailedResourceClaimCreation` on the pod and a retry; creating the template
  requeues the pod at once. A scheduled pod whose allocated claim is not reserved for it gets the
  reservation (a scheduler that knows no DRA).
- **PodGroups** (`podgroup:<ns>/<name>`, gate on): for each `spec.resourceClaims` entry with a
  template, as soon as PodGroup and template exist, create one claim `<podgroup>-<claim>-<5 random>`
  owned by the PodGroup (`scheduling.k8s.io/v1alpha2` in 1.36, `v1beta1` in 1.37) and record it in the PodGroup's
  `status.resourceClaimStatuses` (the same way on `/status`). A pod claim that matches a PodGroup claim
  (`phalanx.dra.claims.matching_pod_group_claim`) gets no claim of its own: once the PodGroup's
  status names the generated claim, that name is copied into the pod's
  `status.resourceClaimStatuses`. A pod naming a PodGroup that does not exist yet waits for it
  rather than getting claims it may not need. A terminal pod (Succeeded/Failed) is left alone: the
  claim deleted for it below is not created again (upstream's mutation cache keeps the deleted claim
  for an hour and so does not recreate it either; without this the two paths would delete and create
  a claim for every finished pod of a Job in a loop), nor is a reservation restored
  (kubernetes/kubernetes#141274).
- **Claims** (`claim:<ns>/<name>`): drop `status.reservedFor` entries whose consumer is gone —
  a pod deleted, replaced (other uid), terminal (Succeeded/Failed) or deleted before it was
  scheduled; with the gate on, a PodGroup that no longer exists (not found, or another uid).
  Other consumer kinds are kept. When `reservedFor` becomes empty, a claim carrying
  `resource.kubernetes.io/delete-protection` is deallocated (`status.allocation` and
  `status.devices` cleared on `/status`), then loses the finalizer (metadata update); a claim
  generated for a pod that is done or replaced is deleted. PodGroup-generated claims are left to
  the garbage collector (owner reference). While its PodGroup exists a PodGroup reservation stays,
  even with no pods at all.

With the gate off, `podgroups` reservations are left alone and PodGroups get no claims. In 1.36 a
pod template claim then always gets its own claim. Kubernetes 1.37 fails closed instead: a pod claim
that matches a claim of its PodGroup gets no claim at all (the pod stays Pending rather than each
pod of the group taking devices of its own), and a pod naming a PodGroup not there yet waits for
it; only with `GenericWorkload` off too (no PodGroups served) does every pod claim get its own. Events are recorded as component `resource_claim`.
Every create counts in `dynamic_resource_allocation_resourceclaim_creates_total{status,admin_access}`.
"""

from __future__ import annotations

import collections
import copy
from typing import Any

from ..client.informer import Informer, InformerFactory, index_pod_by_pod_group, object_key, split_key
from ..api.scheduling.fields import WORKLOAD_API_BY_RELEASE
from ..machinery.featuregates import FeatureGates
from ..dra import claims as dra
from ..metrics import dra as dra_metrics
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..client.clock import Clock
from ..client.controller import Controller
from ..client.interface import Client

Obj = dict[str, Any]

FIELD_MANAGER = "ResourceClaimController"
EVENT_COMPONENT = "resource_claim"
FAILED_RESOURCE_CLAIM_CREATION = "FailedResourceClaimCreation"
MAX_UID_CACHE_ENTRIES = 500

POD_KEY_PREFIX = "pod:"
CLAIM_KEY_PREFIX = "claim:"
POD_GROUP_KEY_PREFIX = "podgroup:"

RESOURCE_API_VERSION = "resource.k8s.io/v1"

# Informer index names (shared informers: names are qualified to stay out of other controllers' way).
POD_GROUP_INDEX = "spec.schedulingGroup.podGroupName"
POD_CLAIM_INDEX = "resourceclaim/pod-resource-claim"
POD_TEMPLATE_INDEX = "resourceclaim/pod-resource-claim-template"
CLAIM_OWNER_INDEX = "resourceclaim/claim-owner"
CLAIM_POD_GROUP_CONSUMER_INDEX = "resourceclaim/claim-podgroup-consumer"
POD_GROUP_TEMPLATE_INDEX = "resourceclaim/podgroup-resource-claim-template"


# -- index functions ---------------------------------------------------------------------------------

def _namespace(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


def index_pod_by_claim(pod: Obj) -> list[str]:
    """`namespace/claim` for every claim the pod's entries resolve to now."""
    keys = []
    for pc in dra.pod_claims(pod):
        name, _, err = dra.claim_name(pod, pc)
        if err is None and name:
            keys.append(f"{_namespace(pod)}/{name}")
    return keys


def index_pod_by_template(pod: Obj) -> list[str]:
    return [f"{_namespace(pod)}/{pc['resourceClaimTemplateName']}" for pc in dra.pod_claims(pod)
            if pc.get("resourceClaimTemplateName")]


def index_pod_group_by_template(pod_group: Obj) -> list[str]:
    return [f"{_namespace(pod_group)}/{c['resourceClaimTemplateName']}" for c in dra.pod_group_claims(pod_group)
            if c.get("resourceClaimTemplateName")]


def index_claim_by_owner(claim: Obj) -> list[str]:
    """The uid of the Pod or PodGroup controlling a generated claim."""
    owner = dra.owning_pod(claim) or dra.owning_pod_group(claim)
    return [owner[1]] if owner and owner[1] else []


def index_claim_by_pod_group_consumer(claim: Obj) -> list[str]:
    return [f"{_namespace(claim)}/{r.get('name', '')}" for r in dra.reserved_for(claim) if dra.is_pod_group_consumer(r)]


# -- small helpers -----------------------------------------------------------------------------------

def is_pod_terminal(pod: Obj) -> bool:
    return ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed")


def is_pod_done(pod: Obj) -> bool:
    """Certain never to run (again): terminal, or deleted before it was scheduled."""
    md = pod.get("metadata") or {}
    return is_pod_terminal(pod) or (bool(md.get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName"))


def pod_needs_claims(pod: Obj, deleted: bool) -> bool:
    """False when the pod's reservations may be released: removed, terminal, or deleted unscheduled."""
    return not deleted and not is_pod_done(pod)


def with_field_manager(client: Client, field_manager: str) -> Client:
    """The same client (shared transport) writing under another field manager."""
    if getattr(client, "field_manager", None) == field_manager:
        return client
    other = copy.copy(client)
    other.field_manager = field_manager
    return other


def _context_error(err: StatusError, prefix: str) -> StatusError:
    return StatusError(err.code, err.reason, f"{prefix}: {err.message}", dict(err.details or {}))


def _template_not_found(template: str) -> StatusError:
    # The lister's NotFound names the singular resource, as upstream's message shows.
    return StatusError(404, "NotFound",
                       f'resource claim template "{template}": '
                       f'resourceclaimtemplate.resource.k8s.io "{template}" not found',
                       {"name": template, "group": "resource.k8s.io", "kind": "resourceclaimtemplate"})


def _needs_admin_access(template: Obj) -> bool:
    requests = (((template.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
    return any(isinstance(r, dict) and ((r.get("exactly") or {}).get("adminAccess") is True) for r in requests)


def _with_claim_names(current: list, new: dict[str, str]) -> list[dict[str, str]]:
    """`status.resourceClaimStatuses` with the entries of `new` (claim entry -> claim name) set."""
    statuses = [dict(s) for s in current if isinstance(s, dict)]
    for claim_entry, claim_name in new.items():
        for s in statuses:
            if s.get("name") == claim_entry:
                s["resourceClaimName"] = claim_name
                break
        else:
            statuses.append({"name": claim_entry, "resourceClaimName": claim_name})
    return statuses


class _UIDCache:
    """Bounded memory of uids known to be deleted (upstream's uidCache)."""

    def __init__(self, size: int = MAX_UID_CACHE_ENTRIES):
        self.size = size
        self._uids: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, uid: str) -> None:
        if not uid:
            return
        self._uids[uid] = None
        self._uids.move_to_end(uid)
        while len(self._uids) > self.size:
            self._uids.popitem(last=False)

    def __contains__(self, uid: object) -> bool:
        return uid in self._uids


class ResourceClaimController(Controller[str]):
    name = "resourceclaim"
    workers = 50  # upstream's ResourceClaimController ConcurrentSyncs default

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, gates: FeatureGates | None = None,
                 clock: Clock | None = None, workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.gates = gates if gates is not None else FeatureGates()
        self.workload_claims = bool(self.gates.enabled(dra.WORKLOAD_RESOURCE_CLAIMS_GATE))
        self.admin_access = bool(self.gates.enabled("DRAAdminAccess"))
        self.pod_group_api_version = WORKLOAD_API_BY_RELEASE[self.gates.release]
        # Kubernetes 1.37 with the gate off: pod claims matching a PodGroup claim get none at all.
        self.fail_closed = (not self.workload_claims and self.gates.release != "1.36"
                            and bool(self.gates.enabled("GenericWorkload")))
        self.status_client = with_field_manager(client, FIELD_MANAGER)
        self.deleted_uids = _UIDCache()
        self._created: dict[str, Obj] = {}  # claims created here that the informer has not shown yet

        self.pods = self.informer("v1", "Pod", indexers={POD_CLAIM_INDEX: index_pod_by_claim,
                                                          POD_TEMPLATE_INDEX: index_pod_by_template,
                                                          POD_GROUP_INDEX: index_pod_by_pod_group})
        self.claims = self.informer(RESOURCE_API_VERSION, "ResourceClaim",
                                    indexers={CLAIM_OWNER_INDEX: index_claim_by_owner,
                                              CLAIM_POD_GROUP_CONSUMER_INDEX: index_claim_by_pod_group_consumer})
        self.templates = self.informer(RESOURCE_API_VERSION, "ResourceClaimTemplate")
        self.pod_groups: Informer | None = None
        if self.workload_claims or self.fail_closed:
            self.pod_groups = self.informer(self.pod_group_api_version, "PodGroup",
                                            indexers={POD_GROUP_TEMPLATE_INDEX: index_pod_group_by_template})
            self.pod_groups.add_event_handler(on_add=self._pod_group_added, on_update=self._pod_group_updated,
                                              on_delete=self._pod_group_deleted)

        self.pods.add_event_handler(on_add=lambda p: self.enqueue_pod(p, False),
                                    on_update=lambda old, new: self._pod_updated(old, new),
                                    on_delete=lambda p: self.enqueue_pod(p, True))
        self.claims.add_event_handler(on_add=lambda c: self._claim_changed(c, False),
                                      on_update=lambda old, new: self._claim_changed(new, False),
                                      on_delete=lambda c: self._claim_changed(c, True))
        self.templates.add_event_handler(on_add=self._template_changed,
                                         on_update=lambda old, new: self._template_changed(new))

    # -- lookups -----------------------------------------------------------------------------
    def pod_group_of(self, pod: Obj) -> Obj | None:
        """The PodGroup the pod belongs to, when PodGroups are watched and this one is known."""
        group = dra.pod_group_name(pod)
        if group is None or self.pod_groups is None:
            return None
        return self.pod_groups.get(f"{_namespace(pod)}/{group}")

    def get_claim(self, namespace: str, name: str) -> Obj | None:
        key = f"{namespace}/{name}"
        claim = self.claims.get(key)
        if claim is not None:
            self._created.pop(key, None)
            return claim
        return self._created.get(key)

    def _prune_created(self) -> None:
        """Forget created claims the informer has caught up with."""
        for key in [k for k in self._created if self.claims.get(k) is not None]:
            del self._created[key]

    def find_owned_claim(self, namespace: str, owner_uid: str, claim_entry_name: str) -> Obj | None:
        """A claim generated for this owner and claim entry (annotation), also one created here
        that the informer has not delivered yet."""
        self._prune_created()
        candidates = list(self.claims.by_index(CLAIM_OWNER_INDEX, owner_uid))
        candidates += [c for c in self._created.values() if owner_uid in index_claim_by_owner(c)]
        for claim in candidates:
            if _namespace(claim) != namespace:
                continue
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if annotations.get(dra.POD_CLAIM_NAME_ANNOTATION) == claim_entry_name:
                return claim
        return None

    # -- event handlers ----------------------------------------------------------------------
    def _pod_updated(self, old: Obj, new: Obj) -> None:
        self.enqueue_pod(new, False)
        if (old.get("metadata") or {}).get("uid") != (new.get("metadata") or {}).get("uid"):
            self.enqueue_pod(old, True)  # deleted and recreated under the same name meanwhile

    def enqueue_pod(self, pod: Obj, deleted: bool) -> None:
        if not dra.pod_claims(pod):
            return
        if deleted:
            self.deleted_uids.add((pod.get("metadata") or {}).get("uid", ""))
        if not pod_needs_claims(pod, deleted):
            # Release its reservations.
            for pc in dra.pod_claims(pod):
                name, _, err = dra.claim_name(pod, pc)
                if err is None and name:
                    self.queue.add(f"{CLAIM_KEY_PREFIX}{_namespace(pod)}/{name}")
        if not deleted and self.pod_needs_work(pod):
            self.queue.add(POD_KEY_PREFIX + object_key(pod))

    def pod_needs_work(self, pod: Obj) -> bool:
        if (pod.get("metadata") or {}).get("deletionTimestamp") or is_pod_terminal(pod):
            return False  # a terminal pod needs neither a new claim nor a reservation
        scheduled = bool((pod.get("spec") or {}).get("nodeName"))
        for pc in dra.pod_claims(pod):
            name, must_check_owner, err = dra.claim_name(pod, pc)
            if err is not None:
                return True
            if name is None:
                continue
            claim = self.get_claim(_namespace(pod), name)
            if claim is None:
                if pc.get("resourceClaimTemplateName"):
                    return True  # create it (or, for a PodGroup claim, look again)
                continue  # a user's claim that does not exist yet
            if must_check_owner and dra.is_for_pod(pod, claim, self.workload_claims) is not None:
                continue  # a foreign claim in the way: nothing this controller can do
            if scheduled and dra.is_allocated(claim) and \
                    not dra.is_reserved_for_pod(pod, claim, self.workload_claims) and dra.can_be_reserved(claim):
                return True
        return False

    def _claim_changed(self, claim: Obj, deleted: bool) -> None:
        key = object_key(claim)
        self._created.pop(key, None)  # the informer knows it now (or it is gone)
        if not deleted:
            self.queue.add(CLAIM_KEY_PREFIX + key)
        for pod in self.pods.by_index(POD_CLAIM_INDEX, key):
            self.enqueue_pod(pod, False)
        owner = dra.owning_pod_group(claim)
        if owner and self.pod_groups is not None:
            pod_group = self.pod_groups.get(f"{_namespace(claim)}/{owner[0]}")
            if pod_group is not None and self.pod_group_needs_work(pod_group):
                self.queue.add(POD_GROUP_KEY_PREFIX + object_key(pod_group))

    def _template_changed(self, template: Obj) -> None:
        key = object_key(template)
        for pod in self.pods.by_index(POD_TEMPLATE_INDEX, key):
            self.enqueue_pod(pod, False)
        if self.pod_groups is not None:
            for pod_group in self.pod_groups.by_index(POD_GROUP_TEMPLATE_INDEX, key):
                self.enqueue_pod_group(pod_group)

    def enqueue_pod_group(self, pod_group: Obj) -> None:
        if self.pod_group_needs_work(pod_group):
            self.queue.add(POD_GROUP_KEY_PREFIX + object_key(pod_group))

    def _pods_of_group(self, pod_group: Obj) -> list[Obj]:
        return self.pods.by_index(POD_GROUP_INDEX, object_key(pod_group))

    def _pod_group_added(self, pod_group: Obj) -> None:
        self.enqueue_pod_group(pod_group)
        for pod in self._pods_of_group(pod_group):  # pods that waited for their PodGroup
            self.enqueue_pod(pod, False)

    def _pod_group_updated(self, old: Obj, new: Obj) -> None:
        self.enqueue_pod_group(new)
        old_statuses = (old.get("status") or {}).get("resourceClaimStatuses")
        new_statuses = (new.get("status") or {}).get("resourceClaimStatuses")
        if not dra.claim_statuses_equal(old_statuses, new_statuses) or \
                (old.get("metadata") or {}).get("uid") != (new.get("metadata") or {}).get("uid"):
            for pod in self._pods_of_group(new):
                self.enqueue_pod(pod, False)

    def _pod_group_deleted(self, pod_group: Obj) -> None:
        self.deleted_uids.add((pod_group.get("metadata") or {}).get("uid", ""))
        for claim in self.claims.by_index(CLAIM_POD_GROUP_CONSUMER_INDEX, object_key(pod_group)):
            self.queue.add(CLAIM_KEY_PREFIX + object_key(claim))

    def pod_group_needs_work(self, pod_group: Obj) -> bool:
        if not self.workload_claims or (pod_group.get("metadata") or {}).get("deletionTimestamp"):
            return False
        for c in dra.pod_group_claims(pod_group):
            name, must_check_owner, err = dra.name_from_pod_group(pod_group, c)
            if err is not None:
                return True
            if name is None:
                continue
            claim = self.get_claim(_namespace(pod_group), name)
            if claim is None:
                if c.get("resourceClaimTemplateName"):
                    return True
                continue
            if must_check_owner and dra.is_for_pod_group(pod_group, claim) is not None:
                continue
        return False

    # -- sync --------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        prefix, sep, rest = key.partition(":")
        namespace, name = split_key(rest)
        if not sep:
            raise ValueError(f"unexpected key: {key}")
        if prefix + ":" == POD_KEY_PREFIX:
            await self.sync_pod(namespace, name)
        elif prefix + ":" == CLAIM_KEY_PREFIX:
            await self.sync_claim(namespace, name)
        elif prefix + ":" == POD_GROUP_KEY_PREFIX:
            await self.sync_pod_group(namespace, name)
        else:
            raise ValueError(f"unexpected key prefix: {prefix}:")

    # .. pods ..................................................................................
    async def sync_pod(self, namespace: str, name: str) -> None:
        pod = self.pods.get(f"{namespace}/{name}")
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp") or is_pod_terminal(pod):
            return
        pod_group = self.pod_group_of(pod)
        new_statuses: dict[str, str] = {}
        for pc in dra.pod_claims(pod):
            try:
                await self._handle_pod_claim(pod, pod_group, pc, new_statuses)
            except StatusError as e:
                await self.client.create_event(pod, FAILED_RESOURCE_CLAIM_CREATION,
                                               f"PodResourceClaim {pc.get('name', '')}: {e.message}",
                                               type="Warning", component=EVENT_COMPONENT)
                raise _context_error(e, f"pod {namespace}/{name}, PodResourceClaim {pc.get('name', '')}") from None
        if new_statuses:
            await self._apply_claim_statuses("v1", "Pod", pod, new_statuses)
        if not (pod.get("spec") or {}).get("nodeName"):
            return  # the scheduler reserves
        await self._reserve_for_scheduled_pod(pod, pod_group)

    async def _handle_pod_claim(self, pod: Obj, pod_group: Obj | None, pc: dict, new_statuses: dict[str, str]) -> None:
        namespace = _namespace(pod)
        name, must_check_owner, err = dra.claim_name(pod, pc)
        if isinstance(err, dra.ClaimNotCreated):
            pass
        elif err is not None:
            raise StatusError(422, "Invalid", f"checking for claim before creating it: {err}")
        elif name is None:
            return  # no claim needed
        else:
            claim = self.get_claim(namespace, name)
            if claim is not None:
                owner_err = dra.is_for_pod(pod, claim, self.workload_claims) if must_check_owner else None
                if owner_err is None:
                    return  # already there
                self.log.warning("%s; creating a new one", owner_err)
        template = pc.get("resourceClaimTemplateName")
        if template is None:
            return
        if self.fail_closed and dra.pod_group_name(pod) is not None:
            if pod_group is None or dra.matching_pod_group_claim(pod, pod_group, pc) is not None:
                return  # 1.37, gate off: a PodGroup's claim is never turned into one per pod
        elif self.workload_claims and dra.pod_group_name(pod) is not None:
            if pod_group is None:
                return  # wait for the PodGroup: its claim may be the one to use
            group_claim = dra.matching_pod_group_claim(pod, pod_group, pc)
            if group_claim is not None:
                group_claim_name, _, group_err = dra.name_from_pod_group(pod_group, group_claim)
                if group_err is None and group_claim_name and group_claim_name != name:
                    new_statuses[pc["name"]] = group_claim_name
                return  # the PodGroup's claim serves this pod (once generated)
        claim = self.find_owned_claim(namespace, (pod.get("metadata") or {}).get("uid", ""), pc.get("name", ""))
        if claim is None:
            claim = await self._create_claim(pod, "v1", "Pod", pc.get("name", ""), template)
        new_statuses[pc["name"]] = claim["metadata"]["name"]

    async def _reserve_for_scheduled_pod(self, pod: Obj, pod_group: Obj | None) -> None:
        namespace = _namespace(pod)
        for pc in dra.pod_claims(pod):
            name, must_check_owner, err = dra.claim_name(pod, pc)
            if err is not None:
                raise StatusError(422, "Invalid", str(err))
            if name is None:
                continue
            claim = self.claims.get(f"{namespace}/{name}")
            if claim is None:
                return
            if must_check_owner:
                owner_err = dra.is_for_pod(pod, claim, self.workload_claims)
                if owner_err is not None:
                    raise StatusError(409, "Conflict", str(owner_err))
            if not dra.is_allocated(claim) or dra.is_reserved_for_pod(pod, claim, self.workload_claims) or \
                    not dra.can_be_reserved(claim):
                continue
            ref, ref_err = dra.consumer_reference(pod, pod_group, pc, workload_claims_enabled=self.workload_claims)
            if ref is None:  # then ref_err says why
                raise StatusError(422, "Invalid", str(ref_err))
            if any(r.get("uid") == ref["uid"] for r in dra.reserved_for(claim)):
                continue
            updated = deep_copy(claim)
            updated.setdefault("status", {}).setdefault("reservedFor", []).append(ref)
            try:
                await self.client.update_status(updated)
            except StatusError as e:
                raise _context_error(e, f"reserve claim {namespace}/{name} for pod") from None

    # .. PodGroups .............................................................................
    async def sync_pod_group(self, namespace: str, name: str) -> None:
        if self.pod_groups is None or not self.workload_claims:
            return
        pod_group = self.pod_groups.get(f"{namespace}/{name}")
        if pod_group is None or (pod_group.get("metadata") or {}).get("deletionTimestamp"):
            return
        new_statuses: dict[str, str] = {}
        for c in dra.pod_group_claims(pod_group):
            try:
                await self._handle_pod_group_claim(pod_group, c, new_statuses)
            except StatusError as e:
                await self.client.create_event(pod_group, FAILED_RESOURCE_CLAIM_CREATION,
                                               f"PodGroupResourceClaim {c.get('name', '')}: {e.message}",
                                               type="Warning", component=EVENT_COMPONENT)
                raise _context_error(e, f"PodGroup {namespace}/{name}, PodGroupResourceClaim {c.get('name', '')}") \
                    from None
        if new_statuses:
            await self._apply_claim_statuses(self.pod_group_api_version, "PodGroup", pod_group, new_statuses)

    async def _handle_pod_group_claim(self, pod_group: Obj, c: dict, new_statuses: dict[str, str]) -> None:
        namespace = _namespace(pod_group)
        name, must_check_owner, err = dra.name_from_pod_group(pod_group, c)
        if isinstance(err, dra.ClaimNotCreated):
            pass
        elif err is not None:
            raise StatusError(422, "Invalid", f"checking for claim before creating it: {err}")
        elif name is None:
            return
        else:
            claim = self.get_claim(namespace, name)
            if claim is not None:
                owner_err = dra.is_for_pod_group(pod_group, claim) if must_check_owner else None
                if owner_err is None:
                    return
                self.log.warning("%s; creating a new one", owner_err)
        template = c.get("resourceClaimTemplateName")
        if template is None:
            return
        claim = self.find_owned_claim(namespace, (pod_group.get("metadata") or {}).get("uid", ""), c.get("name", ""))
        if claim is None:
            claim = await self._create_claim(pod_group, self.pod_group_api_version, dra.POD_GROUP_KIND, c.get("name", ""),
                                             template)
        new_statuses[c["name"]] = claim["metadata"]["name"]

    # .. shared by pods and PodGroups ..........................................................
    async def _create_claim(self, owner: Obj, owner_api_version: str, owner_kind: str, claim_entry_name: str,
                            template_name: str) -> Obj:
        md = owner.get("metadata") or {}
        namespace = md.get("namespace", "")
        template = self.templates.get(f"{namespace}/{template_name}")
        if template is None:
            raise _template_not_found(template_name)
        if not self.admin_access and _needs_admin_access(template):
            raise StatusError(403, "Forbidden", "admin access is requested, but the feature is disabled")
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        annotations = dict(template_meta.get("annotations") or {})
        annotations[dra.POD_CLAIM_NAME_ANNOTATION] = claim_entry_name
        claim_md: dict = {
            "generateName": dra.generated_claim_name_prefix(md.get("name", ""), claim_entry_name),
            "namespace": namespace,
            "ownerReferences": [{"apiVersion": owner_api_version, "kind": owner_kind, "name": md.get("name", ""),
                                 "uid": md.get("uid", ""), "controller": True, "blockOwnerDeletion": True}],
            "annotations": annotations,
        }
        if template_meta.get("labels"):
            claim_md["labels"] = dict(template_meta["labels"])
        body = {"apiVersion": RESOURCE_API_VERSION, "kind": "ResourceClaim", "metadata": claim_md,
                "spec": deep_copy((template.get("spec") or {}).get("spec") or {})}
        admin = _needs_admin_access(template)
        try:
            created = await self.client.create(body)
        except StatusError as e:
            dra_metrics.claim_created(False, admin)
            raise _context_error(e, "create ResourceClaim ") from None
        dra_metrics.claim_created(True, admin)
        self._created[object_key(created)] = created
        self.log.debug("created ResourceClaim %s/%s for %s %s/%s", namespace, created["metadata"]["name"],
                       owner_kind, namespace, md.get("name"))
        return created

    async def _apply_claim_statuses(self, api_version: str, kind: str, obj: Obj, new: dict[str, str]) -> None:
        """Record generated claim names in `status.resourceClaimStatuses` with a server-side apply
        of `/status` by field manager ResourceClaimController, forced, as upstream's `ApplyStatus`
        (the whole list, so the entries of earlier syncs stay owned); nothing is written when the
        list names them already."""
        md = obj.get("metadata") or {}
        namespace, name = md.get("namespace", ""), md.get("name", "")
        before = (obj.get("status") or {}).get("resourceClaimStatuses") or []
        statuses = _with_claim_names(before, new)
        if statuses == before:
            return
        body = {"apiVersion": api_version, "kind": kind,
                "metadata": {"name": name, "namespace": namespace, "uid": md.get("uid", "")},
                "status": {"resourceClaimStatuses": statuses}}
        try:
            await self.status_client.patch(api_version, kind, namespace, name, body,
                                           "application/apply-patch+yaml", "status", force=True)
        except StatusError as e:
            if e.code == 404:
                return  # gone meanwhile: nothing to record
            raise _context_error(e, f"update {kind} {namespace}/{name} ResourceClaimStatuses") from None

    # .. claims ................................................................................
    async def sync_claim(self, namespace: str, name: str) -> None:
        claim = self.claims.get(f"{namespace}/{name}")
        if claim is None:
            return
        reserved = dra.reserved_for(claim)
        valid = []
        for ref in reserved:
            if dra.is_pod_consumer(ref):
                keep = await self._pod_consumer_exists(namespace, ref)
            elif self.workload_claims and dra.is_pod_group_consumer(ref):
                keep = await self._pod_group_consumer_exists(namespace, ref)
            else:
                keep = True  # a consumer kind this controller does not track
            if keep:
                valid.append(ref)
        md = claim.get("metadata") or {}
        protected = dra.DELETE_PROTECTION_FINALIZER in (md.get("finalizers") or [])
        if len(valid) < len(reserved):
            updated = deep_copy(claim)
            status = updated.setdefault("status", {})
            if valid:
                status["reservedFor"] = valid
            else:
                status.pop("reservedFor", None)
                if protected:
                    # Allocated by the scheduler: deallocating means clearing the result.
                    status.pop("allocation", None)
                    status.pop("devices", None)
            updated = await self.client.update_status(updated)
            await self._drop_finalizer_if_deallocated(updated)
        elif protected and md.get("deletionTimestamp") and not valid:
            updated = deep_copy(claim)
            status = updated.get("status") or {}
            if status.get("allocation") is not None:
                status.pop("allocation", None)
                status.pop("devices", None)
                updated = await self.client.update_status(updated)
            await self._drop_finalizer_if_deallocated(updated)
        if not valid:
            await self._delete_if_owner_is_done(claim)

    async def _drop_finalizer_if_deallocated(self, claim: Obj) -> None:
        md = claim.get("metadata") or {}
        finalizers = list(md.get("finalizers") or [])
        if dra.DELETE_PROTECTION_FINALIZER not in finalizers or dra.is_allocated(claim):
            return
        finalizers.remove(dra.DELETE_PROTECTION_FINALIZER)
        updated = deep_copy(claim)
        updated["metadata"]["finalizers"] = finalizers
        try:
            await self.client.update(updated)
        except StatusError as e:
            if e.code != 404:
                raise

    async def _delete_if_owner_is_done(self, claim: Obj) -> None:
        """A claim generated for a pod that will not run (again) goes now; the garbage collector
        would only act once the pod object is gone."""
        owner = dra.owning_pod(claim)
        if owner is None:
            return
        namespace = _namespace(claim)
        pod = self.pods.get(f"{namespace}/{owner[0]}")
        if pod is None:
            return  # maybe not seen yet; the garbage collector handles pods that are truly gone
        if (pod.get("metadata") or {}).get("uid") != owner[1] or is_pod_done(pod):
            try:
                await self.client.delete(RESOURCE_API_VERSION, "ResourceClaim", namespace,
                                         (claim.get("metadata") or {}).get("name", ""),
                                         preconditions={"uid": (claim.get("metadata") or {}).get("uid")})
            except StatusError as e:
                if e.code not in (404, 409):
                    raise _context_error(e, f"delete claim {namespace}/{claim['metadata']['name']}") from None

    async def _pod_consumer_exists(self, namespace: str, ref: dict) -> bool:
        uid = ref.get("uid", "")
        if uid in self.deleted_uids:
            return False
        pod = self.pods.get(f"{namespace}/{ref.get('name', '')}")
        if pod is None:
            # Not (yet) in the cache: dropping a reservation the scheduler just made would be
            # wrong, so ask the API server.
            try:
                pod = await self.client.get("v1", "Pod", namespace, ref.get("name", ""))
            except StatusError as e:
                if e.code == 404:
                    return False
                raise
            return (pod.get("metadata") or {}).get("uid") == uid
        if (pod.get("metadata") or {}).get("uid") != uid:
            return False
        return not is_pod_done(pod)

    async def _pod_group_consumer_exists(self, namespace: str, ref: dict) -> bool:
        uid = ref.get("uid", "")
        if uid in self.deleted_uids:
            return False
        pod_group = self.pod_groups.get(f"{namespace}/{ref.get('name', '')}") if self.pod_groups is not None else None
        if pod_group is None:
            try:
                pod_group = await self.client.get(self.pod_group_api_version, "PodGroup", namespace, ref.get("name", ""))
            except StatusError as e:
                if e.code == 404:
                    return False
                raise
        return (pod_group.get("metadata") or {}).get("uid") == uid


__all__ = ["ResourceClaimController", "FIELD_MANAGER", "EVENT_COMPONENT", "FAILED_RESOURCE_CLAIM_CREATION",
           "is_pod_done", "pod_needs_claims", "with_field_manager"]
