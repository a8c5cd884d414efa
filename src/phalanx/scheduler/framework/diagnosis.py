"""Why a pod did not fit: per-node statuses, and upstream's FailedScheduling message.

    d = Diagnosis()
    d.node_to_status.set("n1", Status.new(Code.Unschedulable, "Insufficient cpu").with_plugin("NodeResourcesFit"))
    str(FitError(pod, num_all_nodes=4, diagnosis=d))
    # "0/4 nodes are available: 1 Insufficient cpu."

The message format is upstream's FitError.Error(): "0/N nodes are available:" followed by the
PreFilter message, or by every reason counted over nodes as "<count> <reason>" sorted as strings
and joined with ", ", then the PostFilter message (e.g. preemption's). Nodes absent from the map
count with the map's `absent_nodes_status` (what PreFilter decided for all nodes, or "node(s)
didn't satisfy plugin(s) [...]" when PreFilter narrowed the node set).

`Diagnosis.plugin_counts()` and `reason_counts()` give the same data as structures, for
`explain` output and PodGroup conditions.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator, Optional

from .status import Code, Status
from .types import PodInfo

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class NodeToStatus:
    """Node name -> Status for nodes rejected by PreFilter/Filter; one shared status for the
    rest (`absent_nodes_status`, UnschedulableAndUnresolvable "" by default)."""

    __slots__ = ("_map", "absent_nodes_status")

    def __init__(self, statuses: Optional[dict[str, Status]] = None, absent_nodes_status: Optional[Status] = None):
        self._map: dict[str, Status] = dict(statuses or {})
        self.absent_nodes_status = absent_nodes_status or Status.new(Code.UnschedulableAndUnresolvable)

    def get(self, node_name: str) -> Status:
        return self._map.get(node_name, self.absent_nodes_status)

    def set(self, node_name: str, status: Status) -> None:
        self._map[node_name] = status

    def set_many(self, items: Iterable[tuple[str, Status]]) -> None:
        self._map.update(items)

    def set_absent_nodes_status(self, status: Status) -> None:
        self.absent_nodes_status = status

    def __len__(self) -> int:
        return len(self._map)

    def len(self) -> int:
        return len(self._map)

    def items(self) -> Iterator[tuple[str, Status]]:
        return iter(self._map.items())

    def nodes_for_status_code(self, all_node_names: list[str], code: Code) -> list[str]:
        """Names of nodes whose status has `code`, absent nodes included when the absent
        status has it (NodesForStatusCode)."""
        if self.absent_nodes_status.code == code:
            return [n for n in all_node_names if n not in self._map or self._map[n].code == code]
        return [n for n in all_node_names if n in self._map and self._map[n].code == code]


class Diagnosis:
    __slots__ = ("node_to_status", "unschedulable_plugins", "pending_plugins", "pre_filter_msg", "post_filter_msg")

    def __init__(self, node_to_status: Optional[NodeToStatus] = None):
        self.node_to_status = node_to_status if node_to_status is not None else NodeToStatus()
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.pre_filter_msg = ""
        self.post_filter_msg = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.Pending:
            self.pending_plugins.add(status.plugin)

    def reason_counts(self, num_all_nodes: int) -> Counter[str]:
        """reason -> number of nodes, as the FailedScheduling message counts them."""
        counts: Counter[str] = Counter()
        for _, st in self.node_to_status.items():
            for r in st.reasons():
                counts[r] += 1
        absent = num_all_nodes - len(self.node_to_status)
        if absent > 0:
            for r in self.node_to_status.absent_nodes_status.reasons():
                counts[r] += absent
        return counts

    def plugin_counts(self) -> Counter[str]:
        """plugin name -> number of nodes it rejected (explicitly recorded nodes only)."""
        counts: Counter[str] = Counter()
        for _, st in self.node_to_status.items():
            counts[st.plugin or ""] += 1
        return counts


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """Upstream's FitError.Error() text."""
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        histogram = sorted(f"{n} {reason}" for reason, n in diagnosis.reason_counts(num_all_nodes).items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        msg += f" {diagnosis.post_filter_msg}"
    return msg


class FitError(Exception):
    """The pod fits no node; `str()` is the FailedScheduling event message."""

    def __init__(self, pod: Optional[PodInfo], num_all_nodes: int, diagnosis: Diagnosis):
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)

    def error(self) -> str:
        return str(self)


class SchedulingError(Exception):
    """An internal failure of a cycle (a plugin returned Error); carries the Status."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


class NoNodesAvailableError(Exception):
    def __init__(self) -> None:
        super().__init__(ERR_NO_NODES_AVAILABLE)
