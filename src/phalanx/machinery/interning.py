"""One shared copy of equal read-only JSON trees (hash-consing), so 150,000 pods do not each hold
their own copy of what they have in common.

    fields_v1 = intern_tree(fields_v1)   # equal subtrees already seen are replaced by the first one

Most of a pod's `managedFields` is the same for every pod of a ReplicaSet or a kubelet: only the
few entries keyed by a pod's IP, its owner's UID or a generated volume name differ. Interning
builds the tree bottom-up and looks each dict and list up by the identities of its (already
interned) children, so a subtree costs a tuple and a dict lookup, and equal subtrees — the
`{}` leaves above all — become one object.

`share_json(value)` does the same for a small subtree in one step, looked up by its JSON: the
pieces every pod of a template repeats (its token volume, tolerations, resources), ~1 µs each.

`json_to_keep(value)` is `orjson.dumps` for bytes kept long (a cache key, a stored object): orjson
(3.12 on) returns its output in a buffer of at least 4 KiB, whatever the length, and a million kept
results would hold 4 GiB; the copy is the JSON's own size.

Only for trees nobody changes in place afterwards: what the store holds and the managedFields
encoder's memoized results. The table of shared trees is bounded; when full it starts again (trees
already shared stay shared; later ones find new first copies).
"""

from __future__ import annotations

from typing import Any

import orjson

_SHARED: dict[tuple[Any, ...], Any] = {}
_MAX_SHARED = 200_000
EMPTY_FIELDS: dict[str, Any] = {}  # the one `{}` leaf of every interned fieldsV1 tree: never change it


def intern_fields(tree: dict[str, Any]) -> dict[str, Any]:
    """`intern_tree` for a managedFields `fieldsV1` tree (dicts all the way down, `{}` leaves),
    about three times faster: leaves are the one `EMPTY_FIELDS`, and a node is looked up by its
    keys and its children's identities."""
    if len(_SHARED) >= _MAX_SHARED:
        _SHARED.clear()
    return _intern_fields(tree)


def _intern_fields(tree: dict[str, Any]) -> dict[str, Any]:
    if not tree:
        return EMPTY_FIELDS
    return shared_fields({k: _intern_fields(v) if v else EMPTY_FIELDS for k, v in tree.items()})


def shared_fields(node: dict[str, Any]) -> dict[str, Any]:
    """The shared node equal to `node`, whose children are shared nodes already (`node` itself
    when it is the first of its kind; the caller must not change it afterwards)."""
    key = (2, *[(k, id(v)) for k, v in node.items()])
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
    """The first seen dict or list whose JSON is that of `value` (`value` itself if none was)."""
    if type(value) is not dict and type(value) is not list:
        return value
    data = orjson.dumps(value)
    shared = _BY_JSON.get(data)
    if shared is None:
        if len(_BY_JSON) >= _MAX_BY_JSON:
            _BY_JSON.clear()
        shared = _BY_JSON[trimmed(data)] = value
    return shared


def intern_tree(value: Any) -> Any:
    """`value` with every dict and list that equals one seen before replaced by that one."""
    t = type(value)
    if t is dict:
        if len(_SHARED) >= _MAX_SHARED:
            _SHARED.clear()
        return _intern_dict(value)
    if t is list:
        if len(_SHARED) >= _MAX_SHARED:
            _SHARED.clear()
        return _intern_list(value)
    return value


def _intern_dict(d: dict[str, Any]) -> dict[str, Any]:
    children = [(k, _intern_value(v)) for k, v in d.items()]
    key = (0, *[(k, _identity(v)) for k, v in children])
    shared: dict[str, Any] | None = _SHARED.get(key)
    if shared is None:
        shared = _SHARED[key] = dict(children)
    return shared


def _intern_list(items: list[Any]) -> list[Any]:
    children = [_intern_value(v) for v in items]
    key = (1, *[_identity(v) for v in children])
    shared: list[Any] | None = _SHARED.get(key)
    if shared is None:
        shared = _SHARED[key] = children
    return shared


def _identity(v: Any) -> Any:
    """What makes an interned child the same: the object itself for a tree, the value for a scalar."""
    t = type(v)
    if t is dict or t is list:
        return id(v)
    return (t, v.hex()) if t is float else (t, v)  # 0.0 and -0.0 are equal but print apart


def _intern_value(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return _intern_dict(v)
    if t is list:
        return _intern_list(v)
    return v
