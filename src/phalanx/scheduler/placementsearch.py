"""Which placements a PodGroup cycle tries, in which order, and which it may leave out.

Upstream 1.36 tries every generated placement (run the group algorithm, revert) and then scores
the feasible ones. At 5,000 nodes in racks of 100 that is 50 trials per gang. phalanx reaches
the same choice with fewer trials:

1. **Ranks** (phalanx's preferred topology): placements carry a `rank` (0 = try first; plain
   upstream placements all have rank 0). Ranks are searched in order; the first rank with a
   feasible placement decides and later ranks are not tried.
2. **Capacity**: when NodeResourcesFit filters, a placement whose nodes together lack the free
   capacity for the pods the group still needs (`NodeResourcesFit.placement_capacity_shortfall`)
   is recorded as infeasible without running the group algorithm: Filter would reject it anyway.
3. **Score bound**: when every enabled PlacementScore plugin offers `placement_score_bound` (the
   defaults, PodGroupPodsCount and NodeResourcesFit, do), the placements of a rank are tried
   best bound first; once one fits *every* pod, a placement whose bound cannot beat its score
   (or only ties it from a later position) is not tried.

Why the choice stays exactly upstream's (for the plugins that offer bounds): a bound is never
below the plugin's score for that placement, and is exact for an all-fit placement. Once an
all-fit placement has been scored, PodGroupPodsCount normalizes by the largest possible count
whatever else is scored, so the scores of the placements that were tried equal their scores in
an exhaustive search; every skipped placement scores below the best (or ties it from a later
position: the framework's tie-break keeps the first placement in generation order). Outcomes are
returned in generation order, so the caller's scoring and tie-break are unchanged.

Every outcome gets a `message` for explanations: how many pods fit there, which did not and why,
or why the placement was not tried. `summarize(outcomes)` turns them into one line for conditions.

    outcomes, skipped = search_placements(fw, state, pg_info, placements, attempt, already=2)
    # attempt(placement) runs the group algorithm on the placement and reverts it
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Optional, Sequence

from .framework.cycle_state import CycleState
from .framework.interface import Placement, PodGroupAssignments, PodGroupInfo
from .framework.runtime import Framework
from .placement_outcome import PlacementOutcome
from .plugins import names
from .podgroups import policy_of

Outcome = PlacementOutcome
CLUSTER = "cluster"
MAX_DOMAINS_PER_REASON = 4
MAX_REASONS = 5


def search_placements(fw: Framework, state: CycleState, pod_group: PodGroupInfo, placements: Sequence[Placement],
                      attempt: Callable[[Placement], Outcome], *, already: int = 0) -> tuple[list[Outcome], int]:
    """Try `placements` as described above; (outcomes in generation order, placements skipped
    because they could not outscore the best)."""
    search = _Search(fw, state, pod_group, attempt, _pods_needed(fw, pod_group, already), several=len(placements) > 1)
    by_rank: dict[int, list[tuple[int, Placement]]] = defaultdict(list)
    for i, p in enumerate(placements):
        by_rank[getattr(p, "rank", 0) or 0].append((i, p))
    for rank in sorted(by_rank):
        if search.tier(by_rank[rank]):
            break
    search.outcomes.sort(key=lambda io: io[0])
    return [o for _, o in search.outcomes], search.skipped


class _Search:
    """One group cycle's search over its placements, rank by rank."""

    def __init__(self, fw: Framework, state: CycleState, pod_group: PodGroupInfo,
                 attempt: Callable[[Placement], Outcome], need: int, *, several: bool):
        self.fw, self.state, self.pod_group, self.attempt, self.need = fw, state, pod_group, attempt, need
        self.total = len(pod_group.unscheduled_pods)
        # A lone placement (no topology constraint, or a late member's domain) is simply tried: its
        # per-pod reasons explain more than a capacity sum would.
        self.capacity = _capacity_plugin(fw) if several else None
        self.bounds = _bound_plugins(fw) if several else None
        self.outcomes: list[tuple[int, Outcome]] = []
        self.skipped = 0

    def _upper_bounds(self, tier: list[tuple[int, Placement]]) -> dict[int, int]:
        if self.bounds is None or len(tier) <= 1:
            return {}
        return {i: sum(w * pl.placement_score_bound(self.state, self.pod_group, p) for pl, w in self.bounds)
                for i, p in tier}

    def tier(self, tier: list[tuple[int, Placement]]) -> bool:
        """Try one rank's placements (best bound first); True when one of them is feasible."""
        ub = self._upper_bounds(tier)
        if ub:
            tier = sorted(tier, key=lambda ip: (-ub[ip[0]], ip[0]))
        best: Optional[tuple[int, int]] = None  # (score, generation index) of the best all-fit placement
        tier_feasible = False
        for pos, (i, p) in enumerate(tier):
            if best is not None and (ub[i] < best[0] or (ub[i] == best[0] and i > best[1])):
                self.skipped += len(tier) - pos  # sorted by bound: none of the rest can win either
                break
            o = self._try(i, p)
            if o is None or not o.feasible:
                continue
            tier_feasible = True
            if ub and len(o.assigned) == self.total:
                score = _score_alone(self.fw, self.state, self.pod_group, o)
                if score is not None and (best is None or score > best[0] or (score == best[0] and i < best[1])):
                    best = (score, i)
        return tier_feasible

    def _try(self, i: int, p: Placement) -> Optional[Outcome]:
        """The placement's outcome, or None when its free capacity rules it out untried."""
        if self.capacity is not None:
            short = self.capacity.placement_capacity_shortfall(self.state, self.pod_group, p, self.need)
            if short:
                self.outcomes.append((i, _not_tried(p, self.need, short)))
                return None
        o = self.attempt(p)
        o.message = describe(o, self.total)
        self.outcomes.append((i, o))
        return o


def _pods_needed(fw: Framework, pod_group: PodGroupInfo, already: int) -> int:
    """How many more pods a placement must hold to be feasible."""
    policy, min_count = policy_of(pod_group.pod_group or {})
    if policy == "Gang" and getattr(fw, "placement_feasible_plugins", None):
        return max(1, min_count - already)
    return 1


def _capacity_plugin(fw: Any) -> Any:
    fit = fw.plugin(names.NodeResourcesFit) if hasattr(fw, "plugin") else None
    if fit is None or fit not in getattr(fw, "filter_plugins", ()) or \
            not hasattr(fit, "placement_capacity_shortfall"):
        return None
    return fit


def _bound_plugins(fw: Any) -> Optional[list[tuple[Any, int]]]:
    plugins = list(getattr(fw, "placement_score_plugins", ()))
    if not plugins or not all(hasattr(pl, "placement_score_bound") for pl in plugins):
        return None
    weights = getattr(fw, "placement_score_plugin_weight", {})
    return [(pl, weights.get(pl.name(), 1)) for pl in plugins]


def _score_alone(fw: Framework, state: CycleState, pod_group: PodGroupInfo, o: Outcome) -> Optional[int]:
    a = PodGroupAssignments(o.placement, {x.pod_info.key: x.node for x in o.assigned})
    totals, _, st = fw.run_placement_score_plugins(state, pod_group, [a])
    return None if st is not None or not totals else totals[0]


def _not_tried(p: Placement, need: int, short: list[str]) -> Outcome:
    msg = f"not tried, free capacity cannot hold {need} pod{'s' if need != 1 else ''} ({'; '.join(short)})"
    return PlacementOutcome(p, plugins={names.NodeResourcesFit}, message=msg, tried=False)


def _names(names_: list[str], limit: int = 3) -> str:
    shown = ", ".join(names_[:limit])
    return shown + (f" and {len(names_) - limit} more" if len(names_) > limit else "")


def describe(o: Outcome, total: int) -> str:
    """`3/4 pods fit (pod p-3: 0/100 nodes are available: 100 Insufficient cpu; minCount (4) ...)`:
    what happened to the group in one placement."""
    if not o.tried:
        return o.message
    head = f"{len(o.assigned)}/{total} pods fit"
    by_reason: dict[str, list[str]] = defaultdict(list)
    for qpi, fe in o.failures.values():
        by_reason[str(fe).rstrip(".")].append(qpi.pod_info.name)
    parts = [f"pod{'s' if len(pods) != 1 else ''} {_names(pods)}: {reason}" for reason, pods in by_reason.items()]
    if not o.feasible and o.status_message:
        parts.append(o.status_message)
    return head + (f" ({'; '.join(parts)})" if parts else "")


def summarize(outcomes: Sequence[Outcome]) -> str:
    """One line naming the domains evaluated and why each failed, domains with the same reason
    together: `3 placements evaluated: topology.kubernetes.io/rack=rack-0: 3/4 pods fit (...); ...`.
    Empty when the only placement was the whole cluster."""
    if not outcomes or (len(outcomes) == 1 and outcomes[0].placement.name == CLUSTER):
        return ""
    by_msg: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        msg = o.message or o.status_message or ("feasible" if o.feasible else "infeasible")
        by_msg[msg].append(o.placement.name)
    groups = sorted(by_msg.items(), key=lambda kv: -len(kv[1]))
    parts = [f"{_names(domains, MAX_DOMAINS_PER_REASON)}: {msg}" for msg, domains in groups[:MAX_REASONS]]
    if len(groups) > MAX_REASONS:
        rest = sum(len(d) for _, d in groups[MAX_REASONS:])
        parts.append(f"{rest} more placement{'s' if rest != 1 else ''} for other reasons")
    n = len(outcomes)
    return f"{n} placement{'s' if n != 1 else ''} evaluated: " + "; ".join(parts)
