"""One resource type's objects: a dict by (namespace, name) whose keys are put in order lazily.

Writes are what the store does most (every binding, status update and Event), ordered reads
(`list`, a page of a paginated list) far less often. So a write costs a dict write, plus a list
append for a new key, and the key order is brought up to date by the next ordered read: the keys
added since the last one are sorted and merged into the ordered keys (two sorted runs, which
Python's sort merges in linear time), and keys removed since then are filtered out.

    bucket.add(key, obj)        # a new key (the caller checked it is absent)
    bucket[key] = obj           # replace the object of a present key
    bucket.remove(key)
    bucket.irange(low, high, inclusive=(True, False))   # keys in order, as SortedDict's
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Iterator

Key = tuple[str, ...]


class Bucket(dict[tuple[str, str], Any]):
    __slots__ = ("_ordered", "_added", "_removed")

    def __init__(self) -> None:
        super().__init__()
        self._ordered: list[tuple[str, str]] = []  # every key as of the last ordered read, in order
        self._added: list[tuple[str, str]] = []    # keys added since then
        self._removed = False                      # whether a key was removed since then

    def add(self, key: tuple[str, str], obj: Any) -> None:
        self[key] = obj
        self._added.append(key)

    def remove(self, key: tuple[str, str]) -> None:
        del self[key]
        self._removed = True

    def ordered_keys(self) -> list[tuple[str, str]]:
        """Every key in order (the bucket's own list: do not change it)."""
        if not self._added and not self._removed:
            return self._ordered
        merged = self._ordered + self._added
        merged.sort()
        if self._removed:  # drop removed keys and the duplicates a remove-then-add leaves
            merged = [k for i, k in enumerate(merged) if k in self and (i == 0 or merged[i - 1] != k)]
        self._ordered, self._added, self._removed = merged, [], False
        return merged

    def ordered_values(self) -> list[Any]:
        return [self[k] for k in self.ordered_keys()]

    def bisect_left(self, key: Key) -> int:
        return bisect_left(self.ordered_keys(), key)

    def bisect_right(self, key: Key) -> int:
        return bisect_right(self.ordered_keys(), key)

    def irange(self, low: Key | None = None, high: Key | None = None,
               inclusive: tuple[bool, bool] = (True, True)) -> Iterator[tuple[str, str]]:
        """The keys between `low` and `high` (None: unbounded) in order, as `SortedDict.irange`."""
        keys = self.ordered_keys()
        start = 0 if low is None else (bisect_left if inclusive[0] else bisect_right)(keys, low)
        end = len(keys) if high is None else (bisect_right if inclusive[1] else bisect_left)(keys, high)
        return iter(keys[start:end])
