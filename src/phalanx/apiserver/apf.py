"""API Priority and Fairness as clients see it: every request is classified by the FlowSchemas
(`api/flowcontrol.py`), answered with the `X-Kubernetes-PF-FlowSchema-UID` and
`X-Kubernetes-PF-PriorityLevel-UID` headers, and refused with 429 `TooManyRequests` and
`Retry-After` when its priority level is saturated.

    apf = PriorityAndFairness(api)
    async with apf.admit(request, user) as headers:   # raises StatusError 429 when saturated
        response = await handler(request)
    response.headers.update(headers)

What is simplified, against upstream's filter: a Limited level's concurrency limit is its share of
`SERVER_CONCURRENCY` (upstream's default --max-requests-inflight 400 + --max-mutating-requests-inflight
200), `nominalConcurrencyShares` over the sum of all Limited levels' shares, at least 1; there are no
queues (a request over the limit is rejected at once, whatever `limitResponse` says), no borrowing,
and long-running requests (watches, followed logs) are classified but not counted. The FlowSchemas
and levels are read from the store at most once a second, so a change takes effect within a second;
a request's classification is remembered by what it depends on (user, groups, verb, group,
resource, namespace, or the path of a non-resource URL) until they are read again.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any, AsyncIterator, Optional

from aiohttp import web

from ..api.flowcontrol import RequestInfo, match_flow_schema, precedence_order
from ..machinery.errors import StatusError
from .rest import API

SERVER_CONCURRENCY = 600
CLASSIFICATIONS_MAX = 4096  # remembered classifications (forgotten all at once past it)
REFRESH_SECONDS = 1.0
RETRY_AFTER = "1"
_UNKNOWN: Any = object()
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _split(parts: list[str]) -> tuple[str, list[str]] | None:
    """(API group, the path after the version) of a resource path; None for a non-resource URL."""
    if parts[:1] == ["api"] and len(parts) >= 3:
        return "", parts[2:]
    if parts[:1] == ["apis"] and len(parts) >= 4:
        return parts[1], parts[3:]
    return None


def _verb(method: str, rest: list[str], watch: bool) -> str:
    if method == "GET":
        return "watch" if watch else ("list" if len(rest) == 1 else "get")
    if method == "DELETE" and len(rest) == 1:
        return "deletecollection"
    return _VERBS.get(method, "get")


def request_info(request: web.Request, user: Any) -> RequestInfo:
    """The verb, group, resource and namespace of a request, as upstream's RequestInfo has them."""
    name = getattr(user, "name", "system:anonymous")
    groups = list(getattr(user, "groups", ()) or ()) if user is not None else ["system:unauthenticated"]
    info = RequestInfo(user=name, groups=groups, path=request.path, resource_request=False,
                       verb=_VERBS.get(request.method, "get"))
    split = _split([p for p in request.path.split("/") if p])
    if split is None:
        return info
    info.api_group, rest = split
    if rest[0] == "namespaces" and len(rest) > 2:
        info.namespace, rest = rest[1], rest[2:]
    info.resource_request = True
    info.resource = rest[0]
    info.verb = _verb(request.method, rest, request.query.get("watch") in ("1", "true"))
    return info


def _limits(levels: dict[str, dict]) -> dict[str, int]:
    """Each Limited level's concurrency limit: its share of SERVER_CONCURRENCY, at least 1."""
    shares = {name: ((pl.get("spec") or {}).get("limited") or {}).get("nominalConcurrencyShares", 30)
              for name, pl in levels.items() if (pl.get("spec") or {}).get("type") == "Limited"}
    total = sum(shares.values()) or 1
    return {name: max(1, math.ceil(SERVER_CONCURRENCY * share / total)) for name, share in shares.items()}


class PriorityAndFairness:
    def __init__(self, api: API) -> None:
        self.api = api
        self._loaded_at = -math.inf
        self._schemas: list[dict] = []
        self._levels: dict[str, dict] = {}
        self._in_flight: dict[str, int] = {}
        self._limits: dict[str, int] = {}
        self._versions: tuple[Any, ...] = ()
        self._classified: dict[tuple, Optional[dict]] = {}

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._loaded_at < REFRESH_SECONDS:
            return
        self._loaded_at = now
        try:
            fs_rt = self.api.resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas")
            pl_rt = self.api.resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations")
        except StatusError:
            return  # flowcontrol not served: nothing to classify by
        schemas = self.api.list(fs_rt, None).get("items", [])
        levels = self.api.list(pl_rt, None).get("items", [])
        versions = tuple(o["metadata"].get("resourceVersion") for o in schemas + levels)
        if versions == self._versions and None not in versions:
            return  # nothing changed: keep the order and the classifications
        self._versions = versions
        self._schemas = precedence_order(schemas)
        self._levels = {pl["metadata"]["name"]: pl for pl in levels}
        self._limits = _limits(self._levels)
        self._classified = {}

    def classify(self, info: RequestInfo) -> Optional[dict]:
        """The request's FlowSchema (None: none matches), remembered by what matching reads."""
        key = (info.user, tuple(info.groups), info.verb, info.api_group, info.resource, info.namespace,
               "" if info.resource_request else info.path, info.resource_request)
        hit = self._classified.get(key, _UNKNOWN)
        if hit is not _UNKNOWN:
            return hit
        schema = match_flow_schema(self._schemas, info, ordered=True)
        if len(self._classified) >= CLASSIFICATIONS_MAX:
            self._classified = {}
        self._classified[key] = schema
        return schema

    @contextlib.asynccontextmanager
    async def admit(self, request: web.Request, user: Any, long_running: bool) -> AsyncIterator[dict[str, str]]:
        """Classify the request; yield the headers to send; count it against its level while it runs."""
        self._refresh()
        schema = self.classify(request_info(request, user))
        if schema is None:
            yield {}
            return
        level_name = (schema.get("spec") or {}).get("priorityLevelConfiguration", {}).get("name", "")
        level = self._levels.get(level_name)
        headers = {"X-Kubernetes-PF-FlowSchema-UID": schema["metadata"].get("uid", "")}
        if level is not None:
            headers["X-Kubernetes-PF-PriorityLevel-UID"] = level["metadata"].get("uid", "")
        limit = None if long_running else self._limits.get(level_name)
        if limit is None:
            yield headers
            return
        if self._in_flight.get(level_name, 0) >= limit:
            raise TooManyRequests(headers)
        self._in_flight[level_name] = self._in_flight.get(level_name, 0) + 1
        try:
            yield headers
        finally:
            self._in_flight[level_name] -= 1


class TooManyRequests(StatusError):
    """429 for a saturated priority level, with the classification headers and `Retry-After`."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__(429, "TooManyRequests", "Too many requests, please try again later.",
                         {"retryAfterSeconds": int(RETRY_AFTER)})
        self.headers = {**headers, "Retry-After": RETRY_AFTER}
