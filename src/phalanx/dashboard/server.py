"""The dashboard's web server: an aiohttp app on loopback, behind a one-time login token.

`Dashboard(client)` watches the cluster through informers — Nodes, Pods, the PodGroups (and
CompositePodGroups, Workloads) of whichever scheduling.k8s.io version discovery finds, ResourceSlices,
ResourceClaims, DeviceClasses, Jobs, JobSets — and feeds a `state.ClusterView`; Events (both APIs)
go to its timeline through `timeline.EventFollower`s, which keep a bounded number of entries.

The stream (`/api/stream`, Server-Sent Events): a page gets the whole document once (`event:
snapshot`), then `event: patch` messages — the rows that changed, coalesced over `debounce`
seconds (0.15 by default) — each naming its generation. A page too far behind for the patches kept
gets a new snapshot. `/api/metrics` scrapes the scheduler's metrics (`scrape.SchedulerMetrics`)
when a page asks, which it does only while its Metrics view is open.

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
from collections import deque
from importlib import resources
from typing import Any, Awaitable, Callable

import orjson
from aiohttp import web

from phalanx.client.informer import Informer, InformerFactory
from phalanx.client.interface import Client, is_no_kind_match
from phalanx.machinery.errors import StatusError
from phalanx.scheduler import explain as explaining

from . import model, scrape
from .state import ClusterView
from .timeline import CORE_EVENTS, DEFAULT_CAPACITY, EVENTS_API, EventFollower, mentioned_nodes

log = logging.getLogger(__name__)

COOKIE = "phalanx_dashboard"
POD_GROUP_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")
COMPOSITE_API = "scheduling.k8s.io/v1alpha3"
RESOURCE_API = "resource.k8s.io/v1"
PATCHES_KEPT = 64
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


async def watched_kinds(client: Client, pod_group_version: str | None) -> list[tuple[str, str]]:
    """(apiVersion, kind) of everything the dashboard watches that this cluster serves."""
    kinds = [("v1", "Node"), ("v1", "Pod")]
    optional = [(RESOURCE_API, "ResourceSlice"), (RESOURCE_API, "ResourceClaim"), (RESOURCE_API, "DeviceClass"),
                ("batch/v1", "Job"), ("jobset.x-k8s.io/v1alpha2", "JobSet"), (COMPOSITE_API, "CompositePodGroup")]
    if pod_group_version:
        kinds.append((pod_group_version, "PodGroup"))
        optional.append((pod_group_version, "Workload"))
    for api_version, kind in optional:
        if await serves(client, api_version, kind):
            kinds.append((api_version, kind))
    return kinds


class Dashboard:
    """The informers, the cluster view, the patches recently sent and the pages listening."""

    def __init__(self, client: Client, *, debounce: float = 0.15, timeline_capacity: int = DEFAULT_CAPACITY,
                 metrics: scrape.SchedulerMetrics | None = None):
        self.client = client
        self.debounce = debounce
        self.factory = InformerFactory(client)
        self.informers: dict[str, Informer] = {}
        self.view = ClusterView(timeline_capacity)
        self.pod_group_api: str | None = None
        self._kinds: list[tuple[str, str]] | None = None
        self.metrics = metrics or scrape.SchedulerMetrics(scrape.http_scrape(client) or _process_scrape)
        self.patches: deque[tuple[int, bytes]] = deque(maxlen=PATCHES_KEPT)
        self.stats = {"patches": 0, "patchBytes": 0, "flushSeconds": 0.0, "lastFlushSeconds": 0.0}
        self._document: tuple[int, bytes] = (-1, b"")
        self.synced = asyncio.Event()  # set once the informers' first lists are in the view
        self._dirty = asyncio.Event()
        self._changed = asyncio.Condition()
        self._tasks: list[asyncio.Task] = []

    @property
    def generation(self) -> int:
        return self.view.generation

    async def discover(self) -> None:
        """What the cluster serves (a quick check that it answers, before a URL is printed)."""
        self.pod_group_api = await pod_group_api(self.client)
        self._kinds = await watched_kinds(self.client, self.pod_group_api)

    async def start(self) -> None:
        """Discovery if not done, the informers' first lists, then the publishing."""
        if self._kinds is None:
            await self.discover()
        for api_version, kind in self._kinds or []:
            inf = self.factory.informer(api_version, kind)
            upsert = self._upsert(kind)
            inf.add_event_handler(upsert, self._update(upsert), self._remove(kind))
            self.informers[kind] = inf
        self.factory.start()
        await self.factory.wait_for_sync()
        followers = [EventFollower(self.client, api_version, self._events) for api_version in (CORE_EVENTS, EVENTS_API)
                     if await serves(self.client, api_version, "Event")]
        self.view.timeline_held = bool(followers)
        self._tasks += [asyncio.create_task(f.run()) for f in followers]
        self._tasks.append(asyncio.create_task(self._release_timeline(followers)))
        self._flush()
        self.synced.set()
        self._tasks.append(asyncio.create_task(self._publish_loop()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.factory.stop()

    def _upsert(self, kind: str) -> Callable[[Any], None]:
        def handler(obj: Any) -> None:
            self.view.upsert(kind, obj)
            self._dirty.set()
        return handler

    @staticmethod
    def _update(upsert: Callable[[Any], None]) -> Callable[[Any, Any], None]:
        def handler(_old: Any, new: Any) -> None:
            upsert(new)
        return handler

    def _remove(self, kind: str) -> Callable[[Any], None]:
        def handler(obj: Any) -> None:
            self.view.remove(kind, obj)
            self._dirty.set()
        return handler

    async def _release_timeline(self, followers: list[EventFollower]) -> None:
        """The timeline goes to pages once every Event API has been read to where it stood at the start."""
        await asyncio.gather(*(f.caught_up.wait() for f in followers))
        self.view.timeline_held = False
        self._dirty.set()

    def _events(self, events: list[Any]) -> None:
        self.view.record_events(events)
        self._dirty.set()

    def _flush(self) -> None:
        started = time.perf_counter()
        patch = self.view.flush()
        seconds = time.perf_counter() - started
        self.stats["lastFlushSeconds"] = seconds
        self.stats["flushSeconds"] += seconds
        if patch is not None:
            data = orjson.dumps(patch)
            self.patches.append((patch["generation"], data))
            self.stats["patches"] += 1
            self.stats["patchBytes"] += len(data)

    def document(self) -> tuple[int, bytes]:
        """The whole document at the current generation (encoded once per generation)."""
        if self._document[0] != self.view.generation:
            doc = self.view.document()
            doc["podGroupAPI"] = self.pod_group_api
            self._document = (self.view.generation, orjson.dumps(doc))
        return self._document

    def patches_after(self, generation: int) -> list[bytes] | None:
        """The patches that take a page from `generation` to now; None when some are no longer kept."""
        out = [data for gen, data in self.patches if gen > generation]
        if self.view.generation > generation and (not out or self.patches[0][0] > generation + 1):
            return None
        return out

    async def _publish_loop(self) -> None:
        while True:
            await self._dirty.wait()
            # Coalesce a burst of watch events into one patch, and keep flushing (synchronous) to a
            # third of the loop's time at most.
            await asyncio.sleep(max(self.debounce, 2 * self.stats["lastFlushSeconds"]))
            self._dirty.clear()
            try:
                self._flush()
            except Exception:  # noqa: BLE001 - a bad object must not stop the dashboard
                log.exception("dashboard: computing the patch failed")
                continue
            async with self._changed:
                self._changed.notify_all()

    async def wait_past(self, generation: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.view.generation > generation)

    def pod(self, namespace: str, name: str) -> dict | None:
        """What the page needs to highlight a pod: its node, group and claims."""
        pod = self.view.objects["Pod"].get(f"{namespace}/{name}")
        if pod is None:
            return None
        node = model.node_name_of(pod)
        return {"namespace": namespace, "name": name, "nodes": [node] if node else [],
                "phase": (pod.get("status") or {}).get("phase", ""), "podGroup": model.pod_group_name(pod),
                "claims": sorted(model.pod_claims(pod))}


async def _process_scrape() -> str:
    return scrape.process_scrape()


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


async def _stream(dashboard: Dashboard, request: web.Request) -> web.StreamResponse:
    """A snapshot, then patches as they come (a new snapshot when the page fell too far behind)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
    await resp.prepare(request)
    await dashboard.synced.wait()
    seen = -1
    try:
        while True:
            patches = dashboard.patches_after(seen) if seen >= 0 else None
            if patches is None:
                seen, doc = dashboard.document()
                await resp.write(b"event: snapshot\ndata: " + doc + b"\n\n")
            else:
                seen = dashboard.generation
                await resp.write(b"".join(b"event: patch\ndata: " + p + b"\n\n" for p in patches))
            await dashboard.wait_past(seen)
    except ConnectionError:  # the page went away
        return resp


def build_app(dashboard: Dashboard, auth: Auth, *, allowed_hosts: set[str] | None = None) -> web.Application:
    """The routes: the page and its assets, `/api/state`, `/api/stream` (SSE), `/api/explain`,
    `/api/pod`, `/api/metrics`, `/api/stats`."""
    hosts = allowed_hosts if allowed_hosts is not None else set()
    app = web.Application(middlewares=[auth_middleware(auth, hosts)])

    async def index(_request: web.Request) -> web.Response:
        return _static("index.html")

    async def static(request: web.Request) -> web.Response:
        return _static(request.match_info["name"])

    async def state(_request: web.Request) -> web.Response:
        await dashboard.synced.wait()
        return web.Response(body=dashboard.document()[1], content_type="application/json")

    async def stream(request: web.Request) -> web.StreamResponse:
        return await _stream(dashboard, request)

    async def explain(request: web.Request) -> web.Response:
        return await _explain(dashboard, request)

    async def pod(request: web.Request) -> web.Response:
        found = dashboard.pod(request.query.get("namespace", "default"), request.query.get("name", ""))
        return web.json_response(found) if found else web.json_response({"error": "pod not found"}, status=404)

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(await dashboard.metrics.current()), content_type="application/json")

    async def stats(_request: web.Request) -> web.Response:
        return web.json_response({**dashboard.stats, "generation": dashboard.generation,
                                  "documentBytes": len(dashboard.document()[1])})

    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static)
    for path, fn in (("state", state), ("stream", stream), ("explain", explain), ("pod", pod),
                     ("metrics", metrics), ("stats", stats)):
        app.router.add_get(f"/api/{path}", fn)
    return app


async def _explain(dashboard: Dashboard, request: web.Request) -> web.Response:
    """`phalanx explain pod|podgroup` for the page, as text, with the nodes it names."""
    kind = request.query.get("kind", "pod")
    namespace, name = request.query.get("namespace", "default"), request.query.get("name", "")
    if kind not in ("pod", "podgroup") or not name:
        return web.json_response({"error": "kind must be pod or podgroup, and name is required"}, status=400)
    fn = explaining.explain_pod if kind == "pod" else explaining.explain_podgroup
    try:
        text = await fn(dashboard.client, namespace, name)
    except Exception as e:  # noqa: BLE001 - shown to the user, as `phalanx explain` would print it
        return web.json_response({"error": str(e)}, status=404)
    return web.json_response({"kind": kind, "namespace": namespace, "name": name, "text": text,
                              "nodes": mentioned_nodes(text, dashboard.view.objects["Node"])})


async def serve(client: Client, *, port: int = 0, host: str = "127.0.0.1",
                announce: Callable[[str], None] = print) -> None:
    """Run the dashboard until cancelled; `announce` gets the login URL once it listens (the page
    then waits for the informers' first lists, which take a while on a large cluster)."""
    dashboard = Dashboard(client)
    await dashboard.discover()
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
        await dashboard.start()
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await dashboard.stop()
        await client.close()
