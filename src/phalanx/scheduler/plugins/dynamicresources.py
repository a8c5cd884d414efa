"""DynamicResources: the scheduler's side of DRA (`resource.k8s.io/v1`), PodGroup claims included.

The scheduler registers `new(args, handle)`: the plugin works on the shared DRA manager
(`framework/dra_manager.py`, fed by the scheduler's ResourceClaim, ResourceSlice and DeviceClass
informers, which also raise the queue's cluster events) and takes the client, the PodGroup
lister, the clock and the feature gates from the Handle. By hand (unit tests):

    manager = DRAManager()
    manager.claim_added(claim); manager.slice_added(slice_); manager.class_added(device_class)
    plugin = DynamicResources(manager, client, gates=gates, pod_group_of=lambda pod: podgroup)

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
  incrementally by the DRA manager. A failure reads "cannot allocate all claims" followed by the
  allocator's reasons; a CEL selector error is the user's, reported UnschedulableAndUnresolvable
  with the expression quoted (upstream aborts the cycle with an error instead).
- **PostFilter** deallocates (asynchronously, `/status` update) an allocated claim that did not
  fit any node and that nobody but this pod has reserved; claims reserved for a PodGroup are never
  deallocated here (KEP-5729 in 1.36).
- **Reserve** records the chosen allocation per claim uid in the DRA manager's in-flight set (devices
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

Speed: claims, slices and classes are indexed once in the DRA manager; devices in use are a
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
import logging
from typing import Any, Callable, Mapping, Optional, Sequence

from phalanx.client.clock import REAL_CLOCK, Clock, to_datetime
from phalanx.client.interface import Client
from phalanx.dra import AllocationError, SelectorError
from phalanx.dra.allocator import ClaimsAllocator, NodeAnswer
from phalanx.dra import claims as draclaims
from phalanx.client.retry import is_conflict, retry_on_conflict
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.meta import deep_copy
from phalanx.machinery.timestamps import now_rfc3339
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.dra_manager import (
    AllocationNodeSelector,
    DRAManager,
    allocation_identity,
    allocation_of,
    claim_key,
    object_meta,
)
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.interface import (
    UNSIGNABLE,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from phalanx.scheduler.framework.status import Code, Status, as_status
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from ..cache import pod_group_key
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


def _ref(claim: Mapping) -> str:
    """klog.KObj of a claim: `namespace/name`."""
    return claim_key(claim)


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
        entry = cache[id(pod)] = (pod, object_meta(pod).get("namespace", ""), frozenset(names))
    md = claim.get("metadata") or {}
    return md.get("name") in entry[2] and md.get("namespace", "") == entry[1]



def _node_of(node_info: NodeInfo) -> Obj:
    """The Node of a NodeInfo Filter is given (the snapshot holds only NodeInfos with their Node)."""
    node = node_info.node
    assert node is not None, "DynamicResources filters a NodeInfo with its Node"
    return node


# -- per-cycle state ---------------------------------------------------------------------------------

class _ClaimInfo:
    """One claim of the pod being scheduled, as PreFilter found it."""

    __slots__ = ("pod_claim", "claim", "key", "uid", "consumer", "selector", "pending", "to_allocate",
                 "allocation", "held", "reserving", "reserved_in_api")

    def __init__(self, pod_claim: dict, claim: Obj, consumer: draclaims.ConsumerReference):
        self.pod_claim = pod_claim
        self.claim = claim
        self.key = claim_key(claim)
        self.uid: str = object_meta(claim).get("uid", "")
        self.consumer = consumer
        self.selector: Optional[AllocationNodeSelector] = None
        self.pending: Optional[dict] = None  # an in-flight allocation this pod reuses
        self.to_allocate = False
        self.allocation: Optional[dict] = None  # chosen by Reserve for a claim this pod allocates
        self.held = False  # this pod holds the claim's in-flight allocation
        self.reserving = False  # counted in the DRA manager's pending reservations
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


def _to_allocate(info: _ClaimInfo, claim: Obj, data: _CycleData) -> None:
    """An unallocated claim: Filter runs the allocator for it."""
    info.to_allocate = True
    data.to_allocate.append(info)
    if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
        data.needs_devices = True


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

    def __init__(self, tracker: DRAManager, client: Optional[Client] = None, *, gates: Any = None,
                 pod_group_of: Optional[Callable[[Obj], Optional[Obj]]] = None, clock: Optional[Clock] = None,
                 handle: Optional[Handle] = None):
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

    @property
    def api(self) -> Client:
        """The client PreBind and the background writes use (the scheduler's, through the Handle)."""
        if self.client is None:
            raise RuntimeError("DynamicResources has no API client")
        return self.client

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
        namespace = object_meta(pod).get("namespace", "")
        for pc in draclaims.pod_claims(pod):
            name, must_check_owner, err = draclaims.claim_name(pod, pc)
            if err is not None:
                return out, str(err)
            if name is None:
                continue  # no claim was needed for this entry
            claim = self.tracker.get(namespace, name)
            if claim is None:
                return out, f'resourceclaim.resource.k8s.io "{name}" not found'
            if object_meta(claim).get("deletionTimestamp"):
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
            uid = object_meta(claim).get("uid", "")
            if uid in seen:
                continue  # the same claim named twice: one allocation, one reservation
            seen.add(uid)
            consumer, err = draclaims.consumer_reference(pod_obj, pod_group, pc,
                                                         workload_claims_enabled=self.workload_claims)
            info = _ClaimInfo(pc, claim, consumer if err is None and consumer else draclaims.pod_reference(pod_obj))
            allocation = allocation_of(claim)
            if allocation is None:
                entry = self.tracker.pending(uid)
                if entry is not None:  # allocated by an earlier pod, not written yet: reuse it
                    info.pending = allocation = entry.allocation
            if allocation is not None:
                if not self._can_reserve(pod_obj, claim, info):
                    return None, _unresolvable(MSG_IN_USE)
                st = self._allocated_on(info, allocation, data, nodes)
                if st is not None:
                    return None, st
                if info.selector is not None and info.selector.names is not None:
                    node_names = set(info.selector.names) if node_names is None else node_names & info.selector.names
            else:
                st = self._check_requests(claim)
                if st is not None:
                    return None, st
                _to_allocate(info, claim, data)
            data.claims.append(info)
        state.write(STATE_KEY, data)
        if node_names is not None:
            return PreFilterResult(node_names), None
        return None, None

    def _allocated_on(self, info: _ClaimInfo, allocation: Mapping[str, Any], data: "_CycleData",
                      nodes: Sequence[NodeInfo]) -> Optional[Status]:
        """Compile an allocated claim's node selector for Filter; an error when it does not compile."""
        selector = allocation.get("nodeSelector")
        if not selector:
            return None
        try:
            info.selector = self.tracker.node_selector(selector)
        except ValueError as e:
            return as_status(e)
        data.has_selectors = True
        if info.selector.names is not None and not self._any_node_named(info.selector.names, nodes):
            data.unavailable.add(len(data.claims))  # Filter will not see it: PostFilter may
        return None

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
        node = _node_of(node_info)
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
        names = [ni.name for ni in rest]
        remembered = allocator.remembered_on(names, inventory, tracker.in_use,
                                             [_node_of(ni) for ni in rest] if inventory.label_dependent else None)
        self._take_remembered(state, pod, data, allocator, rest, names, remembered, i, out)
        return out

    def _take_remembered(self, state: CycleState, pod: PodInfo, data: "_CycleData", allocator: ClaimsAllocator,
                         nodes: Sequence[NodeInfo], names: list[str], remembered: list[Optional[NodeAnswer]],
                         offset: int, out: list[tuple[int, Status]]) -> None:
        """Filter's verdicts from the remembered answers (a search where there is none); rejections
        go to `out` at `offset` + their index."""
        answers = data.node_answers
        status_of: dict[int, Status] = {}  # id of an (interned) explanation -> its Status, this call
        for k, answer in enumerate(remembered):
            if answer is None or data.error_status is not None:
                st = self.filter(state, pod, nodes[k])
                if st is not None and st.code != Code.Success:
                    out.append((offset + k, st))
            elif answer.fits:
                answers[names[k]] = answer
            else:
                found = status_of.get(id(answer.parts)) if answer.parts is not None else None
                if found is None:  # `remembered` keeps every explanation alive: ids stay unique
                    found = status_of[id(answer.explained())] = self._cannot_allocate(data, allocator, answer)
                out.append((offset + k, found))

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
            if claim is None or object_meta(claim).get("uid") != info.uid or allocation_of(claim) is None:
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
        md = object_meta(claim)
        ns, name, uid = md.get("namespace", ""), md.get("name", ""), md.get("uid", "")

        async def attempt(conflicted: bool) -> None:
            current = claim
            if conflicted:
                try:
                    current = await self.api.get(RESOURCE_API_VERSION, "ResourceClaim", ns, name)
                except StatusError:
                    return
                reserved = draclaims.reserved_for(current)
                if object_meta(current).get("uid") != uid or allocation_of(current) is None \
                        or any(not draclaims.is_pod_consumer(r) for r in reserved) or len(reserved) > 1:
                    return  # gone, deallocated or in use meanwhile: nothing to clear
            obj = deep_copy(current)
            obj.setdefault("apiVersion", RESOURCE_API_VERSION)
            obj.setdefault("kind", "ResourceClaim")
            status = obj.setdefault("status", {})
            for f in ("reservedFor", "allocation", "devices"):
                status.pop(f, None)
            self.tracker.assume(await self.api.update_status(obj))

        try:
            await retry_on_conflict(attempt, steps=BIND_CONFLICT_RETRIES)
        except StatusError as e:
            if not is_conflict(e):
                log.warning("deallocating ResourceClaim %s/%s: %s", ns, name, e.message)
        finally:
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
            elif info.pending is not None and allocation_of(self.tracker.claims.get(info.key)) is None:
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
            updated = await self.api.patch(RESOURCE_API_VERSION, "ResourceClaim", ns, name, patch,
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
        if current is not None and object_meta(current).get("uid") != info.uid:
            current = None
        if mine is None and current is not None and allocation_of(current) is not None and \
                draclaims.is_reserved_for_pod(pod, current, accept_pod_group=self.workload_claims):
            return  # nothing to write (later members of a group with a PodGroup reservation)
        async with self.tracker.claim_lock(info.uid):
            await self._write_claim(info, pod, mine)

    async def _write_claim(self, info: _ClaimInfo, pod: Obj, mine: Optional[dict]) -> None:
        ref = info.key
        cached = self.tracker.claims.get(ref)  # read under the lock: what a peer wrote is visible
        if cached is not None and object_meta(cached).get("uid") != info.uid:
            cached = None

        async def attempt(conflicted: bool) -> None:
            claim = cached if cached is not None and not conflicted else await self._reread_claim(info)
            to_write = self._allocation_to_write(claim, ref, mine)
            reserved = draclaims.reserved_for(claim)
            need_reservation = not (
                any(r.get("uid") == info.consumer_uid for r in reserved)
                or draclaims.is_reserved_for_pod(pod, claim, accept_pod_group=self.workload_claims))
            if to_write is None and not need_reservation:
                if mine is not None:
                    self.tracker.written(info.uid)  # a peer wrote it: the pending entry is done
                return
            try:
                updated = await self._update_claim(claim, info, to_write, need_reservation)
            except StatusError as e:
                if is_conflict(e):
                    raise  # re-read and try again
                what = "add allocation and reservation to" if to_write is not None else "add reservation to"
                raise _BindFailure(f"{what} claim {ref}: {e.message}") from None
            self.tracker.assume(updated)
            if to_write is not None:
                self.tracker.written(info.uid)
            if need_reservation and draclaims.is_pod_consumer(info.consumer):
                info.reserved_in_api = True

        try:
            await retry_on_conflict(attempt, steps=BIND_CONFLICT_RETRIES)
        except StatusError as e:  # still conflicting after every attempt
            raise _BindFailure(f"claim {ref}: {e.message or 'too many conflicts'}") from None

    async def _reread_claim(self, info: _ClaimInfo) -> Obj:
        """The claim from the API after a conflict (or when the manager had none)."""
        ref = info.key
        ns, name = ref.split("/", 1)
        try:
            claim = await self.api.get(RESOURCE_API_VERSION, "ResourceClaim", ns, name)
        except StatusError as e:
            if e.code == 404:
                raise _BindFailure(f"claim {ref} got deleted in the meantime") from None
            raise _BindFailure(f"get updated claim {ref} after conflict: {e.message}") from None
        if object_meta(claim).get("uid") != info.uid:
            raise _BindFailure(f"claim {ref} got deleted in the meantime")
        return claim

    @staticmethod
    def _allocation_to_write(claim: Obj, ref: str, mine: Optional[dict]) -> Optional[dict]:
        """The allocation this cycle must write, None when the claim has it already; a claim
        deleted, deallocated or allocated to something else meanwhile fails the binding."""
        if object_meta(claim).get("deletionTimestamp"):
            raise _BindFailure(f"claim {ref} got deleted in the meantime")
        allocation = allocation_of(claim)
        if allocation is None:
            if mine is None:
                raise _BindFailure(f"claim {ref} got deallocated in the meantime")
            return mine
        if mine is not None and allocation_identity(allocation) != allocation_identity(mine):
            raise _BindFailure(f"claim {ref} got allocated elsewhere in the meantime")
        return None

    async def _update_claim(self, claim: Obj, info: _ClaimInfo, to_write: Optional[dict],
                            need_reservation: bool) -> Obj:
        """Write the finalizer (metadata) and then allocation and/or reservation (status)."""
        obj = deep_copy(claim)
        obj.setdefault("apiVersion", RESOURCE_API_VERSION)
        obj.setdefault("kind", "ResourceClaim")
        if to_write is not None:
            obj = await self._add_delete_protection(obj, info.key)
            written = deep_copy(to_write)
            written["allocationTimestamp"] = now_rfc3339(to_datetime(self.clock.now()))
            obj.setdefault("status", {})["allocation"] = written
        if need_reservation:
            status = obj.setdefault("status", {})
            status["reservedFor"] = list(status.get("reservedFor") or []) + [dict(info.consumer)]
        return await self.api.update_status(obj, handover=True)  # `obj` is this call's own copy

    async def _add_delete_protection(self, obj: Obj, ref: str) -> Obj:
        """The claim with the delete-protection finalizer (written first when missing)."""
        finalizers = list(object_meta(obj).get("finalizers") or [])
        if draclaims.DELETE_PROTECTION_FINALIZER in finalizers:
            return obj
        obj["metadata"]["finalizers"] = finalizers + [draclaims.DELETE_PROTECTION_FINALIZER]
        try:
            obj = deep_copy(await self.api.update(obj, handover=True))  # the stored object is read-only
        except StatusError as e:
            if e.code == 409:
                raise
            raise _BindFailure(f"add finalizer to claim {ref}: {e.message}") from None
        obj.setdefault("apiVersion", RESOURCE_API_VERSION)
        obj.setdefault("kind", "ResourceClaim")
        return obj

    # -- events --------------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return self._events

    def _after_claim_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None:
            return QueueingHint.Queue if allocation_of(old) is not None else QueueingHint.QueueSkip
        deallocated = old is not None and allocation_of(old) is not None and allocation_of(new) is None
        if not deallocated and not _may_name(self._named_claims, pod, new):
            return QueueingHint.QueueSkip  # not one of the pod's claims (the common case: cheap)
        found, why = self._pod_claims(pod)
        if why is not None:
            return QueueingHint.QueueSkip  # still missing something: not schedulable yet
        if old is not None and allocation_of(old) is not None and allocation_of(new) is None:
            return QueueingHint.Queue  # deallocated: devices became free
        uid = object_meta(new).get("uid")
        if not any(object_meta(c).get("uid") == uid for _, c in found):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        if (old.get("status") or {}) == (new.get("status") or {}):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def _after_pod_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None or object_meta(new).get("uid") != object_meta(pod).get("uid"):
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


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> DynamicResources:
    """The plugin on the Handle's shared DRA manager, client, PodGroup lister and clock."""
    manager = handle.shared_dra_manager()
    if manager is None:
        raise ValueError("DynamicResources needs the scheduler's shared DRA manager")
    pod_groups = handle.pod_group_lister()

    def pod_group_of(pod: Obj) -> Optional[Obj]:
        key = pod_group_key(pod)
        return pod_groups.get(key) if key is not None and pod_groups is not None else None

    return DynamicResources(manager, handle.client(), gates=_HandleFeatures(handle), pod_group_of=pod_group_of,
                            clock=handle.clock(), handle=handle)


class _HandleFeatures:
    """The Handle's feature gates in the `enabled(name)` shape the allocator reads."""

    def __init__(self, handle: Handle):
        self._handle = handle

    def enabled(self, name: str) -> bool:
        return self._handle.feature_enabled(name)


__all__ = ["DynamicResources", "new", "RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE", "RESOURCE_API_VERSION"]
