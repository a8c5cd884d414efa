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
from fractions import Fraction
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from ..machinery.featuregates import Gates
from .cel.compiler import SelectorCache
from .devices import Device, DeviceID, DevicesInUse, qualify, taints_prevent_allocation
from .explain import explain
from .plans import (ALLOCATION_RESULTS_MAX_SIZE, AllocationError, AllocatorFeatures, ClaimPlan, Request, RequestSlot,
                    claim_plan, claim_ref, evaluate_selectors, selector_error)
from .pools import Inventory, NodeView
from .results import node_selector, spell_results

CANNOT_ALLOCATE_ALL_CLAIMS = "cannot allocate all claims"


class AllocationOutcome:
    """`success`; `results` (one AllocationResult per claim) on success, else None with `reasons`.

    Both are worked out on first access: a scheduler filtering many nodes reads `results` only
    for the node it picks, and `reasons` only where it reports them."""

    __slots__ = ("success", "_results", "_build", "_reasons", "_explain")

    def __init__(self, results: Optional[list[dict[str, Any]]], reasons: Optional[list[str]] = None,
                 explain: Optional[Callable[[], list[str]]] = None, *,
                 build: Optional[Callable[[], list[dict[str, Any]]]] = None):
        self._results = results
        self._build = build
        self.success = results is not None or build is not None
        self._reasons = reasons
        self._explain = explain

    @property
    def results(self) -> Optional[list[dict[str, Any]]]:
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
        self._inventory_ids: tuple[Any, ...] = ()
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
        self._answer_indexes: dict[Any, AnswerIndex] = {}

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

    def answer_index(self, key: Any, inventory: Inventory, usage: DevicesInUse, per_device: bool) -> "AnswerIndex":
        """The valid answers for claims of the shape `key` (a memo key), up to date with `usage`."""
        index = self._answer_indexes.get(key)
        if index is None or not index.holds_for(inventory, usage, per_device):
            if index is None and len(self._answer_indexes) >= _MAX_ANSWER_INDEXES:
                self._answer_indexes.clear()
            index = self._answer_indexes[key] = AnswerIndex(inventory, usage, per_device)
        return index

    def features(self, gates: Gates) -> AllocatorFeatures:
        if isinstance(gates, AllocatorFeatures):
            return gates
        if isinstance(gates, Mapping) or self._features_for is not gates or self._features_value is None:
            self._features_for = gates
            self._features_value = AllocatorFeatures.from_gates(gates)
        return self._features_value


_MAX_INTERNED = 4096
_MAX_ANSWER_INDEXES = 64  # claim shapes with an AnswerIndex at once (all dropped beyond)


def allocate(claims: Sequence[Mapping[str, Any]], node: Mapping[str, Any],
             slices: Union[Inventory, Sequence[Mapping[str, Any]]],
             classes: Union[Mapping[str, Mapping[str, Any]], Callable[[str], Optional[Mapping[str, Any]]]],
             in_use: Union[set[DeviceID], frozenset[DeviceID], DevicesInUse] = frozenset(), *, gates: Gates = None,
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
                 *, gates: Gates = None, cache: Optional[AllocatorCache] = None):
        self.claims = list(claims)
        self.cache = cache or AllocatorCache()
        self.features = self.cache.features(gates)
        self.lookup = classes if callable(classes) else classes.get
        self._plans: Optional[list[ClaimPlan]] = None
        self._memo_key: Any = None

    def allocate(self, node: Mapping[str, Any], slices: Union[Inventory, Sequence[Mapping[str, Any]]],
                 in_use: Union[set[DeviceID], frozenset[DeviceID], DevicesInUse] = frozenset(), *,
                 consumed_capacity: Optional[Mapping[DeviceID, Mapping[str, Fraction]]] = None,
                 view: Optional[NodeView] = None) -> AllocationOutcome:
        """The claims on `node` (`view`: its `NodeView` when the caller has it already)."""
        return self.answer(node, slices, in_use, consumed_capacity=consumed_capacity, view=view).outcome(self)

    def answer(self, node: Mapping[str, Any], slices: Union[Inventory, Sequence[Mapping[str, Any]]],
               in_use: Union[set[DeviceID], frozenset[DeviceID], DevicesInUse] = frozenset(), *,
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
            plans = [claim_plan(cache, claim, features, self.lookup, view) for claim in self.claims]
            if all(p.cacheable for p in plans):
                self._plans = plans
                self._memo_key = cache.shape_id((features, tuple(p.shape for p in plans)))
            else:
                self._plans = _PER_NODE  # `All` depends on the node: plan on every node
        elif plans is _PER_NODE:
            plans = [claim_plan(cache, claim, features, self.lookup, view) for claim in self.claims]
        memo_usage: Optional[DevicesInUse] = None  # set when the answer is remembered in view.memo
        if self._memo_key is not None and consumed_capacity is None and isinstance(in_use, DevicesInUse):
            entry = self.remembered(view, in_use)
            if entry is not None:
                return entry
            memo_usage = in_use
        if consumed_capacity is None:
            consumed_capacity = in_use.consumed() if isinstance(in_use, DevicesInUse) else {}
        answer = _Allocation(self.claims, node, view, self.lookup, in_use, features, cache,
                             consumed_capacity).run(plans)
        if memo_usage is not None:
            memo = view.memo
            answer.usage = memo_usage
            answer.version = memo_usage.version
            answer.state = view.state(memo_usage)
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
        entry: Optional[NodeAnswer] = view.memo.get(key)
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
        a node whose labels object is not the one its view was checked against gets None.

        Answers found valid are kept in the cache's index for this claim shape until a pool they
        reach changes (`DevicesInUse.pools_changed_since`): a cycle pays per node one lookup, and
        a check only for the nodes the index does not hold."""
        key = self._memo_key
        if key is None:
            return [None] * len(names)
        per_device = self.features.partitionable_devices
        if inventory.label_dependent:
            if nodes is None:
                return [None] * len(names)
            return _remembered_each(key, names, inventory, usage, per_device, nodes)
        index = self.cache.answer_index(key, inventory, usage, per_device)
        held = index.answers.get
        out = [held(name) for name in names]
        missing = [i for i, entry in enumerate(out) if entry is None]
        if missing:
            views_get = inventory.cached_views(per_device).get
            for i in missing:
                name = names[i]
                view = views_get(name)
                if view is None:
                    continue
                entry = view.memo.get(key)
                if entry is not None and _still_valid(entry, view, usage):
                    out[i] = entry
                    index.add(name, entry, view)
        return out


def _still_valid(entry: "NodeAnswer", view: NodeView, usage: DevicesInUse) -> bool:
    """Whether a remembered answer holds with `usage` as it is now."""
    if entry.usage is not usage:
        return False
    if entry.version == usage.version:
        return True
    pool = view.pool_id
    now: Any = usage.versions.get(pool) if pool is not None else tuple(map(usage.versions.get, view.pool_ids))
    return bool(entry.state == now)


def _remembered_each(key: Any, names: Sequence[str], inventory: Inventory, usage: DevicesInUse, per_device: bool,
                     nodes: Sequence[Mapping[str, Any]]) -> list[Optional["NodeAnswer"]]:
    """`remembered_on` for a label-dependent inventory: each node's view checked against its labels."""
    views_get = inventory.cached_views(per_device).get
    out: list[Optional[NodeAnswer]] = []
    for name, node in zip(names, nodes):
        view = views_get(name)
        if view is None or view.labels is not (node.get("metadata") or {}).get("labels"):
            out.append(None)
            continue
        entry = view.memo.get(key)
        out.append(entry if entry is not None and _still_valid(entry, view, usage) else None)
    return out


class AnswerIndex:
    """The answers known valid for one claim shape, by node name, for one inventory and usage: an
    answer leaves when a pool its node reaches changes."""

    __slots__ = ("inventory", "usage", "per_device", "version", "answers", "nodes_of_pool")

    def __init__(self, inventory: Inventory, usage: DevicesInUse, per_device: bool):
        self.inventory, self.usage, self.per_device = inventory, usage, per_device
        self.version = usage.version
        self.answers: dict[str, NodeAnswer] = {}
        self.nodes_of_pool: dict[tuple[str, str], set[str]] = {}

    def holds_for(self, inventory: Inventory, usage: DevicesInUse, per_device: bool) -> bool:
        """Brought up to date with `usage`; False when it cannot be (another inventory or usage,
        or the change log no longer reaches back to this index's version)."""
        if inventory is not self.inventory or usage is not self.usage or per_device != self.per_device:
            return False
        if self.version == usage.version:
            return True
        changed = usage.pools_changed_since(self.version)
        if changed is None:
            return False
        answers, nodes_of_pool = self.answers, self.nodes_of_pool
        for pool in changed:
            for name in nodes_of_pool.pop(pool, ()):
                answers.pop(name, None)
        self.version = usage.version
        return True

    def add(self, name: str, entry: "NodeAnswer", view: NodeView) -> None:
        self.answers[name] = entry
        nodes_of_pool = self.nodes_of_pool
        for pool in view.pool_ids:
            nodes = nodes_of_pool.get(pool)
            if nodes is None:
                nodes = nodes_of_pool[pool] = set()
            nodes.add(name)


_PER_NODE: list[Any] = []
_MAX_MEMO_PER_VIEW = 64


# -- internals ---------------------------------------------------------------------------------------

# -- internals ---------------------------------------------------------------------------------------

class _MaxSizeExceeded(Exception):
    """Upstream's errAllocationResultMaxSizeExceeded: backtrack harder."""


class Chosen:
    __slots__ = ("request", "device", "consumed")

    def __init__(self, request: Request, device: Device, consumed: Optional[dict[str, Fraction]]):
        self.request, self.device, self.consumed = request, device, consumed


_EMPTY: tuple[Any, ...] = ()
_NO_FIT = object()  # _capacity_demand: the capacity does not fit


class NodeAnswer:
    """What one search on one node found, independent of the claims' names, so that other claims of
    the same shape on the same node, with the same devices in use, can take it (see
    ClaimsAllocator): `fits`; per claim the (slot, alternative, device, consumed capacity) chosen,
    the alternative selected per slot and the node selector. `results(allocator)` and
    `reasons(allocator)` spell it out for the allocator's own claims."""

    __slots__ = ("fits", "run", "plans", "choices", "selected", "node_selectors", "parts", "usage", "version",
                 "state")

    def __init__(self, run: "_Allocation", choices: Optional[list[Any]], selected: Optional[list[Any]],
                 node_selectors: Optional[list[Any]]):
        self.fits = choices is not None
        self.run: Optional[_Allocation] = None if self.fits else run  # explains a failure, on demand
        self.plans = run.plans
        self.choices = choices
        self.selected = selected
        self.node_selectors = node_selectors
        self.parts: Optional[tuple[Any, ...]] = None
        self.usage: Optional[DevicesInUse] = None
        self.version = -1
        self.state: Any = None

    def outcome(self, allocator: "ClaimsAllocator") -> AllocationOutcome:
        if not self.fits:
            return AllocationOutcome(None, explain=lambda: self.reasons(allocator))
        return AllocationOutcome(None, build=lambda: self._results(allocator, allocator._plans or self.plans))

    def reasons(self, allocator: "ClaimsAllocator") -> list[str]:
        """Why nothing fits, per claim of `allocator` ("claim <ref>, request <name>: ...")."""
        if self.fits:
            return []
        claims = allocator.claims
        return [text if ci is None else f"claim {claim_ref(claims[ci])}{text}" for ci, text in self.explained()]

    def explained(self) -> tuple[Any, ...]:
        """Why nothing fits, independent of names: ((claim index or None, text), ...); equal
        explanations are one object (interned per AllocatorCache)."""
        if self.parts is None:
            assert self.run is not None
            self.parts = self.run.cache.intern(tuple(explain(self.run)))
            self.run = None
        return self.parts

    def results(self, allocator: "ClaimsAllocator") -> Optional[list[dict[str, Any]]]:
        """One AllocationResult per claim of `allocator` (fresh dicts, a fresh shareID each)."""
        if not self.fits:
            return None
        return self._results(allocator, allocator._plans or self.plans)

    def _results(self, allocator: "ClaimsAllocator", plans: list["ClaimPlan"]) -> list[dict[str, Any]]:
        return spell_results(self, allocator, plans)


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
        self.plans: list[ClaimPlan] = []
        self.slots: list[list[RequestSlot]] = []
        self.constraints: list[list[Any]] = []
        self.allocating: dict[DeviceID, list[int]] = {}
        self.results: list[list[Chosen]] = [[] for _ in claims]
        self.counters_available: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.counters_consumed: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.capacity_taken: dict[DeviceID, dict[str, Fraction]] = {}
        self.steps = 0

    def run(self, plans: Optional[list[ClaimPlan]]) -> NodeAnswer:
        """Search with these plans (None: plan the claims for this node first)."""
        if plans is None:
            plans = [claim_plan(self.cache, claim, self.features, self.lookup_class, self.view)
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
        node_selectors = [node_selector(claim, self.results[ci]) for ci, claim in enumerate(self.claims)]
        return NodeAnswer(self, choices, selected, node_selectors)

    def _candidates(self, req: Request) -> list[Any]:
        """Devices of this node matching the request's selectors, with failures kept (they are
        raised only if the search reaches the device while it is free, as upstream would)."""
        found = self.view.candidates.get(req.key)
        if found is None:
            found = []
            for device in self.view.devices:
                result = device.match_cache.get(req.key)
                if result is None:
                    result = device.match_cache[req.key] = evaluate_selectors(req, device, self.features, self.cel_features)
                if result is not False:
                    found.append((device, None if result is True else result))
            self.view.candidates[req.key] = found
        return found

    # -- the search --

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        """Fill slot `di` of alternative `si` of request `ri` of claim `ci`, then everything after it;
        candidates before `start` were tried for an earlier slot of the same request."""
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
            return self._allocate_alternatives(ci, ri, slot)
        req = slot.alternatives[si]
        if req.all_mode and not req.all_devices:
            return False
        if di >= req.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, 0)
        if len(self.results[ci]) + req.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if req.all_mode:
            undo = self._allocate_device(ci, req, req.all_devices[di], must=True)
            return undo is not None and self._continue_or_undo(ci, undo, ri, si, di + 1, in_sub, 0)
        return self._allocate_candidates(ci, ri, si, di, in_sub, start, req)

    def _allocate_alternatives(self, ci: int, ri: int, slot: RequestSlot) -> bool:
        """firstAvailable: the first sub-request that leads to a full solution wins."""
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

    def _continue_or_undo(self, ci: int, undo: tuple[Any, ...], ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        try:
            done = self._allocate_one(ci, ri, si, di, in_sub, start)
        except BaseException:
            self._deallocate(ci, undo)
            raise
        if not done:
            self._deallocate(ci, undo)
        return done

    def _allocate_candidates(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int,
                             req: Request) -> bool:
        """Try the request's matching devices from `start` on for slot `di` (the hot loop)."""
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
                raise selector_error(req, device, failure)
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

    def _allocate_device(self, ci: int, req: Request, device: Device, must: bool) -> Optional[tuple[Any, ...]]:
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
            consumed = self._capacity_demand(req, device, shared)
            if consumed is _NO_FIT:
                return None
        if device.consumes_counters and not (self.features.partitionable_devices and self._take_counters(device)):
            return None
        added = self._add_to_constraints(ci, req, device, must) if self.constraints[ci] else _EMPTY
        if added is None:
            return None
        self._record(ci, req, device, consumed if shared else None)
        return (req, device, added, consumed)

    def _capacity_demand(self, req: Request, device: Device, shared: bool) -> Any:
        """What taking the device consumes of its capacity (shared devices only, else None), or
        _NO_FIT when the request's capacity does not fit."""
        requests = {qualify(k, device.driver): v for k, v in req.capacity_requests.items()}
        demand = device.capacity_demand(requests)
        if demand is None:
            return _NO_FIT
        if not shared:
            return None
        before = self.shared_consumed.get(device.id, {})
        taken = self.capacity_taken.get(device.id, {})
        for name, amount in demand.items():
            if before.get(name, 0) + taken.get(name, 0) + amount > device.capacity[name]:
                return _NO_FIT
        return demand

    def _add_to_constraints(self, ci: int, req: Request, device: Device, must: bool) -> Optional[list[Any]]:
        """Add the device to the claim's constraints that apply; None (all undone) when one refuses."""
        added: list[Any] = []
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
                                          f"device {device.id} because a claim constraint would not be satisfied")
                return None
            added.append(constraint)
        return added

    def _record(self, ci: int, req: Request, device: Device, consumed: Optional[dict[str, Fraction]]) -> None:
        self.allocating.setdefault(device.id, []).append(ci)
        if consumed:
            taken = self.capacity_taken.setdefault(device.id, {})
            for name, amount in consumed.items():
                taken[name] = taken.get(name, 0) + amount
        self.results[ci].append(Chosen(req, device, consumed))

    def _deallocate(self, ci: int, undo: tuple[Any, ...]) -> None:
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

