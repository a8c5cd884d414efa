"""Correctness checks on the state a benchmark run leaves behind (read straight from the API).

    results = run_checks(api, expectations, gates)   # [{"name", "ok", "detail"}, ...]

Each check says what a user would look for after the run:

- `podsScheduled`: every op that waited for its pods saw all of them bound (from the run's
  tracker: `expectations` maps an op label to (pods created, pods bound));
- `nodesNotOvercommitted`: on no node do the bound pods request more cpu, memory or pods than
  the node's allocatable;
- `gangsIntact`: every gang PodGroup has either no bound pod or at least `minCount`;
- `topologyRespected`: the bound pods of a PodGroup with `schedulingConstraints.topology` share
  one value of each topology key;
- `claimsAllocatedAndReserved`: every claim a bound pod uses exists, is allocated for a node the
  pod is on, and is reserved for the pod (or, for a PodGroup claim, for its PodGroup);
- `sharedClaimsOneReservation`: a claim used through a PodGroup's `spec.resourceClaims` has
  exactly one `reservedFor` entry, the PodGroup, however many pods use it;
- `devicesNotDoubleAllocated`: no device is in two allocations (unless shared by `shareID` or
  `adminAccess`).

Checks whose objects are absent (no PodGroups, no claims) pass with "nothing to check".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from ..api.scheduling.fields import WORKLOAD_API_BY_RELEASE
from ..dra import claims as dra
from ..machinery.quantity import milli_value, value
from ..machinery.selectors import node_selector_matches

MAX_DETAIL = 5


def check_result(name: str, problems: list[str], checked: int, what: str) -> dict[str, Any]:
    if not checked:
        return {"name": name, "ok": True, "detail": "nothing to check"}
    if problems:
        more = f" (+{len(problems) - MAX_DETAIL} more)" if len(problems) > MAX_DETAIL else ""
        return {"name": name, "ok": False, "detail": "; ".join(problems[:MAX_DETAIL]) + more,
                "failures": len(problems), "checked": checked}
    return {"name": name, "ok": True, "detail": f"{checked} {what}", "checked": checked}


def _list(api: Any, group: str, version: str, plural: str) -> list[dict]:
    try:
        rt = api.resource(group, version, plural)
    except Exception:  # not served (gate off)
        return []
    return api.list(rt, None)["items"]


def _pod_group_version(gates: Any) -> tuple[str, str]:
    """(group, version) of PodGroups in the gates' release (v1alpha2 in 1.36, v1beta1 in 1.37)."""
    group, version = WORKLOAD_API_BY_RELEASE[getattr(gates, "release", "1.36")].split("/")
    return group, version


def pod_requests(pod: dict) -> tuple[int, int]:
    cpu = mem = 0
    spec = pod.get("spec") or {}
    for c in spec.get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu += milli_value(req["cpu"]) if "cpu" in req else 0
        mem += value(req["memory"]) if "memory" in req else 0
    for c in spec.get("initContainers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu = max(cpu, milli_value(req["cpu"]) if "cpu" in req else 0)
        mem = max(mem, value(req["memory"]) if "memory" in req else 0)
    return cpu, mem


@dataclass
class _Cluster:
    """What the checks read: the live (not finished) pods, those bound, and nodes, PodGroups and
    claims by name (`namespace/name` for the namespaced ones)."""

    bound: list[dict]
    nodes: dict[str, dict]
    groups: dict[str, dict]
    claims: dict[str, dict]
    workload_claims: bool


def run_checks(api: Any, expectations: dict[str, tuple[int, int]], gates: Any) -> list[dict[str, Any]]:
    pods = [p for p in _list(api, "", "v1", "pods") if not (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")]
    cluster = _Cluster(
        bound=[p for p in pods if (p.get("spec") or {}).get("nodeName")],
        nodes={n["metadata"]["name"]: n for n in _list(api, "", "v1", "nodes")},
        groups={f"{g['metadata']['namespace']}/{g['metadata']['name']}": g
                for g in _list(api, *_pod_group_version(gates), "podgroups")},
        claims={f"{c['metadata']['namespace']}/{c['metadata']['name']}": c
                for c in _list(api, "resource.k8s.io", "v1", "resourceclaims")},
        workload_claims=bool(gates.enabled(dra.WORKLOAD_RESOURCE_CLAIMS_GATE)))
    problems = [f"{label}: {b}/{n} pods scheduled" for label, (n, b) in expectations.items() if b < n]
    out = [check_result("podsScheduled", problems, len(expectations), "ops with all their pods scheduled"),
           _nodes_not_overcommitted(cluster)]
    out += _gangs_and_topology(cluster)
    out += _claims_allocated_and_reserved(cluster)
    out.append(_devices_not_double_allocated(cluster))
    return out


def _nodes_not_overcommitted(cluster: _Cluster) -> dict[str, Any]:
    use: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for p in cluster.bound:
        cpu, mem = pod_requests(p)
        u = use[p["spec"]["nodeName"]]
        u[0] += cpu
        u[1] += mem
        u[2] += 1
    problems = []
    for node_name, (cpu, mem, count) in use.items():
        node = cluster.nodes.get(node_name)
        if node is None:
            problems.append(f"{count} pod(s) bound to missing node {node_name}")
            continue
        problems += overcommit_problems(node_name, (node.get("status") or {}).get("allocatable") or {},
                                         cpu, mem, count)
    return check_result("nodesNotOvercommitted", problems, len(use), "nodes within allocatable")


def overcommit_problems(node_name: str, alloc: dict, cpu: int, mem: int, count: int) -> list[str]:
    problems = []
    if "cpu" in alloc and cpu > milli_value(alloc["cpu"]):
        problems.append(f"{node_name}: cpu {cpu}m requested > {alloc['cpu']}")
    if "memory" in alloc and mem > value(alloc["memory"]):
        problems.append(f"{node_name}: memory {mem} requested > {alloc['memory']}")
    if "pods" in alloc and count > value(alloc["pods"]):
        problems.append(f"{node_name}: {count} pods > {alloc['pods']}")
    return problems


def _gangs_and_topology(cluster: _Cluster) -> list[dict[str, Any]]:
    """gangsIntact and topologyRespected, over the bound members of each PodGroup."""
    members: dict[str, list[dict]] = defaultdict(list)
    for p in cluster.bound:
        group_name = dra.pod_group_name(p)
        if group_name is not None:
            members[f"{p['metadata']['namespace']}/{group_name}"].append(p)
    problems, checked = [], 0
    topo_problems, topo_checked = [], 0
    for key, g in cluster.groups.items():
        spec = g.get("spec") or {}
        gang = (spec.get("schedulingPolicy") or {}).get("gang")
        placed = members.get(key, [])
        if gang is not None:
            checked += 1
            min_count = int(gang.get("minCount") or 0)
            if 0 < len(placed) < min_count:
                problems.append(f"{key}: {len(placed)} pods bound, minCount {min_count}")
        keys = [t.get("key") for t in (spec.get("schedulingConstraints") or {}).get("topology") or [] if t.get("key")]
        if keys and placed:
            topo_checked += 1
            topo_problems += _topology_problems(key, keys, placed, cluster.nodes)
    return [check_result("gangsIntact", problems, checked, "gangs all-or-nothing"),
            check_result("topologyRespected", topo_problems, topo_checked, "PodGroups within one topology domain")]


def _topology_problems(group_key: str, keys: list[str], placed: list[dict], nodes: dict[str, dict]) -> list[str]:
    problems = []
    for k in keys:
        values = {((nodes.get(p["spec"]["nodeName"]) or {}).get("metadata") or {}).get("labels", {}).get(k)
                  for p in placed}
        if len(values) != 1 or None in values:
            problems.append(f"{group_key}: {len(placed)} pods span {k}={sorted(map(str, values))}")
    return problems


def _claims_allocated_and_reserved(cluster: _Cluster) -> list[dict[str, Any]]:
    """claimsAllocatedAndReserved over every bound pod's claims, then sharedClaimsOneReservation
    over the claims pods use through their PodGroup."""
    problems, checked = [], 0
    shared: dict[str, str] = {}  # claim key -> PodGroup key that uses it through its spec
    for p in cluster.bound:
        for pc in dra.pod_claims(p):
            checked += 1
            problems += _pod_claim_problems(cluster, p, pc, shared)
    return [check_result("claimsAllocatedAndReserved", problems, checked, "pod claims allocated and reserved"),
            _shared_claims_one_reservation(cluster, shared)]


def _pod_claim_problems(cluster: _Cluster, p: dict, pc: dict, shared: dict[str, str]) -> list[str]:
    """What is wrong with one claim of a bound pod; records the claims shared through a PodGroup."""
    ns = p["metadata"]["namespace"]
    group_name = dra.pod_group_name(p)
    group = cluster.groups.get(f"{ns}/{group_name}") if group_name else None
    name, _, err = dra.claim_name(p, pc)
    who = f"pod {ns}/{p['metadata']['name']} claim {pc.get('name')}"
    if err is not None or name is None:
        return [f"{who}: {err or 'no claim name'}"]
    claim = cluster.claims.get(f"{ns}/{name}")
    if claim is None:
        return [f"{who}: ResourceClaim {name} not found"]
    if not dra.is_allocated(claim):
        return [f"{who}: ResourceClaim {name} is not allocated"]
    problems = []
    sel = claim["status"]["allocation"].get("nodeSelector")
    node = cluster.nodes.get(p["spec"]["nodeName"])
    if sel and node is not None and not node_selector_matches(sel, node):
        problems.append(f"{who}: ResourceClaim {name} is allocated for other nodes than {p['spec']['nodeName']}")
    via_group = dra.matching_pod_group_claim(p, group, pc, workload_claims_enabled=cluster.workload_claims)
    if via_group is not None:
        shared[f"{ns}/{name}"] = f"{ns}/{group_name}"
    if not dra.is_reserved_for_pod(p, claim, accept_pod_group=via_group is not None):
        problems.append(f"{who}: ResourceClaim {name} is not reserved for it")
    return problems


def _shared_claims_one_reservation(cluster: _Cluster, shared: dict[str, str]) -> dict[str, Any]:
    problems = []
    for ckey, gkey in shared.items():
        refs = dra.reserved_for(cluster.claims[ckey])
        group = cluster.groups.get(gkey)
        if len(refs) != 1 or not dra.is_pod_group_consumer(refs[0]) or \
                (group is not None and refs[0].get("name") != group["metadata"]["name"]):
            problems.append(f"{ckey}: reservedFor has {len(refs)} entries "
                            f"({', '.join(r.get('resource', '') + '/' + r.get('name', '') for r in refs[:3])}), "
                            f"want one for PodGroup {gkey}")
    return check_result("sharedClaimsOneReservation", problems, len(shared), "shared claims with one reservation")


def _devices_not_double_allocated(cluster: _Cluster) -> dict[str, Any]:
    seen: Counter = Counter()
    for c in cluster.claims.values():
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            if r.get("adminAccess") or r.get("shareID"):
                continue
            seen[(r.get("driver"), r.get("pool"), r.get("device"))] += 1
    problems = [f"{d}/{pool}/{dev} allocated {n} times" for (d, pool, dev), n in seen.items() if n > 1]
    return check_result("devicesNotDoubleAllocated", problems, len(seen), "devices allocated once")
