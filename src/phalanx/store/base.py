"""The store contract and the in-memory core that both backends share.

Objects returned by the store are shared, not copied: callers must treat them as read-only and
build a new dict to change anything (the REST layer does this with an orjson round trip; in-process
informers hold the store's objects themselves). With `PHALANX_STORE_CHECKS=1` (the test suite sets
it) the store keeps each object's serialization and raises `SharedObjectModified` when an object
it handed out was changed in place before its next write.

Watch semantics follow the API server's:
- `watch(key, from_rv=N)` delivers every change with resourceVersion > N, then live changes (an N
  ahead of the store delivers nothing until the store passes N);
- an N older than the retained history raises `StoreGone` (the API answers 410 Expired and the
  client relists); the history is bounded by events and by bytes (`phalanx.store.history`);
- `watch(key, from_rv=None, initial=True)` first replays every current object as ADDED.

Reads: each bucket puts its keys in order lazily (`phalanx.store.bucket`), so `list` sorts only
what was added since the last ordered read, and `snapshot(key, ns, rv)`
reads a bucket as it was at a past resourceVersion, page by page (`phalanx.store.snapshot`).
The kinds in `COMPACT_KEYS` (Events) are kept as JSON and decoded per read: those reads return a
copy of their own (`phalanx.store.bucket.CompactBucket`).
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextlib
import os
import threading
import time
from typing import Any, Callable, Iterator, Optional

import orjson

from .bucket import Bucket, CompactBucket
from .history import Event, WatchHistory
from .snapshot import Snapshot, namespace_bounds, overlay_since

Obj = dict[str, Any]

# Kept as JSON rather than dicts: written often, read seldom, and the most numerous objects of a
# busy cluster (six Events or so per pod, kept an hour).
COMPACT_KEYS = frozenset({"core/events", "events.k8s.io/events"})

__all__ = ["Obj", "SharedObjectModified", "Store", "StoreAlreadyExists", "StoreConflict",
           "StoreGone", "StoreNotFound", "StoreTooNew", "Watcher"]


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


class StoreTooNew(Exception):
    """A read at a resourceVersion the store has not reached yet."""

    def __init__(self, requested: int, current: int):
        super().__init__(f"Too large resource version: {requested}, current: {current}")
        self.requested = requested
        self.current = current


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
        self.after_rv = 0  # a watch from a resourceVersion ahead of the store skips events up to it
        self._timer: asyncio.TimerHandle | None = None

    def matches(self, ev: Event) -> bool:
        if self.namespace is not None and ev.namespace != self.namespace:
            return False
        return True

    def push(self, ev: Event) -> None:
        if self.closed or ev.rv <= self.after_rv:
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
                    loop.call_soon_threadsafe(_resolve, w)
            else:
                w.set_result(None)

    def drain(self) -> list[Event]:
        evs = list(self._events)
        self._events.clear()
        return evs

    def pending(self) -> bool:
        return bool(self._events)

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until events are pending or the watch closes; False on timeout.

        Cheap because hundreds of watchers wait again after every write: one future per wait,
        and a timer only when none is pending that fires soon enough. A timer set by an earlier
        wait may end this one early (False before `timeout`), never late."""
        if self._events or self.closed:
            return True
        loop = asyncio.get_running_loop()
        if self._loop is not loop and self._timer is not None:  # a timer of another loop never fires here
            self._timer.cancel()
            self._timer = None
        self._loop = loop
        if timeout is not None:
            due = loop.time() + timeout
            if self._timer is None or self._timer.when() > due:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = loop.call_at(due, self._on_timer)
        waiter = self._waiter = loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None
        return bool(self._events) or self.closed

    def _on_timer(self) -> None:
        self._timer = None
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.store._remove_watcher(self)
            self._wake()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


def _resolve(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Store:
    """In-memory core; `persist_*` hooks let a backend make each write durable.

    `history` and `history_bytes` bound the watch history (events, bytes of object JSON); unset,
    they come from `PHALANX_WATCH_HISTORY_EVENTS` / `PHALANX_WATCH_HISTORY_BYTES` or the defaults
    in `phalanx.store.history`."""

    OVERLAYS_KEPT = 32  # paginated lists in progress whose snapshot overlay is kept between pages

    def __init__(self, history: int | None = None, history_bytes: int | None = None):
        self._objects: dict[str, Bucket] = {}
        self._rv = 0
        self._history = WatchHistory(history, history_bytes)
        self._overlays: collections.OrderedDict[tuple[str, str | None, int],
                                                tuple[int, dict[tuple[str, str], Obj | None]]] = \
            collections.OrderedDict()
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

    def _remember(self, key: str, namespace: str, name: str, data: bytes | None) -> None:
        written = self._written
        if written is None:
            return
        if data is None:
            written.pop((key, namespace, name), None)
        else:
            written[(key, namespace, name)] = data

    def _new_bucket(self, key: str) -> Bucket:
        return CompactBucket() if key in COMPACT_KEYS else Bucket()

    # -- durability hooks (overridden by SQLiteStore) -------------------------------------
    def persist_put(self, key: str, ns: str, name: str, rv: int, obj: Obj, data: bytes) -> None:
        """Make a write durable; `data` is `obj` as JSON."""

    def persist_delete(self, key: str, ns: str, name: str, rv: int) -> None:
        pass

    async def flushed(self) -> None:
        """Return once every write made so far is durable (at once here: nothing to persist).
        Whatever tells a write to someone outside the process (an HTTP answer, a watch event sent
        over HTTP) awaits this first."""

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
        """Every current object of `key` (of one namespace), in (namespace, name) order."""
        with self._lock:
            bucket = self._objects.get(key)
            if bucket is None:
                return [], self._rv
            if namespace is None:
                return bucket.ordered_values(), self._rv
            low, high = namespace_bounds(namespace)
            return [bucket[k] for k in bucket.irange(low, high, inclusive=(True, False))], self._rv

    @contextlib.contextmanager
    def snapshot(self, key: str, namespace: str | None = None, at_rv: int | None = None) -> Iterator[Snapshot]:
        """`key` (one namespace of it) as it was at `at_rv` (None: now), to read one page from:

            with store.snapshot(key, ns, rv) as snap:
                page = list(itertools.islice(snap.items_after(last_key), limit))

        Writes wait until the block ends (a snapshot reads the live buckets). Raises `StoreGone`
        when events after `at_rv` have left the history, `StoreTooNew` when the store has not
        reached `at_rv`. The next page takes a new snapshot at the same resourceVersion."""
        with self._lock:
            bucket = self._objects.get(key)
            if bucket is None:
                bucket = self._objects[key] = self._new_bucket(key)
            rv = self._rv
            if at_rv is None or at_rv == rv:
                yield Snapshot(bucket, namespace, rv, {})
                return
            if at_rv > rv:
                raise StoreTooNew(at_rv, rv)
            if not self._history.retains(at_rv):
                raise StoreGone(at_rv, self._history.oldest_rv + 1)
            yield Snapshot(bucket, namespace, at_rv, self._overlay(key, namespace, at_rv))

    def _forget_overlays_older_than(self, rv: int) -> None:
        """Lists whose snapshot left the history cannot continue: let their old objects go."""
        for cache_key in [k for k in self._overlays if k[2] < rv]:
            del self._overlays[cache_key]

    def _overlay(self, key: str, namespace: str | None, at_rv: int) -> dict[tuple[str, str], Obj | None]:
        """What the events after `at_rv` changed in `key`, kept between the pages of one list:
        the next page only looks at the events written since the previous one."""
        cache_key = (key, namespace, at_rv)
        cached = self._overlays.pop(cache_key, None)
        if cached is None:
            overlay = overlay_since(self._history.newest_first_since(at_rv), key, namespace)
        else:
            seen_rv, overlay = cached
            # Keys already in the overlay keep their older state; new keys take the newest events'.
            newer = overlay_since(self._history.newest_first_since(seen_rv), key, namespace)
            overlay = {**newer, **overlay}
        self._overlays[cache_key] = (self._rv, overlay)
        while len(self._overlays) > self.OVERLAYS_KEPT:
            self._overlays.popitem(last=False)
        return overlay

    @property
    def oldest_resource_version(self) -> int:
        """The oldest resourceVersion a watch can resume from or a snapshot can be read at."""
        return self._history.oldest_rv

    async def wait_for_resource_version(self, rv: int, timeout: float) -> bool:
        """Wait (bounded) until the store has reached `rv`; whether it did."""
        deadline = time.monotonic() + timeout
        while self._rv < rv:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(0.01, remaining))
        return True

    def names(self, key: str) -> builtins.list[tuple[str, str]]:
        """The (namespace, name) of every current object of `key`, unordered: to read them one
        at a time with `get` (a kind kept as JSON is then decoded one object at a time)."""
        return builtins.list(self._objects.get(key) or ())

    def count(self, key: str) -> int:
        return len(self._objects.get(key) or {})

    def keys(self) -> builtins.list[str]:
        return builtins.list(self._objects)

    # -- writes --------------------------------------------------------------------------
    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _stamp(self, obj: Obj, rv: int) -> None:
        obj.setdefault("metadata", {})["resourceVersion"] = str(rv)

    def create(self, key: str, namespace: str, name: str, obj: Obj) -> Obj:
        with self._lock:
            bucket = self._objects.get(key)
            if bucket is None:
                bucket = self._objects[key] = self._new_bucket(key)
            if (namespace, name) in bucket:
                raise StoreAlreadyExists(name)
            rv = self._next_rv()
            self._stamp(obj, rv)
            data = orjson.dumps(obj)
            self.persist_put(key, namespace, name, rv, obj, data)
            bucket.add((namespace, name), obj, data)
            self._remember(key, namespace, name, data)
            self._emit(Event("ADDED", key, namespace, name, rv, obj, None, len(data)))
            return obj

    def update(self, key: str, namespace: str, name: str, obj: Obj, expected_rv: str | None = None) -> Obj:
        with self._lock:
            bucket = self._objects.get(key)
            old = bucket.get((namespace, name)) if bucket is not None else None
            if bucket is None or old is None:
                raise StoreNotFound(name)
            if expected_rv and expected_rv != old["metadata"].get("resourceVersion"):
                raise StoreConflict(name)
            if obj is old:
                raise SharedObjectModified(f"{key} {namespace}/{name}: an update must store a new object")
            self._check_unchanged(key, namespace, name, old)
            rv = self._next_rv()
            self._stamp(obj, rv)
            data = orjson.dumps(obj)
            self.persist_put(key, namespace, name, rv, obj, data)
            bucket.replace((namespace, name), obj, data)
            self._remember(key, namespace, name, data)
            self._emit(Event("MODIFIED", key, namespace, name, rv, obj, old, len(data)))
            return obj

    def delete(self, key: str, namespace: str, name: str, expected_rv: str | None = None) -> Obj:
        with self._lock:
            bucket = self._objects.get(key)
            old = bucket.get((namespace, name)) if bucket is not None else None
            if bucket is None or old is None:
                raise StoreNotFound(name)
            if expected_rv and expected_rv != old["metadata"].get("resourceVersion"):
                raise StoreConflict(name)
            self._check_unchanged(key, namespace, name, old)
            rv = self._next_rv()
            self.persist_delete(key, namespace, name, rv)
            bucket.remove((namespace, name))
            self._remember(key, namespace, name, None)
            # The DELETED event carries the last state with the deletion's resourceVersion.
            gone = dict(old)
            gone["metadata"] = dict(old["metadata"], resourceVersion=str(rv))
            # Charged like a write: the DELETED event keeps the last state alive.
            self._emit(Event("DELETED", key, namespace, name, rv, gone, old, len(orjson.dumps(gone))))
            return gone

    def _load(self, key: str, namespace: str, name: str, obj: Obj | None, data: bytes) -> None:
        """Install an object read from durable storage (no event, no new resourceVersion); `obj`
        may be None for a kind kept as JSON (`COMPACT_KEYS`)."""
        bucket = self._objects.get(key)
        if bucket is None:
            bucket = self._objects[key] = self._new_bucket(key)
        if (namespace, name) in bucket:
            bucket.replace((namespace, name), obj, data)
        else:
            bucket.add((namespace, name), obj, data)
        self._remember(key, namespace, name, data)

    # -- watch ---------------------------------------------------------------------------
    def _emit(self, ev: Event) -> None:
        self._history.append(ev)
        if self._overlays:
            self._forget_overlays_older_than(self._history.oldest_rv)
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
                if not self._history.retains(from_rv):
                    raise StoreGone(from_rv, self._history.oldest_rv + 1)
                if from_rv < self._rv:
                    for ev in self._history.since(from_rv):
                        if ev.key == key and w.matches(ev):
                            w._events.append(ev)
                else:
                    w.after_rv = from_rv
            self._watchers.setdefault(key, []).append(w)
            return w

    def _remove_watcher(self, w: Watcher) -> None:
        with self._lock:
            ws = self._watchers.get(w.key)
            if ws and w in ws:
                ws.remove(w)

    def watcher_count(self) -> int:
        return sum(len(v) for v in self._watchers.values())
