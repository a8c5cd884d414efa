"""What the framework's per-pod algorithm returns: scores per node, the chosen host, and the
outcome of a whole scheduling cycle (`Framework.scheduling_cycle`)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .cycle_state import CycleState
from .diagnosis import Diagnosis, FitError
from .interface import NominatingInfo, PostFilterResult, WaitingPod
from .status import Code, Status
from .types import NodeInfo, PodInfo


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
