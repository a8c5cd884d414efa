"""One resource type's objects: a dict by (namespace, name) whose keys are put in order lazily.

Writes are what the store does most (every binding, status update and Event), ordered reads
(`list`, a page of a paginated list) far less often. So a write costs a dict write, plus a list
append for a new key, and the key order is brought up to date by the next ordered read: the keys
added since the last one are sorted and merged into the ordered keys (two sorted runs, which
Python's sort merges in linear time), and keys removed since then are filtered out.

    bucket.add(key, obj, data)      # a new key (the caller checked it is absent); data: obj's JSON
    bucket.replace(key, obj, data)  # replace the object of a present key
    bucket.remove(key)
    bucket.irange(low, high, inclusive=(True, False))   # keys in order, as SortedDict's

A `CompactBucket` holds each object as its JSON instead of as a dict, and decodes on every read
(each read gets its own copy). For kinds read far less often than they are written and kept in
their hundreds of thousands, Events above all: 150,000 pods leave 600,000 Events for an hour,
whose dicts take ~2.2 KiB each and their JSON ~1.2 KiB. kube-apiserver does not keep Events in its
watch cache either.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Iterator

import orjson

from ..machinery.interning import json_to_keep, trimmed

Key = tuple[str, ...]


class Bucket(dict[tuple[str, str], Any]):
    __slots__ = ("_ordered", "_added", "_removed")

    def __init__(self) -> None:
        super().__init__()
        self._ordered: list[tuple[str, str]] = []  # every key as of the last ordered read, in order
        self._added: list[tuple[str, str]] = []    # keys added since then
        self._removed = False                      # whether a key was removed since then

    def add(self, key: tuple[str, str], obj: Any, data: bytes | None = None) -> None:
        self[key] = obj
        self._added.append(key)

    def replace(self, key: tuple[str, str], obj: Any, data: bytes | None = None) -> None:
        self[key] = obj

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


class CompactBucket(Bucket):
    """A bucket whose objects are kept as JSON (`bytes`) and decoded on each read."""

    __slots__ = ()

    def add(self, key: tuple[str, str], obj: Any, data: bytes | None = None) -> None:
        dict.__setitem__(self, key, json_to_keep(obj) if data is None else trimmed(data))
        self._added.append(key)

    def replace(self, key: tuple[str, str], obj: Any, data: bytes | None = None) -> None:
        dict.__setitem__(self, key, json_to_keep(obj) if data is None else trimmed(data))

    def __setitem__(self, key: tuple[str, str], obj: Any) -> None:
        dict.__setitem__(self, key, json_to_keep(obj))

    def __getitem__(self, key: tuple[str, str]) -> Any:
        return orjson.loads(dict.__getitem__(self, key))

    def get(self, key: tuple[str, str], default: Any = None) -> Any:
        data = dict.get(self, key)
        return default if data is None else orjson.loads(data)

    def values(self) -> list[Any]:  # type: ignore[override]
        return [orjson.loads(d) for d in dict.values(self)]

    def items(self) -> list[tuple[tuple[str, str], Any]]:  # type: ignore[override]
        return [(k, orjson.loads(d)) for k, d in dict.items(self)]
