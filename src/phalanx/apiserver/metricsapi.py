"""The Metrics API (`metrics.k8s.io/v1beta1`) served in-process, as metrics-server serves it.

`handler(kind, method, watch)` is the route `Server.dispatch` takes for the group: `get` and
`list` of `nodes` (NodeMetrics) and of `pods` (PodMetrics, per namespace or across all), with
`labelSelector` and `fieldSelector` (`metadata.name`, `metadata.namespace`), JSON or a Table. Every
other verb is refused (405), as metrics-server refuses it. The usage comes from `api/metrics.py`
(requests, or the `phalanx.dev/usage-*` annotations), read from the store at request time; a pod
that is not Running, or a node or pod that does not exist, is `NotFound` with metrics-server's
message (`podmetrics.metrics.k8s.io "default/web" not found`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Optional

import orjson
from aiohttp import web

from ..api import metrics as usage
from ..api.registry import ResourceType
from ..machinery import errors
from ..machinery.selectors import parse_field_selector, parse_label_selector
from ..machinery.timestamps import now_rfc3339
from . import tables

if TYPE_CHECKING:
    from .rest import API
    from .server import RequestTarget, Server

Obj = dict[str, Any]
GROUP = usage.GROUP
NOT_FOUND_RESOURCES = {"nodes": "nodemetrics", "pods": "podmetrics"}


def _respond(request: web.Request, rt: ResourceType, api: "API", body: Obj, items: Optional[list[Obj]]) -> web.Response:
    if tables.wants_table(request.headers.get("Accept", "")):
        body = tables.table(rt, items if items is not None else [body], api.ctx,
                            include=request.query.get("includeObject", "Metadata"))
        content_type = tables.TABLE_CONTENT_TYPE
    else:
        content_type = "application/json"
    resp = web.Response(body=orjson.dumps(body, option=orjson.OPT_APPEND_NEWLINE), content_type=None)
    resp.headers["Content-Type"] = content_type
    resp.headers["Cache-Control"] = "no-cache, private"
    return resp


def _running_pods(api: "API", namespace: Optional[str]) -> list[Obj]:
    pods, _ = api.store.list("core/pods", namespace or None)
    return [p for p in pods if usage.has_metrics(p)]


def _by_node(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for p in pods:
        out.setdefault(p["spec"]["nodeName"], []).append(p)
    return out


def _matching(objs: list[Obj], request: web.Request) -> list[Obj]:
    q = request.query
    try:
        labels = parse_label_selector(q.get("labelSelector") or "")
        fields = parse_field_selector(q.get("fieldSelector") or "")
    except ValueError as e:
        raise errors.bad_request(str(e)) from None

    def field(obj: Obj) -> Callable[[str], Optional[str]]:
        md = obj.get("metadata") or {}
        return {"metadata.name": md.get("name"), "metadata.namespace": md.get("namespace")}.get

    return [o for o in objs if labels.matches((o.get("metadata") or {}).get("labels") or {})
            and fields.matches(field(o))]


def _not_found(t: "RequestTarget") -> errors.StatusError:
    name = f"{t.namespace}/{t.name}" if t.rt.namespaced else t.object_name
    return errors.not_found_error(NOT_FOUND_RESOURCES[t.rt.plural], GROUP, name)


def node_metrics(api: "API", names: Optional[set[str]] = None) -> list[Obj]:
    now = now_rfc3339(api.now())
    nodes, _ = api.store.list("core/nodes")
    by_node = _by_node(_running_pods(api, None))
    return [usage.node_metrics(n, by_node.get(n["metadata"]["name"], []), now) for n in nodes
            if names is None or n["metadata"]["name"] in names]


def pod_metrics(api: "API", namespace: Optional[str]) -> list[Obj]:
    now = now_rfc3339(api.now())
    return [usage.pod_metrics(p, now) for p in _running_pods(api, namespace)]


async def _get(server: "Server", request: web.Request, t: "RequestTarget") -> web.StreamResponse:
    api = server.api
    if t.rt.plural == "nodes":
        found = node_metrics(api, {t.object_name})
    else:
        found = [m for m in pod_metrics(api, t.namespace) if m["metadata"]["name"] == t.name]
    if not found:
        raise _not_found(t)
    return _respond(request, t.rt, api, found[0], None)


async def _list(server: "Server", request: web.Request, t: "RequestTarget") -> web.StreamResponse:
    api = server.api
    items = node_metrics(api) if t.rt.plural == "nodes" else pod_metrics(api, t.namespace)
    items = _matching(items, request)
    body = {"kind": t.rt.list_kind, "apiVersion": usage.API_VERSION, "metadata": {}, "items": items}
    return _respond(request, t.rt, api, body, items)


Route = Callable[["Server", web.Request, "RequestTarget"], Awaitable[web.StreamResponse]]


def handler(kind: str, method: str, watch: bool) -> Optional[Route]:
    """The route for a request to the group, or None (405) for what metrics-server does not serve."""
    if method not in ("GET", "HEAD") or watch:
        return None
    return {"collection": _list, "object": _get}.get(kind)
