"""The Microsoft Philly trace ("Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
Workloads", ATC'19; github.com/msr-fiddle/philly-traces): its `cluster_job_log`, one JSON array of
jobs, read as a stream of `JobArrival`s.

    for job in read("philly", "/data/philly/cluster_job_log", limit=1000):
        ...

`path` is the `cluster_job_log` file (gzip-compressed if it ends in `.gz`) or a directory holding
it. Each element of the array is a job:

    {"status": "Pass", "vc": "ee9e8c", "jobid": "application_1506638472019_14199",
     "submitted_time": "2017-10-07 01:11:39", "user": "ce2f4c",
     "attempts": [{"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-09 06:53:12",
                   "detail": [{"ip": "m412", "gpus": ["gpu0", "gpu1", ...]}]}]}

How a job maps to a `JobArrival`:

- `arrival`: `submitted_time`, in seconds since the first submission of the trace (or of the
  window, `start`). Times are read as written ("YYYY-MM-DD HH:MM:SS", no zone) and only their
  differences are used.
- `duration`: the last attempt's `end_time - start_time`: the run that finished the job (earlier
  attempts were interrupted and retried; the time they held GPUs is not replayed). A last attempt
  with no `end_time` was still running when the trace was taken: `duration` None, the job runs
  until the scenario ends.
- `pods`: the machines of the last attempt (`detail` entries), one pod per machine, a gang when
  more than one.
- `gpus_per_pod`: the attempt's GPUs (the `gpus` lists' lengths summed) divided by its machines,
  rounded up. When machines held different counts (8 + 4 becomes 2 pods of 6) the job is counted
  in `stats.adjusted["gpus-per-machine-evened"]`.
- `user`: `user`; labels `simulate.phalanx.dev/trace-status` (`status`) and
  `simulate.phalanx.dev/vc` (the virtual cluster).
- `name`: `jobid` as a DNS-1123 label (`application-1506638472019-14199`).
- CPU and memory: the trace has none; `JobArrival`'s defaults apply.
- Failed: `status` "Failed" or "Killed" (kept only with `include_failed`).

Skipped, as the trace's README documents them (counted in `stats.skipped`): jobs with no attempts
("no-attempts"), whose last attempt has no `start_time` ("no-start-time") or no machines
("no-machines"). Unreadable records (a field of the wrong type, a time that is not one, an end
before its start) are bad rows: a `TraceError` naming the file, the job's index and line and the
field, or skipped and counted with `strict=False`. The file is streamed (`jsonstream`), and the
mapped jobs are spooled to a temporary SQLite file to come out in submission order.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from phalanx.simulate.jobs import JobArrival
from phalanx.simulate.traces.jsonstream import iter_array
from phalanx.simulate.traces.reading import (
    LABEL_PREFIX,
    TRACE_STATUS_LABEL,
    ReadStats,
    RowErrors,
    TraceError,
    TraceJob,
    TraceOptions,
    finish,
    job_name,
    label_value,
)
from phalanx.simulate.traces.spool import ArrivalSpool

FORMAT = "philly"
JOB_LOG = "cluster_job_log"
FAILED_STATUSES = frozenset({"Failed", "Killed"})
VC_LABEL = LABEL_PREFIX + "vc"
OPTIONS: tuple[str, ...] = ()


def read(path: str, options: TraceOptions, extra: dict[str, Any]) -> Iterator[JobArrival]:
    """The jobs of a `cluster_job_log` (see the module docstring); the file is found now, read lazily."""
    log = Path(path)
    if log.is_dir():
        log = log / JOB_LOG
    if not log.is_file():
        raise FileNotFoundError(f'trace format "{FORMAT}": no such file: {log}')
    return _read(log, options)


def _read(log: Path, options: TraceOptions) -> Iterator[JobArrival]:
    errors = RowErrors(options)
    stats = options.stats
    with ArrivalSpool() as spool:
        with _open(log) as stream:
            for index, line, record in iter_array(stream, str(log)):
                stats.rows += 1
                try:
                    mapped = _map_job(record, _Where(str(log), log.name, index, line), stats)
                except TraceError as error:
                    errors.bad(error)
                    continue
                if isinstance(mapped, str):
                    stats.skipped[mapped] += 1
                else:
                    spool.add(mapped)
        if spool.origin is not None:
            start = spool.origin + options.start
            end = None if options.end is None else spool.origin + options.end
            yield from finish(spool.ordered(start, end), spool.origin, options)
    errors.report(str(log))


def _open(log: Path) -> TextIO:
    if log.suffix == ".gz":
        return gzip.open(log, "rt", encoding="utf-8")
    return open(log, encoding="utf-8")


class _Where:
    """Where a job is in the file, to name it in errors and in `JobArrival.source`."""

    def __init__(self, path: str, file_name: str, index: int, line: int) -> None:
        self.path, self.file_name, self.index, self.line = path, file_name, index, line

    def error(self, field_name: str, message: str) -> TraceError:
        return TraceError(self.path, f"job {self.index} (line {self.line})", field_name, message)

    def source(self) -> str:
        return f"{FORMAT}:{self.file_name}:{self.line}"


def _map_job(record: Any, where: _Where, stats: ReadStats) -> TraceJob | str:
    """The job as a TraceJob (trace times), or the reason it is skipped; TraceError when unreadable."""
    if not isinstance(record, dict):
        raise where.error("(job)", f"must be a JSON object, got {type(record).__name__}")
    jobid = _required_text(record, "jobid", where)
    status = _required_text(record, "status", where)
    submitted = _time(record.get("submitted_time"), "submitted_time", where)
    if submitted is None:
        raise where.error("submitted_time", "missing")
    attempts = record.get("attempts")
    if not isinstance(attempts, list):
        raise where.error("attempts", f"must be a list, got {_kind(attempts)}")
    if not attempts:
        return "no-attempts"
    field_prefix = f"attempts[{len(attempts) - 1}]"
    last = attempts[-1]
    if not isinstance(last, dict):
        raise where.error(field_prefix, f"must be a JSON object, got {_kind(last)}")
    started = _time(last.get("start_time"), f"{field_prefix}.start_time", where)
    ended = _time(last.get("end_time"), f"{field_prefix}.end_time", where)
    if started is None:
        return "no-start-time"
    if ended is not None and ended < started:
        raise where.error(f"{field_prefix}.end_time", f"{last.get('end_time')} is before start_time "
                          f"{last.get('start_time')}")
    gpus_by_machine = _gpus_by_machine(last.get("detail"), f"{field_prefix}.detail", where)
    if not gpus_by_machine:
        return "no-machines"
    machines = len(gpus_by_machine)
    gpus_per_pod = math.ceil(sum(gpus_by_machine) / machines)
    if any(count != gpus_per_pod for count in gpus_by_machine):
        stats.adjusted["gpus-per-machine-evened"] += 1
    labels = {TRACE_STATUS_LABEL: label_value(status)}
    vc = _optional_text(record, "vc", where)
    if vc:
        labels[VC_LABEL] = label_value(vc)
    fields = {"name": job_name(jobid), "pods": machines, "gpus_per_pod": gpus_per_pod,
              "user": _optional_text(record, "user", where), "source": where.source(),
              "labels": {key: value for key, value in labels.items() if value}}
    return TraceJob(submitted, None if ended is None else ended - started, status in FAILED_STATUSES, fields)


def _gpus_by_machine(detail: Any, field_name: str, where: _Where) -> list[int]:
    if detail is None:
        return []
    if not isinstance(detail, list):
        raise where.error(field_name, f"must be a list, got {_kind(detail)}")
    counts = []
    for position, machine in enumerate(detail):
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpus, list):
            raise where.error(f"{field_name}[{position}].gpus", f"must be a list, got {_kind(gpus)}")
        counts.append(len(gpus))
    return counts


def _required_text(record: dict[str, Any], key: str, where: _Where) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        raise where.error(key, f"must be a non-empty string, got {_kind(value)}")
    return value


def _optional_text(record: dict[str, Any], key: str, where: _Where) -> str | None:
    value = record.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise where.error(key, f"must be a string, got {_kind(value)}")
    return value


def _time(value: Any, field_name: str, where: _Where) -> float | None:
    """Seconds of a trace time ("2017-10-07 01:12:09"); None for the trace's missing values."""
    if value is None or value in ("", "None"):
        return None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return moment.timestamp()
    raise where.error(field_name, f'must be a time such as "2017-10-07 01:12:09", got {value!r}')


def _kind(value: Any) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else type(value).__name__
