"""The Framework's pod-group extension points (1.36 workload scheduling): PlacementGenerate,
PlacementScore (+ NormalizePlacementScore) and PlacementFeasible, run over a PodGroup's
candidate placements by the group cycle."""

from __future__ import annotations

from typing import Optional, Sequence

from .cycle_state import CycleState
from .interface import (Placement, PlacementFeasiblePlugin, PlacementGeneratePlugin, PlacementProgress,
                        PlacementScore, PlacementScorePlugin, PodGroupAssignments, PodGroupInfo)
from .status import Code, Status, as_status, go_quote


class PodGroupExtensionPoints:
    """Runners of the pod-group points; `Framework` inherits them."""

    placement_generate_plugins: list[PlacementGeneratePlugin]
    placement_score_plugins: list[PlacementScorePlugin]
    placement_feasible_plugins: list[PlacementFeasiblePlugin]
    placement_score_plugin_weight: dict[str, int]

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
                return [], as_status(f"running PlacementGenerate plugin {go_quote(pl.name())}: {st.message()}").with_plugin(pl.name())
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
                    return [], {}, as_status(f"running PlacementScore plugin {go_quote(pl.name())}: {st.message()}")
                scores.append(PlacementScore(a.placement, s))
            ext = pl.placement_score_extensions()
            if ext is not None:
                st = ext.normalize_placement_score(state, pod_group, scores)
                if st is not None and st.code != Code.Success:
                    return [], {}, as_status(f"running NormalizePlacementScore on plugin {go_quote(pl.name())}: {st.message()}")
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
            return as_status(f"running PlacementFeasible plugin {go_quote(pl.name())}: {st.message()}").with_plugin(pl.name())
        return wait
