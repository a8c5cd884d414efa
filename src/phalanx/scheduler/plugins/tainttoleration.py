"""TaintToleration (Filter, PreScore, Score): NoSchedule/NoExecute taints keep away pods that do
not tolerate them ("node(s) had untolerated taint {key: value}"); untolerated PreferNoSchedule
taints lower a node's score (fewer is better; normalized in reverse)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import MAX_NODE_SCORE, TAINT_EFFECT_PREFER_NO_SCHEDULE, Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.taints import Taint, Toleration, do_not_schedule_taint, find_matching_untolerated_taint, parse_taints, parse_tolerations, tolerations_tolerate_taint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names
from .helper import default_normalize_score

PRE_SCORE_STATE_KEY = "PreScore" + names.TaintToleration


def _uid(pod: Optional[Obj]) -> str:
    return ((pod or {}).get("metadata") or {}).get("uid") or ""


def _first_untolerated(hard: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Optional[Taint]:
    for taint in hard:
        for t in tolerations:
            if t.tolerates(taint):
                break
        else:
            return taint
    return None


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions):
    NAME = names.TaintToleration

    SCORE_DEPENDS_ON_NODE_PODS = False  # counts the node's PreferNoSchedule taints only

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: the tolerations."""
        return pod.spec_signature("tolerations")

    def __init__(self) -> None:
        self._statuses: dict[Taint, Status] = {}

    def _reject(self, taint: Taint) -> Status:
        st = self._statuses.get(taint)
        if st is None:
            st = Status.new(Code.UnschedulableAndUnresolvable,
                            f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}").with_plugin(self.NAME)
            self._statuses[taint] = st
        return st

    # -- Filter ----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        taint = _first_untolerated(node_info.hard_taints, pod.tolerations)
        return None if taint is None else self._reject(taint)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        all_hard = [ni.hard_taints for ni in nodes]
        if not any(all_hard):
            return []
        tols = pod.tolerations
        seen: dict[tuple[Taint, ...], Optional[Taint]] = {}
        out = []
        for i, hard in enumerate(all_hard):
            if not hard:
                continue
            if hard in seen:
                taint = seen[hard]
            else:
                taint = seen[hard] = _first_untolerated(hard, tols)
            if taint is not None:
                out.append((i, self._reject(taint)))
        return out

    # -- Score -------------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        prefer = tuple(t for t in pod.tolerations if not t.effect or t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE)
        state.write(PRE_SCORE_STATE_KEY, prefer)
        return None

    @staticmethod
    def _count(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
        return sum(1 for taint in taints if not tolerations_tolerate_taint(tolerations, taint))

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        prefer = state.read(PRE_SCORE_STATE_KEY)
        return self._count(node_info.prefer_no_schedule_taints, prefer), None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Optional[Status]]:
        prefer = state.read(PRE_SCORE_STATE_KEY)
        all_pns = [ni.prefer_no_schedule_taints for ni in nodes]
        if not any(all_pns):
            return [0] * len(nodes), None
        count = self._count
        return [count(pns, prefer) if pns else 0 for pns in all_pns], None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int],
                        nodes: Sequence[NodeInfo]) -> Optional[Status]:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    # -- requeueing --------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeTaint),
                                 self._after_node_change),
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.UpdatePodToleration),
                                 self._after_pod_toleration_change),
        ]

    @staticmethod
    def _after_node_change(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        tols = parse_tolerations((pod.get("spec") or {}).get("tolerations"))

        def untolerated(node: Optional[Obj]) -> bool:
            taints = parse_taints(((node or {}).get("spec") or {}).get("taints"))
            return find_matching_untolerated_taint(taints, tols, do_not_schedule_taint) is not None

        was = True if old is None else untolerated(old)
        return QueueingHint.Queue if was and not untolerated(new) else QueueingHint.QueueSkip

    @staticmethod
    def _after_pod_toleration_change(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        return QueueingHint.Queue if _uid(new) == _uid(pod) else QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> TaintToleration:
    return TaintToleration()
