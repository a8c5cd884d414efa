"""`phalanx explain`: the scheduler's last decision about a pod or a PodGroup, for a person.

The scheduler keeps every decision on its `Scheduled` / `FailedScheduling` event, as the JSON
annotation `scheduler.phalanx.dev/diagnosis` (per reason: the plugin, how many nodes, which nodes;
for a PodGroup: how many pods fit, how many were required, each failing pod's diagnosis, the
placements tried). This module reads those events through any `Client` and renders them, so it
works against any cluster the phalanx scheduler runs on.
"""

from __future__ import annotations

import orjson

from phalanx.client.interface import Client
from phalanx.machinery.errors import StatusError

from .reporting import DIAGNOSIS_ANNOTATION, POD_GROUP_API, pod_group_api


async def _latest_decision(client: Client, kind: str, namespace: str, name: str) -> tuple[dict | None, dict | None]:
    events, _ = await client.list("v1", "Event", namespace,
                                  field_selector=f"involvedObject.name={name},involvedObject.kind={kind}")
    events = [e for e in events if e.get("reason") in ("Scheduled", "FailedScheduling")]
    if not events:
        return None, None
    events.sort(key=lambda e: (e.get("lastTimestamp") or "", e["metadata"].get("resourceVersion", "0").zfill(20)))
    ev = events[-1]
    raw = (ev["metadata"].get("annotations") or {}).get(DIAGNOSIS_ANNOTATION)
    return ev, (orjson.loads(raw) if raw else None)


def _reasons(diag: dict, indent: str) -> list[str]:
    lines = []
    for reason, info in sorted((diag.get("reasons") or {}).items(), key=lambda kv: -kv[1].get("count", 0)):
        nodes = info.get("nodes") or []
        more = info.get("count", len(nodes)) - len(nodes)
        shown = ", ".join(nodes) + (f", and {more} more" if more > 0 else "")
        plugin = f" [{info['plugin']}]" if info.get("plugin") else ""
        lines.append(f"{indent}{info.get('count', len(nodes))} {reason}{plugin}")
        if shown:
            lines.append(f"{indent}    {shown}")
    if diag.get("preemption"):
        lines.append(f"{indent}preemption: {diag['preemption']}")
    return lines


def _header(ev: dict) -> str:
    count = ev.get("count") or 1
    return f"{ev.get('reason')} ({count} time{'s' if count != 1 else ''}, last at {ev.get('lastTimestamp')})"


async def explain_pod(client: Client, namespace: str, name: str) -> str:
    pod = await client.get("v1", "Pod", namespace, name)
    lines = [f"Pod {namespace}/{name}"]
    node = (pod.get("spec") or {}).get("nodeName")
    group = _pod_group_name(pod)
    if group:
        lines.append(f"  pod group: {group}")
    lines.append(f"  node: {node or '<none>'}   phase: {(pod.get('status') or {}).get('phase', '')}")
    lines.extend(_pod_scheduled_condition(pod))
    if group and not node:
        lines.extend(await _gang_arrival(client, namespace, group))
    lines.extend(await _other_warnings(client, namespace, name))
    ev, diag = await _latest_decision(client, "Pod", namespace, name)
    if ev is None:
        lines.append("  no scheduling decision recorded yet (the pod may be waiting at PreEnqueue: "
                     "a missing PodGroup, a gang below minCount, or unresolved claims)")
        return "\n".join(lines)
    lines.append(f"  last decision: {_header(ev)}")
    lines.append(f"    {ev.get('message', '')}")
    if diag:
        lines.extend(_pod_decision(diag))
    return "\n".join(lines)


def _pod_group_name(pod: dict) -> str | None:
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


def _pod_scheduled_condition(pod: dict) -> list[str]:
    lines = []
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            lines.append(f"  PodScheduled={c.get('status')}" + (f" ({c.get('reason')})" if c.get("reason") else ""))
            if c.get("reason") == "SchedulingGated" and c.get("message"):
                lines.append(f"    held before scheduling: {c['message']}")
    return lines


async def get_pod_group(client: Client, namespace: str, name: str) -> dict:
    """The PodGroup in whichever release the cluster serves (1.36's v1alpha2, else 1.37's v1beta1)."""
    try:
        return await client.get(POD_GROUP_API, "PodGroup", namespace, name)
    except StatusError as e:
        if e.code != 404 or "no matches for kind" not in e.message:
            raise
    return await client.get(pod_group_api("1.37"), "PodGroup", namespace, name)


async def _gang_arrival(client: Client, namespace: str, group: str) -> list[str]:
    """Whether the pod's PodGroup exists, and how many of a gang's pods do (PreEnqueue's question)."""
    try:
        pg = await get_pod_group(client, namespace, group)
    except Exception:  # noqa: BLE001 - the PodGroup may not exist (that is the reason shown above)
        pg = None
    if pg is None:
        return [f'    pod group "{group}" does not exist']
    gang = ((pg.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    if not gang:
        return []
    pods, _ = await client.list("v1", "Pod", namespace)
    n = sum(1 for p in pods if _pod_group_name(p) == group
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
    return [f"    pod group {group}: {n}/{gang.get('minCount')} pods exist (minCount {gang.get('minCount')})"]


async def _other_warnings(client: Client, namespace: str, name: str) -> list[str]:
    """The pod's latest warnings from others, e.g. FailedResourceClaimCreation: why a pod cannot
    even be considered."""
    events, _ = await client.list("v1", "Event", namespace,
                                  field_selector=f"involvedObject.name={name},involvedObject.kind=Pod,type=Warning")
    others = sorted((e for e in events if e.get("reason") not in ("Scheduled", "FailedScheduling")),
                    key=lambda e: e.get("lastTimestamp") or "")
    return [f"  {e.get('reason')} ({e.get('source', {}).get('component', '')}): {e.get('message', '')}"
            for e in others[-3:]]


def _pod_decision(diag: dict) -> list[str]:
    if diag.get("result") == "Scheduled":
        lines = [f"    evaluated {diag.get('evaluatedNodes')} node(s), {diag.get('feasibleNodes')} feasible"]
        lines.extend(f"      {s['node']}: score {s['score']}" for s in diag.get("topScores") or [])
        return lines
    lines = _reasons(diag, "    ")
    if diag.get("podGroup"):
        lines.append(f"    pod group: {diag['podGroup']}")
    return lines


async def explain_podgroup(client: Client, namespace: str, name: str) -> str:
    pg = await get_pod_group(client, namespace, name)
    lines = [f"PodGroup {namespace}/{name}"] + _podgroup_spec(pg)
    for c in (pg.get("status") or {}).get("conditions") or []:
        lines.append(f"  {c.get('type')}={c.get('status')} ({c.get('reason')})" +
                     (f": {c.get('message')}" if c.get("message") else ""))
    pods, _ = await client.list("v1", "Pod", namespace)
    members = [p for p in pods if _pod_group_name(p) == name]
    bound = sum(1 for p in members if (p.get("spec") or {}).get("nodeName"))
    lines.append(f"  pods: {len(members)} ({bound} bound, {len(members) - bound} pending)")
    ev, diag = await _latest_decision(client, "PodGroup", namespace, name)
    if ev is None:
        lines.append("  no group scheduling decision recorded yet")
        return "\n".join(lines)
    lines.append(f"  last decision: {_header(ev)}")
    lines.append(f"    {ev.get('message', '')}")
    if diag:
        lines.extend(_group_decision(diag))
    return "\n".join(lines)


def _podgroup_spec(pg: dict) -> list[str]:
    spec = pg.get("spec") or {}
    pol = spec.get("schedulingPolicy") or {}
    policy = f"Gang (minCount {pol['gang'].get('minCount')})" if "gang" in pol else "Basic"
    lines = [f"  policy: {policy}"]
    topo = (spec.get("schedulingConstraints") or {}).get("topology") or []
    if topo:
        lines.append(f"  topology: {', '.join(t.get('key', '') for t in topo)}")
    return lines


def _group_decision(diag: dict) -> list[str]:
    lines = []
    tried = diag.get("placementsTried") or []
    for p in tried:
        if len(tried) > 1 or p.get("placement") != "cluster":
            lines.append(f"    placement {p['placement']}: {'feasible' if p.get('feasible') else 'infeasible'}, "
                         f"{p.get('podsPlaced')} pod(s) placed" + (f" ({p['message']})" if p.get("message") else ""))
    for pod_name, pd in (diag.get("pods") or {}).items():
        lines.append(f"    pod {pod_name}: {pd.get('message', '')}")
        lines.extend(_reasons(pd, "      "))
    lines.extend(_preemption(diag.get("preemption")))
    return lines


def _preemption(pre: dict | None) -> list[str]:
    """Workload-aware preemption: the victims chosen and where the group's pods are nominated, or
    why preemption could not help (grouppreemption.py writes this part of the diagnosis)."""
    if not pre:
        return []
    lines = [f"    {pre.get('message', '')}"]
    for v in pre.get("victims") or []:
        size = f", {v['pods']} pods" if v.get("kind") == "PodGroup" else ""
        lines.append(f"      victim {v.get('kind')} {v.get('name')} (priority {v.get('priority')}{size}) "
                     f"on {', '.join(v.get('nodes') or [])}")
    for pod_name, node in (pre.get("nominations") or {}).items():
        lines.append(f"      nominated: {pod_name} -> {node}")
    domains = pre.get("domains") or []
    if len(domains) > 1 or any(d.get("domain") != "cluster" for d in domains):
        for d in domains:
            lines.append(f"      domain {d.get('domain')}: {d.get('message', '')}")
    return lines
