"""Trace jobs put in any order and read back in submission order, in memory that does not grow with
the trace: a private temporary SQLite database on disk (deleted when closed).

Published traces are not always sorted by submission, and the stream must be, so a reader spools
what it mapped and reads it back ordered:

    with ArrivalSpool() as spool:
        for trace_job in mapped:
            spool.add(trace_job)
        yield from finish(spool.ordered(start, end), spool.origin, options)

`temporary_database()` is the same kind of database for readers that join tables in SQL.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from phalanx.simulate.traces.reading import TraceJob

_BATCH = 10_000


def temporary_database() -> sqlite3.Connection:
    """A private SQLite database in a temporary file (SQLite's empty file name), for one read."""
    db = sqlite3.connect("")
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    return db


class ArrivalSpool:
    """Trace jobs keyed by their trace submission time, read back in that order."""

    def __init__(self) -> None:
        self._db = temporary_database()
        self._db.execute("CREATE TABLE spool (seq INTEGER PRIMARY KEY, submit REAL NOT NULL, record BLOB NOT NULL)")
        self._pending: list[tuple[int, float, bytes]] = []
        self._count = 0
        self.origin: float | None = None  # the earliest submission added

    def add(self, trace_job: TraceJob) -> None:
        submit = trace_job.submitted
        if self.origin is None or submit < self.origin:
            self.origin = submit
        # pickle, of a database this read wrote itself; orjson's bytes would keep their ~8 KiB buffers
        record = pickle.dumps(trace_job, pickle.HIGHEST_PROTOCOL)
        self._pending.append((self._count, submit, record))
        self._count += 1
        if len(self._pending) >= _BATCH:
            self._flush()

    def ordered(self, start: float, end: float | None) -> Iterator[TraceJob]:
        """The jobs submitted in [start, end) (absolute trace seconds), earliest first; ties keep
        the order they were added in."""
        self._flush()
        self._db.execute("CREATE INDEX IF NOT EXISTS spool_submit ON spool (submit, seq)")
        query = "SELECT record FROM spool WHERE submit >= ?"
        arguments: list[Any] = [start]
        if end is not None:
            query += " AND submit < ?"
            arguments.append(end)
        for (record,) in self._db.execute(query + " ORDER BY submit, seq", arguments):
            yield pickle.loads(record)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ArrivalSpool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _flush(self) -> None:
        if self._pending:
            self._db.executemany("INSERT INTO spool (seq, submit, record) VALUES (?, ?, ?)", self._pending)
            self._pending.clear()
