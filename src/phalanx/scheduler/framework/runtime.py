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

import inspect
import logging
import operator
import random
from itertools import repeat
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence

from phalanx.machinery.featuregates import FeatureGates

from .batch import OpportunisticBatch
from .config import KubeSchedulerProfile, default_profile
from .constants import MAX_NODE_SCORE, MIN_NODE_SCORE, Obj
from .construction import FrameworkPlugins
from .cycle_state import CycleState
from .diagnosis import Diagnosis, FitError, NodeToStatus, NoNodesAvailableError, SchedulingError
from .interface import (
    MAX_PERMIT_TIMEOUT_SECONDS,
    UNSIGNABLE,
    BindPlugin,
    FilterPlugin,
    NominatingInfo,
    NominatingMode,
    PermitPlugin,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
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
    WaitingPod,
    merge_pre_filter_results,
)
from .nominator import Nominator
from .podgroup_points import PodGroupExtensionPoints
from .registry import Registry, in_tree_registry
from .results import ScheduleResult, SchedulingCycleResult, ScoreResult
from .services import ApiCall, EventRecorder, HandleServices, PodGroupLister
from .snapshot import Snapshot
from .status import Code, Status, as_status, go_quote
from .types import NodeInfo, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    from phalanx.client.clock import Clock
    from phalanx.client.informer import InformerFactory
    from phalanx.client.interface import Client

    from .dra_manager import DRAManager

log = logging.getLogger("phalanx.scheduler.framework")

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
_MIN_CHUNK = 64
_REJECT_CODES = (Code.Unschedulable, Code.UnschedulableAndUnresolvable, Code.Pending)


def go_string_list(items: Iterable[str]) -> str:
    """A Go `%v` of a []string: "[a b c]"."""
    return "[" + " ".join(items) + "]"


def _pod_info(pod: PodInfo | Obj) -> PodInfo:
    return pod if isinstance(pod, PodInfo) else PodInfo(pod)


# -- the framework ---------------------------------------------------------------------------------

class Framework(FrameworkPlugins, PodGroupExtensionPoints):
    """One profile's plugins, and the Handle given to them."""

    def __init__(self, profile: Optional[KubeSchedulerProfile] = None, *, registry: Optional[Registry] = None,
                 feature_gates: Optional[FeatureGates] = None, snapshot: Optional[Snapshot] = None,
                 nominator: Optional[Nominator] = None, services: Optional[HandleServices] = None, namespaces: Optional[Mapping[str, Mapping[str, str]] | Callable[[], Mapping[str, Mapping[str, str]]]] = None,
                 pod_disruption_budgets: Optional[Callable[[], list[Obj]] | list[Obj]] = None,
                 default_spread_selector: Optional[Callable[[PodInfo], Any]] = None,
                 percentage_of_nodes_to_score: Optional[int] = None, seed: int = 0):
        self.feature_gates = feature_gates or FeatureGates()
        self.profile = profile or default_profile(self.feature_gates)
        self.profile_name = self.profile.scheduler_name
        self.registry = registry if registry is not None else in_tree_registry()
        self.snapshot: Optional[Snapshot] = snapshot
        self.nominator = nominator
        self.services = services or HandleServices()
        self._event_recorder = EventRecorder(self.services.client, self.profile_name)
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

    def add_nominated_pod(self, pod: PodInfo, node_name: str = "") -> None:
        if self.nominator is not None:
            self.nominator.add_nominated_pod(pod, node_name)

    def delete_nominated_pod_if_exists(self, pod: PodInfo) -> None:
        if self.nominator is not None:
            self.nominator.delete_nominated_pod_if_exists(pod)

    def client(self) -> Optional["Client"]:
        return self.services.client

    def shared_informer_factory(self) -> Optional["InformerFactory"]:
        return self.services.informer_factory

    def event_recorder(self) -> EventRecorder:
        return self._event_recorder

    def shared_dra_manager(self) -> Optional["DRAManager"]:
        return self.services.dra_manager

    def pod_group_lister(self) -> Optional[PodGroupLister]:
        return self.services.pod_groups

    def clock(self) -> "Clock":
        return self.services.clock

    def spawn_api_call(self, call: ApiCall) -> None:
        """Run an API write off the scheduling cycle (the scheduler's `wait_idle` waits for it)."""
        self.services.spawn_api_call(call)

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
            return as_status(f"running PreEnqueue plugin {go_quote(pl.name())}: {st.message()}").with_plugin(pl.name())
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
                return None, as_status(f"running PreFilter plugin {go_quote(name)}: {st.message()}").with_plugin(name), []
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
                return as_status(f"running AddPod on PreFilter plugin {go_quote(name)}: {st.message()}")
        return None

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo, pod_info_to_remove: PodInfo,
                                            node_info: NodeInfo) -> Optional[Status]:
        skip = state.skip_filter_plugins
        for name, ext in self._pre_filter_extensions:
            if ext is None or name in skip:
                continue
            st = ext.remove_pod(state, pod, pod_info_to_remove, node_info)
            if st is not None and st.code != Code.Success:
                return as_status(f"running RemovePod on PreFilter plugin {go_quote(name)}: {st.message()}")
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
                    st = as_status(f"running {go_quote(name)} filter plugin: {st.message()}")
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
        names: Optional[Callable[[], set[str]]] = getattr(n, "nominated_node_names", None)
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
        filters = self._active_filters(state)
        nominated = self._nominated_node_names()
        statuses = diagnosis.node_to_status
        feasible: list[NodeInfo] = []
        done = 0
        while done < n and len(feasible) < num_to_find:
            need = num_to_find - len(feasible)
            size = min(max(need, _MIN_CHUNK), n - done)
            chunk = _ring_slice(nodes, (start + done) % n, size)
            done += size
            rejected = self._filter_chunk(state, pod, chunk, filters, nominated)
            cut = _cut_after_feasible(rejected, size, need)
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

    def _active_filters(self, state: CycleState) -> list[tuple[str, FilterPlugin]]:
        """(name, plugin) of the Filter plugins PreFilter did not skip for this cycle."""
        skip = state.skip_filter_plugins
        return [(pl.NAME or pl.name(), pl) for pl in self.filter_plugins if (pl.NAME or pl.name()) not in skip]

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
            _claim_rejections(name, rej)
            if index is None:
                rejected.update(rej)
            else:
                rejected.update([(index[k], st) for k, st in rej])
            bad = {k for k, _ in rej}
            keep = [k for k in range(len(cand)) if k not in bad]
            index = keep if index is None else [index[k] for k in keep]
            cand = [cand[k] for k in keep]
        if nominated:
            self._refilter_with_nominated_pods(state, pod, chunk, nominated, rejected)
        return rejected

    def _refilter_with_nominated_pods(self, state: CycleState, pod: PodInfo, chunk: Sequence[NodeInfo],
                                      nominated: set[str], rejected: dict[int, Status]) -> None:
        """Nodes with nominated pods: the verdict counts those pods too (upstream's two-pass Filter)."""
        for j, ni in enumerate(chunk):
            if ni.name in nominated:
                st = self.run_filter_plugins_with_nominated_pods(state, pod, ni)
                if st is None or st.code == Code.Success:
                    rejected.pop(j, None)
                elif st.code not in _REJECT_CODES:
                    raise SchedulingError(st)
                else:
                    rejected[j] = st

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
                return as_status(f"running PreScore plugin {go_quote(pl.name())}: {st.message()}")
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
                return None, as_status(f"running Score plugin {go_quote(name)}: {st.message()}")
            ext = pl.score_extensions()
            if ext is not None:
                st = ext.normalize_score(state, pod, scores, nodes)
                if st is not None and st.code != Code.Success:
                    return None, as_status(f"running Normalize on Score plugin {go_quote(name)}: {st.message()}")
            if scores:
                lo, hi = min(scores), max(scores)
                if hi > MAX_NODE_SCORE or lo < MIN_NODE_SCORE:
                    bad = hi if hi > MAX_NODE_SCORE else lo
                    return None, as_status(f"plugin {go_quote(name)} returns an invalid score {bad}, it should in the range of "
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
                return as_status(f"running Reserve plugin {go_quote(pl.name())}: {st.message()}").with_plugin(pl.name())
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
            return as_status(f"running Permit plugin {go_quote(pl.name())}: {st.message()}").with_plugin(pl.name())
        if waits:
            self.waiting_pods[pod.uid or pod.key] = WaitingPod(pod, waits)
            return Status.new(Code.Wait, f"one or more plugins asked to wait and no plugin rejected pod {go_quote(pod.name)}")
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

    # -- binding cycle --------------------------------------------------------------------------------
    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        """PreBind in order, skipping plugins whose pre-flight says Skip; a plugin may be a
        coroutine. The first failure stops: a rejection as the plugin said it, anything else an
        Error naming the plugin."""
        for pl in self.pre_bind_plugins:
            pre = pl.pre_bind_pre_flight(state, pod, node_name)
            if pre is not None and pre.code == Code.Skip:
                continue
            st = pl.pre_bind(state, pod, node_name)
            if inspect.isawaitable(st):
                st = await st
            if st is not None and not st.is_success():
                return st.with_plugin(pl.name()) if st.is_rejected() else Status.new(
                    Code.Error, f"running PreBind plugin {go_quote(pl.name())}: {st.message()}")
        return None

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        """The first bind plugin that does not Skip decides (its status as is); an Error when
        every plugin skipped."""
        for pl in self.bind_plugins:
            st = pl.bind(state, pod, node_name)
            if inspect.isawaitable(st):
                st = await st
            if st is not None and st.code == Code.Skip:
                continue
            return st
        return Status.new(Code.Error, "no bind plugin bound the pod")

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """PostBind is informational: a plugin's exception is logged, the others still run."""
        for pl in self.post_bind_plugins:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception:  # pragma: no cover
                log.exception("PostBind")

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

        reserve_st = self.run_reserve_plugins_reserve(state, assumed, host)
        if reserve_st is not None:
            return fail(reserve_st)
        permit_st = self.run_permit_plugins(state, assumed, host)
        if permit_st is not None and permit_st.code != Code.Wait:
            return fail(permit_st)
        if permit_st is not None:
            out.status = permit_st
            out.waiting_pod = self.waiting_pods.get(assumed.uid or assumed.key)
        return out


def _ring_slice(nodes: Sequence[NodeInfo], lo: int, size: int) -> Sequence[NodeInfo]:
    """`size` nodes from `lo`, wrapping around the end of the list."""
    hi = lo + size
    n = len(nodes)
    return nodes[lo:hi] if hi <= n else list(nodes[lo:]) + list(nodes[:hi - n])


def _cut_after_feasible(rejected: dict[int, Status], size: int, need: int) -> int:
    """How much of a chunk to keep: up to its `need`-th feasible node (all of it when fewer pass)."""
    if size - len(rejected) <= need:
        return size
    count = 0
    for j in range(size):
        if j not in rejected:
            count += 1
            if count == need:
                return j + 1
    return size


def _claim_rejections(name: str, rejections: list[tuple[int, Status]]) -> None:
    """A Filter plugin's rejections carry its name; anything but a rejection aborts the cycle."""
    for st in {id(st): st for _, st in rejections}.values():
        if st.code not in _REJECT_CODES:
            raise SchedulingError(as_status(f"running {go_quote(name)} filter plugin: {st.message()}"))
        if st.plugin is None:
            st.plugin = name


def _assumed_pod_info(pi: PodInfo, node_name: str) -> PodInfo:
    return pi.assumed_on(node_name)
