"""The parts of a phalanx cluster config (`phalanx.dev/v1alpha1`) about failures: the
kube-controller-manager settings that decide how fast a failed node's pods leave
(`controllerManager:`) and failures scheduled against the cluster's clock (`failures:`).

    controllerManager:
      nodeMonitorPeriod: 1s            # --node-monitor-period (5s)
      nodeMonitorGracePeriod: 4s       # --node-monitor-grace-period (50s)
      nodeStartupGracePeriod: 1m       # --node-startup-grace-period (1m)
      nodeEvictionRate: 10             # --node-eviction-rate, nodes per second (0.1)
      secondaryNodeEvictionRate: 0.01  # --secondary-node-eviction-rate (0.01)
      largeClusterSizeThreshold: 50    # --large-cluster-size-threshold (50)
      unhealthyZoneThreshold: 0.55     # --unhealthy-zone-threshold (0.55)
      terminatedPodGCThreshold: 12500  # --terminated-pod-gc-threshold (12500; 0: off)
    failures:
    - {at: 60s, nodes: {matchLabels: {rack: r1}}, recoverAfter: 5m}   # a rack loses power
    - {at: 2m, node: worker-3, devices: [gpu-0]}                       # a GPU fails for good

`parse_controller_manager` and `parse_failures` check a section and keep it, normalized, in the
ClusterSpec (`controller_manager`, `failures`); problems name the file and field like every other
config error. The failures' runner is `phalanx.controllers.failureschedule`.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.labelselectors import label_selector_matches, validate_label_selector
from phalanx.cluster.configparse import duration_seconds
from phalanx.cluster.spec import ClusterSpec, NodeSpec
from phalanx.machinery.names import dns1123_subdomain_errors
from phalanx.machinery.strictyaml import DocumentReader, key_path, quote

CONTROLLER_MANAGER_DURATIONS = ("nodeMonitorPeriod", "nodeMonitorGracePeriod", "nodeStartupGracePeriod")
CONTROLLER_MANAGER_RATES = ("nodeEvictionRate", "secondaryNodeEvictionRate", "unhealthyZoneThreshold")
CONTROLLER_MANAGER_COUNTS = ("largeClusterSizeThreshold", "terminatedPodGCThreshold")
CONTROLLER_MANAGER_FIELDS = CONTROLLER_MANAGER_DURATIONS + CONTROLLER_MANAGER_RATES + CONTROLLER_MANAGER_COUNTS
FAILURE_FIELDS = ("at", "node", "nodes", "devices", "recoverAfter")
DURATION_HELP = "use Go durations such as 500ms, 30s, 5m"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def parse_controller_manager(section: Any, reader: DocumentReader, spec: ClusterSpec) -> None:
    """`controllerManager:`: durations in seconds, rates and thresholds as numbers."""
    if not reader.expect(section, "controllerManager", "mapping"):
        return
    reader.fields(section, "controllerManager", CONTROLLER_MANAGER_FIELDS)
    for k, v in section.items():
        path = key_path("controllerManager", str(k))
        if k in CONTROLLER_MANAGER_DURATIONS:
            seconds = duration_seconds(v)
            if seconds is None or seconds <= 0:
                reader.error(path, f"invalid duration {quote(str(v))}: must be positive; {DURATION_HELP}")
            else:
                spec.controller_manager[k] = seconds
        elif k in CONTROLLER_MANAGER_RATES:
            number = _number(v)
            if number is None or number < 0 or (k == "unhealthyZoneThreshold" and number > 1):
                limit = "between 0 and 1" if k == "unhealthyZoneThreshold" else "0 or more"
                reader.error(path, f"invalid value {quote(str(v))}: must be a number {limit}")
            else:
                spec.controller_manager[k] = number
        elif k in CONTROLLER_MANAGER_COUNTS:
            if reader.expect(v, path, "integer"):
                if v < 0:
                    reader.error(path, f"invalid value {v}: must be 0 or more")
                else:
                    spec.controller_manager[k] = v


def parse_failures(value: Any, reader: DocumentReader, spec: ClusterSpec, nodes: list[NodeSpec]) -> None:
    """`failures:`: a list of scheduled failures; each names its nodes (`node` or a label selector
    in `nodes` that matches at least one node of the config), optionally `devices`, a start `at`
    and an optional `recoverAfter`."""
    if not reader.expect(value, "failures", "list"):
        return
    kept = []
    for i, item in enumerate(value):
        where = f"failures[{i}]"
        if reader.expect(item, where, "mapping"):
            entry = _parse_failure(item, where, reader, nodes)
            if entry is not None:
                kept.append(entry)
    spec.failures = kept


def _parse_failure(item: dict, where: str, reader: DocumentReader, nodes: list[NodeSpec]) -> dict | None:
    before = len(reader.problems)
    reader.fields(item, where, FAILURE_FIELDS)
    entry: dict[str, Any] = {}
    at = _duration(item.get("at"), f"{where}.at", reader, required=True, positive=False)
    if at is not None:
        entry["at"] = at
    if "recoverAfter" in item:
        recover = _duration(item["recoverAfter"], f"{where}.recoverAfter", reader, required=True, positive=True)
        if recover is not None:
            entry["recoverAfter"] = recover
    _parse_targets(item, where, reader, nodes, entry)
    if "devices" in item and reader.list_of(item["devices"], f"{where}.devices", "string"):
        if not item["devices"]:
            reader.error(f"{where}.devices", "must name at least one device (or \"*\" for all)")
        for j, name in enumerate(item["devices"]):
            if name != "*" and dns1123_subdomain_errors(name.split("/")[-1]):
                reader.error(f"{where}.devices[{j}]", f"invalid device name {quote(name)}")
        entry["devices"] = list(item["devices"])
    return entry if len(reader.problems) == before else None


def _duration(value: Any, path: str, reader: DocumentReader, *, required: bool, positive: bool) -> float | None:
    if value is None:
        if required:
            reader.error(path, "required")
        return None
    seconds = duration_seconds(value)
    if seconds is None or (positive and seconds <= 0):
        reader.error(path, f"invalid duration {quote(str(value))}: {DURATION_HELP}")
        return None
    return seconds


def _parse_targets(item: dict, where: str, reader: DocumentReader, nodes: list[NodeSpec], entry: dict) -> None:
    """Exactly one of `node` (a node of the config) and `nodes` (a label selector matching some)."""
    if ("node" in item) == ("nodes" in item):
        reader.error(where, "set exactly one of node (a node name) and nodes (a label selector)")
        return
    names = [n.name for n in nodes]
    if "node" in item:
        if reader.expect(item["node"], f"{where}.node", "string"):
            if item["node"] not in names:
                reader.error(f"{where}.node", f"no node {quote(item['node'])} in this cluster")
            entry["node"] = item["node"]
        return
    selector = item["nodes"]
    if not reader.expect(selector, f"{where}.nodes", "mapping"):
        return
    reader.fields(selector, f"{where}.nodes", ("matchLabels", "matchExpressions"))
    errors = validate_label_selector(selector, f"{where}.nodes")
    for e in errors:
        reader.error(e.field, e.body())
    if not errors and not any(label_selector_matches(selector, n.labels) for n in nodes):
        reader.error(f"{where}.nodes", "matches no node of this cluster")
    entry["nodes"] = selector
