"""Claims prepared for the allocator's search (upstream's per-claim checks): each request or
sub-request with its DeviceClass, compiled selectors, count and tolerations (`Request`), grouped per
claim request (`RequestSlot`) into a `ClaimPlan`; the selectors evaluated per device; the features
the allocator honours and the errors a claim can raise before any device is tried."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

import orjson

from ..machinery.featuregates import Gates, gate_on
from ..machinery.interning import json_to_keep
from ..machinery.quantity import parse_quantity
from .cel.compiler import CompiledSelector
from .cel.environment import CELCompileError, CELError, CELFeatures, enhance_runtime_error
from .constraints import DistinctAttribute, MatchAttribute
from .devices import Device
from .pools import NodeView

if TYPE_CHECKING:
    from .allocator import AllocatorCache

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize


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
    def from_gates(cls, gates: Gates) -> "AllocatorFeatures":
        def on(name: str, default: bool) -> bool:
            return gate_on(gates, name, default)
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


def claim_ref(claim: Mapping[str, Any]) -> str:
    """klog.KObj: `namespace/name` (just the name when cluster-scoped)."""
    meta = claim.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else meta.get("name", "")



class MatchFailure:
    """A cached selector failure for one device: raised when the device is actually considered."""

    __slots__ = ("from_class", "index", "error")

    def __init__(self, from_class: bool, index: int, error: CELError):
        self.from_class, self.index, self.error = from_class, index, error


class Request:
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
        self.tolerations: list[Any] = list(spec.get("tolerations") or [])
        self.capacity_requests: dict[str, Fraction] = {
            k: parse_quantity(v) for k, v in ((spec.get("capacity") or {}).get("requests") or {}).items()}
        self.all_devices: list[Device] = []
        self.num_devices = 0

    @property
    def own_name(self) -> str:
        """The request's or sub-request's own name (upstream's request.name())."""
        return self.sub or self.base


class RequestSlot:
    """A claim's request: one alternative for `exactly`, several for `firstAvailable`."""

    __slots__ = ("name", "alternatives", "has_subrequests", "selected")

    def __init__(self, name: str, alternatives: list[Request], has_subrequests: bool):
        self.name = name
        self.alternatives = alternatives
        self.has_subrequests = has_subrequests
        self.selected = 0


MAX_CLAIM_PLANS = 4096


class ClaimPlan:
    """A claim's requests prepared for search (compiled selectors, classes, counts)."""

    __slots__ = ("claim", "features", "classes", "slots", "constraints", "cacheable", "shape")

    def __init__(self, claim: Mapping[str, Any], features: AllocatorFeatures, classes: tuple[Any, ...],
                 slots: list[RequestSlot], constraints: list[tuple[Any, ...]], cacheable: bool, shape: Any):
        self.claim, self.features, self.classes = claim, features, classes
        self.slots, self.constraints, self.cacheable = slots, constraints, cacheable
        self.shape = shape  # what decides the search (requests, constraints, selectors), names aside


def claim_plan(cache: "AllocatorCache", claim: Mapping[str, Any], features: AllocatorFeatures,
               lookup: Callable[[str], Optional[Mapping[str, Any]]], view: NodeView) -> ClaimPlan:
    """Upstream's per-claim checks, cached per claim object (node-independent unless a request asks
    for `All`) and revalidated by the identity of the classes it used. Raises AllocationError."""
    plans = cache.claim_plans
    plan = plans.get(id(claim))
    if (plan is None or plan.claim is not claim or plan.features != features
            or any(lookup(name) is not cls for name, cls in plan.classes)):
        plan = ClaimPlanner(features, lookup, cache, view).plan(claim)
        if plan.cacheable:
            if len(plans) >= MAX_CLAIM_PLANS:
                plans.clear()
            plans[id(claim)] = plan
    return plan


class ClaimPlanner:
    """Plans claims for one node view (the view matters only to requests for `All` devices)."""

    def __init__(self, features: AllocatorFeatures, lookup_class: Callable[[str], Optional[Mapping[str, Any]]],
                 cache: "AllocatorCache", view: NodeView):
        self.features = features
        self.cel_features = features.cel
        self.lookup_class = lookup_class
        self.cache = cache
        self.view = view

    def plan(self, claim: Mapping[str, Any]) -> ClaimPlan:
        ref = claim_ref(claim)
        devices = (claim.get("spec") or {}).get("devices") or {}
        slots = self._slots(ref, devices)
        constraints = self._constraints(ref, devices)
        requests = [r for slot in slots for r in slot.alternatives]
        classes = tuple({r.class_name: r.device_class for r in requests}.items())
        shape = (json_to_keep([devices.get("requests"), devices.get("constraints")], option=orjson.OPT_SORT_KEYS),
                 tuple(r.key for r in requests))
        return ClaimPlan(claim, self.features, classes, slots, constraints,
                         cacheable=not any(r.all_mode for r in requests), shape=shape)

    def _slots(self, ref: str, devices: Mapping[str, Any]) -> list[RequestSlot]:
        slots: list[RequestSlot] = []
        min_devices = 0
        for request in devices.get("requests") or []:
            name = request.get("name", "")
            subrequests = request.get("firstAvailable") or []
            if subrequests:
                if not self.features.prioritized_list:
                    raise AllocationError(f"claim {ref}, request {name}: has subrequests, but the "
                                          f"DRAPrioritizedList feature is disabled")
                alternatives = [self._prepare_request(ref, Request(ref, name, sub.get("name", ""), sub))
                                for sub in subrequests]
                min_devices += min(r.num_devices for r in alternatives)
                slots.append(RequestSlot(name, alternatives, True))
            else:
                req = self._prepare_request(ref, Request(ref, name, "", request.get("exactly") or {}))
                min_devices += req.num_devices
                slots.append(RequestSlot(name, [req], False))
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(f"claim {ref}: number of requested devices {min_devices} exceeds the claim "
                                  f"limit of {ALLOCATION_RESULTS_MAX_SIZE}")
        return slots

    def _constraints(self, ref: str, devices: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        constraints: list[tuple[Any, ...]] = []
        for i, c in enumerate(devices.get("constraints") or []):
            if c.get("matchAttribute"):
                constraints.append((MatchAttribute, tuple(c.get("requests") or ()), c["matchAttribute"]))
            elif c.get("distinctAttribute") and self.features.consumable_capacity:
                constraints.append((DistinctAttribute, tuple(c.get("requests") or ()), c["distinctAttribute"]))
            else:
                raise AllocationError(f"claim {ref}, constraint #{i}: empty constraint (unsupported constraint type?)")
        return constraints

    def _prepare_request(self, ref: str, req: Request) -> Request:
        self._check_request(ref, req)
        device_class = self.lookup_class(req.class_name)
        if device_class is None:
            raise AllocationError(f"claim {ref}, request {req.own_name}: could not retrieve device class "
                                  f"{req.class_name}: deviceclass.resource.k8s.io \"{req.class_name}\" not found")
        req.device_class = device_class
        class_exprs = tuple((s.get("cel") or {}).get("expression", "")
                            for s in ((device_class.get("spec") or {}).get("selectors") or []))
        request_exprs = tuple(s["cel"].get("expression", "") for s in req.spec.get("selectors") or [])
        get = self.cache.selectors.get
        req.selectors = ([(True, i, get(e, self.cel_features)) for i, e in enumerate(class_exprs)]
                         + [(False, i, get(e, self.cel_features)) for i, e in enumerate(request_exprs)])
        req.key = (req.class_name, class_exprs, request_exprs, self.cel_features, self.features.binding_conditions)
        self._count_devices(ref, req)
        return req

    def _check_request(self, ref: str, req: Request) -> None:
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

    def _count_devices(self, ref: str, req: Request) -> None:
        mode = req.spec.get("allocationMode") or "ExactCount"
        if mode == "ExactCount":
            req.num_devices = req.count
            return
        if mode != "All":
            raise AllocationError(f"claim {ref}, request {req.own_name}: unsupported count mode {mode}")
        for pool in self.view.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {ref}, request {req.own_name}: asks for all devices, but resource "
                                      f"pool {pool.key} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {ref}, request {req.own_name}: asks for all devices, but resource "
                                      f"pool {pool.key} is currently invalid")
        req.all_devices = [d for d in self.view.devices
                           if selectable(req, d, self.features, self.cel_features, raise_errors=True)]
        req.num_devices = len(req.all_devices)


# -- selectors ------------------------------------------------------------------------------------------

def evaluate_selectors(req: Request, device: Device, features: AllocatorFeatures,
                       cel_features: CELFeatures) -> Any:
    """True or False for the device against the class's and the request's selectors, or the
    MatchFailure of the first selector that failed."""
    if device.binding_conditions and not features.binding_conditions:
        return False
    cel_device = None
    for from_class, index, selector in req.selectors:
        if selector.error is not None:
            return MatchFailure(from_class, index, selector.error)
        if cel_device is None:
            cel_device = device.cel(cel_features)
        try:
            if not selector.matches(cel_device):
                return False
        except CELError as e:
            return MatchFailure(from_class, index, e)
    return True


def selectable(req: Request, device: Device, features: AllocatorFeatures, cel_features: CELFeatures,
               raise_errors: bool) -> bool:
    """Whether the device matches (cached on the device); a failure raises or counts as no."""
    result = device.match_cache.get(req.key)
    if result is None:
        result = device.match_cache[req.key] = evaluate_selectors(req, device, features, cel_features)
    if result is True or result is False:
        return result
    if raise_errors:
        raise selector_error(req, device, result)
    return False


def selector_error(req: Request, device: Device, failure: MatchFailure) -> SelectorError:
    where = f"class {req.class_name}" if failure.from_class else f"claim {req.claim_ref}"
    error = failure.error
    if isinstance(error, CELCompileError):
        return SelectorError(f"{where}: selector #{failure.index}: CEL compile error: {error.message}", error)
    return SelectorError(f"{where}: selector #{failure.index} on device {device.id}: CEL runtime error: "
                         f"{enhance_runtime_error(error.message)}", error)
