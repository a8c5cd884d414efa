"""What every trace reader shares: its options, the error for a bad row, the counts of a read, and
the last steps from a trace's own clock to the stream's (window, re-basing, time scale, filters,
limit).

A reader turns each record of its trace into a `TraceJob` (its submission and run time still in the
trace's own seconds, whether the trace says it failed, and the other fields of its `JobArrival`),
hands them in submission order to `finish`, and reports bad rows through `RowErrors`:

    options = TraceOptions.parse("philly", {"limit": 100, "time_scale": 10})
    errors = RowErrors(options)
    ...
    errors.bad(TraceError(path, "line 17", "submitted_time", "not a time: 'x'"))  # raises when strict
    yield from finish(ordered_trace_jobs, origin, options)
    errors.report(path)  # one TraceWarning with the count when rows were skipped

Options (the same for every format):

- `limit`: at most this many jobs (the earliest ones that pass the filters).
- `start`, `end`: a window of the trace, in seconds (or a Go duration such as "36h") since the
  trace's first submission; jobs submitted in [start, end) are read, and their arrivals are re-based
  so the window's start is second 0 of the stream.
- `time_scale`: compress time by this factor: arrivals and durations are divided by it (10 turns a
  trace day into 2.4 simulated hours with the same load shape).
- `min_gpus`: drop jobs asking for fewer GPUs than this in total (pods x GPUs per pod); 1 drops
  CPU-only jobs.
- `include_failed`: keep jobs the trace records as failed or killed (default False). A kept failed
  job is replayed as one that runs for as long as it ran in the trace.
- `strict`: a bad row stops the read with a `TraceError` naming the file, the row or line and the
  field (default True); with False such rows are skipped, counted in `stats` and reported in one
  `TraceWarning` at the end.
- `stats`: a `ReadStats` to fill in (rows read, jobs yielded, skips and adjustments by reason).
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from phalanx.machinery.durations import parse_duration
from phalanx.simulate.jobs import JobArrival

LABEL_PREFIX = "simulate.phalanx.dev/"
TRACE_STATUS_LABEL = LABEL_PREFIX + "trace-status"

_MAX_REMEMBERED_ERRORS = 5
_NAME_INVALID_RE = re.compile(r"[^a-z0-9-]+")
_LABEL_VALUE_INVALID_RE = re.compile(r"[^A-Za-z0-9._-]+")


class TraceError(ValueError):
    """A record of a trace that cannot be read: names the file, where in it, and the field."""

    def __init__(self, path: str, location: str, field_name: str, message: str) -> None:
        self.path = path
        self.location = location
        self.field = field_name
        self.message = message
        super().__init__(f"{path}: {location}: {field_name}: {message}")

    def __reduce__(self) -> tuple[type[TraceError], tuple[str, str, str, str]]:
        # pickled whole, so a read that fails in a sweep's worker process reaches the caller as it is
        return type(self), (self.path, self.location, self.field, self.message)


class TraceWarning(UserWarning):
    """Rows of a trace were skipped because they could not be read (`strict=False`)."""


@dataclass
class ReadStats:
    """What one read did: records read, jobs yielded, and why the others were not.

    `skipped` counts jobs left out, by reason (filters such as "failed" or "below-min-gpus", and gaps
    the trace documents such as "never-started"); `adjusted` counts jobs whose mapping had to round
    or fall back ("gpus-rounded-up", ...); `bad_rows` counts records skipped as unreadable
    (`strict=False`), the first few of them kept in `errors`.
    """

    rows: int = 0
    jobs: int = 0
    bad_rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)
    errors: list[TraceError] = field(default_factory=list)


@dataclass(frozen=True)
class TraceOptions:
    """The options every trace format takes (see the module docstring)."""

    limit: int | None = None
    start: float = 0.0
    end: float | None = None
    time_scale: float = 1.0
    min_gpus: int = 0
    include_failed: bool = False
    strict: bool = True
    stats: ReadStats = field(default_factory=ReadStats)

    @classmethod
    def parse(cls, format_name: str, options: Mapping[str, Any],
              extra: Iterable[str] = ()) -> tuple[TraceOptions, dict[str, Any]]:
        """The common options and the format's own (`extra`); ValueError naming a bad option."""
        known = {"limit", "start", "end", "time_scale", "min_gpus", "include_failed", "strict", "stats"}
        own = set(extra)
        unknown = sorted(set(options) - known - own)
        if unknown:
            raise ValueError(f'trace format "{format_name}": unknown option(s) {", ".join(unknown)}; '
                             f'supported: {", ".join(sorted(known | own))}')
        parsed = cls(
            limit=_count(options, "limit", None),
            start=_seconds(options, "start", 0.0) or 0.0,
            end=_seconds(options, "end", None),
            time_scale=_positive(options, "time_scale", 1.0),
            min_gpus=_count(options, "min_gpus", 0) or 0,
            include_failed=_flag(options, "include_failed", False),
            strict=_flag(options, "strict", True),
            stats=_stats(options),
        )
        if parsed.end is not None and parsed.end <= parsed.start:
            raise ValueError(f"trace option end: must be after start ({parsed.start}s), got {parsed.end}s")
        return parsed, {name: options[name] for name in own if name in options}


def _count(options: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = options.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"trace option {name}: must be a whole number >= 0, got {value!r}")
    return value


def _seconds(options: Mapping[str, Any], name: str, default: float | None) -> float | None:
    value = options.get(name, default)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = parse_duration(value)
        except ValueError:
            raise ValueError(f'trace option {name}: must be seconds or a duration such as "36h", '
                             f"got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"trace option {name}: must be >= 0 seconds, got {value!r}")
    return float(value)


def _positive(options: Mapping[str, Any], name: str, default: float) -> float:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"trace option {name}: must be a number > 0, got {value!r}")
    return float(value)


def _flag(options: Mapping[str, Any], name: str, default: bool) -> bool:
    value = options.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"trace option {name}: must be true or false, got {value!r}")
    return value


def _stats(options: Mapping[str, Any]) -> ReadStats:
    value = options.get("stats")
    if value is None:
        return ReadStats()
    if not isinstance(value, ReadStats):
        raise ValueError(f"trace option stats: must be a ReadStats, got {type(value).__name__}")
    return value


class RowErrors:
    """Where a reader sends each bad row: raised when strict, else counted and reported once."""

    def __init__(self, options: TraceOptions) -> None:
        self.options = options

    def bad(self, error: TraceError) -> None:
        if self.options.strict:
            raise error
        stats = self.options.stats
        stats.bad_rows += 1
        if len(stats.errors) < _MAX_REMEMBERED_ERRORS:
            stats.errors.append(error)

    def report(self, what: str) -> None:
        """One TraceWarning for the rows skipped as unreadable, naming the first of them."""
        stats = self.options.stats
        if stats.bad_rows:
            warnings.warn(f"{what}: skipped {stats.bad_rows} unreadable row(s); the first: {stats.errors[0]}",
                          TraceWarning, stacklevel=3)


class TraceJob(NamedTuple):
    """A job as a reader maps it, before the common steps: `submitted` and `duration` in the
    trace's own seconds (submitted absolute), `failed` as the trace records it, and the rest of the
    `JobArrival`'s fields (`name`, `pods`, `gpus_per_pod`, ...) in `fields`."""

    submitted: float
    duration: float | None
    failed: bool
    fields: dict[str, Any]


def finish(ordered: Iterable[TraceJob], origin: float, options: TraceOptions) -> Iterator[JobArrival]:
    """Window, filters, re-basing, time scale and limit over jobs in submission order.

    `origin` is the trace's first submission; the window [start, end) is measured from it, and the
    stream's second 0 is the window's start. Readers may apply the window themselves beforehand (it
    is checked again here).
    """
    stats = options.stats
    window_start = origin + options.start
    window_end = None if options.end is None else origin + options.end
    scale = options.time_scale
    for submitted, duration, failed, fields in ordered:
        if options.limit is not None and stats.jobs >= options.limit:
            return
        if submitted < window_start or (window_end is not None and submitted >= window_end):
            continue
        if failed and not options.include_failed:
            stats.skipped["failed"] += 1
            continue
        if fields.get("pods", 1) * fields.get("gpus_per_pod", 0) < options.min_gpus:
            stats.skipped["below-min-gpus"] += 1
            continue
        stats.jobs += 1
        yield JobArrival(arrival=(submitted - window_start) / scale,
                         duration=None if duration is None else duration / scale, **fields)


def job_name(raw: str) -> str:
    """A trace's job id as a DNS-1123 label (lower case, `-` for anything else, at most 63)."""
    name = _NAME_INVALID_RE.sub("-", raw.lower()).strip("-")
    return name[:63].rstrip("-") or "job"


def label_value(raw: str) -> str:
    """A trace's value as a label value (at most 63 of `A-Za-z0-9._-`, alphanumeric at both ends)."""
    return _LABEL_VALUE_INVALID_RE.sub("-", raw)[:63].strip("-._")


def gpus_from_percent(percent: float) -> int:
    """Whole GPUs for a share in percent of one GPU, rounded up: 50 -> 1, 100 -> 1, 250 -> 3."""
    return math.ceil(percent / 100.0 - 1e-9) if percent > 0 else 0
