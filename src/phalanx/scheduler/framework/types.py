"""The scheduler's view of pods and nodes: `PodInfo`, `NodeInfo`, `Resource`, and cluster events.

Everything here is computed once and then read per node in the hot path:

    pi = PodInfo(pod)                 # requests (init containers, sidecars, overhead, pod-level
                                      # resources, resized status), tolerations, host ports,
                                      # parsed (anti-)affinity terms; computed once per pod
    ni = NodeInfo(node)               # allocatable, taints, labels as plain ints / tuples
    ni.add_pod_info(pi)               # requested / non-zero requested / ports / affinity pods
    ni.requested.milli_cpu            # plain ints everywhere (milli-CPU, bytes, counts)

A `NodeInfo` carries a `generation` that changes whenever it changes, so an incremental
snapshot can copy only what moved (`NodeInfo.snapshot()` clones).

Pods and nodes are the API's JSON objects (dicts). `PodInfo.cache` is a per-pod memo that plugins
use for parsed data (a pod's spread constraints, its node-affinity matcher) so a pod retried many
times is parsed once.

Cluster events (`ClusterEvent`, `ActionType`, `EventResource`, `QueueingHint`) are what plugins
register in `EventsToRegister` so the queue knows which changes may make a rejected pod
schedulable; names and bit order follow upstream.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional

import orjson

from phalanx.machinery.quantity import parse_quantity
from phalanx.machinery.selectors import (
    LabelSelector,
    NodeSelectorTerm,
    compile_node_selector_term,
    label_selector_from_object,
)

Obj = dict[str, Any]

# -- well-known names and limits (upstream constants) ------------------------------------------

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = (1 << 63) - 1

# pkg/scheduler/util: the requests assumed for a container that sets none, when spreading load.
DEFAULT_MILLI_CPU_REQUEST = 100  # 0.1 core
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # 200 MiB

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"
RESOURCE_PODS = "pods"

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide, strictly increasing generation number (upstream nextGeneration)."""
    return next(_generation)


# -- cluster events ------------------------------------------------------------------------------

class ActionType(IntFlag):
    """What changed about an object; sub-types of Update narrow the queueing hints that run."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4  # taints or spec.unschedulable
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdatePodLabel = 1 << 7
    UpdatePodScaleDown = 1 << 8  # any resource request reduced
    UpdatePodToleration = 1 << 9  # tolerations added (they cannot be changed or removed)
    UpdatePodSchedulingGatesEliminated = 1 << 10
    UpdatePodGeneratedResourceClaim = 1 << 11
    UpdateNodeDeclaredFeature = 1 << 12

    All = (1 << 13) - 1
    Update = (UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeAnnotation
              | UpdatePodLabel | UpdatePodScaleDown | UpdatePodToleration | UpdatePodSchedulingGatesEliminated
              | UpdatePodGeneratedResourceClaim | UpdateNodeDeclaredFeature)
    None_ = 0

    def label(self) -> str:
        if self == ActionType.All:
            return "All"
        if self == ActionType.Update:
            return "Update"
        return self.name or str(int(self))


class EventResource:
    """The resource a cluster event is about (group/kind, as upstream spells it)."""

    Pod = "Pod"
    # The scheduling queue splits Pod events by whom they concern; registering `Pod` matches all.
    AssignedPod = "AssignedPod"
    UnscheduledPod = "UnscheduledPod"
    Node = "Node"
    PersistentVolume = "PersistentVolume"
    PersistentVolumeClaim = "PersistentVolumeClaim"
    CSINode = "storage.k8s.io/CSINode"
    CSIDriver = "storage.k8s.io/CSIDriver"
    VolumeAttachment = "storage.k8s.io/VolumeAttachment"
    CSIStorageCapacity = "storage.k8s.io/CSIStorageCapacity"
    StorageClass = "storage.k8s.io/StorageClass"
    ResourceClaim = "resource.k8s.io/ResourceClaim"
    ResourceSlice = "resource.k8s.io/ResourceSlice"
    DeviceClass = "resource.k8s.io/DeviceClass"
    PodGroup = "scheduling.k8s.io/PodGroup"
    Workload = "scheduling.k8s.io/Workload"
    WildCard = "*"


class QueueingHint(IntEnum):
    QueueSkip = 0  # the event cannot make the pod schedulable
    Queue = 1  # the event may make the pod schedulable

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    action_type: ActionType
    custom_label: str = ""

    def label(self) -> str:
        """Used in logs and metrics: e.g. "NodeAdd", "PodUpdatePodLabel"."""
        return self.custom_label or f"{self.resource}{self.action_type.label()}"

    def is_wildcard(self) -> bool:
        return self.resource == EventResource.WildCard and self.action_type == ActionType.All


# hint(pod, old_obj, new_obj) -> QueueingHint; old is None for Add, new is None for Delete.
QueueingHintFn = Callable[[Obj, Optional[Obj], Optional[Obj]], QueueingHint]


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    queueing_hint_fn: Optional[QueueingHintFn] = None  # None means always Queue


_POD_RESOURCES = frozenset((EventResource.AssignedPod, EventResource.UnscheduledPod))


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """True when `incoming` is the same as, or more specific than, `registered` (upstream
    MatchClusterEvents): Update matches UpdateNodeLabel, not the reverse; `Pod` matches the
    AssignedPod/UnscheduledPod split; a wildcard registration matches everything."""
    if registered.is_wildcard():
        return True
    r, i = registered.resource, incoming.resource
    resource_ok = r == EventResource.WildCard or r == i or (r == EventResource.Pod and i in _POD_RESOURCES)
    return resource_ok and bool(registered.action_type & incoming.action_type) and int(incoming.action_type) <= int(registered.action_type)


def match_any_cluster_event(incoming: ClusterEvent, registered: Iterable[ClusterEvent]) -> bool:
    return any(match_cluster_events(e, incoming) for e in registered)


def node_scheduling_properties_change(new: Obj, old: Obj) -> list[ClusterEvent]:
    """The Node update sub-events a change carries (upstream NodeSchedulingPropertiesChange)."""
    events = []
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    nst, ost = new.get("status") or {}, old.get("status") or {}
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    if bool(ns.get("unschedulable")) != bool(os_.get("unschedulable")) or (ns.get("taints") or []) != (os_.get("taints") or []):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeTaint))
    if (nst.get("allocatable") or {}) != (ost.get("allocatable") or {}):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeAllocatable))
    if (nm.get("labels") or {}) != (om.get("labels") or {}):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeLabel))
    def conds(s: Mapping) -> dict:
        return {c.get("type"): c.get("status") for c in s.get("conditions") or []}
    if conds(nst) != conds(ost):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeCondition))
    if (nm.get("annotations") or {}) != (om.get("annotations") or {}):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeAnnotation))
    if (nst.get("declaredFeatures") or []) != (ost.get("declaredFeatures") or []):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeDeclaredFeature))
    return events


def pod_scheduling_properties_change(new: Obj, old: Obj) -> list[ClusterEvent]:
    """The Pod update sub-events a change carries (upstream PodSchedulingPropertiesChange);
    a change none of them explains is reported as a plain Update."""
    events = []
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if (nm.get("labels") or {}) != (om.get("labels") or {}):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodLabel))
    if os_.get("schedulingGates") and not ns.get("schedulingGates"):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodSchedulingGatesEliminated))
    if len(ns.get("tolerations") or []) > len(os_.get("tolerations") or []):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodToleration))
    try:
        old_req, new_req = PodInfo(old).requests, PodInfo(new).requests
        if (new_req.milli_cpu < old_req.milli_cpu or new_req.memory < old_req.memory
                or new_req.ephemeral_storage < old_req.ephemeral_storage
                or any(new_req.scalar_resources.get(k, 0) < v for k, v in old_req.scalar_resources.items())):
            events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodScaleDown))
    except ValueError:
        pass
    if ((new.get("status") or {}).get("resourceClaimStatuses") or []) != ((old.get("status") or {}).get("resourceClaimStatuses") or []):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodGeneratedResourceClaim))
    if not events:
        events.append(ClusterEvent(EventResource.Pod, ActionType.Update))
    return events


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

    def set_max_resource(self, rl: Optional[Mapping[str, Any]]) -> None:
        if not rl:
            return
        for name, q in rl.items():
            v = q if isinstance(q, Fraction) else parse_quantity(q)
            if name == RESOURCE_MEMORY:
                self.memory = max(self.memory, _ceil(v))
            elif name == RESOURCE_CPU:
                self.milli_cpu = max(self.milli_cpu, _ceil(v * 1000))
            elif name == RESOURCE_EPHEMERAL_STORAGE:
                self.ephemeral_storage = max(self.ephemeral_storage, _ceil(v))
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = max(self.scalar_resources.get(name, 0), _ceil(v))

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


def _aggregate_containers(spec: Mapping, get: Callable[[Mapping], Optional[dict[str, Fraction]]],
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


def _same_resource_status(a: Mapping, b: Mapping) -> bool:
    """Whether the parts of two pods' status that requests depend on (resized containers,
    PodResizePending) are equal."""
    sa, sb = a.get("status") or {}, b.get("status") or {}
    for f in ("containerStatuses", "initContainerStatuses"):
        if sa.get(f) != sb.get(f):
            return False
    return _resize_infeasible(a) == _resize_infeasible(b)


def _resize_infeasible(pod: Mapping) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodResizePending":
            return c.get("reason") == "Infeasible"
    return False


def pod_requests(pod: Mapping, *, non_missing: Optional[Mapping[str, Fraction]] = None,
                 skip_pod_level_resources: bool = False, exclude_overhead: bool = False,
                 use_status_resources: bool = True) -> dict[str, Fraction]:
    """The effective requests of a pod, exactly as upstream's resource helper computes them:
    sum(containers + sidecars) maxed with each init container's peak (sidecars started before it
    included), replaced by pod-level requests for cpu/memory/hugepages when set, plus overhead.
    With `use_status_resources` (InPlacePodVerticalScaling, GA) a resized container counts with the
    max of its spec, allocated and actuated requests."""
    spec = pod.get("spec") or {}
    statuses: dict[str, Mapping] = {}
    if use_status_resources:
        st = pod.get("status") or {}
        for cs in itertools.chain(st.get("containerStatuses") or (), st.get("initContainerStatuses") or ()):
            if cs.get("allocatedResources") or (cs.get("resources") or {}).get("requests"):
                statuses[cs.get("name")] = cs

    def spec_requests(c: Mapping) -> dict[str, Fraction]:
        return _parse_list((c.get("resources") or {}).get("requests"))

    if not statuses:
        reqs = _aggregate_containers(spec, spec_requests, non_missing)
    else:
        infeasible = _resize_infeasible(pod)

        def allocated(c: Mapping) -> Optional[dict[str, Fraction]]:
            cs = statuses.get(c.get("name"))
            if cs is not None and cs.get("allocatedResources"):
                return _parse_list(cs["allocatedResources"])
            return None if infeasible else spec_requests(c)

        def actuated(c: Mapping) -> Optional[dict[str, Fraction]]:
            cs = statuses.get(c.get("name"))
            if cs is not None:
                req = (cs.get("resources") or {}).get("requests")
                if req:
                    return _parse_list(req)
                if cs.get("allocatedResources"):
                    return _parse_list(cs["allocatedResources"])
            return None if infeasible else spec_requests(c)

        alloc = _aggregate_containers(spec, allocated, non_missing)
        act = _aggregate_containers(spec, actuated, non_missing)
        if infeasible:
            reqs = _max_lists(act, alloc)
        else:
            reqs = _max_lists(_aggregate_containers(spec, spec_requests, non_missing), act, alloc)

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


def _pod_level_requests_set(pod: Mapping) -> bool:
    pod_level = (((pod.get("spec") or {}).get("resources")) or {}).get("requests") or {}
    return any(_is_supported_pod_level(k) for k in pod_level)


def pod_priority(pod: Mapping) -> int:
    """spec.priority, or 0 when unset (corev1helpers.PodPriority)."""
    p = (pod.get("spec") or {}).get("priority")
    return int(p) if p is not None else 0


# -- taints and tolerations ----------------------------------------------------------------------

class Taint(NamedTuple):
    key: str
    value: str
    effect: str

    def __str__(self) -> str:  # "{key: value}" is how rejections name it
        return f"{{{self.key}: {self.value}}}"


class Toleration(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """Upstream Toleration.ToleratesTaint (Equal/Exists; an empty key with Exists matches all)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op == "" or op == "Equal":
            return self.value == taint.value
        return op == "Exists"


def parse_taints(raw: Optional[Iterable[Mapping]]) -> tuple[Taint, ...]:
    return tuple(Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "") for t in raw or ())


def parse_tolerations(raw: Optional[Iterable[Mapping]]) -> tuple[Toleration, ...]:
    return tuple(Toleration(t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")
                 for t in raw or ())


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False


def find_matching_untolerated_taint(taints: Iterable[Taint], tolerations: tuple[Toleration, ...],
                                    include: Callable[[Taint], bool]) -> Optional[Taint]:
    """The first taint (in node order) passing `include` that no toleration tolerates."""
    for taint in taints:
        if not include(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def do_not_schedule_taint(taint: Taint) -> bool:
    """NoSchedule and NoExecute taints keep pods away (helper.DoNotScheduleTaintsFilterFunc)."""
    return taint.effect == TAINT_EFFECT_NO_SCHEDULE or taint.effect == TAINT_EFFECT_NO_EXECUTE


# -- host ports ------------------------------------------------------------------------------------

class HostPortInfo:
    """ip -> {(protocol, port)}, with upstream's conflict rule: 0.0.0.0 conflicts with any IP."""

    __slots__ = ("_by_ip",)

    def __init__(self) -> None:
        self._by_ip: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self._by_ip.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        s = self._by_ip.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self._by_ip[ip]

    def __len__(self) -> int:
        return sum(len(s) for s in self._by_ip.values())

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in s for s in self._by_ip.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            s = self._by_ip.get(key)
            if s is not None and pp in s:
                return True
        return False

    def clone(self) -> "HostPortInfo":
        c = HostPortInfo()
        c._by_ip = {ip: set(s) for ip, s in self._by_ip.items()}
        return c

    def as_dict(self) -> dict[str, set[tuple[str, int]]]:
        return {ip: set(s) for ip, s in self._by_ip.items()}


class HostPort(NamedTuple):
    host_ip: str
    protocol: str
    host_port: int


def get_host_ports(pod: Mapping) -> tuple[HostPort, ...]:
    spec = pod.get("spec") or {}
    out = []
    for c in itertools.chain(spec.get("initContainers") or (), spec.get("containers") or ()):
        for p in c.get("ports") or ():
            hp = p.get("hostPort") or 0
            if hp > 0:
                out.append(HostPort(p.get("hostIP") or "", p.get("protocol") or "TCP", int(hp)))
    return tuple(out)


# -- pod (anti-)affinity terms --------------------------------------------------------------------

class AffinityTerm:
    """A parsed PodAffinityTerm: namespaces, label selector, topology key, namespace selector."""

    __slots__ = ("namespaces", "selector", "topology_key", "namespace_selector")

    def __init__(self, namespaces: frozenset[str], selector: LabelSelector, topology_key: str,
                 namespace_selector: LabelSelector):
        self.namespaces = namespaces
        self.selector = selector
        self.topology_key = topology_key
        self.namespace_selector = namespace_selector

    @classmethod
    def from_object(cls, pod: Mapping, term: Mapping) -> "AffinityTerm":
        selector = label_selector_from_object(term.get("labelSelector"))
        namespaces = term.get("namespaces") or []
        ns_selector_obj = term.get("namespaceSelector")
        if not namespaces and ns_selector_obj is None:
            ns_set = frozenset((((pod.get("metadata") or {}).get("namespace")) or "",))
        else:
            ns_set = frozenset(namespaces)
        ns_selector = label_selector_from_object(ns_selector_obj)
        return cls(ns_set, selector, term.get("topologyKey") or "", ns_selector)

    def matches(self, pod_info: "PodInfo", ns_labels: Optional[Mapping[str, str]]) -> bool:
        """True when the pod is in one of the term's namespaces and its labels match."""
        if pod_info.namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(pod_info.labels)
        return False

    def with_namespaces(self, extra: Iterable[str]) -> "AffinityTerm":
        """The term with `extra` namespaces merged in and its namespace selector consumed."""
        return AffinityTerm(self.namespaces | frozenset(extra), self.selector, self.topology_key,
                            LabelSelector.nothing())

    def __repr__(self) -> str:
        return (f"AffinityTerm(namespaces={sorted(self.namespaces)!r}, selector={str(self.selector)!r}, "
                f"topology_key={self.topology_key!r})")


class WeightedAffinityTerm(NamedTuple):
    term: AffinityTerm
    weight: int


def _affinity_terms(pod: Mapping, terms: Optional[Iterable[Mapping]]) -> list[AffinityTerm]:
    return [AffinityTerm.from_object(pod, t) for t in terms or ()]


def _weighted_terms(pod: Mapping, terms: Optional[Iterable[Mapping]]) -> list[WeightedAffinityTerm]:
    return [WeightedAffinityTerm(AffinityTerm.from_object(pod, t.get("podAffinityTerm") or {}), int(t.get("weight") or 0))
            for t in terms or ()]


# -- node affinity (component-helpers nodeaffinity) ------------------------------------------

class RequiredNodeAffinity:
    """A pod's nodeSelector AND its required node affinity, matched against nodes."""

    __slots__ = ("node_selector", "terms")

    def __init__(self, pod: Mapping):
        spec = pod.get("spec") or {}
        ns = spec.get("nodeSelector")
        self.node_selector: Optional[tuple[tuple[str, str], ...]] = tuple(ns.items()) if ns else None
        required = (((spec.get("affinity") or {}).get("nodeAffinity")) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        self.terms: Optional[list[NodeSelectorTerm]] = None
        if required is not None:
            self.terms = [compile_node_selector_term(t) for t in required.get("nodeSelectorTerms") or ()]

    def match(self, node_info: "NodeInfo") -> bool:
        if self.node_selector is not None:
            labels = node_info.labels
            for k, v in self.node_selector:
                if labels.get(k) != v:
                    return False
        if self.terms is not None:
            node = node_info.node
            for t in self.terms:
                if t.matches(node):
                    return True
            return False
        return True

    def is_empty(self) -> bool:
        return self.node_selector is None and self.terms is None


class PreferredSchedulingTerms:
    """Weighted preferred node-affinity terms; score = sum of the weights of matching terms."""

    __slots__ = ("terms",)

    def __init__(self, terms: Optional[Iterable[Mapping]]):
        parsed = []
        errors = []
        for t in terms or ():
            weight = int(t.get("weight") or 0)
            pref = t.get("preference") or {}
            if weight == 0 or not (pref.get("matchExpressions") or pref.get("matchFields")):
                continue
            term = compile_node_selector_term(pref)
            if term.errors:
                errors.extend(term.errors)
            else:
                parsed.append((weight, term))
        if errors:
            raise ValueError("; ".join(errors) if len(errors) > 1 else errors[0])
        self.terms = parsed

    def score(self, node_info: "NodeInfo") -> int:
        node = node_info.node
        total = 0
        for weight, term in self.terms:
            if term.matches(node):
                total += weight
        return total


# -- PodInfo --------------------------------------------------------------------------------------

def _pod_has_affinity(affinity: Optional[Mapping]) -> bool:
    return bool(affinity) and (affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None)


class PodInfo:
    """A pod plus everything the scheduler derives from it, computed once.

    Requests follow upstream's resource helper; `non0_cpu` / `non0_mem` are the same with each
    container's missing cpu/memory request counted as 100m / 200Mi (used to spread load)."""

    __slots__ = ("pod", "name", "namespace", "uid", "key", "labels", "node_name", "priority", "requests",
                 "non0_cpu", "non0_mem", "host_ports", "tolerations", "has_affinity", "has_required_anti_affinity",
                 "required_affinity_terms", "required_anti_affinity_terms", "preferred_affinity_terms",
                 "preferred_anti_affinity_terms", "parse_error", "cache", "_requests_list", "deletion_timestamp")

    def __init__(self, pod: Obj):
        self.pod = pod
        md = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.name: str = md.get("name") or ""
        self.namespace: str = md.get("namespace") or ""
        self.uid: str = md.get("uid") or ""
        self.key: str = self.uid or f"{self.namespace}/{self.name}"
        self.labels: dict[str, str] = md.get("labels") or {}
        self.deletion_timestamp: Optional[str] = md.get("deletionTimestamp")
        self.node_name: str = spec.get("nodeName") or ""
        p = spec.get("priority")
        self.priority: int = int(p) if p is not None else 0
        reqs = pod_requests(pod)
        self._requests_list = reqs
        self.requests = Resource.from_resource_list(reqs)
        if _pod_level_requests_set(pod):
            non_missing = {k: v for k, v in NON_MISSING_DEFAULTS.items() if k not in reqs}
        else:
            non_missing = NON_MISSING_DEFAULTS
        if non_missing:
            non0 = pod_requests(pod, non_missing=non_missing)
            self.non0_cpu = _ceil(non0.get(RESOURCE_CPU, 0) * 1000)
            self.non0_mem = _ceil(non0.get(RESOURCE_MEMORY, 0))
        else:
            self.non0_cpu = self.requests.milli_cpu
            self.non0_mem = self.requests.memory
        self.host_ports = get_host_ports(pod)
        self.tolerations = parse_tolerations(spec.get("tolerations"))
        affinity = spec.get("affinity") or {}
        self.has_affinity = _pod_has_affinity(affinity)
        pa = affinity.get("podAffinity") or {}
        paa = affinity.get("podAntiAffinity") or {}
        self.has_required_anti_affinity = bool(paa.get("requiredDuringSchedulingIgnoredDuringExecution"))
        self.parse_error: Optional[str] = None
        self.required_affinity_terms: list[AffinityTerm] = []
        self.required_anti_affinity_terms: list[AffinityTerm] = []
        self.preferred_affinity_terms: list[WeightedAffinityTerm] = []
        self.preferred_anti_affinity_terms: list[WeightedAffinityTerm] = []
        if self.has_affinity:
            errs = []
            for attr, parse, raw, label in (
                    ("required_affinity_terms", _affinity_terms, pa.get("requiredDuringSchedulingIgnoredDuringExecution"), "requiredAffinityTerms"),
                    ("required_anti_affinity_terms", _affinity_terms, paa.get("requiredDuringSchedulingIgnoredDuringExecution"), "requiredAntiAffinityTerms"),
                    ("preferred_affinity_terms", _weighted_terms, pa.get("preferredDuringSchedulingIgnoredDuringExecution"), "preferredAffinityTerms"),
                    ("preferred_anti_affinity_terms", _weighted_terms, paa.get("preferredDuringSchedulingIgnoredDuringExecution"), "preferredAntiAffinityTerms")):
                try:
                    setattr(self, attr, parse(pod, raw))
                except ValueError as e:
                    errs.append(f"{label}: {e}")
            if errs:
                self.parse_error = "[" + ", ".join(errs) + "]" if len(errs) > 1 else errs[0]
        self.cache: dict[str, Any] = {}

    # -- convenience accessors -------------------------------------------------------------
    @property
    def spec(self) -> Obj:
        return self.pod.get("spec") or {}

    @property
    def start_time(self) -> Optional[str]:
        return (self.pod.get("status") or {}).get("startTime")

    @property
    def nominated_node_name(self) -> str:
        return (self.pod.get("status") or {}).get("nominatedNodeName") or ""

    @property
    def scheduling_gates(self) -> list[str]:
        return [g.get("name", "") for g in self.spec.get("schedulingGates") or ()]

    # -- signature fragments (opportunistic batching) ---------------------------------------------
    def requests_signature(self) -> tuple:
        """What the resource plugins read of the pod: its effective and non-zero requests."""
        sig = self.cache.get("sig:requests")
        if sig is None:
            sig = self.cache["sig:requests"] = (
                tuple(sorted((k, str(v)) for k, v in self._requests_list.items())), self.non0_cpu, self.non0_mem)
        return sig

    def spec_signature(self, *fields: str) -> bytes:
        """The named spec fields as canonical JSON: a fragment for plugins that read them."""
        key = "sig:" + ",".join(fields)
        sig = self.cache.get(key)
        if sig is None:
            spec = self.spec
            sig = self.cache[key] = orjson.dumps([spec.get(f) for f in fields], option=orjson.OPT_SORT_KEYS)
        return sig

    @property
    def requests_list(self) -> dict[str, Fraction]:
        """The exact effective requests by resource name (a ResourceList of Fractions)."""
        return self._requests_list

    def required_node_affinity(self) -> RequiredNodeAffinity:
        rna = self.cache.get("RequiredNodeAffinity")
        if rna is None:
            rna = self.cache["RequiredNodeAffinity"] = RequiredNodeAffinity(self.pod)
        return rna

    def with_pod(self, pod: Obj) -> "PodInfo":
        """A PodInfo for an updated version of the same pod: derived data is reused when the
        spec and labels are unchanged (a binding confirmed, a status update), else rebuilt."""
        md = pod.get("metadata") or {}
        if pod.get("spec") != self.pod.get("spec") or (md.get("labels") or {}) != self.labels \
                or not _same_resource_status(pod, self.pod):
            return PodInfo(pod)
        c = PodInfo.__new__(PodInfo)
        for attr in PodInfo.__slots__:
            setattr(c, attr, getattr(self, attr))
        c.pod = pod
        c.deletion_timestamp = md.get("deletionTimestamp")
        c.cache = {}  # lazily recomputed; a bound pod rarely needs it (memory: one per pod in the cache)
        return c

    def assumed_on(self, node_name: str) -> "PodInfo":
        """This pod with `spec.nodeName` set (what the cache assumes), without re-deriving it:
        everything the scheduler computed stays shared."""
        c = PodInfo.__new__(PodInfo)
        for attr in PodInfo.__slots__:
            setattr(c, attr, getattr(self, attr))
        pod = dict(self.pod)
        pod["spec"] = dict(pod.get("spec") or {})
        pod["spec"]["nodeName"] = node_name
        c.pod = pod
        c.node_name = node_name
        c.cache = dict(self.cache)
        return c

    def __repr__(self) -> str:
        return f"PodInfo({self.namespace}/{self.name})"


def pod_start_time_key(pi: PodInfo) -> str:
    """A sortable start time; a pod that has not started yet counts as starting now (latest)."""
    return pi.start_time or "9999-12-31T23:59:59Z"


def more_important_pod(a: PodInfo, b: PodInfo) -> bool:
    """Higher priority first; on equal priority the pod that started earlier (util.MoreImportantPod)."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return pod_start_time_key(a) < pod_start_time_key(b)


# -- NodeInfo -------------------------------------------------------------------------------------

class NodeInfo:
    """A node with the pods on it and their aggregate requests (plain ints).

    `cm` packs the numbers the hot path reads for every node into one tuple:
    (allocatable milli-CPU, allocatable memory, requested milli-CPU, requested memory, non-zero
    requested milli-CPU, non-zero requested memory, allowed pods, pods); `free` is
    (free milli-CPU, free memory, room for pods). `generation` changes on every change, so
    (generation) -> result memos are safe."""

    __slots__ = ("node", "name", "labels", "unschedulable", "taints", "hard_taints", "prefer_no_schedule_taints",
                 "pods", "pods_with_affinity", "pods_with_required_anti_affinity", "used_ports", "requested",
                 "non_zero_requested", "allocatable", "generation", "cm", "free")

    def __init__(self, node: Optional[Obj] = None, pods: Iterable[PodInfo | Obj] = ()):
        self.node: Optional[Obj] = None
        self.name = ""
        self.labels: dict[str, str] = {}
        self.unschedulable = False
        self.taints: tuple[Taint, ...] = ()
        self.hard_taints: tuple[Taint, ...] = ()
        self.prefer_no_schedule_taints: tuple[Taint, ...] = ()
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.generation = next_generation()
        self.cm: tuple[int, int, int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0, 0, 0)
        self.free: tuple[int, int, int] = (0, 0, 0)
        if node is not None:
            self.set_node(node)
        for p in pods:
            self.add_pod_info(p if isinstance(p, PodInfo) else PodInfo(p))

    def set_node(self, node: Obj) -> None:
        self.node = node
        md = node.get("metadata") or {}
        spec = node.get("spec") or {}
        self.name = md.get("name") or ""
        self.labels = md.get("labels") or {}
        self.unschedulable = bool(spec.get("unschedulable"))
        self.taints = parse_taints(spec.get("taints"))
        self.hard_taints = tuple(t for t in self.taints if do_not_schedule_taint(t))
        self.prefer_no_schedule_taints = tuple(t for t in self.taints if t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE)
        self.allocatable = Resource.from_resource_list((node.get("status") or {}).get("allocatable"))
        self.generation = next_generation()
        self.refresh()

    def remove_node(self) -> None:
        self.node = None
        self.generation = next_generation()

    def add_pod_info(self, pi: PodInfo) -> None:
        self.pods.append(pi)
        if pi.has_affinity:
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)
        self._update(pi, 1)

    def add_pod(self, pod: Obj) -> PodInfo:
        pi = PodInfo(pod)
        self.add_pod_info(pi)
        return pi

    def remove_pod(self, pod: PodInfo | Obj) -> PodInfo:
        """Remove a pod by key (uid); raises KeyError when it is not on this node."""
        key = pod.key if isinstance(pod, PodInfo) else PodInfo(pod).key
        for i, pi in enumerate(self.pods):
            if pi.key == key:
                last = self.pods.pop()
                if i < len(self.pods):
                    self.pods[i] = last
                break
        else:
            raise KeyError(f"no corresponding pod {key} in pods of node {self.name}")
        if pi.has_affinity:
            self.pods_with_affinity = [p for p in self.pods_with_affinity if p.key != key]
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity = [p for p in self.pods_with_required_anti_affinity if p.key != key]
        self._update(pi, -1)
        return pi

    def _update(self, pi: PodInfo, sign: int) -> None:
        r = pi.requests
        req = self.requested
        req.milli_cpu += sign * r.milli_cpu
        req.memory += sign * r.memory
        req.ephemeral_storage += sign * r.ephemeral_storage
        if r.scalar_resources:
            sr = req.scalar_resources
            for name, q in r.scalar_resources.items():
                sr[name] = sr.get(name, 0) + sign * q
        nz = self.non_zero_requested
        nz.milli_cpu += sign * pi.non0_cpu
        nz.memory += sign * pi.non0_mem
        if pi.host_ports:
            up = self.used_ports
            for hp in pi.host_ports:
                if sign > 0:
                    up.add(hp.host_ip, hp.protocol, hp.host_port)
                else:
                    up.remove(hp.host_ip, hp.protocol, hp.host_port)
        self.generation = next_generation()
        self.refresh()

    def refresh(self) -> None:
        """Recompute `cm` / `free` and move to a new generation. Call it after changing
        `requested`, `non_zero_requested`, `allocatable` or `pods` by hand (score memos key on the
        generation); the NodeInfo methods do it themselves."""
        self.generation = next_generation()
        a, r, nz = self.allocatable, self.requested, self.non_zero_requested
        self.cm = (a.milli_cpu, a.memory, r.milli_cpu, r.memory, nz.milli_cpu, nz.memory,
                   a.allowed_pod_number, len(self.pods))
        self.free = (a.milli_cpu - r.milli_cpu, a.memory - r.memory, a.allowed_pod_number - len(self.pods))

    def snapshot(self) -> "NodeInfo":
        """A copy safe to mutate (pods list, requests and ports copied; pods themselves shared)."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.labels = self.labels
        c.unschedulable = self.unschedulable
        c.taints = self.taints
        c.hard_taints = self.hard_taints
        c.prefer_no_schedule_taints = self.prefer_no_schedule_taints
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = self.used_ports.clone()
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable.clone()
        c.generation = self.generation
        c.cm = self.cm
        c.free = self.free
        return c

    clone = snapshot

    def __repr__(self) -> str:
        return (f"NodeInfo({self.name!r}, pods={[p.name for p in self.pods]!r}, requested={self.requested!r}, "
                f"allocatable={self.allocatable!r})")


# -- queue-side pod wrapper --------------------------------------------------------------------

@dataclass
class QueuedPodInfo:
    """A pod as the scheduling queue holds it (what QueueSort compares)."""

    pod_info: PodInfo
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: Optional[float] = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""

    @property
    def pod(self) -> Obj:
        return self.pod_info.pod
