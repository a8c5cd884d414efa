"""Helpers every API group module shares: JSON coercion (`_dict`, `_list`, `to_json`), feature
gates read from a strategy context, and the time and column helpers of table rows."""

from __future__ import annotations

from typing import Any

import orjson

from ..machinery.timestamps import parse_rfc3339
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

def since(ts: Any, ctx: StrategyContext) -> str:
    """`translateTimestampSince`: `<unknown>` for a zero time, else a human duration."""
    t = parse_rfc3339(ts)
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
