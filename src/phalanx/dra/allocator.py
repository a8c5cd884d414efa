"""The structured DRA allocator: upstream's "stable" algorithm, for one pod's claims on one node.

    cache = AllocatorCache()                     # long-lived: compiled CEL, parsed slices, node views
    outcome = allocate(claims, node, slices, classes, in_use, gates=gates, cache=cache)
    if outcome.success:
        outcome.results      # one AllocationResult dict per claim, in claim order
    else:
        outcome.message      # "cannot allocate all claims" (upstream's Filter reason)
        outcome.reasons      # why, per claim: ["claim default/x, request gpu: not enough devices:
                             #   8 requested, 3 available (5 in use)"]; worked out when first read,
                             #   from the inputs of the call (read it before changing `in_use`)
    # AllocationError (and its SelectorError) is raised for what upstream treats as an error rather
    # than "does not fit": a missing DeviceClass, a CEL compile or runtime error, `All` over an
    # incomplete pool, too many devices for one claim.

A scheduler filtering many nodes for one pod prepares the claims once and asks per node:

    allocator = ClaimsAllocator(claims, classes, gates=gates, cache=cache)
    answer = allocator.answer(node, inventory, usage)     # usage: devices.DevicesInUse
    answer.fits; answer.results(allocator); answer.reasons(allocator)
    allocator.remembered_on(names, inventory, usage)      # answers still valid, without a search

With a `DevicesInUse` the answer for a node is remembered on the node's view, keyed by what the
claims ask for (requests, constraints, selectors; not their names), and stays valid while no pool
the node reaches changes in `usage` (nodes reaching exactly the same devices share it). Results
are spelled out from the answer for the asking claims, fresh dicts each time.

Inputs: `claims` are the ResourceClaims still to allocate for the pod (all at once: devices chosen
for one cannot be taken by another), `node` the Node dict, `slices` the ResourceSlices (a list, or
a `pools.Inventory` the caller maintains), `classes` DeviceClasses by name, `in_use` the DeviceIDs
already allocated (`devices.devices_in_use(claims)` plus the caller's in-flight allocations),
`gates` FeatureGates (or a dict, or None for 1.36 defaults). `consumed_capacity` is what shared
devices have already given away (`devices.consumed_capacity(claims)`).

Search (depth-first, first complete solution wins, no scoring): claims in order -> requests in
order (`firstAvailable`: sub-requests in order, the first that leads to a full solution wins and the
result names `request/sub`) -> one slot per device (`count`, or every matching device for `All`).
For each slot devices are tried pools -> slices -> devices in order (pools by driver then name,
slices by name, devices as listed); a device is skipped when in use (unless `adminAccess`; never
twice in one claim), not matching the class and request selectors, not on this node (per-device
selection), tainted NoSchedule/NoExecute without a toleration, short of shared counters or of
capacity, or breaking a `matchAttribute`/`distinctAttribute` constraint. Every choice is undone
when what follows fails (backtracking across requests and claims). One pruning upstream lacks:
slots of the same request take devices in increasing order, which skips permutations of the same
set and finds the same first solution.

Results follow upstream's JSON: `devices.results[]` (`request`, `driver`, `pool`, `device`, plus
`adminAccess`, `tolerations`, `bindingConditions`/`bindingFailureConditions`, `shareID`,
`consumedCapacity` when they apply), `devices.config[]` (class configs `FromClass` once per class
with the requests that used it, then the claim's configs `FromClaim` that concern a request or the
chosen sub-request), and `nodeSelector` (`metadata.name In [node]` when any device is node-local,
else the slices' node selectors merged, omitted when all devices are everywhere).
`allocationTimestamp` is the caller's to set.

Consumable capacity (DRAConsumableCapacity) is simplified: a device with `allowMultipleAllocations`
is shared instead of exclusive; each allocation takes `capacity.requests` (rounded up by the
capacity's requestPolicy, else its `default`, else the whole capacity) and gets a fresh `shareID`
(a UUID) and `consumedCapacity`. For exclusive devices capacity requests only filter. Device taint
rules (DRADeviceTaintRules) are not consulted; only taints in the slices.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import orjson

from ..machinery.quantity import format_quantity, parse_quantity
from .cel.compiler import CompiledSelector, SelectorCache
from .cel.environment import CELCompileError, CELError, CELFeatures, enhance_runtime_error
from .devices import (Device, DeviceID, DevicesInUse, attribute_match_key, qualify, taints_prevent_allocation)
from .pools import Inventory, NodeView

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
CANNOT_ALLOCATE_ALL_CLAIMS = "cannot allocate all claims"
INVALID_POOLS = "invalid resource pools were encountered"


# -- public types ------------------------------------------------------------------------------------

class AllocationError(Exception):
    """Allocation cannot proceed for a reason in the claims or classes (upstream returns an error,
    the scheduler reports it and retries later). `str()` is upstream's message."""


class SelectorError(AllocationError):
    """A CEL selector failed to compile or to evaluate; `expression` is the selector's source."""

    def __init__(self, message: str, cel_error: CELError):
        super().__init__(message)
        self.cel_error = cel_error
        self.expression = cel_error.expression

    @property
    def explanation(self) -> str:
        """The message with the offending expression quoted, for events and `explain`."""
        return f"{self}; expression: {self.expression!r}"


@dataclass(frozen=True)
class AllocatorFeatures:
    """The feature gates the allocator honours (upstream's structured.Features)."""

    admin_access: bool = True
    prioritized_list: bool = True
    device_taints: bool = True
    partitionable_devices: bool = True
    consumable_capacity: bool = True
    binding_conditions: bool = True
    list_type_attributes: bool = False

    @classmethod
    def from_gates(cls, gates: Any) -> "AllocatorFeatures":
        def on(name: str, default: bool) -> bool:
            if gates is None:
                return default
            if isinstance(gates, Mapping):
                return bool(gates.get(name, default))
            try:
                return bool(gates.enabled(name))
            except Exception:
                return default
        return cls(
            admin_access=on("DRAAdminAccess", True),
            prioritized_list=on("DRAPrioritizedList", True),
            device_taints=on("DRADeviceTaints", True),
            partitionable_devices=on("DRAPartitionableDevices", True),
            consumable_capacity=on("DRAConsumableCapacity", True),
            binding_conditions=on("DRADeviceBindingConditions", True) and on("DRAResourceClaimDeviceStatus", True),
            list_type_attributes=on("DRAListTypeAttributes", False),
        )

    @property
    def cel(self) -> CELFeatures:
        return CELFeatures(self.consumable_capacity, self.list_type_attributes)


class AllocationOutcome:
    """`success`; `results` (one AllocationResult per claim) on success, else None with `reasons`.

    Both are worked out on first access: a scheduler filtering many nodes reads `results` only
    for the node it picks, and `reasons` only where it reports them."""

    __slots__ = ("success", "_results", "_build", "_reasons", "_explain")

    def __init__(self, results: Optional[list[dict]], reasons: Optional[list[str]] = None,
                 explain: Optional[Callable[[], list[str]]] = None, *,
                 build: Optional[Callable[[], list[dict]]] = None):
        self._results = results
        self._build = build
        self.success = results is not None or build is not None
        self._reasons = reasons
        self._explain = explain

    @property
    def results(self) -> Optional[list[dict]]:
        if self._results is None and self._build is not None:
            self._results = self._build()
            self._build = None
        return self._results

    @property
    def reasons(self) -> list[str]:
        if self._reasons is None:
            self._reasons = self._explain() if self._explain is not None else []
            self._explain = None
        return self._reasons

    def __repr__(self) -> str:
        return f"AllocationOutcome(results={self.results!r})" if self.success else \
            f"AllocationOutcome(reasons={self.reasons!r})"

    @property
    def message(self) -> str:
        """Upstream's per-node Filter reason."""
        return "" if self.success else CANNOT_ALLOCATE_ALL_CLAIMS


class AllocatorCache:
    """State reused across allocate() calls: compiled selectors, the slice index (with per-device
    CEL results and per-node views), feature sets. One per scheduler; not thread-safe."""

    def __init__(self, selectors: Optional[SelectorCache] = None,
                 new_share_id: Optional[Callable[[], str]] = None):
        self.selectors = selectors or SelectorCache()
        self.new_share_id = new_share_id or (lambda: str(uuid.uuid4()))
        self._inventory: Optional[Inventory] = None
        self._inventory_ids: tuple = ()
        self._slices_list: Any = None
        self._slices_len = -1
        self._features_for: Any = None
        self._features_value: Optional[AllocatorFeatures] = None
        self.claim_plans: dict[int, Any] = {}
        self._shape_ids: dict[Any, int] = {}
        self._next_shape_id = itertools.count()
        self._interned: dict[Any, Any] = {}
        self.calls = 0
        self.search_steps = 0  # upstream's NumAllocateOneInvocations, summed

    def inventory(self, slices: Union[Inventory, Sequence[Mapping[str, Any]]]) -> Inventory:
        """The index for these slices; rebuilt (reusing unchanged slices) when the list changes.
        Slices are snapshots: hand in a new list (or an Inventory) when any slice changes, and a
        new dict for a changed slice; the same list object is taken as unchanged."""
        if isinstance(slices, Inventory):
            return slices
        if self._inventory is not None and slices is self._slices_list and len(slices) == self._slices_len:
            return self._inventory
        ids = tuple(map(id, slices))
        if self._inventory is None or ids != self._inventory_ids:
            self._inventory = Inventory(slices, previous=self._inventory)
            self._inventory_ids = ids
        self._slices_list, self._slices_len = slices, len(slices)
        return self._inventory

    def intern(self, value: Any) -> Any:
        """One object for equal hashable values (bounded)."""
        found = self._interned.get(value)
        if found is None:
            if len(self._interned) >= _MAX_INTERNED:
                self._interned.clear()
            found = self._interned[value] = value
        return found

    def shape_id(self, shape: Any) -> int:
        """An int for a hashable shape (cheap to hash on every node); never reused for another
        shape, also after the table is cleared (bounded)."""
        found = self._shape_ids.get(shape)
        if found is None:
            if len(self._shape_ids) >= _MAX_INTERNED:
                self._shape_ids.clear()
            found = self._shape_ids[shape] = next(self._next_shape_id)
        return found

    def features(self, gates: Any) -> AllocatorFeatures:
        if isinstance(gates, AllocatorFeatures):
            return gates
        if isinstance(gates, Mapping) or self._features_for is not gates or self._features_value is None:
            self._features_for = gates
            self._features_value = AllocatorFeatures.from_gates(gates)
        return self._features_value


_MAX_INTERNED = 4096


def allocate(claims: Sequence[Mapping[str, Any]], node: Mapping[str, Any],
             slices: Union[Inventory, Sequence[Mapping[str, Any]]],
             classes: Union[Mapping[str, Mapping[str, Any]], Callable[[str], Optional[Mapping[str, Any]]]],
             in_use: Union[set, frozenset, DevicesInUse] = frozenset(), *, gates: Any = None,
             cache: Optional[AllocatorCache] = None,
             consumed_capacity: Optional[Mapping[DeviceID, Mapping[str, Fraction]]] = None) -> AllocationOutcome:
    """Allocate devices for all `claims` on `node`; see the module docstring."""
    return ClaimsAllocator(claims, classes, gates=gates, cache=cache).allocate(
        node, slices, in_use, consumed_capacity=consumed_capacity)


class ClaimsAllocator:
    """One pod's claims, prepared once and tried on many nodes (a scheduling cycle's Filter):

        allocator = ClaimsAllocator(claims, classes, gates=gates, cache=cache)
        outcome = allocator.allocate(node, inventory, usage)     # per node; same answers as allocate()

    With a `devices.DevicesInUse` as `in_use` (and no separate `consumed_capacity`), the answer for
    a node is remembered on the node's view, keyed by what the claims ask for (not their names),
    and reused by any later call while the pools the node reaches are unchanged: a cycle pays for
    a search only on the nodes whose devices changed since the last pod looked at them.
    """

    __slots__ = ("claims", "cache", "features", "lookup", "_plans", "_memo_key")

    def __init__(self, claims: Sequence[Mapping[str, Any]],
                 classes: Union[Mapping[str, Mapping[str, Any]], Callable[[str], Optional[Mapping[str, Any]]]],
                 *, gates: Any = None, cache: Optional[AllocatorCache] = None):
        self.claims = list(claims)
        self.cache = cache or AllocatorCache()
        self.features = self.cache.features(gates)
        self.lookup = classes if callable(classes) else classes.get
        self._plans: Optional[list[_ClaimPlan]] = None
        self._memo_key: Any = None

    def allocate(self, node: Mapping[str, Any], slices: Union[Inventory, Sequence[Mapping[str, Any]]],
                 in_use: Union[set, frozenset, DevicesInUse] = frozenset(), *,
                 consumed_capacity: Optional[Mapping[DeviceID, Mapping[str, Fraction]]] = None,
                 view: Optional[NodeView] = None) -> AllocationOutcome:
        """The claims on `node` (`view`: its `NodeView` when the caller has it already)."""
        return self.answer(node, slices, in_use, consumed_capacity=consumed_capacity, view=view).outcome(self)

    def answer(self, node: Mapping[str, Any], slices: Union[Inventory, Sequence[Mapping[str, Any]]],
               in_use: Union[set, frozenset, DevicesInUse] = frozenset(), *,
               consumed_capacity: Optional[Mapping[DeviceID, Mapping[str, Fraction]]] = None,
               view: Optional[NodeView] = None) -> "NodeAnswer":
        """`allocate` without spelling the answer out: `results(self)` / `reasons(self)` when needed."""
        cache = self.cache
        cache.calls += 1
        features = self.features
        if view is None:
            view = cache.inventory(slices).node_view(node, features.partitionable_devices)
        plans = self._plans
        if plans is None:  # the first node: plan every claim (raises AllocationError as upstream)
            plans = [_claim_plan(cache, claim, features, self.lookup, view) for claim in self.claims]
            if all(p.cacheable for p in plans):
                self._plans = plans
                self._memo_key = cache.shape_id((features, tuple(p.shape for p in plans)))
            else:
                self._plans = _PER_NODE  # `All` depends on the node: plan on every node
        elif plans is _PER_NODE:
            plans = [_claim_plan(cache, claim, features, self.lookup, view) for claim in self.claims]
        memo = None
        if self._memo_key is not None and consumed_capacity is None and isinstance(in_use, DevicesInUse):
            entry = self.remembered(view, in_use)
            if entry is not None:
                return entry
            memo = view.memo
        if consumed_capacity is None:
            consumed_capacity = in_use.consumed() if isinstance(in_use, DevicesInUse) else {}
        answer = _Allocation(self.claims, node, view, self.lookup, in_use, features, cache,
                             consumed_capacity).run(plans)
        if memo is not None:
            answer.usage = in_use
            answer.version = in_use.version  # type: ignore[union-attr]
            answer.state = view.state(in_use)  # type: ignore[arg-type]
            if len(memo) >= _MAX_MEMO_PER_VIEW:
                memo.clear()
            memo[self._memo_key] = answer
        return answer

    @property
    def planned(self) -> bool:
        """Whether the claims are planned (by the first `answer` call that did not raise)."""
        return self._plans is not None

    def remembered(self, view: NodeView, usage: DevicesInUse) -> Optional["NodeAnswer"]:
        """The answer on this node if an earlier search (for claims of the same shape) still holds:
        nothing the node reaches changed in `usage` since. None before the first `answer` call."""
        key = self._memo_key
        if key is None:
            return None
        entry = view.memo.get(key)
        if entry is None or entry.usage is not usage:
            return None
        if entry.version != usage.version:
            if entry.state != view.state(usage):
                return None
            entry.version = usage.version
        return entry


    def remembered_on(self, names: Sequence[str], inventory: Inventory, usage: DevicesInUse,
                      nodes: Optional[Sequence[Mapping[str, Any]]] = None) -> list[Optional["NodeAnswer"]]:
        """`remembered` for many nodes by name (None where `answer` must be called). When the
        inventory is `label_dependent`, `nodes` (the Node objects, in the same order) must be given:
        a node whose labels object is not the one its view was checked against gets None."""
        key = self._memo_key
        if key is None:
            return [None] * len(names)
        views_get = inventory.cached_views(self.features.partitionable_devices).get
        version = usage.version
        versions_get = usage.versions.get
        out: list[Optional[NodeAnswer]] = []
        append = out.append
        if inventory.label_dependent:
            if nodes is None:
                return [None] * len(names)
            views = [views_get(name) for name in names]
            views = [v if v is not None and v.labels is (node.get("metadata") or {}).get("labels") else None
                     for v, node in zip(views, nodes)]
        else:
            views = [views_get(name) for name in names]
        for view in views:
            if view is None:
                append(None)
                continue
            entry = view.memo.get(key)
            if entry is not None and entry.version != version:
                pool = view.pool_id
                if entry.usage is not usage or entry.state != (
                        versions_get(pool) if pool is not None else tuple(map(versions_get, view.pool_ids))):
                    entry = None
            append(entry)
        return out


_PER_NODE: list = []
_MAX_MEMO_PER_VIEW = 64


# -- internals ---------------------------------------------------------------------------------------

def claim_ref(claim: Mapping[str, Any]) -> str:
    """klog.KObj: `namespace/name` (just the name when cluster-scoped)."""
    meta = claim.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else meta.get("name", "")


class _MaxSizeExceeded(Exception):
    """Upstream's errAllocationResultMaxSizeExceeded: backtrack harder."""


class _MatchFailure:
    """A cached selector failure for one device: raised when the device is actually considered."""

    __slots__ = ("from_class", "index", "error")

    def __init__(self, from_class: bool, index: int, error: CELError):
        self.from_class, self.index, self.error = from_class, index, error


class _Request:
    """One request, or one sub-request of a firstAvailable request."""

    __slots__ = ("claim_ref", "name", "base", "sub", "class_name", "device_class", "selectors", "key",
                 "all_mode", "count", "admin", "tolerations", "capacity_requests", "all_devices", "num_devices",
                 "spec")

    def __init__(self, claim_ref: str, base: str, sub: str, spec: Mapping[str, Any]):
        self.claim_ref = claim_ref
        self.base = base
        self.sub = sub
        self.name = f"{base}/{sub}" if sub else base
        self.spec = spec
        self.class_name: str = spec.get("deviceClassName") or ""
        self.device_class: Mapping[str, Any] = {}
        self.selectors: list[tuple[bool, int, CompiledSelector]] = []
        self.key: Any = None
        self.all_mode = (spec.get("allocationMode") or "ExactCount") == "All"
        count = spec.get("count")
        self.count = int(count) if count is not None else 1
        self.admin = bool(spec.get("adminAccess")) and not sub
        self.tolerations: list = list(spec.get("tolerations") or [])
        self.capacity_requests: dict[str, Fraction] = {
            k: parse_quantity(v) for k, v in ((spec.get("capacity") or {}).get("requests") or {}).items()}
        self.all_devices: list[Device] = []
        self.num_devices = 0

    @property
    def own_name(self) -> str:
        """The request's or sub-request's own name (upstream's request.name())."""
        return self.sub or self.base


class _RequestSlot:
    """A claim's request: one alternative for `exactly`, several for `firstAvailable`."""

    __slots__ = ("name", "alternatives", "has_subrequests", "selected")

    def __init__(self, name: str, alternatives: list[_Request], has_subrequests: bool):
        self.name = name
        self.alternatives = alternatives
        self.has_subrequests = has_subrequests
        self.selected = 0


_MAX_CLAIM_PLANS = 4096


class _ClaimPlan:
    """A claim's requests prepared for search (compiled selectors, classes, counts)."""

    __slots__ = ("claim", "features", "classes", "slots", "constraints", "cacheable", "shape")

    def __init__(self, claim: Mapping[str, Any], features: AllocatorFeatures, classes: tuple,
                 slots: list[_RequestSlot], constraints: list[tuple], cacheable: bool, shape: Any):
        self.claim, self.features, self.classes = claim, features, classes
        self.slots, self.constraints, self.cacheable = slots, constraints, cacheable
        self.shape = shape  # what decides the search (requests, constraints, selectors), names aside


def _claim_plan(cache: "AllocatorCache", claim: Mapping[str, Any], features: AllocatorFeatures,
                lookup: Callable[[str], Optional[Mapping[str, Any]]], view: NodeView) -> _ClaimPlan:
    """Upstream's per-claim checks, cached per claim object (node-independent unless a request asks
    for `All`) and revalidated by the identity of the classes it used. Raises AllocationError."""
    plans = cache.claim_plans
    plan = plans.get(id(claim))
    if (plan is None or plan.claim is not claim or plan.features != features
            or any(lookup(name) is not cls for name, cls in plan.classes)):
        plan = _Allocation((), {}, view, lookup, frozenset(), features, cache, {})._plan_claim(claim)
        if plan.cacheable:
            if len(plans) >= _MAX_CLAIM_PLANS:
                plans.clear()
            plans[id(claim)] = plan
    return plan


class _MatchAttribute:
    __slots__ = ("requests", "attribute", "value", "count")

    def __init__(self, requests: Iterable[str], attribute: str):
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.value: Any = None
        self.count = 0

    def applies(self, req: _Request) -> bool:
        if not self.requests:
            return True
        return req.base in self.requests or (bool(req.sub) and req.name in self.requests)

    def add(self, req: _Request, device: Device) -> bool:
        attr = device.attribute(self.attribute)
        if attr is None:
            return False
        key = attribute_match_key(attr)
        if self.count == 0:
            self.value = key
            self.count = 1
            return True
        if key is None or key != self.value:
            return False
        self.count += 1
        return True

    def remove(self, req: _Request, device: Device) -> None:
        self.count -= 1

    def describe(self) -> str:
        return f"matchAttribute {self.attribute}"


class _DistinctAttribute:
    __slots__ = ("requests", "attribute", "values")

    def __init__(self, requests: Iterable[str], attribute: str):
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.values: dict[Any, int] = {}

    def applies(self, req: _Request) -> bool:
        if not self.requests:
            return True
        return req.base in self.requests or (bool(req.sub) and req.name in self.requests)

    def add(self, req: _Request, device: Device) -> bool:
        attr = device.attribute(self.attribute)
        key = attribute_match_key(attr) if attr is not None else None
        if key is None or key in self.values:
            return False
        self.values[key] = 1
        return True

    def remove(self, req: _Request, device: Device) -> None:
        attr = device.attribute(self.attribute)
        self.values.pop(attribute_match_key(attr) if attr is not None else None, None)

    def describe(self) -> str:
        return f"distinctAttribute {self.attribute}"


class _Chosen:
    __slots__ = ("request", "device", "consumed")

    def __init__(self, request: _Request, device: Device, consumed: Optional[dict[str, Fraction]]):
        self.request, self.device, self.consumed = request, device, consumed


_EMPTY: tuple = ()


class NodeAnswer:
    """What one search on one node found, independent of the claims' names, so that other claims of
    the same shape on the same node, with the same devices in use, can take it (see
    ClaimsAllocator): `fits`; per claim the (slot, alternative, device, consumed capacity) chosen,
    the alternative selected per slot and the node selector. `results(allocator)` and
    `reasons(allocator)` spell it out for the allocator's own claims."""

    __slots__ = ("fits", "run", "plans", "choices", "selected", "node_selectors", "parts", "usage", "version",
                 "state")

    def __init__(self, run: "_Allocation", choices: Optional[list], selected: Optional[list],
                 node_selectors: Optional[list]):
        self.fits = choices is not None
        self.run: Optional[_Allocation] = None if self.fits else run  # explains a failure, on demand
        self.plans = run.plans
        self.choices = choices
        self.selected = selected
        self.node_selectors = node_selectors
        self.parts: Optional[tuple] = None
        self.usage: Any = None
        self.version = -1
        self.state: Any = None

    def outcome(self, allocator: "ClaimsAllocator") -> AllocationOutcome:
        if not self.fits:
            return AllocationOutcome(None, explain=lambda: self.reasons(allocator))
        return AllocationOutcome(None, build=lambda: self.results(allocator))

    def reasons(self, allocator: "ClaimsAllocator") -> list[str]:
        """Why nothing fits, per claim of `allocator` ("claim <ref>, request <name>: ...")."""
        if self.fits:
            return []
        claims = allocator.claims
        return [text if ci is None else f"claim {claim_ref(claims[ci])}{text}" for ci, text in self.explained()]

    def explained(self) -> tuple:
        """Why nothing fits, independent of names: ((claim index or None, text), ...); equal
        explanations are one object (interned per AllocatorCache)."""
        if self.parts is None:
            assert self.run is not None
            self.parts = self.run.cache.intern(tuple(self.run._explain()))
            self.run = None
        return self.parts

    def results(self, allocator: "ClaimsAllocator") -> Optional[list[dict]]:
        """One AllocationResult per claim of `allocator` (fresh dicts, a fresh shareID each)."""
        if not self.fits:
            return None
        return self._results(allocator, allocator._plans or self.plans)

    def _results(self, allocator: "ClaimsAllocator", plans: list["_ClaimPlan"]) -> list[dict]:
        assert self.choices is not None and self.selected is not None and self.node_selectors is not None
        features = allocator.features
        out = []
        for ci, claim in enumerate(allocator.claims):
            slots = plans[ci].slots
            results = []
            for ri, si, device, consumed in self.choices[ci]:
                req = slots[ri].alternatives[si]
                entry: dict[str, Any] = {"request": req.name, "driver": device.driver, "pool": device.pool_name,
                                         "device": device.name}
                if req.admin:
                    entry["adminAccess"] = True
                if req.tolerations and features.device_taints:
                    entry["tolerations"] = _copy(req.tolerations)
                if device.binding_conditions and features.binding_conditions:
                    entry["bindingConditions"] = list(device.binding_conditions)
                    entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
                if consumed is not None:
                    entry["shareID"] = allocator.cache.new_share_id()
                    entry["consumedCapacity"] = {_spelled(n, device): format_quantity(v, device.capacity_formats[n])
                                                 for n, v in consumed.items()}
                results.append(entry)
            devices: dict[str, Any] = {"results": results}
            config = _config(slots, self.selected[ci], claim)
            if config:
                devices["config"] = config
            allocation: dict[str, Any] = {"devices": devices}
            node_selector = self.node_selectors[ci]
            if node_selector is not None:
                allocation["nodeSelector"] = _copy(node_selector)
            out.append(allocation)
        return out


class _Allocation:
    """One search: the claims' devices on one node, given the devices in use."""

    def __init__(self, claims: Sequence[Mapping[str, Any]], node: Mapping[str, Any], view: NodeView,
                 lookup_class: Callable[[str], Optional[Mapping[str, Any]]], in_use: Any,
                 features: AllocatorFeatures, cache: AllocatorCache,
                 shared_consumed: Mapping[DeviceID, Mapping[str, Fraction]]):
        self.claims = claims
        self.node = node
        self.view = view
        self.lookup_class = lookup_class
        self.in_use = in_use
        self.features = features
        self.cel_features = features.cel
        self.cache = cache
        self.shared_consumed = shared_consumed
        self.plans: list[_ClaimPlan] = []
        self.slots: list[list[_RequestSlot]] = []
        self.constraints: list[list[Any]] = []
        self.allocating: dict[DeviceID, list[int]] = {}
        self.results: list[list[_Chosen]] = [[] for _ in claims]
        self.counters_available: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.counters_consumed: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.capacity_taken: dict[DeviceID, dict[str, Fraction]] = {}
        self.steps = 0

    def run(self, plans: Optional[list[_ClaimPlan]]) -> NodeAnswer:
        """Search with these plans (None: plan the claims for this node first)."""
        if plans is None:
            plans = [_claim_plan(self.cache, claim, self.features, self.lookup_class, self.view)
                     for claim in self.claims]
        self.plans = plans
        for plan in plans:
            for slot in plan.slots:
                slot.selected = 0
            self.slots.append(plan.slots)
            self.constraints.append([kind(requests, attribute) for kind, requests, attribute in plan.constraints])
        try:
            done = self._allocate_one(0, 0, 0, 0, False, 0)
        except _MaxSizeExceeded:
            done = False
        finally:
            self.cache.search_steps += self.steps
        if not done:
            return NodeAnswer(self, None, None, None)
        choices = []
        for ci, slots in enumerate(self.slots):
            where = {id(req): (ri, si) for ri, slot in enumerate(slots) for si, req in enumerate(slot.alternatives)}
            choices.append([(*where[id(c.request)], c.device, c.consumed) for c in self.results[ci]])
        selected = [[slot.selected for slot in slots] for slots in self.slots]
        node_selectors = [self._node_selector(claim, self.results[ci]) for ci, claim in enumerate(self.claims)]
        return NodeAnswer(self, choices, selected, node_selectors)

    def _plan_claim(self, claim: Mapping[str, Any]) -> "_ClaimPlan":
        ref = claim_ref(claim)
        devices = (claim.get("spec") or {}).get("devices") or {}
        slots: list[_RequestSlot] = []
        min_devices = 0
        for request in devices.get("requests") or []:
            name = request.get("name", "")
            subrequests = request.get("firstAvailable") or []
            if subrequests:
                if not self.features.prioritized_list:
                    raise AllocationError(f"claim {ref}, request {name}: has subrequests, but the "
                                          f"DRAPrioritizedList feature is disabled")
                alternatives = [self._prepare_request(ref, _Request(ref, name, sub.get("name", ""), sub))
                                for sub in subrequests]
                min_devices += min(r.num_devices for r in alternatives)
                slots.append(_RequestSlot(name, alternatives, True))
            else:
                req = self._prepare_request(ref, _Request(ref, name, "", request.get("exactly") or {}))
                min_devices += req.num_devices
                slots.append(_RequestSlot(name, [req], False))
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(f"claim {ref}: number of requested devices {min_devices} exceeds the claim "
                                  f"limit of {ALLOCATION_RESULTS_MAX_SIZE}")
        constraints: list[tuple] = []
        for i, c in enumerate(devices.get("constraints") or []):
            if c.get("matchAttribute"):
                constraints.append((_MatchAttribute, tuple(c.get("requests") or ()), c["matchAttribute"]))
            elif c.get("distinctAttribute") and self.features.consumable_capacity:
                constraints.append((_DistinctAttribute, tuple(c.get("requests") or ()), c["distinctAttribute"]))
            else:
                raise AllocationError(f"claim {ref}, constraint #{i}: empty constraint (unsupported constraint type?)")
        requests = [r for slot in slots for r in slot.alternatives]
        classes = tuple({r.class_name: r.device_class for r in requests}.items())
        shape = (orjson.dumps([devices.get("requests"), devices.get("constraints")], option=orjson.OPT_SORT_KEYS),
                 tuple(r.key for r in requests))
        return _ClaimPlan(claim, self.features, classes, slots, constraints,
                          cacheable=not any(r.all_mode for r in requests), shape=shape)

    def _prepare_request(self, ref: str, req: _Request) -> _Request:
        spec = req.spec
        for i, selector in enumerate(spec.get("selectors") or []):
            if not (selector or {}).get("cel"):
                raise AllocationError(f"claim {ref}, request {req.own_name}, selector #{i}: CEL expression empty "
                                      f"(unsupported selector type?)")
        if spec.get("adminAccess") is not None and not self.features.admin_access:
            raise AllocationError(f"claim {ref}, request {req.own_name}: admin access is requested, but the feature "
                                  f"is disabled")
        if not req.class_name:
            raise AllocationError(f"claim {ref}, request {req.own_name}: missing device class name (unsupported "
                                  f"request type?)")
        device_class = self.lookup_class(req.class_name)
        if device_class is None:
            raise AllocationError(f"claim {ref}, request {req.own_name}: could not retrieve device class "
                                  f"{req.class_name}: deviceclass.resource.k8s.io \"{req.class_name}\" not found")
        req.device_class = device_class
        class_exprs = tuple((s.get("cel") or {}).get("expression", "")
                            for s in ((device_class.get("spec") or {}).get("selectors") or []))
        request_exprs = tuple(s["cel"].get("expression", "") for s in spec.get("selectors") or [])
        get = self.cache.selectors.get
        req.selectors = ([(True, i, get(e, self.cel_features)) for i, e in enumerate(class_exprs)]
                         + [(False, i, get(e, self.cel_features)) for i, e in enumerate(request_exprs)])
        req.key = (req.class_name, class_exprs, request_exprs, self.cel_features, self.features.binding_conditions)
        mode = spec.get("allocationMode") or "ExactCount"
        if mode == "ExactCount":
            req.num_devices = req.count
        elif mode == "All":
            for pool in self.view.pools:
                if pool.incomplete:
                    raise AllocationError(f"claim {ref}, request {req.own_name}: asks for all devices, but resource "
                                          f"pool {pool.key} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"claim {ref}, request {req.own_name}: asks for all devices, but resource "
                                          f"pool {pool.key} is currently invalid")
            req.all_devices = [d for d in self.view.devices if self._selectable(req, d, raise_errors=True)]
            req.num_devices = len(req.all_devices)
        else:
            raise AllocationError(f"claim {ref}, request {req.own_name}: unsupported count mode {mode}")
        return req

    # -- selectors --

    def _evaluate(self, req: _Request, device: Device) -> Any:
        if device.binding_conditions and not self.features.binding_conditions:
            return False
        cel_device = None
        for from_class, index, selector in req.selectors:
            if selector.error is not None:
                return _MatchFailure(from_class, index, selector.error)
            if cel_device is None:
                cel_device = device.cel(self.cel_features)
            try:
                if not selector.matches(cel_device):
                    return False
            except CELError as e:
                return _MatchFailure(from_class, index, e)
        return True

    def _selectable(self, req: _Request, device: Device, raise_errors: bool) -> bool:
        result = device.match_cache.get(req.key)
        if result is None:
            result = device.match_cache[req.key] = self._evaluate(req, device)
        if result is True or result is False:
            return result
        if raise_errors:
            raise self._selector_error(req, device, result)
        return False

    def _selector_error(self, req: _Request, device: Device, failure: _MatchFailure) -> SelectorError:
        where = f"class {req.class_name}" if failure.from_class else f"claim {req.claim_ref}"
        error = failure.error
        if isinstance(error, CELCompileError):
            return SelectorError(f"{where}: selector #{failure.index}: CEL compile error: {error.message}", error)
        return SelectorError(f"{where}: selector #{failure.index} on device {device.id}: CEL runtime error: "
                             f"{enhance_runtime_error(error.message)}", error)

    def _candidates(self, req: _Request) -> list:
        """Devices of this node matching the request's selectors, with failures kept (they are
        raised only if the search reaches the device while it is free, as upstream would)."""
        found = self.view.candidates.get(req.key)
        if found is None:
            found = []
            for device in self.view.devices:
                result = device.match_cache.get(req.key)
                if result is None:
                    result = device.match_cache[req.key] = self._evaluate(req, device)
                if result is not False:
                    found.append((device, None if result is True else result))
            self.view.candidates[req.key] = found
        return found

    # -- the search --

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        self.steps += 1
        if ci >= len(self.claims):
            return True
        slots = self.slots[ci]
        if ri >= len(slots):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, 0)
            except _MaxSizeExceeded:
                return False
        slot = slots[ri]
        if not in_sub and slot.has_subrequests:
            all_exceeded = True
            for s in range(len(slot.alternatives)):
                try:
                    ok = self._allocate_one(ci, ri, s, 0, True, 0)
                except _MaxSizeExceeded:
                    continue
                all_exceeded = False
                if ok:
                    slot.selected = s
                    return True
            if all_exceeded:
                raise _MaxSizeExceeded
            return False
        req = slot.alternatives[si]
        if req.all_mode and not req.all_devices:
            return False
        if di >= req.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, 0)
        if len(self.results[ci]) + req.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if req.all_mode:
            undo = self._allocate_device(ci, req, req.all_devices[di], must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, in_sub, 0)
            except BaseException:
                self._deallocate(ci, undo)
                raise
            if not done:
                self._deallocate(ci, undo)
            return done
        candidates = self._candidates(req)
        in_use = self.in_use
        allocating = self.allocating
        shared_ok = self.features.consumable_capacity
        for pos in range(start, len(candidates)):
            device, failure = candidates[pos]
            did = device.id
            if req.admin:
                if ci in allocating.get(did, _EMPTY):
                    continue
            elif not (shared_ok and device.allow_multiple_allocations) and (did in in_use or allocating.get(did)):
                continue
            if failure is not None:
                raise self._selector_error(req, device, failure)
            undo = self._allocate_device(ci, req, device, must=False)
            if undo is None:
                continue
            next_start = pos if (shared_ok and device.allow_multiple_allocations) else pos + 1
            try:
                done = self._allocate_one(ci, ri, si, di + 1, in_sub, next_start)
            except BaseException:
                self._deallocate(ci, undo)
                raise
            if done:
                return True
            self._deallocate(ci, undo)
        return False

    def _allocate_device(self, ci: int, req: _Request, device: Device, must: bool) -> Optional[tuple]:
        """Check one candidate and, if it fits, record it; returns what _deallocate needs."""
        did = device.id
        shared = self.features.consumable_capacity and device.allow_multiple_allocations
        if req.admin:
            if ci in self.allocating.get(did, _EMPTY):
                return None
        elif not shared and (did in self.in_use or self.allocating.get(did)):
            return None
        if self.features.device_taints and device.taints and taints_prevent_allocation(device.taints, req.tolerations):
            return None
        consumed: Optional[dict[str, Fraction]] = None
        if self.features.consumable_capacity and (shared or req.capacity_requests):
            requests = {qualify(k, device.driver): v for k, v in req.capacity_requests.items()}
            demand = device.capacity_demand(requests)
            if demand is None:
                return None
            if shared:
                before = self.shared_consumed.get(did, {})
                taken = self.capacity_taken.get(did, {})
                for name, amount in demand.items():
                    if before.get(name, 0) + taken.get(name, 0) + amount > device.capacity[name]:
                        return None
                consumed = demand
        if device.consumes_counters:
            if not self.features.partitionable_devices:
                return None
            if not self._take_counters(device):
                return None
        added = []
        for constraint in self.constraints[ci]:
            if not constraint.applies(req):
                continue
            if not constraint.add(req, device):
                for c in added:
                    c.remove(req, device)
                if device.consumes_counters:
                    self._return_counters(device)
                if must:
                    raise AllocationError(f"claim {claim_ref(self.claims[ci])}, request {req.own_name}: cannot add "
                                          f"device {did} because a claim constraint would not be satisfied")
                return None
            added.append(constraint)
        self.allocating.setdefault(did, []).append(ci)
        if consumed:
            taken = self.capacity_taken.setdefault(did, {})
            for name, amount in consumed.items():
                taken[name] = taken.get(name, 0) + amount
        self.results[ci].append(_Chosen(req, device, consumed if shared else None))
        return (req, device, added, consumed)

    def _deallocate(self, ci: int, undo: tuple) -> None:
        req, device, added, consumed = undo
        for c in added:
            c.remove(req, device)
        owners = self.allocating[device.id]
        owners.remove(ci)
        if not owners:
            del self.allocating[device.id]
        if consumed:
            taken = self.capacity_taken[device.id]
            for name, amount in consumed.items():
                taken[name] -= amount
        if device.consumes_counters:
            self._return_counters(device)
        self.results[ci].pop()

    # -- shared counters (partitionable devices) --

    def _available_counters(self, device: Device) -> dict[str, dict[str, Fraction]]:
        """The pool's shared counters minus what its allocated devices consume (once per call)."""
        pool = device.slice.pool
        available = self.counters_available.get(pool.key)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for d in pool.devices:
                if d.consumes_counters and d.id in self.in_use:
                    for set_name, counters in d.consumes_counters:
                        target = available.get(set_name)
                        if target is None:
                            continue
                        for n, v in counters.items():
                            if n in target:
                                target[n] -= v  # may go negative: then nothing more fits
            self.counters_available[pool.key] = available
        return available

    def _take_counters(self, device: Device) -> bool:
        available = self._available_counters(device)
        consumed = self.counters_consumed.setdefault(device.slice.pool.key, {})
        for set_name, counters in device.consumes_counters:
            target = consumed.setdefault(set_name, {})
            for n, v in counters.items():
                target[n] = target.get(n, 0) + v
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for n, v in counters.items():
                if v < used.get(n, 0):
                    self._return_counters(device)
                    return False
        return True

    def _return_counters(self, device: Device) -> None:
        consumed = self.counters_consumed[device.slice.pool.key]
        for set_name, counters in device.consumes_counters:
            target = consumed[set_name]
            for n, v in counters.items():
                target[n] -= v

    # -- results --

    def _node_selector(self, claim: Mapping[str, Any], chosen: list[_Chosen]) -> Optional[dict]:
        fields: list[dict] = []
        expressions: list[dict] = []
        for c in chosen:
            device, s = c.device, c.device.slice
            if s.per_device:
                node_name, selector = device.node_name, device.node_selector
            else:
                node_name, selector = s.node_name, s.node_selector
            if node_name:
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
            if selector is not None:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) > 1:
                    raise AllocationError(f"create NodeSelector for claim {(claim.get('metadata') or {}).get('name', '')}: "
                                          f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
                if terms:
                    _add_requirements(terms[0].get("matchFields") or [], fields)
                    _add_requirements(terms[0].get("matchExpressions") or [], expressions)
        if not fields and not expressions:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}

    # -- why it failed --

    def _explain(self) -> list[tuple[Optional[int], str]]:
        """Why the search failed, as (claim index, text after "claim <ref>") or (None, text)."""
        reasons: list[tuple[Optional[int], str]] = []
        invalid = self.view.invalid_pools
        if invalid:
            reasons.append((None, INVALID_POOLS + " (" + "; ".join(f"resource pool {p.key}: {p.invalid_reason}"
                                                                   for p in invalid) + ")"))
        shortfalls = False
        for ci in range(len(self.claims)):  # each request alone, ignoring the others
            for slot in self.slots[ci]:
                problems = [(req, self._shortfall(ci, req)) for req in slot.alternatives]
                if slot.has_subrequests:
                    if all(p for _, p in problems):
                        shortfalls = True
                        reasons.append((ci, f", request {slot.name}: none of the {len(problems)} alternatives "
                                            f"can be allocated (" + "; ".join(f"{r.name}: {p}" for r, p in problems)
                                        + ")"))
                elif problems[0][1]:
                    shortfalls = True
                    reasons.append((ci, f", request {slot.name}: {problems[0][1]}"))
        if not shortfalls:
            constrained = [ci for ci in range(len(self.claims)) if self.constraints[ci]]
            for ci in constrained:
                described = ", ".join(c.describe() for c in self.constraints[ci])
                reasons.append((ci, f": no set of free devices satisfies the constraints ({described})"))
            if not constrained:
                reasons.append((None, "each request fits on its own, but not all of them together"))
        incomplete = self.view.incomplete_pools
        if incomplete and shortfalls:
            reasons.append((None, "resource pools currently being updated were skipped: "
                                  + ", ".join(p.key for p in incomplete)))
        return reasons

    def _shortfall(self, ci: int, req: _Request) -> Optional[str]:
        """Why this request cannot be met on its own, or None when it could be."""
        matched = [d for d in self.view.devices if self._selectable(req, d, raise_errors=False)]
        if not matched:
            return "no devices matched the selectors"
        needed = len(matched) if req.all_mode else req.num_devices
        busy = tainted = short = 0
        available = 0
        for d in matched:
            shared = self.features.consumable_capacity and d.allow_multiple_allocations
            if not req.admin and not shared and d.id in self.in_use:
                busy += 1
            elif self.features.device_taints and d.taints and taints_prevent_allocation(d.taints, req.tolerations):
                tainted += 1
            elif not self._fits_alone(req, d):
                short += 1
            else:
                available += 1
        if available >= needed:
            return None
        details = [f"{n} {what}" for n, what in ((busy, "in use"), (tainted, "tainted"),
                                                 (short, "short of capacity or shared counters")) if n]
        suffix = f" ({', '.join(details)})" if details else ""
        if req.all_mode:
            return f"not all matching devices are available: {needed} requested, {available} available{suffix}"
        return f"not enough devices: {needed} requested, {available} available{suffix}"

    def _fits_alone(self, req: _Request, device: Device) -> bool:
        if device.consumes_counters:
            if not self.features.partitionable_devices:
                return False
            available = self._available_counters(device)
            for set_name, counters in device.consumes_counters:
                have = available.get(set_name)
                if have is None:
                    continue
                for n, v in counters.items():
                    if n in have and have[n] < v:
                        return False
        if self.features.consumable_capacity and (req.capacity_requests or device.allow_multiple_allocations):
            demand = device.capacity_demand({qualify(k, device.driver): v for k, v in req.capacity_requests.items()})
            if demand is None:
                return False
            if device.allow_multiple_allocations:
                before = self.shared_consumed.get(device.id, {})
                if any(before.get(n, 0) + v > device.capacity[n] for n, v in demand.items()):
                    return False
        return True


def _config(slots: list[_RequestSlot], selected: list[int], claim: Mapping[str, Any]) -> list[dict]:
    """devices.config of a result: class configs (FromClass, once per class, naming every request
    that used it), then the claim's configs (FromClaim) that concern a chosen request."""
    config: list[dict] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    chosen_names: list[str] = []
    for slot, index in zip(slots, selected):
        req = slot.alternatives[index]
        chosen_names.append(req.name)
        known = class_ranges.get(req.class_name)
        if known is not None:
            for i in range(*known):
                config[i]["requests"].append(req.name)
            continue
        begin = len(config)
        for entry in (req.device_class.get("spec") or {}).get("config") or []:
            config.append({"source": "FromClass", "requests": [req.name],
                           **{k: _copy(v) for k, v in entry.items()}})
        class_ranges[req.class_name] = (begin, len(config))
    relevant = set(chosen_names) | {slot.name for slot in slots}
    for entry in ((claim.get("spec") or {}).get("devices") or {}).get("config") or []:
        names = entry.get("requests") or []
        if names and not any(n in relevant for n in names):
            continue
        out: dict[str, Any] = {"source": "FromClaim"}
        if names:
            out["requests"] = list(names)
        out.update({k: _copy(v) for k, v in entry.items() if k != "requests"})
        config.append(out)
    return config


def _add_requirements(source: list, target: list) -> None:
    """Upstream's addNewNodeSelectorRequirements: skip requirements already present."""
    for req in source:
        values = set(req.get("values") or [])
        if any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
               and set(r.get("values") or []) == values for r in target):
            continue
        target.append(_copy(req))


def _spelled(full: str, device: Device) -> str:
    """A capacity name as the slice spells it (bare when it belongs to the driver)."""
    if full in (device.spec.get("capacity") or {}):
        return full
    prefix = device.driver + "/"
    return full[len(prefix):] if full.startswith(prefix) else full


def _copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))
