"""PodGroupPodsCount (PlacementScore): prefer the placement that fits the most pods of the group.

Upstream 1.36 (KEP-5732), default placement-score weight 1:

- ScorePlacement: the group's pods already scheduled (assumed or bound) plus the pods the
  placement's assignment places. Counting the scheduled ones keeps the relative difference
  between placements small when only a few late members are being placed.
- NormalizePlacementScore: `count * 100 / max count` over the candidate placements (minCount is
  deliberately not used); a max of 0 is an error ("no pods from pod group are assigned to any of
  the candidate placements").

`placement_score_bound` is phalanx's pruning hook (see `phalanx.scheduler.placementsearch`): once
some placement fits every pod, no placement scores above MaxScore here, and an all-fit
placement scores exactly MaxScore whatever else is scored.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (Handle, Placement, PlacementScore, PlacementScoreExtensions,
                                                   PlacementScorePlugin, PodGroupAssignments, PodGroupInfo)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import MAX_NODE_SCORE

from . import names

MIN_SCORE = 0


class PodGroupPodsCount(PlacementScorePlugin, PlacementScoreExtensions):
    NAME = names.PodGroupPodsCount

    def __init__(self, scheduled_count: Optional[Callable[[str], int]] = None):
        self.scheduled_count = scheduled_count

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Optional[Status]]:
        scheduled = self.scheduled_count(pod_group.key) if self.scheduled_count is not None else 0
        return scheduled + len(assignments.assignments), None

    def placement_score_extensions(self) -> Optional[PlacementScoreExtensions]:
        return self

    def normalize_placement_score(self, state: CycleState, pod_group: PodGroupInfo,
                                  scores: list[PlacementScore]) -> Optional[Status]:
        max_count = max((s.score for s in scores), default=0)
        if max_count == 0:
            return Status.new(Code.Error, "no pods from pod group are assigned to any of the candidate placements")
        for s in scores:
            s.score = MIN_SCORE + s.score * (MAX_NODE_SCORE - MIN_SCORE) // max_count
        return None

    def placement_score_bound(self, state: CycleState, pod_group: PodGroupInfo, placement: Placement) -> int:
        return MAX_NODE_SCORE


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> PodGroupPodsCount:
    """Counts the group's scheduled pods through the Handle's PodGroup lister; without one (a
    plain framework) the assignment only."""
    pod_groups = handle.pod_group_lister()
    return PodGroupPodsCount(pod_groups.scheduled_count if pod_groups is not None else None)
