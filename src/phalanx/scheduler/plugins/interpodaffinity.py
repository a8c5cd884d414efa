"""InterPodAffinity (PreFilter, Filter, PreScore, Score): pod affinity and anti-affinity.

Filter, per node, in this order:
- the pod's required affinity: some pod matching all its terms runs in the node's domain
  ("node(s) didn't match pod affinity rules", UnschedulableAndUnresolvable); the first pod of a
  self-affine group may go anywhere that has the topology labels;
- the pod's required anti-affinity: no matching pod in the node's domain
  ("node(s) didn't match pod anti-affinity rules", Unschedulable);
- existing pods' required anti-affinity must not match the pod
  ("node(s) didn't satisfy existing pods anti-affinity rules", Unschedulable).
Score: preferred (anti-)affinity of the pod and of existing pods (and existing pods' required
affinity with `hardPodAffinityWeight`) summed per topology domain, normalized to 0..100.

PreFilter returns Skip when the pod has no required terms and no existing pod's anti-affinity
matches it; PreScore returns Skip when nothing contributes — plain pods never pay for this plugin.

Args (InterPodAffinityArgs): `hardPodAffinityWeight` (1), `ignorePreferredTermsOfExistingPods`.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.config import default_plugin_args
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (
    UNSIGNABLE,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from phalanx.scheduler.framework.status import Code, Status, as_status
from phalanx.scheduler.framework.affinity import AffinityTerm, WeightedAffinityTerm
from phalanx.scheduler.framework.constants import MAX_NODE_SCORE, Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
PRE_FILTER_STATE_KEY = "PreFilter" + names.InterPodAffinity
PRE_SCORE_STATE_KEY = "PreScore" + names.InterPodAffinity

TopologyCounts = dict[tuple[str, str], int]


def pod_matches_all_affinity_terms(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """True when the pod matches every term (and there is at least one)."""
    if not terms:
        return False
    for t in terms:
        if not t.matches(pod, None):
            return False
    return True


def _bump(m: TopologyCounts, pair: tuple[str, str], value: int) -> None:
    v = m.get(pair, 0) + value
    if v == 0:
        m.pop(pair, None)
    else:
        m[pair] = v


def update_with_affinity_terms(m: TopologyCounts, terms: Sequence[AffinityTerm], pod: PodInfo, ni: NodeInfo,
                               value: int) -> None:
    if pod_matches_all_affinity_terms(terms, pod):
        labels = ni.labels
        for t in terms:
            tv = labels.get(t.topology_key)
            if tv is not None:
                _bump(m, (t.topology_key, tv), value)


def update_with_anti_affinity_terms(m: TopologyCounts, terms: Sequence[AffinityTerm], pod: PodInfo,
                                    ns_labels: Optional[Mapping[str, str]], ni: NodeInfo, value: int) -> None:
    labels = ni.labels
    for t in terms:
        if t.matches(pod, ns_labels):
            tv = labels.get(t.topology_key)
            if tv is not None:
                _bump(m, (t.topology_key, tv), value)


class PreFilterState:
    __slots__ = ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts", "pod_info",
                 "affinity_terms", "anti_affinity_terms", "namespace_labels")

    def __init__(self) -> None:
        self.existing_anti_affinity_counts: TopologyCounts = {}
        self.affinity_counts: TopologyCounts = {}
        self.anti_affinity_counts: TopologyCounts = {}
        self.pod_info: Optional[PodInfo] = None
        self.affinity_terms: list[AffinityTerm] = []
        self.anti_affinity_terms: list[AffinityTerm] = []
        self.namespace_labels: Optional[Mapping[str, str]] = None

    def clone(self) -> "PreFilterState":
        c = PreFilterState()
        c.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        c.affinity_counts = dict(self.affinity_counts)
        c.anti_affinity_counts = dict(self.anti_affinity_counts)
        c.pod_info = self.pod_info
        c.affinity_terms = self.affinity_terms
        c.anti_affinity_terms = self.anti_affinity_terms
        c.namespace_labels = self.namespace_labels
        return c

    def update_with_pod(self, updated: PodInfo, ni: NodeInfo, multiplier: int) -> None:
        assert self.pod_info is not None
        update_with_anti_affinity_terms(self.existing_anti_affinity_counts, updated.required_anti_affinity_terms,
                                        self.pod_info, self.namespace_labels, ni, multiplier)
        update_with_affinity_terms(self.affinity_counts, self.affinity_terms, updated, ni, multiplier)
        update_with_anti_affinity_terms(self.anti_affinity_counts, self.anti_affinity_terms, updated, None, ni, multiplier)


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreFilterExtensions, PreScorePlugin, ScorePlugin,
                       ScoreExtensions, EnqueueExtensions):
    NAME = names.InterPodAffinity

    SIGNATURE_DEPENDS_ON_CLUSTER = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching: (anti-)affinity depends on pods across the cluster, so a pod with terms, or
        any pod while some existing pod has terms, is unsignable; otherwise nothing."""
        if pod.has_affinity or pod.parse_error:
            return UNSIGNABLE
        snap = self.handle.snapshot_shared_lister()
        if snap.have_pods_with_affinity_list() or snap.have_pods_with_required_anti_affinity_list():
            return UNSIGNABLE
        return None

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        self.hard_pod_affinity_weight = int(args.get("hardPodAffinityWeight", 1))
        self.ignore_preferred_terms_of_existing_pods = bool(args.get("ignorePreferredTermsOfExistingPods"))
        self._st_affinity = Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH).with_plugin(self.NAME)
        self._st_anti = Status.new(Code.Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH).with_plugin(self.NAME)
        self._st_existing = Status.new(Code.Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH).with_plugin(self.NAME)

    def _merge_namespaces(self, terms: Sequence[AffinityTerm]) -> list[AffinityTerm]:
        """Resolve each term's namespaceSelector into namespace names (when namespaces are known)."""
        all_ns = self.handle.namespaces()
        out = []
        for t in terms:
            if t.namespace_selector.empty or all_ns is None:
                out.append(t)
                continue
            sel = t.namespace_selector
            out.append(t.with_namespaces(n for n, labels in all_ns.items() if sel.matches(labels)))
        return out

    # -- PreFilter / Filter ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        if pod.parse_error:
            return None, Status.new(Code.UnschedulableAndUnresolvable, f"parsing pod: {pod.parse_error}")
        snap = self.handle.snapshot_shared_lister()
        with_anti = snap.have_pods_with_required_anti_affinity_list()
        if not pod.required_affinity_terms and not pod.required_anti_affinity_terms and not with_anti:
            return None, Status.new(Code.Skip)
        s = PreFilterState()
        s.pod_info = pod
        s.affinity_terms = self._merge_namespaces(pod.required_affinity_terms)
        s.anti_affinity_terms = self._merge_namespaces(pod.required_anti_affinity_terms)
        s.namespace_labels = self.handle.namespace_labels(pod.namespace)
        for ni in with_anti:
            for existing in ni.pods_with_required_anti_affinity:
                update_with_anti_affinity_terms(s.existing_anti_affinity_counts, existing.required_anti_affinity_terms,
                                                pod, s.namespace_labels, ni, 1)
        if s.affinity_terms or s.anti_affinity_terms:
            for ni in snap.list():
                for existing in ni.pods:
                    if s.affinity_terms:
                        update_with_affinity_terms(s.affinity_counts, s.affinity_terms, existing, ni, 1)
                    if s.anti_affinity_terms:
                        update_with_anti_affinity_terms(s.anti_affinity_counts, s.anti_affinity_terms, existing,
                                                        None, ni, 1)
        if not s.existing_anti_affinity_counts and not s.affinity_terms and not s.anti_affinity_terms:
            return None, Status.new(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Optional[Status]:
        s: Optional[PreFilterState] = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return as_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        s.update_with_pod(pod_info_to_add, node_info, 1)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Optional[Status]:
        s: Optional[PreFilterState] = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return as_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        s.update_with_pod(pod_info_to_remove, node_info, -1)
        return None

    @staticmethod
    def _satisfy_pod_affinity(s: PreFilterState, ni: NodeInfo) -> bool:
        pods_exist = True
        labels = ni.labels
        for t in s.affinity_terms:
            tv = labels.get(t.topology_key)
            if tv is None:
                return False  # all topology labels must exist on the node
            if s.affinity_counts.get((t.topology_key, tv), 0) <= 0:
                pods_exist = False
        if not pods_exist:
            # The first pod of a group with affinity to itself: allowed when no pod matches yet.
            assert s.pod_info is not None
            return not s.affinity_counts and pod_matches_all_affinity_terms(s.affinity_terms, s.pod_info)
        return True

    @staticmethod
    def _satisfy_pod_anti_affinity(s: PreFilterState, ni: NodeInfo) -> bool:
        if s.anti_affinity_counts:
            labels = ni.labels
            for t in s.anti_affinity_terms:
                tv = labels.get(t.topology_key)
                if tv is not None and s.anti_affinity_counts.get((t.topology_key, tv), 0) > 0:
                    return False
        return True

    @staticmethod
    def _satisfy_existing_pods_anti_affinity(s: PreFilterState, ni: NodeInfo) -> bool:
        counts = s.existing_anti_affinity_counts
        if counts:
            for pair in ni.labels.items():
                if counts.get(pair, 0) > 0:
                    return False
        return True

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        s: Optional[PreFilterState] = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return as_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not self._satisfy_pod_affinity(s, node_info):
            return self._st_affinity
        if not self._satisfy_pod_anti_affinity(s, node_info):
            return self._st_anti
        if not self._satisfy_existing_pods_anti_affinity(s, node_info):
            return self._st_existing
        return None

    # -- PreScore / Score --------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        if not nodes:
            return None
        affinity = pod.spec.get("affinity") or {}
        has_pref_aff = bool(((affinity.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")))
        has_pref_anti = bool(((affinity.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")))
        has_constraints = has_pref_aff or has_pref_anti
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.new(Code.Skip)
        snap = self.handle.snapshot_shared_lister()
        all_nodes = snap.list() if has_constraints else snap.have_pods_with_affinity_list()
        tally = _PreScoreTally(
            pod, self.handle.namespace_labels(pod.namespace),
            [WeightedAffinityTerm(t, w) for t, w in zip(
                self._merge_namespaces([wt.term for wt in pod.preferred_affinity_terms]),
                [wt.weight for wt in pod.preferred_affinity_terms])],
            [WeightedAffinityTerm(t, w) for t, w in zip(
                self._merge_namespaces([wt.term for wt in pod.preferred_anti_affinity_terms]),
                [wt.weight for wt in pod.preferred_anti_affinity_terms])],
            self.hard_pod_affinity_weight, self.ignore_preferred_terms_of_existing_pods)
        for ni in all_nodes:
            labels = ni.labels
            if not labels:
                continue
            for existing in (ni.pods if has_constraints else ni.pods_with_affinity):
                tally.add(existing, labels)
        if not tally.score:
            return Status.new(Code.Skip)
        state.write(PRE_SCORE_STATE_KEY, tally.score)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        score: Optional[dict[str, dict[str, int]]] = state.get(PRE_SCORE_STATE_KEY)
        if score is None:
            return 0, as_status(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        total = 0
        labels = node_info.labels
        for key, values in score.items():
            v = labels.get(key)
            if v is not None:
                total += values.get(v, 0)
        return total, None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int],
                        nodes: Sequence[NodeInfo]) -> Optional[Status]:
        if not state.get(PRE_SCORE_STATE_KEY) or not scores:
            return None
        lo, hi = min(scores), max(scores)
        diff = hi - lo
        for i, s in enumerate(scores):
            scores[i] = int(MAX_NODE_SCORE * ((s - lo) / diff)) if diff > 0 else 0
        return None

    # -- requeueing --------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
                                 self._after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                                 self._after_node_change),
        ]

    def _after_pod_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        target = PodInfo(pod)
        for obj in (old, new):
            if obj is None:
                continue
            other = PodInfo(obj)
            if other.uid and other.uid == target.uid:
                continue
            for t in target.required_affinity_terms + target.required_anti_affinity_terms:
                if t.matches(other, None):
                    return QueueingHint.Queue
            for t in other.required_anti_affinity_terms:
                if t.matches(target, None):
                    return QueueingHint.Queue if new is None else QueueingHint.QueueSkip
        return QueueingHint.QueueSkip

    def _after_node_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        target = PodInfo(pod)
        keys = {t.topology_key for t in target.required_affinity_terms + target.required_anti_affinity_terms}
        if not keys:
            return QueueingHint.Queue if old is None else QueueingHint.QueueSkip
        new_labels = ((new or {}).get("metadata") or {}).get("labels") or {}
        old_labels = ((old or {}).get("metadata") or {}).get("labels") or {}
        if old is None:
            return QueueingHint.Queue if keys & set(new_labels) else QueueingHint.QueueSkip
        return QueueingHint.Queue if any(new_labels.get(k) != old_labels.get(k) for k in keys) else QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(default_plugin_args(names.InterPodAffinity, args) or {}, handle)


class _PreScoreTally:
    """PreScore's sums per topology key and value: the incoming pod's preferred terms against each
    existing pod, and each existing pod's terms against the incoming pod."""

    def __init__(self, pod: PodInfo, ns_labels: Optional[Mapping[str, str]], pref_aff: list[WeightedAffinityTerm],
                 pref_anti: list[WeightedAffinityTerm], hard_weight: int, ignore_existing_preferred: bool):
        self.pod = pod
        self.ns_labels = ns_labels
        self.pref_aff = pref_aff
        self.pref_anti = pref_anti
        self.hard_weight = hard_weight
        self.ignore_existing_preferred = ignore_existing_preferred
        self.score: dict[str, dict[str, int]] = {}

    def _process(self, term: AffinityTerm, weight: int, target: PodInfo, target_ns: Optional[Mapping[str, str]],
                 labels: Mapping[str, str], multiplier: int) -> None:
        if term.matches(target, target_ns):
            tv = labels.get(term.topology_key)
            if tv is not None:
                m = self.score.setdefault(term.topology_key, {})
                m[tv] = m.get(tv, 0) + weight * multiplier

    def add(self, existing: PodInfo, labels: Mapping[str, str]) -> None:
        for t, w in self.pref_aff:
            self._process(t, w, existing, None, labels, 1)
        for t, w in self.pref_anti:
            self._process(t, w, existing, None, labels, -1)
        if not existing.has_affinity:
            return
        pod, ns_labels = self.pod, self.ns_labels
        if self.hard_weight > 0:
            for t in existing.required_affinity_terms:
                self._process(t, self.hard_weight, pod, ns_labels, labels, 1)
        if not self.ignore_existing_preferred:
            for t, w in existing.preferred_affinity_terms:
                self._process(t, w, pod, ns_labels, labels, 1)
            for t, w in existing.preferred_anti_affinity_terms:
                self._process(t, w, pod, ns_labels, labels, -1)
