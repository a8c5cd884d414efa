"""What the dashboard shows, computed from plain API objects (no I/O here).

`snapshot(...)` turns the informers' Nodes, Pods, PodGroups, ResourceSlices and ResourceClaims into
one JSON-ready document: the topology levels detected from the nodes' labels, a cell per node (CPU
requested ÷ allocatable, GPU devices from its ResourceSlices with their allocation state), the
PodGroups with their counts and scheduled condition, the claims with their state and reservedFor,
and the pods still waiting for a node. The server sends it to the page; the tests call it directly.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterable

from phalanx.api.scheduling import fields
from phalanx.machinery.quantity import milli_value

Obj = dict[str, Any]

# Label keys that name a place (zone, block, rack, ...); others (arch, instance type) are not levels.
_TOPOLOGY_WORDS = re.compile(r"zone|region|block|rack|spine|superpod|topology|row|cell|island|domain")
_NOT_TOPOLOGY = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
                 "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "node.kubernetes.io/instance-type")
_TERMINAL = ("Succeeded", "Failed")


def _labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def _namespace(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


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
        for k, v in _labels(n).items():
            if k not in _NOT_TOPOLOGY and not k.startswith("node-role.kubernetes.io/"):
                values[k][_name(n)] = v
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


def pod_cpu_request_milli(pod: Obj) -> int:
    """The pod's CPU request as the scheduler counts it: the sum of its containers' requests, or its
    largest init container's when that is more."""
    spec = pod.get("spec") or {}

    def req(c: Obj) -> int:
        cpu = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
        return milli_value(cpu) if cpu is not None else 0
    total = sum(req(c) for c in spec.get("containers") or [])
    init = max((req(c) for c in spec.get("initContainers") or []), default=0)
    return max(total, init)


def _ready(node: Obj) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def _device_key(driver: str, pool: str, device: str) -> str:
    return f"{driver}/{pool}/{device}"


def allocated_devices(claims: Iterable[Obj]) -> dict[str, str]:
    """`driver/pool/device` -> `namespace/claim` for every device a claim's allocation holds."""
    out: dict[str, str] = {}
    for c in claims:
        results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        for r in results:
            out[_device_key(r.get("driver", ""), r.get("pool", ""), r.get("device", ""))] = \
                f"{_namespace(c)}/{_name(c)}"
    return out


def node_devices(slices: Iterable[Obj], allocated: dict[str, str]) -> dict[str, list[Obj]]:
    """Node name -> its devices from ResourceSlices, each with the claim that holds it (or None)."""
    out: dict[str, list[Obj]] = defaultdict(list)
    for s in slices:
        spec = s.get("spec") or {}
        node = spec.get("nodeName")
        if not node:
            continue
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        for d in spec.get("devices") or []:
            key = _device_key(driver, pool, d.get("name", ""))
            out[node].append({"name": d.get("name", ""), "driver": driver, "pool": pool,
                              "claim": allocated.get(key)})
    for devs in out.values():
        devs.sort(key=lambda d: (d["driver"], d["pool"], d["name"]))
    return out


def node_cell(node: Obj, levels: list[str], cpu_used: int, devices: list[Obj]) -> Obj:
    """One node as the map draws it."""
    labels = _labels(node)
    status = node.get("status") or {}
    alloc = (status.get("allocatable") or {}).get("cpu")
    allocatable = milli_value(alloc) if alloc is not None else 0
    spec = node.get("spec") or {}
    return {
        "name": _name(node),
        "path": [labels.get(k, "") for k in levels],
        "cpuRequestedMilli": cpu_used,
        "cpuAllocatableMilli": allocatable,
        "cpuFraction": round(cpu_used / allocatable, 4) if allocatable else 0.0,
        "ready": _ready(node),
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [t.get("key", "") for t in spec.get("taints") or []],
        "devices": devices,
    }


def pod_group_name(pod: Obj) -> str | None:
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


def _condition(obj: Obj, ctype: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return {"type": ctype, "status": c.get("status"), "reason": c.get("reason", ""),
                    "message": c.get("message", "")}
    return None


def pod_group_row(pg: Obj, members: list[Obj]) -> Obj:
    """A PodGroup as the workloads panel lists it, with the nodes its pods run on."""
    live = [p for p in members if (p.get("status") or {}).get("phase") not in _TERMINAL]
    nodes = sorted({n for p in live if (n := (p.get("spec") or {}).get("nodeName"))})
    scheduled = sum(1 for p in live if (p.get("spec") or {}).get("nodeName"))
    min_count = fields.gang_min_count(pg)
    return {
        "namespace": _namespace(pg), "name": _name(pg), "apiVersion": pg.get("apiVersion", ""),
        "policy": "Gang" if min_count is not None else "Basic",
        "minCount": min_count,
        "workload": fields.workload_name(pg),
        "pods": len(live), "scheduled": scheduled, "pending": len(live) - scheduled,
        "condition": _condition(pg, fields.scheduled_condition_type(pg)),
        "nodes": nodes,
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
    status = claim.get("status") or {}
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    devices = [_device_key(r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in results]
    return {
        "namespace": _namespace(claim), "name": _name(claim), "state": claim_state(claim),
        "devices": devices,
        "nodes": sorted({device_nodes[d] for d in devices if d in device_nodes}),
        "reservedFor": [{"resource": r.get("resource", ""), "name": r.get("name", "")}
                        for r in status.get("reservedFor") or []],
    }


def _pending_pod(pod: Obj) -> Obj:
    return {"namespace": _namespace(pod), "name": _name(pod), "podGroup": pod_group_name(pod)}


def snapshot(nodes: list[Obj], pods: list[Obj], pod_groups: list[Obj], slices: list[Obj],
             claims: list[Obj]) -> Obj:
    """The whole dashboard document (see the module docstring)."""
    levels = topology_levels(nodes)
    cpu: dict[str, int] = defaultdict(int)
    members: dict[tuple[str, str], list[Obj]] = defaultdict(list)
    pending = []
    for p in pods:
        phase = (p.get("status") or {}).get("phase")
        node = (p.get("spec") or {}).get("nodeName")
        if node and phase not in _TERMINAL:
            cpu[node] += pod_cpu_request_milli(p)
        group = pod_group_name(p)
        if group:
            members[(_namespace(p), group)].append(p)
        if not node and phase not in _TERMINAL:
            pending.append(_pending_pod(p))
    devices = node_devices(slices, allocated_devices(claims))
    device_nodes = {_device_key(d["driver"], d["pool"], d["name"]): node
                    for node, devs in devices.items() for d in devs}
    cells = sorted((node_cell(n, levels, cpu[_name(n)], devices.get(_name(n), [])) for n in nodes),
                   key=lambda c: (c["path"], c["name"]))
    groups = sorted((pod_group_row(pg, members[(_namespace(pg), _name(pg))]) for pg in pod_groups),
                    key=lambda g: (g["namespace"], g["name"]))
    return {
        "levels": levels,
        "nodes": cells,
        "podGroups": groups,
        "claims": sorted((claim_row(c, device_nodes) for c in claims), key=lambda c: (c["namespace"], c["name"])),
        "pendingPods": sorted(pending, key=lambda p: (p["namespace"], p["name"])),
    }
