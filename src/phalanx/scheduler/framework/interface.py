"""Extension points of the scheduling framework: one base class per upstream plugin interface.

A plugin is a class with a `NAME` that inherits the extension points it implements, plus a
factory `new(args, handle)` registered under that name (see `registry.py`):

    class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
        NAME = "NodeUnschedulable"
        def filter(self, state, pod, node_info):          # pod is a PodInfo
            ...return None (fits) or Status.new(Code.UnschedulableAndUnresolvable, "...")

Per-pod points: PreEnqueue, QueueSort, PreFilter (+ AddPod/RemovePod extensions), Filter,
PostFilter, PreScore, Score (+ NormalizeScore), Reserve/Unreserve, Permit, PreBind, Bind,
PostBind. Pod-group points of 1.36 workload scheduling: PlacementGenerate, PlacementScore
(+ NormalizePlacementScore), PlacementFeasible.

Two phalanx additions keep CPython fast without changing semantics: `FilterPlugin.filter_nodes`
and `ScorePlugin.score_nodes` evaluate a whole list of nodes in one call. Their defaults call
`filter` / `score` per node; a plugin overrides them with one tight loop when it can. They must
give exactly the per-node results.

`Handle` is what factories receive (the Framework implements it): the current snapshot, the
nominator, namespace labels, PDBs, default spreading selectors, the plugin runners that
preemption uses, and the scheduler's shared parts (client, informer factory, event recorder,
DRA manager, PodGroup lister, clock, off-cycle API calls; see `services.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence

from phalanx.machinery.durations import format_duration

from .cycle_state import CycleState
from .status import Code, Status
from .constants import Obj
from .events import ClusterEventWithHint
from .types import NodeInfo, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    import random

    from phalanx.client.clock import Clock
    from phalanx.client.informer import InformerFactory
    from phalanx.client.interface import Client
    from phalanx.machinery.selectors import LabelSelector

    from .dra_manager import DRAManager
    from .services import ApiCall, EventRecorder, PodGroupLister

    from .diagnosis import NodeToStatus
    from .snapshot import Snapshot

# Upstream's cap on how long a pod may wait at Permit.
MAX_PERMIT_TIMEOUT_SECONDS = 15 * 60


# What `sign_pod` returns when a plugin cannot vouch that pods with equal fragments get equal
# results from it (opportunistic batching, KEP-5598).
UNSIGNABLE: Any = type("Unsignable", (), {"__repr__": lambda self: "UNSIGNABLE"})()


class Plugin:
    """Every plugin has a name; it is used in configuration, statuses and events.

    Plugins at PreFilter, Filter, PreScore or Score take part in opportunistic batching by
    defining `sign_pod(pod: PodInfo) -> fragment`: a hashable value covering every field of the
    pod the plugin reads (equal fragments, equal results on the same node), or UNSIGNABLE. A
    plugin there without `sign_pod` makes every pod unsignable (each gets a full cycle). A
    fragment is kept with the PodInfo unless SIGNATURE_DEPENDS_ON_CLUSTER (the plugin's answer
    also depends on other objects, e.g. whether existing pods have affinity terms)."""

    NAME: str = ""
    SIGNATURE_DEPENDS_ON_CLUSTER = False
    # True when `sign_pod` reads only the pod's spec (and resource status of resized containers):
    # pods with equal specs then share their fragments without asking the plugin again.
    SIGNATURE_FROM_SPEC = False

    def name(self) -> str:
        return self.NAME

    def __repr__(self) -> str:
        return f"<plugin {self.name()}>"


# -- queue ----------------------------------------------------------------------------------------

class PreEnqueuePlugin(Plugin):
    """Runs before a pod enters the active queue; a rejection keeps it gated (must be cheap)."""

    def pre_enqueue(self, pod: PodInfo) -> Optional[Status]:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    """Orders the active queue; exactly one per profile."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError


class EnqueueExtensions(Plugin):
    """Which cluster events may make a pod this plugin rejected schedulable again."""

    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


# -- filtering ------------------------------------------------------------------------------------

@dataclass
class PreFilterResult:
    """Narrows the nodes Filter looks at; `node_names is None` means all nodes."""

    node_names: Optional[set[str]] = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: Optional["PreFilterResult"]) -> Optional["PreFilterResult"]:
        mine = self.node_names
        theirs = None if other is None else other.node_names
        if mine is None and theirs is None:
            return None
        if mine is None:
            return PreFilterResult(set(theirs))  # type: ignore[arg-type]
        if theirs is None:
            return PreFilterResult(set(mine))
        return PreFilterResult(mine & theirs)


def merge_pre_filter_results(a: Optional[PreFilterResult], b: Optional[PreFilterResult]) -> Optional[PreFilterResult]:
    if a is None:
        return None if b is None or b.all_nodes() else PreFilterResult(set(b.node_names or ()))
    return a.merge(b)


class PreFilterExtensions:
    """Incremental updates of PreFilter state while preemption or nominated pods are evaluated."""

    def add_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Optional[Status]:
        raise NotImplementedError

    def remove_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Optional[Status]:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    """Runs once per cycle before Filter. Returning Skip disables this plugin's Filter and
    PreFilterExtensions for the cycle; a PreFilterResult narrows the candidate nodes."""

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> Optional[PreFilterExtensions]:
        return None


class FilterPlugin(Plugin):
    """Decides whether the pod may run on one node: None (fits), Unschedulable,
    UnschedulableAndUnresolvable or Error."""

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        raise NotImplementedError

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        """The rejections among `nodes` as (index, status), in index order."""
        out = []
        f = self.filter
        for i, ni in enumerate(nodes):
            st = f(state, pod, ni)
            if st is not None and st.code != Code.Success:
                out.append((i, st))
        return out


class NominatingMode(IntEnum):
    ModeNoop = 0
    ModeOverride = 1


@dataclass
class NominatingInfo:
    nominated_node_name: str = ""
    nominating_mode: NominatingMode = NominatingMode.ModeNoop

    def mode(self) -> NominatingMode:
        return self.nominating_mode


@dataclass
class PostFilterResult:
    """What a PostFilter plugin proposes: a nominated node and, for preemption, the victims the
    caller must delete (the plugin never deletes anything itself)."""

    nominating_info: Optional[NominatingInfo] = None
    victims: list[PodInfo] = field(default_factory=list)
    # Lower-priority pods nominated to the chosen node whose nomination the caller should clear.
    lower_priority_nominated_pods: list[PodInfo] = field(default_factory=list)

    @classmethod
    def with_nominated_node(cls, node_name: str, victims: Iterable[PodInfo] = (),
                            lower_priority_nominated_pods: Iterable[PodInfo] = ()) -> "PostFilterResult":
        return cls(NominatingInfo(node_name, NominatingMode.ModeOverride), list(victims),
                   list(lower_priority_nominated_pods))

    def mode(self) -> NominatingMode:
        return NominatingMode.ModeNoop if self.nominating_info is None else self.nominating_info.nominating_mode

    @property
    def nominated_node_name(self) -> str:
        return "" if self.nominating_info is None else self.nominating_info.nominated_node_name


class PostFilterPlugin(Plugin):
    """Runs when no node fits (e.g. preemption). Returns Success with a result, Unschedulable,
    UnschedulableAndUnresolvable, or Error."""

    def post_filter(self, state: CycleState, pod: PodInfo,
                    node_to_status: "NodeToStatus") -> tuple[Optional[PostFilterResult], Optional[Status]]:
        raise NotImplementedError


# -- scoring ---------------------------------------------------------------------------------------

class PreScorePlugin(Plugin):
    """Runs once with the feasible nodes; Skip disables this plugin's Score for the cycle."""

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        raise NotImplementedError


class ScoreExtensions:
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int],
                        nodes: Sequence[NodeInfo]) -> Optional[Status]:
        """Rewrite `scores` (aligned with `nodes`) in place into [0, MAX_NODE_SCORE]."""
        raise NotImplementedError


class ScorePlugin(Plugin):
    # False for plugins whose score of a node depends only on the node object (labels, taints,
    # images), never on the pods placed there: a batch re-scoring one node keeps their part.
    SCORE_DEPENDS_ON_NODE_PODS = True

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        raise NotImplementedError

    def score_nodes(self, state: CycleState, pod: PodInfo,
                    nodes: Sequence[NodeInfo]) -> tuple[list[int], Optional[Status]]:
        """Raw scores aligned with `nodes`, or the first failure."""
        out: list[int] = []
        f = self.score
        for ni in nodes:
            s, st = f(state, pod, ni)
            if st is not None and st.code != Code.Success:
                return out, st
            out.append(s)
        return out, None

    def score_extensions(self) -> Optional[ScoreExtensions]:
        return None


# -- reservation and binding -------------------------------------------------------------------

class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Must be idempotent; may run even when reserve() did not."""
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Optional[Status], float]:
        """(status, timeout seconds); Wait holds the pod until allowed, rejected or timed out."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        """Success: pre_bind has work for this pod; Skip: nothing to do."""
        return None

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        raise NotImplementedError


class BindPlugin(Plugin):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        """Bind, or return Skip to let the next bind plugin handle the pod."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


# -- pod-group scheduling (1.36 workload scheduling) --------------------------------------------

@dataclass
class PodGroupInfo:
    """A PodGroup as its scheduling cycle sees it: the object and its pods still to place."""

    namespace: str
    name: str
    pod_group: Optional[Obj] = None
    unscheduled_pods: list[PodInfo] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Placement:
    """A candidate domain for a whole PodGroup: the nodes it may use (e.g. one rack)."""

    name: str
    nodes: list[NodeInfo]

    def node_names(self) -> set[str]:
        return {ni.name for ni in self.nodes}


@dataclass
class PodGroupAssignments:
    """The outcome of trying a PodGroup in one Placement: pod key -> node name."""

    placement: Placement
    assignments: dict[str, str] = field(default_factory=dict)
    pods: dict[str, PodInfo] = field(default_factory=dict)


@dataclass
class PlacementScore:
    placement: Placement
    score: int


@dataclass(frozen=True)
class PlacementProgress:
    """Where a PodGroup cycle stands: pods placed so far and pods not yet evaluated."""

    scheduled: int
    remaining: int


class PlacementGeneratePlugin(Plugin):
    def generate_placements(self, state: CycleState, pod_group: PodGroupInfo,
                            parent: Placement) -> tuple[list[Placement], Optional[Status]]:
        raise NotImplementedError


class PlacementScoreExtensions:
    def normalize_placement_score(self, state: CycleState, pod_group: PodGroupInfo,
                                  scores: list[PlacementScore]) -> Optional[Status]:
        raise NotImplementedError


class PlacementScorePlugin(Plugin):
    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Optional[Status]]:
        raise NotImplementedError

    def placement_score_extensions(self) -> Optional[PlacementScoreExtensions]:
        return None


class PlacementFeasiblePlugin(Plugin):
    """Called after each pod of a group cycle: Success (enough placed), Wait (still possible),
    Unschedulable (cannot be satisfied any more: abort)."""

    def placement_feasible(self, state: CycleState, pod_group: PodGroupInfo,
                           progress: PlacementProgress) -> Optional[Status]:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
    "placementGenerate": PlacementGeneratePlugin,
    "placementScore": PlacementScorePlugin,
    "placementFeasible": PlacementFeasiblePlugin,
}
"""Config field name -> interface, in the order upstream's getExtensionPoints lists them."""


# -- waiting pods (Permit) -------------------------------------------------------------------

class WaitingPod:
    """A pod held at Permit by one or more plugins. No timers here: the scheduling loop owns the
    clock; it calls `expire()` when `timeout_seconds` have passed. `on_done` callbacks run once
    with the final status (None = allowed)."""

    def __init__(self, pod: PodInfo, plugin_timeouts: Mapping[str, float]):
        self.pod_info = pod
        self.pending_plugins: dict[str, float] = dict(plugin_timeouts)
        self.done = False
        self.status: Optional[Status] = None
        self.on_done: list[Callable[[Optional[Status]], None]] = []

    @property
    def pod(self) -> Obj:
        return self.pod_info.pod

    def get_pending_plugins(self) -> list[str]:
        return sorted(self.pending_plugins)

    def timeout_seconds(self) -> float:
        """The earliest timeout among the plugins still pending."""
        return min(self.pending_plugins.values()) if self.pending_plugins else 0.0

    def allow(self, plugin_name: str) -> None:
        if self.done:
            return
        self.pending_plugins.pop(plugin_name, None)
        if not self.pending_plugins:
            self._finish(None)

    def reject(self, plugin_name: str, msg: str) -> None:
        if self.done:
            return
        self._finish(Status.new(Code.Unschedulable, msg).with_plugin(plugin_name))

    def expire(self) -> None:
        """Reject on behalf of the plugin whose timeout is the earliest (upstream's timer)."""
        if self.done or not self.pending_plugins:
            return
        plugin, wait = min(self.pending_plugins.items(), key=lambda kv: kv[1])
        self.reject(plugin, f"rejected due to timeout after waiting {format_duration(wait)} at plugin {plugin}")

    def _finish(self, status: Optional[Status]) -> None:
        self.done = True
        self.status = status
        for cb in self.on_done:
            cb(status)


# -- what plugins may ask of the framework ----------------------------------------------------

class PodNominator(Protocol):
    """Pods nominated to nodes by preemption (upstream's PodNominator, which the Handle embeds)."""

    def add_nominated_pod(self, pod: PodInfo, node_name: str = "") -> None: ...

    def delete_nominated_pod_if_exists(self, pod: PodInfo) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


class Handle(PodNominator, Protocol):
    """What a plugin factory receives (`factory(args, handle)`); `Framework` implements it.

    Besides the cluster as this cycle sees it (snapshot, namespaces, PDBs, nominations) and the
    plugin runners preemption uses, a plugin gets what upstream's framework.Handle offers: the API
    client, the shared informer factory (informers a plugin needs are made there, and the
    scheduler waits for their sync), an event recorder, the shared DRA manager, the PodGroup
    lister, the clock, and `spawn_api_call` for API writes off the scheduling cycle."""

    rng: "random.Random"  # the profile's seeded tie-breaking randomness

    def snapshot_shared_lister(self) -> "Snapshot": ...

    def namespace_labels(self, namespace: str) -> Optional[Mapping[str, str]]: ...

    def namespaces(self) -> Optional[Mapping[str, Mapping[str, str]]]: ...

    def pod_disruption_budgets(self) -> list[Obj]: ...

    def default_spread_selector(self, pod: PodInfo) -> Optional["LabelSelector"]: ...

    def feature_enabled(self, gate: str) -> bool: ...

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]: ...

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node_info: NodeInfo) -> Optional[Status]: ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo, pod_info_to_add: PodInfo,
                                         node_info: NodeInfo) -> Optional[Status]: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo, pod_info_to_remove: PodInfo,
                                            node_info: NodeInfo) -> Optional[Status]: ...

    def get_waiting_pod(self, uid: str) -> Optional[WaitingPod]: ...

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None: ...

    def client(self) -> Optional["Client"]: ...

    def shared_informer_factory(self) -> Optional["InformerFactory"]: ...

    def event_recorder(self) -> "EventRecorder": ...

    def shared_dra_manager(self) -> Optional["DRAManager"]: ...

    def pod_group_lister(self) -> Optional["PodGroupLister"]: ...

    def clock(self) -> "Clock": ...

    def spawn_api_call(self, call: "ApiCall") -> None: ...
