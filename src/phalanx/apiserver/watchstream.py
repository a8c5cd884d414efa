"""One watch of the resource API: the store's events for a resource type, filtered by the watch's
label and field selectors (an object that starts or stops matching shows as ADDED or DELETED, as
upstream's watch cache does), converted to the served version, with bookmarks and the
initial-events-end bookmark of `sendInitialEvents`. `rest.API.watch` makes them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..api.registry import ResourceType
from ..store.base import Watcher
from ..store.history import Event

if TYPE_CHECKING:  # pragma: no cover
    from .rest import API

Obj = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class WatchStream:
    """The events of one watch, filtered by selectors (with ADDED/DELETED on selector transitions)."""

    def __init__(self, api: API, rt: ResourceType, watcher: Watcher, pred: Callable[[Obj], bool] | None, *,
                 send_initial_events: bool, allow_bookmarks: bool, initial_rv: int):
        self.api = api
        self.rt = rt
        self.watcher = watcher
        self.pred = pred
        self.allow_bookmarks = allow_bookmarks
        self._initial_end_pending = send_initial_events
        self.initial_rv = initial_rv
        self.last_rv = initial_rv

    def _filter(self, ev: Event) -> tuple[str, Obj] | None:
        f = self._select(ev)
        if f is None or self.rt.storage_version:
            return f
        return f[0], self.api.output(self.rt, f[1])

    def _select(self, ev: Event) -> tuple[str, Obj] | None:
        pred = self.pred
        if pred is None:
            return ev.type, ev.object
        now = pred(ev.object)
        if ev.type == "MODIFIED":
            before = pred(ev.old) if ev.old is not None else False
            if now and not before:
                return "ADDED", ev.object
            if before and not now:
                return "DELETED", ev.object
            return ("MODIFIED", ev.object) if now else None
        return (ev.type, ev.object) if now else None

    def ready(self) -> list[tuple[str, Obj]]:
        """Events available now, in order (the initial-events-end bookmark included)."""
        out: list[tuple[str, Obj]] = []
        for ev in self.watcher.drain():
            self.last_rv = max(self.last_rv, ev.rv)
            f = self._filter(ev)
            if f is not None:
                out.append(f)
        if self._initial_end_pending:
            self._initial_end_pending = False
            out.append(("BOOKMARK", self.bookmark(initial_end=True)))
        return out

    def bookmark(self, initial_end: bool = False) -> Obj:
        md: dict[str, Any] = {"resourceVersion": str(max(self.last_rv, self.initial_rv))}
        if initial_end:
            md["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": md}

    async def wait(self, timeout: float | None) -> bool:
        if self._initial_end_pending:
            return True
        return await self.watcher.wait(timeout)

    @property
    def closed(self) -> bool:
        return self.watcher.closed

    def close(self) -> None:
        self.watcher.close()
