"""NodeResourcesBalancedAllocation (PreScore, Score): prefers nodes whose resource usage
fractions stay close to each other after placing the pod: (1 - std of fractions) * 100.
Best-effort pods (no requests) skip it, so they do not pile onto one node.

Args (NodeResourcesBalancedAllocationArgs): `resources` [{name, weight}], cpu and memory by default.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.config import default_plugin_args
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle, PreScorePlugin, ScorePlugin
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names
from .noderesources_scorer import ResourceAllocationScorer, ScoreMemo, balanced_resource_scorer, is_best_effort

PRE_SCORE_STATE_KEY = "PreScore" + names.NodeResourcesBalancedAllocation


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    NAME = names.NodeResourcesBalancedAllocation

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: the pod's requests are all this plugin reads."""
        return pod.requests_signature()

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        resources = [(r["name"], int(r.get("weight") or 1)) for r in args.get("resources") or []]
        self.scorer = ResourceAllocationScorer(self.NAME, resources, balanced_resource_scorer, use_requested=True)
        self._memo = ScoreMemo()

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        reqs = self.scorer.pod_request_list(pod)
        if is_best_effort(reqs):
            return Status.new(Code.Skip)
        state.write(PRE_SCORE_STATE_KEY, reqs)
        return None

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> list[int]:
        r = state.get(PRE_SCORE_STATE_KEY)
        return self.scorer.pod_request_list(pod) if r is None else r

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        return self.scorer.score(node_info, self._pod_requests(state, pod)), None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Optional[Status]]:
        reqs = self._pod_requests(state, pod)
        if [r for r, _ in self.scorer.resources] == ["cpu", "memory"]:
            def compute(ns: Sequence[NodeInfo]) -> list[int]:
                return _balanced_cpu_mem(ns, reqs[0], reqs[1])
        else:
            def compute(ns: Sequence[NodeInfo]) -> list[int]:
                return self.scorer.score_nodes(ns, reqs)
        cap = 2 * self.handle.snapshot_shared_lister().num_nodes() + 1024
        return self._memo.scores(tuple(reqs), nodes, compute, cap), None


def _balanced_cpu_mem(nodes: Sequence[NodeInfo], pc: int, pm: int) -> list[int]:
    """The two-resource case in one loop: std = |f_cpu - f_mem| / 2 (same arithmetic as upstream)."""
    out: list[int] = []
    append = out.append
    for ac, am, rc, rm, _, _, _, _ in [ni.cm for ni in nodes]:
        if ac and am:
            fc = (rc + pc) / ac
            fm = (rm + pm) / am
            if fc > 1:
                fc = 1.0
            if fm > 1:
                fm = 1.0
            append(int((1 - abs((fc - fm) / 2)) * 100))
        else:
            append(100)
    return out


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> BalancedAllocation:
    return BalancedAllocation(default_plugin_args(names.NodeResourcesBalancedAllocation, args) or {}, handle)
