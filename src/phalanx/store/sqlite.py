"""SQLite (WAL) persistence for the store: a write is acknowledged only once it is committed.

The table `objects(key, namespace, name, rv, data)` holds the current state; `meta` holds the
last resourceVersion handed out, so a restarted control plane continues the sequence. With
`synchronous=NORMAL` in WAL mode a committed transaction survives the process being killed
(`kill -9`); only a power loss could lose the last transactions.

Group commit: the writes made during one pass of the control plane's event loop are committed
together at the end of the pass, in one transaction of few statements (each object's last write;
puts and deletes as multi-row statements), instead of a transaction each (~100 µs of a blocked
loop per write on a virtual disk). The in-memory state and in-process watchers see a write at
once; whatever leaves the process waits for the commit: the HTTP server answers a request, and
sends watch events, only after `await store.flushed()`, so no client ever sees a write that a
crash could lose. Writes made with no running loop (tools, tests) are committed before the call
returns, as before. A commit that fails (disk full) is rolled back, reported to whoever waits, and
retried at the next pass. (Tried: commits on a writer thread. SQLite releases the GIL, but the
thread waited for it at every statement while the loop was busy, so commits lagged by seconds and
end-to-end times were no better.)
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sqlite3
import time
from typing import Any, Optional

import orjson

from ..machinery.interning import EMPTY_FIELDS, trimmed
from .base import COMPACT_KEYS, Obj, Store

log = logging.getLogger("phalanx.store.sqlite")

_PUT = "INSERT OR REPLACE INTO objects (key, namespace, name, rv, data) VALUES (?,?,?,?,?)"
_DELETE = "DELETE FROM objects WHERE key=? AND namespace=? AND name=?"
_META = "INSERT OR REPLACE INTO meta (k, v) VALUES ('rv', ?)"
_PUT_MANY = "INSERT OR REPLACE INTO objects (key, namespace, name, rv, data) VALUES {}"
_DELETE_MANY = "DELETE FROM objects WHERE (key, namespace, name) IN (VALUES {})"

Op = tuple[str, tuple]
ROWS_PER_STATEMENT = 200  # a batch's rows go to SQLite in multi-row statements of at most this many


def _statements(ops: list[Op]) -> list[tuple[str, list[Any]]]:
    """A batch as few statements: only each object's last write counts (the batch commits as one
    transaction), puts as multi-row INSERT OR REPLACE, deletes as one DELETE ... IN (VALUES ...):
    one statement per few hundred rows instead of one per row."""
    last: dict[tuple, Op] = {}
    for op in ops:
        last[op[1][:3]] = op
    puts = [params for statement, params in last.values() if statement is _PUT]
    deletes = [params for statement, params in last.values() if statement is _DELETE]
    out: list[tuple[str, list[Any]]] = []
    for rows, head, row in ((puts, _PUT_MANY, "(?,?,?,?,?)"), (deletes, _DELETE_MANY, "(?,?,?)")):
        for i in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[i:i + ROWS_PER_STATEMENT]
            out.append((head.format(",".join([row] * len(chunk))), [v for r in chunk for v in r]))
    return out


class _Sharing:
    """What one restore has read so far, to share: subtrees by their JSON, strings by value.

    The server's writes share what objects have alike (managedFields trees, the parts of a pod
    its template repeats: `machinery.interning`); objects read back at start share the same, or a
    restarted cluster of 150,000 pods would need twice the memory it had before the restart."""

    MAX_TREES = 50_000
    MAX_STRINGS = 200_000

    def __init__(self) -> None:
        self.trees: dict[bytes, Any] = {}
        self.strings: dict[str, str] = {}

    def object(self, obj: Obj) -> Obj:
        """`obj` (just decoded) with its subtrees shared; the object and its metadata are its own."""
        for k, v in obj.items():
            if k == "metadata" and type(v) is dict:
                for mk, mv in v.items():
                    v[mk] = self.value(mv)
            else:
                obj[k] = self.value(v)
        return obj

    def value(self, value: Any) -> Any:
        t = type(value)
        if t is str:
            shared_str = self.strings.get(value)
            if shared_str is None:
                if len(self.strings) >= self.MAX_STRINGS:
                    self.strings.clear()
                shared_str = self.strings[value] = value
            return shared_str
        if t is not dict and t is not list:
            return value
        if not value:
            return EMPTY_FIELDS if t is dict else value
        data = orjson.dumps(value)
        shared = self.trees.get(data)
        if shared is None:  # a miss: shared children (only a name or an IP deep inside may differ)
            if t is dict:
                shared = {k: self.value(v) for k, v in value.items()}
            else:
                shared = [self.value(v) for v in value]
            if len(self.trees) >= self.MAX_TREES:  # bounded: what was shared stays shared
                self.trees.clear()
            self.trees[trimmed(data)] = shared
        return shared


class SQLiteStore(Store):
    def __init__(self, path: str, history: int | None = None, history_bytes: int | None = None):
        super().__init__(history, history_bytes)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS objects (key TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
            " rv INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, namespace, name))")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
        self._pending: list[Op] = []  # written, not committed yet
        self._pending_rv = 0
        self._durable_rv = 0
        self._flush_loop: Optional[asyncio.AbstractEventLoop] = None  # the loop a commit is scheduled on
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.commits = 0  # transactions committed (observability, tests)
        self.commit_seconds = 0.0  # wall time spent committing (observability, benchmarks)
        self._restore()

    def _restore(self) -> None:
        row = self._db.execute("SELECT v FROM meta WHERE k='rv'").fetchone()
        max_rv = row[0] if row else 0
        collecting = gc.isenabled()
        gc.disable()  # only long-lived objects here: the cyclic collector would rescan them again and again
        sharing = _Sharing()
        try:
            for key, ns, name, rv, data in self._db.execute("SELECT key, namespace, name, rv, data FROM objects"):
                if key in COMPACT_KEYS:  # kept as JSON: nothing to decode
                    self._load(key, ns, name, None, data)
                else:
                    obj = sharing.object(orjson.loads(data))
                    self._load(key, ns, name, obj, data)
                max_rv = max(max_rv, rv)
        finally:
            if collecting:
                gc.enable()
        self._rv = self._durable_rv = max_rv
        # History starts empty after a restart: watches from older versions get 410 and relist.
        self._history.reset(max_rv)

    # -- the write path --------------------------------------------------------------------------------
    def persist_put(self, key: str, ns: str, name: str, rv: int, obj: Obj, data: bytes) -> None:
        self._persist((_PUT, (key, ns, name, rv, data)), rv)

    def persist_delete(self, key: str, ns: str, name: str, rv: int) -> None:
        self._persist((_DELETE, (key, ns, name)), rv)

    def _persist(self, op: Op, rv: int) -> None:
        try:
            loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self._pending.append(op)
        self._pending_rv = rv
        if loop is None:  # no loop to batch on: commit now (with whatever is still queued)
            try:
                self._commit()
            except BaseException:
                self._pending.pop()
                self._rv -= 1
                raise
            return
        if self._flush_loop is None:
            self._flush_loop = loop
            loop.call_soon(self._flush)

    def _commit(self) -> None:
        """Commit every queued write in one transaction; raises (with the queue kept) on failure."""
        if not self._pending:
            return
        started = time.perf_counter()
        db = self._db
        db.execute("BEGIN")
        try:
            for statement, params in _statements(self._pending):
                db.execute(statement, params)
            db.execute(_META, (self._pending_rv,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.commits += 1
        self.commit_seconds += time.perf_counter() - started
        self._pending = []
        self._durable_rv = self._pending_rv

    def _flush(self) -> None:
        self._flush_loop = None
        try:
            self._commit()
        except Exception as e:  # keep the writes queued for the next pass; tell who waits
            log.error("committing %d writes to %s failed: %s", len(self._pending), self.path, e)
            self._fail_waiters(e)
            return
        self._committed(self._durable_rv)

    # -- waiting for durability ----------------------------------------------------------------------
    def _committed(self, rv: int) -> None:
        keep = []
        for want, fut in self._waiters:
            if want <= rv:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((want, fut))
        self._waiters = keep

    def _fail_waiters(self, error: Exception) -> None:
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_exception(error)

    async def flushed(self) -> None:
        """Return once every write made so far is committed."""
        rv = self._rv
        if rv <= self._durable_rv:
            return
        loop = asyncio.get_running_loop()
        if self._flush_loop is None:  # queued by another loop, or a failed commit to retry
            self._flush_loop = loop
            loop.call_soon(self._flush)
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append((rv, fut))
        await fut

    def close(self) -> None:
        super().close()
        try:
            self._commit()
        except sqlite3.Error as e:
            log.error("committing the last %d writes to %s failed: %s", len(self._pending), self.path, e)
        self._committed(self._durable_rv)
        try:
            self._db.close()
        except sqlite3.Error:
            pass
        except sqlite3.Error:
            pass


def count_stored(path: str, key: str) -> int:
    """How many objects of resource `key` ("core/nodes") the database at `path` holds, read
    without opening a store (for a control plane that is not running: `phalanx get clusters`).
    Read-only; sqlite3.Error when the file is missing or is not such a database."""
    if not os.path.isfile(path):
        raise sqlite3.OperationalError(f"no database at {path}")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)
    try:
        row = db.execute("SELECT COUNT(*) FROM objects WHERE key=?", (key,)).fetchone()
    finally:
        db.close()
    return int(row[0])
