"""The dashboard's web server: an aiohttp app on loopback, behind a one-time login token.

`Dashboard(client)` watches the cluster through informers (Nodes, Pods, the PodGroups of whichever
scheduling.k8s.io version discovery finds, ResourceSlices, ResourceClaims) and keeps one
`model.snapshot` document. Changes are coalesced and pushed to every open page as Server-Sent Events
(`/api/stream`), so a burst of watch events costs one snapshot, not one request per page per second.

Auth: `login_token` is printed once; `GET /?token=<it>` trades it for a session cookie (HttpOnly,
SameSite=Strict) and the token is then spent. Every other request needs the cookie, else 401. The
Host header must name the loopback address the server listens on (no DNS rebinding).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from importlib import resources
from typing import Any, Awaitable, Callable

import orjson
from aiohttp import web

from phalanx.client.informer import Informer, InformerFactory
from phalanx.client.interface import Client, is_no_kind_match
from phalanx.machinery.errors import StatusError
from phalanx.scheduler import explain as explaining

from . import model

log = logging.getLogger(__name__)

COOKIE = "phalanx_dashboard"
POD_GROUP_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")
RESOURCE_API = "resource.k8s.io/v1"
_CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serves(client: Client, api_version: str, kind: str) -> bool:
    """Whether discovery lists `kind` at `api_version` (any version, not only the preferred one)."""
    try:
        await client.resource_info(api_version, kind)
    except StatusError as e:
        if is_no_kind_match(e) or e.code == 404:
            return False
        raise
    return True


async def pod_group_api(client: Client) -> str | None:
    """The PodGroup version the cluster serves, newest first (1.37's v1beta1, 1.36's v1alpha2)."""
    for version in POD_GROUP_VERSIONS:
        if await serves(client, version, "PodGroup"):
            return version
    return None


class Dashboard:
    """The informers, the current document and the pages listening for it."""

    def __init__(self, client: Client, *, debounce: float = 0.2):
        self.client = client
        self.debounce = debounce
        self.factory = InformerFactory(client)
        self.informers: dict[str, Informer] = {}
        self.pod_group_api: str | None = None
        self.document: bytes = b"{}"
        self.generation = 0
        self._dirty = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task | None = None
        self._render_seconds = 0.0

    async def start(self) -> None:
        self.pod_group_api = await pod_group_api(self.client)
        kinds = [("v1", "Node"), ("v1", "Pod")]
        if self.pod_group_api:
            kinds.append((self.pod_group_api, "PodGroup"))
        for kind in ("ResourceSlice", "ResourceClaim"):
            if await serves(self.client, RESOURCE_API, kind):
                kinds.append((RESOURCE_API, kind))
        for api_version, kind in kinds:
            inf = self.factory.informer(api_version, kind)
            inf.add_event_handler(self._touch, lambda old, new: self._touch(new), self._touch)
            self.informers[kind] = inf
        self.factory.start()
        await self.factory.wait_for_sync()
        self._render()
        self._task = asyncio.create_task(self._publish_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.factory.stop()

    def _touch(self, _obj: Any) -> None:
        self._dirty.set()

    def _items(self, kind: str) -> list[dict]:
        inf = self.informers.get(kind)
        return inf.list() if inf is not None else []

    def _render(self) -> None:
        started = time.perf_counter()
        doc = model.snapshot(self._items("Node"), self._items("Pod"), self._items("PodGroup"),
                             self._items("ResourceSlice"), self._items("ResourceClaim"))
        doc["podGroupAPI"] = self.pod_group_api
        self.generation += 1
        doc["generation"] = self.generation
        self.document = orjson.dumps(doc)
        self._render_seconds = time.perf_counter() - started

    async def _publish_loop(self) -> None:
        while True:
            await self._dirty.wait()
            # Coalesce a burst of watch events into one document, and keep rendering (synchronous,
            # ~0.2 s at 4,096 nodes and 50,000 pods) to a third of the loop's time at most.
            await asyncio.sleep(max(self.debounce, 2 * self._render_seconds))
            self._dirty.clear()
            try:
                self._render()
            except Exception:  # noqa: BLE001 - a bad object must not stop the dashboard
                log.exception("dashboard: rendering the snapshot failed")
                continue
            async with self._changed:
                self._changed.notify_all()

    async def next_document(self, after: int) -> bytes:
        """The document once its generation is past `after`."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.generation > after)
        return self.document


class Auth:
    """The one-time login token and the sessions it opened."""

    def __init__(self, login_token: str | None = None):
        self.login_token: str | None = login_token or secrets.token_urlsafe(24)
        self._sessions: set[str] = set()

    def redeem(self, token: str) -> str | None:
        """A new session for the login token, which is spent; None for any other token."""
        if self.login_token is None or not hmac.compare_digest(token.encode(), self.login_token.encode()):
            return None
        self.login_token = None
        session = secrets.token_urlsafe(32)
        self._sessions.add(session)
        return session

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        return any(hmac.compare_digest(session.encode(), s.encode()) for s in self._sessions)


def _host_allowed(request: web.Request, allowed: set[str]) -> bool:
    return not allowed or request.host in allowed


def auth_middleware(auth: Auth, allowed_hosts: set[str]) -> Callable:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not _host_allowed(request, allowed_hosts):
            return web.Response(status=403, text="forbidden host\n")
        token = request.query.get("token")
        if token is not None:
            session = auth.redeem(token)
            if session is None:
                return web.Response(status=401, text="login token invalid or already used\n")
            response = web.Response(status=302, headers={
                "Location": str(request.rel_url.with_query([(k, v) for k, v in request.query.items() if k != "token"]))})
            response.set_cookie(COOKIE, session, httponly=True, samesite="Strict", path="/")
            return response
        if not auth.valid(request.cookies.get(COOKIE)):
            return web.Response(status=401, text="unauthorized: open the URL with the login token "
                                                 "`phalanx dashboard` printed\n")
        return await handler(request)
    return middleware


def _static(name: str) -> web.Response:
    if "/" in name or name.startswith("."):
        raise web.HTTPNotFound()
    path = resources.files(__package__).joinpath("static", name)
    if not path.is_file():
        raise web.HTTPNotFound()
    suffix = name[name.rfind("."):]
    return web.Response(body=path.read_bytes(), content_type=_CONTENT_TYPES.get(suffix, "application/octet-stream"),
                        headers={"Cache-Control": "no-store"})


def build_app(dashboard: Dashboard, auth: Auth, *, allowed_hosts: set[str] | None = None) -> web.Application:
    """The routes: the page and its assets, `/api/state`, `/api/stream` (SSE), `/api/explain`."""
    hosts = allowed_hosts if allowed_hosts is not None else set()
    app = web.Application(middlewares=[auth_middleware(auth, hosts)])

    async def index(_request: web.Request) -> web.Response:
        return _static("index.html")

    async def static(request: web.Request) -> web.Response:
        return _static(request.match_info["name"])

    async def state(_request: web.Request) -> web.Response:
        return web.Response(body=dashboard.document, content_type="application/json")

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await resp.prepare(request)
        seen = 0
        while True:
            doc = dashboard.document if seen < dashboard.generation else await dashboard.next_document(seen)
            seen = dashboard.generation
            await resp.write(b"event: snapshot\ndata: " + doc + b"\n\n")

    async def explain(request: web.Request) -> web.Response:
        return await _explain(dashboard.client, request)

    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/api/state", state)
    app.router.add_get("/api/stream", stream)
    app.router.add_get("/api/explain", explain)
    return app


async def _explain(client: Client, request: web.Request) -> web.Response:
    """`phalanx explain pod|podgroup` for the page, as text."""
    kind = request.query.get("kind", "pod")
    namespace, name = request.query.get("namespace", "default"), request.query.get("name", "")
    if kind not in ("pod", "podgroup") or not name:
        return web.json_response({"error": "kind must be pod or podgroup, and name is required"}, status=400)
    fn = explaining.explain_pod if kind == "pod" else explaining.explain_podgroup
    try:
        text = await fn(client, namespace, name)
    except Exception as e:  # noqa: BLE001 - shown to the user, as `phalanx explain` would print it
        return web.json_response({"error": str(e)}, status=404)
    return web.json_response({"kind": kind, "namespace": namespace, "name": name, "text": text})


async def serve(client: Client, *, port: int = 0, host: str = "127.0.0.1",
                announce: Callable[[str], None] = print) -> None:
    """Run the dashboard until cancelled; `announce` gets the login URL once it listens."""
    dashboard = Dashboard(client)
    await dashboard.start()
    auth = Auth()
    hosts: set[str] = set()
    app = build_app(dashboard, auth, allowed_hosts=hosts)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    hosts.update({f"{host}:{bound}", f"localhost:{bound}"})  # the Host check, once the port is known
    announce(f"http://{host}:{bound}/?token={auth.login_token}")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await dashboard.stop()
        await client.close()
