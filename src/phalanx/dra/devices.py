"""Devices as the DRA allocator sees them: identity, attributes, taints, counters, capacity.

    did = device_id("gpu.example.com", "node-1", "gpu-0")     # DeviceID; str(did) == "gpu.example.com/node-1/gpu-0"
    in_use = devices_in_use(claims)        # from status.allocation of every allocated ResourceClaim
    shared = consumed_capacity(claims)     # shared (allowMultipleAllocations) devices: capacity taken

    usage = DevicesInUse()                 # the same, kept up to date per holder (a claim uid)
    usage.hold("uid-1", [did], {})         # replaces what uid-1 held before
    usage.drop("uid-1")
    did in usage; usage.consumed()         # exclusive use; capacity taken from shared devices
    usage.pool_version(("gpu.example.com", "node-1"))   # changes whenever that pool's use changes

`Device` wraps one entry of `ResourceSlice.spec.devices` once, when the slice is indexed
(`pools.Inventory`): attribute lookups, parsed counter consumption and capacity are ready, the CEL
view of the device is built on first use, and selector results are cached on it
(`match_cache`, keyed by the allocator), so a device is evaluated once per selector set for as
long as its slice is unchanged.

`DevicesInUse` is the long-lived form of `devices_in_use` + `consumed_capacity` for a scheduler:
updated per claim, never recomputed, with a version per resource pool. The allocator accepts it
as `in_use` and then remembers its answer per node until a pool that node reaches changes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Iterator, Mapping, NamedTuple, Optional

from ..machinery.quantity import parse_quantity, parse_quantity_format
from .cel.device import CELDevice
from .cel.environment import CELFeatures


class DeviceID(NamedTuple):
    """Upstream's DeviceID: driver, pool and device name."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


def device_id(driver: str, pool: str, device: str) -> DeviceID:
    return DeviceID(driver, pool, device)


def _allocation_results(claim: Mapping[str, Any]) -> list[Any]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return (allocation.get("devices") or {}).get("results") or []


def devices_in_use(claims: Iterable[Mapping[str, Any]]) -> set[DeviceID]:
    """Devices allocated exclusively by the given claims.

    Results with `adminAccess: true` do not make a device busy (upstream excludes them), nor do
    shared allocations (`shareID` set, allowMultipleAllocations devices): see `consumed_capacity`.
    """
    used: set[DeviceID] = set()
    for claim in claims:
        for r in _allocation_results(claim):
            if r.get("adminAccess") or r.get("shareID"):
                continue
            used.add(DeviceID(r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
    return used


def consumed_capacity(claims: Iterable[Mapping[str, Any]]) -> dict[DeviceID, dict[str, Fraction]]:
    """Capacity taken from shared devices by the given claims' `consumedCapacity` results."""
    taken: dict[DeviceID, dict[str, Fraction]] = {}
    for claim in claims:
        for r in _allocation_results(claim):
            if not r.get("shareID") or r.get("adminAccess"):
                continue
            did = DeviceID(r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
            per_device = taken.setdefault(did, {})
            for name, q in (r.get("consumedCapacity") or {}).items():
                full = qualify(name, did.driver)
                per_device[full] = per_device.get(full, Fraction(0)) + parse_quantity(q)
    return taken


class DevicesInUse:
    """Devices held by allocated (or about-to-be-allocated) claims, per holder (a claim uid).

    - `did in usage`, `usage[did]` (how many holders), `len`, iteration: exclusive use, as the
      set `devices_in_use` returns (admin-access and shared results excluded by the caller);
    - `consumed()`: capacity taken from shared devices, summed over holders (cached);
    - `pool_version((driver, pool))`: bumped whenever a device of that pool becomes busy or free
      or its shared capacity changes, so an answer computed for a node stays valid while the
      versions of the pools the node reaches are unchanged;
    - `version` counts every bump, and `pools_changed_since(version)` names the pools bumped
      after an earlier `version` (from a bounded log: None when it no longer reaches that far).
    """

    __slots__ = ("_counts", "_holders", "versions", "_consumed", "version", "_log", "_log_start")

    def __init__(self) -> None:
        self._counts: dict[DeviceID, int] = {}
        self._holders: dict[str, tuple[frozenset[DeviceID], Mapping[DeviceID, Mapping[str, Fraction]]]] = {}
        self.versions: dict[tuple[str, str], int] = {}  # read-only for callers; missing: never changed
        self._consumed: Optional[dict[DeviceID, dict[str, Fraction]]] = {}
        self.version = 0
        self._log: list[tuple[str, str]] = []  # the pool of each bump since version _log_start
        self._log_start = 0

    def __contains__(self, did: object) -> bool:
        return did in self._counts

    def __getitem__(self, did: DeviceID) -> int:
        return self._counts.get(did, 0)

    def __len__(self) -> int:
        return len(self._counts)

    def __iter__(self) -> Iterator[DeviceID]:
        return iter(self._counts)

    def __repr__(self) -> str:
        return f"DevicesInUse({sorted(map(str, self._counts))})"

    def pool_version(self, pool: tuple[str, str]) -> int:
        return self.versions.get(pool, 0)

    def _bump(self, did: DeviceID) -> None:
        key = (did.driver, did.pool)
        self.versions[key] = self.versions.get(key, 0) + 1
        self.version += 1
        log = self._log
        log.append(key)
        if len(log) > _MAX_CHANGE_LOG:
            drop = len(log) // 2
            del log[:drop]
            self._log_start += drop

    def pools_changed_since(self, version: int) -> Optional[set[tuple[str, str]]]:
        """The (driver, pool) keys bumped after `version` (an earlier `self.version`); None when
        the log was trimmed past it (the caller must then check everything again)."""
        if version < self._log_start or version > self.version:
            return None
        return set(self._log[version - self._log_start:])

    def holding(self, holder: str) -> tuple[frozenset[DeviceID], Mapping[DeviceID, Mapping[str, Fraction]]]:
        """(exclusive DeviceIDs, shared capacity) `holder` holds; empty when nothing."""
        return self._holders.get(holder) or (frozenset(), {})

    def hold(self, holder: str, devices: Iterable[DeviceID],
             shared: Optional[Mapping[DeviceID, Mapping[str, Fraction]]] = None) -> None:
        """`holder` now holds exactly these devices (and this shared capacity)."""
        devices = frozenset(devices)
        shared = shared or {}
        old = self._holders.get(holder)
        if old is not None and old[0] == devices and old[1] == shared:
            return
        self.drop(holder)
        if not devices and not shared:
            return
        self._holders[holder] = (devices, shared)
        counts = self._counts
        for did in devices:
            n = counts.get(did, 0)
            counts[did] = n + 1
            if n == 0:
                self._bump(did)
        if shared:
            self._consumed = None
            for did in shared:
                self._bump(did)

    def drop(self, holder: str) -> None:
        """`holder` holds nothing any more."""
        old = self._holders.pop(holder, None)
        if old is None:
            return
        counts = self._counts
        for did in old[0]:
            n = counts[did] - 1
            if n > 0:
                counts[did] = n
            else:
                del counts[did]
                self._bump(did)
        if old[1]:
            self._consumed = None
            for did in old[1]:
                self._bump(did)

    def consumed(self) -> dict[DeviceID, dict[str, Fraction]]:
        """Capacity taken from shared (allowMultipleAllocations) devices by all holders."""
        if self._consumed is None:
            total: dict[DeviceID, dict[str, Fraction]] = {}
            for _, shared in self._holders.values():
                for did, amounts in shared.items():
                    per = total.setdefault(did, {})
                    for name, q in amounts.items():
                        per[name] = per.get(name, Fraction(0)) + q
            self._consumed = total
        return self._consumed


_MAX_CHANGE_LOG = 8192  # bumps DevicesInUse remembers (trimmed by half beyond)


def qualify(name: str, driver: str) -> str:
    """A QualifiedName with its domain spelled out (a bare name belongs to the driver)."""
    return name if "/" in name else f"{driver}/{name}"


def lookup_attribute(attributes: Mapping[str, Mapping[str, Any]], driver: str, name: str) -> Optional[Mapping[str, Any]]:
    """Upstream's lookupAttribute: a fully qualified name, or the bare name when the domain is
    the driver's own."""
    attr = attributes.get(name)
    if attr is not None:
        return attr
    sep = name.find("/")
    if sep < 0 or name[:sep] != driver:
        return None
    return attributes.get(name[sep + 1:])


_SCALAR_KINDS = ("string", "int", "bool", "version")


def attribute_match_key(attr: Mapping[str, Any]) -> Optional[tuple[str, Any]]:
    """(kind, value) for the scalar kinds matchAttribute compares; None for anything else."""
    for kind in _SCALAR_KINDS:
        value = attr.get(kind)
        if value is not None:
            return (kind, value)
    return None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Upstream's ToleratesTaint for DeviceToleration/DeviceTaint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def taints_prevent_allocation(taints: list[Any], tolerations: list[Any]) -> bool:
    """A NoSchedule/NoExecute taint that no toleration tolerates; other effects never block."""
    for taint in taints:
        if taint.get("effect") in _BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return True
    return False


class CapacityPolicy(NamedTuple):
    default: Optional[Fraction]
    valid_values: tuple[Fraction, ...]
    minimum: Optional[Fraction]
    maximum: Optional[Fraction]
    step: Optional[Fraction]


def _policy(raw: Optional[Mapping[str, Any]]) -> Optional[CapacityPolicy]:
    if not raw:
        return None

    def q(v: Any) -> Optional[Fraction]:
        return parse_quantity(v) if v is not None else None
    rng = raw.get("validRange") or {}
    return CapacityPolicy(q(raw.get("default")), tuple(sorted(parse_quantity(v) for v in raw.get("validValues") or [])),
                          q(rng.get("min")), q(rng.get("max")), q(rng.get("step")))


class Device:
    """One device of a ResourceSlice, parsed once."""

    __slots__ = ("id", "name", "driver", "pool_name", "spec", "slice", "attributes", "taints", "consumes_counters",
                 "node_name", "node_selector", "all_nodes", "binding_conditions", "binding_failure_conditions",
                 "allow_multiple_allocations", "capacity", "capacity_formats", "capacity_policies", "match_cache",
                 "_cel")

    def __init__(self, spec: Mapping[str, Any], slice_: Any, driver: str, pool_name: str):
        self.name: str = spec.get("name", "")
        self.id = DeviceID(driver, pool_name, self.name)
        self.driver = driver
        self.pool_name = pool_name
        self.spec = spec
        self.slice = slice_  # pools.Slice
        self.attributes: Mapping[str, Any] = spec.get("attributes") or {}
        self.taints: list[Any] = list(spec.get("taints") or [])
        self.consumes_counters: list[tuple[str, dict[str, Fraction]]] = [
            (c.get("counterSet", ""), {n: parse_quantity((v or {}).get("value", "0"))
                                       for n, v in (c.get("counters") or {}).items()})
            for c in spec.get("consumesCounters") or []]
        self.node_name: Optional[str] = spec.get("nodeName") or None
        self.node_selector: Optional[Mapping[str, Any]] = spec.get("nodeSelector")
        self.all_nodes = bool(spec.get("allNodes"))
        self.binding_conditions: list[Any] = list(spec.get("bindingConditions") or [])
        self.binding_failure_conditions: list[Any] = list(spec.get("bindingFailureConditions") or [])
        self.allow_multiple_allocations = bool(spec.get("allowMultipleAllocations"))
        self.capacity: dict[str, Fraction] = {}
        self.capacity_formats: dict[str, str] = {}
        self.capacity_policies: dict[str, Optional[CapacityPolicy]] = {}
        for name, cap in (spec.get("capacity") or {}).items():
            full = qualify(name, driver)
            try:
                self.capacity[full], self.capacity_formats[full] = parse_quantity_format((cap or {}).get("value", "0"))
            except ValueError:
                self.capacity[full], self.capacity_formats[full] = Fraction(0), "DecimalSI"
            self.capacity_policies[full] = _policy((cap or {}).get("requestPolicy"))
        self.match_cache: dict[Any, Any] = {}
        self._cel: dict[CELFeatures, CELDevice] = {}

    def cel(self, features: CELFeatures) -> CELDevice:
        view = self._cel.get(features)
        if view is None:
            view = self._cel[features] = CELDevice(self.driver, self.spec, features, self.capacity)
        return view

    def attribute(self, name: str) -> Optional[Mapping[str, Any]]:
        return lookup_attribute(self.attributes, self.driver, name)

    def capacity_demand(self, requests: Mapping[str, Fraction]) -> Optional[dict[str, Fraction]]:
        """What one allocation of this shared device takes from each capacity (None: cannot fit).

        Simplified from KEP-5075: a requested amount is raised to the policy's smallest valid
        value (validValues) or to `min` and the next `step` (validRange); a capacity the request
        does not name takes the policy's `default`, or all of it without a policy.
        """
        demand: dict[str, Fraction] = {}
        for name, total in self.capacity.items():
            policy = self.capacity_policies.get(name)
            wanted = requests.get(name)
            if wanted is None:
                wanted = policy.default if policy is not None and policy.default is not None else total
            elif policy is not None:
                if policy.valid_values:
                    fitting = [v for v in policy.valid_values if v >= wanted]
                    if not fitting:
                        return None
                    wanted = fitting[0]
                elif policy.minimum is not None:
                    if wanted < policy.minimum:
                        wanted = policy.minimum
                    if policy.step:
                        steps = -((policy.minimum - wanted) // policy.step)
                        wanted = policy.minimum + steps * policy.step
                    if policy.maximum is not None and wanted > policy.maximum:
                        return None
            if wanted > total:
                return None
            demand[name] = wanted
        for name in requests:
            if name not in self.capacity:
                return None
        return demand

    def __repr__(self) -> str:
        return f"Device({self.id})"
