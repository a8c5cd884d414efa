"""Preemption for a CompositePodGroup tree (Kubernetes 1.37, KEP-6012): only at the root.

A tree that does not fit is one preemptor: its priority is the root's (`spec.priority`, else its
pods' highest), its preemption policy the root's when PodGroupPreemptionPolicy is on (else a pod
with `Never` makes it non-preempting), and its pods are never its own victims. The victims are
chosen as workload-aware preemption chooses them for a PodGroup (`grouppreemption`: lone pods, or a
whole PodGroup of disruption mode `all`, of lower priority), on a copy of the cluster:

1. take every potential victim out and run the tree's own top-down search on the copy; if the
   tree does not fit even so, preemption cannot help;
2. put the victims back one by one, most important first, and keep each one back when the tree
   still fits with it (a reprieve); the others are the victims;
3. the tree's placement with exactly those victims gone gives the nominations.

What this module does is the choice; `GroupPreemption.on_tree_unschedulable` evicts, nominates
and makes the tree wait for the room, as for a PodGroup. PodDisruptionBudgets do not order the
reprieves here (a tree's victims are chosen by importance alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from .cache import pod_group_key
from .framework.snapshot import Snapshot
from .framework.types import NodeInfo, PodInfo

# Where the tree goes on the given nodes of a copy (its pods and nodes), or None when it does not fit.
TreeFits = Callable[[list[NodeInfo]], Optional[list[tuple[PodInfo, str]]]]


@dataclass
class TreeVictims:
    victims: list  # VictimUnit, most important first
    assignment: list[tuple[PodInfo, str]]
    dry_runs: int


def outside_tree(units: Sequence, leaf_keys: set[str]) -> list:
    """The victim units that are no part of the tree itself."""
    kept = []
    for unit in units:
        if unit.is_group and unit.key in leaf_keys:
            continue
        if not unit.is_group and any(pod_group_key(pi.pod) in leaf_keys for pi, _ in unit.pods):
            continue
        kept.append(unit)
    return kept


def select_tree_victims(clone: Snapshot, units: Sequence, fits: TreeFits) -> Optional[TreeVictims]:
    """Steps 1-3 on `clone` (left as it was found); None when the tree does not fit even without
    every unit. `units` are sorted most important first."""
    for unit in units:
        _take_out(clone, unit)
    runs = 1
    assignment = fits(list(clone.list()))
    if assignment is None:
        for unit in units:
            _put_back(clone, unit)
        return None
    victims = []
    for unit in units:
        _put_back(clone, unit)
        runs += 1
        with_it = fits(list(clone.list()))
        if with_it is None:
            _take_out(clone, unit)
            victims.append(unit)
        else:
            assignment = with_it
    for unit in victims:
        _put_back(clone, unit)
    return TreeVictims(victims, assignment, runs)


def _take_out(clone: Snapshot, unit) -> None:
    for pi, node in unit.pods:
        if node in clone.node_info_map:
            clone.node_info_map[node].remove_pod(pi)


def _put_back(clone: Snapshot, unit) -> None:
    for pi, node in unit.pods:
        if node in clone.node_info_map:
            clone.node_info_map[node].add_pod_info(pi)
