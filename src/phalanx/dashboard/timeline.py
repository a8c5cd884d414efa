"""The timeline: what happened to pods, gangs and nodes, from the cluster's Events, in bounded memory.

`event_entry(event, node_names)` turns a core/v1 or events.k8s.io/v1 Event into one entry: when,
Normal/Warning, reason, a category (`binding`: `Scheduled`; `preemption`: `Preempted`, ...;
`failure`: `FailedScheduling`, `NodeNotReady`, `Evicted`, `TaintManagerEviction`, `BackOff` and any
other Warning; `scheduling` and `other`), the message, the object it regards and the nodes it
names. `Timeline` keeps the newest `capacity` entries by uid (a repeated Event updates its entry),
and remembers which entries changed since the page was last told.

`EventFollower(client, api_version, sink).run()` watches one Event API — the existing Events first,
one at a time, then the new ones — starting again after a 410 or a broken stream, and hands each
Event to `sink`; nothing but the timeline's entries is kept, so 250,000 Events cost what `capacity`
entries cost. Its `caught_up` says when the Events that existed at the start have all been read. Upstream stores
core and events.k8s.io Events as one resource; phalanx keeps two. The dashboard follows both and
an Event seen through both (same uid) is one entry.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import re
import time
from typing import Any, Callable, Container

from phalanx.client.interface import Client
from phalanx.machinery.errors import StatusError
from phalanx.machinery.timestamps import parse_rfc3339

log = logging.getLogger(__name__)

Obj = dict[str, Any]
CORE_EVENTS = "v1"
EVENTS_API = "events.k8s.io/v1"
DEFAULT_CAPACITY = 2000

BINDING_REASONS = frozenset({"Scheduled"})
PREEMPTION_REASONS = frozenset({"Preempted", "Preempting", "PreemptionByScheduler", "PreemptionByKubeScheduler"})
FAILURE_REASONS = frozenset({"FailedScheduling", "NodeNotReady", "Evicted", "TaintManagerEviction", "BackOff",
                             "Failed", "FailedCreate", "FailedMount", "FailedAttachVolume", "OOMKilling",
                             "NodeNotSchedulable", "Unhealthy", "FailedPreStopHook", "FailedKillPod"})
SCHEDULING_REASONS = frozenset({"WaitingForGang", "Nominated", "NotTriggerScaleUp", "TriggeredScaleUp"})
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ASSIGNED_TO = re.compile(r"^Successfully assigned \S+ to (\S+)$")


def category(reason: str, type_: str) -> str:
    """binding, preemption, failure, scheduling or other."""
    if reason in BINDING_REASONS:
        return "binding"
    if reason in PREEMPTION_REASONS:
        return "preemption"
    if reason in FAILURE_REASONS or type_ == "Warning":
        return "failure"
    if reason in SCHEDULING_REASONS:
        return "scheduling"
    return "other"


def _event_time(ev: Obj) -> str:
    """The last time the Event happened, in whichever field its API and writer filled."""
    series = ev.get("series") or {}
    for value in (series.get("lastObservedTime"), ev.get("lastTimestamp"), ev.get("deprecatedLastTimestamp"),
                  ev.get("eventTime"), ev.get("firstTimestamp"), ev.get("deprecatedFirstTimestamp"),
                  (ev.get("metadata") or {}).get("creationTimestamp")):
        if value:
            return str(value)
    return ""


def _count(ev: Obj) -> int:
    series = ev.get("series") or {}
    return int(series.get("count") or ev.get("count") or ev.get("deprecatedCount") or 1)


def mentioned_nodes(text: str, node_names: Container[str]) -> list[str]:
    """The node names a message mentions, in order, each once."""
    out: list[str] = []
    for word in _WORD.findall(text):
        word = word.rstrip(".")
        if word in node_names and word not in out:
            out.append(word)
    return out


def event_entry(ev: Obj, node_names: Container[str]) -> Obj | None:
    """One timeline entry, or None for an object that is not an Event."""
    md = ev.get("metadata") or {}
    uid = md.get("uid") or f"{md.get('namespace', '')}/{md.get('name', '')}"
    if not md.get("name"):
        return None
    regarding = ev.get("regarding") or ev.get("involvedObject") or {}
    message = str(ev.get("note") or ev.get("message") or "")
    reason, type_ = str(ev.get("reason") or ""), str(ev.get("type") or "Normal")
    nodes = mentioned_nodes(message, node_names)
    if regarding.get("kind") == "Node" and regarding.get("name") and regarding["name"] not in nodes:
        nodes.insert(0, regarding["name"])
    assigned = _ASSIGNED_TO.match(message)
    if assigned and assigned.group(1) not in nodes:
        nodes.append(assigned.group(1))
    source = ev.get("reportingController") or ev.get("reportingComponent") or \
        (ev.get("source") or ev.get("deprecatedSource") or {}).get("component") or ""
    when = _event_time(ev)
    parsed = parse_rfc3339(when) if when else None
    rv = str(md.get("resourceVersion") or "")
    return {
        "uid": uid, "time": when, "at": parsed.timestamp() if parsed else 0.0,
        "seq": int(rv) if rv.isdigit() else 0,  # orders entries within one second (core Events' precision)
        "type": type_, "reason": reason, "category": category(reason, type_),
        "message": message, "count": _count(ev), "source": source,
        "object": {"kind": regarding.get("kind", ""), "namespace": regarding.get("namespace", ""),
                   "name": regarding.get("name", "")},
        "nodes": nodes,
    }


class Timeline:
    """The newest `capacity` entries (by the time they happened) by uid, and what changed since
    `take_changes()`. Entries may arrive in any order (a watch's initial events come by name)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self.capacity = capacity
        self.entries: dict[str, Obj] = {}
        self._by_time: list[tuple[float, int, str]] = []  # a heap; stale items are skipped
        self._seq = 0
        self._changed: set[str] = set()
        self._removed: set[str] = set()
        self._sent: set[str] = set()  # what take_changes() has handed out and not yet taken back

    def __len__(self) -> int:
        return len(self.entries)

    def record(self, entry: Obj) -> None:
        uid = entry["uid"]
        if self.entries.get(uid) == entry:
            return
        self.entries[uid] = entry
        self._seq += 1
        heapq.heappush(self._by_time, (entry["at"], self._seq, uid))
        self._changed.add(uid)
        self._removed.discard(uid)
        while len(self.entries) > self.capacity:
            self._evict_oldest()
        if len(self._by_time) > 4 * self.capacity + 64:
            self._by_time = [(e["at"], i, u) for i, (u, e) in enumerate(self.entries.items())]
            heapq.heapify(self._by_time)

    def _evict_oldest(self) -> None:
        while self._by_time:
            at, _, uid = heapq.heappop(self._by_time)
            entry = self.entries.get(uid)
            if entry is not None and entry["at"] == at:
                del self.entries[uid]
                self._changed.discard(uid)
                if uid in self._sent:  # an entry nobody was told of goes quietly
                    self._removed.add(uid)
                return

    def take_changes(self) -> tuple[dict[str, Obj], set[str]]:
        changed = {uid: self.entries[uid] for uid in self._changed if uid in self.entries}
        removed = self._removed
        self._changed, self._removed = set(), set()
        self._sent.update(changed)
        self._sent -= removed
        return changed, removed

    def ordered(self) -> list[Obj]:
        """The entries handed out by take_changes(), oldest first (what a page that applied every
        patch holds)."""
        return sorted((self.entries[uid] for uid in self._sent if uid in self.entries), key=lambda e: (e["at"], e["seq"]))


EventSink = Callable[[list[Obj]], None]


class EventFollower:
    """Follows one Event API into `sink`: a watch without a resourceVersion, which starts with the
    existing Events one at a time (no list of every Event is ever held), reopened where it ended,
    or from the start after a 410 or an error. `caught_up` is set once the Events that existed at
    the start have been read: an Event newer than the resourceVersion of that moment, a bookmark,
    or `quiet` seconds without any. Until then the order Events arrive in (by name) says nothing
    about which are the newest, so the dashboard holds the timeline back."""

    def __init__(self, client: Client, api_version: str, sink: EventSink, *, quiet: float = 1.0,
                 backoff: float = 1.0, max_backoff: float = 30.0):
        self.client, self.api_version, self.sink = client, api_version, sink
        self.quiet, self.backoff, self.max_backoff = quiet, backoff, max_backoff
        self.caught_up = asyncio.Event()
        self._start_rv: int | None = None
        self._last_event = time.monotonic()

    async def run(self) -> None:
        """Until cancelled."""
        timer = asyncio.create_task(self._notice_quiet())
        try:
            await self._follow()
        finally:
            timer.cancel()

    async def _follow(self) -> None:
        delay, rv = self.backoff, None
        self._start_rv = await self._current_resource_version()
        while True:
            try:
                rv = await self._watch_until_closed(rv)
                delay = self.backoff
                continue
            except StatusError as e:
                if e.code != 410:
                    log.info("dashboard: following %s Events: %s", self.api_version, e)
            except Exception as e:  # noqa: BLE001 - a broken stream: start again after a pause
                log.info("dashboard: following %s Events: %s: %s", self.api_version, type(e).__name__, e)
            rv = None
            await asyncio.sleep(delay)
            delay = min(self.max_backoff, delay * 2)

    async def _current_resource_version(self) -> int | None:
        """The collection's resourceVersion now, from a list that selects nothing."""
        try:
            _, rv = await self.client.list(self.api_version, "Event",
                                           field_selector="metadata.name=phalanx-dashboard-selects-nothing")
        except StatusError:
            return None
        return int(rv) if rv.isdigit() else None

    async def _notice_quiet(self) -> None:
        while not self.caught_up.is_set():
            await asyncio.sleep(self.quiet / 4)
            if time.monotonic() - self._last_event >= self.quiet:
                self.caught_up.set()

    def _seen(self, type_: str, rv: str | None) -> None:
        self._last_event = time.monotonic()
        if type_ == "BOOKMARK" or (self._start_rv is not None and rv and rv.isdigit() and int(rv) > self._start_rv):
            self.caught_up.set()

    async def _watch_until_closed(self, rv: str | None) -> str | None:
        """One watch from `rv` (None: the current Events first) until the server closes it; the
        last resourceVersion seen."""
        watch = self.client.watch(self.api_version, "Event", resource_version=rv, allow_bookmarks=True)
        try:
            async for type_, obj in watch:
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if type_ in ("ADDED", "MODIFIED"):
                    self.sink([obj])
                self._seen(type_, rv)
        finally:
            await watch.aclose()
        return rv
