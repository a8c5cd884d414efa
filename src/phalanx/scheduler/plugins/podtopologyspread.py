"""PodTopologySpread (PreFilter, Filter, PreScore, Score): spread matching pods evenly across
topology domains.

Hard constraints (`whenUnsatisfiable: DoNotSchedule`) filter: placing the pod must keep
`matching pods in the node's domain + (1 if the pod matches) - global minimum <= maxSkew`
("node(s) didn't match pod topology spread constraints"; a node without the topology label:
"... (missing required label)"). Soft ones (`ScheduleAnyway`) score: fewer matching pods in a
domain is better, weighted by log(domains + 2).

A pod without constraints gets the default constraints (args `defaultingType: System`: hostname
maxSkew 3 and zone maxSkew 5, both ScheduleAnyway) only when the handle provides a selector for it
(upstream builds it from the Services/ReplicaSets/StatefulSets/ReplicationControllers selecting
the pod: `Framework(default_spread_selector=...)`). PreFilter / PreScore return Skip when there is
nothing to enforce, so plain pods never run this plugin's Filter or Score.

Args (PodTopologySpreadArgs): `defaultConstraints`, `defaultingType` (System | List).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

from phalanx.machinery.selectors import EQUALS, LabelSelector, Requirement, label_selector_from_object
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
from phalanx.scheduler.framework.affinity import RequiredNodeAffinity
from phalanx.scheduler.framework.constants import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, MAX_NODE_SCORE, Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.taints import Toleration, do_not_schedule_taint, find_matching_untolerated_taint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
PRE_FILTER_STATE_KEY = "PreFilter" + names.PodTopologySpread
PRE_SCORE_STATE_KEY = "PreScore" + names.PodTopologySpread
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
_MAX_INT32 = (1 << 31) - 1

SYSTEM_DEFAULT_CONSTRAINTS = [
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
]


class SpreadConstraint:
    """A parsed TopologySpreadConstraint."""

    __slots__ = ("max_skew", "topology_key", "selector", "min_domains", "node_affinity_policy", "node_taints_policy")

    def __init__(self, max_skew: int, topology_key: str, selector: LabelSelector, min_domains: int = 1,
                 node_affinity_policy: str = HONOR, node_taints_policy: str = IGNORE):
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.node_affinity_policy = node_affinity_policy
        self.node_taints_policy = node_taints_policy

    def with_selector(self, selector: LabelSelector) -> "SpreadConstraint":
        return SpreadConstraint(self.max_skew, self.topology_key, selector, self.min_domains,
                                self.node_affinity_policy, self.node_taints_policy)

    def match_node_inclusion_policies(self, pod: PodInfo, ni: NodeInfo, required: RequiredNodeAffinity) -> bool:
        if self.node_affinity_policy == HONOR and not required.match(ni):
            return False
        if self.node_taints_policy == HONOR and ni.hard_taints:
            if find_matching_untolerated_taint(ni.hard_taints, pod.tolerations, do_not_schedule_taint) is not None:
                return False
        return True

    def __repr__(self) -> str:
        return f"SpreadConstraint({self.topology_key!r}, maxSkew={self.max_skew}, selector={str(self.selector)!r})"


def _merge_match_label_keys(match_labels: dict[str, str], selector: LabelSelector) -> LabelSelector:
    if selector.is_nothing:
        return selector
    reqs = [Requirement(k, EQUALS, [v]) for k, v in match_labels.items()]
    return LabelSelector(reqs + list(selector.requirements))


def filter_constraints(raw: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str,
                       match_label_keys: bool = True) -> list[SpreadConstraint]:
    out = []
    for c in raw or ():
        if (c.get("whenUnsatisfiable") or DO_NOT_SCHEDULE) != action:
            continue
        selector = label_selector_from_object(c.get("labelSelector"))
        keys = c.get("matchLabelKeys")
        if match_label_keys and keys:
            ml = {k: pod_labels[k] for k in keys if k in pod_labels}
            if ml:
                selector = _merge_match_label_keys(ml, selector)
        min_domains = c.get("minDomains")
        out.append(SpreadConstraint(int(c.get("maxSkew") or 0), c.get("topologyKey") or "", selector,
                                    int(min_domains) if min_domains is not None else 1,
                                    c.get("nodeAffinityPolicy") or HONOR, c.get("nodeTaintsPolicy") or IGNORE))
    return out


def node_labels_match_spread_constraints(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    for c in constraints:
        if c.topology_key not in labels:
            return False
    return True


def count_pods_match_selector(pods: Sequence[PodInfo], selector: LabelSelector, namespace: str) -> int:
    if selector.empty:
        return 0
    match = selector.matches
    n = 0
    for p in pods:
        if p.namespace != namespace or p.deletion_timestamp is not None:
            continue
        if match(p.labels):
            n += 1
    return n


class CriticalPaths:
    """The two domains with the fewest matching pods; [0] always holds the minimum."""

    __slots__ = ("values", "nums")

    def __init__(self) -> None:
        self.values = ["", ""]
        self.nums = [_MAX_INT32, _MAX_INT32]

    def update(self, value: str, num: int) -> None:
        v, n = self.values, self.nums
        i = 0 if value == v[0] else 1 if value == v[1] else -1
        if i >= 0:
            n[i] = num
            if n[0] > n[1]:
                v[0], v[1] = v[1], v[0]
                n[0], n[1] = n[1], n[0]
        elif num < n[0]:
            v[1], n[1] = v[0], n[0]
            v[0], n[0] = value, num
        elif num < n[1]:
            v[1], n[1] = value, num

    def clone(self) -> "CriticalPaths":
        c = CriticalPaths()
        c.values = list(self.values)
        c.nums = list(self.nums)
        return c

    def __repr__(self) -> str:
        return f"CriticalPaths({list(zip(self.values, self.nums))!r})"


class PreFilterState:
    """Matching pods per topology domain (topology key -> value -> count; upstream keys it by
    (key, value) pairs, so constraints sharing a key share counts), the two least-loaded domains
    per key, and the number of domains per key."""

    __slots__ = ("constraints", "tp_key_to_critical_paths", "counts")

    def __init__(self, constraints: list[SpreadConstraint]):
        self.constraints = constraints
        self.tp_key_to_critical_paths: dict[str, CriticalPaths] = {}
        self.counts: dict[str, dict[str, int]] = {}

    def min_match_num(self, key: str, min_domains: int) -> int:
        paths = self.tp_key_to_critical_paths[key]
        if len(self.counts.get(key, ())) < min_domains:
            return 0  # fewer eligible domains than minDomains: the global minimum counts as 0
        return paths.nums[0]

    def clone(self) -> "PreFilterState":
        c = PreFilterState(self.constraints)
        c.tp_key_to_critical_paths = {k: p.clone() for k, p in self.tp_key_to_critical_paths.items()}
        c.counts = {k: dict(v) for k, v in self.counts.items()}
        return c


class PreScoreState:
    __slots__ = ("constraints", "ignored_nodes", "topology_value_to_pod_counts", "topology_normalizing_weight")

    def __init__(self) -> None:
        self.constraints: list[SpreadConstraint] = []
        self.ignored_nodes: set[str] = set()
        self.topology_value_to_pod_counts: list[dict[str, int]] = []
        self.topology_normalizing_weight: list[float] = []


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def score_for_count(cnt: int, max_skew: int, tp_weight: float) -> float:
    return cnt * tp_weight + (max_skew - 1)


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreFilterExtensions, PreScorePlugin, ScorePlugin,
                        ScoreExtensions, EnqueueExtensions):
    NAME = names.PodTopologySpread

    SIGNATURE_DEPENDS_ON_CLUSTER = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching: spreading depends on where matching pods are across the cluster, so a pod
        with constraints (its own or the defaulted ones) is unsignable; otherwise nothing."""
        if pod.spec.get("topologySpreadConstraints"):
            return UNSIGNABLE
        if self.default_constraints:  # defaulted constraints apply when a selector is derived
            selector = self.handle.default_spread_selector(pod)
            if selector is not None and not selector.empty:
                return UNSIGNABLE
        return None

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        self.system_defaulted = args.get("defaultingType") == "System"
        self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else list(args.get("defaultConstraints") or [])
        self.match_label_keys = handle.feature_enabled("MatchLabelKeysInPodTopologySpread")
        self._status_not_match = Status.new(Code.Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH).with_plugin(self.NAME)
        self._status_label = Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH).with_plugin(self.NAME)

    # -- constraints -------------------------------------------------------------------------------
    def _constraints(self, pod: PodInfo, action: str) -> list[SpreadConstraint]:
        raw = pod.spec.get("topologySpreadConstraints")
        if raw:
            key = "PodTopologySpread/" + action
            cached = pod.cache.get(key)
            if cached is None:
                cached = pod.cache[key] = filter_constraints(raw, pod.labels, action, self.match_label_keys)
            return cached
        return self._default_constraints(pod, action)

    def _default_constraints(self, pod: PodInfo, action: str) -> list[SpreadConstraint]:
        if not self.default_constraints:
            return []
        constraints = filter_constraints(self.default_constraints, pod.labels, action, False)
        if not constraints:
            return []
        selector = self.handle.default_spread_selector(pod)
        if selector is None or selector.empty:
            return []
        return [c.with_selector(selector) for c in constraints]

    # -- PreFilter / Filter ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as e:
            return None, as_status(f"obtaining pod's hard topology spread constraints: {e}")
        if not constraints:
            return None, Status.new(Code.Skip)
        s = PreFilterState(constraints)
        required = pod.required_node_affinity()
        ns = pod.namespace
        tolerations = pod.tolerations
        nodes_all = self.handle.snapshot_shared_lister().list()
        keys = [c.topology_key for c in constraints]
        for c in constraints:
            s.counts.setdefault(c.topology_key, {})
        plan = [(s.counts[c.topology_key], c.topology_key, c.selector,
                 c.node_affinity_policy == HONOR and not required.is_empty(),
                 c.node_taints_policy == HONOR) for c in constraints]
        if len(plan) == 1 and not plan[0][3] and not plan[0][4]:
            _count_one_constraint(nodes_all, plan[0][0], plan[0][1], plan[0][2], ns)
        else:
            _count_constraints(nodes_all, constraints, plan, required, tolerations, ns)
        for key in keys:
            paths = s.tp_key_to_critical_paths[key] = CriticalPaths()
            for value, num in s.counts[key].items():
                paths.update(value, num)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Optional[Status]:
        self._update_with_pod(state.get(PRE_FILTER_STATE_KEY), pod_info_to_add, pod_to_schedule, node_info, 1)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Optional[Status]:
        self._update_with_pod(state.get(PRE_FILTER_STATE_KEY), pod_info_to_remove, pod_to_schedule, node_info, -1)
        return None

    @staticmethod
    def _update_with_pod(s: Optional[PreFilterState], updated: PodInfo, preemptor: PodInfo, ni: NodeInfo,
                         delta: int) -> None:
        if s is None or updated.namespace != preemptor.namespace or ni.node is None:
            return
        if not node_labels_match_spread_constraints(ni.labels, s.constraints):
            return
        required = preemptor.required_node_affinity()
        for c in s.constraints:
            if not c.selector.matches(updated.labels):
                continue
            if not c.match_node_inclusion_policies(preemptor, ni, required):
                continue
            value = ni.labels[c.topology_key]
            per_value = s.counts.setdefault(c.topology_key, {})
            per_value[value] = per_value.get(value, 0) + delta
            s.tp_key_to_critical_paths[c.topology_key].update(value, per_value[value])

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        s: Optional[PreFilterState] = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return as_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not s.constraints:
            return None
        labels = node_info.labels
        for c in s.constraints:
            value = labels.get(c.topology_key)
            if value is None:
                return self._status_label
            min_match = s.min_match_num(c.topology_key, c.min_domains)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            match = s.counts[c.topology_key].get(value, 0)
            if match + self_match - min_match > c.max_skew:
                return self._status_not_match
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        s: Optional[PreFilterState] = state.get(PRE_FILTER_STATE_KEY)
        if s is None or not s.constraints:
            return FilterPlugin.filter_nodes(self, state, pod, nodes)
        # Per constraint: (key, its counts, the most matching pods a domain may already hold).
        plan = [(c.topology_key, s.counts[c.topology_key],
                 c.max_skew + s.min_match_num(c.topology_key, c.min_domains) - (1 if c.selector.matches(pod.labels) else 0))
                for c in s.constraints]
        st_label, st_skew = self._status_label, self._status_not_match
        out = []
        for i, ni in enumerate(nodes):
            labels = ni.labels
            for key, per_value, limit in plan:
                value = labels.get(key)
                if value is None:
                    out.append((i, st_label))
                    break
                if per_value.get(value, 0) > limit:
                    out.append((i, st_skew))
                    break
        return out

    # -- PreScore / Score --------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        all_nodes = self.handle.snapshot_shared_lister().list()
        if not all_nodes:
            return Status.new(Code.Skip)
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as e:
            return as_status(f"calculating preScoreState: obtaining pod's soft topology spread constraints: {e}")
        if not constraints:
            return Status.new(Code.Skip)
        require_all = bool(pod.spec.get("topologySpreadConstraints")) or not self.system_defaulted
        s = PreScoreState()
        s.constraints = constraints
        s.topology_value_to_pod_counts = [{} for _ in constraints]
        topo_size = [0] * len(constraints)
        for ni in nodes:
            if require_all and not node_labels_match_spread_constraints(ni.labels, constraints):
                s.ignored_nodes.add(ni.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue
                value = ni.labels.get(c.topology_key, "")
                counts = s.topology_value_to_pod_counts[i]
                if value not in counts:
                    counts[value] = 0
                    topo_size[i] += 1
        for i, c in enumerate(constraints):
            size = topo_size[i]
            if c.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(s.ignored_nodes)
            s.topology_normalizing_weight.append(topology_normalizing_weight(size))
        required = pod.required_node_affinity()
        for ni in all_nodes:
            labels = ni.labels
            if require_all and not node_labels_match_spread_constraints(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.match_node_inclusion_policies(pod, ni, required):
                    continue
                value = labels.get(c.topology_key, "")
                counts = s.topology_value_to_pod_counts[i]
                if value not in counts:
                    continue
                counts[value] += count_pods_match_selector(ni.pods, c.selector, pod.namespace)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        s: Optional[PreScoreState] = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, as_status(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if node_info.name in s.ignored_nodes:
            return 0, None
        total = 0.0
        labels = node_info.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_match_selector(node_info.pods, c.selector, pod.namespace)
            else:
                cnt = s.topology_value_to_pod_counts[i].get(value, 0)
            total += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i])
        return int(math.floor(total + 0.5)), None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int],
                        nodes: Sequence[NodeInfo]) -> Optional[Status]:
        s: Optional[PreScoreState] = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return None
        ignored = s.ignored_nodes
        valid = [sc for sc, ni in zip(scores, nodes) if ni.name not in ignored]
        min_score = min(valid) if valid else 0
        max_score = max(valid) if valid else 0
        for i, ni in enumerate(nodes):
            if ni.name in ignored:
                scores[i] = 0
            elif max_score == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (max_score + min_score - scores[i]) // max_score
        return None

    # -- requeueing --------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
                                 self._after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.Delete
                                              | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint),
                                 self._after_node_change),
        ]

    def _all_constraints(self, pod: Obj) -> list[SpreadConstraint]:
        pi = PodInfo(pod)
        return self._constraints(pi, DO_NOT_SCHEDULE) + self._constraints(pi, SCHEDULE_ANYWAY)

    def _after_pod_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        changed = new if new is not None else old
        md = (changed or {}).get("metadata") or {}
        if md.get("uid") and md.get("uid") == (pod.get("metadata") or {}).get("uid"):
            return QueueingHint.Queue
        if md.get("namespace") != (pod.get("metadata") or {}).get("namespace"):
            return QueueingHint.QueueSkip
        constraints = self._all_constraints(pod)
        labels_sets = [((o or {}).get("metadata") or {}).get("labels") or {} for o in (old, new) if o is not None]
        for c in constraints:
            if any(c.selector.matches(ls) for ls in labels_sets):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def _after_node_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        constraints = self._all_constraints(pod)
        keys = {c.topology_key for c in constraints}
        new_labels, old_labels = _node_labels(new), _node_labels(old)
        if new is None or old is None:
            node_labels = new_labels if new is not None else old_labels
            return QueueingHint.Queue if keys <= set(node_labels) else QueueingHint.QueueSkip
        if any(new_labels.get(k) != old_labels.get(k) for k in keys):
            return QueueingHint.Queue
        if _node_taints(new) != _node_taints(old):
            return QueueingHint.Queue if any(c.node_taints_policy == HONOR for c in constraints) else QueueingHint.QueueSkip
        return QueueingHint.QueueSkip


def _node_labels(node: Optional[Obj]) -> Mapping[str, str]:
    return ((node or {}).get("metadata") or {}).get("labels") or {}


def _node_taints(node: Obj) -> list:
    return (node.get("spec") or {}).get("taints") or []


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(default_plugin_args(names.PodTopologySpread, args) or {}, handle)


def _count_one_constraint(nodes: Sequence[NodeInfo], per_value: dict[str, int], key: str, selector: LabelSelector,
                          ns: str) -> None:
    """The common shape: one constraint, nothing to exclude nodes by."""
    for ni in nodes:
        value = ni.labels.get(key)
        if value is None:
            continue
        pods = ni.pods
        if pods:
            per_value[value] = per_value.get(value, 0) + count_pods_match_selector(pods, selector, ns)
        elif value not in per_value:
            per_value[value] = 0


def _count_constraints(nodes: Sequence[NodeInfo], constraints: Sequence[SpreadConstraint],
                       plan: list[tuple[dict[str, int], str, LabelSelector, bool, bool]],
                       required: RequiredNodeAffinity, tolerations: tuple[Toleration, ...], ns: str) -> None:
    """Matching pods per topology value for every constraint, on the nodes each one counts."""
    for ni in nodes:
        labels = ni.labels
        if not node_labels_match_spread_constraints(labels, constraints):
            continue
        pods = ni.pods
        for per_value, key, selector, honor_affinity, honor_taints in plan:
            if honor_affinity and not required.match(ni):
                continue
            if honor_taints and ni.hard_taints and find_matching_untolerated_taint(
                    ni.hard_taints, tolerations, do_not_schedule_taint) is not None:
                continue
            value = labels[key]
            per_value[value] = per_value.get(value, 0) + (count_pods_match_selector(pods, selector, ns) if pods else 0)
