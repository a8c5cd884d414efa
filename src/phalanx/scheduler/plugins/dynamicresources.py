"""DynamicResources: the scheduler's side of DRA (`resource.k8s.io/v1`), PodGroup claims included.

Registered by `Scheduler._extend_registry` as `factory(scheduler)`, which builds one
`ClaimTracker` per scheduler (fed by ResourceClaim, ResourceSlice and DeviceClass informers that
also raise the queue's cluster events) and returns `new(args, handle)` for every profile:

    tracker = ClaimTracker(gates)            # or let factory(scheduler) build and wire it
    tracker.claim_added(claim); tracker.slice_added(slice_); tracker.class_added(device_class)
    plugin = DynamicResources(tracker, client, gates=gates, pod_group_of=lambda pod: podgroup)

Extension points, with upstream's behaviour and messages:

- **PreEnqueue** keeps a pod gated until every claim it names exists: `resourceClaimName`
  directly, template claims through `pod.status.resourceClaimStatuses` (for a claim that matches
  the pod's PodGroup claim, the PodGroup's generated claim recorded there by the ResourceClaim
  controller).
- **PreFilter** collects the claims. A claim being deleted, a claim whose `reservedFor` is full
  (256) without this consumer, or a request naming a DeviceClass that does not exist makes the pod
  UnschedulableAndUnresolvable. An allocated claim restricts the nodes to its
  `allocation.nodeSelector` (a node-name-only selector also narrows the node list). A claim whose
  allocation is *in flight* (chosen by Reserve, not yet written by PreBind: an earlier pod of the
  same gang cycle, or an earlier cycle) counts as allocated with that pending allocation, so later
  pods of a group reuse it and land on its nodes (upstream PR #137647's fix; no "is in the process
  of being allocated" loops).
- **Filter** checks those node selectors ("resourceclaim not available on the node") and runs
  the structured allocator (`phalanx.dra.allocate`) for the unallocated claims on the node. Devices
  in use are every allocated claim's devices plus every in-flight allocation, maintained
  incrementally by the tracker. A failure reads "cannot allocate all claims" followed by the
  allocator's reasons; a CEL selector error is the user's, reported UnschedulableAndUnresolvable
  with the expression quoted (upstream aborts the cycle with an error instead).
- **PostFilter** deallocates (asynchronously, `/status` update) an allocated claim that did not
  fit any node and that nobody but this pod has reserved; claims reserved for a PodGroup are never
  deallocated here (KEP-5729 in 1.36).
- **Reserve** records the chosen allocation per claim uid in the tracker's in-flight set (devices
  are then taken for every later cycle); pods reusing a pending allocation join it. **Unreserve**
  leaves it; the allocation is dropped when its last holder leaves, unless it was already written.
- **PreBind** (a coroutine) writes, per claim, under a per-claim lock: the finalizer
  `resource.kubernetes.io/delete-protection` (metadata update), then `status.allocation` (with
  `allocationTimestamp`) and the consumer in `status.reservedFor` (a pod ref, or the single
  PodGroup ref `{apiGroup: scheduling.k8s.io, resource: podgroups, name, uid}` for a claim that
  matches the pod's PodGroup claim; added once, never per pod). Conflicts (409) re-read the claim
  and retry; a claim allocated to something else in the meantime fails the binding ("claim ... got
  allocated elsewhere in the meantime"), it is never allocated twice. The written claim is kept as
  an assumed object until the informer catches up.
- **EventsToRegister**: ResourceClaim add/update (the pod's own claims, or a deallocation),
  ResourceSlice and DeviceClass add/update, Node add/label change, the pod's own
  `status.resourceClaimStatuses` update, and deletion of an assigned pod that used claims.

Speed: claims, slices and classes are indexed once in the tracker; devices in use are a
`dra.devices.DevicesInUse` updated per claim change and per Reserve/Unreserve (never recomputed
per pod), with a version per resource pool. One `dra.AllocatorCache` (compiled CEL, per-device
selector results, per-node views) and one `dra.Inventory` rebuilt only when slices change serve
every cycle. Filter prepares the pod's claims once per cycle (`ClaimsAllocator`) and, over a chunk
of nodes, takes the answer the allocator remembers for a node while nothing that node reaches has
changed since a pod with claims of the same shape was filtered there: one search per pod on the
node that changed, two lookups on the others. Results are spelled out for the node Reserve picks
only; failing nodes that fail alike share one Status. An allocation's node selector is compiled
once and answers once per node and labels object. The claim queueing hint first checks the claim's
name against the pod's (it runs for every waiting pod on every claim change).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from fractions import Fraction
from typing import Any, AsyncIterator, Callable, Mapping, Optional, Sequence

import orjson

from phalanx.client.clock import REAL_CLOCK, to_datetime
from phalanx.dra import AllocationError, AllocatorCache, Inventory, SelectorError
from phalanx.dra.allocator import ClaimsAllocator, NodeAnswer
from phalanx.dra import claims as draclaims
from phalanx.dra.devices import DeviceID, DevicesInUse, consumed_capacity
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.meta import deep_copy
from phalanx.machinery.timestamps import now_rfc3339
from phalanx.machinery.selectors import compile_node_selector_term
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (
    UNSIGNABLE,
    EnqueueExtensions,
    FilterPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from phalanx.scheduler.framework.status import Code, Status, as_status
from phalanx.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    Obj,
    PodInfo,
    QueueingHint,
)

from . import names

log = logging.getLogger("phalanx.scheduler.dynamicresources")

STATE_KEY = names.DynamicResources
RESOURCE_API_VERSION = "resource.k8s.io/v1"
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256  # resourceapi.ResourceClaimReservedForMaxSize
BIND_CONFLICT_RETRIES = 5  # client-go retry.DefaultRetry steps

MSG_CANNOT_ALLOCATE = "cannot allocate all claims"
MSG_NOT_AVAILABLE = "resourceclaim not available on the node"
MSG_IN_USE = "resourceclaim in use"
MSG_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
MSG_DEALLOCATION_REQUESTED = "deallocation of ResourceClaim requested"


def _md(obj: Optional[Mapping]) -> Mapping:
    return (obj or {}).get("metadata") or {}


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _claim_key(claim: Mapping) -> str:
    md = _md(claim)
    return _key(md.get("namespace", ""), md.get("name", ""))


def _ref(claim: Mapping) -> str:
    """klog.KObj of a claim: `namespace/name`."""
    return _claim_key(claim)


def _rv(obj: Optional[Mapping]) -> int:
    try:
        return int(_md(obj).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _allocation(claim: Optional[Mapping]) -> Optional[dict]:
    return ((claim or {}).get("status") or {}).get("allocation")


def _allocation_devices(allocation: Optional[Mapping]) -> tuple[frozenset, dict]:
    """(exclusively used DeviceIDs, capacity consumed from shared devices) of one allocation."""
    if not allocation:
        return frozenset(), {}
    results = (allocation.get("devices") or {}).get("results") or []
    used = frozenset(DeviceID(r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
                     for r in results if not r.get("adminAccess") and not r.get("shareID"))
    shared = consumed_capacity([{"status": {"allocation": allocation}}]) if any(
        r.get("shareID") for r in results) else {}
    return used, shared


def _allocation_identity(allocation: Optional[Mapping]) -> tuple:
    """What makes two allocations the same decision (timestamps and defaults aside)."""
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return tuple(sorted((r.get("request", ""), r.get("driver", ""), r.get("pool", ""), r.get("device", ""),
                         r.get("shareID") or "") for r in results))


_NAMED_CLAIMS_CACHE_SIZE = 4096


def _may_name(cache: dict[int, tuple[Obj, str, frozenset]], pod: Obj, claim: Obj) -> bool:
    """Whether the pod could name this claim: same namespace, and the claim's name is a
    `resourceClaimName` of the pod or recorded in its `status.resourceClaimStatuses` (a quick
    filter for queueing hints, which run for every waiting pod on every claim change; the names
    are worked out once per pod object and kept in `cache`)."""
    entry = cache.get(id(pod))
    if entry is None or entry[0] is not pod:
        names = [pc.get("resourceClaimName") for pc in (pod.get("spec") or {}).get("resourceClaims") or ()
                 if isinstance(pc, dict)]
        names += [st.get("resourceClaimName") for st in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
                  if isinstance(st, dict)]
        if len(cache) >= _NAMED_CLAIMS_CACHE_SIZE:
            cache.clear()
        entry = cache[id(pod)] = (pod, _md(pod).get("namespace", ""), frozenset(names))
    md = claim.get("metadata") or {}
    return md.get("name") in entry[2] and md.get("namespace", "") == entry[1]


class _NodeSelector:
    """A compiled `allocation.nodeSelector` (terms ORed); `names` when it only names nodes. The
    answer per node is kept while the node's labels object is the same (a node update brings a
    new one), so the pods sharing an allocation check each node once."""

    __slots__ = ("terms", "names", "_answers")

    def __init__(self, selector: Mapping[str, Any]):
        raw_terms = selector.get("nodeSelectorTerms") or []
        self.terms = [compile_node_selector_term(t) for t in raw_terms]
        errors = [e for t in self.terms for e in t.errors]
        if errors:
            raise ValueError("; ".join(errors))
        self.names = _names_only(raw_terms)
        self._answers: dict[str, tuple[Any, bool]] = {}  # node name -> (its labels object, answer)

    def matches(self, node: Mapping[str, Any]) -> bool:
        md = node.get("metadata") or {}
        name = md.get("name", "")
        labels = md.get("labels")
        known = self._answers.get(name)
        if known is not None and known[0] is labels and labels is not None:
            return known[1]
        answer = any(t.matches(node) for t in self.terms)
        self._answers[name] = (labels, answer)
        return answer


_MAX_NODE_SELECTORS = 4096


def _names_only(terms: Sequence[Mapping[str, Any]]) -> Optional[set[str]]:
    """The node names a selector allows when every term is just `metadata.name In [...]`."""
    out: set[str] = set()
    for t in terms:
        if t.get("matchExpressions"):
            return None
        fields = t.get("matchFields") or []
        if len(fields) != 1:
            return None
        f = fields[0]
        if f.get("key") != "metadata.name" or f.get("operator") != "In":
            return None
        out.update(f.get("values") or ())
    return out if terms else None


# -- the tracker: what every cycle shares ------------------------------------------------------------

class InFlightAllocation:
    """An allocation chosen by Reserve and not yet written by PreBind (upstream's pending
    allocation), held by the pods that reserved it."""

    __slots__ = ("uid", "key", "allocation", "identity", "holders")

    def __init__(self, uid: str, key: str, allocation: dict):
        self.uid = uid
        self.key = key
        self.allocation = allocation
        self.identity = _allocation_identity(allocation)
        self.holders: set[str] = set()

    def __repr__(self) -> str:
        return f"InFlightAllocation({self.key}, holders={len(self.holders)})"


class ClaimTracker:
    """Claims, slices and classes as the plugin needs them, shared by every profile and cycle:

    - `claims`: the effective ResourceClaims by `namespace/name`: the informer's version, or the
      scheduler's own write while the informer has not caught up (upstream's assume cache);
    - `in_flight`: pending allocations by claim uid;
    - `in_use`: DeviceID -> number of claims holding it (allocated or in flight), kept up to date
      on every change; `consumed()` the capacity taken from shared devices;
    - `inventory()`: the ResourceSlices indexed once (`dra.Inventory`), rebuilt after a slice
      change; `classes`: DeviceClasses by name; `allocator_cache`: one `dra.AllocatorCache`.
    """

    def __init__(self, allocator_cache: Optional[AllocatorCache] = None):
        self.claims: dict[str, Obj] = {}
        self._assumed: set[str] = set()
        self._key_of_uid: dict[str, str] = {}
        self.in_flight: dict[str, InFlightAllocation] = {}
        self.in_use = DevicesInUse()
        self.reserving: dict[str, Counter[str]] = {}  # claim uid -> consumer uid -> pods reserved
        self.slices: dict[str, Obj] = {}
        self._inventory: Optional[Inventory] = None
        self._slices_changed = True
        self.classes: dict[str, Obj] = {}
        self.allocator_cache = allocator_cache or AllocatorCache()
        self._locks: dict[str, list] = {}  # claim uid -> [lock, users]
        self._node_selectors: dict[bytes, _NodeSelector] = {}
        self.deallocating: set[str] = set()

    # -- claims ----------------------------------------------------------------------------------
    def get(self, namespace: str, name: str) -> Optional[Obj]:
        return self.claims.get(_key(namespace, name))

    def claim_added(self, claim: Obj) -> None:
        self._set_claim(claim, from_informer=True)

    def claim_updated(self, old: Optional[Obj], new: Obj) -> None:
        self._set_claim(new, from_informer=True)

    def claim_deleted(self, claim: Obj) -> None:
        key = _claim_key(claim)
        current = self.claims.pop(key, None)
        self._assumed.discard(key)
        uid = _md(current or claim).get("uid", "")
        if uid and self._key_of_uid.get(uid) == key:
            del self._key_of_uid[uid]
        self.deallocating.discard(uid)
        self._account(uid)

    def assume(self, claim: Obj) -> None:
        """The scheduler's own write: effective until the informer shows this version or newer."""
        self._set_claim(claim, from_informer=False)

    def _set_claim(self, claim: Obj, *, from_informer: bool) -> None:
        key = _claim_key(claim)
        current = self.claims.get(key)
        if from_informer and key in self._assumed and current is not None \
                and _md(current).get("uid") == _md(claim).get("uid") and _rv(claim) < _rv(current):
            return  # older than our own write: keep ours
        if from_informer:
            self._assumed.discard(key)
        else:
            self._assumed.add(key)
        old_uid = _md(current).get("uid", "") if current is not None else ""
        self.claims[key] = claim
        uid = _md(claim).get("uid", "")
        if old_uid and old_uid != uid:
            self._key_of_uid.pop(old_uid, None)
            self.deallocating.discard(old_uid)
            self._account(old_uid)
        if uid:
            self._key_of_uid[uid] = key
            if from_informer:
                self.deallocating.discard(uid)  # any change: PostFilter may look at it again
            self._account(uid)

    def _account(self, uid: str) -> None:
        """Bring `in_use` (exclusive devices and shared capacity) up to date for one claim uid."""
        if not uid:
            return
        key = self._key_of_uid.get(uid)
        claim = self.claims.get(key) if key is not None else None
        allocation = _allocation(claim)
        if allocation is None:
            entry = self.in_flight.get(uid)
            allocation = entry.allocation if entry is not None else None
        if allocation is None:
            self.in_use.drop(uid)
            return
        devices, shared = _allocation_devices(allocation)
        self.in_use.hold(uid, devices, shared)

    def consumed(self) -> dict[DeviceID, dict[str, Fraction]]:
        """Capacity taken from shared (allowMultipleAllocations) devices, allocated or in flight."""
        return self.in_use.consumed()

    # -- in-flight allocations -----------------------------------------------------------------------
    def pending(self, uid: str) -> Optional[InFlightAllocation]:
        return self.in_flight.get(uid)

    def hold(self, uid: str, key: str, allocation: dict, holder: str) -> Optional[str]:
        """Reserve `allocation` for a claim on behalf of `holder` (a pod uid): creates the in-flight
        entry, or joins it when it holds the same allocation. Returns why not, or None."""
        entry = self.in_flight.get(uid)
        if entry is None:
            devices, _ = _allocation_devices(allocation)
            if any(d in self.in_use for d in devices):
                return f"resource claim {key} is in the process of being allocated"
            entry = self.in_flight[uid] = InFlightAllocation(uid, key, allocation)
            entry.holders.add(holder)
            self._account(uid)
            return None
        if entry.identity != _allocation_identity(allocation):
            return f"resource claim {key} is in the process of being allocated"
        entry.holders.add(holder)
        return None

    def release(self, uid: str, holder: str) -> None:
        """`holder` no longer needs the in-flight allocation; the last one drops it."""
        entry = self.in_flight.get(uid)
        if entry is None:
            return
        entry.holders.discard(holder)
        if not entry.holders:
            del self.in_flight[uid]
            self._account(uid)

    def written(self, uid: str) -> None:
        """PreBind wrote the allocation (the assumed claim now carries it)."""
        if self.in_flight.pop(uid, None) is not None:
            self._account(uid)

    def add_reserving(self, uid: str, consumer: str) -> None:
        self.reserving.setdefault(uid, Counter())[consumer] += 1

    def remove_reserving(self, uid: str, consumer: str) -> None:
        c = self.reserving.get(uid)
        if c is None:
            return
        c[consumer] -= 1
        if c[consumer] <= 0:
            del c[consumer]
        if not c:
            del self.reserving[uid]

    @contextlib.asynccontextmanager
    async def claim_lock(self, uid: str) -> AsyncIterator[None]:
        """Serialize the PreBind writes for one claim (the pods of a group bind concurrently)."""
        entry = self._locks.get(uid)
        if entry is None:
            entry = self._locks[uid] = [asyncio.Lock(), 0]
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[uid]

    def node_selector(self, selector: Mapping[str, Any]) -> _NodeSelector:
        """The compiled form of an allocation's node selector, shared by equal selectors (the pods of
        a group reusing one allocation). Raises ValueError for an invalid one."""
        key = orjson.dumps(selector, option=orjson.OPT_SORT_KEYS)
        compiled = self._node_selectors.get(key)
        if compiled is None:
            compiled = _NodeSelector(selector)
            if len(self._node_selectors) >= _MAX_NODE_SELECTORS:
                self._node_selectors.clear()
            self._node_selectors[key] = compiled
        return compiled

    # -- slices and classes -------------------------------------------------------------------------
    def slice_added(self, slice_: Obj) -> None:
        self.slices[_md(slice_).get("name", "")] = slice_
        self._slices_changed = True

    def slice_updated(self, old: Optional[Obj], new: Obj) -> None:
        self.slice_added(new)

    def slice_deleted(self, slice_: Obj) -> None:
        self.slices.pop(_md(slice_).get("name", ""), None)
        self._slices_changed = True

    def inventory(self) -> Inventory:
        """The slices indexed; rebuilt (reusing unchanged slices' parsed devices) after a change."""
        if self._slices_changed or self._inventory is None:
            self._inventory = Inventory(list(self.slices.values()), previous=self._inventory)
            self._slices_changed = False
        return self._inventory

    def class_added(self, device_class: Obj) -> None:
        self.classes[_md(device_class).get("name", "")] = device_class

    def class_updated(self, old: Optional[Obj], new: Obj) -> None:
        self.class_added(new)

    def class_deleted(self, device_class: Obj) -> None:
        self.classes.pop(_md(device_class).get("name", ""), None)


# -- per-cycle state ---------------------------------------------------------------------------------

class _ClaimInfo:
    """One claim of the pod being scheduled, as PreFilter found it."""

    __slots__ = ("pod_claim", "claim", "key", "uid", "consumer", "selector", "pending", "to_allocate",
                 "allocation", "held", "reserving", "reserved_in_api")

    def __init__(self, pod_claim: dict, claim: Obj, consumer: dict):
        self.pod_claim = pod_claim
        self.claim = claim
        self.key = _claim_key(claim)
        self.uid: str = _md(claim).get("uid", "")
        self.consumer = consumer
        self.selector: Optional[_NodeSelector] = None
        self.pending: Optional[dict] = None  # an in-flight allocation this pod reuses
        self.to_allocate = False
        self.allocation: Optional[dict] = None  # chosen by Reserve for a claim this pod allocates
        self.held = False  # this pod holds the claim's in-flight allocation
        self.reserving = False  # counted in the tracker's pending reservations
        self.reserved_in_api = False  # PreBind added this pod to reservedFor

    @property
    def consumer_uid(self) -> str:
        return self.consumer.get("uid", "")


class _CycleData:
    """What PreFilter found; Filter, Reserve, PreBind and PostFilter read it (shared by clones, as
    upstream's stateData)."""

    __slots__ = ("claims", "to_allocate", "needs_devices", "has_selectors", "allocator", "node_answers",
                 "failures", "unavailable", "no_devices_status", "error_status", "reserved")

    def __init__(self) -> None:
        self.claims: list[_ClaimInfo] = []
        self.to_allocate: list[_ClaimInfo] = []
        self.needs_devices = False
        self.has_selectors = False  # some claim is allocated already: its node selector applies
        self.allocator: Optional[ClaimsAllocator] = None  # built by the first Filter that allocates
        self.node_answers: dict[str, NodeAnswer] = {}  # results are spelled out for the chosen node only
        self.failures: dict[tuple, Status] = {}  # reasons -> the Status Filter returns for them
        self.unavailable: set[int] = set()
        self.no_devices_status: Optional[Status] = None
        self.error_status: Optional[Status] = None
        self.reserved = False

    def clone(self) -> "_CycleData":
        return self


class _BindFailure(Exception):
    """PreBind could not record a claim's allocation or reservation; `str()` is the message."""


def _unresolvable(message: str) -> Status:
    return Status.new(Code.UnschedulableAndUnresolvable, message).with_plugin(names.DynamicResources)


# -- the plugin --------------------------------------------------------------------------------------

def _is_native_resource(name: str) -> bool:
    return name in ("cpu", "memory", "ephemeral-storage", "pods") or name.startswith("hugepages-") \
        or name.startswith("requests.")


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ReservePlugin,
                       PreBindPlugin, EnqueueExtensions):
    NAME = names.DynamicResources

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching: claims make a pod's fit depend on devices, so a pod with claims (or with
        extended resources, which a DeviceClass may back) is unsignable; otherwise nothing."""
        if pod.spec.get("resourceClaims"):
            return UNSIGNABLE
        if any(not _is_native_resource(r) for r in pod.requests_list):
            return UNSIGNABLE
        return None

    def __init__(self, tracker: ClaimTracker, client: Any = None, *, gates: Any = None,
                 pod_group_of: Optional[Callable[[Obj], Optional[Obj]]] = None, clock: Any = None,
                 handle: Any = None):
        self.tracker = tracker
        self.handle = handle
        self.client = client
        self.gates = gates if gates is not None else FeatureGates()
        self.workload_claims = self._enabled(draclaims.WORKLOAD_RESOURCE_CLAIMS_GATE)
        self.prioritized_list = self._enabled("DRAPrioritizedList")
        self.partitionable_devices = self._enabled("DRAPartitionableDevices")
        self.pod_group_of = pod_group_of or (lambda pod: None)
        self.clock = clock or REAL_CLOCK
        self._tasks: set[asyncio.Task] = set()
        self._named_claims: dict[int, tuple[Obj, str, frozenset]] = {}  # for _may_name
        self._not_available = _unresolvable(MSG_NOT_AVAILABLE)
        self._events = [
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel
                                              | ActionType.UpdateNodeAllocatable)),
            ClusterEventWithHint(ClusterEvent(EventResource.ResourceClaim, ActionType.Add | ActionType.Update),
                                 self._after_claim_change),
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.UpdatePodGeneratedResourceClaim),
                                 self._after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.DeviceClass, ActionType.Add | ActionType.Update)),
            ClusterEventWithHint(ClusterEvent(EventResource.ResourceSlice, ActionType.Add | ActionType.Update)),
            ClusterEventWithHint(ClusterEvent(EventResource.AssignedPod, ActionType.Delete),
                                 self._after_assigned_pod_delete),
        ]

    def _enabled(self, gate: str) -> bool:
        try:
            return bool(self.gates.enabled(gate))
        except Exception:
            return False

    # -- finding the pod's claims --------------------------------------------------------------------
    def _pod_claims(self, pod: Obj) -> tuple[list[tuple[dict, Obj]], Optional[str]]:
        """(pod claim, ResourceClaim) for every claim the pod names, or why that is not possible
        (upstream foreachPodResourceClaim)."""
        out: list[tuple[dict, Obj]] = []
        namespace = _md(pod).get("namespace", "")
        for pc in draclaims.pod_claims(pod):
            name, must_check_owner, err = draclaims.claim_name(pod, pc)
            if err is not None:
                return out, str(err)
            if name is None:
                continue  # no claim was needed for this entry
            claim = self.tracker.get(namespace, name)
            if claim is None:
                return out, f'resourceclaim.resource.k8s.io "{name}" not found'
            if _md(claim).get("deletionTimestamp"):
                return out, f'resourceclaim "{name}" is being deleted'
            if must_check_owner:
                owner_err = draclaims.is_for_pod(pod, claim, accept_pod_group_owner=self.workload_claims)
                if owner_err is not None:
                    return out, str(owner_err)
            out.append((pc, claim))
        return out, None

    def _pod_group(self, pod: Obj) -> Optional[Obj]:
        if not self.workload_claims or draclaims.pod_group_name(pod) is None:
            return None
        return self.pod_group_of(pod)

    # -- PreEnqueue ----------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Optional[Status]:
        if not draclaims.pod_claims(pod.pod):
            return None
        _, why = self._pod_claims(pod.pod)
        return _unresolvable(why) if why is not None else None

    # -- PreFilter -----------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        pod_obj = pod.pod
        if not draclaims.pod_claims(pod_obj):
            return None, Status.new(Code.Skip)
        found, why = self._pod_claims(pod_obj)
        if why is not None:
            return None, _unresolvable(why)
        if not found:
            return None, Status.new(Code.Skip)
        pod_group = self._pod_group(pod_obj)
        data = _CycleData()
        node_names: Optional[set[str]] = None
        seen: set[str] = set()
        for pc, claim in found:
            uid = _md(claim).get("uid", "")
            if uid in seen:
                continue  # the same claim named twice: one allocation, one reservation
            seen.add(uid)
            consumer, err = draclaims.consumer_reference(pod_obj, pod_group, pc,
                                                         workload_claims_enabled=self.workload_claims)
            info = _ClaimInfo(pc, claim, consumer if err is None and consumer else draclaims.pod_reference(pod_obj))
            allocation = _allocation(claim)
            if allocation is None:
                entry = self.tracker.pending(uid)
                if entry is not None:  # allocated by an earlier pod, not written yet: reuse it
                    info.pending = allocation = entry.allocation
            if allocation is not None:
                if not self._can_reserve(pod_obj, claim, info):
                    return None, _unresolvable(MSG_IN_USE)
                selector = allocation.get("nodeSelector")
                if selector:
                    try:
                        info.selector = self.tracker.node_selector(selector)
                    except ValueError as e:
                        return None, as_status(e)
                    data.has_selectors = True
                    if info.selector.names is not None:
                        node_names = set(info.selector.names) if node_names is None \
                            else node_names & info.selector.names
                        if not self._any_node_named(info.selector.names, nodes):
                            data.unavailable.add(len(data.claims))  # Filter will not see it: PostFilter may
            else:
                st = self._check_requests(claim)
                if st is not None:
                    return None, st
                info.to_allocate = True
                data.to_allocate.append(info)
                if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
                    data.needs_devices = True
            data.claims.append(info)
        state.write(STATE_KEY, data)
        if node_names is not None:
            return PreFilterResult(node_names), None
        return None, None

    def _any_node_named(self, names: set[str], nodes: Sequence[NodeInfo]) -> bool:
        lister = self.handle.snapshot_shared_lister() if self.handle is not None else None
        known = getattr(lister, "node_info_map", None)
        if known is None:
            known = {ni.name for ni in nodes}
        return any(n in known for n in names)

    def _can_reserve(self, pod: Obj, claim: Obj, info: _ClaimInfo) -> bool:
        """Whether the pod may use an allocated (or pending) claim: it is already reserved for the
        pod or its PodGroup, or `reservedFor` (with reservations on their way) has room."""
        if draclaims.is_reserved_for_pod(pod, claim, accept_pod_group=self.workload_claims):
            return True
        consumers = {r.get("uid") for r in draclaims.reserved_for(claim)}
        consumers.update(self.tracker.reserving.get(info.uid, ()))
        if info.consumer_uid in consumers:
            return True
        return len(consumers) < RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE

    def _check_requests(self, claim: Obj) -> Optional[Status]:
        """Every request's DeviceClass must exist (upstream validateDeviceClass)."""
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = request.get("name", "")
            exactly = request.get("exactly")
            if exactly is not None:
                st = self._check_class(exactly.get("deviceClassName") or "", name)
            elif request.get("firstAvailable"):
                if not self.prioritized_list:
                    return _unresolvable(f"resource claim {_ref(claim)}, request {name}: has subrequests, but the "
                                         f"DRAPrioritizedList feature is disabled")
                st = None
                for sub in request["firstAvailable"]:
                    st = self._check_class(sub.get("deviceClassName") or "", f"{name}/{sub.get('name', '')}")
                    if st is not None:
                        break
            else:
                return _unresolvable(f"resource claim {_ref(claim)}, request {name}: unknown request type")
            if st is not None:
                return st
        return None

    def _check_class(self, class_name: str, request_name: str) -> Optional[Status]:
        if not class_name:
            return as_status(f"request {request_name}: unsupported request type")
        if class_name not in self.tracker.classes:
            return _unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    # -- Filter --------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.claims:
            return None
        node = node_info.node
        if data.has_selectors:
            unavailable = False
            for index, info in enumerate(data.claims):
                if info.selector is not None and not info.selector.matches(node):
                    data.unavailable.add(index)
                    unavailable = True
            if unavailable:
                return self._not_available
        if not data.to_allocate:
            return None
        if data.error_status is not None:
            return data.error_status
        tracker = self.tracker
        view = tracker.inventory().node_view(node, self.partitionable_devices)
        bare = data.needs_devices and not view.devices
        if bare and data.no_devices_status is not None:
            return data.no_devices_status  # nothing here to allocate from: same answer as before
        allocator = self._allocator(data)
        try:
            answer = allocator.answer(node, tracker.inventory(), tracker.in_use, view=view)
        except SelectorError as e:
            data.error_status = _unresolvable(e.explanation)
            return data.error_status
        except AllocationError as e:
            data.error_status = as_status(e)
            return data.error_status
        if not answer.fits:
            st = self._cannot_allocate(data, allocator, answer)
            if bare:
                data.no_devices_status = st
            return st
        data.node_answers[node_info.name] = answer
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        """Filter over many nodes: a node whose answer the allocator remembers (nothing it reaches
        changed since a pod with claims of the same shape was filtered there) costs two lookups."""
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.claims:
            return []
        if data.has_selectors or not data.to_allocate:
            return super().filter_nodes(state, pod, nodes)
        allocator = self._allocator(data)
        out: list[tuple[int, Status]] = []
        filter_ = self.filter
        n = len(nodes)
        i = 0
        while i < n and not allocator.planned and data.error_status is None:  # the first search plans
            st = filter_(state, pod, nodes[i])
            if st is not None and st.code != Code.Success:
                out.append((i, st))
            i += 1
        if i == n:
            return out
        tracker = self.tracker
        inventory = tracker.inventory()
        rest = nodes[i:]
        remembered = allocator.remembered_on([ni.name for ni in rest], inventory, tracker.in_use,
                                             [ni.node for ni in rest] if inventory.label_dependent else None)
        answers = data.node_answers
        for i, answer in enumerate(remembered, i):
            if answer is None or data.error_status is not None:
                st = filter_(state, pod, nodes[i])
                if st is not None and st.code != Code.Success:
                    out.append((i, st))
            elif answer.fits:
                answers[nodes[i].name] = answer
            else:
                out.append((i, self._cannot_allocate(data, allocator, answer)))
        return out

    def _allocator(self, data: "_CycleData") -> ClaimsAllocator:
        if data.allocator is None:
            data.allocator = ClaimsAllocator([i.claim for i in data.to_allocate], self.tracker.classes,
                                             gates=self.gates, cache=self.tracker.allocator_cache)
        return data.allocator

    @staticmethod
    def _cannot_allocate(data: "_CycleData", allocator: ClaimsAllocator, answer: NodeAnswer) -> Status:
        """"cannot allocate all claims" with the allocator's reasons; one Status per distinct set of
        reasons in a cycle (most failing nodes fail the same way)."""
        why = answer.explained()
        st = data.failures.get(why)
        if st is None:
            st = data.failures[why] = _unresolvable(MSG_CANNOT_ALLOCATE)
            for reason in answer.reasons(allocator):
                st.append_reason(reason)
        return st

    # -- PostFilter ----------------------------------------------------------------------------------
    def post_filter(self, state: CycleState, pod: PodInfo,
                    node_to_status: Any) -> tuple[Optional[PostFilterResult], Optional[Status]]:
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.claims:
            return None, Status.new(Code.Unschedulable, MSG_NO_CLAIMS_TO_DEALLOCATE)
        for index in sorted(data.unavailable):
            info = data.claims[index]
            claim = self.tracker.claims.get(info.key)
            if claim is None or _md(claim).get("uid") != info.uid or _allocation(claim) is None:
                continue
            reserved = draclaims.reserved_for(claim)
            if any(not draclaims.is_pod_consumer(r) for r in reserved):
                continue  # reserved for a PodGroup (or another kind): never deallocated here
            if info.uid in self.tracker.reserving or info.uid in self.tracker.in_flight:
                continue  # another pod is about to use it
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                if info.uid not in self.tracker.deallocating:
                    self.tracker.deallocating.add(info.uid)
                    self._spawn(self._deallocate(claim))
                return None, Status.new(Code.Unschedulable, MSG_DEALLOCATION_REQUESTED)
        return None, Status.new(Code.Unschedulable, MSG_STILL_NOT_SCHEDULABLE)

    async def _deallocate(self, claim: Obj) -> None:
        """Clear allocation and reservations of a claim nobody uses (PostFilter's request)."""
        md = _md(claim)
        ns, name, uid = md.get("namespace", ""), md.get("name", ""), md.get("uid", "")
        current: Optional[Obj] = claim
        for _ in range(BIND_CONFLICT_RETRIES):
            if current is None:
                try:
                    current = await self.client.get(RESOURCE_API_VERSION, "ResourceClaim", ns, name)
                except StatusError:
                    break
                if _md(current).get("uid") != uid or _allocation(current) is None:
                    break
                if any(not draclaims.is_pod_consumer(r) for r in draclaims.reserved_for(current)) \
                        or len(draclaims.reserved_for(current)) > 1:
                    break
            obj = deep_copy(current)
            obj.setdefault("apiVersion", RESOURCE_API_VERSION)
            obj.setdefault("kind", "ResourceClaim")
            status = obj.setdefault("status", {})
            for f in ("reservedFor", "allocation", "devices"):
                status.pop(f, None)
            try:
                updated = await self.client.update_status(obj)
            except StatusError as e:
                if e.code == 409:
                    current = None
                    continue
                log.warning("deallocating ResourceClaim %s/%s: %s", ns, name, e.message)
                break
            self.tracker.assume(updated)
            break
        self.tracker.deallocating.discard(uid)

    # -- Reserve / Unreserve -------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.claims or data.reserved:
            return None
        holder = pod.uid or pod.key
        allocations: list[dict] = []
        if data.to_allocate:
            answer = data.node_answers.get(node_name)
            found = answer.results(data.allocator) if answer is not None and data.allocator is not None else None
            if found is None or len(found) != len(data.to_allocate):
                return as_status("claim allocation not found for node")
            allocations = found
        data.reserved = True
        next_allocation = 0
        for info in data.claims:
            chosen: Optional[dict] = None
            if info.to_allocate:
                chosen = info.allocation = allocations[next_allocation]
                next_allocation += 1
            elif info.pending is not None and _allocation(self.tracker.claims.get(info.key)) is None:
                chosen = info.pending
            if chosen is not None:
                why = self.tracker.hold(info.uid, info.key, chosen, holder)
                if why is not None:
                    self.unreserve(state, pod, node_name)
                    return Status.new(Code.Unschedulable, why)
                info.held = True
            self.tracker.add_reserving(info.uid, info.consumer_uid)
            info.reserving = True
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.reserved:
            return
        data.reserved = False
        holder = pod.uid or pod.key
        for info in data.claims:
            self._release_cycle_hold(info, holder)
            if info.reserved_in_api:
                info.reserved_in_api = False
                self._spawn(self._remove_pod_reservation(info, pod))

    async def _remove_pod_reservation(self, info: _ClaimInfo, pod: PodInfo) -> None:
        """Binding failed after PreBind reserved the claim for the pod: take the pod out again
        (a strategic merge patch deletes just that entry)."""
        ns, name = info.key.split("/", 1)
        patch = {"metadata": {"uid": info.uid}, "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]}}
        try:
            updated = await self.client.patch(RESOURCE_API_VERSION, "ResourceClaim", ns, name, patch,
                                              patch_type="application/strategic-merge-patch+json",
                                              subresource="status")
        except StatusError as e:
            log.warning("unreserve ResourceClaim %s: %s", info.key, e.message)
            return
        self.tracker.assume(updated)

    # -- PreBind -------------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.claims:
            return Status.new(Code.Skip)
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:  # type: ignore[override]
        data: Optional[_CycleData] = state.get(STATE_KEY)
        if data is None or not data.claims:
            return None
        holder = pod.uid or pod.key
        for info in data.claims:
            try:
                await self._bind_claim(info, pod.pod)
            except _BindFailure as e:
                return as_status(str(e))
            self._release_cycle_hold(info, holder)
        return None

    def _release_cycle_hold(self, info: _ClaimInfo, holder: str) -> None:
        """Drop what Reserve held in the tracker for this cycle (the API now says it, or nothing does)."""
        if info.held:
            self.tracker.release(info.uid, holder)
            info.held = False
        if info.reserving:
            self.tracker.remove_reserving(info.uid, info.consumer_uid)
            info.reserving = False

    async def _bind_claim(self, info: _ClaimInfo, pod: Obj) -> None:
        """Record the claim's allocation (when this pod's cycle chose or reused one that is not
        written yet) and the pod's consumer in `reservedFor` (upstream bindClaim)."""
        mine = info.allocation if info.to_allocate else info.pending
        current = self.tracker.claims.get(info.key)
        if current is not None and _md(current).get("uid") != info.uid:
            current = None
        if mine is None and current is not None and _allocation(current) is not None and \
                draclaims.is_reserved_for_pod(pod, current, accept_pod_group=self.workload_claims):
            return  # nothing to write (later members of a group with a PodGroup reservation)
        async with self.tracker.claim_lock(info.uid):
            await self._write_claim(info, pod, mine)

    async def _write_claim(self, info: _ClaimInfo, pod: Obj, mine: Optional[dict]) -> None:
        ref = info.key
        ns, name = ref.split("/", 1)
        claim = self.tracker.claims.get(ref)  # read under the lock: what a peer wrote is visible
        if claim is not None and _md(claim).get("uid") != info.uid:
            claim = None
        last_error = ""
        for _ in range(BIND_CONFLICT_RETRIES):
            if claim is None:
                try:
                    claim = await self.client.get(RESOURCE_API_VERSION, "ResourceClaim", ns, name)
                except StatusError as e:
                    if e.code == 404:
                        raise _BindFailure(f"claim {ref} got deleted in the meantime") from None
                    raise _BindFailure(f"get updated claim {ref} after conflict: {e.message}") from None
                if _md(claim).get("uid") != info.uid:
                    raise _BindFailure(f"claim {ref} got deleted in the meantime")
            if _md(claim).get("deletionTimestamp"):
                raise _BindFailure(f"claim {ref} got deleted in the meantime")
            allocation = _allocation(claim)
            to_write: Optional[dict] = None
            if allocation is None:
                if mine is None:
                    raise _BindFailure(f"claim {ref} got deallocated in the meantime")
                to_write = mine
            elif mine is not None and _allocation_identity(allocation) != _allocation_identity(mine):
                raise _BindFailure(f"claim {ref} got allocated elsewhere in the meantime")
            reserved = draclaims.reserved_for(claim)
            need_reservation = not (
                any(r.get("uid") == info.consumer_uid for r in reserved)
                or draclaims.is_reserved_for_pod(pod, claim, accept_pod_group=self.workload_claims))
            if to_write is None and not need_reservation:
                if mine is not None:
                    self.tracker.written(info.uid)  # a peer wrote it: the pending entry is done
                return
            try:
                obj = deep_copy(claim)
                obj.setdefault("apiVersion", RESOURCE_API_VERSION)
                obj.setdefault("kind", "ResourceClaim")
                if to_write is not None:
                    finalizers = list(_md(obj).get("finalizers") or [])
                    if draclaims.DELETE_PROTECTION_FINALIZER not in finalizers:
                        obj["metadata"]["finalizers"] = finalizers + [draclaims.DELETE_PROTECTION_FINALIZER]
                        try:
                            obj = await self.client.update(obj)
                        except StatusError as e:
                            if e.code == 409:
                                raise
                            raise _BindFailure(f"add finalizer to claim {ref}: {e.message}") from None
                        obj.setdefault("apiVersion", RESOURCE_API_VERSION)
                        obj.setdefault("kind", "ResourceClaim")
                    written = deep_copy(to_write)
                    written["allocationTimestamp"] = now_rfc3339(to_datetime(self.clock.now()))
                    obj.setdefault("status", {})["allocation"] = written
                if need_reservation:
                    status = obj.setdefault("status", {})
                    status["reservedFor"] = list(status.get("reservedFor") or []) + [dict(info.consumer)]
                updated = await self.client.update_status(obj)
            except StatusError as e:
                if e.code == 409:
                    last_error = e.message
                    claim = None
                    continue
                what = "add allocation and reservation to" if to_write is not None else "add reservation to"
                raise _BindFailure(f"{what} claim {ref}: {e.message}") from None
            self.tracker.assume(updated)
            if to_write is not None:
                self.tracker.written(info.uid)
            if need_reservation and draclaims.is_pod_consumer(info.consumer):
                info.reserved_in_api = True
            return
        raise _BindFailure(f"claim {ref}: {last_error or 'too many conflicts'}")

    # -- events --------------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return self._events

    def _after_claim_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None:
            return QueueingHint.Queue if _allocation(old) is not None else QueueingHint.QueueSkip
        deallocated = old is not None and _allocation(old) is not None and _allocation(new) is None
        if not deallocated and not _may_name(self._named_claims, pod, new):
            return QueueingHint.QueueSkip  # not one of the pod's claims (the common case: cheap)
        found, why = self._pod_claims(pod)
        if why is not None:
            return QueueingHint.QueueSkip  # still missing something: not schedulable yet
        if old is not None and _allocation(old) is not None and _allocation(new) is None:
            return QueueingHint.Queue  # deallocated: devices became free
        uid = _md(new).get("uid")
        if not any(_md(c).get("uid") == uid for _, c in found):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        if (old.get("status") or {}) == (new.get("status") or {}):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def _after_pod_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None or _md(new).get("uid") != _md(pod).get("uid"):
            return QueueingHint.QueueSkip
        _, why = self._pod_claims(new)
        return QueueingHint.QueueSkip if why is not None else QueueingHint.Queue

    @staticmethod
    def _after_assigned_pod_delete(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        return QueueingHint.Queue if draclaims.pod_claims(old or {}) else QueueingHint.QueueSkip

    # -- background writes ---------------------------------------------------------------------------
    async def drain(self) -> None:
        """Wait for the writes PostFilter and Unreserve started in the background."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _spawn(self, coro: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a synchronous unit test): nothing to write with
            coro.close()
            return
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


# -- wiring -----------------------------------------------------------------------------------------

def wire(scheduler: Any, tracker: ClaimTracker) -> list:
    """Feed `tracker` from the scheduler's informer factory and turn every change into a cluster
    event for the scheduler's queue. Returns the informers (the scheduler waits for their sync)."""
    claims = scheduler.factory.informer(RESOURCE_API_VERSION, "ResourceClaim")
    slices = scheduler.factory.informer(RESOURCE_API_VERSION, "ResourceSlice")
    classes = scheduler.factory.informer(RESOURCE_API_VERSION, "DeviceClass")

    def emit(resource: str, action: ActionType, old: Optional[Obj], new: Optional[Obj]) -> None:
        queue = getattr(scheduler, "queue", None)
        if queue is None:
            return
        queue.on_event(ClusterEvent(resource, action), old, new)

    def handlers(resource: str, added: Callable, updated: Callable, deleted: Callable) -> dict:
        def on_add(obj: Obj) -> None:
            added(obj)
            emit(resource, ActionType.Add, None, obj)

        def on_update(old: Obj, new: Obj) -> None:
            updated(old, new)
            emit(resource, ActionType.Update, old, new)

        def on_delete(obj: Obj) -> None:
            deleted(obj)
            emit(resource, ActionType.Delete, obj, None)
        return {"on_add": on_add, "on_update": on_update, "on_delete": on_delete}

    claims.add_event_handler(**handlers(EventResource.ResourceClaim, tracker.claim_added, tracker.claim_updated,
                                        tracker.claim_deleted))
    slices.add_event_handler(**handlers(EventResource.ResourceSlice, tracker.slice_added, tracker.slice_updated,
                                        tracker.slice_deleted))
    classes.add_event_handler(**handlers(EventResource.DeviceClass, tracker.class_added, tracker.class_updated,
                                         tracker.class_deleted))
    return [claims, slices, classes]


def factory(scheduler: Any) -> Callable[[Optional[Mapping[str, Any]], Any], DynamicResources]:
    """One tracker and one set of informers per scheduler; `new(args, handle)` per profile."""
    from ..cache import pod_group_key
    tracker = ClaimTracker()
    informers = wire(scheduler, tracker)
    extra = getattr(scheduler, "extra_informers", None)
    if isinstance(extra, list):
        extra.extend(informers)
    else:
        scheduler.extra_informers = list(informers)

    def pod_group_of(pod: Obj) -> Optional[Obj]:
        key = pod_group_key(pod)
        return scheduler.groups.get(key) if key is not None else None

    def new(args: Optional[Mapping[str, Any]], handle: Any) -> DynamicResources:
        return DynamicResources(tracker, scheduler.client, gates=scheduler.gates, pod_group_of=pod_group_of,
                                clock=scheduler.clock, handle=handle)

    new.tracker = tracker  # type: ignore[attr-defined]
    return new


__all__ = ["DynamicResources", "ClaimTracker", "InFlightAllocation", "factory", "wire",
           "RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE"]
