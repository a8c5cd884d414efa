"""SQLite (WAL) persistence for the store: a write is acknowledged only once it is committed.

The table `objects(key, namespace, name, rv, data)` holds the current state; `meta` holds the
last resourceVersion handed out, so a restarted control plane continues the sequence. With
`synchronous=NORMAL` in WAL mode a committed transaction survives the process being killed
(`kill -9`); only a power loss could lose the last transactions.

Group commit on a writer thread: the writes made during one pass of the control plane's event loop
are handed, as one batch, to a thread of its own that commits them in one transaction; batches
commit in the order they were made, and the thread also checkpoints the WAL into the database
file. The event loop never waits for the disk (a commit of a few pods' writes blocked it ~1 ms on
a virtual disk, a checkpoint tens of ms); SQLite releases the GIL while it works. The in-memory
state and in-process watchers see a write at once; whatever leaves the process waits for the
commit: the HTTP server answers a request, and sends watch events, only after `await
store.flushed()`, so no client ever sees a write that a crash could lose. Writes made with no
running loop (tools, tests) return once committed, as before. A commit that fails (disk full) is
rolled back, reported to whoever waits, and retried.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import queue
import sqlite3
import threading
import time
from typing import Any, Callable, Optional

import orjson

from ..machinery.interning import intern_fields
from .base import Obj, Store

log = logging.getLogger("phalanx.store.sqlite")

_PUT = "INSERT OR REPLACE INTO objects (key, namespace, name, rv, data) VALUES (?,?,?,?,?)"
_DELETE = "DELETE FROM objects WHERE key=? AND namespace=? AND name=?"
_META = "INSERT OR REPLACE INTO meta (k, v) VALUES ('rv', ?)"
RETRY_SECONDS = 0.5
CHECKPOINT_PAGES = 4000  # the writer checkpoints the WAL once it has grown by about this many pages

Op = tuple[str, tuple]


class _Batch:
    """Writes to commit together, and whom to tell: a loop (durability waiters) or a blocked caller."""

    def __init__(self, ops: list[Op], rv: int, loop: Optional[asyncio.AbstractEventLoop]):
        self.ops, self.rv, self.loop = ops, rv, loop
        self.done = threading.Event() if loop is None else None
        self.error: Optional[BaseException] = None


_READ_TREES: dict[bytes, Any] = {}  # fieldsV1 as stored -> its shared tree (Events repeat a few shapes)
_READ_TREES_MAX = 4096


def _share_managed_fields(obj: Obj) -> None:
    """Objects read back share their managedFields trees as the server's writes do (see
    `machinery.interning`): 150,000 pods read at start must not each hold their own."""
    md = obj.get("metadata")
    entries = md.get("managedFields") if isinstance(md, dict) else None
    if not isinstance(entries, list):
        return
    for e in entries:
        tree = e.get("fieldsV1") if isinstance(e, dict) else None
        if not isinstance(tree, dict):
            continue
        raw = orjson.dumps(tree)
        shared = _READ_TREES.get(raw)
        if shared is None:
            if len(_READ_TREES) >= _READ_TREES_MAX:
                _READ_TREES.clear()
            shared = _READ_TREES[raw] = intern_fields(tree)
        e["fieldsV1"] = shared


class SQLiteStore(Store):
    def __init__(self, path: str, history: int | None = None, history_bytes: int | None = None):
        super().__init__(history, history_bytes)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA wal_autocheckpoint=0")  # the writer thread checkpoints
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS objects (key TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
            " rv INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, namespace, name))")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
        self._pending: list[Op] = []  # made on the loop, not handed to the writer yet
        self._pending_rv = 0
        self._durable_rv = 0
        self._flush_scheduled = False
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._batches: queue.SimpleQueue[Optional[_Batch]] = queue.SimpleQueue()
        self._writer: Optional[threading.Thread] = None
        self._unchecked_pages = 0
        self.commits = 0  # transactions committed (observability, tests)
        self.commit_seconds = 0.0  # the writer's wall time in commits and checkpoints (observability)
        self._restore()

    def _restore(self) -> None:
        row = self._db.execute("SELECT v FROM meta WHERE k='rv'").fetchone()
        max_rv = row[0] if row else 0
        collecting = gc.isenabled()
        gc.disable()  # only long-lived objects here: the cyclic collector would rescan them again and again
        try:
            for key, ns, name, rv, data in self._db.execute("SELECT key, namespace, name, rv, data FROM objects"):
                obj = orjson.loads(data)
                _share_managed_fields(obj)
                self._load(key, ns, name, obj, data)
                max_rv = max(max_rv, rv)
        finally:
            if collecting:
                gc.enable()
        self._rv = self._durable_rv = max_rv
        # History starts empty after a restart: watches from older versions get 410 and relist.
        self._history.reset(max_rv)

    # -- the write path (the caller's thread) ----------------------------------------------------------
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
            batch = self._hand_over(None)
            assert batch is not None and batch.done is not None
            batch.done.wait()
            if batch.error is not None:
                self._rv -= 1
                raise batch.error
            return
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._hand_over(asyncio.get_running_loop())

    def _hand_over(self, loop: Optional[asyncio.AbstractEventLoop]) -> Optional[_Batch]:
        """Queue what is pending for the writer as one batch."""
        if not self._pending:
            return None
        batch = _Batch(self._pending, self._pending_rv, loop)
        self._pending = []
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_batches, name="sqlite-writer", daemon=True)
            self._writer.start()
        self._batches.put(batch)
        return batch

    # -- the writer thread ---------------------------------------------------------------------------
    def _write_batches(self) -> None:
        """Commit batches in order, each until it succeeds (a blocked caller takes the error instead)."""
        while True:
            batch = self._batches.get()
            if batch is None:
                return
            while not self._commit(batch) and batch.done is None:
                time.sleep(RETRY_SECONDS)
            if batch.done is not None:
                batch.done.set()
            else:
                self._tell(batch.loop, self._committed, batch.rv)
            if self._unchecked_pages >= CHECKPOINT_PAGES and self._batches.empty():
                self._checkpoint()

    def _commit(self, batch: _Batch) -> bool:
        started = time.perf_counter()
        db = self._db
        try:
            db.execute("BEGIN")
            try:
                for statement, params in batch.ops:
                    db.execute(statement, params)
                db.execute(_META, (batch.rv,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except Exception as e:
            log.error("committing %d writes to %s failed: %s", len(batch.ops), self.path, e)
            batch.error = e
            self._tell(batch.loop, self._fail_waiters, e)
            return False
        batch.error = None
        self.commits += 1
        self._unchecked_pages += 1 + len(batch.ops)  # about a page per row (and the meta row)
        self._durable_rv = max(self._durable_rv, batch.rv)
        self.commit_seconds += time.perf_counter() - started
        return True

    def _checkpoint(self) -> None:
        started = time.perf_counter()
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._unchecked_pages = 0
        except sqlite3.Error as e:  # retried after the next commits
            log.warning("checkpointing %s: %s", self.path, e)
        self.commit_seconds += time.perf_counter() - started

    @staticmethod
    def _tell(loop: Optional[asyncio.AbstractEventLoop], fn: Callable[[Any], None], arg: Any) -> None:
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, arg)
            except RuntimeError:  # the loop closed meanwhile
                pass

    # -- waiting for durability (on the loop) ------------------------------------------------------
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
        if self._pending and not self._flush_scheduled:  # made by another loop meanwhile
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append((rv, fut))
        if rv <= self._durable_rv:  # committed between the check and now
            fut.set_result(None)
        await fut

    def close(self) -> None:
        super().close()
        self._hand_over(None)
        if self._writer is not None:
            self._batches.put(None)
            self._writer.join()
            self._writer = None
        self._committed(self._durable_rv)
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
        try:
            self._db.close()
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
