"""NodeAffinity (PreFilter, Filter, PreScore, Score): the pod's `nodeSelector` and required node
affinity must match the node ("node(s) didn't match Pod's node affinity/selector"); preferred
terms add their weights to the score (normalized to 0..100).

PreFilter returns Skip for pods with neither, and narrows the candidate nodes when every term
names nodes with `matchFields: metadata.name In [...]` (DaemonSet pods), so the Filter only
looks at those nodes.

Args (NodeAffinityArgs): `addedAffinity` — node affinity every pod of the profile must also match
("node(s) didn't match scheduler-enforced node affinity").
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.machinery.selectors import NodeSelectorTerm, compile_node_selector_term
from phalanx.scheduler.framework.config import default_plugin_args
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from phalanx.scheduler.framework.status import Code, Status, as_status
from phalanx.scheduler.framework.affinity import PreferredSchedulingTerms, RequiredNodeAffinity
from phalanx.scheduler.framework.constants import MAX_NODE_SCORE, Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names
from .helper import default_normalize_score

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
PRE_FILTER_STATE_KEY = "PreFilter" + names.NodeAffinity
PRE_SCORE_STATE_KEY = "PreScore" + names.NodeAffinity


class _NodeSelector:
    """A compiled core NodeSelector: terms are ORed; no term matches nothing."""

    def __init__(self, selector: Mapping[str, Any]):
        self.terms: list[NodeSelectorTerm] = [compile_node_selector_term(t) for t in selector.get("nodeSelectorTerms") or ()]
        errors = [e for t in self.terms for e in t.errors]
        if errors:
            raise ValueError("; ".join(errors))

    def match(self, ni: NodeInfo) -> bool:
        node = ni.node
        assert node is not None, "node affinity is matched against a NodeInfo with its Node"
        return any(t.matches(node) for t in self.terms)


def _preferred(pod: PodInfo) -> Optional[PreferredSchedulingTerms]:
    cached = pod.cache.get("PreferredSchedulingTerms", False)
    if cached is not False:
        return cached
    na = ((pod.spec.get("affinity") or {}).get("nodeAffinity")) or {}
    terms = na.get("preferredDuringSchedulingIgnoredDuringExecution")
    value = PreferredSchedulingTerms(terms) if terms is not None else None
    pod.cache["PreferredSchedulingTerms"] = value
    return value


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions):
    NAME = names.NodeAffinity

    SCORE_DEPENDS_ON_NODE_PODS = False  # preferred terms match node labels only

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: nodeSelector and affinity."""
        return pod.spec_signature("nodeSelector", "affinity")

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        self.added_node_selector: Optional[_NodeSelector] = None
        self.added_pref_sched_terms: Optional[PreferredSchedulingTerms] = None
        added = args.get("addedAffinity")
        if added:
            req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
            if req is not None:
                try:
                    self.added_node_selector = _NodeSelector(req)
                except ValueError as e:
                    raise ValueError(f"parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {e}") from None
            pref = added.get("preferredDuringSchedulingIgnoredDuringExecution")
            if pref:
                try:
                    self.added_pref_sched_terms = PreferredSchedulingTerms(pref)
                except ValueError as e:
                    raise ValueError(f"parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {e}") from None
        self._status_pod = Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_POD).with_plugin(self.NAME)
        self._status_enforced = Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_ENFORCED).with_plugin(self.NAME)

    # -- PreFilter / Filter ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        spec = pod.spec
        required = (((spec.get("affinity") or {}).get("nodeAffinity")) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is None and self.added_node_selector is None and not spec.get("nodeSelector"):
            return None, Status.new(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, pod.required_node_affinity())
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None, None
        node_names: Optional[set[str]] = None
        for t in terms:
            term_names = _term_node_names(t)
            if term_names is None:
                return None, None  # this term allows any node name; terms are ORed
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(node_names), None
        return None, None

    def _required(self, state: CycleState, pod: PodInfo) -> RequiredNodeAffinity:
        r = state.get(PRE_FILTER_STATE_KEY)
        return pod.required_node_affinity() if r is None else r

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        if self.added_node_selector is not None and not self.added_node_selector.match(node_info):
            return self._status_enforced
        if not self._required(state, pod).match(node_info):
            return self._status_pod
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        if self.added_node_selector is not None:
            return FilterPlugin.filter_nodes(self, state, pod, nodes)
        required = self._required(state, pod)
        st = self._status_pod
        if required.terms is None and required.node_selector is not None:
            selector = required.node_selector
            if len(selector) == 1:
                ((key, value),) = selector
                return [(i, st) for i, ni in enumerate(nodes) if ni.labels.get(key) != value]
            return [(i, st) for i, ni in enumerate(nodes)
                    if any(ni.labels.get(k) != v for k, v in selector)]
        match = required.match
        return [(i, st) for i, ni in enumerate(nodes) if not match(ni)]

    # -- Score -------------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        try:
            preferred = _preferred(pod)
        except ValueError as e:
            return as_status(e)
        if preferred is None and self.added_pref_sched_terms is None:
            return Status.new(Code.Skip)
        state.write(PRE_SCORE_STATE_KEY, preferred)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        count = 0
        if self.added_pref_sched_terms is not None:
            count += self.added_pref_sched_terms.score(node_info)
        if PRE_SCORE_STATE_KEY in state:
            preferred = state.read(PRE_SCORE_STATE_KEY)
        else:
            try:
                preferred = _preferred(pod)
            except ValueError as e:
                return 0, as_status(e)
        if preferred is not None:
            count += preferred.score(node_info)
        return count, None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int],
                        nodes: Sequence[NodeInfo]) -> Optional[Status]:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- requeueing --------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                                     self._after_node_change)]

    def _after_node_change(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None:
            return QueueingHint.QueueSkip
        new_info = NodeInfo(new)
        if self.added_node_selector is not None and not self.added_node_selector.match(new_info):
            return QueueingHint.QueueSkip
        required = RequiredNodeAffinity(pod)
        if not required.match(new_info):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip if required.match(NodeInfo(old)) else QueueingHint.Queue


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> NodeAffinity:
    return NodeAffinity(default_plugin_args(names.NodeAffinity, args) or {}, handle)


def _term_node_names(term: Mapping[str, Any]) -> Optional[set[str]]:
    """The node names a selector term's `metadata.name In [...]` fields allow; None: any name."""
    names_: Optional[set[str]] = None
    for r in term.get("matchFields") or ():
        if r.get("key") == "metadata.name" and r.get("operator") == "In":
            allowed = set(r.get("values") or ())
            names_ = allowed if names_ is None else names_ & allowed
    return names_
