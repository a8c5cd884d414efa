"""Helpers every API group module shares: JSON coercion (`_dict`, `_list`, `to_json`), feature
gates read from a strategy context, and the time and column helpers of table rows."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import orjson

from .registry import Column, StrategyContext, human_duration

Obj = dict[str, Any]

MAX_INT32 = 2**31 - 1


def _gate(ctx: Any, name: str, default: bool = True) -> bool:
    if ctx is None:
        return default
    try:
        return bool(ctx.enabled(name))
    except Exception:  # unknown gate in a reduced test context
        return default


# --- small generic helpers ------------------------------------------------------------------------

def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def to_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


# --- time helpers (Time and MicroTime) ----------------------------------------------------------

_TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def parse_timestamp(ts: Any) -> datetime | None:
    """An RFC 3339 `metav1.Time` or `MicroTime` as an aware datetime; None when unset or malformed."""
    if not ts or not isinstance(ts, str):
        return None
    m = _TS_RE.match(ts)
    if not m:
        return None
    base, frac, tz = m.groups()
    tz = "+00:00" if tz == "Z" else tz
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    try:
        t = datetime.strptime(base + tz, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None
    return t.replace(microsecond=micro)


def since(ts: Any, ctx: StrategyContext) -> str:
    """`translateTimestampSince`: `<unknown>` for a zero time, else a human duration."""
    t = parse_timestamp(ts)
    if t is None:
        return "<unknown>"
    return human_duration((ctx.now() - t).total_seconds())


def creation_age(obj: Obj, ctx: StrategyContext) -> str:
    return since(_dict(obj.get("metadata")).get("creationTimestamp"), ctx)


def _name(obj: Obj) -> str:
    return _dict(obj.get("metadata")).get("name", "")


def _col(name: str, description: str, type_: str = "string", priority: int = 0) -> Column:
    return Column(name, type_, "", description, priority)


def _keep_status_from(new: Obj, old: Obj) -> None:
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)
