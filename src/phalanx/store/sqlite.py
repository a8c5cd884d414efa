"""SQLite (WAL) persistence for the store: every acknowledged write is committed first.

The table `objects(key, namespace, name, rv, data)` holds the current state; `meta` holds the
last resourceVersion handed out, so a restarted control plane continues the sequence. With
`synchronous=NORMAL` in WAL mode a committed transaction survives the process being killed
(`kill -9`); only a power loss could lose the last transactions.
"""

from __future__ import annotations

import gc
import os
import sqlite3
from typing import Any

import orjson

from ..machinery.interning import intern_fields
from .base import Obj, Store


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
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS objects (key TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
            " rv INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, namespace, name))")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
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
        self._rv = max_rv
        # History starts empty after a restart: watches from older versions get 410 and relist.
        self._history.reset(max_rv)

    def persist_put(self, key: str, ns: str, name: str, rv: int, obj: Obj, data: bytes) -> None:
        db = self._db
        db.execute("BEGIN")
        try:
            db.execute("INSERT OR REPLACE INTO objects (key, namespace, name, rv, data) VALUES (?,?,?,?,?)",
                       (key, ns, name, rv, data))
            db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('rv', ?)", (rv,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._rv -= 1
            raise

    def persist_delete(self, key: str, ns: str, name: str, rv: int) -> None:
        db = self._db
        db.execute("BEGIN")
        try:
            db.execute("DELETE FROM objects WHERE key=? AND namespace=? AND name=?", (key, ns, name))
            db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('rv', ?)", (rv,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._rv -= 1
            raise

    def close(self) -> None:
        super().close()
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
