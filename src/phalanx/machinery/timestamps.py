"""RFC 3339 timestamps as the API writes them (`metav1.Time`, `metav1.MicroTime`).

    parse_rfc3339("2026-12-02T16:20:20Z")          # aware datetime, or None when unset/malformed
    rfc3339_seconds("2026-12-02T16:20:20.5Z")      # 1796228420.5 (epoch seconds), or None
    now_rfc3339()                                  # "2026-12-02T16:20:20Z" (Time: whole seconds)
    now_rfc3339_micro(t)                           # "2026-12-02T16:20:20.500000Z" (MicroTime)

Parsing accepts whole or fractional seconds and a `Z` or `±hh:mm` offset, so a `Time` and a
`MicroTime` read alike; fractions beyond microseconds are cut, as Go's parser keeps nanoseconds
that Python's datetime cannot hold.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

_RFC3339_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})\Z")


def parse_rfc3339(ts: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime; None when unset, not a string or malformed."""
    if not ts or not isinstance(ts, str):
        return None
    return _parse(ts)


@lru_cache(maxsize=8192)
def _parse(ts: str) -> datetime | None:
    # Remembered: the same timestamps come back again and again (managedFields entries, conditions).
    m = _RFC3339_RE.match(ts)
    if not m:
        return None
    base, fraction, offset = m.groups()
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    try:
        t = datetime.fromisoformat(base + ("+00:00" if offset == "Z" else offset))
    except ValueError:
        return None
    return t.replace(microsecond=micro)


def rfc3339_seconds(ts: Any) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None when unset or malformed."""
    t = parse_rfc3339(ts)
    return None if t is None else t.timestamp()


def now_rfc3339(now: datetime | None = None) -> str:
    """`now` (default: the wall clock) as a `metav1.Time`: UTC, whole seconds."""
    t = now or datetime.now(timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339_micro(now: datetime | None = None) -> str:
    """`now` (default: the wall clock) as a `metav1.MicroTime`: UTC, microseconds."""
    t = now or datetime.now(timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
