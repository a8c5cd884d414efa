"""The HTTP front of the API: the REST paths, verbs and content types kubectl and client-go use.

`build_app(api, token=...)` returns an aiohttp application serving:

- `/version`, `/healthz`, `/livez`, `/readyz` (anonymous, as upstream's public-info-viewer allows;
  the checks in `monitoring.py`) and `/metrics` (Prometheus text, authorized as a non-resource URL);
- discovery: `/api`, `/apis` (aggregated v2 or legacy by `Accept`), `/api/v1`, `/apis/<g>`, `/apis/<g>/<v>`;
- `/openapi/v3` and its per-group-version documents; `/openapi/v2` (definitions only, JSON or
  gnostic protobuf: `api/openapiv2.py`), which kubectl's validation falls back to for unknown kinds;
- for every served resource: list / watch / create / deletecollection on collections, and
  get / update / patch / delete on items, with the `status`, `binding`, `log`, `scale` and
  namespace `finalize` subresources;
- the Metrics API `metrics.k8s.io/v1beta1` (`metricsapi.py`: simulated usage for `kubectl top`);
- Tables for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.

Every request but the anonymous ones must carry `Authorization: Bearer <token>`; `auth.filters`
authenticates, impersonates and authorizes it (RBAC) and answers the access reviews. Errors are
`metav1.Status` bodies. The handlers only translate HTTP to `rest.API` calls and back.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from urllib.parse import unquote

import orjson
from aiohttp import web

from ..machinery.releases import PATCH_VERSIONS, git_version, release_of
from ..api.certificates import set_requester
from ..api.registry import ResourceType
from ..machinery import errors
from ..machinery.durations import parse_duration
from ..machinery.yamldecode import YAMLDecodeError, decode_yaml
from ..machinery.errors import StatusError
from ..metrics import apiserver as apimetrics
from . import discovery, listing, metricsapi, monitoring, podlogs, protobuf, tables
from .apf import PriorityAndFairness, TooManyRequests
from .auth.filters import USER_KEY, RequestAuth
from .eviction import Evictions
from .listener import ServingLimits
from .rest import API, WatchStream

log = logging.getLogger("phalanx.apiserver")

MAX_BODY = 3 * 1024 * 1024  # upstream's default request body limit (3 MiB)
PUBLIC_PATHS = {"/healthz", "/livez", "/readyz", "/version", "/version/", "/healthz/", "/livez/", "/readyz/"}
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml",
               "application/apply-patch+cbor")
WATCH_BOOKMARK_INTERVAL = 30.0
# After a watch writes, the events of the next few milliseconds gather and go out in one write: an
# event arriving alone is sent at once, a burst costs each watcher one wake-up and one write per
# window instead of one per event (200 watchers of a churning namespace made each create 8x
# dearer: a write, TLS included, costs ~40 µs here). The window grows with the HTTP watches of the
# same resource (one per WATCH_BATCH_PER watches), so their writes together stay bounded.
WATCH_BATCH_WINDOW = 0.02
WATCH_BATCH_PER = 10
WATCH_BATCH_MAX = 0.25


def watch_batch_window(watches: int) -> float:
    """How long a watch gathers events after a write, with `watches` open on its resource."""
    return min(WATCH_BATCH_MAX, WATCH_BATCH_WINDOW * max(1.0, watches / WATCH_BATCH_PER))


def watch_batch_pause(watches: int) -> float:
    """This watch's pause after a write: the window, drawn between half and one and a half times
    it. Watches woken by one event would otherwise write again all at once, window after window,
    and a request arriving meanwhile would wait behind all their writes (with 200 watches, tens
    of milliseconds); spread out, it waits behind one or two."""
    return watch_batch_window(watches) * random.uniform(0.5, 1.5)
DEFAULT_WATCH_TIMEOUT = 1800.0


def _json(body: Any, status: int = 200, content_type: str = "application/json",
          warnings: list[str] | None = None) -> web.Response:
    """A JSON response as kube-apiserver writes it: Go's encoder ends the document with a newline."""
    resp = web.Response(body=orjson.dumps(body, option=orjson.OPT_APPEND_NEWLINE), status=status,
                        content_type=None)
    resp.headers["Content-Type"] = content_type
    resp.headers["Cache-Control"] = "no-cache, private"
    for w in warnings or ():
        resp.headers.add("Warning", '299 - ' + orjson.dumps(w).decode())
    return resp


def _page_not_found() -> web.Response:
    """kube-apiserver's answer for a path outside every API group it serves: Go's `http.NotFound`."""
    resp = web.Response(body=b"404 page not found\n", status=404, content_type=None)
    resp.headers["Content-Type"] = "text/plain; charset=utf-8"
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp


APF_HEADERS = web.RequestKey("phalanx.apf-headers", dict)


async def _add_apf_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every response, streams included, carries the request's FlowSchema and PriorityLevel UIDs."""
    for key, value in request.get(APF_HEADERS, {}).items():
        response.headers.setdefault(key, value)


def _status_response(err: StatusError) -> web.Response:
    return _json(err.status(), status=err.code)


def _request_timeout() -> StatusError:
    """504 for a request that did not complete in time (upstream's request deadline)."""
    return StatusError(504, "Timeout",
                       "Timeout: request did not complete within requested timeout - context deadline exceeded", {})


class Server:
    def __init__(self, api: API, token: str | None, *, server_address: str = "127.0.0.1:6443",
                 auth: RequestAuth | None = None, limits: ServingLimits | None = None,
                 kubernetes_version: str = PATCH_VERSIONS["1.36"]):
        self.api = api
        self.kubernetes_version = kubernetes_version
        self.token = token
        self.auth = auth or RequestAuth.for_cluster(api, token, anonymous_paths=PUBLIC_PATHS)
        self.limits = limits or ServingLimits()
        self.server_address = server_address
        self.ready = True
        self.started = time.time()
        self.apf = PriorityAndFairness(api)
        self.health_checks = monitoring.HealthChecks(api.store, lambda: self.ready)
        self.open_watches: collections.Counter[str] = collections.Counter()  # resource key -> HTTP watches
        monitoring.register_storage_source(api.store)

    # -- plumbing --------------------------------------------------------------------------
    @web.middleware
    async def middleware(self, request: web.Request, handler):
        start = time.perf_counter()
        resp = await self._serve(request, handler)
        # Nothing written is told outside the process before it is durable (the store's group commit).
        await self.api.store.flushed()
        labels = request.get(monitoring.LABELS_KEY)
        if labels is not None:  # a resource request (see dispatch)
            monitoring.observe_request(labels, resp.status, time.perf_counter() - start)
        return resp

    async def _serve(self, request: web.Request, handler):
        try:
            answered = await self.auth.check(request)  # authentication, impersonation, RBAC; reviews
            if answered is not None:
                return answered
            deadline = self._deadline(request)
            # API Priority and Fairness (apf.py): classification headers, 429 for a saturated level.
            async with self.apf.admit(request, request.get(USER_KEY), deadline is None) as apf_headers:
                request[APF_HEADERS] = apf_headers
                return await self._handle(request, handler, deadline)
        except TooManyRequests as e:
            resp = _status_response(e)
            resp.headers.update(e.headers)
            return resp
        except StatusError as e:
            return _status_response(e)
        except web.HTTPRequestEntityTooLarge:
            return _status_response(errors.too_large())
        except web.HTTPException:
            raise
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as e:  # a bug: report it as upstream reports internal errors, keep serving
            log.exception("internal error serving %s %s", request.method, request.path)
            return _status_response(errors.internal_error(f"{type(e).__name__}: {e}"))

    async def _handle(self, request: web.Request, handler: Any, deadline: float | None) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _status_response(errors.too_large())
        if deadline is None:
            return await handler(request)
        try:
            async with asyncio.timeout(deadline):
                return await handler(request)
        except TimeoutError:
            return _status_response(_request_timeout())

    def _deadline(self, request: web.Request) -> float | None:
        """Seconds a request may take, as kube-apiserver's timeout filter gives them: the server's
        request timeout, or the shorter `?timeout=` (a Go duration, as `kubectl --request-timeout`
        sends it); None for long-running requests (watches, followed logs). The deadline ends what
        a request awaits (reading, waiting for a resourceVersion, writing); work that never awaits is
        kept short by bounded parsing instead."""
        q = request.query
        if _qbool(request, "watch") or (request.path.endswith("/log") and _qbool(request, "follow")):
            return None
        deadline = self.limits.request_timeout
        asked = q.get("timeout")
        if asked:
            try:
                seconds = parse_duration(asked)
            except ValueError:
                seconds = None  # upstream ignores a timeout it cannot parse
            if seconds is not None and 0 < seconds < deadline:
                deadline = seconds
        return deadline

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.middleware], client_max_size=MAX_BODY + 1024)
        app.on_response_prepare.append(_add_apf_headers)
        r = app.router
        r.add_get("/version", self.version)
        r.add_get("/version/", self.version)
        self.health_checks.routes(r)
        r.add_get("/metrics", monitoring.serve_metrics)
        r.add_get("/api", self.core_discovery)
        r.add_get("/api/", self.core_discovery)
        r.add_get("/apis", self.groups_discovery)
        r.add_get("/apis/", self.groups_discovery)
        r.add_get("/openapi/v2", self.openapi_v2)
        r.add_get("/openapi/v3", self.openapi_index)
        r.add_get("/openapi/v3/{path:.*}", self.openapi_document)
        r.add_route("*", "/api/{tail:.*}", self.dispatch)
        r.add_route("*", "/apis/{tail:.*}", self.dispatch)
        return app

    # -- simple endpoints ------------------------------------------------------------------
    async def version(self, request: web.Request) -> web.Response:
        major, minor = release_of(self.kubernetes_version).split(".")
        return _json({"major": major, "minor": minor, "emulationMajor": major,
                      "emulationMinor": minor, "minCompatibilityMajor": major,
                      "minCompatibilityMinor": str(int(minor) - 1),
                      "gitVersion": git_version(self.kubernetes_version),
                      "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                      "buildDate": "2026-04-22T00:00:00Z", "goVersion": "python",
                      "compiler": "cpython", "platform": "linux/amd64"})

    def _wants_aggregated(self, request: web.Request) -> str | None:
        accept = request.headers.get("Accept", "")
        if "as=APIGroupDiscoveryList" in accept:
            if "v=v2;" in accept or accept.endswith("v=v2") or "v=v2," in accept or "v=v2 " in accept:
                return discovery.AGGREGATED_V2
            if "v=v2beta1" in accept:
                return discovery.AGGREGATED_V2BETA1
        return None

    async def core_discovery(self, request: web.Request) -> web.Response:
        ct = self._wants_aggregated(request)
        if ct:
            doc = discovery.aggregated(self.api.types, core=True)
            if ct == discovery.AGGREGATED_V2BETA1:
                doc["apiVersion"] = "apidiscovery.k8s.io/v2beta1"
            return _json(doc, content_type=ct)
        return _json(discovery.api_versions(self.server_address))

    async def groups_discovery(self, request: web.Request) -> web.Response:
        ct = self._wants_aggregated(request)
        if ct:
            doc = discovery.aggregated(self.api.types, core=False)
            if ct == discovery.AGGREGATED_V2BETA1:
                doc["apiVersion"] = "apidiscovery.k8s.io/v2beta1"
            return _json(doc, content_type=ct)
        return _json(discovery.api_group_list(self.api.types))

    async def openapi_index(self, request: web.Request) -> web.Response:
        from ..api import openapi
        by_gv: dict[tuple[str, str], list] = {}
        for rt in self.api.types:
            by_gv.setdefault((rt.group, rt.version), []).append(rt)
        return _json(openapi.openapi_v3_index(sorted(by_gv), by_gv, self.api.release))

    async def openapi_v2(self, request: web.Request) -> web.Response:
        from ..api import openapi, openapiv2
        roots = [name for rt in self.api.types
                 if (name := openapi.schema_name_for_gvk(rt.group, rt.version, rt.kind, self.api.release))]
        protobuf = "com.github.proto-openapi.spec.v2" in request.headers.get("Accept", "")
        resp = web.Response(body=openapiv2.openapi_v2_bytes(roots, self.api.release, protobuf=protobuf))
        resp.headers["Content-Type"] = openapiv2.PROTOBUF_V2_CONTENT_TYPE if protobuf else "application/json"
        return resp

    async def openapi_document(self, request: web.Request) -> web.Response:
        from ..api import openapi
        path = request.match_info["path"].strip("/")
        parts = path.split("/")
        if parts[:1] == ["api"] and len(parts) == 2:
            group, version = "", parts[1]
        elif parts[:1] == ["apis"] and len(parts) == 3:
            group, version = parts[1], parts[2]
        else:
            raise errors.requested_resource_not_found()
        resources = [rt for rt in self.api.types if rt.group == group and rt.version == version]
        if not resources:
            raise errors.requested_resource_not_found()
        resp = web.Response(body=openapi.openapi_v3_document_bytes(group, version, resources, self.api.release))
        resp.headers["Content-Type"] = "application/json"
        resp.headers["Cache-Control"] = "public, immutable"
        return resp

    # -- resource requests -----------------------------------------------------------------
    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        """Route `/api/...` and `/apis/...`: group and version discovery, then a resource request
        (collection, object or subresource) to the handler for its method."""
        parts = [unquote(p) for p in request.path.strip("/").split("/")]
        located = await self._group_version(request, parts)
        if isinstance(located, web.StreamResponse):
            return located
        group, version, rest = located
        if not rest:
            return self._resource_list(request, group, version)
        if group == "" and len(rest) == 5 and rest[0] == "namespaces" and rest[2] == "pods" \
                and rest[4] in _STREAMING:
            pod = self.api.get(self.api.resource("", "v1", "pods"), rest[1], rest[3])
            raise podlogs.simulated_node_error(pod, _STREAMING[rest[4]])
        target = self._target(group, version, rest)
        handler = _ROUTES.get((target.kind, request.method))
        if group == metricsapi.GROUP:  # the Metrics API: computed, read-only
            handler = metricsapi.handler(target.kind, request.method, _qbool(request, "watch"))
        if handler is None:
            raise errors.method_not_allowed("the server does not allow this method on the requested resource")
        labels = monitoring.request_labels(request.method, request.query, request.headers.get("Content-Type", ""),
                                           group, version, target.rt.plural, target.sub, target.namespace,
                                           target.name)
        request[monitoring.LABELS_KEY] = labels
        if labels[0] != "WATCH":
            return self._with_warning(target, await handler(self, request, target))
        longrunning = apimetrics.LONGRUNNING.labels(labels[0], *labels[2:])
        longrunning.inc()
        try:
            return await handler(self, request, target)
        finally:
            longrunning.dec()

    @staticmethod
    def _with_warning(target: "RequestTarget", resp: web.StreamResponse) -> web.StreamResponse:
        """A resource's deprecation warning (`Warning: 299 - "..."`) on a response not yet sent."""
        if target.rt.deprecation_warning and not resp.prepared:
            resp.headers.add("Warning", "299 - " + orjson.dumps(target.rt.deprecation_warning).decode())
        return resp

    async def _group_version(self, request: web.Request,
                             parts: list[str]) -> web.StreamResponse | tuple[str, str, list[str]]:
        """(group, version, the rest of the path), or the answer for a discovery path."""
        if parts[0] == "api":
            if len(parts) < 2:
                return await self.core_discovery(request)
            return "", parts[1], parts[2:]
        if not self.api.serves_group(parts[1]):
            return _page_not_found()  # no handler serves the group at all
        if len(parts) == 2:
            doc = discovery.api_group(self.api.types, parts[1])
            if doc is None:
                raise errors.requested_resource_not_found()
            return _json(doc)
        return parts[1], parts[2], parts[3:]

    def _resource_list(self, request: web.Request, group: str, version: str) -> web.Response:
        if request.method != "GET":
            raise errors.method_not_allowed("the server does not allow this method on the requested resource")
        doc = discovery.api_resource_list(self.api.types, group, version)
        if doc is None:
            raise errors.requested_resource_not_found()
        return _json(doc)

    def _target(self, group: str, version: str, rest: list[str]) -> "RequestTarget":
        """What `[namespaces/NS/]PLURAL[/NAME[/SUBRESOURCE]]` names; 404 for what is not served."""
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            candidate = self.api._by_gvr.get((group, version, rest[2]))
            if candidate is not None and candidate.namespaced:
                namespace = rest[1]
                rest = rest[2:]
        rt = self.api.resource(group, version, rest[0])
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub is not None and sub not in rt.subresources) \
                or (rt.namespaced and name is not None and namespace is None):
            raise errors.requested_resource_not_found()
        return RequestTarget(rt, namespace, name, sub)

    async def _list_or_watch(self, request: web.Request, t: "RequestTarget") -> web.StreamResponse:
        if _qbool(request, "watch"):
            return await self.watch(request, t.rt, t.namespace)
        return await self.list(request, t.rt, t.namespace)

    async def _bind(self, request: web.Request, t: "RequestTarget") -> web.StreamResponse:
        body = await self._body(request, t.rt)
        return _json(self.api.bind(t.ns, t.object_name, body, dry_run=self._dry_run(request)), status=201)

    async def _evict(self, request: web.Request, t: "RequestTarget") -> web.StreamResponse:
        body = await self._body(request, t.rt)
        result = Evictions(self.api).evict(t.ns, t.object_name, body, dry_run=self._dry_run(request))
        return _json(result, status=201)

    # -- helpers ---------------------------------------------------------------------------
    def _dry_run(self, request: web.Request) -> bool:
        values = request.query.getall("dryRun", [])
        for v in values:
            if v != "All":
                raise errors.bad_request(f'Invalid dryRun value "{v}": valid values are "All"')
        return bool(values)

    def _field_validation(self, request: web.Request) -> str:
        v = request.query.get("fieldValidation", "Warn")
        if v not in ("Strict", "Warn", "Ignore"):
            raise errors.bad_request(f'fieldValidation must be one of "Ignore", "Warn", or "Strict", got "{v}"')
        return v

    async def _raw(self, request: web.Request) -> bytes:
        if request.content.is_eof():  # the whole body has arrived (small bodies, mostly): no wait
            raw = await request.read()
        else:
            try:
                async with asyncio.timeout(self.limits.body_timeout):
                    raw = await request.read()
            except TimeoutError:
                raise _request_timeout() from None
        if len(raw) > MAX_BODY:
            raise errors.too_large()
        return raw

    @staticmethod
    def _decode(raw: bytes, content_type: str, rt: ResourceType | None) -> Any:
        ct = content_type.split(";")[0].strip().lower()
        if ct in ("", "application/json", "*/*") or ct.endswith("+json"):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
        if ct in ("application/yaml", "application/apply-patch+yaml", "text/yaml"):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
            try:
                return decode_yaml(raw)
            except YAMLDecodeError as e:
                raise errors.bad_request(f"error converting YAML to JSON: {e}") from None
        if protobuf.is_protobuf(ct):
            return protobuf.decode(raw)
        raise errors.unsupported_media_type(ct)

    @staticmethod
    def _raw_json(request: web.Request, raw: bytes) -> bytes | None:
        """The raw body for strict duplicate-field checks: JSON only (protobuf has no duplicates; a
        YAML body is checked when it is JSON, which YAML includes)."""
        ct = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if protobuf.is_protobuf(ct):
            return None
        if ct in ("application/yaml", "application/apply-patch+yaml", "text/yaml"):
            try:
                orjson.loads(raw)
            except orjson.JSONDecodeError:
                return None
        return raw

    async def _body(self, request: web.Request, rt: ResourceType | None) -> Any:
        raw = await self._raw(request)
        body = self._decode(raw, request.headers.get("Content-Type", "application/json"), rt)
        if not isinstance(body, dict):
            raise errors.bad_request("couldn't get version/kind; json parse error: the body is not a JSON object")
        return body

    def _respond(self, request: web.Request, rt: ResourceType, obj: dict, status: int = 200,
                 warnings: list[str] | None = None) -> web.Response:
        accept = request.headers.get("Accept", "")
        if tables.wants_table(accept):
            t = tables.table(rt, [obj], self.api.ctx, resource_version=obj["metadata"].get("resourceVersion", ""),
                             include=request.query.get("includeObject", "Metadata"))
            return _json(t, status=status, content_type=tables.TABLE_CONTENT_TYPE, warnings=warnings)
        return _json(obj, status=status, warnings=warnings)

    # -- verbs -----------------------------------------------------------------------------
    def get(self, request: web.Request, rt: ResourceType, namespace: str, name: str) -> web.Response:
        _check_get_resource_version(self.api, request.query.get("resourceVersion"))
        return self._respond(request, rt, self.api.get(rt, namespace, name))

    async def list(self, request: web.Request, rt: ResourceType, namespace: str | None) -> web.Response:
        q = request.query
        limit = listing.parse_int64(q["limit"]) if q.get("limit") else 0
        rv = q.get("resourceVersion")
        opts = listing.ListOptions.parse(limit=limit, continue_token=q.get("continue"), resource_version=rv,
                                         resource_version_match=q.get("resourceVersionMatch"))
        wanted = max(opts.min_rv, opts.at_rv or 0)
        if wanted > self.api.store.resource_version:
            # A version the store has not reached: wait a little for it, as upstream's watch cache does.
            await self.api.store.wait_for_resource_version(wanted, listing.TOO_LARGE_RV_WAIT_SECONDS)
        lst = self.api.list(rt, namespace, label_selector=q.get("labelSelector"),
                            field_selector=q.get("fieldSelector"), limit=limit,
                            continue_token=q.get("continue"), resource_version=rv,
                            resource_version_match=q.get("resourceVersionMatch"))
        if tables.wants_table(request.headers.get("Accept", "")):
            t = tables.table(rt, lst["items"], self.api.ctx, resource_version=lst["metadata"]["resourceVersion"],
                             continue_token=lst["metadata"].get("continue"),
                             include=q.get("includeObject", "Metadata"))
            return _json(t, content_type=tables.TABLE_CONTENT_TYPE)
        return _json(lst)

    async def create(self, request: web.Request, rt: ResourceType, namespace: str) -> web.Response:
        raw = await self._raw(request)
        body = self._decode(raw, request.headers.get("Content-Type", "application/json"), rt)
        if not isinstance(body, dict):
            raise errors.bad_request("couldn't get version/kind; json parse error: the body is not a JSON object")
        if rt.kind == "CertificateSigningRequest":
            set_requester(body, request.get(USER_KEY))  # spec.username & co. name who asked
        warnings: list[str] = []
        obj = self.api.create(rt, namespace, body, dry_run=self._dry_run(request),
                              field_manager=request.query.get("fieldManager") or _default_manager(request),
                              field_validation=self._field_validation(request), raw=self._raw_json(request, raw),
                              warnings=warnings)
        return self._respond(request, rt, obj, status=201, warnings=warnings)

    async def update(self, request: web.Request, rt: ResourceType, namespace: str, name: str,
                     sub: str | None) -> web.Response:
        raw = await self._raw(request)
        body = self._decode(raw, request.headers.get("Content-Type", "application/json"), rt)
        if not isinstance(body, dict):
            raise errors.bad_request("couldn't get version/kind; json parse error: the body is not a JSON object")
        warnings: list[str] = []
        if sub == "finalize":
            obj = self.api.finalize(rt, name, body)
            return self._respond(request, rt, obj)
        obj = self.api.update(rt, namespace, name, body, subresource=sub, dry_run=self._dry_run(request),
                              field_manager=request.query.get("fieldManager") or _default_manager(request),
                              field_validation=self._field_validation(request), raw=self._raw_json(request, raw),
                              warnings=warnings)
        return self._respond(request, rt, obj, warnings=warnings)

    async def patch(self, request: web.Request, rt: ResourceType, namespace: str, name: str,
                    sub: str | None) -> web.Response:
        ct = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ct not in PATCH_TYPES:
            raise StatusError(415, "UnsupportedMediaType",
                              f'the body of the request was in an unknown format - accepted media types include: '
                              f'{", ".join(PATCH_TYPES[:4])}')
        raw = await self._raw(request)
        force = _qbool(request, "force")
        warnings: list[str] = []
        manager = request.query.get("fieldManager") or _default_manager(request)
        obj, created = self.api.patch(rt, namespace, name, ct, raw, subresource=sub,
                                      dry_run=self._dry_run(request), field_manager=manager, force=force,
                                      field_validation=self._field_validation(request), warnings=warnings)
        return self._respond(request, rt, obj, status=201 if created else 200, warnings=warnings)

    async def _delete_options(self, request: web.Request) -> dict:
        raw = await self._raw(request)
        opts: dict = {}
        if raw.strip() and protobuf.is_protobuf(request.headers.get("Content-Type", "")):
            opts = protobuf.decode(raw)
        elif raw.strip():
            try:
                opts = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
            if not isinstance(opts, dict):
                raise errors.bad_request("DeleteOptions must be an object")
        q = request.query
        if "gracePeriodSeconds" in q:
            opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
        if "propagationPolicy" in q:
            opts["propagationPolicy"] = q["propagationPolicy"]
        if "orphanDependents" in q:
            opts["orphanDependents"] = _qbool(request, "orphanDependents")
        if "dryRun" in q:
            opts["dryRun"] = q.getall("dryRun")
        return opts

    def _propagation(self, opts: dict) -> str | None:
        p = opts.get("propagationPolicy")
        if p is None and "orphanDependents" in opts:
            p = "Orphan" if opts["orphanDependents"] else "Background"
        return p

    async def delete(self, request: web.Request, rt: ResourceType, namespace: str, name: str) -> web.Response:
        opts = await self._delete_options(request)
        dry = bool(opts.get("dryRun")) or self._dry_run(request)
        obj, deleted = self.api.delete(rt, namespace, name, propagation=self._propagation(opts),
                                       grace_period=opts.get("gracePeriodSeconds"),
                                       preconditions=opts.get("preconditions"), dry_run=dry)
        # 202 only where upstream answers it: held back after an explicit orphanDependents=false.
        status = 202 if not deleted and opts.get("orphanDependents") is False else 200
        result = self.api.delete_result(rt, obj, deleted)
        if result is not obj:
            return _json(result, status=status)
        return self._respond(request, rt, obj, status=status)

    async def delete_collection(self, request: web.Request, rt: ResourceType,
                                namespace: str | None) -> web.Response:
        opts = await self._delete_options(request)
        q = request.query
        lst = self.api.delete_collection(rt, namespace, label_selector=q.get("labelSelector"),
                                         field_selector=q.get("fieldSelector"),
                                         propagation=self._propagation(opts),
                                         dry_run=bool(opts.get("dryRun")))
        return _json(lst)

    async def logs(self, request: web.Request, rt: ResourceType, namespace: str, name: str) -> web.StreamResponse:
        """The simulated log of a container (`podlogs`): `previous`, `timestamps`, `tailLines`,
        and `follow`, which streams until the container stops."""
        pod = self.api.get(rt, namespace, name)
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        container = request.query.get("container")
        if container is None:
            if len(containers) > 1:
                raise errors.bad_request(
                    f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]")
            container = containers[0] if containers else ""
        elif container not in containers:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        previous, timestamps = _qbool(request, "previous"), _qbool(request, "timestamps")
        tail = request.query.get("tailLines")
        lines = podlogs.log_lines(pod, container, previous)
        text = podlogs.render(lines, timestamps=timestamps, tail=int(tail) if tail and tail.lstrip("-").isdigit() else None)
        if not _qbool(request, "follow") or previous:
            return web.Response(text=text, content_type="text/plain")
        return await self._follow_log(request, rt, namespace, name, container, text, len(lines), timestamps)

    async def _follow_log(self, request: web.Request, rt: ResourceType, namespace: str, name: str, container: str,
                          text: str, sent: int, timestamps: bool) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        await resp.write(text.encode())
        uid = self.api.get(rt, namespace, name)["metadata"].get("uid")
        while True:
            await asyncio.sleep(1.0)
            try:
                pod = self.api.get(rt, namespace, name)
                lines = podlogs.log_lines(pod, container)
            except StatusError:
                break  # the pod or its run went away
            if pod["metadata"].get("uid") != uid:
                break
            if len(lines) > sent:
                await resp.write(podlogs.render(lines[sent:], timestamps=timestamps).encode())
                sent = len(lines)
            state = next((c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or []
                          if c.get("name") == container), {})
            if "running" not in state:
                break
        await resp.write_eof()
        return resp

    async def scale(self, request: web.Request, rt: ResourceType, namespace: str, name: str) -> web.Response:
        obj = self.api.get(rt, namespace, name)
        if request.method in ("PUT", "PATCH"):
            if request.method == "PUT":
                body = await self._body(request, rt)
            else:
                from ..machinery import patch as patching
                from ..machinery.patchmeta import PatchMeta
                ct = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
                raw = await self._raw(request)
                body = patching.apply_patch(_scale_of(rt, obj), ct, orjson.loads(raw), PatchMeta.empty())
            replicas = (body.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid_error("Scale", "autoscaling", name,
                                           [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
            from ..machinery.meta import deep_copy
            new = deep_copy(obj)
            set_replicas = getattr(rt.strategy, "set_replicas", None)  # custom resources: the CRD's path
            if set_replicas is not None:
                set_replicas(new, replicas)
            else:
                new["spec"]["replicas"] = replicas
            obj = self.api.update(rt, namespace, name, new, field_manager=request.query.get("fieldManager"))
        return _json(_scale_of(rt, obj))

    async def watch(self, request: web.Request, rt: ResourceType, namespace: str | None) -> web.StreamResponse:
        q = request.query
        timeout = _watch_timeout(q.get("timeoutSeconds"))
        rv = q.get("resourceVersion")
        initial_events = _qbool(request, "sendInitialEvents")
        too_large: StatusError | None = None
        if initial_events:
            # The initial events must be at least that fresh: wait a little for the store to get there.
            wanted = listing.parse_resource_version(rv)
            store = self.api.store
            if wanted > store.resource_version and \
                    not await store.wait_for_resource_version(wanted, listing.TOO_LARGE_RV_WAIT_SECONDS):
                too_large = listing.too_large_resource_version(wanted, store.resource_version)
        stream = None
        if too_large is None:
            stream = self.api.watch(rt, namespace, resource_version=rv,
                                    label_selector=q.get("labelSelector"), field_selector=q.get("fieldSelector"),
                                    send_initial_events=initial_events,
                                    allow_bookmarks=_qbool(request, "allowWatchBookmarks"))
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        resp = web.StreamResponse(status=200)
        resp.content_type = "application/json"
        if as_table:
            resp.headers["Content-Type"] = tables.TABLE_CONTENT_TYPE
        resp.headers["Cache-Control"] = "no-cache, private"
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        if too_large is not None:
            # As upstream: the watch starts, then ends with the error as its only event.
            await resp.write(orjson.dumps({"type": "ERROR", "object": too_large.status()}) + b"\n")
        elif stream is not None:
            self.open_watches[rt.key] += 1
            try:
                await self._serve_watch(request, resp, rt, stream, timeout, as_table)
            finally:
                self.open_watches[rt.key] -= 1
        try:
            await resp.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    async def _serve_watch(self, request: web.Request, resp: web.StreamResponse, rt: ResourceType,
                           stream: WatchStream, timeout: float, as_table: bool) -> None:
        """Write the stream's events until it closes, the timeout passes or the client goes.

        After each write the watch waits (`watch_batch_pause`) before it looks again, so a burst
        of events goes out in few writes. Each event is encoded once per form and the bytes are shared among all the watches that
        send it (`API.watch_frames`); a Table's first event (with column definitions) is its own,
        and Table frames are shared only within one second (their rows show ages)."""
        include = request.query.get("includeObject", "Metadata")
        frames = self.api.watch_frames
        ctx = self.api.ctx
        last_write = time.monotonic()
        deadline = last_write + timeout
        headers_sent = False

        def table_frame(typ: str, obj: dict, headers: bool) -> bytes:
            t = tables.table(rt, [obj], ctx, include=include, headers=headers,
                             resource_version=obj["metadata"].get("resourceVersion", ""))
            return listing.json_frame(typ, t)

        try:
            while True:
                events = stream.ready()
                if events:
                    chunks = []
                    for typ, obj in events:
                        if not as_table or typ == "BOOKMARK":
                            chunks.append(frames.frame(typ, obj, "json", lambda: listing.json_frame(typ, obj)))
                        elif not headers_sent:
                            chunks.append(table_frame(typ, obj, True))
                            headers_sent = True
                        else:
                            # Rows show ages: a Table frame is shared within the second it was made.
                            form = ("table", rt.key, include, int(time.monotonic()))
                            chunks.append(frames.frame(typ, obj, form, lambda: table_frame(typ, obj, False)))
                    chunks.append(b"")
                    await self.api.store.flushed()  # a watcher sees only durable writes
                    await resp.write(b"\n".join(chunks))
                    await asyncio.sleep(watch_batch_pause(self.open_watches[rt.key]))
                if stream.closed:
                    if stream.watcher.overflowed:
                        err = errors.gone("watch channel was too slow and was closed")
                        await resp.write(orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n")
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                got = await stream.wait(min(remaining, 5.0))
                if not got:
                    if stream.allow_bookmarks and time.monotonic() - last_write >= WATCH_BOOKMARK_INTERVAL:
                        await self.api.store.flushed()
                        await resp.write(orjson.dumps({"type": "BOOKMARK", "object": stream.bookmark()}) + b"\n")
                        last_write = time.monotonic()
                else:
                    last_write = time.monotonic()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            stream.close()


def _scale_of(rt: ResourceType, obj: dict) -> dict:
    custom = getattr(rt.strategy, "scale_of", None)
    if custom is not None:
        return custom(obj)
    md = obj["metadata"]
    sel = (obj.get("spec") or {}).get("selector") or {}
    if rt.kind != "ReplicationController":  # a plain label map there; a LabelSelector elsewhere
        sel = sel.get("matchLabels") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": md["name"], "namespace": md.get("namespace"), "uid": md.get("uid"),
                         "resourceVersion": md.get("resourceVersion"),
                         "creationTimestamp": md.get("creationTimestamp")},
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                       "selector": ",".join(f"{k}={v}" for k, v in sorted(sel.items()))}}


_TRUE = ("1", "t", "T", "TRUE", "true", "True")


def _watch_timeout(value: str | None) -> float:
    """`timeoutSeconds` as upstream reads it: a Go int64 (400 otherwise); unset or 0 is the
    server's default; a negative value ends the watch at once."""
    seconds = listing.parse_int64(value) if value else 0
    return float(seconds) if seconds else DEFAULT_WATCH_TIMEOUT


def _check_get_resource_version(api: API, value: str | None) -> None:
    """A get's resourceVersion: 400 unless an unsigned integer; 504 when ahead of the store (at
    once: upstream's storage answers so when the watch cache does not serve the read)."""
    rv = listing.parse_resource_version(value)
    current = api.store.resource_version
    if rv > current:
        raise listing.too_large_resource_version(rv, current)


def _qbool(request: web.Request, name: str) -> bool:
    """A boolean query parameter as Go's strconv.ParseBool reads it."""
    return request.query.get(name) in _TRUE


def _default_manager(request: web.Request) -> str:
    """Upstream derives the manager from the User-Agent's program name when none is given."""
    ua = request.headers.get("User-Agent", "")
    return ua.split("/")[0] if ua else "unknown"


def build_app(api: API, token: str | None, server_address: str = "127.0.0.1:6443") -> web.Application:
    return Server(api, token, server_address=server_address).app()


@dataclass(frozen=True)
class RequestTarget:
    """The resource a request names: a collection (`name` None), an object or a subresource."""
    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str | None

    @property
    def kind(self) -> str:
        """The route key: `collection`, `object`, or the subresource (`status`, `binding`, ...)."""
        if self.name is None:
            return "collection"
        return self.sub or "object"

    @property
    def ns(self) -> str:
        return self.namespace or ""

    @property
    def object_name(self) -> str:
        assert self.name is not None
        return self.name


async def _get(server: Server, request: web.Request, t: RequestTarget) -> web.StreamResponse:
    return server.get(request, t.rt, t.ns, t.object_name)


# Pod subresources that need a container runtime: simulated nodes answer them with an error.
_STREAMING = {"exec": "exec into", "attach": "attach to", "portforward": "port-forward to"}

_Route = Callable[[Server, web.Request, RequestTarget], Awaitable[web.StreamResponse]]
_ROUTES: dict[tuple[str, str], _Route] = {
    ("collection", "GET"): lambda s, r, t: s._list_or_watch(r, t),
    ("collection", "POST"): lambda s, r, t: s.create(r, t.rt, t.ns),
    ("collection", "DELETE"): lambda s, r, t: s.delete_collection(r, t.rt, t.namespace),
    ("object", "GET"): _get,
    ("object", "PUT"): lambda s, r, t: s.update(r, t.rt, t.ns, t.object_name, None),
    ("object", "PATCH"): lambda s, r, t: s.patch(r, t.rt, t.ns, t.object_name, None),
    ("object", "DELETE"): lambda s, r, t: s.delete(r, t.rt, t.ns, t.object_name),
    ("binding", "POST"): lambda s, r, t: s._bind(r, t),
    ("eviction", "POST"): lambda s, r, t: s._evict(r, t),
    ("log", "GET"): lambda s, r, t: s.logs(r, t.rt, t.ns, t.object_name),
}
for _sub in ("status", "finalize", "approval"):
    _ROUTES[(_sub, "GET")] = _get
    _ROUTES[(_sub, "PUT")] = lambda s, r, t: s.update(r, t.rt, t.ns, t.object_name, t.sub)
    _ROUTES[(_sub, "PATCH")] = lambda s, r, t: s.patch(r, t.rt, t.ns, t.object_name, t.sub)
for _method in ("GET", "PUT", "PATCH"):
    _ROUTES[("scale", _method)] = lambda s, r, t: s.scale(r, t.rt, t.ns, t.object_name)
