"""`HTTPClient`: the `Client` protocol over HTTP(S), against phalanx or any Kubernetes API server.

    client = HTTPClient.from_kubeconfig()                     # $KUBECONFIG / ~/.kube/config
    client = HTTPClient.from_kubeconfig("kc.yaml", context="kind-phalanx", field_manager="kube-scheduler")
    client = HTTPClient("http://127.0.0.1:6443", token="t")   # explicit, e.g. in tests
    ...
    await client.close()

It speaks the same REST dialect as client-go: JSON bodies, bearer token, TLS verified against the
kubeconfig's `certificate-authority-data`, kinds mapped to resource paths through discovery
(`/api/v1`, `/apis/<group>/<version>`, cached per group-version), watches as chunked streams of
newline-delimited `{"type", "object"}` events. Failures raise `StatusError` built from the
server's Status body: a watch that cannot start from an old resourceVersion raises 410 (reason
Expired) whether the server answers 410 up front (phalanx) or sends an ERROR event (etcd-backed
servers), so informers relist. Network failures raise StatusError 503 ServiceUnavailable.
"""

from __future__ import annotations

import collections
import random
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from .. import __version__
from ..machinery.errors import StatusError
from .clock import REAL_CLOCK, Clock
from .events import EventRecorder
from .interface import MERGE_PATCH, Obj, ResourceInfo, find_resource, no_kind_match, split_api_version
from .kubeconfig import load_kubeconfig

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            406: "NotAcceptable", 409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
            415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}
LIST_PAGE_SIZE = 500
REQUEST_CONNECTIONS = 16


def status_error_from(code: int, body: bytes | dict | None) -> StatusError:
    """The StatusError a response (or an ERROR watch event's object) stands for."""
    doc: Any = body
    if isinstance(body, (bytes, bytearray)):
        try:
            doc = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        code = int(doc.get("code") or code)
        return StatusError(code, doc.get("reason") or _REASONS.get(code, "Unknown"), doc.get("message") or "",
                           doc.get("details") or {})
    text = body.decode(errors="replace").strip() if isinstance(body, (bytes, bytearray)) else ""
    return StatusError(code, _REASONS.get(code, "Unknown"),
                       text or f"the server responded with the status code {code} but did not return more information")


class HTTPWatch:
    """One watch request, read as `async for (type, obj)`."""

    def __init__(self, client: "HTTPClient", open_args: dict):
        self._client = client
        self._open_args = open_args
        self._resp: aiohttp.ClientResponse | None = None
        self._buf = b""  # the start of a line whose end has not arrived
        self._lines: collections.deque[bytes] = collections.deque()  # complete lines not read yet
        self._closed = False

    def __aiter__(self) -> "HTTPWatch":
        return self

    async def _open(self) -> None:
        c = self._client
        info = await c.resource_info(self._open_args["api_version"], self._open_args["kind"])
        params = {"watch": "true"}
        for key, name in (("resource_version", "resourceVersion"), ("label_selector", "labelSelector"),
                          ("field_selector", "fieldSelector")):
            if self._open_args.get(key):
                params[name] = self._open_args[key]
        if self._open_args.get("allow_bookmarks"):
            params["allowWatchBookmarks"] = "true"
        timeout = self._open_args.get("timeout_seconds")
        if timeout is None:
            timeout = random.randint(300, 600)  # client-go's reflector: 5-10 minutes
        params["timeoutSeconds"] = str(timeout)
        path = c._path(info, self._open_args.get("namespace"))
        try:
            resp = await c._watch_session().get(c.server + path, params=params, headers=c._headers(),
                                          timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
                                          server_hostname=c.tls_server_name)
        except (aiohttp.ClientError, OSError) as e:
            raise c._unavailable(e) from None
        if resp.status >= 400:
            body = await resp.read()
            resp.release()
            raise status_error_from(resp.status, body)
        self._resp = resp

    async def __anext__(self) -> tuple[str, Obj]:
        if self._closed:
            raise StopAsyncIteration
        if self._resp is None:
            await self._open()
        while True:
            while self._lines:
                line = self._lines.popleft().strip()
                if not line:
                    continue
                ev = orjson.loads(line)
                type_, obj = ev.get("type"), ev.get("object")
                if type_ == "ERROR":
                    await self.aclose()
                    raise status_error_from(int((obj or {}).get("code") or 500), obj)
                return type_, obj
            resp = self._resp
            assert resp is not None, "opened above"
            try:
                chunk = await resp.content.readany()
            except (aiohttp.ClientError, OSError) as e:
                await self.aclose()
                raise self._client._unavailable(e) from None
            if not chunk:
                await self.aclose()
                if self._buf.strip():
                    raise StatusError(500, "InternalError", "watch stream ended in the middle of an event")
                raise StopAsyncIteration
            # A chunk holds many events (the server sends a burst in one write): split it once,
            # keeping the unfinished last line for the next chunk.
            lines = (self._buf + chunk).split(b"\n")
            self._buf = lines.pop()
            self._lines.extend(lines)

    async def aclose(self) -> None:
        self._closed = True
        if self._resp is not None:
            self._resp.close()

    async def __aenter__(self) -> "HTTPWatch":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


class HTTPClient:
    def __init__(self, server: str, *, token: str | None = None, ssl_context: Any = None,
                 tls_server_name: str | None = None, field_manager: str = "phalanx", clock: Clock = REAL_CLOCK,
                 host: str = "", request_timeout: float = 60.0):
        self.server = server.rstrip("/")
        self.token = token
        self.ssl_context = ssl_context
        self.tls_server_name = tls_server_name
        self.field_manager = field_manager
        self.clock = clock
        self.request_timeout = request_timeout
        self.user_agent = f"{field_manager}/v{__version__} phalanx"
        self.events = EventRecorder(self, clock=clock, component=field_manager, host=host)
        self._http: aiohttp.ClientSession | None = None
        self._watch_http: aiohttp.ClientSession | None = None
        self._gv_cache: dict[tuple[str, str], list[ResourceInfo]] = {}
        self._served: list[ResourceInfo] | None = None

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None, **kwargs) -> "HTTPClient":
        cfg = load_kubeconfig(path, context)
        return cls(cfg.server, token=cfg.token, ssl_context=cfg.ssl_context(),
                   tls_server_name=cfg.tls_server_name, **kwargs)

    # -- plumbing ----------------------------------------------------------------------------
    def _session(self) -> aiohttp.ClientSession:
        """Requests: at most REQUEST_CONNECTIONS connections, kept alive and reused (a burst of
        concurrent calls waits for one rather than opening, and TLS-handshaking, a connection each)."""
        if self._http is None or self._http.closed:
            self._http = self._new_session(REQUEST_CONNECTIONS)
        return self._http

    def _watch_session(self) -> aiohttp.ClientSession:
        """Watches: one connection each for as long as it lasts, so they never hold up requests."""
        if self._watch_http is None or self._watch_http.closed:
            self._watch_http = self._new_session(0)
        return self._watch_http

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=limit, ssl=self.ssl_context if self.ssl_context is not None else True)
        return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.request_timeout))

    def _headers(self, content_type: str | None = None) -> dict:
        h = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if content_type:
            h["Content-Type"] = content_type
        return h

    def _unavailable(self, e: Exception) -> StatusError:
        return StatusError(503, "ServiceUnavailable", f"error talking to {self.server}: {type(e).__name__}: {e}")

    async def _request(self, method: str, path: str, *, params: dict | None = None, body: Any = None,
                       content_type: str = "application/json") -> Any:
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, bytearray)) else (
                body.encode() if isinstance(body, str) else orjson.dumps(body))
        try:
            async with self._session().request(method, self.server + path, params=params, data=data,
                                               headers=self._headers(content_type if data is not None else None),
                                               server_hostname=self.tls_server_name) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise status_error_from(resp.status, raw)
        except (aiohttp.ClientError, OSError) as e:
            raise self._unavailable(e) from None
        return orjson.loads(raw) if raw else {}

    @staticmethod
    def _path(info: ResourceInfo, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        p = "/api/v1" if not info.group and info.version == "v1" else (
            f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}")
        if info.namespaced and namespace:
            p += f"/namespaces/{quote(namespace, safe='')}"
        p += f"/{info.plural}"
        if name is not None:
            if not name:
                raise StatusError(400, "BadRequest", "resource name may not be empty")
            p += f"/{quote(name, safe='')}"
            if sub:
                p += f"/{sub}"
        return p

    def _params(self, **extra) -> dict:
        return {k: v for k, v in extra.items() if v is not None}

    # -- discovery ---------------------------------------------------------------------------
    async def _group_version(self, group: str, version: str, *, refresh: bool = False) -> list[ResourceInfo]:
        key = (group, version)
        if not refresh and key in self._gv_cache:
            return self._gv_cache[key]
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            doc = await self._request("GET", path)
        except StatusError as e:
            if e.code == 404:
                self._gv_cache[key] = []
                return []
            raise
        subs: dict[str, list[str]] = {}
        entries = []
        for r in doc.get("resources") or []:
            name = r.get("name", "")
            if "/" in name:
                parent, _, sub = name.partition("/")
                subs.setdefault(parent, []).append(sub)
            else:
                entries.append(r)
        out = [ResourceInfo(group, version, r.get("kind", ""), r["name"], bool(r.get("namespaced")),
                            tuple(r.get("verbs") or ()), tuple(subs.get(r["name"], ())))
               for r in entries]
        self._gv_cache[key] = out
        return out

    async def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        group, version = split_api_version(api_version)
        found = find_resource(await self._group_version(group, version), api_version, kind)
        if found is None:  # perhaps served since we last asked (a new CRD)
            found = find_resource(await self._group_version(group, version, refresh=True), api_version, kind)
        if found is None:
            raise no_kind_match(api_version, kind)
        return found

    async def served_resources(self, *, refresh: bool = False) -> list[ResourceInfo]:
        """Every resource of every group's preferred version (as client-go's ServerPreferredResources)."""
        if self._served is not None and not refresh:
            return self._served
        out: list[ResourceInfo] = []
        core = await self._request("GET", "/api")
        for v in core.get("versions") or []:
            out += await self._group_version("", v, refresh=refresh)
        groups = await self._request("GET", "/apis")
        for g in groups.get("groups") or []:
            preferred = (g.get("preferredVersion") or {}).get("version") or \
                ((g.get("versions") or [{}])[0].get("version"))
            if preferred:
                out += await self._group_version(g["name"], preferred, refresh=refresh)
        self._served = out
        return out

    # -- verbs -------------------------------------------------------------------------------
    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj:
        info = await self.resource_info(api_version, kind)
        return await self._request("GET", self._path(info, namespace, name))

    async def list(self, api_version: str, kind: str, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None) -> tuple[list[Obj], str]:
        info = await self.resource_info(api_version, kind)
        path = self._path(info, namespace)
        items: list[Obj] = []
        rv: str | None = None
        cont: str | None = None
        while True:
            doc = await self._request("GET", path, params=self._params(
                labelSelector=label_selector, fieldSelector=field_selector, limit=str(LIST_PAGE_SIZE),
                **({"continue": cont} if cont else {})))
            md = doc.get("metadata") or {}
            if rv is None:
                rv = md.get("resourceVersion", "")
            kind_of_items = info.kind
            for it in doc.get("items") or []:
                # Items of a list may omit apiVersion/kind (they are implied by the list).
                it.setdefault("apiVersion", info.api_version)
                it.setdefault("kind", kind_of_items)
                items.append(it)
            cont = md.get("continue")
            if not cont:
                break
        return items, rv or ""

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              resource_version: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, allow_bookmarks: bool = True,
              timeout_seconds: int | None = None) -> HTTPWatch:
        return HTTPWatch(self, {"api_version": api_version, "kind": kind, "namespace": namespace,
                                "resource_version": resource_version, "label_selector": label_selector,
                                "field_selector": field_selector, "allow_bookmarks": allow_bookmarks,
                                "timeout_seconds": timeout_seconds})

    async def _info_of(self, obj: Obj) -> ResourceInfo:
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
            raise StatusError(400, "BadRequest", "Object 'Kind' is missing in the object to send")
        return await self.resource_info(obj["apiVersion"], obj["kind"])

    async def create(self, obj: Obj, *, namespace: str | None = None, handover: bool = False) -> Obj:
        info = await self._info_of(obj)
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        return await self._request("POST", self._path(info, ns), params={"fieldManager": self.field_manager},
                                   body=obj)

    async def _put(self, obj: Obj, sub: str | None) -> Obj:
        info = await self._info_of(obj)
        md = obj.get("metadata") or {}
        return await self._request("PUT", self._path(info, md.get("namespace"), md.get("name", ""), sub),
                                   params={"fieldManager": self.field_manager}, body=obj)

    async def update(self, obj: Obj, *, handover: bool = False) -> Obj:
        return await self._put(obj, None)

    async def update_status(self, obj: Obj, *, handover: bool = False) -> Obj:
        return await self._put(obj, "status")

    async def patch(self, api_version: str, kind: str, namespace: str | None, name: str, body: Any,
                    patch_type: str = MERGE_PATCH, subresource: str | None = None, *,
                    force: bool = False) -> Obj:
        info = await self.resource_info(api_version, kind)
        params = {"fieldManager": self.field_manager}
        if force:
            params["force"] = "true"
        return await self._request("PATCH", self._path(info, namespace, name, subresource), params=params,
                                   body=body, content_type=patch_type)

    async def delete(self, api_version: str, kind: str, namespace: str | None, name: str, *,
                     propagation: str | None = None, grace_period: int | None = None,
                     preconditions: dict | None = None) -> Obj:
        info = await self.resource_info(api_version, kind)
        opts: dict = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation is not None:
            opts["propagationPolicy"] = propagation
        if grace_period is not None:
            opts["gracePeriodSeconds"] = grace_period
        if preconditions:
            opts["preconditions"] = preconditions
        return await self._request("DELETE", self._path(info, namespace, name), body=opts)

    async def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> None:
        md: dict = {"name": name, "namespace": namespace}
        if uid:
            md["uid"] = uid
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": md,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        await self._request("POST", f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/binding",
                            params={"fieldManager": self.field_manager}, body=body)

    async def finalize(self, namespace: Obj) -> Obj:
        name = (namespace.get("metadata") or {}).get("name", "")
        return await self._request("PUT", f"/api/v1/namespaces/{quote(name, safe='')}/finalize", body=namespace)

    async def create_event(self, regarding: Obj, reason: str, message: str, *, type: str = "Normal",
                           component: str | None = None, host: str | None = None,
                           field_path: str | None = None, annotations: dict | None = None) -> Obj | None:
        return await self.events.record(regarding, reason, message, type=type, component=component,
                                        host=host, field_path=field_path, annotations=annotations)

    async def pod_log(self, namespace: str, name: str, *, container: str | None = None,
                      previous: bool = False) -> str:
        """A container's log as text (`pods/log`, what `kubectl logs` prints); StatusError as
        for any other request."""
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/log"
        params = self._params(container=container, previous="true" if previous else None)
        try:
            async with self._session().get(self.server + path, params=params, headers=self._headers(),
                                           server_hostname=self.tls_server_name) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise status_error_from(resp.status, raw)
        except (aiohttp.ClientError, OSError) as e:
            raise self._unavailable(e) from None
        return raw.decode(errors="replace")

    async def close(self) -> None:
        for session in (self._http, self._watch_http):
            if session is not None and not session.closed:
                await session.close()
        self._http = self._watch_http = None
