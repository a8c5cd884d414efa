"""events.k8s.io/v1 Event: the structured event API (`regarding`, `note`, `reportingController`).

Upstream stores these and core/v1 Events as one resource; here the kind has its own
`ResourceType` (the lead decides on storage sharing), and `to_core_event` / `from_core_event`
convert between the two shapes the way upstream's conversion does, so printing and field
selectors are the core ones. Strict validation (what events.k8s.io/v1 adds on top of the legacy
checks) follows upstream `ValidateEventCreate`.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, invalid, required
from .common import _dict
from ..machinery.timestamps import parse_rfc3339
from .core import EVENT_COLUMNS, EVENT_FIELD_SELECTORS, core_event_row, legacy_event_errors
from .registry import ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]

# events.k8s.io/v1 field -> core/v1 field
_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_FROM_CORE = {v: k for k, v in _TO_CORE.items()}


def to_core_event(ev: Obj) -> Obj:
    out = {_TO_CORE.get(k, k): v for k, v in ev.items()}
    out["apiVersion"] = "v1"
    return out


def from_core_event(ev: Obj) -> Obj:
    out = {_FROM_CORE.get(k, k): v for k, v in ev.items()}
    out["apiVersion"] = "events.k8s.io/v1"
    return out


class EventsV1Strategy(Strategy):
    columns = EVENT_COLUMNS
    tracks_generation = False
    name_validation = "subdomain"
    field_selectors = {k: (lambda fn: lambda ev: fn(to_core_event(ev)))(fn) for k, fn in EVENT_FIELD_SELECTORS.items()}

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        core = to_core_event(obj)
        errs = legacy_event_errors(core, "reportingController")
        series = core.get("series")
        if isinstance(series, dict):
            if int(series.get("count") or 0) < 2:
                errs.append(invalid("series.count", "", "should be at least 2"))
            if not parse_rfc3339(series.get("lastObservedTime")):
                errs.append(required("series.lastObservedTime"))
        if not parse_rfc3339(core.get("eventTime")):
            errs.append(required("eventTime"))
        if core.get("type") not in ("Normal", "Warning"):
            errs.append(invalid("type", "", f"has invalid value: {core.get('type', '')}"))
        if parse_rfc3339(core.get("firstTimestamp")):
            errs.append(invalid("firstTimestamp", "", "needs to be unset"))
        if parse_rfc3339(core.get("lastTimestamp")):
            errs.append(invalid("lastTimestamp", "", "needs to be unset"))
        if core.get("count"):
            errs.append(invalid("count", "", "needs to be unset"))
        src = _dict(core.get("source"))
        if src.get("component") or src.get("host"):
            errs.append(invalid("source", "", "needs to be unset"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return core_event_row(to_core_event(obj), ctx)


EVENTS_V1_STRATEGY = EventsV1Strategy()

register(ResourceType("events.k8s.io", "v1", "Event", "events", True, EVENTS_V1_STRATEGY, short_names=["ev"]))
