"""A dump of a running cluster through its API, laid out as `kubectl cluster-info dump --output-directory` lays it out.

    summary = await dump_cluster(client, out_dir / "cluster-info", out_dir / "nodes")

writes, for every resource the API serves that can be listed (each group's preferred version;
`events.k8s.io` Events are the core Events again and are left out):

    cluster-info/<plural>[.<group>].yaml                 cluster-scoped objects (nodes.yaml, ...)
    cluster-info/<namespace>/<plural>[.<group>].yaml     namespaced objects (pods.yaml, events.yaml, ...)
    cluster-info/<namespace>/logs/<pod>/<container>.log  what `kubectl logs` prints (and
                                                         `<container>.previous.log` after a restart)
    nodes/<node>.txt                                     each node described (`nodedescription.py`)

Each YAML file is a `v1` List as `kubectl get -o yaml` prints it, without managedFields. Secret
values are replaced by REDACTED (the keys stay), so a dump can be shared. Resources whose list
fails are recorded in `DumpSummary.errors`, not fatal. At most MAX_POD_LOG_CONTAINERS containers'
logs are fetched (troubled pods first); the summary says how many were left out.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from phalanx.client.http import HTTPClient
from phalanx.client.interface import ResourceInfo
from phalanx.cluster.nodedescription import describe_node
from phalanx.machinery.errors import StatusError
from phalanx.machinery.yamlencode import dump_yaml

Obj = dict[str, Any]
SKIPPED_RESOURCES = {("events.k8s.io", "events")}  # the core Events, served again
REDACTED = "<redacted by phalanx export logs>"
MAX_POD_LOG_CONTAINERS = 2000
CONCURRENT_REQUESTS = 4


@dataclass
class DumpSummary:
    resources: int = 0  # resource types listed
    objects: int = 0
    files: int = 0
    nodes_described: int = 0
    pod_logs: int = 0
    pod_logs_left_out: int = 0
    errors: list[str] = field(default_factory=list)


async def dump_cluster(client: HTTPClient, out: Path, nodes_dir: Path) -> DumpSummary:
    """List everything, write it per namespace, describe the nodes and fetch the pods' logs."""
    summary = DumpSummary()
    served = [r for r in await client.served_resources()
              if r.supports("list") and (r.group, r.plural) not in SKIPPED_RESOURCES]
    limit = asyncio.Semaphore(CONCURRENT_REQUESTS)

    async def fetch(info: ResourceInfo) -> tuple[ResourceInfo, list[Obj]]:
        async with limit:
            try:
                items, _ = await client.list(info.api_version, info.kind)
            except StatusError as e:
                summary.errors.append(f"listing {_file_stem(info)}: {e.message}")
                return info, []
        return info, items

    listed = dict(await asyncio.gather(*(fetch(info) for info in served)))
    out.mkdir(parents=True, exist_ok=True)
    by_kind: dict[tuple[str, str], list[Obj]] = {}
    for info, items in listed.items():
        summary.resources += 1
        summary.objects += len(items)
        by_kind[(info.group, info.plural)] = items
        summary.files += _write_lists(out, info, items)
    summary.nodes_described = _describe_nodes(nodes_dir, by_kind)
    await _fetch_logs(client, out, by_kind.get(("", "pods"), []), limit, summary)
    return summary


# ---------------------------------------------------------------------------------------------
# objects


def _file_stem(info: ResourceInfo) -> str:
    return f"{info.plural}.{info.group}" if info.group else info.plural


def _write_lists(out: Path, info: ResourceInfo, items: list[Obj]) -> int:
    """One List file per namespace (or one for a cluster-scoped resource); how many written."""
    if not items:
        return 0
    groups: dict[str, list[Obj]] = {}
    for item in items:
        namespace = (item.get("metadata") or {}).get("namespace", "") if info.namespaced else ""
        groups.setdefault(namespace, []).append(_presentable(info, item))
    for namespace, objects in groups.items():
        directory = out / namespace if namespace else out
        directory.mkdir(parents=True, exist_ok=True)
        if info.group == "" and info.plural == "events":
            objects.sort(key=_event_time)
        _write_yaml(directory / f"{_file_stem(info)}.yaml",
                    {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objects})
    return len(groups)


def _presentable(info: ResourceInfo, item: Obj) -> Obj:
    """The object as `kubectl get -o yaml` shows it: no managedFields, status last; Secret values
    redacted."""
    first = ("apiVersion", "kind", "metadata")
    item = {**{k: item[k] for k in first if k in item},
            **{k: v for k, v in item.items() if k not in first and k != "status"},
            **({"status": item["status"]} if "status" in item else {})}
    metadata = dict(item.get("metadata") or {})
    metadata.pop("managedFields", None)
    item["metadata"] = metadata
    if info.group == "" and info.plural == "secrets":
        for key in ("data", "stringData"):
            if isinstance(item.get(key), dict):
                item[key] = {k: REDACTED for k in item[key]}
    return item


def _event_time(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
               or (event.get("metadata") or {}).get("creationTimestamp") or "")


def _write_yaml(path: Path, document: Obj) -> None:
    path.write_text(dump_yaml(document))


def _describe_nodes(nodes_dir: Path, by_kind: dict[tuple[str, str], list[Obj]]) -> int:
    nodes = by_kind.get(("", "nodes"), [])
    if not nodes:
        return 0
    nodes_dir.mkdir(parents=True, exist_ok=True)
    pods = _by(by_kind.get(("", "pods"), []), lambda p: (p.get("spec") or {}).get("nodeName"))
    events = _by(by_kind.get(("", "events"), []), lambda e: (e.get("involvedObject") or {}).get("name")
                 if (e.get("involvedObject") or {}).get("kind") == "Node" else None)
    slices = _by(by_kind.get(("resource.k8s.io", "resourceslices"), []), lambda s: (s.get("spec") or {}).get("nodeName"))
    for node in nodes:
        name = (node.get("metadata") or {}).get("name", "")
        (nodes_dir / f"{name}.txt").write_text(describe_node(node, pods.get(name, []), events.get(name, []),
                                                             slices.get(name, [])))
    return len(nodes)


def _by(objects: list[Obj], node_of: Callable[[Obj], str | None]) -> dict[str, list[Obj]]:
    """Objects grouped by the node they concern (those of no node left out)."""
    grouped: dict[str, list[Obj]] = {}
    for obj in objects:
        node = node_of(obj)
        if node:
            grouped.setdefault(node, []).append(obj)
    return grouped


# ---------------------------------------------------------------------------------------------
# logs


LogRequest = tuple[str, str, str, bool]  # namespace, pod, container, previous


def _log_requests(pods: list[Obj]) -> list[LogRequest]:
    """(namespace, pod, container, previous) for every container that has run or is running,
    those of troubled pods (not Running or Succeeded, or restarted) first."""
    troubled: list[LogRequest] = []
    calm: list[LogRequest] = []
    for pod in pods:
        md = pod.get("metadata") or {}
        status = pod.get("status") or {}
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
        wanted: list[LogRequest] = []
        for cs in statuses:
            ns, name, container = md.get("namespace", ""), md.get("name", ""), cs.get("name", "")
            wanted.append((ns, name, container, False))
            if (cs.get("lastState") or {}).get("terminated"):
                wanted.append((ns, name, container, True))
        quiet = status.get("phase") in ("Running", "Succeeded") and not any(w[3] for w in wanted)
        (calm if quiet else troubled).extend(wanted)
    return troubled + calm


async def _fetch_logs(client: HTTPClient, out: Path, pods: list[Obj], limit: asyncio.Semaphore,
                      summary: DumpSummary) -> None:
    wanted = _log_requests(pods)
    summary.pod_logs_left_out = max(0, len(wanted) - MAX_POD_LOG_CONTAINERS)

    async def fetch(namespace: str, pod: str, container: str, previous: bool) -> None:
        async with limit:
            try:
                text = await client.pod_log(namespace, pod, container=container, previous=previous)
            except StatusError as e:
                text = f"(no log: {e.message})\n"
        directory = out / namespace / "logs" / pod
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{container}{'.previous' if previous else ''}.log").write_text(text)
        summary.pod_logs += 1

    await asyncio.gather(*(fetch(*w) for w in wanted[:MAX_POD_LOG_CONTAINERS]))
