"""ResourceSlices indexed into resource pools, and the pools one node can reach (upstream GatherPools).

    inventory = Inventory(slices)                      # parse and index every slice once
    inventory = Inventory(new_slices, previous=inventory)   # unchanged slices keep their parsed
                                                            # devices (and cached CEL results)
    view = inventory.node_view(node)                   # cached per node
    view.pools          # [NodePool] sorted by (driver, pool name); slices sorted by name
    view.devices        # devices of complete, valid pools reachable from the node, in search order

Rules carried over from upstream:
- a slice is reachable from a node by `spec.nodeName`, `allNodes`, a matching `nodeSelector`, or
  with `perDeviceNodeSelection` when at least one of its devices is (`nodeName` / `allNodes` /
  `nodeSelector` per device; only those devices are offered on the node); per-device selection
  needs DRAPartitionableDevices;
- per (driver, pool) only the highest `pool.generation` counts; the pool is complete when the number
  of slices at that generation (reachable or not) equals `resourceSliceCount`;
- incomplete pools are skipped by the search and make `allocationMode: All` fail; a pool whose
  reachable slices repeat a device name is invalid (`duplicate device name <name>`) and skipped too;
- shared counters (`sharedCounters`) come from every slice of the pool at that generation.
Deviation, on purpose: the newest generation is the pool's newest overall. Upstream first looks
only at reachable slices and drops the pool when an unreachable slice turns out to be newer; both
end with the same devices offered except while a driver is half-way through republishing.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Mapping, Optional

from ..machinery.quantity import parse_quantity
from ..machinery.selectors import compile_node_selector_term
from .devices import Device


def _compiled_selector(selector: Optional[Mapping[str, Any]]) -> Optional[list[Any]]:
    if selector is None:
        return None
    return [compile_node_selector_term(t) for t in selector.get("nodeSelectorTerms") or []]


def _terms_match(terms: list[Any], node: Mapping[str, Any]) -> bool:
    return any(t.matches(node) for t in terms)


class Slice:
    """One ResourceSlice, parsed."""

    __slots__ = ("name", "raw", "driver", "pool_name", "generation", "slice_count", "node_name", "all_nodes",
                 "node_selector", "node_selector_terms", "per_device", "devices", "shared_counters",
                 "device_node_terms", "pool")

    def __init__(self, raw: Mapping[str, Any]):
        spec = raw.get("spec") or {}
        pool = spec.get("pool") or {}
        self.raw = raw
        self.name: str = (raw.get("metadata") or {}).get("name", "")
        self.driver: str = spec.get("driver", "")
        self.pool_name: str = pool.get("name", "")
        self.generation = int(pool.get("generation") or 0)
        self.slice_count = int(pool.get("resourceSliceCount") or 0)
        self.node_name: Optional[str] = spec.get("nodeName") or None
        self.all_nodes = bool(spec.get("allNodes"))
        self.node_selector: Optional[Mapping[str, Any]] = spec.get("nodeSelector")
        self.node_selector_terms = _compiled_selector(self.node_selector)
        self.per_device = bool(spec.get("perDeviceNodeSelection"))
        self.devices = [Device(d, self, self.driver, self.pool_name) for d in spec.get("devices") or []]
        self.device_node_terms = [_compiled_selector(d.node_selector) for d in self.devices] if self.per_device else []
        self.pool: Optional["Pool"] = None  # set by the Pool that holds the slice's generation
        self.shared_counters: dict[str, dict[str, Fraction]] = {}
        for cs in spec.get("sharedCounters") or []:
            self.shared_counters[cs.get("name", "")] = {
                n: parse_quantity((c or {}).get("value", "0")) for n, c in (cs.get("counters") or {}).items()}

    @property
    def label_dependent(self) -> bool:
        return self.node_selector is not None or (self.per_device and any(d.node_selector is not None
                                                                           for d in self.devices))

    def reaches(self, node: Mapping[str, Any], node_name: str, per_device_selection: bool) -> Optional[list[Device]]:
        """The devices this slice offers on the node, or None when it does not reach it."""
        if self.node_name is not None:
            return self.devices if self.node_name == node_name else None
        if self.all_nodes:
            return self.devices
        if self.node_selector_terms is not None:
            return self.devices if _terms_match(self.node_selector_terms, node) else None
        if self.per_device and per_device_selection:
            offered = []
            for device, terms in zip(self.devices, self.device_node_terms):
                if device.node_name is not None:
                    ok = device.node_name == node_name
                elif device.all_nodes:
                    ok = True
                elif terms is not None:
                    ok = _terms_match(terms, node)
                else:
                    ok = False
                if ok:
                    offered.append(device)
            return offered or None
        return None  # nothing known is set: some future extension; skipped like upstream


class Pool:
    """All slices of one (driver, pool) at its newest generation."""

    __slots__ = ("driver", "name", "generation", "slices", "complete", "counter_sets", "devices", "key")

    def __init__(self, driver: str, name: str, slices: list[Slice]):
        self.driver = driver
        self.name = name
        self.key = f"{driver}/{name}"
        self.generation = max(s.generation for s in slices)
        self.slices = sorted((s for s in slices if s.generation == self.generation), key=lambda s: s.name)
        self.complete = len(self.slices) == self.slices[0].slice_count
        self.counter_sets: dict[str, dict[str, Fraction]] = {}
        for s in self.slices:
            for set_name, counters in s.shared_counters.items():
                self.counter_sets.setdefault(set_name, {}).update(counters)
        self.devices = [d for s in self.slices for d in s.devices]
        for s in self.slices:
            s.pool = self


class NodePool:
    """A pool as one node sees it."""

    __slots__ = ("pool", "slices", "devices", "incomplete", "invalid", "invalid_reason")

    def __init__(self, pool: Pool, offered: list[tuple[Slice, list[Device]]]):
        self.pool = pool
        self.slices = [s for s, _ in offered]
        self.devices = [d for _, devices in offered for d in devices]
        self.incomplete = not pool.complete
        self.invalid_reason = ""
        seen: set[str] = set()
        for s in self.slices:
            for d in s.devices:
                if d.name in seen:
                    self.invalid_reason = f"duplicate device name {d.name}"
                    break
                seen.add(d.name)
            if self.invalid_reason:
                break
        self.invalid = bool(self.invalid_reason)

    @property
    def key(self) -> str:
        return self.pool.key


class NodeView:
    """What one node can reach; `candidates` caches, per request shape, the devices that match it;
    `memo` is the allocator's (answers per claim shape, valid while `state(usage)` is unchanged).
    Nodes that reach exactly the same devices (network-attached pools, `allNodes` slices) share
    `candidates` and `memo`: an allocation there does not depend on which of them asks."""

    __slots__ = ("node_name", "pools", "devices", "candidates", "labels", "labels_snapshot", "pool_ids", "pool_id",
                 "memo")

    def __init__(self, node_name: str, pools: list[NodePool], labels: Any,
                 shared: Optional[tuple[dict[str, Any], dict[str, Any]]] = None):
        self.node_name = node_name
        self.pools = pools
        self.devices = [d for p in pools if not (p.incomplete or p.invalid) for d in p.devices]
        self.candidates, self.memo = shared if shared is not None else ({}, {})
        self.labels = labels
        self.labels_snapshot = dict(labels) if labels else {}
        self.pool_ids = [(p.pool.driver, p.pool.name) for p in pools]
        self.pool_id = self.pool_ids[0] if len(self.pool_ids) == 1 else None  # the only one, if so

    def state(self, usage: Any) -> Any:
        """The versions, in `usage` (a devices.DevicesInUse), of the pools this node reaches (just
        the one version when it reaches one pool)."""
        if self.pool_id is not None:
            return usage.versions.get(self.pool_id)
        return tuple(map(usage.versions.get, self.pool_ids))

    @property
    def incomplete_pools(self) -> list[NodePool]:
        return [p for p in self.pools if p.incomplete]

    @property
    def invalid_pools(self) -> list[NodePool]:
        return [p for p in self.pools if p.invalid]


def _slice_key(raw: Mapping[str, Any]) -> Any:
    meta = raw.get("metadata") or {}
    rv = meta.get("resourceVersion")
    if rv:
        return (meta.get("uid") or meta.get("name"), rv)
    return id(raw)


class Inventory:
    """Every ResourceSlice parsed once and grouped into pools; per-node views built on demand."""

    def __init__(self, slices: Iterable[Mapping[str, Any]], previous: Optional["Inventory"] = None):
        reuse = previous._by_key if previous is not None else {}
        self.raw: list[Mapping[str, Any]] = list(slices)
        self._by_key: dict[Any, Slice] = {}
        parsed: list[Slice] = []
        for raw in self.raw:
            key = _slice_key(raw)
            entry = reuse.get(key)
            if entry is None or (isinstance(key, int) and entry.raw is not raw):
                entry = Slice(raw)
            self._by_key[key] = entry
            parsed.append(entry)
        self.slices = parsed
        grouped: dict[tuple[str, str], list[Slice]] = {}
        for s in parsed:
            grouped.setdefault((s.driver, s.pool_name), []).append(s)
        self.pools: dict[tuple[str, str], Pool] = {k: Pool(k[0], k[1], v) for k, v in sorted(grouped.items())}
        self._pool_order = list(self.pools.values())
        by_node: dict[str, list[Slice]] = {}
        self._everywhere: list[Slice] = []
        for pool in self._pool_order:
            for s in pool.slices:
                if s.node_name is not None:
                    by_node.setdefault(s.node_name, []).append(s)
                else:
                    self._everywhere.append(s)
        self._by_node = by_node
        self.label_dependent = any(s.label_dependent for s in self._everywhere)
        self._views: dict[bool, dict[str, NodeView]] = {True: {}, False: {}}  # per_device_selection -> name
        self._shared: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any]]] = {}  # what a node reaches -> (candidates, memo)

    def node_view(self, node: Mapping[str, Any], per_device_selection: bool = True) -> NodeView:
        meta = node.get("metadata") or {}
        name = meta.get("name", "")
        labels = meta.get("labels")
        views = self._views[bool(per_device_selection)]
        view = views.get(name)
        if view is not None:
            if not self.label_dependent or view.labels is labels or view.labels_snapshot == (labels or {}):
                view.labels = labels
                return view
        view = self._build_view(node, name, labels, per_device_selection)
        views[name] = view
        return view

    def cached_views(self, per_device_selection: bool = True) -> Mapping[str, NodeView]:
        """The views built so far by node name (a quick path for callers that see many nodes; a
        node missing there, or, when `label_dependent`, one whose view has another labels object
        than the node: call `node_view`)."""
        return self._views[bool(per_device_selection)]

    def _build_view(self, node: Mapping[str, Any], name: str, labels: Any, per_device: bool) -> NodeView:
        offered: dict[tuple[str, str], list[tuple[Slice, list[Device]]]] = {}
        for s in self._by_node.get(name, ()):
            offered.setdefault((s.driver, s.pool_name), []).append((s, s.devices))
        for s in self._everywhere:
            devices = s.reaches(node, name, per_device)
            if devices is not None:
                offered.setdefault((s.driver, s.pool_name), []).append((s, devices))
        pools = []
        reach = []
        for key in sorted(offered):
            entries = sorted(offered[key], key=lambda e: e[0].name)
            pools.append(NodePool(self.pools[key], entries))
            reach.append(tuple((id(s), None if devices is s.devices else tuple(map(id, devices)))
                               for s, devices in entries))
        shared = self._shared.get(tuple(reach)) if not self._by_node.get(name) else None
        if shared is None:
            shared = ({}, {})
            if not self._by_node.get(name):  # a node's own slices: nobody else reaches them
                self._shared[tuple(reach)] = shared
        return NodeView(name, pools, labels, shared)

    def device(self, driver: str, pool: str, name: str) -> Optional[Device]:
        p = self.pools.get((driver, pool))
        if p is None:
            return None
        for d in p.devices:
            if d.name == name:
                return d
        return None

    def __len__(self) -> int:
        return len(self.slices)
