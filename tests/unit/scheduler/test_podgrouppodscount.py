"""PodGroupPodsCount (PlacementScore): the group's scheduled pods plus those the placement
places, normalized to the best placement; no pods anywhere is an error."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code, CycleState
from phalanx.scheduler.framework.interface import Placement, PlacementScore, PodGroupAssignments, PodGroupInfo
from phalanx.scheduler.plugins.podgrouppodscount import PodGroupPodsCount

INFO = PodGroupInfo("default", "g", {"metadata": {"name": "g", "namespace": "default"}}, [])


def assignments(n: int) -> PodGroupAssignments:
    return PodGroupAssignments(Placement(f"p{n}", []), {f"pod-{i}": "n1" for i in range(n)})


@pytest.mark.parametrize("scheduled, placed, want", [(0, 3, 3), (2, 1, 3), (0, 0, 0)])
def test_score_counts_scheduled_and_placed_pods(scheduled, placed, want):
    plugin = PodGroupPodsCount(lambda key: scheduled if key == "default/g" else 99)
    assert plugin.score_placement(CycleState(), INFO, assignments(placed)) == (want, None)


def test_without_scheduler_state_only_the_assignment_counts():
    assert PodGroupPodsCount().score_placement(CycleState(), INFO, assignments(2)) == (2, None)


def test_normalize_scales_to_the_best_placement():
    scores = [PlacementScore(Placement(f"p{i}", []), s) for i, s in enumerate([4, 2, 1])]
    assert PodGroupPodsCount().normalize_placement_score(CycleState(), INFO, scores) is None
    assert [s.score for s in scores] == [100, 50, 25]


def test_normalize_with_no_pods_anywhere_is_an_error():
    st = PodGroupPodsCount().normalize_placement_score(CycleState(), INFO, [PlacementScore(Placement("p", []), 0)])
    assert st.code == Code.Error
    assert st.message() == "no pods from pod group are assigned to any of the candidate placements"
