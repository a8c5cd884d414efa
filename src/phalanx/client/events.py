"""core/v1 Events in the shape client-go's event recorder writes them, with its deduplication.

Each client holds one `EventRecorder`; components call `client.create_event(...)`:

    await client.create_event(pod, "FailedScheduling", "0/3 nodes are available: ...",
                              type="Warning", component="default-scheduler")

The first occurrence creates an Event named `<object name>.<hex nanoseconds>` in the object's
namespace ("default" for cluster-scoped objects) with `count: 1` and `firstTimestamp` =
`lastTimestamp`. A repeat (same source, involved object, type, reason and message) updates that
Event instead: `count` + 1, a new `lastTimestamp`, `firstTimestamp` kept — as client-go's
EventCorrelator does (its LRU holds 4096 keys). Recording never raises: a failure is logged and
the event dropped, as upstream.

The rest of client-go's correlation comes first, with its defaults:

- aggregation: events that differ only by message (same source, object, type and reason) are
  counted per 10-minute window; from the 10th distinct message on, they go into one Event whose
  message is `(combined from similar events): <latest message>` and whose count grows;
- the spam filter: each source may write 25 events about one object at once, then one more every
  5 minutes (a token bucket per source and object); the rest are dropped (the count of a dropped
  repeat still grows, so the next write shows every occurrence).

These bound what one busy controller writes about one object (a ReplicaSet's 2,000
`SuccessfulCreate` events become ten), as upstream's clients do. A recorder with `correlate`
False only deduplicates: the scheduler's, whose upstream counterpart records through
events.k8s.io's series recorder, which neither aggregates nor filters.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any

from ..machinery.errors import StatusError
from ..machinery.timestamps import now_rfc3339
from .clock import REAL_CLOCK, Clock, to_datetime

if TYPE_CHECKING:  # pragma: no cover
    from .interface import Client

log = logging.getLogger("phalanx.client.events")

Obj = dict[str, Any]
MAX_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10  # distinct messages within the interval before aggregating
AGGREGATE_INTERVAL_SECONDS = 600.0
AGGREGATE_MESSAGE_PREFIX = "(combined from similar events): "
SPAM_BURST = 25  # events a source may write about one object at once ...
SPAM_QPS = 1.0 / 300.0  # ... then one every 5 minutes


class _LRU(collections.OrderedDict):
    """A dict that forgets its least recently used key beyond `size` keys."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def touch(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class _TokenBucket:
    __slots__ = ("tokens", "last")

    def __init__(self, now: float):
        self.tokens = float(SPAM_BURST)
        self.last = now

    def try_accept(self, now: float) -> bool:
        self.tokens = min(float(SPAM_BURST), self.tokens + max(0.0, now - self.last) * SPAM_QPS)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class _Aggregate:
    __slots__ = ("messages", "last")

    def __init__(self) -> None:
        self.messages: list[str] = []  # distinct, at most AGGREGATE_MAX_EVENTS (a list: a set costs 216 bytes)
        self.last = float("-inf")


class _Recorded:
    """What the recorder keeps of an Event it wrote, to count a repeat (client-go's eventLog): not
    the Event itself, which the API server holds and which may be gone an hour later."""

    __slots__ = ("name", "namespace", "first_timestamp", "count", "involved_rv", "involved_field_path",
                 "annotations")

    def __init__(self, event: Obj) -> None:
        md = event.get("metadata") or {}
        involved = event.get("involvedObject") or {}
        self.name: str = md.get("name", "")
        self.namespace: str = md.get("namespace", "")
        self.first_timestamp = event.get("firstTimestamp")
        self.count = int(event.get("count") or 1)
        self.involved_rv: str = involved.get("resourceVersion", "")
        self.involved_field_path: str = involved.get("fieldPath", "")
        self.annotations: dict | None = md.get("annotations") or None


def object_reference(obj: Obj, field_path: str | None = None) -> dict:
    """An ObjectReference to `obj` (empty fields omitted, as the Go types serialize)."""
    md = obj.get("metadata") or {}
    ref = {"kind": obj.get("kind", ""), "namespace": md.get("namespace", ""), "name": md.get("name", ""),
           "uid": md.get("uid", ""), "apiVersion": obj.get("apiVersion", ""),
           "resourceVersion": md.get("resourceVersion", ""), "fieldPath": field_path or ""}
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    def __init__(self, client: "Client", *, clock: Clock = REAL_CLOCK, component: str = "",
                 host: str = "", cache_size: int = MAX_CACHE_ENTRIES):
        self.client = client
        self.clock = clock
        self.component = component
        self.host = host
        self.cache_size = cache_size
        self._cache: collections.OrderedDict[tuple, _Recorded] = collections.OrderedDict()
        self.correlate = True
        self._aggregates = _LRU(cache_size)
        self._spam = _LRU(cache_size)
        self._last_nanos = 0
        self._lock = asyncio.Lock()

    def _unique_nanos(self) -> int:
        nanos = int(self.clock.now() * 1e9)
        if nanos <= self._last_nanos:
            nanos = self._last_nanos + 1
        self._last_nanos = nanos
        return nanos

    async def _create_new(self, ref: dict, reason: str, message: str, type: str, component: str, host: str,
                          now: str, annotations: dict | None) -> Obj:
        """Create a new Event; another recorder on the same (virtual) clock may have taken the name,
        so a taken name is followed by the next one."""
        for attempt in range(10):
            new = self._new_event(ref, reason, message, type, component, host, now)
            if annotations:
                new["metadata"]["annotations"] = dict(annotations)
            try:
                return await self.client.create(new, handover=True)  # kept read-only by the caller
            except StatusError as e:
                if e.code != 409 or attempt == 9:
                    raise
        raise AssertionError("unreachable")

    async def record(self, regarding: Obj, reason: str, message: str, *, type: str = "Normal",
                     component: str | None = None, host: str | None = None,
                     field_path: str | None = None, annotations: dict | None = None) -> Obj | None:
        """Record an event; `annotations` (e.g. a scheduling diagnosis) are set on the Event object
        and replaced on repeats."""
        component = component if component is not None else self.component
        host = host if host is not None else self.host
        ref = object_reference(regarding, field_path)
        source_object = (component, host, ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", ""),
                         ref.get("uid", ""), ref.get("apiVersion", ""))
        seconds = self.clock.now()
        if self.correlate:
            message, key = self._aggregate(source_object, ref, type, reason, message, seconds)
        else:
            key = (*source_object, ref.get("fieldPath", ""), type, reason, message)
        now = now_rfc3339(to_datetime(seconds))
        async with self._lock:
            previous = self._cache.get(key)
            if self.correlate and not self._spam_allows(source_object, seconds):
                if previous is not None:  # the occurrence still counts, as client-go's observation does
                    previous.count += 1
                return None
            try:
                if previous is not None:
                    event = self._repeat(previous, ref, reason, message, type, component, host, now, annotations)
                    try:
                        saved = await self.client.update(event)
                    except StatusError as e:
                        if e.code != 404:
                            raise
                        saved = await self.client.create(self._for_create(event))
                else:
                    saved = await self._create_new(ref, reason, message, type, component, host, now, annotations)
            except StatusError as e:
                log.warning("unable to record event %s %s for %s/%s: %s", type, reason,
                            ref.get("namespace", ""), ref.get("name", ""), e.message)
                self._cache.pop(key, None)
                return None
            self._cache[key] = _Recorded(saved)
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            return saved

    def _repeat(self, previous: "_Recorded", ref: dict, reason: str, message: str, type: str, component: str,
                host: str, now: str, annotations: dict | None) -> Obj:
        """The Event written for a repeat: the one recorded before, counted once more."""
        event = self._new_event(ref, reason, message, type, component, host, now)
        md = event["metadata"]
        md["name"], md["namespace"] = previous.name, previous.namespace
        involved = dict(ref)
        for f, v in (("resourceVersion", previous.involved_rv), ("fieldPath", previous.involved_field_path)):
            if v:
                involved[f] = v
            else:
                involved.pop(f, None)
        event["involvedObject"] = involved
        event["firstTimestamp"] = previous.first_timestamp
        event["count"] = previous.count + 1
        chosen = annotations if annotations is not None else previous.annotations
        if chosen:
            md["annotations"] = dict(chosen)
        return event

    def _aggregate(self, source_object: tuple, ref: dict, type: str, reason: str, message: str,
                   seconds: float) -> tuple[str, tuple]:
        """client-go's EventAggregator: the message to write and the key the Event is kept under."""
        exact = (*source_object, ref.get("fieldPath", ""), type, reason, message)
        group = (*source_object, type, reason)
        record = self._aggregates.get(group)
        if record is None or seconds - record.last > AGGREGATE_INTERVAL_SECONDS:
            record = _Aggregate()
        if message not in record.messages:
            record.messages.append(message)
        record.last = seconds
        self._aggregates.touch(group, record)
        if len(record.messages) < AGGREGATE_MAX_EVENTS:
            return message, exact
        record.messages.pop()  # never more than the limit
        return AGGREGATE_MESSAGE_PREFIX + message, ("aggregate", *group)

    def _spam_allows(self, source_object: tuple, seconds: float) -> bool:
        bucket = self._spam.get(source_object)
        if bucket is None:
            bucket = _TokenBucket(seconds)
        allowed = bucket.try_accept(seconds)
        self._spam.touch(source_object, bucket)
        return allowed

    @staticmethod
    def _for_create(event: Obj) -> Obj:
        md = event["metadata"]
        for f in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            md.pop(f, None)
        return event

    def _new_event(self, ref: dict, reason: str, message: str, type: str, component: str, host: str,
                   now: str) -> Obj:
        namespace = ref.get("namespace") or "default"
        source = {"component": component}
        if host:
            source["host"] = host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref.get('name', '')}.{self._unique_nanos():x}", "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": type,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host,
        }
