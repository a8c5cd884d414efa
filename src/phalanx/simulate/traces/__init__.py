"""Readers of published GPU cluster traces: each turns a trace on disk into a stream of
`JobArrival`s in submission order, for `phalanx simulate` to replay.

    from phalanx.simulate.traces import read, FORMATS, ReadStats

    stats = ReadStats()
    for job in read("alibaba-pai-2020", "/data/pai", limit=5000, time_scale=10, stats=stats):
        ...
    print(stats.jobs, dict(stats.skipped))

Formats (`FORMATS`, one module each, whose docstring documents every mapping choice):

- `alibaba-pai-2020`: the Alibaba PAI GPU trace of 2020, `pai_job_table` + `pai_task_table` CSVs
  (`alibaba_pai_2020.py`).
- `philly`: the Microsoft Philly trace's `cluster_job_log` JSON (`philly.py`).

The options every format takes (`limit`, `start`/`end`, `time_scale`, `min_gpus`,
`include_failed`, `strict`, `stats`) are described in `reading.py`. `read` checks the options and
finds the files at once (ValueError, FileNotFoundError); the records are read as the stream is
consumed, and a bad one raises `TraceError` then (or is skipped with `strict=False`). Nothing is
downloaded: the real traces are read from the path the user gives; small synthetic samples of
each schema are in examples/simulate/traces/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from phalanx.simulate.jobs import JobArrival
from phalanx.simulate.traces import alibaba_pai_2020, philly
from phalanx.simulate.traces.reading import ReadStats, TraceError, TraceOptions, TraceWarning

__all__ = ["FORMATS", "ReadStats", "TraceError", "TraceFormat", "TraceWarning", "read"]


@dataclass(frozen=True)
class TraceFormat:
    """A trace format: its name, what it is, its own options, and its reader."""

    name: str
    description: str
    options: tuple[str, ...]
    reader: Callable[[str, TraceOptions, dict[str, Any]], Iterator[JobArrival]]


FORMATS: dict[str, TraceFormat] = {
    fmt.name: fmt
    for fmt in (
        TraceFormat(alibaba_pai_2020.FORMAT,
                    "Alibaba PAI GPU cluster trace 2020: a directory with pai_job_table.csv and pai_task_table.csv",
                    alibaba_pai_2020.OPTIONS, alibaba_pai_2020.read),
        TraceFormat(philly.FORMAT, "Microsoft Philly trace: the cluster_job_log JSON file (or its directory)",
                    philly.OPTIONS, philly.read),
    )
}


def read(format: str, path: str, **options: Any) -> Iterator[JobArrival]:
    """The jobs of the trace of this format at `path`, in submission order (see the module docstring)."""
    trace_format = FORMATS.get(format)
    if trace_format is None:
        raise ValueError(f'unknown trace format "{format}"; supported: {", ".join(sorted(FORMATS))}')
    common, extra = TraceOptions.parse(format, options, trace_format.options)
    return trace_format.reader(str(path), common, extra)
