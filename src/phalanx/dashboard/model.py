"""What the dashboard shows of each object, computed from plain API objects (no I/O here).

One function per row the page draws: `node_cell` (CPU requested ÷ allocatable, GPU devices from
the node's ResourceSlices with the claim holding each), `pod_group_row` (policy, minCount, counts,
scheduled condition, topology constraint and the domain its pods landed in), `claim_row` (state,
devices, reservedFor), `pending_pod_row`; `topology_levels` finds the label keys that group the
nodes. `state.ClusterView` keeps the rows current as objects change; `snapshot(...)` builds the
whole document from lists in one go (tests, and anyone who wants the document without a server).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Callable, Iterable

from phalanx.api.scheduling import fields
from phalanx.machinery.quantity import milli_value, value

Obj = dict[str, Any]

# Label keys that name a place (zone, block, rack, ...); others (arch, instance type) are not levels.
_TOPOLOGY_WORDS = re.compile(r"zone|region|block|rack|spine|superpod|topology|row|cell|island|domain")
_NOT_TOPOLOGY = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
                 "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "node.kubernetes.io/instance-type")
TERMINAL_PHASES = ("Succeeded", "Failed")


def labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def name_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def namespace_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


def natural_key(text: str) -> list:
    """Sort key that orders `rack-2` before `rack-10`."""
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"(\d+)", text))]


def _nests(child: dict[str, str], parent: dict[str, str]) -> bool:
    """Whether every value of the child key lies inside one value of the parent key."""
    seen: dict[str, str] = {}
    for node, value in child.items():
        if seen.setdefault(value, parent.get(node, "")) != parent.get(node, ""):
            return False
    return True


def topology_levels(nodes: Iterable[Obj]) -> list[str]:
    """The label keys that group the nodes, outermost first: keys carried by at least half the
    nodes, with more than one value and fewer values than nodes, ordered by their number of values,
    each kept only when its values nest inside the previous level's."""
    nodes = list(nodes)
    values: dict[str, dict[str, str]] = defaultdict(dict)
    for n in nodes:
        for k, v in labels(n).items():
            if k not in _NOT_TOPOLOGY and not k.startswith("node-role.kubernetes.io/"):
                values[k][name_of(n)] = v
    candidates = [k for k, vs in values.items()
                  if 2 * len(vs) >= len(nodes) and 1 < len(set(vs.values())) < len(nodes)]
    named = [k for k in candidates if _TOPOLOGY_WORDS.search(k)]
    candidates = sorted(named or candidates, key=lambda k: (len(set(values[k].values())), k))
    return _longest_nesting_chain(candidates, values)


def _longest_nesting_chain(keys: list[str], values: dict[str, dict[str, str]]) -> list[str]:
    """The longest sequence of `keys` (sorted by their number of values) in which each key has more
    values than the one before and nests inside it; among equals, the first found."""
    count = {k: len(set(values[k].values())) for k in keys}
    best: dict[str, list[str]] = {}
    for k in keys:
        best[k] = [k]
        for j in keys:
            if j == k or j not in best or count[j] >= count[k] or not _nests(values[k], values[j]):
                continue
            if len(best[j]) + 1 > len(best[k]):
                best[k] = best[j] + [k]
    return max(best.values(), key=len, default=[])


def _pod_request(pod: Obj, resource: str, amount: Callable[[Any], int]) -> int:
    """A pod's request of `resource` as the scheduler counts it: the sum of its containers'
    requests, or its largest init container's when that is more."""
    spec = pod.get("spec") or {}

    def req(c: Obj) -> int:
        q = ((c.get("resources") or {}).get("requests") or {}).get(resource)
        return amount(q) if q is not None else 0
    total = sum(req(c) for c in spec.get("containers") or [])
    init = max((req(c) for c in spec.get("initContainers") or []), default=0)
    return max(total, init)


def pod_cpu_request_milli(pod: Obj) -> int:
    return _pod_request(pod, "cpu", milli_value)


def pod_memory_request_bytes(pod: Obj) -> int:
    return _pod_request(pod, "memory", value)


def is_live(pod: Obj) -> bool:
    """Not Succeeded or Failed: the pod holds (or wants) room on a node."""
    return (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES


def node_name_of(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _ready(node: Obj) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def device_key(driver: str, pool: str, device: str) -> str:
    return f"{driver}/{pool}/{device}"


def claim_device_keys(claim: Obj) -> list[str]:
    """`driver/pool/device` of every device the claim's allocation holds."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [device_key(r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in results]


def slice_devices(resource_slice: Obj) -> tuple[str, list[tuple[str, str, str]]]:
    """(nodeName, [(driver, pool, device)]) of a ResourceSlice; nodeName "" when the slice is not
    one node's (network-attached or all-nodes pools are not drawn on a node)."""
    spec = resource_slice.get("spec") or {}
    driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
    return spec.get("nodeName") or "", [(driver, pool, d.get("name", "")) for d in spec.get("devices") or []]


def node_cell(node: Obj, levels: list[str], cpu_used: int, devices: list[Obj], memory_used: int = 0) -> Obj:
    """One node as the map draws it; `devices` are `{name, driver, pool, claim}` (claim None: free)."""
    node_labels = labels(node)
    allocatable_of = (node.get("status") or {}).get("allocatable") or {}
    allocatable = milli_value(allocatable_of["cpu"]) if allocatable_of.get("cpu") is not None else 0
    memory = value(allocatable_of["memory"]) if allocatable_of.get("memory") is not None else 0
    spec = node.get("spec") or {}
    return {
        "name": name_of(node),
        "path": [node_labels.get(k, "") for k in levels],
        "cpuRequestedMilli": cpu_used,
        "cpuAllocatableMilli": allocatable,
        "cpuFraction": round(cpu_used / allocatable, 4) if allocatable else 0.0,
        "memoryFraction": round(memory_used / memory, 4) if memory else 0.0,
        "ready": _ready(node),
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [t.get("key", "") for t in spec.get("taints") or []],
        "devices": sorted(devices, key=lambda d: (d["driver"], d["pool"], natural_key(d["name"]))),
    }


def pod_group_name(pod: Obj) -> str | None:
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


def condition(obj: Obj, ctype: str) -> Obj | None:
    """The condition of type `ctype` as the page shows it, or None."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return {"type": ctype, "status": c.get("status"), "reason": c.get("reason", ""),
                    "message": c.get("message", "")}
    return None


def conditions(obj: Obj) -> list[Obj]:
    return [{"type": c.get("type", ""), "status": c.get("status", ""), "reason": c.get("reason", ""),
             "message": c.get("message", "")} for c in (obj.get("status") or {}).get("conditions") or []]


def topology_keys(obj: Obj) -> list[str]:
    """`spec.schedulingConstraints.topology[].key` of a PodGroup or CompositePodGroup."""
    topology = ((obj.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
    return [t.get("key", "") for t in topology if isinstance(t, dict)]


def chosen_domains(keys: list[str], nodes: Iterable[str], labels_of: Callable[[str], dict[str, str]]) -> list[Obj]:
    """For each topology key, the values the given nodes carry: one value is the domain the group
    landed in (several would mean the constraint was not kept)."""
    nodes = list(nodes)
    return [{"key": k, "values": sorted({labels_of(n).get(k, "") for n in nodes} - {""}, key=natural_key)}
            for k in keys]


def pod_claims(pod: Obj) -> set[str]:
    """`namespace/claim` of the ResourceClaims a pod uses (from its status, as the kubelet sees them)."""
    ns = namespace_of(pod)
    return {f"{ns}/{s['resourceClaimName']}" for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if isinstance(s, dict) and s.get("resourceClaimName")}


def pod_group_row(pg: Obj, members: list[Obj], labels_of: Callable[[str], dict[str, str]]) -> Obj:
    """A PodGroup as the workloads panel lists it: its counts, the nodes its pods run on, the claims
    they hold, its topology constraint and the domain chosen."""
    live = [p for p in members if is_live(p)]
    nodes = sorted({n for p in live if (n := node_name_of(p))})
    scheduled = sum(1 for p in live if node_name_of(p))
    min_count = fields.gang_min_count(pg)
    ns = namespace_of(pg)
    claims = {f"{ns}/{s['resourceClaimName']}" for s in (pg.get("status") or {}).get("resourceClaimStatuses") or []
              if isinstance(s, dict) and s.get("resourceClaimName")}
    for p in live:
        claims |= pod_claims(p)
    keys = topology_keys(pg)
    return {
        "namespace": ns, "name": name_of(pg), "apiVersion": pg.get("apiVersion", ""),
        "policy": "Gang" if min_count is not None else "Basic",
        "minCount": min_count,
        "workload": fields.workload_name(pg),
        "parent": fields.parent_composite(pg),
        "pods": len(live), "scheduled": scheduled, "pending": len(live) - scheduled,
        "condition": condition(pg, fields.scheduled_condition_type(pg)),
        "topology": keys,
        "domains": chosen_domains(keys, nodes, labels_of),
        "nodes": nodes,
        "claims": sorted(claims),
    }


def claim_state(claim: Obj) -> str:
    """`kubectl get resourceclaim`'s STATE column: pending / allocated, plus reserved or deleted."""
    status = claim.get("status") or {}
    parts = ["allocated" if status.get("allocation") else "pending"]
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        parts.append("deleted")
    if status.get("reservedFor"):
        parts.append("reserved")
    return ",".join(parts)


def claim_row(claim: Obj, device_nodes: dict[str, str]) -> Obj:
    """A ResourceClaim as the panel lists it: state, devices (with their nodes), reservedFor."""
    devices = claim_device_keys(claim)
    return {
        "namespace": namespace_of(claim), "name": name_of(claim), "state": claim_state(claim),
        "devices": devices,
        "nodes": sorted({device_nodes[d] for d in devices if d in device_nodes}),
        "reservedFor": [{"resource": r.get("resource", ""), "name": r.get("name", "")}
                        for r in (claim.get("status") or {}).get("reservedFor") or []],
    }


def pending_pod_row(pod: Obj) -> Obj | None:
    """A pod waiting for a node, or None when it has one (or has finished)."""
    if node_name_of(pod) or not is_live(pod):
        return None
    return {"namespace": namespace_of(pod), "name": name_of(pod), "podGroup": pod_group_name(pod)}


def device_class_row(device_class: Obj) -> Obj:
    """A DeviceClass: its CEL selectors, as written."""
    selectors = [(s.get("cel") or {}).get("expression", "") for s in (device_class.get("spec") or {}).get("selectors") or []
                 if isinstance(s, dict)]
    return {"name": name_of(device_class), "selectors": selectors}


def snapshot(nodes: list[Obj], pods: list[Obj], pod_groups: list[Obj], slices: list[Obj],
             claims: list[Obj], **more: list[Obj]) -> Obj:
    """The whole dashboard document from lists of objects (`more`: kind -> objects, e.g.
    `JobSet=[...]`, `Job=[...]`, `CompositePodGroup=[...]`, `DeviceClass=[...]`)."""
    from .state import ClusterView

    view = ClusterView()
    for kind, objs in (("Node", nodes), ("Pod", pods), ("PodGroup", pod_groups), ("ResourceSlice", slices),
                       ("ResourceClaim", claims), *more.items()):
        for obj in objs:
            view.upsert(kind, obj)
    view.flush()
    return view.document()
