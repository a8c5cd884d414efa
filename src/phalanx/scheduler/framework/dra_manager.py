"""The shared DRA manager (upstream's SharedDRAManager): what every profile and cycle knows about
ResourceClaims, ResourceSlices and DeviceClasses, kept by the scheduler's informers.

    manager = DRAManager()
    manager.claim_added(claim); manager.slice_added(slice_); manager.class_added(device_class)
    manager.get("default", "gpu-claim")       # the effective claim (the scheduler's own writes
                                              # count until the informer catches up)
    manager.hold(uid, key, allocation, pod)   # an allocation chosen by Reserve, not yet written
    manager.in_use, manager.consumed()        # devices taken (allocated or in flight)
    manager.inventory()                       # the slices, indexed once per slice change

The scheduler builds one and feeds it from its informer factory (`scheduler.py`); plugins reach
it through `Handle.shared_dra_manager()` (DynamicResources is the one that does).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from fractions import Fraction
from typing import Any, AsyncIterator, Mapping, Optional, Sequence

import orjson

from phalanx.dra import AllocatorCache, Inventory
from phalanx.dra.devices import DeviceID, DevicesInUse, consumed_capacity
from phalanx.machinery.interning import json_to_keep
from phalanx.machinery.selectors import compile_node_selector_term

from .constants import Obj


def object_meta(obj: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def namespaced_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_key(claim: Mapping[str, Any]) -> str:
    md = object_meta(claim)
    return namespaced_key(md.get("namespace", ""), md.get("name", ""))


def _rv(obj: Optional[Mapping[str, Any]]) -> int:
    try:
        return int(object_meta(obj).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def allocation_of(claim: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    return ((claim or {}).get("status") or {}).get("allocation")


def allocation_devices(allocation: Optional[Mapping[str, Any]]) -> tuple[frozenset[DeviceID], dict[DeviceID, dict[str, Fraction]]]:
    """(exclusively used DeviceIDs, capacity consumed from shared devices) of one allocation."""
    if not allocation:
        return frozenset(), {}
    results = (allocation.get("devices") or {}).get("results") or []
    used = frozenset(DeviceID(r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
                     for r in results if not r.get("adminAccess") and not r.get("shareID"))
    shared = consumed_capacity([{"status": {"allocation": allocation}}]) if any(
        r.get("shareID") for r in results) else {}
    return used, shared


def allocation_identity(allocation: Optional[Mapping[str, Any]]) -> tuple[Any, ...]:
    """What makes two allocations the same decision (timestamps and defaults aside)."""
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return tuple(sorted((r.get("request", ""), r.get("driver", ""), r.get("pool", ""), r.get("device", ""),
                         r.get("shareID") or "") for r in results))


class AllocationNodeSelector:
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


# -- the manager: what every cycle shares ------------------------------------------------------------

class InFlightAllocation:
    """An allocation chosen by Reserve and not yet written by PreBind (upstream's pending
    allocation), held by the pods that reserved it."""

    __slots__ = ("uid", "key", "allocation", "identity", "holders")

    def __init__(self, uid: str, key: str, allocation: dict[str, Any]):
        self.uid = uid
        self.key = key
        self.allocation = allocation
        self.identity = allocation_identity(allocation)
        self.holders: set[str] = set()

    def __repr__(self) -> str:
        return f"InFlightAllocation({self.key}, holders={len(self.holders)})"


class DRAManager:
    """Claims, slices and classes as DynamicResources needs them, shared by every profile and cycle:

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
        self._locks: dict[str, list[Any]] = {}  # claim uid -> [lock, users]
        self._node_selectors: dict[bytes, AllocationNodeSelector] = {}
        self.deallocating: set[str] = set()

    # -- claims ----------------------------------------------------------------------------------
    def get(self, namespace: str, name: str) -> Optional[Obj]:
        return self.claims.get(namespaced_key(namespace, name))

    def claim_added(self, claim: Obj) -> None:
        self._set_claim(claim, from_informer=True)

    def claim_updated(self, old: Optional[Obj], new: Obj) -> None:
        self._set_claim(new, from_informer=True)

    def claim_deleted(self, claim: Obj) -> None:
        key = claim_key(claim)
        current = self.claims.pop(key, None)
        self._assumed.discard(key)
        uid = object_meta(current or claim).get("uid", "")
        if uid and self._key_of_uid.get(uid) == key:
            del self._key_of_uid[uid]
        self.deallocating.discard(uid)
        self._account(uid)

    def assume(self, claim: Obj) -> None:
        """The scheduler's own write: effective until the informer shows this version or newer."""
        self._set_claim(claim, from_informer=False)

    def _set_claim(self, claim: Obj, *, from_informer: bool) -> None:
        key = claim_key(claim)
        current = self.claims.get(key)
        if from_informer and key in self._assumed and current is not None \
                and object_meta(current).get("uid") == object_meta(claim).get("uid") and _rv(claim) < _rv(current):
            return  # older than our own write: keep ours
        if from_informer:
            self._assumed.discard(key)
        else:
            self._assumed.add(key)
        old_uid = object_meta(current).get("uid", "") if current is not None else ""
        self.claims[key] = claim
        uid = object_meta(claim).get("uid", "")
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
        allocation = allocation_of(claim)
        if allocation is None:
            entry = self.in_flight.get(uid)
            allocation = entry.allocation if entry is not None else None
        if allocation is None:
            self.in_use.drop(uid)
            return
        devices, shared = allocation_devices(allocation)
        self.in_use.hold(uid, devices, shared)

    def consumed(self) -> dict[DeviceID, dict[str, Fraction]]:
        """Capacity taken from shared (allowMultipleAllocations) devices, allocated or in flight."""
        return self.in_use.consumed()

    # -- in-flight allocations -----------------------------------------------------------------------
    def pending(self, uid: str) -> Optional[InFlightAllocation]:
        return self.in_flight.get(uid)

    def hold(self, uid: str, key: str, allocation: dict[str, Any], holder: str) -> Optional[str]:
        """Reserve `allocation` for a claim on behalf of `holder` (a pod uid): creates the in-flight
        entry, or joins it when it holds the same allocation. Returns why not, or None."""
        entry = self.in_flight.get(uid)
        if entry is None:
            devices, _ = allocation_devices(allocation)
            if any(d in self.in_use for d in devices):
                return f"resource claim {key} is in the process of being allocated"
            entry = self.in_flight[uid] = InFlightAllocation(uid, key, allocation)
            entry.holders.add(holder)
            self._account(uid)
            return None
        if entry.identity != allocation_identity(allocation):
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

    def node_selector(self, selector: Mapping[str, Any]) -> AllocationNodeSelector:
        """The compiled form of an allocation's node selector, shared by equal selectors (the pods of
        a group reusing one allocation). Raises ValueError for an invalid one."""
        key = json_to_keep(selector, option=orjson.OPT_SORT_KEYS)
        compiled = self._node_selectors.get(key)
        if compiled is None:
            compiled = AllocationNodeSelector(selector)
            if len(self._node_selectors) >= _MAX_NODE_SELECTORS:
                self._node_selectors.clear()
            self._node_selectors[key] = compiled
        return compiled

    # -- slices and classes -------------------------------------------------------------------------
    def slice_added(self, slice_: Obj) -> None:
        self.slices[object_meta(slice_).get("name", "")] = slice_
        self._slices_changed = True

    def slice_updated(self, old: Optional[Obj], new: Obj) -> None:
        self.slice_added(new)

    def slice_deleted(self, slice_: Obj) -> None:
        self.slices.pop(object_meta(slice_).get("name", ""), None)
        self._slices_changed = True

    def inventory(self) -> Inventory:
        """The slices indexed; rebuilt (reusing unchanged slices' parsed devices) after a change."""
        if self._slices_changed or self._inventory is None:
            self._inventory = Inventory(list(self.slices.values()), previous=self._inventory)
            self._slices_changed = False
        return self._inventory

    def class_added(self, device_class: Obj) -> None:
        self.classes[object_meta(device_class).get("name", "")] = device_class

    def class_updated(self, old: Optional[Obj], new: Obj) -> None:
        self.class_added(new)

    def class_deleted(self, device_class: Obj) -> None:
        self.classes.pop(object_meta(device_class).get("name", ""), None)
