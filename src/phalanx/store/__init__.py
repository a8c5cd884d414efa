"""Versioned object store with watch fan-out.

`Store` keeps every object as a JSON-compatible dict under (resource key, namespace, name), stamps
a cluster-wide monotonically increasing `metadata.resourceVersion` on each write, checks optimistic
concurrency, and fans every change out to watchers. `SQLiteStore` persists each acknowledged
write to SQLite (WAL) before returning; `MemoryStore` keeps everything in memory for tests and
simulation. See `phalanx.store.base` for the contract.
"""

from .base import Store, Watcher, StoreConflict, StoreNotFound, StoreAlreadyExists, StoreGone, StoreTooNew
from .history import Event
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = ["Event", "Store", "Watcher", "StoreConflict", "StoreNotFound", "StoreAlreadyExists",
           "StoreGone", "StoreTooNew", "MemoryStore", "SQLiteStore"]
