"""The control plane process: API server, store and the in-process components, on one event loop.

`ControlPlane(spec, ...)` wires a `ClusterSpec` into running parts:

    store (SQLite or memory) -> API (apiserver.build_api) -> HTTP server (TLS + token)
                                   \\-> in-process Client -> controllers, scheduler, simulated nodes

`serve(state_dir)` is what `phalanx serve --state-dir DIR` runs in the foreground (and what
`phalanx create cluster` starts in the background): it reads `cluster.json`, the PKI and the token
from the state directory, serves until SIGTERM/SIGINT, and leaves all state in `state.db`.
Tests start a `ControlPlane` in-process with `await cp.start()` / `await cp.stop()`; a simulation
starts one without HTTP on a virtual clock (`ControlPlane(spec, store=MemoryStore(),
runtime=RuntimeOptions(clock=VirtualClock()))`, `await cp.start_in_process()`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import ssl
from typing import Any

from aiohttp import web

from ..apiserver import build_api
from ..apiserver.auth.filters import RequestAuth
from ..apiserver.auth.policy import ensure_bootstrap_policy
from ..apiserver.eventttl import EventExpiry
from ..apiserver.listener import Listener, ServingLimits, serve_app
from ..apiserver.server import Server
from ..client.clock import REAL_CLOCK, to_datetime
from ..store import MemoryStore, SQLiteStore, Store
from .bootstrap import bootstrap
from .runtime import RuntimeOptions
from ..machinery.featuregates import FeatureGates
from .spec import ClusterSpec

log = logging.getLogger("phalanx.controlplane")


class ControlPlane:
    def __init__(self, spec: ClusterSpec, *, state_dir: str | None = None, token: str | None = None,
                 ssl_context: ssl.SSLContext | None = None, store: Store | None = None,
                 components: bool = True, limits: ServingLimits | None = None,
                 runtime: RuntimeOptions | None = None):
        self.spec = spec
        self.runtime = runtime or RuntimeOptions()
        self.state_dir = state_dir
        self.token = token
        self.ssl_context = ssl_context
        self.gates = FeatureGates.from_config(spec.feature_gates, spec.release)
        if store is None:
            if spec.storage == "sqlite" and state_dir:
                store = SQLiteStore(os.path.join(state_dir, "state.db"))
            else:
                store = MemoryStore()
        self.store = store
        clock = self.runtime.clock
        self.api = build_api(store, self.gates, runtime_config=spec.runtime_config, release=spec.release,
                             now=None if clock is REAL_CLOCK else (lambda: to_datetime(clock.now())))
        self.api.track_managed_fields = self.runtime.managed_fields
        self.components_enabled = components
        self.components: list[Any] = []
        self.limits = limits or ServingLimits()
        self._runner: web.AppRunner | None = None
        self._listener: Listener | None = None
        self.port: int | None = None
        self.server: Server | None = None
        self.event_expiry = EventExpiry(self.api, ttl=spec.event_ttl)
        self._event_expiry_task: asyncio.Task | None = None

    async def start(self) -> int:
        bootstrap(self.api, self.spec)
        ensure_bootstrap_policy(self.api)
        host = self.spec.listen_address or "127.0.0.1"
        self.server = Server(self.api, self.token, server_address=f"{host}:{self.spec.port or 6443}",
                             auth=RequestAuth.for_cluster(self.api, self.token, self.state_dir),
                             limits=self.limits, kubernetes_version=self.spec.kubernetes_version)
        self._runner, self._listener = await serve_app(self.server.app(), host, self.spec.port or 0,
                                                       ssl_context=self.ssl_context, limits=self.limits)
        self.port = self._listener.port
        self.server.server_address = f"{host}:{self.port}"
        self._event_expiry_task = asyncio.create_task(self.event_expiry.run(), name="event-ttl")
        if self.components_enabled:
            await self._start_components()
        log.info("control plane serving on %s:%s", host, self.port)
        return self.port

    async def start_in_process(self) -> None:
        """Bootstrap and start the components without serving HTTP: what a simulation runs
        (`phalanx simulate`); drive it through an `InProcessClient` over `self.api`."""
        bootstrap(self.api, self.spec)
        if self.components_enabled:
            await self._start_components()

    async def _start_components(self) -> None:
        from . import components
        self.components = await components.start_all(self)

    async def stop(self) -> None:
        for c in reversed(self.components):
            try:
                await c.stop()
            except Exception:  # pragma: no cover - best effort at shutdown
                log.exception("stopping %s", c)
        self.components = []
        if self._event_expiry_task is not None:
            self.event_expiry.stop()
            await asyncio.gather(self._event_expiry_task, return_exceptions=True)
            self._event_expiry_task = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.store.close()


def _server_ssl_context(state_dir: str) -> ssl.SSLContext | None:
    cert = os.path.join(state_dir, "pki", "server.crt")
    key = os.path.join(state_dir, "pki", "server.key")
    if not (os.path.exists(cert) and os.path.exists(key)):
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx


def _read_token(state_dir: str) -> str | None:
    path = os.path.join(state_dir, "token")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read().strip() or None


def tune_gc() -> None:
    """After startup: move everything alive into the permanent generation and collect the young
    generation less often. The control plane allocates many short-lived dicts (decoded objects);
    the default thresholds made the cyclic collector a large share of scheduling time (profiled in
    the benchmark harness)."""
    import gc
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def serve(state_dir: str) -> None:
    """Run the control plane of the cluster in `state_dir` until SIGTERM or SIGINT."""
    logging.basicConfig(level=os.environ.get("PHALANX_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spec = ClusterSpec.load(state_dir)
    import gc
    gc.set_threshold(50_000, 20, 20)  # reading the store and the first lists make long-lived objects only
    cp = ControlPlane(spec, state_dir=state_dir, token=_read_token(state_dir),
                      ssl_context=_server_ssl_context(state_dir), limits=ServingLimits.from_env(os.environ))
    gc.freeze()  # what the store read back lives until it is replaced: the collector need not scan it

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        port = await cp.start()
        with open(os.path.join(state_dir, "port"), "w") as f:
            f.write(str(port))
        tune_gc()
        await stop.wait()
        await cp.stop()

    asyncio.run(main())
