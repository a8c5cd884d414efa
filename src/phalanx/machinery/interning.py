"""One shared copy of equal read-only JSON trees (hash-consing), so 150,000 pods do not each hold
their own copy of what they have in common.

    node = shared_fields({"f:image": EMPTY_FIELDS, ".": EMPTY_FIELDS})   # a fieldsV1 node
    part = share_json(spec["tolerations"])                               # any small subtree

Most of a pod's `managedFields` is the same for every pod of a ReplicaSet or a kubelet: only the
few entries keyed by a pod's IP, its owner's UID or a generated volume name differ. The
managedFields encoder builds fieldsV1 trees bottom-up and looks each node up by its keys and the
identities of its (already shared) children (`shared_fields`), so equal subtrees — the `{}` leaves,
all `EMPTY_FIELDS`, above all — are one object. `share_json(value)` looks a small subtree up by its
JSON in one step: the pieces every pod of a template repeats (its token volume, tolerations,
resources), ~1 µs each. (The store shares what it reads back at start the same way, with a table of
its own: `store/sqlite.py`.)

`json_to_keep(value)` is `orjson.dumps` for bytes kept long (a cache key, a stored object): orjson
(3.12 on) returns its output in a buffer of at least 4 KiB, whatever the length, and a million kept
results would hold 4 GiB; the copy is the JSON's own size. `trimmed(data)` does the same for an
`orjson.dumps` result at hand.

Only for trees nobody changes in place afterwards: what the store holds and the managedFields
encoder's memoized results. The tables of shared trees are bounded; when full they start again
(trees already shared stay shared; later ones find new first copies).
"""

from __future__ import annotations

from typing import Any

import orjson

_SHARED: dict[tuple[Any, ...], Any] = {}
_MAX_SHARED = 200_000
EMPTY_FIELDS: dict[str, Any] = {}  # the one `{}` leaf of every shared fieldsV1 tree: never change it


def shared_fields(node: dict[str, Any]) -> dict[str, Any]:
    """The shared node equal to `node`, whose children are shared nodes already (`node` itself
    when it is the first of its kind; the caller must not change it afterwards)."""
    key = tuple([(k, id(v)) for k, v in node.items()])
    shared: dict[str, Any] | None = _SHARED.get(key)
    if shared is None:
        if len(_SHARED) >= _MAX_SHARED:
            _SHARED.clear()
        shared = _SHARED[key] = node
    return shared


def json_to_keep(value: Any, option: int | None = None) -> bytes:
    """`orjson.dumps(value, option=option)` in a buffer of its own length, to keep."""
    return bytes(memoryview(orjson.dumps(value, option=option)))


def trimmed(data: bytes) -> bytes:
    """`data` (an `orjson.dumps` result) in a buffer of its own length, to keep."""
    return bytes(memoryview(data))


_BY_JSON: dict[bytes, Any] = {}
_MAX_BY_JSON = 20_000


def share_json(value: Any) -> Any:
    """The first seen dict or list whose JSON is that of `value` (`value` itself if none was, or
    if it is not JSON: an in-process caller's own types are left as they are)."""
    if type(value) is not dict and type(value) is not list:
        return value
    try:
        data = orjson.dumps(value)
    except TypeError:
        return value
    shared = _BY_JSON.get(data)
    if shared is None:
        if len(_BY_JSON) >= _MAX_BY_JSON:
            _BY_JSON.clear()
        shared = _BY_JSON[trimmed(data)] = value
    return shared
