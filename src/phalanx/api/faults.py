"""Failures on demand: the Node annotations that fail a simulated node or some of its DRA devices.

A failure is stored in the API, so it survives a control-plane restart and shows in kubectl:

    fault.phalanx.dev/node: "down"            the node's simulated kubelet stops: no Lease renewals,
                                              no node status, no pod work (pods keep their last status)
    fault.phalanx.dev/devices: "gpu-0,gpu-3"  the simulated DRA drivers publish these devices (names as
                                              in the node's ResourceSlices, `*` for all) with the
                                              NoExecute taint `<driver>/unhealthy`

Removing an annotation (or a device from the list) recovers. `phalanx fail` / `phalanx recover`
and the cluster config's `failures:` schedule write them; the simulated kubelet
(`phalanx.nodes.kubelet`) and DRA drivers (`phalanx.nodes.dradriver`) act on them. Upstream's
controllers (node lifecycle, taint eviction, device taint eviction) then react as they would to a
real outage. See docs/failures.md.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

NODE_FAULT_ANNOTATION = "fault.phalanx.dev/node"
NODE_DOWN = "down"
DEVICE_FAULT_ANNOTATION = "fault.phalanx.dev/devices"
ALL_DEVICES = "*"

# The key a DRA driver's own taints carry (KEP-5055: the driver's name as the domain); drivers that
# report health this way use `<driver>/unhealthy` with effect NoExecute.
DEVICE_UNHEALTHY_TAINT = "unhealthy"
DEVICE_TAINT_EFFECT = "NoExecute"

# Node taints and conditions of upstream's node lifecycle (k8s.io/api/core/v1 well-known taints).
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NODE_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"

Obj = dict[str, Any]


def _annotations(node: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((node or {}).get("metadata") or {}).get("annotations") or {}


def node_is_down(node: Mapping[str, Any] | None) -> bool:
    """Whether the node carries `fault.phalanx.dev/node: down`."""
    return str(_annotations(node).get(NODE_FAULT_ANNOTATION, "")).strip() == NODE_DOWN


def parse_device_list(value: Any) -> list[str]:
    """The device names of a `fault.phalanx.dev/devices` value, in order, without blanks or repeats."""
    names: list[str] = []
    for part in str(value or "").split(","):
        name = part.strip()
        if name and name not in names:
            names.append(name)
    return names


def failed_devices(node: Mapping[str, Any] | None) -> list[str]:
    """The node's failed device names (`["*"]` when all of them failed)."""
    names = parse_device_list(_annotations(node).get(DEVICE_FAULT_ANNOTATION))
    return [ALL_DEVICES] if ALL_DEVICES in names else names


def format_device_list(names: Iterable[str]) -> str:
    """The annotation value for `names` (`*` wins over any name)."""
    unique = parse_device_list(",".join(names))
    return ALL_DEVICES if ALL_DEVICES in unique else ",".join(unique)


def device_matches(failed: Iterable[str], device_name: str) -> bool:
    """Whether `device_name` is failed by the list: named, `*`, or a partition of a named device
    (`gpu-0` fails `gpu-0-partition-1` and `gpu-0-full`)."""
    for name in failed:
        if name == ALL_DEVICES or name == device_name:
            return True
        if device_name.startswith(name + "-partition-") or device_name == name + "-full":
            return True
    return False


def device_failure_taint(driver: str) -> Obj:
    """The taint a simulated driver publishes on a failed device (`timeAdded` is set by the API
    server when the taint first appears)."""
    return {"key": f"{driver}/{DEVICE_UNHEALTHY_TAINT}", "effect": DEVICE_TAINT_EFFECT}


def annotations_with_node_fault(node: Mapping[str, Any], down: bool) -> dict[str, str] | None:
    """The node's annotations with the node fault set (`down`) or cleared; None when unchanged."""
    annotations = dict(_annotations(node))
    if node_is_down(node) == down and (down or NODE_FAULT_ANNOTATION not in annotations):
        return None
    if down:
        annotations[NODE_FAULT_ANNOTATION] = NODE_DOWN
    else:
        annotations.pop(NODE_FAULT_ANNOTATION, None)
    return annotations


def annotations_with_device_faults(node: Mapping[str, Any], names: Iterable[str], failed: bool,
                                   published: Iterable[str] = ()) -> dict[str, str] | None:
    """The node's annotations with `names` added to (`failed`) or removed from the failed devices;
    None when unchanged. Recovering some devices of a node whose devices all failed (`*`) needs the
    names the node publishes (`published`); recovering `*` clears the list."""
    annotations = dict(_annotations(node))
    current = failed_devices(node)
    names = parse_device_list(",".join(names))
    if failed:
        new = [ALL_DEVICES] if ALL_DEVICES in names or current == [ALL_DEVICES] else current + names
    elif ALL_DEVICES in names:
        new = []
    else:
        base = list(published) if current == [ALL_DEVICES] else current
        new = [n for n in base if n not in names]
    value = format_device_list(new)
    if value == format_device_list(current) and (value or DEVICE_FAULT_ANNOTATION not in annotations):
        return None
    if value:
        annotations[DEVICE_FAULT_ANNOTATION] = value
    else:
        annotations.pop(DEVICE_FAULT_ANNOTATION, None)
    return annotations
