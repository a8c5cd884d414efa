"""The Framework: runs one profile's plugins at each extension point, and the per-pod algorithm.

Build one per profile, then drive a pod through a cycle against a Snapshot:

    fw = Framework(profile)                         # default profile + in-tree registry when omitted
    cycle = fw.scheduling_cycle(pod, snapshot)      # PreFilter -> Filter -> (PostFilter) -> PreScore
                                                    # -> Score -> select host -> assume -> Reserve -> Permit
    cycle.status                                    # None: go bind on cycle.node_name
    cycle.fit_error and str(cycle.fit_error)        # "0/4 nodes are available: ..."
    cycle.post_filter_result.victims                # preemption victims for the caller to delete

or step by step, as the scheduling loop does:

    state = CycleState()
    try:
        result = fw.schedule_pod(state, pod_info, snapshot)     # ScheduleResult.suggested_host
    except FitError as fe:
        post, st = fw.run_post_filter_plugins(state, pod_info, fe.diagnosis.node_to_status)
    fw.run_reserve_plugins_reserve(state, pod_info, host); fw.run_permit_plugins(state, pod_info, host)
    ... binding cycle: fw.get_waiting_pod(uid), run_pre_bind_plugins, run_bind_plugins, run_post_bind_plugins

Semantics follow upstream's frameworkImpl and schedule_one.go: Skip from PreFilter/PreScore turns
the plugin's Filter/Score off for the cycle; PreFilterResults are intersected; Filter stops at the
first rejecting plugin per node; the search stops after `num_feasible_nodes_to_find` feasible
nodes (adaptive `percentageOfNodesToScore`: 50% - nodes/125, at least 5% and 100 nodes) and the
next search starts where this one stopped (round robin); scores are normalized, checked to be in
[0, 100], weighted and summed; ties are broken uniformly at random (seeded RNG).

Speed: Filter and Score run over chunks of nodes through `filter_nodes` / `score_nodes`, so a
plugin can evaluate hundreds of nodes in one tight loop. Results are identical to per-node
evaluation (the chunk is cut exactly where the last needed feasible node was found).

Explanations: `Diagnosis` keeps every rejected node's Status with its plugin; `ScoreResult`
keeps each plugin's weighted score per node (`node_plugin_scores()`).
"""

from __future__ import annotations

import operator
import heapq
import random
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from phalanx.machinery.featuregates import FeatureGates

from .config import KubeSchedulerProfile, PluginRef, default_plugins, default_profile
from .cycle_state import CycleState
from .diagnosis import Diagnosis, FitError, NodeToStatus, NoNodesAvailableError, SchedulingError
from .interface import (
    EXTENSION_POINTS,
    MAX_PERMIT_TIMEOUT_SECONDS,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    NominatingInfo,
    NominatingMode,
    PermitPlugin,
    Placement,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementProgress,
    PlacementScore,
    PlacementScorePlugin,
    Plugin,
    PodGroupAssignments,
    PodGroupInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    UNSIGNABLE,
    WaitingPod,
    merge_pre_filter_results,
)
from .batch import OpportunisticBatch
from .registry import Registry, in_tree_registry
from .snapshot import Snapshot
from .status import Code, Status, as_status
from .types import MAX_NODE_SCORE, MAX_TOTAL_SCORE, MIN_NODE_SCORE, ClusterEventWithHint, NodeInfo, Obj, PodInfo, QueuedPodInfo

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
_MIN_CHUNK = 64
_REJECT_CODES = (Code.Unschedulable, Code.UnschedulableAndUnresolvable, Code.Pending)


class FrameworkConfigError(ValueError):
    """The profile cannot be built (unknown plugin, wrong extension point, duplicates...)."""


def go_string_list(items: Iterable[str]) -> str:
    """A Go `%v` of a []string: "[a b c]"."""
    return "[" + " ".join(items) + "]"


def _pod_info(pod: PodInfo | Obj) -> PodInfo:
    return pod if isinstance(pod, PodInfo) else PodInfo(pod)


# -- results -----------------------------------------------------------------------------------

class ScoreResult:
    """Scores of the feasible nodes: weighted score per plugin per node, and totals."""

    __slots__ = ("nodes", "plugin_names", "plugin_scores", "totals")

    def __init__(self, nodes: Sequence[NodeInfo], plugin_names: list[str], plugin_scores: dict[str, list[int]],
                 totals: list[int]):
        self.nodes = nodes
        self.plugin_names = plugin_names
        self.plugin_scores = plugin_scores
        self.totals = totals

    def node_plugin_scores(self) -> list[dict[str, Any]]:
        """Upstream's NodePluginScores: [{"name", "scores": [{"name", "score"}], "totalScore"}]."""
        out = []
        for i, ni in enumerate(self.nodes):
            out.append({"name": ni.name,
                        "scores": [{"name": p, "score": self.plugin_scores[p][i]} for p in self.plugin_names],
                        "totalScore": self.totals[i]})
        return out

    def total_by_node(self) -> dict[str, int]:
        return {ni.name: t for ni, t in zip(self.nodes, self.totals)}

    def top(self, n: int = 3) -> list[tuple[str, int]]:
        totals = self.totals
        order = heapq.nsmallest(n, range(len(totals)), key=lambda i: (-totals[i], i))
        return [(self.nodes[i].name, totals[i]) for i in order]


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: Optional[ScoreResult] = None
    diagnosis: Optional[Diagnosis] = None
    batched: bool = False  # placed from the opportunistic batch (see batch.py)


@dataclass
class SchedulingCycleResult:
    """The outcome of `Framework.scheduling_cycle` for one pod."""

    pod_info: PodInfo
    state: CycleState
    node_name: str = ""  # the node the pod is assumed on when status is None or Wait
    status: Optional[Status] = None  # None: success; Wait: held at Permit; otherwise the failure
    schedule_result: Optional[ScheduleResult] = None
    fit_error: Optional[FitError] = None
    post_filter_result: Optional[PostFilterResult] = None
    nominating_info: Optional[NominatingInfo] = None
    waiting_pod: Optional[WaitingPod] = None

    @property
    def scheduled(self) -> bool:
        return self.status is None or self.status.code in (Code.Success, Code.Wait)

    def message(self) -> str:
        if self.fit_error is not None:
            return str(self.fit_error)
        return "" if self.status is None else self.status.message()


# -- a minimal nominator ---------------------------------------------------------------------------

class Nominator:
    """Pods nominated to nodes (by preemption), as the queue's PodNominator keeps them."""

    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod: PodInfo, node_name: str = "") -> None:
        node_name = node_name or pod.nominated_node_name
        self.delete_nominated_pod_if_exists(pod)
        if not node_name:
            return
        self._by_node.setdefault(node_name, []).append(pod)
        self._node_of[pod.key] = node_name

    def delete_nominated_pod_if_exists(self, pod: PodInfo) -> None:
        node = self._node_of.pop(pod.key, None)
        if node is None:
            return
        lst = [p for p in self._by_node.get(node, []) if p.key != pod.key]
        if lst:
            self._by_node[node] = lst
        else:
            self._by_node.pop(node, None)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def nominated_node_names(self) -> set[str]:
        return set(self._by_node)


# -- the framework ---------------------------------------------------------------------------------

class Framework:
    """One profile's plugins, and the Handle given to them."""

    def __init__(self, profile: Optional[KubeSchedulerProfile] = None, *, registry: Optional[Registry] = None,
                 feature_gates: Optional[FeatureGates] = None, snapshot: Optional[Snapshot] = None,
                 nominator: Any = None, namespaces: Optional[Mapping[str, Mapping[str, str]] | Callable[[], Mapping[str, Mapping[str, str]]]] = None,
                 pod_disruption_budgets: Optional[Callable[[], list[Obj]] | list[Obj]] = None,
                 default_spread_selector: Optional[Callable[[PodInfo], Any]] = None,
                 percentage_of_nodes_to_score: Optional[int] = None, seed: int = 0):
        self.feature_gates = feature_gates or FeatureGates()
        self.profile = profile or default_profile(self.feature_gates)
        self.profile_name = self.profile.scheduler_name
        self.registry = registry if registry is not None else in_tree_registry()
        self.snapshot: Optional[Snapshot] = snapshot
        self.nominator = nominator
        self._namespaces = namespaces
        self._pdbs = pod_disruption_budgets
        self._default_spread_selector = default_spread_selector
        self.global_percentage_of_nodes_to_score = percentage_of_nodes_to_score or 0
        self.rng = random.Random(seed)
        self.next_start_node_index = 0
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.unavailable_plugins: list[str] = []  # default-profile plugins no registry provides

        self.plugins_map: dict[str, Plugin] = {}
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = []
        self.queue_sort_plugins: list[QueueSortPlugin] = []
        self.pre_filter_plugins: list[PreFilterPlugin] = []
        self.filter_plugins: list[FilterPlugin] = []
        self.post_filter_plugins: list[PostFilterPlugin] = []
        self.pre_score_plugins: list[PreScorePlugin] = []
        self.score_plugins: list[ScorePlugin] = []
        self.reserve_plugins: list[ReservePlugin] = []
        self.permit_plugins: list[PermitPlugin] = []
        self.pre_bind_plugins: list[PreBindPlugin] = []
        self.bind_plugins: list[BindPlugin] = []
        self.post_bind_plugins: list[PostBindPlugin] = []
        self.placement_generate_plugins: list[PlacementGeneratePlugin] = []
        self.placement_score_plugins: list[PlacementScorePlugin] = []
        self.placement_feasible_plugins: list[PlacementFeasiblePlugin] = []
        self.score_plugin_weight: dict[str, int] = {}
        self.placement_score_plugin_weight: dict[str, int] = {}
        self._build()
        # opportunistic batching (KEP-5598): the plugins that must sign a pod, and the Score
        # plugins a one-node re-score runs again
        signing: dict[str, Plugin] = {}
        for lst in (self.pre_filter_plugins, self.filter_plugins, self.pre_score_plugins, self.score_plugins):
            for pl in lst:
                signing.setdefault(pl.name(), pl)
        self._pod_signers = [pl for pl in signing.values() if not getattr(pl, "SIGNATURE_DEPENDS_ON_CLUSTER", False)]
        self._cluster_signers = [pl for pl in signing.values() if getattr(pl, "SIGNATURE_DEPENDS_ON_CLUSTER", False)]
        self._signature_cache_key = f"sig:profile:{id(self)}"
        # When every pod-only signer reads the spec alone (in-tree plugins say so), a pod whose spec
        # equals the last signed pod's reuses its fragments.
        self._signature_from_spec = all(getattr(pl, "SIGNATURE_FROM_SPEC", False) for pl in self._pod_signers)
        self._last_fixed_signature: Optional[tuple[Any, Any]] = None
        self.dynamic_score_plugins = [pl for pl in self.score_plugins if pl.SCORE_DEPENDS_ON_NODE_PODS]
        self.static_score_plugin_names = {pl.name() for pl in self.score_plugins if not pl.SCORE_DEPENDS_ON_NODE_PODS}
        self.cycle_count = 0
        self.batch: Optional[OpportunisticBatch] = (
            OpportunisticBatch(self) if self.feature_gates.enabled("OpportunisticBatching") else None)

    # -- construction (upstream NewFramework) ------------------------------------------------
    _POINT_ATTRS = {
        "preEnqueue": "pre_enqueue_plugins", "queueSort": "queue_sort_plugins", "preFilter": "pre_filter_plugins",
        "filter": "filter_plugins", "postFilter": "post_filter_plugins", "preScore": "pre_score_plugins",
        "score": "score_plugins", "reserve": "reserve_plugins", "permit": "permit_plugins",
        "preBind": "pre_bind_plugins", "bind": "bind_plugins", "postBind": "post_bind_plugins",
        "placementGenerate": "placement_generate_plugins", "placementScore": "placement_score_plugins",
        "placementFeasible": "placement_feasible_plugins",
    }

    def _build(self) -> None:
        prof = self.profile
        plugins = prof.plugins
        optional = {p.name for p in default_plugins(self.feature_gates).multi_point.enabled}
        args_by_name = {pc.name: pc.args for pc in prof.plugin_config}
        for name in _ordered_names(plugins):
            factory = self.registry.get(name)
            if factory is None:
                if name in optional:
                    self.unavailable_plugins.append(name)
                    continue
                continue  # reported below with the extension point that names it
            plugin = factory(args_by_name.get(name), self)
            self.plugins_map[name] = plugin

        for point, iface in EXTENSION_POINTS.items():
            pset = plugins.get(point)
            lst: list[Plugin] = []
            seen = set()
            for ref in pset.enabled:
                pl = self.plugins_map.get(ref.name)
                if pl is None:
                    if ref.name in optional and ref.name not in self.registry:
                        continue
                    raise FrameworkConfigError(f"{iface.__name__} {ref.name!r} does not exist".replace("'", '"'))
                if not isinstance(pl, iface):
                    raise FrameworkConfigError(f'plugin "{ref.name}" does not extend {iface.__name__} plugin')
                if ref.name in seen:
                    raise FrameworkConfigError(f'plugin "{ref.name}" already registered as "{iface.__name__}"')
                seen.add(ref.name)
                lst.append(pl)
            setattr(self, self._POINT_ATTRS[point], lst)

        if plugins.multi_point.enabled:
            self._expand_multi_point()

        if len(self.queue_sort_plugins) != 1:
            raise FrameworkConfigError(
                f'only one queue sort plugin required for profile with scheduler name "{prof.scheduler_name}", '
                f"but got {len(self.queue_sort_plugins)}")
        self.score_plugin_weight = self._score_weights(ScorePlugin, plugins.score.enabled + plugins.multi_point.enabled)
        for pl in self.score_plugins:
            if self.score_plugin_weight.get(pl.name(), 0) == 0:
                raise FrameworkConfigError(f'score plugin "{pl.name()}" is not configured with weight')
        self.placement_score_plugin_weight = self._score_weights(
            PlacementScorePlugin, plugins.placement_score.enabled + plugins.multi_point.enabled)
        self._pre_filter_extensions = [(pl.name(), pl.pre_filter_extensions()) for pl in self.pre_filter_plugins]

    def _expand_multi_point(self) -> None:
        """Upstream expandMultiPointPlugins: per extension point, explicitly configured plugins that
        are also in MultiPoint first (their explicit order), then MultiPoint-only plugins, then the
        other explicit ones."""
        prof = self.profile
        optional = {p.name for p in default_plugins(self.feature_gates).multi_point.enabled}
        for point, iface in EXTENSION_POINTS.items():
            pset = prof.plugins.get(point)
            enabled = [p.name for p in pset.enabled if p.name in self.plugins_map]
            disabled = {p.name for p in pset.disabled}
            if "*" in disabled:
                continue
            multi: list[str] = []
            overrides: set[str] = set()
            for ref in prof.plugins.multi_point.enabled:
                pl = self.plugins_map.get(ref.name)
                if pl is None:
                    if ref.name in optional and ref.name not in self.registry:
                        continue
                    raise FrameworkConfigError(f'{iface.__name__} "{ref.name}" does not exist')
                if not isinstance(pl, iface):
                    continue
                if ref.name in disabled:
                    continue
                if ref.name in enabled:
                    overrides.add(ref.name)
                    continue
                if ref.name in multi:
                    raise FrameworkConfigError(f'plugin "{ref.name}" already registered as "{iface.__name__}"')
                multi.append(ref.name)
            order = [n for n in enabled if n in overrides] + multi + [n for n in enabled if n not in overrides]
            setattr(self, self._POINT_ATTRS[point], [self.plugins_map[n] for n in order])

    def _score_weights(self, iface: type, refs: list[PluginRef]) -> dict[str, int]:
        weights: dict[str, int] = {}
        total = 0
        for ref in refs:
            pl = self.plugins_map.get(ref.name)
            if pl is None or not isinstance(pl, iface) or ref.name in weights:
                continue
            w = ref.weight or 1
            if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
                raise FrameworkConfigError("total score of Score plugins could overflow")
            weights[ref.name] = w
            total += w * MAX_NODE_SCORE
        return weights

    # -- Handle ---------------------------------------------------------------------------------
    def snapshot_shared_lister(self) -> Snapshot:
        if self.snapshot is None:
            self.snapshot = Snapshot()
        return self.snapshot

    def set_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        if self.nominator is None:
            return []
        return self.nominator.nominated_pods_for_node(node_name)

    def namespaces(self) -> Optional[Mapping[str, Mapping[str, str]]]:
        ns = self._namespaces
        return ns() if callable(ns) else ns

    def namespace_labels(self, namespace: str) -> Optional[Mapping[str, str]]:
        ns = self.namespaces()
        return None if ns is None else ns.get(namespace)

    def pod_disruption_budgets(self) -> list[Obj]:
        p = self._pdbs
        if p is None:
            return []
        return list(p() if callable(p) else p)

    def default_spread_selector(self, pod: PodInfo) -> Any:
        return None if self._default_spread_selector is None else self._default_spread_selector(pod)

    def feature_enabled(self, gate: str) -> bool:
        return self.feature_gates.enabled(gate)

    def plugin(self, name: str) -> Optional[Plugin]:
        return self.plugins_map.get(name)

    def list_plugins(self) -> dict[str, list[dict[str, Any]]]:
        """The plugins per extension point, with score weights (upstream ListPlugins)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for point, attr in self._POINT_ATTRS.items():
            lst = getattr(self, attr)
            if not lst:
                continue
            entries = []
            for pl in lst:
                e: dict[str, Any] = {"name": pl.name()}
                if point == "score":
                    e["weight"] = self.score_plugin_weight.get(pl.name(), 1)
                elif point == "placementScore":
                    e["weight"] = self.placement_score_plugin_weight.get(pl.name(), 1)
                entries.append(e)
            out[point] = entries
        return out

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """plugin name -> registered events, for the queue's requeueing."""
        out = {}
        for name, pl in self.plugins_map.items():
            if isinstance(pl, EnqueueExtensions):
                out[name] = pl.events_to_register()
        return out

    def percentage_of_nodes_to_score(self) -> Optional[int]:
        return self.profile.percentage_of_nodes_to_score

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    # -- queue points ---------------------------------------------------------------------------
    def run_pre_enqueue_plugins(self, pod: PodInfo | Obj) -> Optional[Status]:
        pi = _pod_info(pod)
        for pl in self.pre_enqueue_plugins:
            st = pl.pre_enqueue(pi)
            if st is None or st.code == Code.Success:
                continue
            if st.is_rejected():
                return st.with_plugin(pl.name())
            return as_status(f"running PreEnqueue plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
        return None

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.queue_sort_plugins[0].less(a, b)

    # -- PreFilter / Filter ---------------------------------------------------------------------
    def run_pre_filter_plugins(self, state: CycleState, pod: PodInfo,
                               nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status], list[str]]:
        """(result, status, plugins that narrowed the node set). Unschedulable from a plugin lets
        the others still run (preemption needs their state); UnschedulableAndUnresolvable stops."""
        result: Optional[PreFilterResult] = None
        plugins_with_nodes: list[str] = []
        skip: set[str] = set()
        return_status: Optional[Status] = None
        for pl in self.pre_filter_plugins:
            name = pl.name()
            r, st = pl.pre_filter(state, pod, nodes)
            if st is not None and st.code == Code.Skip:
                skip.add(name)
                continue
            if st is not None and st.code != Code.Success:
                st.plugin = name
                if st.code == Code.UnschedulableAndUnresolvable:
                    return None, st, []
                if st.code == Code.Unschedulable:
                    return_status = st
                    continue
                return None, as_status(f"running PreFilter plugin {_q(name)}: {st.message()}").with_plugin(name), []
            if r is not None and not r.all_nodes():
                plugins_with_nodes.append(name)
            result = merge_pre_filter_results(result, r)
            if result is not None and not result.all_nodes() and not result.node_names:
                if len(plugins_with_nodes) == 1:
                    msg = f"node(s) didn't satisfy plugin {plugins_with_nodes[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) {go_string_list(plugins_with_nodes)} simultaneously"
                return result, Status.new(Code.UnschedulableAndUnresolvable, msg), plugins_with_nodes
        state.set_skip_filter_plugins(skip)
        return result, return_status, plugins_with_nodes

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo, pod_info_to_add: PodInfo,
                                         node_info: NodeInfo) -> Optional[Status]:
        skip = state.skip_filter_plugins
        for name, ext in self._pre_filter_extensions:
            if ext is None or name in skip:
                continue
            st = ext.add_pod(state, pod, pod_info_to_add, node_info)
            if st is not None and st.code != Code.Success:
                return as_status(f"running AddPod on PreFilter plugin {_q(name)}: {st.message()}")
        return None

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo, pod_info_to_remove: PodInfo,
                                            node_info: NodeInfo) -> Optional[Status]:
        skip = state.skip_filter_plugins
        for name, ext in self._pre_filter_extensions:
            if ext is None or name in skip:
                continue
            st = ext.remove_pod(state, pod, pod_info_to_remove, node_info)
            if st is not None and st.code != Code.Success:
                return as_status(f"running RemovePod on PreFilter plugin {_q(name)}: {st.message()}")
        return None

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        """The first rejection among the active Filter plugins for one node (None: fits)."""
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            name = pl.NAME or pl.name()
            if name in skip:
                continue
            st = pl.filter(state, pod, node_info)
            if st is not None and st.code != Code.Success:
                if st.code not in _REJECT_CODES:
                    st = as_status(f"running {_q(name)} filter plugin: {st.message()}")
                st.plugin = name
                return st
        return None

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node_info: NodeInfo) -> Optional[Status]:
        """Filter twice when pods of equal or higher priority are nominated to the node: once as if
        they ran there, once without them; the node must pass both (upstream)."""
        status: Optional[Status] = None
        pods_added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                pods_added, state_to_use, info_to_use, err = self._add_ge_nominated_pods(state, pod, node_info)
                if err is not None:
                    return err
            elif not pods_added or not (status is None or status.code == Code.Success):
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use)
            if status is not None and status.code not in (Code.Success,) + _REJECT_CODES:
                return status
        return status

    def _add_ge_nominated_pods(self, state: CycleState, pod: PodInfo,
                               node_info: NodeInfo) -> tuple[bool, CycleState, NodeInfo, Optional[Status]]:
        if self.nominator is None or node_info.node is None:
            return False, state, node_info, None
        nominated = self.nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info, None
        info_out = node_info.snapshot()
        state_out = state.clone()
        added = False
        for pi in nominated:
            if pi.priority >= pod.priority and pi.key != pod.key:
                info_out.add_pod_info(pi)
                st = self.run_pre_filter_extension_add_pod(state_out, pod, pi, info_out)
                if st is not None and st.code != Code.Success:
                    return False, state, node_info, st
                added = True
        return added, state_out, info_out, None

    def _nominated_node_names(self) -> set[str]:
        n = self.nominator
        if n is None:
            return set()
        names = getattr(n, "nominated_node_names", None)
        if names is not None:
            return names()
        return {ni.name for ni in self.snapshot_shared_lister().list() if n.nominated_pods_for_node(ni.name)}

    def num_feasible_nodes_to_find(self, num_all_nodes: int) -> int:
        """How many feasible nodes to find before scoring (adaptive percentageOfNodesToScore)."""
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
            return num_all_nodes
        pct = self.profile.percentage_of_nodes_to_score
        if pct is None:
            pct = self.global_percentage_of_nodes_to_score
        if pct == 0:
            pct = 50 - num_all_nodes // 125
            if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
                pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
        n = num_all_nodes * pct // 100
        return MIN_FEASIBLE_NODES_TO_FIND if n < MIN_FEASIBLE_NODES_TO_FIND else n

    def find_nodes_that_pass_filters(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis,
                                     nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        """Nodes passing every active Filter, starting at the round-robin index and stopping once
        enough are found. Rejections are recorded in `diagnosis`."""
        n = len(nodes)
        if n == 0:
            return []
        num_to_find = self.num_feasible_nodes_to_find(n)
        if not self.score_plugins:
            num_to_find = 1
        start = self.next_start_node_index % n
        if not self.filter_plugins:
            return [nodes[(start + i) % n] for i in range(num_to_find)]
        skip = state.skip_filter_plugins
        filters = [(pl.NAME or pl.name(), pl) for pl in self.filter_plugins if (pl.NAME or pl.name()) not in skip]
        nominated = self._nominated_node_names()
        statuses = diagnosis.node_to_status
        feasible: list[NodeInfo] = []
        done = 0
        while done < n and len(feasible) < num_to_find:
            need = num_to_find - len(feasible)
            size = min(max(need, _MIN_CHUNK), n - done)
            lo = (start + done) % n
            hi = lo + size
            chunk = nodes[lo:hi] if hi <= n else list(nodes[lo:]) + list(nodes[:hi - n])
            done += size
            rejected = self._filter_chunk(state, pod, chunk, filters, nominated)
            passed = size - len(rejected)
            cut = size
            if passed > need:
                count = 0
                for j in range(size):
                    if j not in rejected:
                        count += 1
                        if count == need:
                            cut = j + 1
                            break
            if not rejected:
                feasible.extend(chunk[:cut])
                continue
            if cut < size:
                rejected = {j: st for j, st in rejected.items() if j < cut}
            statuses.set_many((chunk[j].name, st) for j, st in rejected.items())
            for st in {id(st): st for st in rejected.values()}.values():
                diagnosis.add_plugin_status(st)
            feasible.extend([ni for j, ni in enumerate(chunk[:cut]) if j not in rejected])
        return feasible

    def _filter_chunk(self, state: CycleState, pod: PodInfo, chunk: Sequence[NodeInfo],
                      filters: list[tuple[str, FilterPlugin]], nominated: set[str]) -> dict[int, Status]:
        rejected: dict[int, Status] = {}
        cand: Sequence[NodeInfo] = chunk
        index: Optional[list[int]] = None  # position in `chunk` of each candidate; None = identity
        for name, pl in filters:
            if not cand:
                break
            rej = pl.filter_nodes(state, pod, cand)
            if not rej:
                continue
            for st in {id(st): st for _, st in rej}.values():
                if st.code not in _REJECT_CODES:
                    raise SchedulingError(as_status(f"running {_q(name)} filter plugin: {st.message()}"))
                if st.plugin is None:
                    st.plugin = name
            if index is None:
                rejected.update(rej)
            else:
                rejected.update([(index[k], st) for k, st in rej])
            bad = {k for k, _ in rej}
            keep = [k for k in range(len(cand)) if k not in bad]
            index = keep if index is None else [index[k] for k in keep]
            cand = [cand[k] for k in keep]
        if nominated:
            for j, ni in enumerate(chunk):
                if ni.name in nominated:
                    st = self.run_filter_plugins_with_nominated_pods(state, pod, ni)
                    if st is None or st.code == Code.Success:
                        rejected.pop(j, None)
                    elif st.code not in _REJECT_CODES:
                        raise SchedulingError(st)
                    else:
                        rejected[j] = st
        return rejected

    def find_nodes_that_fit_pod(self, state: CycleState, pod: PodInfo) -> tuple[list[NodeInfo], Diagnosis]:
        snap = self.snapshot_shared_lister()
        diagnosis = Diagnosis()
        all_nodes = snap.list()
        pre_res, st, plugins_with_nodes = self.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(plugins_with_nodes)
        if st is not None and st.code != Code.Success:
            if not st.is_rejected():
                raise SchedulingError(st)
            diagnosis.node_to_status.set_absent_nodes_status(st)
            diagnosis.pre_filter_msg = st.message()
            diagnosis.add_plugin_status(st)
            return [], diagnosis

        nnn = pod.nominated_node_name
        if nnn and nnn in snap.node_info_map:
            feasible = self.find_nodes_that_pass_filters(state, pod, diagnosis, [snap.node_info_map[nnn]])
            if feasible:
                return feasible, diagnosis

        nodes: Sequence[NodeInfo] = all_nodes
        if pre_res is not None and not pre_res.all_nodes():
            by_name = snap.node_info_map
            nodes = [by_name[n] for n in sorted(pre_res.node_names or ()) if n in by_name]
            diagnosis.node_to_status.set_absent_nodes_status(Status.new(
                Code.UnschedulableAndUnresolvable,
                f"node(s) didn't satisfy plugin(s) {go_string_list(sorted(plugins_with_nodes))}"))
        try:
            feasible = self.find_nodes_that_pass_filters(state, pod, diagnosis, nodes)
        finally:
            if all_nodes:
                processed = len(diagnosis.node_to_status)
                self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        self.next_start_node_index = (self.next_start_node_index + len(feasible)) % len(all_nodes)
        return feasible, diagnosis

    # -- PostFilter -------------------------------------------------------------------------------
    def run_post_filter_plugins(self, state: CycleState, pod: PodInfo,
                                node_to_status: NodeToStatus) -> tuple[Optional[PostFilterResult], Status]:
        result: Optional[PostFilterResult] = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter_plugins:
            r, st = pl.post_filter(state, pod, node_to_status)
            if st is None or st.code == Code.Success:
                return r, st or Status.new(Code.Success)
            if st.code == Code.UnschedulableAndUnresolvable:
                return r, st.with_plugin(pl.name())
            if not st.is_rejected():
                return None, as_status(st.message()).with_plugin(pl.name())
            if r is not None and r.mode() != NominatingMode.ModeNoop:
                result = r
            reasons.extend(st.reasons())
            if not rejector:
                rejector = pl.name()
        return result, Status(Code.Unschedulable, reasons, plugin=rejector or None)

    # -- PreScore / Score ---------------------------------------------------------------------------
    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        skip: set[str] = set()
        for pl in self.pre_score_plugins:
            st = pl.pre_score(state, pod, nodes)
            if st is not None and st.code == Code.Skip:
                skip.add(pl.name())
                continue
            if st is not None and st.code != Code.Success:
                return as_status(f"running PreScore plugin {_q(pl.name())}: {st.message()}")
        state.set_skip_score_plugins(skip)
        return None

    def run_score_plugins(self, state: CycleState, pod: PodInfo,
                          nodes: Sequence[NodeInfo]) -> tuple[Optional[ScoreResult], Optional[Status]]:
        skip = state.skip_score_plugins
        names: list[str] = []
        per_plugin: dict[str, list[int]] = {}
        totals: Optional[list[int]] = None
        for pl in self.score_plugins:
            name = pl.NAME or pl.name()
            if name in skip:
                continue
            scores, st = pl.score_nodes(state, pod, nodes)
            if st is not None and st.code != Code.Success:
                return None, as_status(f"running Score plugin {_q(name)}: {st.message()}")
            ext = pl.score_extensions()
            if ext is not None:
                st = ext.normalize_score(state, pod, scores, nodes)
                if st is not None and st.code != Code.Success:
                    return None, as_status(f"running Normalize on Score plugin {_q(name)}: {st.message()}")
            if scores:
                lo, hi = min(scores), max(scores)
                if hi > MAX_NODE_SCORE or lo < MIN_NODE_SCORE:
                    bad = hi if hi > MAX_NODE_SCORE else lo
                    return None, as_status(f"plugin {_q(name)} returns an invalid score {bad}, it should in the range of "
                                           f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
            w = self.score_plugin_weight.get(name, 1)
            weighted = scores if w == 1 else list(map(operator.mul, scores, repeat(w, len(scores))))
            names.append(name)
            per_plugin[name] = weighted
            totals = list(weighted) if totals is None else list(map(operator.add, totals, weighted))
        if totals is None:
            totals = [0] * len(nodes)
        return ScoreResult(nodes, names, per_plugin, totals), None

    def prioritize_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> ScoreResult:
        if not self.score_plugins:
            return ScoreResult(nodes, [], {}, [1] * len(nodes))
        st = self.run_pre_score_plugins(state, pod, nodes)
        if st is not None:
            raise SchedulingError(st)
        result, st = self.run_score_plugins(state, pod, nodes)
        if st is not None:
            raise SchedulingError(st)
        assert result is not None
        return result

    def select_host(self, result: ScoreResult) -> str:
        totals = result.totals
        if not totals:
            raise SchedulingError(as_status("empty priorityList"))
        best = max(totals)
        count = totals.count(best)
        i = totals.index(best)
        if count > 1:  # uniform among the ties
            for _ in range(self.rng.randrange(count)):
                i = totals.index(best, i + 1)
        return result.nodes[i].name

    def sign_pod(self, pod: PodInfo) -> Any:
        """The pod's signature for opportunistic batching: equal signatures mean every Filter and
        Score plugin sees the same pod. None when some plugin cannot sign it (it reads fields no
        signature covers, or state beyond the node), or when nominations are in play."""
        if pod.nominated_node_name or self._nominated_node_names():
            return None
        # Fragments that depend on the pod alone are kept with the PodInfo (it lives as long as
        # the pod object is unchanged); the others are asked every cycle.
        key = self._signature_cache_key
        fixed = pod.cache.get(key)
        if fixed is None:
            spec = pod.spec
            last = self._last_fixed_signature
            if last is not None and last[0] == spec and not (pod.pod.get("status") or {}).get("containerStatuses"):
                fixed = last[1]  # the same spec as the pod signed before (a gang, a Job): same fragments
            else:
                fixed = self._sign(pod, self._pod_signers)
            pod.cache[key] = fixed
            if self._signature_from_spec:
                self._last_fixed_signature = (spec, fixed)
        if fixed is UNSIGNABLE:
            return None
        varying = self._sign(pod, self._cluster_signers)
        if varying is UNSIGNABLE:
            return None
        return fixed, varying

    @staticmethod
    def _sign(pod: PodInfo, plugins: list[Plugin]) -> Any:
        parts = []
        for pl in plugins:
            sign = getattr(pl, "sign_pod", None)
            if sign is None:
                return UNSIGNABLE
            fragment = sign(pod)
            if fragment is UNSIGNABLE:
                return UNSIGNABLE
            parts.append(fragment)
        return tuple(parts)

    def schedule_pod(self, state: CycleState, pod: PodInfo | Obj, snapshot: Optional[Snapshot] = None) -> ScheduleResult:
        """Pick a node for `pod` (upstream schedulePod). Raises FitError when none fits,
        NoNodesAvailableError on an empty cluster, SchedulingError on a plugin error."""
        if snapshot is not None:
            self.snapshot = snapshot
        pi = _pod_info(pod)
        snap = self.snapshot_shared_lister()
        self.cycle_count += 1
        if snap.num_nodes() == 0:
            raise NoNodesAvailableError()
        batch = self.batch
        signature = None
        if batch is not None:
            signature = self.sign_pod(pi)
            if batch.state is not None:
                hinted = self._schedule_from_batch(batch, signature, state, pi, snap)
                if hinted is not None:
                    return hinted
        feasible, diagnosis = self.find_nodes_that_fit_pod(state, pi)
        if not feasible:
            if batch is not None:
                batch.flush()
            raise FitError(pi, snap.num_nodes(), diagnosis)
        if len(feasible) == 1:
            if batch is not None:
                batch.store(signature, state, None, feasible[0].name, snap, self.cycle_count)
            return ScheduleResult(feasible[0].name, 1 + len(diagnosis.node_to_status), 1, None, diagnosis)
        scores = self.prioritize_nodes(state, pi, feasible)
        host = self.select_host(scores)
        if batch is not None:
            batch.store(signature, state, scores, host, snap, self.cycle_count)
        return ScheduleResult(host, len(feasible) + len(diagnosis.node_to_status), len(feasible), scores, diagnosis)

    def _schedule_from_batch(self, batch: OpportunisticBatch, signature: Any, state: CycleState, pod: PodInfo,
                             snap: Snapshot) -> Optional[ScheduleResult]:
        """A hinted cycle: the batch's PreFilter results, then its best node (Filter re-run on it)."""
        if not batch.prepare(signature, state, snap, self.cycle_count):
            return None
        hinted = batch.hint(state, pod, snap, self.cycle_count)
        if hinted is None:
            return None
        ni, total, following = hinted
        nodes = [ni] + [snap.node_info_map[e.name] for e in following if e.name in snap.node_info_map]
        totals = [total] + [e.total for e in following if e.name in snap.node_info_map]
        return ScheduleResult(ni.name, 1, 1, ScoreResult(nodes, [], {}, totals), None, batched=True)

    # -- Reserve / Permit ---------------------------------------------------------------------------
    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        for pl in self.reserve_plugins:
            st = pl.reserve(state, pod, node_name)
            if st is not None and st.code != Code.Success:
                if st.is_rejected():
                    return st.with_plugin(pl.name())
                return as_status(f"running Reserve plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            pl.unreserve(state, pod, node_name)

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        """None: allowed. Wait: a WaitingPod is registered (see get_waiting_pod). Otherwise rejected."""
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            st, timeout = pl.permit(state, pod, node_name)
            if st is None or st.code == Code.Success:
                continue
            if st.is_rejected():
                return st.with_plugin(pl.name())
            if st.code == Code.Wait:
                waits[pl.name()] = min(float(timeout or 0), MAX_PERMIT_TIMEOUT_SECONDS)
                continue
            return as_status(f"running Permit plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
        if waits:
            self.waiting_pods[pod.uid or pod.key] = WaitingPod(pod, waits)
            return Status.new(Code.Wait, f"one or more plugins asked to wait and no plugin rejected pod {_q(pod.name)}")
        return None

    def wait_on_permit_status(self, pod: PodInfo) -> Optional[Status]:
        """The final Permit verdict of a waiting pod once it is done (upstream WaitOnPermit without
        blocking): None allowed, a rejection, or Wait while still pending."""
        wp = self.waiting_pods.get(pod.uid or pod.key)
        if wp is None:
            return None
        if not wp.done:
            return Status.new(Code.Wait)
        del self.waiting_pods[pod.uid or pod.key]
        st = wp.status
        if st is None or st.is_rejected():
            return st
        return as_status(f"error while waiting on permit for pod {pod.name}")

    def get_waiting_pod(self, uid: str) -> Optional[WaitingPod]:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        for wp in list(self.waiting_pods.values()):
            fn(wp)

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    # -- binding cycle --------------------------------------------------------------------------------
    def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        for pl in self.pre_bind_plugins:
            pre = pl.pre_bind_pre_flight(state, pod, node_name)
            if pre is not None and pre.code == Code.Skip:
                continue
            st = pl.pre_bind(state, pod, node_name)
            if st is not None and st.code != Code.Success:
                if st.is_rejected():
                    return st.with_plugin(pl.name())
                return as_status(f"running PreBind plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
        return None

    def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        """The first bind plugin that does not Skip decides; Skip when none handled the pod."""
        if not self.bind_plugins:
            return Status.new(Code.Skip)
        st: Optional[Status] = None
        for pl in self.bind_plugins:
            st = pl.bind(state, pod, node_name)
            if st is not None and st.code == Code.Skip:
                continue
            if st is not None and st.code != Code.Success:
                if st.is_rejected():
                    return st.with_plugin(pl.name())
                return as_status(f"running Bind plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
            return st
        return st

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)

    # -- pod-group points -----------------------------------------------------------------------------
    def run_placement_generate_plugins(self, state: CycleState, pod_group: PodGroupInfo,
                                       parent: Placement) -> tuple[list[Placement], Optional[Status]]:
        """Each plugin partitions `parent`; with several plugins the placements are the non-empty
        intersections of theirs. No plugin: the parent placement itself."""
        result: Optional[list[Placement]] = None
        for pl in self.placement_generate_plugins:
            placements, st = pl.generate_placements(state, pod_group, parent)
            if st is not None and st.code != Code.Success:
                if st.is_rejected():
                    return [], st.with_plugin(pl.name())
                return [], as_status(f"running PlacementGenerate plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
            if result is None:
                result = list(placements)
                continue
            merged = []
            for a in result:
                names_a = a.node_names()
                for b in placements:
                    nodes = [ni for ni in b.nodes if ni.name in names_a]
                    if nodes:
                        merged.append(Placement(f"{a.name}/{b.name}", nodes))
            result = merged
        return (result if result is not None else [parent]), None

    def run_placement_score_plugins(self, state: CycleState, pod_group: PodGroupInfo,
                                    assignments: Sequence[PodGroupAssignments]) -> tuple[list[int], dict[str, list[int]], Optional[Status]]:
        """Weighted placement scores: (totals, per-plugin scores, status), aligned with `assignments`."""
        per_plugin: dict[str, list[int]] = {}
        totals = [0] * len(assignments)
        for pl in self.placement_score_plugins:
            scores = []
            for a in assignments:
                s, st = pl.score_placement(state, pod_group, a)
                if st is not None and st.code != Code.Success:
                    return [], {}, as_status(f"running PlacementScore plugin {_q(pl.name())}: {st.message()}")
                scores.append(PlacementScore(a.placement, s))
            ext = pl.placement_score_extensions()
            if ext is not None:
                st = ext.normalize_placement_score(state, pod_group, scores)
                if st is not None and st.code != Code.Success:
                    return [], {}, as_status(f"running NormalizePlacementScore on plugin {_q(pl.name())}: {st.message()}")
            w = self.placement_score_plugin_weight.get(pl.name(), 1)
            weighted = [ps.score * w for ps in scores]
            per_plugin[pl.name()] = weighted
            totals = [t + s for t, s in zip(totals, weighted)]
        return totals, per_plugin, None

    def run_placement_feasible_plugins(self, state: CycleState, pod_group: PodGroupInfo,
                                       progress: PlacementProgress) -> Optional[Status]:
        """Unschedulable (abort) wins over Wait (keep going), which wins over Success."""
        wait: Optional[Status] = None
        for pl in self.placement_feasible_plugins:
            st = pl.placement_feasible(state, pod_group, progress)
            if st is None or st.code == Code.Success:
                continue
            if st.code == Code.Wait:
                wait = wait or st.with_plugin(pl.name())
                continue
            if st.is_rejected():
                return st.with_plugin(pl.name())
            return as_status(f"running PlacementFeasible plugin {_q(pl.name())}: {st.message()}").with_plugin(pl.name())
        return wait

    # -- a whole scheduling cycle -------------------------------------------------------------------
    def scheduling_cycle(self, pod: PodInfo | Obj, snapshot: Optional[Snapshot] = None, *,
                         state: Optional[CycleState] = None,
                         assume: Optional[Callable[[PodInfo, str], PodInfo]] = None,
                         forget: Optional[Callable[[PodInfo, str], None]] = None) -> SchedulingCycleResult:
        """Upstream schedulingCycle for one pod: schedule, PostFilter on failure, else assume,
        Reserve and Permit. `assume(pod_info, node) -> assumed PodInfo` defaults to placing the
        pod (with spec.nodeName set) on the snapshot; `forget` undoes it on a later failure."""
        pi = _pod_info(pod)
        state = state or CycleState()
        out = SchedulingCycleResult(pod_info=pi, state=state)
        clear = NominatingInfo("", NominatingMode.ModeOverride)
        try:
            res = self.schedule_pod(state, pi, snapshot)
        except NoNodesAvailableError as e:
            out.status = Status.new(Code.UnschedulableAndUnresolvable).with_error(e)
            out.nominating_info = clear
            return out
        except SchedulingError as e:
            out.status = e.status
            out.nominating_info = clear
            return out
        except FitError as fe:
            out.fit_error = fe
            if not self.post_filter_plugins:
                out.status = Status.new(Code.Unschedulable).with_error(fe)
                return out
            result, st = self.run_post_filter_plugins(state, pi, fe.diagnosis.node_to_status)
            fe.diagnosis.post_filter_msg = st.message()
            out.post_filter_result = result
            out.nominating_info = result.nominating_info if result is not None else None
            out.status = Status.new(Code.Unschedulable).with_error(fe)
            return out
        out.schedule_result = res
        host = res.suggested_host
        snap = self.snapshot_shared_lister()
        if assume is None:
            def assume(p: PodInfo, node: str) -> PodInfo:  # noqa: F811 - the default assumption
                assumed = _assumed_pod_info(p, node)
                snap.add_pod(assumed, node)
                return assumed

            def forget(p: PodInfo, node: str) -> None:  # noqa: F811
                snap.remove_pod(p, node)
        assumed = assume(pi, host)
        out.pod_info = assumed
        out.node_name = host

        def fail(st: Status) -> SchedulingCycleResult:
            if self.batch is not None:
                self.batch.flush()
            self.run_reserve_plugins_unreserve(state, assumed, host)
            if forget is not None:
                forget(assumed, host)
            out.nominating_info = clear
            out.node_name = ""
            if st.is_rejected():
                d = Diagnosis()
                d.node_to_status.set(host, st)
                d.add_plugin_status(st)
                out.fit_error = FitError(pi, 1, d)
                out.status = Status.new(st.code).with_error(out.fit_error)
            else:
                out.status = st
            return out

        st = self.run_reserve_plugins_reserve(state, assumed, host)
        if st is not None:
            return fail(st)
        st = self.run_permit_plugins(state, assumed, host)
        if st is not None and st.code != Code.Wait:
            return fail(st)
        if st is not None:
            out.status = st
            out.waiting_pod = self.waiting_pods.get(assumed.uid or assumed.key)
        return out


def _assumed_pod_info(pi: PodInfo, node_name: str) -> PodInfo:
    return pi.assumed_on(node_name)


def _q(name: str) -> str:
    """Go's %q for a plain name."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ordered_names(plugins: Any) -> list[str]:
    """Every plugin a profile enables, in first-mention order (multiPoint first)."""
    out: list[str] = []
    seen = set()
    for point in ["multiPoint"] + list(EXTENSION_POINTS):
        for ref in plugins.get(point).enabled:
            if ref.name not in seen:
                seen.add(ref.name)
                out.append(ref.name)
    return out
