"""Opportunistic batching (KEP-5598, gate `OpportunisticBatching`): reuse one cycle's scores for
the next pods that look the same to every plugin.

A full cycle filters and scores hundreds of nodes. When the next pod has the same *signature*
(every Filter/Score plugin says "the fields I read are equal", see `Framework.sign_pod`), the
nodes it would score are the same nodes with the same scores, except the node the previous pod
went to. So the batch keeps the scored feasible nodes, best first, and for the next pod of the
signature:

1. re-filters and re-scores the node the previous pod took (upstream's "rescoring" extension:
   nodes that hold several pods keep batching) and puts it back in order;
2. takes the best node, after checking it is unchanged since it was scored (its NodeInfo
   generation and Node object) and still passes Filter for this pod.

Re-scoring one node only re-runs the Score plugins whose result depends on the pods on the node
(`ScorePlugin.SCORE_DEPENDS_ON_NODE_PODS`); the others (taints, node affinity) keep their
normalized part from the full cycle. A pod whose active Score plugins would need a normalization
across all nodes is not signable.

The batch is dropped when the signature changes, when a cycle in between did something else,
after 500 ms (upstream's maxBatchAge), when the snapshot is another one (placements of a pod
group), when a node changed under it in a way it cannot re-score, or when its best node no
longer fits. Placement quality: the nodes come from one full cycle's `percentageOfNodesToScore`
sample, refreshed every 500 ms at most.
"""

from __future__ import annotations

import bisect
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from .cycle_state import CycleState
from .interface import PreScorePlugin
from .status import Code
from .types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from .results import ScoreResult
    from .runtime import Framework
    from .snapshot import Snapshot

MAX_BATCH_AGE_SECONDS = 0.5
# How many changed nodes a hint re-scores before it gives up on the batch.
_MAX_RESCORES_PER_HINT = 8


class _Entry:
    """A scored node of the batch, ordered best first (then by a random tie-break)."""

    __slots__ = ("key", "name", "total", "static", "generation", "node")

    def __init__(self, total: int, tie: float, name: str, static: int, generation: int, node: Any):
        self.key = (-total, tie)
        self.name = name
        self.total = total
        self.static = static  # the part of `total` from plugins that ignore the node's pods
        self.generation = generation
        self.node = node  # the Node object scored: another one means labels or taints may differ

    def __lt__(self, other: "_Entry") -> bool:
        return self.key < other.key


class _BatchState:
    __slots__ = ("signature", "snapshot", "entries", "created", "last_cycle", "pending", "skip_score", "cycle_state")

    def __init__(self, signature: Any, snapshot: "Snapshot", entries: list[_Entry], created: float,
                 cycle: int, chosen: Optional[_Entry], skip_score: frozenset[str], cycle_state: CycleState):
        self.signature = signature
        self.snapshot = snapshot
        self.entries = entries
        self.created = created
        self.last_cycle = cycle
        self.pending = chosen  # the node the last pod went to: re-scored before the next hint
        self.skip_score = skip_score
        # The full cycle's PreFilter/PreScore results: the signed plugins compute them from the
        # signed fields only, so every pod of the signature starts from a clone of them.
        self.cycle_state = cycle_state


class OpportunisticBatch:
    """One profile's batch (the Framework owns one when the gate is on)."""

    def __init__(self, fw: "Framework", clock: Callable[[], float] = time.monotonic):
        self.fw = fw
        self.clock = clock
        self.state: Optional[_BatchState] = None
        self.batched_pods = 0  # pods placed from a hint
        self.flushes = 0

    def flush(self) -> None:
        if self.state is not None:
            self.flushes += 1
        self.state = None

    # -- after a full cycle ----------------------------------------------------------------------
    def store(self, signature: Any, state: CycleState, scores: Optional["ScoreResult"], host: str,
              snapshot: "Snapshot", cycle: int) -> None:
        """Keep a full cycle's scores for the pods after it (`scores` None: one feasible node)."""
        if signature is None:
            self.flush()
            return
        fw = self.fw
        static_plugins = fw.static_score_plugin_names
        rng = fw.rng.random
        by_name = snapshot.node_info_map
        entries: list[_Entry] = []
        chosen: Optional[_Entry] = None
        if scores is not None:
            static_scores = [scores.plugin_scores[p] for p in scores.plugin_names if p in static_plugins]
            for i, ni in enumerate(scores.nodes):
                static = sum(s[i] for s in static_scores) if static_scores else 0
                e = _Entry(scores.totals[i], rng(), ni.name, static, ni.generation, ni.node)
                if ni.name == host and chosen is None:
                    chosen = e
                else:
                    entries.append(e)
            entries.sort()
        else:
            host_info = by_name.get(host)
            if host_info is not None:
                chosen = _Entry(0, rng(), host, 0, host_info.generation, host_info.node)
        self.state = _BatchState(signature, snapshot, entries, self.clock(), cycle, chosen,
                                 frozenset(state.skip_score_plugins), state.clone())

    # -- the next pod --------------------------------------------------------------------------
    def prepare(self, signature: Any, state: CycleState, snapshot: "Snapshot", cycle: int) -> bool:
        """Whether the batch can serve the pod of `signature` in this cycle; if so, `state` gets
        the full cycle's PreFilter and PreScore results (cloned). Otherwise the batch is dropped."""
        b = self.state
        if b is None:
            return False
        if (signature is None or b.signature != signature or b.snapshot is not snapshot
                or b.last_cycle != cycle - 1 or self.clock() - b.created > MAX_BATCH_AGE_SECONDS):
            self.flush()
            return False
        # Shared, not cloned: Filter and Score only read PreFilter/PreScore results; what-if
        # evaluation (nominated pods, preemption) clones the state before it changes anything.
        src = b.cycle_state
        state._storage.update(src._storage)
        state.skip_filter_plugins = src.skip_filter_plugins
        state.skip_score_plugins = src.skip_score_plugins
        return True

    def hint(self, state: CycleState, pod: PodInfo, snapshot: "Snapshot",
             cycle: int) -> Optional[tuple[NodeInfo, int, list[_Entry]]]:
        """The node for `pod` from the batch, with its score and the next best entries, or None
        (the batch is dropped; run a full cycle). Call after `prepare` said yes."""
        b = self.state
        if b is None:
            return None
        fw = self.fw
        by_name = snapshot.node_info_map
        entries = b.entries
        if b.pending is not None:
            prev, b.pending = b.pending, None
            ni = by_name.get(prev.name)
            if ni is not None:
                if ni.node is not prev.node:
                    self.flush()
                    return None
                if fw.run_filter_plugins(state, pod, ni) is None:
                    total = self._rescore(state, pod, ni, prev.static)
                    if total is None:
                        self.flush()
                        return None
                    bisect.insort(entries, _Entry(total, fw.rng.random(), prev.name, prev.static, ni.generation, ni.node))
        rescored = 0
        while entries:
            top = entries[0]
            ni = by_name.get(top.name)
            if ni is None:  # the node is gone
                entries.pop(0)
                continue
            if ni.node is not top.node:
                break
            fits = fw.run_filter_plugins(state, pod, ni) is None
            if ni.generation != top.generation:  # changed since scored (e.g. our own pod confirmed)
                entries.pop(0)
                rescored += 1
                if rescored > _MAX_RESCORES_PER_HINT:
                    break
                if fits:
                    total = self._rescore(state, pod, ni, top.static)
                    if total is None:
                        break
                    bisect.insort(entries, _Entry(total, fw.rng.random(), top.name, top.static, ni.generation, ni.node))
                continue
            if not fits:
                break
            entries.pop(0)
            b.pending = top
            b.last_cycle = cycle
            self.batched_pods += 1
            return ni, top.total, entries[:4]
        self.flush()
        return None

    def _rescore(self, state: CycleState, pod: PodInfo, ni: NodeInfo, static: int) -> Optional[int]:
        """The node's total score for `pod` now: `static` plus the pod-dependent plugins (those
        the full cycle did not skip; equal signatures skip the same ones)."""
        fw = self.fw
        nodes = [ni]
        total = static
        skip = self.state.skip_score  # type: ignore[union-attr]
        for pl in fw.dynamic_score_plugins:
            name = pl.NAME or pl.name()
            if name in skip:
                continue
            if pl.score_extensions() is not None:
                return None  # would need all nodes to normalize
            if isinstance(pl, PreScorePlugin):
                st = pl.pre_score(state, pod, nodes)
                if st is not None and st.code != Code.Success:
                    return None
            scores, st = pl.score_nodes(state, pod, nodes)
            if st is not None and st.code != Code.Success:
                return None
            total += scores[0] * fw.score_plugin_weight.get(name, 1)
        return total
