"""The scheduling cycle of a CompositePodGroup tree (Kubernetes 1.37, KEP-6012).

The queue holds a tree as one entity, keyed by its root CompositePodGroup, with the pods of every
leaf PodGroup (`SchedulingQueue.group_of`). A popped tree is placed top-down on one snapshot by
`compositetree.place_tree`: the root and each CompositePodGroup below it confine their children to
one domain of their topology key, and each leaf runs the PodGroup cycle's own search
(`PodGroupCycle`: PlacementGenerate within the nodes its parent was given, the members filtered,
scored, assumed and reserved, PlacementFeasible for its `minCount`). A satisfied root commits every
placed leaf at once; anything less reverts every leaf, and each leaf PodGroup and its pods say why.

A tree that is too deep, or whose groups name more than one Workload, fails the cycle with
SchedulerError on every leaf. A tree that does not fit preempts at its root only
(`treepreemption`: the tree's own search on a copy of the cluster chooses the victims).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

from .cache import pod_group_key
from .compositetree import LeafPlacer, TreeNode, TreePlacement, place_tree, tree_error, undo_all
from .framework.cycle_state import CycleState
from .framework.interface import Placement, PodGroupInfo
from .framework.runtime import Framework
from .framework.types import NodeInfo, PodInfo, QueuedPodInfo
from .placement_outcome import PlacementOutcome
from .plugins import names
from .placementsearch import CLUSTER
from .podgroups import policy_of
from .queue import QueuedPodGroup
from .reporting import Failures
from .treepreemption import TreeFits

DRY_RUN_PREFIX = "preemption:"  # grouppreemption's: a dry run's placements are never "cluster"

if TYPE_CHECKING:
    from .schedule_one_podgroup import GroupAttempt, PodGroupCycle

REASON_SCHEDULER_ERROR = "SchedulerError"
MAX_LISTED_LEAVES = 20


@dataclass
class LeafTry:
    """What placing one leaf produced: its attempt and the placement kept for the commit."""

    attempt: "GroupAttempt"
    outcome: PlacementOutcome


class CompositeGroupCycle:
    """Scheduling cycles of CompositePodGroup trees, on top of the PodGroup cycle."""

    def __init__(self, groups: "PodGroupCycle"):
        self.groups = groups
        self.ctx = groups.ctx

    async def schedule_tree(self, entity: QueuedPodGroup) -> None:
        pgc, ctx = self.groups, self.ctx
        tree = pgc.groups.forest.tree(entity.key)
        members = pgc._live_members(entity)
        if tree is None or not members:
            pgc._send_back(entity, members)
            return
        members.sort(key=lambda q: (-q.pod_info.priority, q.initial_attempt_timestamp or q.timestamp))
        by_leaf: dict[str, list[QueuedPodInfo]] = {}
        for qpi in members:
            by_leaf.setdefault(pod_group_key(qpi.pod) or "", []).append(qpi)
        error = tree_error(tree) or self._members_disagree(tree, by_leaf)
        fw = ctx.framework_for(members[0].pod)
        if error is not None:
            await self._tree_error(fw, entity, tree, by_leaf, error)
            return
        if pgc.preemption is not None:
            pgc.preemption.before_group_cycle(entity, members)  # its own nominations (a root preemption's)
        ctx.refresh_snapshot()
        failures: dict[str, Optional[PlacementOutcome]] = {}
        placer: LeafPlacer[NodeInfo, LeafTry] = LeafPlacer(
            place=lambda leaf, nodes, domain: self._place_leaf(fw, entity, leaf, nodes, domain, by_leaf, failures),
            undo=lambda tried: self._undo(fw, tried), labels=lambda ni: ni.labels)
        placed = place_tree(tree, list(ctx.snapshot.list()), placer)
        fw.set_snapshot(ctx.snapshot)
        ctx.stats["tree_attempts"] += 1
        if placed is None:
            await self._tree_unschedulable(fw, entity, tree, by_leaf, failures)
            return
        self._commit(entity, tree, placed)

    def _members_disagree(self, tree: TreeNode, by_leaf: dict[str, list[QueuedPodInfo]]) -> Optional[str]:
        """A leaf whose pods disagree on scheduler or priority fails the whole tree (SchedulerError)."""
        from .schedule_one_podgroup import members_mismatch
        for leaf in tree.leaves():
            if by_leaf.get(leaf.key):
                mismatch = members_mismatch(leaf.obj, by_leaf[leaf.key], self.groups.groups.scheduler_names(leaf.key))
                if mismatch:
                    return mismatch
        return None

    # -- one leaf ---------------------------------------------------------------------------------
    def _place_leaf(self, fw: Framework, entity: QueuedPodGroup, leaf: TreeNode, nodes: Sequence[NodeInfo],
                    domain: str, by_leaf: dict[str, list[QueuedPodInfo]],
                    failures: dict[str, Optional[PlacementOutcome]], prefix: str = "") -> Optional[LeafTry]:
        """The PodGroup cycle's search for one leaf, on the nodes its parent's domain holds; the
        chosen placement stays assumed for the commit (None: nothing of the leaf stays). `prefix`
        names a dry run's placements (never "cluster": those nodes are a copy's)."""
        from .schedule_one_podgroup import GroupAttempt  # the two cycles' modules refer to each other
        pgc, ctx = self.groups, self.ctx
        members = by_leaf.get(leaf.key, [])
        namespace, name = leaf.key.split("/", 1)
        _, min_count = policy_of(leaf.obj)
        already = len(ctx.cache.scheduled_in_group(leaf.key))
        view = QueuedPodGroup(leaf.key, {q.pod_info.key: q for q in members}, entity.timestamp, entity.attempts)
        attempt = GroupAttempt(fw, view, leaf.obj, members,
                               PodGroupInfo(namespace, name, leaf.obj, [q.pod_info for q in members]),
                               already, min_count, CycleState())
        if not members:  # placed by an earlier cycle: satisfied when enough of it is
            return LeafTry(attempt, PlacementOutcome(Placement("", list(nodes)), None)) \
                if already >= min_count else None
        parent = Placement(prefix + (domain or CLUSTER), list(nodes))
        placements, st = fw.run_placement_generate_plugins(attempt.state, attempt.info, parent)
        if st is not None:
            failures.setdefault(leaf.key, None)
            return None
        outcomes, _ = pgc._search(attempt, placements)
        feasible = [o for o in outcomes if o.feasible]
        if not feasible:
            failures[leaf.key] = max(outcomes, key=lambda o: len(o.assigned)) if outcomes else None
            return None
        chosen = pgc._choose(attempt, feasible)
        if not chosen.kept:  # tried and reverted by the search: assume it again for the commit
            chosen = pgc.try_placement(fw, chosen.placement, members, attempt.info, already)
            chosen.kept = True
        failures.pop(leaf.key, None)
        return LeafTry(attempt, chosen)

    def _dry_run(self, fw: Framework, entity: QueuedPodGroup, tree: TreeNode,
                 by_leaf: dict[str, list[QueuedPodInfo]]) -> TreeFits:
        """The tree's search on a copy's nodes, undone at once: where its pods would go, or None."""
        def fits(nodes: list[NodeInfo]) -> Optional[list[tuple[PodInfo, str]]]:
            placer: LeafPlacer[NodeInfo, LeafTry] = LeafPlacer(
                place=lambda leaf, ns, domain: self._place_leaf(fw, entity, leaf, ns, domain, by_leaf, {},
                                                                prefix=DRY_RUN_PREFIX),
                undo=lambda tried: self._undo(fw, tried), labels=lambda ni: ni.labels)
            placed = place_tree(tree, nodes, placer)
            if placed is None:
                return None
            where = [(a.pod_info, a.node) for _, tried in placed.leaves for a in tried.outcome.assigned]
            undo_all(placed, placer)
            return where
        return fits

    def _undo(self, fw: Framework, tried: LeafTry) -> None:
        if tried.outcome.view is not None:
            self.groups.revert(fw, tried.outcome)

    # -- success --------------------------------------------------------------------------------------
    def _commit(self, entity: QueuedPodGroup, tree: TreeNode, placed: TreePlacement[LeafTry]) -> None:
        pgc, ctx = self.groups, self.ctx
        for leaf, tried in placed.leaves:
            if not tried.outcome.assigned:
                continue
            pgc._commit(tried.attempt, tried.outcome, done=False)
            for a in tried.outcome.assigned:
                entity.members.pop(a.pod_info.key, None)
            pgc.groups_scheduled.add(leaf.obj["metadata"].get("uid") or leaf.key)
            ctx.stats["groups_scheduled"] += 1
            where = tried.outcome.placement.name
            ctx.calls.spawn(pgc._report_group_scheduled(tried.attempt, where, len(tried.outcome.assigned)))
        ctx.queue.done(entity)  # leaves this cycle did not need go round again as late members
        ctx.last_diagnosis["group:" + entity.key] = {
            "result": "Scheduled", "compositePodGroup": tree.name, "domains": placed.domains,
            "leaves": {leaf.name: len(t.outcome.assigned) for leaf, t in placed.leaves[:MAX_LISTED_LEAVES]}}

    # -- failure --------------------------------------------------------------------------------------
    async def _tree_unschedulable(self, fw: Framework, entity: QueuedPodGroup, tree: TreeNode,
                                  by_leaf: dict[str, list[QueuedPodInfo]],
                                  failures: dict[str, Optional[PlacementOutcome]]) -> None:
        """Nothing of the tree binds: each leaf with pods in this cycle says why the tree failed."""
        pgc, ctx = self.groups, self.ctx
        plugins: set[str] = set().union(*(o.plugins for o in failures.values() if o is not None))
        plugins.add(names.GangScheduling)  # a changed group of the tree (minCount, a new leaf) is worth a retry
        ctx.queue.requeue(entity, plugins)
        ctx.stats["groups_unschedulable"] += 1
        blocking = sorted(k.split("/", 1)[1] for k in failures)
        summary = (f'composite pod group "{tree.name}" cannot be scheduled: '
                   + (f"pod groups {', '.join(blocking)} do not fit" if blocking else "no placement satisfies it"))
        if pgc.preemption is not None:  # preemption happens at the root of a tree only
            tree_members = [q for leaf in tree.leaves() for q in by_leaf.get(leaf.key, [])]
            result = await pgc.preemption.on_tree_unschedulable(
                fw, entity, tree.obj, {leaf.key for leaf in tree.leaves()}, tree_members,
                self._dry_run(fw, entity, tree, by_leaf))
            if result.message:
                summary += "; " + result.message
        ctx.last_diagnosis["group:" + entity.key] = {"result": "Unschedulable", "message": summary,
                                                     "compositePodGroup": tree.name, "blocking": blocking}
        for leaf in tree.leaves():
            members = by_leaf.get(leaf.key)
            if not members:
                continue
            outcome = failures.get(leaf.key)
            leaf_failures: Failures = dict(outcome.failures) if outcome is not None else {}
            message = summary
            if outcome is not None and outcome.status_message:
                message += f"; {leaf.name}: {outcome.status_message}"
            diag = {"result": "Unschedulable", "message": message, "compositePodGroup": tree.name}
            ctx.calls.spawn(pgc._report_group_unschedulable(fw, leaf.obj, members, leaf_failures, message, diag))

    async def _tree_error(self, fw: Framework, entity: QueuedPodGroup, tree: TreeNode,
                          by_leaf: dict[str, list[QueuedPodInfo]], message: str) -> None:
        """A tree no cluster could schedule as it is: SchedulerError on every leaf and its pods,
        and a retry after backoff (a fixed tree is taken as it comes)."""
        pgc, ctx = self.groups, self.ctx
        ctx.queue.requeue(entity, set(), error=True)
        ctx.stats["groups_scheduler_error"] += 1
        ctx.last_diagnosis["group:" + entity.key] = {"result": REASON_SCHEDULER_ERROR, "message": message}
        for leaf in tree.leaves():
            if by_leaf.get(leaf.key):
                ctx.calls.spawn(pgc._report_scheduler_error(fw, leaf.obj, by_leaf[leaf.key], message))

