"""TopologyPlacementGenerator (PlacementGenerate): one candidate Placement per topology domain.

Upstream 1.36 behaviour (KEP-5732, plugin package `topologyaware`):

- A PodGroup with `spec.schedulingConstraints.topology[0].key` (e.g. `topology.kubernetes.io/rack`)
  gets one Placement per distinct value of that node label among the parent placement's nodes,
  named `<key>=<value>` (`topology.kubernetes.io/rack=rack-3`). Nodes without the label are in
  no placement, so they are never used for the group.
- A group that already has pods scheduled (assumed or bound) is held to the domain those pods
  occupy: late members stay in the domain. Scheduled pods on a node without the label, or in more
  than one domain, are an error (upstream's messages).
- No constraint: the parent placement, unchanged.

phalanx extension (gate `PhalanxPreferredTopology`, default on; docs/topology.md): the PodGroup
annotation `scheduling.phalanx.dev/preferred-topology` names one or more node label keys,
tightest first (`topology.kubernetes.io/rack` or `example.com/nvlink,topology.kubernetes.io/rack`).
Inside each required domain (or the whole parent when there is none) the plugin adds the
preferred domains as placements of lower `rank`: rank 0 for the first preferred level, 1 for the
next, and the required domains (or the parent) last. The group cycle (`placementsearch`) tries
rank by rank and keeps the first rank that has a feasible placement, so a plain 1.36 manifest
(no annotation) gets exactly upstream's single rank. Late members prefer the preferred domain
their group already occupies at each level.

With `TopologyAwareWorkloadScheduling` off the plugin returns the parent (upstream runs no
placement algorithm then), whatever the PodGroup says.

The scheduler registers the plugin with `factory(index, scheduled_pods, snapshot)`: the node label
index (`NodeTopologyIndex`, fed by its Node informer) groups nodes by label values once per
topology change (a node added, removed or relabelled), and each cycle gathers a domain's
NodeInfos from the snapshot by position, so no label is looked up per node and cycle. `new`
(no scheduler state: unit tests, plain frameworks) groups the parent's nodes itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Any, Callable, Iterable, Mapping, Optional

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (EnqueueExtensions, Handle, Placement, PlacementGeneratePlugin,
                                                   PodGroupInfo)
from phalanx.scheduler.framework.snapshot import Snapshot
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from ..cache import pod_group_key
from . import names

PREFERRED_TOPOLOGY_ANNOTATION = "scheduling.phalanx.dev/preferred-topology"
PREFERRED_TOPOLOGY_GATE = "PhalanxPreferredTopology"
TAS_GATE = "TopologyAwareWorkloadScheduling"

ScheduledPods = Callable[[str], Iterable[tuple[PodInfo, str]]]


@dataclass(eq=False)
class DomainPlacement(Placement):
    """A Placement for one topology domain. `rank` orders preference tiers (0 is tried first);
    `domain` is the ((label key, value), ...) the nodes share."""

    rank: int = 0
    domain: tuple[tuple[str, str], ...] = ()


def required_topology_key(pod_group: Optional[Obj]) -> Optional[str]:
    """`spec.schedulingConstraints.topology[0].key`, or None (1.36 allows one entry)."""
    sc = ((pod_group or {}).get("spec") or {}).get("schedulingConstraints") or {}
    topology = sc.get("topology") or []
    if not topology:
        return None
    return (topology[0] or {}).get("key") or None


def preferred_topology_keys(pod_group: Optional[Obj]) -> list[str]:
    """The annotation's keys, tightest first, without blanks or repeats."""
    raw = (((pod_group or {}).get("metadata") or {}).get("annotations") or {}).get(PREFERRED_TOPOLOGY_ANNOTATION) or ""
    out: list[str] = []
    for part in raw.split(","):
        key = part.strip()
        if key and key not in out:
            out.append(key)
    return out


def natural_key(text: str) -> list:
    """Sort key that orders `rack-2` before `rack-10` (strings at even, ints at odd positions)."""
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"(\d+)", text))]


@lru_cache(maxsize=65536)
def domain_name(domain: tuple[tuple[str, str], ...]) -> str:
    """`topology.kubernetes.io/rack=rack-3`; nested levels joined by "/" as the framework does."""
    return "/".join(f"{k}={v}" for k, v in domain)


class NodeTopologyIndex:
    """Node labels kept current from Node events, and nodes grouped by label values.

        index = NodeTopologyIndex(); index.watch(node_informer)
        index.group_by(("topology.kubernetes.io/rack",))   # {("rack-0",): ["node-0", ...], ...}

    A grouping is computed once and reused until a node is added, removed or relabelled (status
    and heartbeat updates do not count), so its cost is paid per topology change, not per cycle.
    """

    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}
        self.version = 0
        self._groupings: dict[tuple[str, ...], tuple[int, list[tuple[tuple[str, ...], list[str]]]]] = {}

    def watch(self, informer: Any) -> None:
        informer.add_event_handler(on_add=self.set_node, on_update=lambda old, new: self.set_node(new),
                                   on_delete=self.remove_node)

    def set_node(self, node: Obj) -> None:
        md = node.get("metadata") or {}
        name = md.get("name") or ""
        labels = md.get("labels") or {}
        if name in self._labels and self._labels[name] == labels:
            return
        self._labels[name] = dict(labels)
        self.version += 1

    def remove_node(self, node: Obj) -> None:
        if self._labels.pop((node.get("metadata") or {}).get("name") or "", None) is not None:
            self.version += 1

    def labels_of(self, node_name: str) -> Optional[Mapping[str, str]]:
        return self._labels.get(node_name)

    def __len__(self) -> int:
        return len(self._labels)

    def group_by(self, keys: tuple[str, ...]) -> list[tuple[tuple[str, ...], list[str]]]:
        """(values of `keys`, node names) per domain, domains in natural order of their values;
        nodes lacking any of the keys are left out."""
        hit = self._groupings.get(keys)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        out: dict[tuple[str, ...], list[str]] = {}
        for name, labels in self._labels.items():
            values = tuple(labels.get(k) for k in keys)
            if None not in values:
                out.setdefault(values, []).append(name)  # type: ignore[arg-type]
        ordered = sorted(out.items(), key=lambda kv: [natural_key(v) for v in kv[0]])
        self._groupings[keys] = (self.version, ordered)
        return ordered


class TopologyPlacementGenerator(PlacementGeneratePlugin, EnqueueExtensions):
    NAME = names.TopologyPlacementGenerator

    def __init__(self, handle: Optional[Handle], index: Optional[NodeTopologyIndex] = None,
                 scheduled_pods: Optional[ScheduledPods] = None, snapshot: Optional[Snapshot] = None):
        self.handle = handle
        self.index = index
        self.scheduled_pods = scheduled_pods
        # The scheduler's cluster-wide snapshot (the handle's may be a placement's view).
        self.snapshot = snapshot
        self._keys_seen: set[str] = set()
        self._positions: dict[tuple[str, ...], tuple[int, int, list]] = {}

    def _gate(self, name: str) -> bool:
        try:
            return bool(self.handle is None or self.handle.feature_enabled(name))
        except Exception:  # a feature gate set that does not know the gate
            return False

    # -- PlacementGenerate ---------------------------------------------------------------------
    def generate_placements(self, state: CycleState, pod_group: PodGroupInfo,
                            parent: Placement) -> tuple[list[Placement], Optional[Status]]:
        if not self._gate(TAS_GATE):  # placement scheduling is off: the group cycle as without TAS
            return [parent], None
        pg = pod_group.pod_group
        key = required_topology_key(pg)
        preferred = [k for k in preferred_topology_keys(pg) if k != key] if self._gate(PREFERRED_TOPOLOGY_GATE) else []
        if key is None and not preferred:
            return [parent], None
        self._keys_seen.update(k for k in (key, *preferred) if k)
        scheduled = list(self.scheduled_pods(pod_group.key)) if self.scheduled_pods is not None else []
        occupied, err = self._occupied_domains(key, preferred, scheduled)
        if err:
            return [], Status.new(Code.Error, f"cannot determine domain for already scheduled pods: {err}")
        required: dict[str, list[NodeInfo]] = {}  # value -> nodes, values in natural order
        if key is not None:
            required = {vals[0]: nodes for vals, nodes in self._domains((key,), parent)
                        if key not in occupied or vals[0] == occupied[key]}
        placements = self._preferred_placements(key, preferred, parent, required, occupied if scheduled else None)
        last = len(preferred)
        if key is None:
            placements.append(DomainPlacement(parent.name, parent.nodes, rank=last))
            return placements, None
        for value, nodes in required.items():
            domain = ((key, value),)
            placements.append(DomainPlacement(domain_name(domain), nodes, rank=last, domain=domain))
        if not required:
            if key in occupied:
                return [], Status.new(Code.Unschedulable, f"no nodes left in topology domain '{key}={occupied[key]}' "
                                                          f"of the pod group's scheduled pods")
            return [], Status.new(Code.Unschedulable, f"no nodes found with topology label '{key}'")
        return placements, None

    def _occupied_domains(self, key: Optional[str], preferred: list[str],
                          scheduled: list[tuple[PodInfo, str]]) -> tuple[dict[str, Optional[str]], str]:
        """The domain value per key that the group's scheduled pods occupy (None: not one domain),
        or an error when they do not share one domain of the required key."""
        occupied: dict[str, Optional[str]] = {}
        if not scheduled:
            return occupied, ""
        for k in (key, *preferred):
            if k is None:
                continue
            value, err = self._occupied_domain(k, scheduled)
            if k == key and err:
                return occupied, err
            occupied[k] = None if err else value
        return occupied, ""

    def _preferred_placements(self, key: Optional[str], preferred: list[str], parent: Placement,
                              required: dict[str, list[NodeInfo]],
                              occupied: Optional[dict[str, Optional[str]]]) -> list[Placement]:
        """The preferred domains inside each required domain (or the parent), rank by rank;
        `occupied` (late members) keeps only the preferred domain the group already shares."""
        placements: list[Placement] = []
        for rank, pkey in enumerate(preferred):
            if occupied is not None and occupied.get(pkey) is None:
                continue
            keys = (key, pkey) if key is not None else (pkey,)
            for vals, nodes in self._domains(keys, parent):
                outer = required.get(vals[0]) if key is not None else parent.nodes
                if outer is None or len(nodes) >= len(outer):
                    continue  # not inside a candidate required domain, or no tighter than it
                if occupied is not None and vals[-1] != occupied[pkey]:
                    continue
                domain = tuple(zip(keys, vals))
                placements.append(DomainPlacement(domain_name(domain), nodes, rank=rank, domain=domain))
        return placements

    def _domains(self, keys: tuple[str, ...], parent: Placement) -> list[tuple[tuple[str, ...], list[NodeInfo]]]:
        """(values of `keys`, the parent's nodes with those values) per domain, values in natural
        order; nodes lacking a key are in no domain.

        With the index, a domain's nodes are picked from the parent's node list (the snapshot's
        order) by position: positions are computed once per topology change and checked per
        cycle (list length, and each domain's first node), so a cycle costs one C-level gather
        per domain instead of a label lookup per node."""
        index = self.index
        if index is None or not self._indexed(parent):
            out: dict[tuple[str, ...], list[NodeInfo]] = {}
            for ni in parent.nodes:
                values = tuple(ni.labels.get(k) for k in keys)
                if None not in values:
                    out.setdefault(values, []).append(ni)  # type: ignore[arg-type]
            return sorted(out.items(), key=lambda kv: [natural_key(v) for v in kv[0]])
        lst = parent.nodes
        hit = self._positions.get(keys)
        if hit is None or hit[0] != index.version or hit[1] != len(lst) or \
                any(lst[first].name != name for _, first, name, _, _ in hit[2]):
            where = {ni.name: i for i, ni in enumerate(lst)}
            entries = []
            for vals, node_names in index.group_by(keys):
                pos = [where[n] for n in node_names if n in where]
                if pos:
                    entries.append((vals, pos[0], lst[pos[0]].name, itemgetter(*pos), len(pos)))
            hit = self._positions[keys] = (index.version, len(lst), entries)
        out_list = []
        for vals, _, _, gather, n in hit[2]:
            got = gather(lst)
            out_list.append((vals, list(got) if n > 1 else [got]))
        return out_list

    def _indexed(self, parent: Placement) -> bool:
        """The index speaks for the parent when the parent is the whole cluster snapshot."""
        return self.index is not None and self.snapshot is not None and \
            len(parent.nodes) == self.snapshot.num_nodes() == len(self.index)

    def _node_labels(self, node_name: str) -> Optional[Mapping[str, str]]:
        if self.index is not None:
            return self.index.labels_of(node_name)
        snap = self.snapshot if self.snapshot is not None else (
            self.handle.snapshot_shared_lister() if self.handle is not None else None)
        ni = snap.node_info_map.get(node_name) if snap is not None else None
        return ni.labels if ni is not None else None

    def _occupied_domain(self, key: str, scheduled: list[tuple[PodInfo, str]]) -> tuple[Optional[str], str]:
        """(the one value of `key` the scheduled pods' nodes share, "") or (None, why not)."""
        domain: Optional[str] = None
        for pi, node_name in scheduled:
            labels = self._node_labels(node_name)
            if labels is None:
                return None, (f"getting node for pod {pi.namespace}/{pi.name}: "
                              f"nodeinfo not found for node name \"{node_name}\"")
            value = labels.get(key)
            if value is None:
                return None, f"no topology domain found for pod {pi.namespace}/{pi.name}"
            if domain is not None and domain != value:
                return None, f"more than 1 domain found for pod group: {domain}, {value}"
            domain = value
        return domain, ""

    # -- requeueing ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                                 self._node_topology_changed),
            ClusterEventWithHint(ClusterEvent(EventResource.AssignedPod, ActionType.Delete), self._same_group_pod),
        ]

    def _node_topology_changed(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None:
            return QueueingHint.QueueSkip
        after = (new.get("metadata") or {}).get("labels") or {}
        before = ((old or {}).get("metadata") or {}).get("labels") or {}
        keys = self._keys_seen or set(after) | set(before)
        if any(after.get(k) != before.get(k) for k in keys):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    @staticmethod
    def _same_group_pod(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        g = pod_group_key(pod)
        return QueueingHint.Queue if g is not None and old is not None and pod_group_key(old) == g \
            else QueueingHint.QueueSkip


def factory(index: Optional[NodeTopologyIndex] = None, scheduled_pods: Optional[ScheduledPods] = None,
            snapshot: Optional[Snapshot] = None) -> Callable[[Optional[Mapping[str, Any]], Handle], TopologyPlacementGenerator]:
    """The plugin factory the scheduler registers: `index` fed by its Node informer,
    `scheduled_pods(group_key)` yields (PodInfo, node name) for the group's assumed or bound pods,
    `snapshot` is the scheduler's cluster-wide Snapshot (refreshed in place every cycle)."""
    def new(args: Optional[Mapping[str, Any]], handle: Handle) -> TopologyPlacementGenerator:
        return TopologyPlacementGenerator(handle, index, scheduled_pods, snapshot)
    return new


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> TopologyPlacementGenerator:
    """Without scheduler state: groups the parent's nodes each time, knows no scheduled pods."""
    return TopologyPlacementGenerator(handle)
