"""In-memory store, for tests and simulation: the shared core with no durability."""

from .base import Store


class MemoryStore(Store):
    pass
