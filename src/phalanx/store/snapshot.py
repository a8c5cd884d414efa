"""Reading one resource type as it was at a past resourceVersion, in key order, page by page.

A paginated list must be a snapshot: every page comes from the first page's resourceVersion R,
whatever was written since (upstream reads etcd at revision R). The store keeps each bucket's
keys ordered (`Bucket`) and the recent events (`WatchHistory`); the state at R is the current
state with the events after R undone. For every key those events touched, the first of them
says what the key held at R: nothing before an ADDED, the `old` object before a MODIFIED or a
DELETED. A page merges the untouched current keys with that overlay, starting after the
continue key, so it costs O(page + events since R + log n), plus a linear merge of the keys
added or removed since the previous ordered read, never a full sort of the bucket.

When an event after R has left the history, R cannot be rebuilt: `Store.snapshot` raises
`StoreGone` and the API answers 410 Expired as upstream does for a compacted revision.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterable, Iterator

from .bucket import Bucket

Obj = dict[str, Any]
Key = tuple[str, ...]  # (namespace, name), or (namespace,) as a range bound


def namespace_bounds(namespace: str | None) -> tuple[Key | None, Key | None]:
    """Key range of one namespace: [(ns,), (ns + "\\0",)) holds exactly the keys (ns, *)."""
    if namespace is None:
        return None, None
    return (namespace,), (namespace + "\0",)


class Snapshot:
    """One bucket (optionally one namespace) at resourceVersion `rv`."""

    def __init__(self, bucket: Bucket, namespace: str | None, rv: int,
                 overlay: dict[tuple[str, str], Obj | None]):
        self.rv = rv
        self._bucket = bucket
        self._low, self._high = namespace_bounds(namespace)
        self._overlay = overlay  # key -> its object at rv (None: absent at rv), for keys changed since

    def _current_keys(self, after: Key | None) -> Iterator[tuple[str, str]]:
        low, inclusive = self._low, True
        if after is not None and (low is None or after >= low):
            low, inclusive = after, False
        return self._bucket.irange(low, self._high, inclusive=(inclusive, False))

    def _in_range(self, key: tuple[str, str], after: Key | None) -> bool:
        if after is not None and key <= after:
            return False
        if self._low is not None and not (self._low <= key < self._high):  # type: ignore[operator]
            return False
        return True

    def items_after(self, after: Key | None = None) -> Iterator[Obj]:
        """Objects at `rv` with keys greater than `after`, in key order."""
        overlay = self._overlay
        bucket = self._bucket
        if not overlay:
            return (bucket[k] for k in self._current_keys(after))
        untouched = ((k, bucket[k]) for k in self._current_keys(after) if k not in overlay)
        restored = sorted((k, o) for k, o in overlay.items() if o is not None and self._in_range(k, after))
        return (o for _, o in heapq.merge(untouched, restored, key=_first))

    def count_after(self, after: Key | None = None) -> int:
        """How many objects `items_after(after)` yields, without walking them."""
        bucket = self._bucket
        low, inclusive = self._low, True
        if after is not None and (low is None or after >= low):
            low, inclusive = after, False
        start = 0 if low is None else (bucket.bisect_left(low) if inclusive else bucket.bisect_right(low))
        end = len(bucket) if self._high is None else bucket.bisect_left(self._high)
        count = max(0, end - start)
        for k, o in self._overlay.items():
            if self._in_range(k, after):
                count += (o is not None) - (k in bucket)
        return count


def _first(pair: tuple[tuple[str, str], Obj]) -> tuple[str, str]:
    return pair[0]


def overlay_since(events_newest_first: Iterable[Any], key: str,
                  namespace: str | None) -> dict[tuple[str, str], Obj | None]:
    """For each object of `key` changed by these events, what it was before the first of them."""
    overlay: dict[tuple[str, str], Obj | None] = {}
    for ev in events_newest_first:
        if ev.key != key or (namespace is not None and ev.namespace != namespace):
            continue
        overlay[(ev.namespace, ev.name)] = None if ev.type == "ADDED" else ev.old
    return overlay
