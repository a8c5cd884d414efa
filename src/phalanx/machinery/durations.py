"""Go's `time.Duration` text: parsing (`1m30s`, `500ms`, `1.5h`) and `Duration.String()`.

    parse_duration("1m30s")      # 90.0 seconds; ValueError for anything Go's ParseDuration rejects
    format_duration(90)          # "1m30s"
    format_duration_ns(1500)     # "1.5µs"

Parsing follows `time.ParseDuration`: an optional sign, then one or more decimal numbers each with
a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`); `0` alone needs no unit. Callers that also take a
bare number of seconds (kind's `--wait`, perf workloads) check for a number first.
"""

from __future__ import annotations

import re

_PART_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOSECONDS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
                     "m": 60_000_000_000, "h": 3_600_000_000_000}


def parse_duration(text: str) -> float:
    """A Go duration in seconds; ValueError naming the text when it is not one."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    if body and body[0] in "+-":
        body = body[1:]
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _PART_RE.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_NANOSECONDS[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError(f"invalid duration \"{text}\"")
    return sign * total / 1e9


def format_duration(seconds: float) -> str:
    """Go's `Duration.String()` of a number of seconds (rounded to nanoseconds)."""
    return format_duration_ns(round(seconds * 1_000_000_000))


def format_duration_ns(nanoseconds: int) -> str:
    """Go's `Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if n < size * 1000:
                return sign + _fraction(n, size) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _fraction(n: int, unit: int) -> str:
    whole, frac = divmod(n, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")
