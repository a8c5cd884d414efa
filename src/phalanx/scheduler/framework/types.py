"""The scheduler's view of pods and nodes: `PodInfo`, `NodeInfo` and the queue's `QueuedPodInfo`.

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

The parts live beside this module: `resources.py` (Resource, effective pod requests),
`taints.py`, `hostports.py`, `affinity.py`, `constants.py`, and `events.py` (cluster events).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping, Optional
import orjson

from ...machinery.interning import json_to_keep
from .constants import Obj, RESOURCE_CPU, RESOURCE_MEMORY, TAINT_EFFECT_PREFER_NO_SCHEDULE
from .resources import NON_MISSING_DEFAULTS, Resource, _ceil, _pod_level_requests_set, _same_resource_status, pod_requests
from .taints import Taint, do_not_schedule_taint, parse_taints, parse_tolerations
from .hostports import HostPortInfo, get_host_ports
from .affinity import AffinityTerm, RequiredNodeAffinity, WeightedAffinityTerm, _affinity_terms, _weighted_terms


_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide, strictly increasing generation number (upstream nextGeneration)."""
    return next(_generation)


# -- PodInfo --------------------------------------------------------------------------------------

def _non_zero_requests(pod: Obj, reqs: Mapping[str, Any], requests: Resource) -> tuple[int, int]:
    """(milli-CPU, memory) with each container's missing cpu/memory request counted as 100m / 200Mi."""
    if _pod_level_requests_set(pod):
        non_missing = {k: v for k, v in NON_MISSING_DEFAULTS.items() if k not in reqs}
    else:
        non_missing = NON_MISSING_DEFAULTS
    if not non_missing:
        return requests.milli_cpu, requests.memory
    non0 = pod_requests(pod, non_missing=non_missing)
    return _ceil(non0.get(RESOURCE_CPU, 0) * 1000), _ceil(non0.get(RESOURCE_MEMORY, 0))


def _pod_has_affinity(affinity: Optional[Mapping[str, Any]]) -> bool:
    if not affinity:
        return False
    return affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None


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
        self.non0_cpu, self.non0_mem = _non_zero_requests(pod, reqs, self.requests)
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
            self._parse_affinity_terms(pa, paa)
        self.cache: dict[str, Any] = {}

    def _parse_affinity_terms(self, pa: Mapping[str, Any], paa: Mapping[str, Any]) -> None:
        """The pod's (anti-)affinity terms; what does not parse is kept in `parse_error`."""
        errs = []
        for attr, parse, raw, label in (
                ("required_affinity_terms", _affinity_terms, pa.get("requiredDuringSchedulingIgnoredDuringExecution"), "requiredAffinityTerms"),
                ("required_anti_affinity_terms", _affinity_terms, paa.get("requiredDuringSchedulingIgnoredDuringExecution"), "requiredAntiAffinityTerms"),
                ("preferred_affinity_terms", _weighted_terms, pa.get("preferredDuringSchedulingIgnoredDuringExecution"), "preferredAffinityTerms"),
                ("preferred_anti_affinity_terms", _weighted_terms, paa.get("preferredDuringSchedulingIgnoredDuringExecution"), "preferredAntiAffinityTerms")):
            try:
                setattr(self, attr, parse(self.pod, raw))
            except ValueError as e:
                errs.append(f"{label}: {e}")
        if errs:
            self.parse_error = "[" + ", ".join(errs) + "]" if len(errs) > 1 else errs[0]

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
    def requests_signature(self) -> tuple[Any, ...]:
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
            sig = self.cache[key] = json_to_keep([spec.get(f) for f in fields], option=orjson.OPT_SORT_KEYS)
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
    gate_status: Any = None  # the PreEnqueue Status holding the pod, while gated

    @property
    def pod(self) -> Obj:
        return self.pod_info.pod
