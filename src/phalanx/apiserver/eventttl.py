"""Events expire: each Event is deleted `ttl` seconds after its last write, as kube-apiserver's
`--event-ttl` (default one hour) does with a storage lease renewed on every write.

    expiry = EventExpiry(api, ttl=3600)
    task = asyncio.create_task(expiry.run())   # the control plane starts it beside the API
    ...
    expiry.stop()

It follows the Events through a watch of the API's store (the current ones first), keeps one
deadline per Event in a heap, and deletes an Event when its deadline passes unless it was written
again since. An Event's last write is read from the object itself — the newest of its
`managedFields` times, `lastTimestamp`, `eventTime`, `series.lastObservedTime` and
`creationTimestamp` — so after a restart every Event gets the deadline it had before.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from typing import Any, Callable

from ..machinery.errors import StatusError
from ..machinery.timestamps import rfc3339_seconds
from .rest import API

log = logging.getLogger("phalanx.apiserver.eventttl")

DEFAULT_EVENT_TTL = 3600.0
MAX_IDLE_WAIT = 60.0
DELETES_PER_TURN = 500  # then the event loop gets a turn: a backlog never stalls the API

Obj = dict[str, Any]


def last_write(event: Obj) -> float | None:
    """When the Event was last written, as far as the object says (seconds since the epoch)."""
    md = event.get("metadata") or {}
    times = [rfc3339_seconds(e.get("time")) for e in md.get("managedFields") or () if isinstance(e, dict)]
    times += [rfc3339_seconds(event.get("lastTimestamp")), rfc3339_seconds(event.get("eventTime")),
              rfc3339_seconds((event.get("series") or {}).get("lastObservedTime")),
              rfc3339_seconds(md.get("creationTimestamp"))]
    known = [t for t in times if t is not None]
    return max(known) if known else None


class EventExpiry:
    def __init__(self, api: API, *, ttl: float = DEFAULT_EVENT_TTL, now: Callable[[], float] = time.time):
        self.api = api
        self.ttl = ttl
        self.now = now
        self.rt = api.resource("", "v1", "events")
        self._deadlines: dict[tuple[str, str], float] = {}
        self._heap: list[tuple[float, tuple[str, str]]] = []
        self._stopped = asyncio.Event()
        self._stream: Any = None
        self.expired = 0

    def observe(self, type_: str, event: Obj) -> None:
        md = event.get("metadata") or {}
        key = (md.get("namespace", ""), md.get("name", ""))
        if type_ == "DELETED":
            self._deadlines.pop(key, None)
            return
        written = last_write(event)
        deadline = (written if written is not None else self.now()) + self.ttl
        if self._deadlines.get(key) != deadline:
            self._deadlines[key] = deadline
            heapq.heappush(self._heap, (deadline, key))

    def expire_due(self, limit: int = DELETES_PER_TURN) -> int:
        """Delete Events whose deadline passed, at most `limit` of them; the number deleted."""
        now, deleted = self.now(), 0
        while self._heap and self._heap[0][0] <= now and deleted < limit:
            deadline, key = heapq.heappop(self._heap)
            if self._deadlines.get(key) != deadline:
                continue  # written again since: a later deadline is in the heap
            del self._deadlines[key]
            try:
                self.api.delete(self.rt, key[0], key[1])
                deleted += 1
            except StatusError as e:
                if e.code != 404:
                    log.warning("expiring Event %s/%s: %s", key[0], key[1], e.message)
        self.expired += deleted
        return deleted

    def _next_wait(self) -> float:
        if not self._heap:
            return MAX_IDLE_WAIT
        return min(MAX_IDLE_WAIT, max(0.0, self._heap[0][0] - self.now()))

    def _observe_current(self) -> int:
        """Every current Event, read one at a time (Events are kept as JSON: a watch's initial
        replay would decode them all at once and leave the memory they took in holes); the
        resourceVersion they were read at."""
        store, key = self.api.store, self.rt.key
        rv = store.resource_version
        for namespace, name in store.names(key):
            event = store.get(key, namespace, name)
            if event is not None:
                self.observe("ADDED", event)
        return rv

    async def run(self) -> None:
        while not self._stopped.is_set():
            self._deadlines.clear()
            self._heap.clear()
            rv = self._observe_current()
            try:
                stream = self._stream = self.api.watch(self.rt, None, resource_version=str(rv) if rv else None)
            except StatusError as e:  # the history moved past rv (nothing was awaited: it should not)
                log.warning("watching Events from %s: %s", rv, e.message)
                await asyncio.sleep(1)
                continue
            try:
                while not stream.closed and not self._stopped.is_set():
                    for type_, event in stream.ready():
                        if type_ != "BOOKMARK":
                            self.observe(type_, event)
                    if self.expire_due() == DELETES_PER_TURN:
                        await asyncio.sleep(0)
                        continue
                    await stream.wait(self._next_wait())
            finally:
                stream.close()

    def stop(self) -> None:
        self._stopped.set()
        if self._stream is not None:
            self._stream.close()
