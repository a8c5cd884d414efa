"""The watch history: the most recent events, bounded by count and by bytes.

Watches resume from it (`watch(from_rv=N)` replays the retained events after N) and paginated
lists read the past through it (a page at resourceVersion R undoes the events after R). Both
bounds matter: a count alone lets a few large objects hold hundreds of megabytes (500 updates of
a 1 MB ConfigMap kept 500 full copies). Each event is charged the length of its object's JSON,
which the store computes once per write; the oldest events are dropped until both bounds hold.
What was dropped is gone: a watch or a page that needs it gets `StoreGone` (410 Expired).

Defaults: `DEFAULT_EVENTS` and `DEFAULT_BYTES`, overridden per store by its constructor
(`MemoryStore(history=..., history_bytes=...)`) or for a whole process by the environment
variables `PHALANX_WATCH_HISTORY_EVENTS` and `PHALANX_WATCH_HISTORY_BYTES`.
"""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass
from typing import Any, Iterator, Optional

Obj = dict[str, Any]

DEFAULT_EVENTS = 50_000
DEFAULT_BYTES = 64 * 1024 * 1024
EVENTS_ENV = "PHALANX_WATCH_HISTORY_EVENTS"
BYTES_ENV = "PHALANX_WATCH_HISTORY_BYTES"


@dataclass(slots=True)
class Event:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK | ERROR
    key: str
    namespace: str
    name: str
    rv: int
    object: Obj
    old: Optional[Obj] = None  # the previous state (MODIFIED, DELETED): selector transitions, snapshots
    size: int = 0  # bytes charged to the history: the length of the object's JSON


def _limit_from_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return value


class WatchHistory:
    """Events in resourceVersion order; everything after `oldest_rv` is retained."""

    def __init__(self, max_events: int | None = None, max_bytes: int | None = None):
        self.max_events = max_events or _limit_from_env(EVENTS_ENV, DEFAULT_EVENTS)
        self.max_bytes = max_bytes or _limit_from_env(BYTES_ENV, DEFAULT_BYTES)
        self._events: collections.deque[Event] = collections.deque()
        self.bytes = 0
        self.oldest_rv = 0  # every event with rv > oldest_rv is retained

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def append(self, ev: Event) -> None:
        events = self._events
        events.append(ev)
        self.bytes += ev.size
        if len(events) <= self.max_events and self.bytes <= self.max_bytes:
            return  # the common case: both bounds hold
        # The newest event always stays, even alone over the byte bound: a watcher that has
        # seen everything but it can still resume.
        while len(events) > 1 and (len(events) > self.max_events or self.bytes > self.max_bytes):
            dropped = events.popleft()
            self.bytes -= dropped.size
            self.oldest_rv = dropped.rv

    def reset(self, rv: int) -> None:
        """Forget everything up to `rv` (a restarted store has no history)."""
        self._events.clear()
        self.bytes = 0
        self.oldest_rv = rv

    def retains(self, rv: int) -> bool:
        """Whether every event after `rv` is still here."""
        return rv >= self.oldest_rv

    def since(self, rv: int) -> Iterator[Event]:
        """The retained events after `rv`, oldest first."""
        newer: list[Event] = []
        for ev in reversed(self._events):
            if ev.rv <= rv:
                break
            newer.append(ev)
        return reversed(newer)

    def newest_first_since(self, rv: int) -> Iterator[Event]:
        """The retained events after `rv`, newest first."""
        for ev in reversed(self._events):
            if ev.rv <= rv:
                return
            yield ev
