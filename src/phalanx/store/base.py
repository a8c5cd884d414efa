"""The store contract and the in-memory core that both backends share.

Objects returned by the store are shared, not copied: callers must treat them as read-only and
build a new dict to change anything (the REST layer does this with an orjson round trip; in-process
informers hold the store's objects themselves). With `PHALANX_STORE_CHECKS=1` (the test suite sets
it) the store keeps each object's serialization and raises `SharedObjectModified` when an object
it handed out was changed in place before its next write.

Watch semantics follow the API server's:
- `watch(key, from_rv=N)` delivers every change with resourceVersion > N, then live changes;
- an N older than the retained history raises `StoreGone` (the API answers 410 Expired and the
  client relists);
- `watch(key, from_rv=None, initial=True)` first replays every current object as ADDED.
"""

from __future__ import annotations

import asyncio
import collections
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import orjson

Obj = dict[str, Any]


class StoreNotFound(Exception):
    pass


class StoreAlreadyExists(Exception):
    pass


class StoreConflict(Exception):
    pass


class SharedObjectModified(AssertionError):
    """Somebody changed an object the store shares (PHALANX_STORE_CHECKS=1)."""


class StoreGone(Exception):
    def __init__(self, requested: int, oldest: int):
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass(slots=True)
class Event:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK | ERROR
    key: str
    namespace: str
    name: str
    rv: int
    object: Obj
    old: Optional[Obj] = None  # the previous state (MODIFIED), for selector transitions


class Watcher:
    """One watch stream: events are pushed synchronously and consumed with `await next()`."""

    MAX_BACKLOG = 200_000

    def __init__(self, store: "Store", key: str, namespace: str | None,
                 predicate: Callable[[Event], bool] | None):
        self.store = store
        self.key = key
        self.namespace = namespace
        self.predicate = predicate
        self._events: collections.deque[Event] = collections.deque()
        self._waiter: asyncio.Future | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.overflowed = False

    def matches(self, ev: Event) -> bool:
        if self.namespace is not None and ev.namespace != self.namespace:
            return False
        return True

    def push(self, ev: Event) -> None:
        if self.closed:
            return
        if len(self._events) >= self.MAX_BACKLOG:
            self.overflowed = True
            self.close()
            return
        self._events.append(ev)
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            loop = self._loop
            if loop is not None and loop.is_running():
                try:
                    running = asyncio.get_running_loop()
                except RuntimeError:
                    running = None
                if running is loop:
                    w.set_result(None)
                else:
                    loop.call_soon_threadsafe(lambda: w.done() or w.set_result(None))
            else:
                w.set_result(None)

    def drain(self) -> list[Event]:
        evs = list(self._events)
        self._events.clear()
        return evs

    def pending(self) -> bool:
        return bool(self._events)

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until events are pending or the watch closes; False on timeout."""
        if self._events or self.closed:
            return True
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._waiter = loop.create_future()
        try:
            if timeout is None:
                await self._waiter
            else:
                await asyncio.wait_for(asyncio.shield(self._waiter), timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            self._waiter = None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.store._remove_watcher(self)
            self._wake()


class Store:
    """In-memory core; `persist_*` hooks let a backend make each write durable."""

    HISTORY = 50_000

    def __init__(self, history: int | None = None):
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self._rv = 0
        self._history: collections.deque[Event] = collections.deque(maxlen=history or self.HISTORY)
        self._oldest_rv = 0  # events with rv > _oldest_rv are retained
        self._watchers: dict[str, list[Watcher]] = {}
        self._lock = threading.RLock()
        self.listeners: list[Callable[[Event], None]] = []  # synchronous in-process observers
        self._written: Optional[dict[tuple[str, str, str], bytes]] = (
            {} if os.environ.get("PHALANX_STORE_CHECKS") == "1" else None)

    def _check_unchanged(self, key: str, namespace: str, name: str, obj: Obj) -> None:
        """PHALANX_STORE_CHECKS: the object about to be replaced is as it was written."""
        written = self._written
        if written is None:
            return
        before = written.get((key, namespace, name))
        if before is not None and orjson.dumps(obj) != before:
            raise SharedObjectModified(f"{key} {namespace}/{name} was modified in place after it was stored: "
                                       f"{before[:200]!r} -> {orjson.dumps(obj)[:200]!r}")

    def _remember(self, key: str, namespace: str, name: str, obj: Obj | None) -> None:
        written = self._written
        if written is None:
            return
        if obj is None:
            written.pop((key, namespace, name), None)
        else:
            written[(key, namespace, name)] = orjson.dumps(obj)

    # -- durability hooks (overridden by SQLiteStore) -------------------------------------
    def persist_put(self, key: str, ns: str, name: str, rv: int, obj: Obj) -> None:
        pass

    def persist_delete(self, key: str, ns: str, name: str, rv: int) -> None:
        pass

    def close(self) -> None:
        for ws in list(self._watchers.values()):
            for w in list(ws):
                w.close()

    # -- reads ---------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        bucket = self._objects.get(key)
        if bucket is None:
            return None
        return bucket.get((namespace, name))

    def list(self, key: str, namespace: str | None = None) -> tuple[list[Obj], int]:
        with self._lock:
            bucket = self._objects.get(key) or {}
            if namespace is None:
                items = [bucket[k] for k in sorted(bucket)]
            else:
                items = [bucket[k] for k in sorted(k for k in bucket if k[0] == namespace)]
            return items, self._rv

    def count(self, key: str) -> int:
        return len(self._objects.get(key) or {})

    def keys(self) -> list[str]:
        return list(self._objects)

    # -- writes --------------------------------------------------------------------------
    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _stamp(self, obj: Obj, rv: int) -> None:
        obj.setdefault("metadata", {})["resourceVersion"] = str(rv)

    def create(self, key: str, namespace: str, name: str, obj: Obj) -> Obj:
        with self._lock:
            bucket = self._objects.setdefault(key, {})
            if (namespace, name) in bucket:
                raise StoreAlreadyExists(name)
            rv = self._next_rv()
            self._stamp(obj, rv)
            self.persist_put(key, namespace, name, rv, obj)
            bucket[(namespace, name)] = obj
            self._remember(key, namespace, name, obj)
            self._emit(Event("ADDED", key, namespace, name, rv, obj))
            return obj

    def update(self, key: str, namespace: str, name: str, obj: Obj, expected_rv: str | None = None) -> Obj:
        with self._lock:
            bucket = self._objects.get(key) or {}
            old = bucket.get((namespace, name))
            if old is None:
                raise StoreNotFound(name)
            if expected_rv and expected_rv != old["metadata"].get("resourceVersion"):
                raise StoreConflict(name)
            if obj is old:
                raise SharedObjectModified(f"{key} {namespace}/{name}: an update must store a new object")
            self._check_unchanged(key, namespace, name, old)
            rv = self._next_rv()
            self._stamp(obj, rv)
            self.persist_put(key, namespace, name, rv, obj)
            bucket[(namespace, name)] = obj
            self._remember(key, namespace, name, obj)
            self._emit(Event("MODIFIED", key, namespace, name, rv, obj, old))
            return obj

    def delete(self, key: str, namespace: str, name: str, expected_rv: str | None = None) -> Obj:
        with self._lock:
            bucket = self._objects.get(key) or {}
            old = bucket.get((namespace, name))
            if old is None:
                raise StoreNotFound(name)
            if expected_rv and expected_rv != old["metadata"].get("resourceVersion"):
                raise StoreConflict(name)
            self._check_unchanged(key, namespace, name, old)
            rv = self._next_rv()
            self.persist_delete(key, namespace, name, rv)
            del bucket[(namespace, name)]
            self._remember(key, namespace, name, None)
            # The DELETED event carries the last state with the deletion's resourceVersion.
            gone = dict(old)
            gone["metadata"] = dict(old["metadata"], resourceVersion=str(rv))
            self._emit(Event("DELETED", key, namespace, name, rv, gone, old))
            return gone

    def _load(self, key: str, namespace: str, name: str, obj: Obj) -> None:
        """Install an object read from durable storage (no event, no new resourceVersion)."""
        self._objects.setdefault(key, {})[(namespace, name)] = obj
        self._remember(key, namespace, name, obj)

    # -- watch ---------------------------------------------------------------------------
    def _emit(self, ev: Event) -> None:
        self._history.append(ev)
        if len(self._history) == self._history.maxlen:
            self._oldest_rv = self._history[0].rv - 1
        for w in list(self._watchers.get(ev.key, ())):
            if w.matches(ev):
                w.push(ev)
        for listener in self.listeners:
            listener(ev)

    def watch(self, key: str, namespace: str | None = None, from_rv: int | None = None,
              initial: bool = False, predicate: Callable[[Event], bool] | None = None) -> Watcher:
        """Open a watch. With `initial`, current objects are replayed first as ADDED."""
        with self._lock:
            w = Watcher(self, key, namespace, predicate)
            if initial or from_rv is None:
                if initial:
                    items, _ = self.list(key, namespace)
                    for o in items:
                        md = o["metadata"]
                        w._events.append(Event("ADDED", key, md.get("namespace", ""), md["name"],
                                               int(md["resourceVersion"]), o))
            else:
                if from_rv < self._oldest_rv:
                    raise StoreGone(from_rv, self._oldest_rv + 1)
                if from_rv < self._rv:
                    for ev in self._history:
                        if ev.rv > from_rv and ev.key == key and w.matches(ev):
                            w._events.append(ev)
            self._watchers.setdefault(key, []).append(w)
            return w

    def _remove_watcher(self, w: Watcher) -> None:
        with self._lock:
            ws = self._watchers.get(w.key)
            if ws and w in ws:
                ws.remove(w)

    def watcher_count(self) -> int:
        return sum(len(v) for v in self._watchers.values())
