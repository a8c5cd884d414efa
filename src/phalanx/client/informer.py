"""Informers: client-go's shared informer (list, then watch; a local cache; event handlers).

    factory = InformerFactory(client, clock=clock)
    pods = factory.informer("v1", "Pod", indexers={"nodeName": index_pod_by_node_name})
    pods.add_event_handler(on_add=..., on_update=..., on_delete=...)
    factory.start()
    await factory.wait_for_sync()
    pods.get("default/p"); pods.list(); pods.by_index("nodeName", "node-1")
    ...
    await factory.stop()

An informer lists its resource, fills the cache, calls handlers, then watches from the list's
resourceVersion and keeps the cache current. When the watch fails — 410 Expired (the
resourceVersion is too old), a broken stream, any error — it lists again after a backoff
(0.8 s doubling to 30 s, as client-go's reflector) and reconciles the cache with what it finds:
adds, updates and deletes for everything that changed meanwhile. A watch the server ends
normally (its timeout) is simply reopened from the last resourceVersion seen.

The cache is keyed `namespace/name` (`name` for cluster-scoped objects). Objects in it and
objects passed to handlers are shared: treat them as read-only and copy before changing one.
Handlers are plain functions that should do little (typically: add a key to a work queue).
A handler added after the informer synced gets an `on_add` for every cached object, as in
client-go. `has_synced` turns true once the first list has been delivered to the handlers.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..machinery.errors import StatusError
from .clock import REAL_CLOCK, Clock
from .interface import Client

log = logging.getLogger("phalanx.client.informer")

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]

INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0


def object_key(obj: Obj) -> str:
    """client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name', '')}" if ns else md.get("name", "")


def split_key(key: str) -> tuple[str, str]:
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", key)


# -- common indexers ------------------------------------------------------------------------------
def index_by_namespace(obj: Obj) -> list[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


def index_pod_by_node_name(obj: Obj) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def index_pod_by_pod_group(obj: Obj) -> list[str]:
    """Pods by `namespace/spec.schedulingGroup.podGroupName` (PodGroups are namespaced)."""
    group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    if not group:
        return []
    return [f"{(obj.get('metadata') or {}).get('namespace', '')}/{group}"]


def index_by_owner_uid(obj: Obj) -> list[str]:
    return [r["uid"] for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid")]


class ShortWatchError(Exception):
    pass


@dataclass
class _Handler:
    on_add: Callable[[Obj], Any] | None = None
    on_update: Callable[[Obj, Obj], Any] | None = None
    on_delete: Callable[[Obj], Any] | None = None


class Informer:
    def __init__(self, client: Client, api_version: str, kind: str, namespace: str | None = None, *,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: dict[str, IndexFunc] | None = None, clock: Clock = REAL_CLOCK):
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.clock = clock
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._lock = threading.RLock()
        self._handlers: list[_Handler] = []
        self._synced = False
        self._synced_event: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self.last_sync_resource_version = ""
        self.relists = 0  # lists after the first one (observability, tests)
        self._events_seen = 0
        self.last_error: Exception | None = None
        for name, fn in (indexers or {}).items():
            self.add_indexer(name, fn)

    def __repr__(self) -> str:
        return f"Informer({self.api_version}, {self.kind}, namespace={self.namespace!r})"

    # -- cache reads -------------------------------------------------------------------------
    def get(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def get_by_name(self, namespace: str | None, name: str) -> Obj | None:
        return self.get(f"{namespace}/{name}" if namespace else name)

    def list(self, namespace: str | None = None) -> list[Obj]:
        with self._lock:
            if namespace is None:
                return list(self._items.values())
            return [o for o in self._items.values() if (o.get("metadata") or {}).get("namespace") == namespace]

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        with self._lock:
            keys = (self._indices.get(index) or {}).get(value) or ()
            return [self._items[k] for k in sorted(keys) if k in self._items]

    def index_keys(self, index: str, value: str) -> builtins.list[str]:
        with self._lock:
            return sorted((self._indices.get(index) or {}).get(value) or ())

    # -- indexers and handlers ---------------------------------------------------------------
    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        with self._lock:
            if name in self._indexers:
                if self._indexers[name] is fn:
                    return
                raise ValueError(f"indexer {name!r} already exists on {self!r}")
            self._indexers[name] = fn
            idx: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for v in fn(obj):
                    idx.setdefault(v, set()).add(key)
            self._indices[name] = idx

    def add_event_handler(self, on_add: Callable[[Obj], Any] | None = None,
                          on_update: Callable[[Obj, Obj], Any] | None = None,
                          on_delete: Callable[[Obj], Any] | None = None) -> None:
        h = _Handler(on_add, on_update, on_delete)
        self._handlers.append(h)
        if self._synced and on_add is not None:
            for obj in self.list():
                self._call(on_add, obj)

    def _call(self, fn: Callable, *args) -> None:
        try:
            fn(*args)
        except Exception:  # a handler's bug must not stop the informer
            log.exception("%r: event handler failed", self)

    def _index_add(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            idx = self._indices[name]
            for v in fn(obj):
                idx.setdefault(v, set()).add(key)

    def _index_remove(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            idx = self._indices[name]
            for v in fn(obj):
                keys = idx.get(v)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del idx[v]

    def _upsert(self, obj: Obj) -> None:
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._index_remove(key, old)
            self._items[key] = obj
            self._index_add(key, obj)
        for h in list(self._handlers):
            if old is None:
                if h.on_add:
                    self._call(h.on_add, obj)
            elif h.on_update:
                self._call(h.on_update, old, obj)

    def _remove(self, key: str, last: Obj | None = None) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._index_remove(key, old)
        if old is None:
            return
        final = last if last is not None else old
        for h in list(self._handlers):
            if h.on_delete:
                self._call(h.on_delete, final)

    # -- list and watch ----------------------------------------------------------------------
    @property
    def has_synced(self) -> bool:
        return self._synced

    async def wait_for_sync(self) -> None:
        if self._synced:
            return
        if self._synced_event is None:
            self._synced_event = asyncio.Event()
        await self._synced_event.wait()

    def _mark_synced(self) -> None:
        self._synced = True
        if self._synced_event is not None:
            self._synced_event.set()

    async def _list(self) -> str:
        items, rv = await self.client.list(self.api_version, self.kind, self.namespace,
                                           label_selector=self.label_selector, field_selector=self.field_selector)
        listed: dict[str, Obj] = {}
        for obj in items:
            listed[object_key(obj)] = obj
        # Reconcile the cache with the list (client-go's Replace on the DeltaFIFO).
        for key in [k for k in self.keys() if k not in listed]:
            self._remove(key)
        for key, obj in listed.items():
            cur = self.get(key)
            if cur is not None and (cur.get("metadata") or {}).get("resourceVersion") == \
                    (obj.get("metadata") or {}).get("resourceVersion") and \
                    (cur.get("metadata") or {}).get("uid") == (obj.get("metadata") or {}).get("uid"):
                continue
            if cur is not None and (cur.get("metadata") or {}).get("uid") != (obj.get("metadata") or {}).get("uid"):
                self._remove(key)  # deleted and recreated while we were not watching
            self._upsert(obj)
        self.last_sync_resource_version = rv
        return rv

    async def _watch(self, rv: str) -> None:
        """Follow the watch from `rv` until the server ends it (return) or it fails (raise).
        A watch that ends within a second without a single event is treated as a failure, as
        client-go's reflector does ("very short watch"), so a misbehaving server cannot make the
        informer spin."""
        started = self.clock.now()
        seen = 0
        stream = self.client.watch(self.api_version, self.kind, self.namespace, resource_version=rv,
                                   label_selector=self.label_selector, field_selector=self.field_selector,
                                   allow_bookmarks=True)
        try:
            async for type_, obj in stream:
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if type_ in ("ADDED", "MODIFIED"):
                    self._upsert(obj)
                elif type_ == "DELETED":
                    self._remove(object_key(obj), obj)
                if new_rv:
                    self.last_sync_resource_version = new_rv
                self._events_seen += 1
                seen += 1
        finally:
            await stream.aclose()
        if not seen and self.clock.now() - started < 1.0:
            raise ShortWatchError(f"very short watch: {self.api_version} {self.kind}: "
                                  f"unexpected watch close - watch lasted less than a second and no items received")

    async def run(self) -> None:
        """List and watch until `stop()`; relist with backoff when the watch breaks."""
        failures = 0
        first = True
        while not self._stopping:
            self._events_seen = 0
            try:
                if not first:
                    self.relists += 1
                rv = await self._list()
                first = False
                if not self._synced:
                    self._mark_synced()
                # Keep watching from the last resourceVersion while the server ends watches normally.
                while not self._stopping:
                    await self._watch(self.last_sync_resource_version or rv)
                    failures = 0
            except asyncio.CancelledError:
                raise
            except StatusError as e:
                self.last_error = e
                if e.code == 410:
                    log.info("%r: watch expired (%s); relisting", self, e.message)
                else:
                    log.warning("%r: list/watch failed: %s %s", self, e.code, e.message)
            except Exception as e:  # broken stream, bad JSON, ...
                self.last_error = e
                log.warning("%r: list/watch failed: %s", self, e)
            if self._stopping:
                break
            if self._events_seen:
                failures = 0  # the watch worked for a while: this is a fresh failure
            delay = min(INITIAL_BACKOFF * (2 ** failures), MAX_BACKOFF)
            failures += 1
            await self.clock.sleep(delay)

    def start(self) -> asyncio.Task:
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self.run(), name=f"informer {self.kind}")
        return self._task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass


class InformerFactory:
    """One shared informer per (apiVersion, Kind, namespace) for every component of a process."""

    def __init__(self, client: Client, *, clock: Clock = REAL_CLOCK, namespace: str | None = None):
        self.client = client
        self.clock = clock
        self.namespace = namespace
        self._informers: dict[tuple[str, str, str | None], Informer] = {}

    def informer(self, api_version: str, kind: str, *, namespace: str | None = None,
                 indexers: dict[str, IndexFunc] | None = None) -> Informer:
        if not kind[:1].isupper():
            raise ValueError(f"InformerFactory keys informers by Kind; got {kind!r}")
        ns = namespace if namespace is not None else self.namespace
        key = (api_version, kind, ns)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(self.client, api_version, kind, ns, clock=self.clock)
            self._informers[key] = inf
        for name, fn in (indexers or {}).items():
            inf.add_indexer(name, fn)
        return inf

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet running (call again after adding informers)."""
        for inf in self._informers.values():
            if not inf.running:
                inf.start()

    async def wait_for_sync(self, informers: Iterable[Informer] | None = None) -> None:
        for inf in list(informers if informers is not None else self._informers.values()):
            await inf.wait_for_sync()

    @property
    def has_synced(self) -> bool:
        return all(inf.has_synced for inf in self._informers.values())

    async def stop(self) -> None:
        for inf in list(self._informers.values()):
            await inf.stop()
