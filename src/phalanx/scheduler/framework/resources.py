"""Resources: `Resource` (plain ints: milli-CPU, bytes, counts, scalar resources) and a pod's
effective requests as component-helpers computes them (init containers, sidecars, overhead,
pod-level resources, resized status), plus the pod's priority.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any, Callable, Mapping, Optional

from phalanx.machinery.quantity import parse_quantity

from .constants import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, RESOURCE_PODS


# -- resources -------------------------------------------------------------------------------

def is_scalar_resource_name(name: str) -> bool:
    """Extended (domain-prefixed), prefixed-native, hugepages-* and attachable-volumes-* names."""
    return ("/" in name and not name.startswith("requests.")) or name.startswith("hugepages-") \
        or name.startswith("attachable-volumes-")


def is_extended_resource_name(name: str) -> bool:
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


class Resource:
    """A vector of compute resources as plain ints: milli-CPU, bytes, counts."""

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number", "scalar_resources")

    def __init__(self, milli_cpu: int = 0, memory: int = 0, ephemeral_storage: int = 0, allowed_pod_number: int = 0,
                 scalar_resources: Optional[dict[str, int]] = None):
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar_resources: dict[str, int] = scalar_resources if scalar_resources is not None else {}

    @classmethod
    def from_resource_list(cls, rl: Optional[Mapping[str, Any]]) -> "Resource":
        """From a ResourceList (`{"cpu": "4", "memory": "32Gi"}`) or exact sums of one."""
        r = cls()
        r.add(rl)
        return r

    def add(self, rl: Optional[Mapping[str, Any]]) -> None:
        if not rl:
            return
        for name, q in rl.items():
            v = q if isinstance(q, Fraction) else parse_quantity(q)
            if name == RESOURCE_CPU:
                self.milli_cpu += _ceil(v * 1000)
            elif name == RESOURCE_MEMORY:
                self.memory += _ceil(v)
            elif name == RESOURCE_PODS:
                self.allowed_pod_number += _ceil(v)
            elif name == RESOURCE_EPHEMERAL_STORAGE:
                self.ephemeral_storage += _ceil(v)
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = self.scalar_resources.get(name, 0) + _ceil(v)

    def get(self, name: str) -> int:
        """The amount of one named resource (0 when absent)."""
        if name == RESOURCE_CPU:
            return self.milli_cpu
        if name == RESOURCE_MEMORY:
            return self.memory
        if name == RESOURCE_EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == RESOURCE_PODS:
            return self.allowed_pod_number
        return self.scalar_resources.get(name, 0)

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalar_resources)

    def clone(self) -> "Resource":
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number,
                        dict(self.scalar_resources))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Resource) and self.milli_cpu == other.milli_cpu and self.memory == other.memory
                and self.ephemeral_storage == other.ephemeral_storage
                and self.allowed_pod_number == other.allowed_pod_number
                and {k: v for k, v in self.scalar_resources.items() if v}
                == {k: v for k, v in other.scalar_resources.items() if v})

    def __repr__(self) -> str:
        extra = f", scalar={self.scalar_resources!r}" if self.scalar_resources else ""
        return (f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, ephemeral_storage={self.ephemeral_storage}, "
                f"pods={self.allowed_pod_number}{extra})")


def _ceil(v: Fraction | int) -> int:
    """Round away from zero (Quantity.Value / MilliValue)."""
    if isinstance(v, int):
        return v
    if v.denominator == 1:
        return v.numerator
    n = -((-abs(v.numerator)) // v.denominator)
    return n if v > 0 else -n


# -- effective pod requests (component-helpers/resource PodRequests) ---------------------------

_SUPPORTED_POD_LEVEL = (RESOURCE_CPU, RESOURCE_MEMORY)
NON_MISSING_DEFAULTS: dict[str, Fraction] = {
    RESOURCE_CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    RESOURCE_MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


def _is_supported_pod_level(name: str) -> bool:
    return name in _SUPPORTED_POD_LEVEL or name.startswith("hugepages-")


def _parse_list(rl: Optional[Mapping[str, Any]]) -> dict[str, Fraction]:
    if not rl:
        return {}
    return {k: parse_quantity(v) for k, v in rl.items()}


def _add_into(dst: dict[str, Fraction], src: Mapping[str, Fraction]) -> None:
    for k, v in src.items():
        dst[k] = dst.get(k, 0) + v


def _max_into(dst: dict[str, Fraction], src: Mapping[str, Fraction]) -> None:
    for k, v in src.items():
        cur = dst.get(k)
        if cur is None or v > cur:
            dst[k] = v


def _max_lists(*lists: Optional[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for rl in lists:
        if rl:
            _max_into(out, rl)
    return out


def _apply_non_missing(reqs: Mapping[str, Fraction], non_missing: Mapping[str, Fraction]) -> dict[str, Fraction]:
    out = dict(reqs)
    for k, v in non_missing.items():
        if k not in reqs:
            out[k] = v
    return out


def _aggregate_containers(spec: Mapping[str, Any], get: Callable[[Mapping[str, Any]], Optional[dict[str, Fraction]]],
                          non_missing: Optional[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    """Sum of regular containers and sidecars, maxed with each init container's peak (KEP-753)."""
    result: dict[str, Fraction] = {}
    for c in spec.get("containers") or ():
        r = get(c) or {}
        if non_missing:
            r = _apply_non_missing(r, non_missing)
        _add_into(result, r)
    restartable: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or ():
        r = get(c) or {}
        if non_missing:
            r = _apply_non_missing(r, non_missing)
        if c.get("restartPolicy") == "Always":
            _add_into(result, r)
            _add_into(restartable, r)
            r = restartable
        else:
            combined = dict(r)
            _add_into(combined, restartable)
            r = combined
        _max_into(init_peak, r)
    _max_into(result, init_peak)
    return result


def _same_resource_status(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether the parts of two pods' status that requests depend on (resized containers,
    PodResizePending) are equal."""
    sa, sb = a.get("status") or {}, b.get("status") or {}
    for f in ("containerStatuses", "initContainerStatuses"):
        if sa.get(f) != sb.get(f):
            return False
    return _resize_infeasible(a) == _resize_infeasible(b)


def _resize_infeasible(pod: Mapping[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodResizePending":
            return bool(c.get("reason") == "Infeasible")
    return False


def pod_requests(pod: Mapping[str, Any], *, non_missing: Optional[Mapping[str, Fraction]] = None,
                 skip_pod_level_resources: bool = False, exclude_overhead: bool = False,
                 use_status_resources: bool = True) -> dict[str, Fraction]:
    """The effective requests of a pod, exactly as upstream's resource helper computes them:
    sum(containers + sidecars) maxed with each init container's peak (sidecars started before it
    included), replaced by pod-level requests for cpu/memory/hugepages when set, plus overhead.
    With `use_status_resources` (InPlacePodVerticalScaling, GA) a resized container counts with the
    max of its spec, allocated and actuated requests."""
    spec = pod.get("spec") or {}
    statuses = _resized_statuses(pod) if use_status_resources else {}
    if not statuses:
        reqs = _aggregate_containers(spec, _spec_requests, non_missing)
    else:
        reqs = _requests_with_status(pod, spec, statuses, non_missing)
    if not skip_pod_level_resources:
        pod_level = (spec.get("resources") or {}).get("requests") or {}
        if any(_is_supported_pod_level(k) for k in pod_level):
            for k, v in pod_level.items():
                if _is_supported_pod_level(k):
                    reqs[k] = parse_quantity(v)
    if not exclude_overhead:
        overhead = spec.get("overhead")
        if overhead:
            _add_into(reqs, _parse_list(overhead))
    return reqs


def _spec_requests(c: Mapping[str, Any]) -> dict[str, Fraction]:
    return _parse_list((c.get("resources") or {}).get("requests"))


def _resized_statuses(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Container statuses (by container name) that carry allocated or actuated requests."""
    statuses: dict[str, Mapping[str, Any]] = {}
    st = pod.get("status") or {}
    for cs in itertools.chain(st.get("containerStatuses") or (), st.get("initContainerStatuses") or ()):
        if cs.get("allocatedResources") or (cs.get("resources") or {}).get("requests"):
            statuses[cs.get("name")] = cs
    return statuses


def _requests_with_status(pod: Mapping[str, Any], spec: Mapping[str, Any], statuses: dict[str, Mapping[str, Any]],
                          non_missing: Optional[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    """The max of the spec's, the allocated and the actuated requests (a resize the node cannot
    do leaves the spec out)."""
    infeasible = _resize_infeasible(pod)

    def allocated(c: Mapping[str, Any]) -> Optional[dict[str, Fraction]]:
        cs = statuses.get(c.get("name") or "")
        if cs is not None and cs.get("allocatedResources"):
            return _parse_list(cs["allocatedResources"])
        return None if infeasible else _spec_requests(c)

    def actuated(c: Mapping[str, Any]) -> Optional[dict[str, Fraction]]:
        cs = statuses.get(c.get("name") or "")
        if cs is not None:
            req = (cs.get("resources") or {}).get("requests")
            if req:
                return _parse_list(req)
            if cs.get("allocatedResources"):
                return _parse_list(cs["allocatedResources"])
        return None if infeasible else _spec_requests(c)

    alloc = _aggregate_containers(spec, allocated, non_missing)
    act = _aggregate_containers(spec, actuated, non_missing)
    if infeasible:
        return _max_lists(act, alloc)
    return _max_lists(_aggregate_containers(spec, _spec_requests, non_missing), act, alloc)


def _pod_level_requests_set(pod: Mapping[str, Any]) -> bool:
    pod_level = (((pod.get("spec") or {}).get("resources")) or {}).get("requests") or {}
    return any(_is_supported_pod_level(k) for k in pod_level)


