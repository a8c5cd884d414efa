"""What the workload controllers share: creating and deleting pods from a template, expectations,
claiming objects by controllerRef, pod predicates and upstream's small encodings.

The Job, ReplicaSet, Deployment and JobSet controllers build on these the way kube-controller-manager's
controllers build on `pkg/controller/controller_utils.go`:

    control = PodControl(client, component="job-controller")
    pod = await control.create_pod(namespace, template, owner, generate_name="pi-0-")   # event SuccessfulCreate
    await control.delete_pod(namespace, name, owner)                                  # event SuccessfulDelete

    expectations = ControllerExpectations(clock)
    expectations.expect_creations(key, 3)      # before creating 3 pods
    expectations.creation_observed(key)        # from the pod informer's add handler
    if expectations.satisfied(key): ...        # the informer has caught up with our own writes

    claimed = await claim_objects(client, owner, selector, candidates)  # adopt orphans, release strays

Pod informers shared by these controllers carry two indexers, `INDEX_CONTROLLER_UID` (pods by the uid
of their controller) and `INDEX_ORPHANS` (pods without a controller, by namespace), installed with
`add_workload_indexers(informer)`; the functions are module-level so every controller installs the
same ones on a shared informer.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

from ..client.clock import Clock, to_datetime
from ..client.interface import Client, MERGE_PATCH
from ..machinery.errors import StatusError
from ..machinery.meta import OwnerReference, controller_of, deep_copy
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds
from ..machinery.names import dns1123_subdomain_errors
from ..machinery.selectors import LabelSelector, label_selector_from_object

log = logging.getLogger("phalanx.controllers.podcontrol")

Obj = dict[str, Any]

INDEX_CONTROLLER_UID = "phalanx.dev/controller-uid"
INDEX_ORPHANS = "phalanx.dev/orphans-by-namespace"

# Upstream's controller.SlowStartInitialBatchSize and the expectations TTL (ExpectationsTimeout).
SLOW_START_INITIAL_BATCH_SIZE = 1
EXPECTATIONS_TIMEOUT = 300.0

# rand.SafeEncodeString's alphabet: no vowels, no 0/1/3 (nothing that spells words or looks alike).
SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


# -- encodings --------------------------------------------------------------------------------------
def fnv32a(data: bytes, h: int = 0x811C9DC5) -> int:
    """32-bit FNV-1a (Go's hash/fnv New32a), optionally continuing from a previous sum."""
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    """apimachinery's rand.SafeEncodeString: each character mapped into `SAFE_ALPHANUMS`."""
    return "".join(SAFE_ALPHANUMS[ord(c) % len(SAFE_ALPHANUMS)] for c in s)


def rfc3339(clock: Clock) -> str:
    return now_rfc3339(to_datetime(clock.now()))


# -- indexers ---------------------------------------------------------------------------------------
def index_by_controller_uid(obj: Obj) -> list[str]:
    ref = controller_of(obj)
    return [ref["uid"]] if ref and ref.get("uid") else []


def index_orphans_by_namespace(obj: Obj) -> list[str]:
    if controller_of(obj) is not None:
        return []
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


def add_workload_indexers(informer: Any) -> None:
    informer.add_indexer(INDEX_CONTROLLER_UID, index_by_controller_uid)
    informer.add_indexer(INDEX_ORPHANS, index_orphans_by_namespace)


def candidates_for(informer: Any, owner: Obj) -> list[Obj]:
    """Objects an owner may claim: those it controls and the orphans of its namespace."""
    md = owner["metadata"]
    owned = informer.by_index(INDEX_CONTROLLER_UID, md.get("uid", ""))
    orphans = informer.by_index(INDEX_ORPHANS, md.get("namespace", ""))
    return owned + orphans


# -- pod predicates ---------------------------------------------------------------------------------
def pod_phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_pod_active(pod: Obj) -> bool:
    """controller.IsPodActive: not Succeeded, not Failed, not being deleted."""
    return pod_phase(pod) not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def is_pod_terminating(pod: Obj) -> bool:
    """controller.IsPodTerminating: being deleted and not yet in a terminal phase."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and \
        pod_phase(pod) not in ("Succeeded", "Failed")


def pod_condition(pod: Obj, ctype: str) -> dict | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def is_pod_ready(pod: Obj) -> bool:
    c = pod_condition(pod, "Ready")
    return bool(c and c.get("status") == "True")


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """podutil.IsPodAvailable: ready, and for at least minReadySeconds."""
    c = pod_condition(pod, "Ready")
    if not c or c.get("status") != "True":
        return False
    if not min_ready_seconds:
        return True
    since = rfc3339_seconds(c.get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds <= now


def _restart_count(pod: Obj) -> int:
    st = pod.get("status") or {}
    return max((c.get("restartCount") or 0 for c in st.get("containerStatuses") or []), default=0)


def active_pods_deletion_order(pods: Iterable[Obj]) -> list[Obj]:
    """controller.ActivePods ordering: the pods to remove first come first. Unassigned before
    assigned; Pending before Unknown before Running; not ready before ready; ready for less time before
    more; more restarts before fewer; newer before older."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}

    def key(p: Obj) -> tuple:
        spec, md = p.get("spec") or {}, p.get("metadata") or {}
        ready = is_pod_ready(p)
        ready_since = rfc3339_seconds((pod_condition(p, "Ready") or {}).get("lastTransitionTime")) if ready else None
        created = rfc3339_seconds(md.get("creationTimestamp")) or 0.0
        return (1 if spec.get("nodeName") else 0, phase_rank.get(pod_phase(p), 3), 1 if ready else 0,
                -(ready_since or 0.0), -_restart_count(p), -created, md.get("name", ""))

    return sorted(pods, key=key)


# -- creating and deleting pods ---------------------------------------------------------------------
def controller_ref(owner: Obj) -> OwnerReference:
    """metav1.NewControllerRef: controller and blockOwnerDeletion set."""
    md = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"], "uid": md["uid"],
            "controller": True, "blockOwnerDeletion": True}


def pods_prefix(controller_name: str) -> str:
    """getPodsPrefix: `<name>-` when that is a valid generateName, else the name."""
    prefix = f"{controller_name}-"
    return prefix if not dns1123_subdomain_errors(prefix + "x") else controller_name


def pod_from_template(template: Obj, owner: Obj, generate_name: str | None = None) -> Obj:
    """controller.GetPodFromTemplate: labels, annotations and finalizers of the template, the owner as
    controller, `generateName` (default `<owner>-`) and a copy of the template's spec."""
    tmd = template.get("metadata") or {}
    md: Obj = {"generateName": generate_name or pods_prefix(owner["metadata"]["name"]),
               "namespace": owner["metadata"].get("namespace", "")}
    for f in ("labels", "annotations"):
        if tmd.get(f):
            md[f] = dict(tmd[f])
    if tmd.get("finalizers"):
        md["finalizers"] = list(tmd["finalizers"])
    md["ownerReferences"] = [controller_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": deep_copy(template.get("spec") or {})}


def is_namespace_terminating(err: StatusError) -> bool:
    causes = (err.details or {}).get("causes") or []
    return err.code == 403 and any(c.get("reason") == "NamespaceTerminating" for c in causes)


class PodControl:
    """controller.RealPodControl: pod writes with the events upstream records on the owner."""

    def __init__(self, client: Client, component: str):
        self.client = client
        self.component = component

    async def create_pod(self, namespace: str, template: Obj, owner: Obj, generate_name: str | None = None) -> Obj:
        """Create a pod from `template`; the result is read-only (the API's own object in process)."""
        pod = pod_from_template(template, owner, generate_name)
        if not (pod["metadata"].get("labels")):
            raise ValueError("unable to create pods, no labels")
        try:
            created = await self.client.create(pod, namespace=namespace, handover=True)  # `pod` is fresh
        except StatusError as e:
            if not is_namespace_terminating(e):
                await self.client.create_event(owner, "FailedCreate", f"Error creating: {e.message}",
                                               type="Warning", component=self.component)
            raise
        await self.client.create_event(owner, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                                       component=self.component)
        return created

    async def delete_pod(self, namespace: str, name: str, owner: Obj) -> None:
        try:
            await self.client.delete("v1", "Pod", namespace, name)
        except StatusError as e:
            if e.code == 404:
                raise
            await self.client.create_event(owner, "FailedDelete", f"Error deleting: {e.message}",
                                           type="Warning", component=self.component)
            raise
        await self.client.create_event(owner, "SuccessfulDelete", f"Deleted pod: {name}", component=self.component)

    async def patch_pod(self, namespace: str, name: str, body: Any, patch_type: str) -> Obj:
        return await self.client.patch("v1", "Pod", namespace, name, body, patch_type)


async def slow_start_batch(count: int, initial_batch_size: int, fn: Callable[[int], Awaitable[Any]]) -> int:
    """controller.slowStartBatch: call `fn(i)` for i in 0..count-1 in batches of 1, 2, 4, ...;
    after a batch with an error, stop and raise `BatchError`. Returns how many calls were made."""
    done = 0
    batch = min(count, initial_batch_size)
    while done < count:
        results = await asyncio.gather(*(fn(done + i) for i in range(batch)), return_exceptions=True)
        errs = [r for r in results if isinstance(r, BaseException)]
        done_ok = len(results) - len(errs)
        if errs:
            raise BatchError(done + done_ok, errs[0], count - done - batch)
        done += batch
        batch = min(2 * batch, count - done)
    return done


class BatchError(Exception):
    """A slow-start batch failed: how many calls succeeded, the first error, how many were skipped."""

    def __init__(self, succeeded: int, first: BaseException, skipped: int):
        super().__init__(str(first))
        self.succeeded = succeeded
        self.first = first
        self.skipped = skipped



# -- expectations -----------------------------------------------------------------------------------
@dataclass
class _Expectation:
    adds: int = 0
    deletes: set = field(default_factory=set)
    timestamp: float = 0.0


class ControllerExpectations:
    """client-go's (UID-tracking) ControllerExpectations: what a controller still expects its
    informer to show after its own creates and deletes. A key with no record, a fulfilled record
    or a record older than five minutes is satisfied."""

    def __init__(self, clock: Clock, timeout: float = EXPECTATIONS_TIMEOUT):
        self.clock = clock
        self.timeout = timeout
        self._records: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        rec = self._records.get(key)
        if rec is None:
            return True
        if rec.adds <= 0 and not rec.deletes:
            return True
        return self.clock.now() - rec.timestamp > self.timeout

    def expect_creations(self, key: str, n: int) -> None:
        self._records[key] = _Expectation(adds=n, timestamp=self.clock.now())

    def expect_deletions(self, key: str, uids: Iterable[str]) -> None:
        self._records[key] = _Expectation(deletes=set(uids), timestamp=self.clock.now())

    def creation_observed(self, key: str) -> None:
        rec = self._records.get(key)
        if rec is not None:
            rec.adds -= 1

    def deletion_observed(self, key: str, uid: str) -> None:
        rec = self._records.get(key)
        if rec is not None:
            rec.deletes.discard(uid)

    def delete(self, key: str) -> None:
        self._records.pop(key, None)


# -- claiming by controllerRef ----------------------------------------------------------------------
def selector_of(obj: Obj) -> LabelSelector:
    """The object's `spec.selector` as a LabelSelector (nothing when unset or invalid)."""
    try:
        return label_selector_from_object((obj.get("spec") or {}).get("selector"))
    except ValueError:
        return LabelSelector.nothing()


async def claim_objects(client: Client, owner: Obj, selector: LabelSelector, candidates: Iterable[Obj], *,
                        api_version: str, kind: str, adopt_finalizer: str | None = None,
                        filter_fn: Callable[[Obj], bool] | None = None) -> list[Obj]:
    """controller.BaseControllerRefManager.ClaimObject for each candidate: keep what the owner
    controls and its selector matches; adopt matching orphans (adding the controllerRef, and
    `adopt_finalizer` if given) unless the owner is being deleted; release controlled objects the
    selector no longer matches. Returns the claimed objects (adopted ones as updated)."""
    md = owner["metadata"]
    uid = md.get("uid")
    owner_deleting = bool(md.get("deletionTimestamp"))
    claimed: list[Obj] = []
    for obj in candidates:
        if filter_fn is not None and not filter_fn(obj):
            continue
        omd = obj.get("metadata") or {}
        ref = controller_of(obj)
        labels = omd.get("labels") or {}
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if selector.matches(labels):
                claimed.append(obj)
            elif not owner_deleting and not omd.get("deletionTimestamp"):
                refs = [r for r in omd.get("ownerReferences") or [] if r.get("uid") != uid]
                await _patch_owner_refs(client, api_version, kind, obj, refs, None)
            continue
        if owner_deleting or omd.get("deletionTimestamp") or not selector.matches(labels):
            continue
        refs = list(omd.get("ownerReferences") or []) + [controller_ref(owner)]
        adopted = await _patch_owner_refs(client, api_version, kind, obj, refs, adopt_finalizer)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def _patch_owner_refs(client: Client, api_version: str, kind: str, obj: Obj, refs: list[dict],
                            finalizer: str | None) -> Obj | None:
    omd = obj["metadata"]
    body: Obj = {"metadata": {"ownerReferences": refs, "resourceVersion": omd.get("resourceVersion")}}
    if finalizer and finalizer not in (omd.get("finalizers") or []):
        body["metadata"]["finalizers"] = list(omd.get("finalizers") or []) + [finalizer]
    try:
        return await client.patch(api_version, kind, omd.get("namespace"), omd["name"], body, MERGE_PATCH)
    except StatusError as e:
        if e.code in (404, 409):
            return None  # gone or changed meanwhile: the next sync sees the new state
        raise
