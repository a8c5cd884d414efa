"""The scheduling cycle of a CompositePodGroup tree (Kubernetes 1.37, gate CompositePodGroup).

A tree (a root CompositePodGroup, CompositePodGroups below it, PodGroups as leaves) is one queue
entity: the pods of all its leaves wait, back off and are scheduled together. One cycle goes from
the root to the leaves on one snapshot:

- a CompositePodGroup with a topology constraint splits the nodes it was given into the domains of
  its key (the root gets the whole cluster); one without gets them whole. Domains are tried in
  order and the first where the subtree is satisfied wins;
- in a domain, the children are placed greedily in creation order (then name): each keeps what it
  placed while the next sibling is tried, a child that cannot be satisfied gives back what it
  placed, and siblings are never revisited (no sibling backtracking);
- a leaf is a PodGroup cycle confined to the domain: its own PlacementGenerate plugins (its
  topology constraint) split the domain further, and the first feasible placement is kept;
- a CompositePodGroup is satisfied when `minGroupCount` of its children are (basic: one), a leaf
  when its `minCount` pods are placed or already scheduled.

All or nothing: when the root is satisfied every placed pod of the tree is committed at once
(each leaf PodGroup gets PodGroupInitiallyScheduled=True; CompositePodGroup status is not written,
as in 1.37); otherwise every assumption is reverted and each leaf and pod says why, and the tree
backs off. Preemption happens only at the root of a tree, and phalanx does not preempt for trees
yet: a tree that does not fit waits for room.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from .cache import pod_group_key
from .framework.cycle_state import CycleState
from .framework.interface import Placement, PodGroupInfo
from .framework.runtime import Framework
from .framework.types import NodeInfo, QueuedPodInfo
from .placement_outcome import PlacementOutcome
from .podgroups import composite_policy_of, policy_of, tree_root_of
from .queue import QueuedPodGroup

if TYPE_CHECKING:
    from .schedule_one_podgroup import GroupAttempt, PodGroupCycle

CLUSTER = "cluster"
TREE_PLACEMENT = "tree"


@dataclass
class TreeTry:
    """What one tree cycle placed so far: the kept outcome of every satisfied leaf, in order."""

    fw: Framework
    members: dict[str, list[QueuedPodInfo]]  # leaf key -> its queued members
    outcomes: list[tuple[str, PlacementOutcome]] = field(default_factory=list)
    unsatisfied: list[str] = field(default_factory=list)  # groups that could not be satisfied, and why
    plugins: set[str] = field(default_factory=set)


class CompositeCycle:
    """Tree cycles, on the PodGroup cycle's operations (try, revert, commit, report)."""

    def __init__(self, groups_cycle: "PodGroupCycle"):
        self.cycle = groups_cycle
        self.groups = groups_cycle.groups

    async def schedule_tree(self, group: QueuedPodGroup, members: list[QueuedPodInfo]) -> None:
        cycle, ctx = self.cycle, self.cycle.ctx
        root = tree_root_of(group.key)
        if root is None or root not in self.groups.composites or not members:
            cycle.send_back(group, members)
            return
        fw = ctx.framework_for(members[0].pod)
        ctx.refresh_snapshot()
        by_leaf: dict[str, list[QueuedPodInfo]] = {}
        for q in members:
            by_leaf.setdefault(pod_group_key(q.pod) or "", []).append(q)
        tree = TreeTry(fw, by_leaf)
        ok = self._place_composite(tree, root, list(ctx.snapshot.list()), CLUSTER, depth=1)
        fw.set_snapshot(ctx.snapshot)
        ctx.stats["tree_attempts"] += 1
        if ok and tree.outcomes:
            self._commit(tree, group, members)
            return
        self._rollback(tree, 0)
        await self._failed(tree, group, members, root)

    # -- the algorithm --------------------------------------------------------------------------------
    def _place_composite(self, tree: TreeTry, key: str, nodes: list[NodeInfo], where: str, depth: int) -> bool:
        cpg = self.groups.composites.get(key)
        if cpg is None:
            return False
        _, need = composite_policy_of(cpg)
        need = max(need, 1)
        children = self.groups.tree_children(key)
        for name, domain in _domains(cpg, nodes, where):
            mark = len(tree.outcomes)
            satisfied = 0
            for child, leaf in children:  # greedy, in creation order, no sibling backtracking
                child_mark = len(tree.outcomes)
                placed = (self._place_leaf(tree, child, domain, name) if leaf
                          else self._place_composite(tree, child, domain, name, depth + 1))
                if placed:
                    satisfied += 1
                else:
                    self._rollback(tree, child_mark)
            if satisfied >= need:
                return True
            self._rollback(tree, mark)
        tree.unsatisfied.append(f"composite pod group {key.split('/', 1)[1]}: fewer than {need} child group(s) fit")
        return False

    def _place_leaf(self, tree: TreeTry, key: str, nodes: list[NodeInfo], where: str) -> bool:
        cycle, ctx, fw = self.cycle, self.cycle.ctx, tree.fw
        pg = self.groups.get(key)
        if pg is None:
            return False
        _, min_count = policy_of(pg)
        already = len(ctx.cache.scheduled_in_group(key))
        members = tree.members.get(key, [])
        if not members:
            return already >= max(min_count, 1)
        namespace, name = key.split("/", 1)
        info = PodGroupInfo(namespace, name, pg, [q.pod_info for q in members])
        placements, st = fw.run_placement_generate_plugins(CycleState(), info, Placement(where, nodes))
        if st is not None:
            tree.unsatisfied.append(f"pod group {name}: {st.message()}")
            return False
        best: Optional[PlacementOutcome] = None
        for placement in placements:
            outcome = cycle.try_placement(fw, placement, members, info, already)
            tree.plugins |= outcome.plugins
            if outcome.feasible:
                outcome.kept = True
                tree.outcomes.append((key, outcome))
                return True
            cycle.revert(fw, outcome)
            if best is None or len(outcome.assigned) > len(best.assigned):
                best = outcome
        placed = len(best.assigned) if best else 0
        tree.unsatisfied.append(f"pod group {name}: {placed}/{len(members)} pods fit, {min_count} required")
        return False

    def _rollback(self, tree: TreeTry, mark: int) -> None:
        """Revert what the leaves after `mark` placed, last first."""
        while len(tree.outcomes) > mark:
            _, outcome = tree.outcomes.pop()
            self.cycle.revert(tree.fw, outcome)

    # -- results --------------------------------------------------------------------------------------
    def _commit(self, tree: TreeTry, group: QueuedPodGroup, members: list[QueuedPodInfo]) -> None:
        """Every leaf's placed pods at once, through the PodGroup cycle's commit; each leaf reports."""
        combined = PlacementOutcome(Placement(TREE_PLACEMENT, []), kept=True, feasible=True)
        for _, outcome in tree.outcomes:
            combined.assigned.extend(outcome.assigned)
            combined.assumed.update(outcome.assumed)
        self.cycle.ctx.stats["trees_scheduled"] += 1
        attempts = {key: self._attempt(tree.fw, group, key, members) for key, _ in tree.outcomes}
        self.cycle.commit(attempts[tree.outcomes[0][0]], combined)
        for key, outcome in tree.outcomes:
            self.cycle.report_scheduled(attempts[key], outcome)
        if group.members:  # members of leaves that were not needed: later, as late members
            self.cycle.ctx.queue.requeue(group, tree.plugins)

    def _attempt(self, fw: Framework, group: QueuedPodGroup, key: str,
                 members: list[QueuedPodInfo]) -> "GroupAttempt":
        from .schedule_one_podgroup import GroupAttempt
        pg = self.groups.get(key) or {}
        mine = [q for q in members if pod_group_key(q.pod) == key]
        namespace, name = key.split("/", 1)
        return GroupAttempt(fw, group, pg, mine, PodGroupInfo(namespace, name, pg, [q.pod_info for q in mine]),
                            len(self.cycle.ctx.cache.scheduled_in_group(key)), policy_of(pg)[1], CycleState())

    async def _failed(self, tree: TreeTry, group: QueuedPodGroup, members: list[QueuedPodInfo], root: str) -> None:
        ctx = self.cycle.ctx
        ctx.stats["trees_unschedulable"] += 1
        reasons = "; ".join(dict.fromkeys(tree.unsatisfied)) or "no placement"
        summary = f'composite pod group "{root.split("/", 1)[1]}" tree cannot be scheduled: {reasons}'
        ctx.queue.requeue(group, tree.plugins)
        ctx.last_diagnosis["group:" + group.key] = {"result": "Unschedulable", "message": summary,
                                                    "podsInCycle": len(members)}
        for key in {pod_group_key(q.pod) or "" for q in members}:
            pg = self.groups.get(key)
            if pg is not None:
                mine = [q for q in members if pod_group_key(q.pod) == key]
                ctx.calls.spawn(self.cycle.report_unschedulable(tree.fw, pg, mine, summary))


def _domains(cpg: dict, nodes: list[NodeInfo], where: str) -> list[tuple[str, list[NodeInfo]]]:
    """The domains a CompositePodGroup's children are confined to, within `nodes` (named for the
    placements below): one per value of its topology key, in value order; `nodes` whole without one."""
    topology = ((cpg.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
    key = topology[0].get("key") if topology and isinstance(topology[0], dict) else None
    if not key:
        return [(where, nodes)]
    by_value: dict[str, list[NodeInfo]] = {}
    for ni in nodes:
        labels = ni.labels or {}
        if key in labels:
            by_value.setdefault(labels[key], []).append(ni)
    return [(f"{key}={value}", by_value[value]) for value in sorted(by_value)]

