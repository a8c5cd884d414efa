"""JSON values as server-side apply sees them: hashable stand-ins, schema classification of a node
(scalar, atomic, map, associative list), list-item path elements and path strings.

A path is a tuple of path elements: `("f", name)`, `("k", ((key, value), ...))`, `("v", value)`,
`("i", index)`, values wrapped by `_hv` so that they hash and compare exactly.
"""

from __future__ import annotations

from typing import Any, Optional

import orjson

from ..errors import go_repr
from ..patchmeta import PatchMeta

# One step of a path: ("f", name), ("k", key fields), ("v", value) or ("i", index).
PathElement = tuple[str, Any]
Path = tuple[PathElement, ...]
PathSet = set[Path]
# Paths as a trie: {path element: [is_member, children]}.
PathTrie = dict[PathElement, list[Any]]

_MISSING: Any = object()


class _TypedError(Exception):
    """A structural error in an object (duplicate keys, bad list items)."""


# -- values ------------------------------------------------------------------------------------

def _hv(v: Any) -> tuple[str, Any]:
    """A hashable, type-exact stand-in for a JSON value (True and 1 must stay different)."""
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if v is None:
        return ("z", None)
    return ("j", orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode())


def _unhv(h: tuple[str, Any]) -> Any:
    return orjson.loads(h[1]) if h[0] == "j" else h[1]


def _equal(a: Any, b: Any) -> bool:
    """Deep JSON equality where booleans never equal numbers."""
    if a is b:
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not _equal(v, b[k]):
                return False
        return True
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _go_json(v: Any) -> str:
    """JSON as Go's encoder writes it (HTML-safe escapes, integral floats without a fraction)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        v = int(v)
    s = orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _copy(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj))


# -- schema classification ---------------------------------------------------------------------

_SCALAR, _ATOMIC, _MAP, _LIST = range(4)


class _Type:
    __slots__ = ("kind", "meta", "keys", "deduced")

    def __init__(self, kind: int, meta: PatchMeta, keys: Optional[tuple[Any, ...]] = None, deduced: bool = False):
        self.kind = kind
        self.meta = meta
        self.keys = keys  # list map keys; None for a set
        self.deduced = deduced

    def field(self, name: str) -> PatchMeta:
        return _EMPTY if self.deduced else self.meta.field(name)

    def declared(self, name: str) -> bool:
        return not self.deduced and self.meta.has_field(name)

    def items(self) -> PatchMeta:
        return self.meta.items()


_EMPTY = PatchMeta.empty()


def _classify(meta: PatchMeta, value: Any) -> _Type:
    """How a node merges, from its schema; falls back to the value's shape (upstream "deduced")."""
    s = meta.schema
    if s is not None:
        t = s.get("type")
        if t == "array" or "items" in s:
            return _classify_list(meta, s, value)
        if t == "object" or "properties" in s or "additionalProperties" in s:
            return _classify_map(meta, s, value)
        if t is not None or s.get("x-kubernetes-int-or-string") or "anyOf" in s or "oneOf" in s:
            return _Type(_SCALAR, meta)
    if isinstance(value, dict):
        return _Type(_MAP, _EMPTY, deduced=True)
    if isinstance(value, list):
        return _Type(_ATOMIC, _EMPTY)
    return _Type(_SCALAR, _EMPTY)


def _classify_list(meta: PatchMeta, s: dict[str, Any], value: Any) -> _Type:
    if value is not None and value is not _MISSING and not isinstance(value, list):
        return _Type(_SCALAR, meta)
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "map":
        return _Type(_LIST, meta, tuple(s.get("x-kubernetes-list-map-keys") or ()))
    if list_type == "set":
        return _Type(_LIST, meta, None)
    if list_type is None and "merge" in meta.strategies:
        key = meta.merge_key
        return _Type(_LIST, meta, (key,) if key else None)
    return _Type(_ATOMIC, meta)


def _classify_map(meta: PatchMeta, s: dict[str, Any], value: Any) -> _Type:
    if value is not None and value is not _MISSING and not isinstance(value, dict):
        return _Type(_SCALAR, meta)
    if s.get("x-kubernetes-map-type") == "atomic":
        return _Type(_ATOMIC, meta)
    if "properties" in s or isinstance(s.get("additionalProperties"), dict):
        return _Type(_MAP, meta)
    return _Type(_MAP, meta, deduced=True)


def _key_default(items: PatchMeta, key: str) -> Any:
    s = items.schema
    if not s:
        return _MISSING
    prop = (s.get("properties") or {}).get(key)
    if isinstance(prop, dict) and "default" in prop:
        return prop["default"]
    return _MISSING


def _item_pe(t: _Type, item: Any) -> PathElement:
    if t.keys is None:
        if isinstance(item, dict):
            raise _TypedError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise _TypedError("not supported: associative list with lists as elements")
        if item is None:
            raise _TypedError("associative list without keys has an element that's an explicit null")
        return ("v", _hv(item))
    if item is None:
        raise _TypedError("associative list with keys may not have a null element")
    if not isinstance(item, dict):
        raise _TypedError("associative list with keys may not have non-map elements")
    fields = []
    for key in t.keys:
        if key in item:
            fields.append((key, _hv(item[key])))
        else:
            default = _key_default(t.items(), key)
            if default is _MISSING:
                raise _TypedError(f"associative list with keys has an element that omits key field {go_repr(key)} "
                                  "(and doesn't have default value)")
            fields.append((key, _hv(default)))
    fields.sort()
    return ("k", tuple(fields))


# -- path strings (conflict messages) ------------------------------------------------------------

def _value_string(h: tuple[str, Any]) -> str:
    v = _unhv(h)
    if isinstance(v, str):
        return go_repr(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v) if isinstance(v, (int, float)) else _go_json(v)


def path_string(path: Path) -> str:
    """Upstream fieldpath.Path.String(): `.spec.containers[name="c"].image`."""
    out = []
    for pe in path:
        kind = pe[0]
        if kind == "f":
            out.append("." + pe[1])
        elif kind == "k":
            out.append("[" + ",".join(f"{n}={_value_string(h)}" for n, h in pe[1]) + "]")
        elif kind == "v":
            out.append(f"[={_value_string(pe[1])}]")
        else:
            out.append(f"[{pe[1]}]")
    return "".join(out)


def _typed_error_prefix(path: Path) -> str:
    return path_string(path) + ": " if path else ""


