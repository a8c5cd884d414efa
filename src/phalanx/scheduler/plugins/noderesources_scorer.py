"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

    scorer = ResourceAllocationScorer("LeastAllocated", [("cpu", 1), ("memory", 1)], least_resource_scorer(...))
    reqs = scorer.pod_request_list(pod_info)           # once per pod (PreScore)
    scorer.score_nodes(node_infos, reqs)               # one pass over the nodes

Per resource: allocatable from the node, requested = the node's requests + the pod's. CPU and
memory use the *non-zero* requests (100m / 200Mi per container that sets none) unless
`use_requested`; an extended resource the pod does not request is left out, as upstream does.
Strategies: LeastAllocated ((alloc-req)*100/alloc), MostAllocated (req*100/alloc),
RequestedToCapacityRatio (a broken-linear shape of utilization), and the balanced-allocation
score ((1 - std of the usage fractions) * 100).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from phalanx.scheduler.framework.constants import MAX_NODE_SCORE, RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY
from phalanx.scheduler.framework.resources import is_scalar_resource_name
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from .helper import build_broken_linear_function

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

Scorer = Callable[[list[int], list[int]], int]


def _round(x: float) -> int:
    """Go's math.Round for non-negative values (half away from zero)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


def least_resource_scorer(weights: Sequence[int]) -> Scorer:
    def score(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            node_score += least_requested_score(requested[i], alloc) * weights[i]
            weight_sum += weights[i]
        return node_score // weight_sum if weight_sum else 0
    return score


def most_resource_scorer(weights: Sequence[int]) -> Scorer:
    def score(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            node_score += most_requested_score(requested[i], alloc) * weights[i]
            weight_sum += weights[i]
        return node_score // weight_sum if weight_sum else 0
    return score


def requested_to_capacity_ratio_scorer(weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> Scorer:
    """`shape` is [(utilization 0..100, score 0..10)]; scores are scaled to 0..100."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = build_broken_linear_function([(u, s * scale) for u, s in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            s = resource_score(requested[i], alloc)
            if s > 0:
                node_score += s * weights[i]
                weight_sum += weights[i]
        return _round(node_score / weight_sum) if weight_sum else 0
    return score


def balanced_resource_scorer(requested: list[int], allocatable: list[int]) -> int:
    fractions = []
    total = 0.0
    for i, alloc in enumerate(allocatable):
        if alloc == 0:
            continue
        f = requested[i] / alloc
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


class ResourceAllocationScorer:
    """Scores nodes by how the pod's requests would fill them, per a strategy."""

    def __init__(self, name: str, resources: Sequence[tuple[str, int]], scorer: Scorer, use_requested: bool = False,
                 strategy: str = ""):
        self.name = name
        self.resources = [(r, int(w)) for r, w in resources]
        self.scorer = scorer
        self.use_requested = use_requested
        self.strategy = strategy
        names = [r for r, _ in self.resources]
        self._cpu_mem_only = set(names) <= {RESOURCE_CPU, RESOURCE_MEMORY} and len(set(names)) == len(names)

    def pod_request_list(self, pod: PodInfo) -> list[int]:
        out = []
        for name, _ in self.resources:
            if name == RESOURCE_CPU:
                out.append(pod.requests.milli_cpu if self.use_requested else pod.non0_cpu)
            elif name == RESOURCE_MEMORY:
                out.append(pod.requests.memory if self.use_requested else pod.non0_mem)
            else:
                out.append(pod.requests.get(name))
        return out

    def node_vectors(self, ni: NodeInfo, pod_requests: Sequence[int]) -> tuple[list[int], list[int]]:
        n = len(self.resources)
        requested = [0] * n
        allocatable = [0] * n
        used = ni.requested if self.use_requested else ni.non_zero_requested
        a = ni.allocatable
        for i, (name, _) in enumerate(self.resources):
            pr = pod_requests[i]
            if name == RESOURCE_CPU:
                alloc, req = a.milli_cpu, used.milli_cpu + pr
            elif name == RESOURCE_MEMORY:
                alloc, req = a.memory, used.memory + pr
            elif name == RESOURCE_EPHEMERAL_STORAGE:
                alloc, req = a.ephemeral_storage, ni.requested.ephemeral_storage + pr
            elif pr == 0 and is_scalar_resource_name(name):
                continue
            elif name in a.scalar_resources:
                alloc, req = a.scalar_resources[name], ni.requested.scalar_resources.get(name, 0) + pr
            else:
                continue
            if alloc == 0:
                continue
            allocatable[i] = alloc
            requested[i] = req
        return requested, allocatable

    def score(self, ni: NodeInfo, pod_requests: Sequence[int]) -> int:
        requested, allocatable = self.node_vectors(ni, pod_requests)
        return self.scorer(requested, allocatable)

    def score_nodes(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> list[int]:
        if self._cpu_mem_only and self.strategy in (LEAST_ALLOCATED, MOST_ALLOCATED):
            return self._score_cpu_mem(nodes, pod_requests)
        score = self.score
        return [score(ni, pod_requests) for ni in nodes]

    def _score_cpu_mem(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> list[int]:
        """LeastAllocated/MostAllocated over cpu and/or memory from `NodeInfo.cm`, in one loop
        (the same integer arithmetic as the generic path)."""
        pc = pm = 0
        wc = wm = 0
        for (name, w), pr in zip(self.resources, pod_requests):
            if name == RESOURCE_CPU:
                pc, wc = pr, w
            else:
                pm, wm = pr, w
        least = self.strategy == LEAST_ALLOCATED
        off = 2 if self.use_requested else 4
        wsum_both = wc + wm
        out: list[int] = []
        append = out.append
        for cm in [ni.cm for ni in nodes]:
            ac, am = cm[0], cm[1]
            rc = cm[off] + pc
            rm = cm[off + 1] + pm
            if ac and am and wc and wm:
                if least:
                    sc = (ac - rc) * 100 // ac if rc <= ac else 0
                    sm = (am - rm) * 100 // am if rm <= am else 0
                else:
                    sc = (rc if rc < ac else ac) * 100 // ac
                    sm = (rm if rm < am else am) * 100 // am
                append((sc * wc + sm * wm) // wsum_both)
                continue
            append(_partial_cpu_mem_score(least, rc, ac, wc, rm, am, wm))
        return out


def _partial_cpu_mem_score(least: bool, rc: int, ac: int, wc: int, rm: int, am: int, wm: int) -> int:
    """The weighted score when cpu or memory has no weight or no allocatable (it does not count)."""
    total = wsum = 0
    if wc and ac:
        total += (least_requested_score(rc, ac) if least else most_requested_score(rc, ac)) * wc
        wsum += wc
    if wm and am:
        total += (least_requested_score(rm, am) if least else most_requested_score(rm, am)) * wm
        wsum += wm
    return total // wsum if wsum else 0


class ScoreMemo:
    """Scores by NodeInfo generation, per pod request vector (the last few vectors kept).

    A generation identifies a NodeInfo's content, so a score computed once for the same requests
    holds until the node changes: pods with identical requests (replicas, gang members) reuse
    the previous cycles' scores for every node that did not change."""

    def __init__(self, max_vectors: int = 8):
        self.max_vectors = max_vectors
        self._by_key: dict[tuple[int, ...], dict[int, int]] = {}

    def scores(self, key: tuple[int, ...], nodes: Sequence[NodeInfo],
               compute: Callable[[Sequence[NodeInfo]], list[int]], cap: int) -> list[int]:
        memo = self._by_key.get(key)
        if memo is None or len(memo) > cap:
            if memo is None and len(self._by_key) >= self.max_vectors:
                del self._by_key[next(iter(self._by_key))]
            memo = self._by_key[key] = {}
        get = memo.get
        out = [get(ni.generation) for ni in nodes]
        if None in out:
            miss = [i for i, s in enumerate(out) if s is None]
            fresh = compute([nodes[i] for i in miss])
            for i, s in zip(miss, fresh):
                out[i] = s
                memo[nodes[i].generation] = s
        return out  # type: ignore[return-value]


def scorer_for_strategy(strategy: dict) -> ResourceAllocationScorer:
    """The scorer NodeResourcesFitArgs.scoringStrategy describes (already defaulted)."""
    kind = strategy.get("type") or LEAST_ALLOCATED
    resources = [(r["name"], int(r.get("weight") or 1)) for r in strategy.get("resources") or []]
    weights = [w for _, w in resources]
    if kind == LEAST_ALLOCATED:
        fn = least_resource_scorer(weights)
    elif kind == MOST_ALLOCATED:
        fn = most_resource_scorer(weights)
    elif kind == REQUESTED_TO_CAPACITY_RATIO:
        shape = [(int(p.get("utilization", 0)), int(p.get("score", 0)))
                 for p in ((strategy.get("requestedToCapacityRatio") or {}).get("shape") or [])]
        fn = requested_to_capacity_ratio_scorer(weights, shape)
    else:
        raise ValueError(f"scoring strategy {kind} is not supported")
    return ResourceAllocationScorer(kind, resources, fn, use_requested=False, strategy=kind)


def is_best_effort(pod_requests: Sequence[int]) -> bool:
    return not any(pod_requests)

