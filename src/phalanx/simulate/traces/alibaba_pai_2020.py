"""The Alibaba PAI GPU cluster trace of 2020 ("MLaaS in the Wild", NSDI'22; github.com/alibaba/
clusterdata, cluster-trace-gpu-v2020): its `pai_job_table` and `pai_task_table`, read as a stream
of `JobArrival`s.

    for job in read("alibaba-pai-2020", "/data/pai", limit=1000, time_scale=10):
        ...

`path` is a directory holding `pai_job_table.csv` and `pai_task_table.csv` (as the trace's
tarballs unpack), or the job table's file with the task table beside it (option `task_table`
names it elsewhere). The files are CSV without a header row, columns as the trace's `.header`
files list them (a first row equal to the header is skipped):

    pai_job_table:  job_name, inst_id, user, status, start_time, end_time
    pai_task_table: job_name, task_name, inst_num, status, start_time, end_time,
                    plan_cpu, plan_mem, plan_gpu, gpu_type

Times are seconds (shifted by a constant by the publishers); 0 or empty means none, as the trace's
own analysis code reads them. `plan_cpu` and `plan_gpu` are percent of one CPU core or GPU per
instance (600 = 6 cores, 50 = half a GPU), `plan_mem` GB per instance. `pai_instance_table` (where
each instance ran) is not read: placement is what the simulation decides.

How a job (its job row and its task rows, joined on `job_name`) maps to a `JobArrival`:

- `arrival`: the job's `start_time`, which the trace defines as its submission, in seconds since
  the trace's first submission (or the window's `start`).
- `duration`: from the first task's `start_time` (launch) to the last task's `end_time`: the run,
  not the job's `end_time - start_time`, which includes the queueing the simulation models itself.
  A started task with no `end_time` (a job "Running" when the trace was taken): `duration` None,
  the job runs until the scenario ends.
- `pods`: the sum of the tasks' `inst_num` (a job of 1 PS and 4 workers is a gang of 5).
- `gpus_per_pod`: the largest `plan_gpu` of the job's tasks over 100, rounded UP to whole GPUs
  (50 -> 1, 250 -> 3): a simulated GPU is not shared. Jobs rounded are counted in
  `stats.adjusted["gpus-rounded-up"]`. CPU-only tasks (`plan_gpu` empty or 0) ask for none.
- `cpu_per_pod`, `memory_per_pod`: the largest `plan_cpu` (as cores, `600` -> "6", `50` -> "500m")
  and `plan_mem` (as Mi, GB read as GiB: `29.296875` -> "30000Mi") of its tasks; `JobArrival`'s
  defaults when the tasks give none. A job of several tasks (PS and workers) becomes one gang of
  its largest shape, an upper bound; such jobs are counted in `stats.adjusted["tasks-merged"]`.
- `user`: `user`; labels `simulate.phalanx.dev/trace-status` (`status`) and
  `simulate.phalanx.dev/gpu-type` (`gpu_type`s, joined by "-" when several).
- `name`: `job_name` as a DNS-1123 label.
- Failed: `status` "Failed" (kept only with `include_failed`).

Skipped (counted in `stats.skipped`): jobs with no task rows ("no-tasks") and jobs none of whose
tasks started ("never-started", e.g. "Waiting"). Bad rows (a wrong number of columns, a number
that is not one, an instance count below 1, an end before its start, a duplicate job) raise a
`TraceError` naming the file, line and column, or are skipped and counted with `strict=False`.

Both tables are streamed into a temporary SQLite file, joined there and read back in submission
order, so memory does not grow with the trace (the full job table has about 1.2 million rows).
"""

from __future__ import annotations

import csv
import math
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from phalanx.simulate.jobs import JobArrival
from phalanx.simulate.traces.reading import (
    LABEL_PREFIX,
    TRACE_STATUS_LABEL,
    ReadStats,
    RowErrors,
    TraceError,
    TraceJob,
    TraceOptions,
    finish,
    gpus_from_percent,
    job_name,
    label_value,
)
from phalanx.simulate.traces.spool import temporary_database

FORMAT = "alibaba-pai-2020"
JOB_TABLE = "pai_job_table.csv"
TASK_TABLE = "pai_task_table.csv"
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
FAILED_STATUSES = frozenset({"Failed"})
GPU_TYPE_LABEL = LABEL_PREFIX + "gpu-type"
OPTIONS = ("task_table",)

_SCHEMA = """
CREATE TABLE jobs (line INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, user TEXT, status TEXT,
                   submit REAL NOT NULL);
CREATE TABLE tasks (job TEXT NOT NULL, inst_num INTEGER NOT NULL, gpus INTEGER NOT NULL,
                    fractional INTEGER NOT NULL, cpu REAL, mem REAL, start REAL, finish REAL,
                    gpu_type TEXT);
"""

# One row per job of the window, with its tasks aggregated, in submission order.
_JOINED = """
SELECT j.line, j.name, j.user, j.status, j.submit,
       COUNT(t.job), SUM(t.inst_num), MAX(t.gpus), MAX(t.fractional), MAX(t.cpu), MAX(t.mem),
       MIN(t.start), MAX(t.finish), SUM(t.start IS NOT NULL AND t.finish IS NULL),
       GROUP_CONCAT(DISTINCT t.gpu_type)
FROM jobs AS j LEFT JOIN tasks AS t ON t.job = j.name
WHERE j.submit >= ? AND j.submit < ?
GROUP BY j.line
ORDER BY j.submit, j.line
"""


def read(path: str, options: TraceOptions, extra: dict[str, Any]) -> Iterator[JobArrival]:
    """The jobs of the trace at `path` (see the module docstring); the files are found now, read lazily."""
    given = Path(path)
    job_table = given / JOB_TABLE if given.is_dir() else given
    task_table = Path(extra["task_table"]) if extra.get("task_table") else job_table.parent / TASK_TABLE
    for table in (job_table, task_table):
        if not table.is_file():
            raise FileNotFoundError(f'trace format "{FORMAT}": no such file: {table}')
    return _read(job_table, task_table, options)


def _read(job_table: Path, task_table: Path, options: TraceOptions) -> Iterator[JobArrival]:
    errors = RowErrors(options)
    db = temporary_database()
    try:
        db.executescript(_SCHEMA)
        _load_jobs(db, job_table, errors)
        _load_tasks(db, task_table, errors)
        db.execute("CREATE INDEX tasks_job ON tasks (job)")
        (origin,) = db.execute("SELECT MIN(submit) FROM jobs").fetchone()
        if origin is not None:
            start = origin + options.start
            end = math.inf if options.end is None else origin + options.end
            rows = db.execute(_JOINED, (start, end))
            yield from finish(_mapped(rows, job_table.name, options.stats), origin, options)
    finally:
        db.close()
    errors.report(f"{job_table}, {task_table}")


def _rows(table: Path, columns: Sequence[str], errors: RowErrors) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each row of a header-less CSV table with these columns."""
    with open(table, newline="", encoding="utf-8") as stream:
        reader = csv.reader(stream)
        try:
            for fields in reader:
                if reader.line_num == 1 and tuple(fields) == tuple(columns):
                    continue
                if len(fields) != len(columns):
                    errors.bad(TraceError(str(table), f"line {reader.line_num}", "(row)",
                                          f"expected {len(columns)} columns ({', '.join(columns)}), got {len(fields)}"))
                    continue
                yield reader.line_num, fields
        except csv.Error as error:  # past it the rows cannot be told apart
            raise TraceError(str(table), f"line {reader.line_num}", "(file)", f"not a CSV table: {error}") from None
        except UnicodeDecodeError as error:  # text is decoded ahead of the rows: the byte is past the last row read
            raise TraceError(str(table), f"after line {reader.line_num}", "(file)", f"not UTF-8 text: {error}") from None


def _load_jobs(db: sqlite3.Connection, table: Path, errors: RowErrors) -> None:
    stats = errors.options.stats
    for line, (name, _inst_id, user, status, start_time, _end_time) in _rows(table, JOB_COLUMNS, errors):
        stats.rows += 1
        try:
            if not name:
                raise TraceError(str(table), f"line {line}", "job_name", "must not be empty")
            submit = _number(start_time, table, line, "start_time")
            if submit is None:
                raise TraceError(str(table), f"line {line}", "start_time", "missing (the job's submission time)")
            try:
                db.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?)", (line, name, user or None, status, submit))
            except sqlite3.IntegrityError:
                (first,) = db.execute("SELECT line FROM jobs WHERE name = ?", (name,)).fetchone()
                raise TraceError(str(table), f"line {line}", "job_name",
                                 f"{name} appears twice (first on line {first})") from None
        except TraceError as error:
            errors.bad(error)


def _load_tasks(db: sqlite3.Connection, table: Path, errors: RowErrors) -> None:
    batch: list[tuple[Any, ...]] = []
    for line, fields in _rows(table, TASK_COLUMNS, errors):
        try:
            batch.append(_task_row(fields, table, line))
        except TraceError as error:
            errors.bad(error)
            continue
        if len(batch) >= 10_000:
            db.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
            batch.clear()
    db.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)


def _task_row(fields: list[str], table: Path, line: int) -> tuple[Any, ...]:
    job, _task_name, inst_num_text, _status, start_text, end_text, cpu_text, mem_text, gpu_text, gpu_type = fields
    if not job:
        raise TraceError(str(table), f"line {line}", "job_name", "must not be empty")
    inst_num = _number(inst_num_text, table, line, "inst_num")
    if inst_num is None or inst_num < 1 or inst_num != int(inst_num):
        raise TraceError(str(table), f"line {line}", "inst_num", f"must be a whole number >= 1, got {inst_num_text!r}")
    start = _number(start_text, table, line, "start_time")
    finish_time = _number(end_text, table, line, "end_time")
    if start is None:
        finish_time = None  # a task that never launched has no run to end
    if finish_time is not None and start is not None and finish_time < start:
        raise TraceError(str(table), f"line {line}", "end_time", f"{end_text} is before start_time {start_text}")
    gpu_percent = _number(gpu_text, table, line, "plan_gpu", zero_is_none=False) or 0.0
    gpus = gpus_from_percent(gpu_percent)
    return (job, int(inst_num), gpus, int(gpus * 100 != gpu_percent),
            _number(cpu_text, table, line, "plan_cpu", zero_is_none=False),
            _number(mem_text, table, line, "plan_mem", zero_is_none=False),
            start, finish_time, gpu_type or None)


def _number(text: str, table: Path, line: int, column: str, *, zero_is_none: bool = True) -> float | None:
    """A column's number; None when empty (or 0 for times, the trace's "no time")."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise TraceError(str(table), f"line {line}", column, f"must be a number >= 0, got {text!r}")
    return None if zero_is_none and value == 0 else value


def _mapped(rows: Iterator[tuple[Any, ...]], table_name: str, stats: ReadStats) -> Iterator[TraceJob]:
    """The joined rows as TraceJobs (trace times), skipping jobs that never ran."""
    for (line, name, user, status, submit, task_count, pods, gpus, fractional, cpu, mem,
         first_start, last_finish, still_running, gpu_types) in rows:
        if not task_count:
            stats.skipped["no-tasks"] += 1
            continue
        if first_start is None:
            stats.skipped["never-started"] += 1
            continue
        if fractional:
            stats.adjusted["gpus-rounded-up"] += 1
        if task_count > 1:
            stats.adjusted["tasks-merged"] += 1
        labels = {TRACE_STATUS_LABEL: label_value(status or ""),
                  GPU_TYPE_LABEL: label_value("-".join(sorted((gpu_types or "").split(","))))}
        fields: dict[str, Any] = {"name": job_name(name), "pods": pods, "gpus_per_pod": gpus, "user": user,
                                  "source": f"{FORMAT}:{table_name}:{line}",
                                  "labels": {key: value for key, value in labels.items() if value}}
        if cpu:  # else JobArrival's default
            fields["cpu_per_pod"] = _cpu(cpu)
        if mem:
            fields["memory_per_pod"] = _memory(mem)
        duration = None if still_running or last_finish is None else last_finish - first_start
        yield TraceJob(submit, duration, status in FAILED_STATUSES, fields)


def _cpu(percent: float) -> str:
    """`cpu_per_pod` from plan_cpu (percent of a core): 600 -> "6", 50 -> "500m"."""
    millicores = math.ceil(percent * 10 - 1e-6)
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory(gigabytes: float) -> str:
    """`memory_per_pod` from plan_mem (GB, read as GiB): 29.296875 -> "30000Mi", 2 -> "2Gi"."""
    mebibytes = math.ceil(gigabytes * 1024 - 1e-6)
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"
