"""Server-side apply and `metadata.managedFields`, with structured-merge-diff semantics.

Two entry points, both pure functions over JSON-shaped dicts:

    new = server_side_apply(live, applied, "kubectl", meta, force=False, now="2025-01-01T00:00:00Z")
    new = update_managed_fields(old, new, "kubectl-client-side-apply", meta=meta, now=now)

`server_side_apply` merges an `application/apply-patch+yaml` body into the live object (None
when the object does not exist yet) and returns the object to persist, managedFields included.
It raises `StatusError` 409 `Conflict` when the body changes a field another manager owns (unless
`force`), 400 for bodies the API server refuses, 500 (reason "") for malformed bodies, as
kube-apiserver does.

`update_managed_fields` is what every create, update and non-apply patch calls on the final object:
it records the fields the manager changed (an `Update` entry) and takes them away from the other
managers, so a later apply by someone else conflicts.

How fields merge is read from the OpenAPI schema through `PatchMeta` (`x-kubernetes-list-type`
map/set/atomic with `x-kubernetes-list-map-keys`, `x-kubernetes-map-type: atomic`, and the
`x-kubernetes-patch-strategy: merge` fallback upstream uses for lists without a list type).
Where there is no schema, maps merge key by key and lists are atomic (upstream's "deduced" type).

Field sets are Python sets of paths; a path is a tuple of path elements:
`("f", name)`, `("k", ((key, value), ...))`, `("v", value)`, `("i", index)`, values wrapped by
`_hv` so that they hash and compare exactly. `fields_to_set` / `set_to_fields` convert to and from
the `fieldsV1` wire encoding (`f:`, `k:`, `v:`, `i:`, `.`).

Not covered (the caller's business): converting between API versions (every manager's fields are
read in the object's own version), defaulting the merged object, and the strategy's reset of
`status` on the main resource / `spec` on the status subresource (apply does not track those
fields; the strategy must still restore them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Optional

import orjson
import yaml

from .errors import StatusError, bad_request, go_repr
from .patchmeta import PatchMeta

Path = tuple
PathSet = set

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10  # upstream DefaultMaxUpdateManagers
ANCIENT_CHANGES = "ancient-changes"
BEFORE_FIRST_APPLY = "before-first-apply"
_CURRENT_OPERATION = "current-operation"

# Fields never recorded in managedFields (upstream stripMetaManager).
_STRIPPED = frozenset({
    (("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),),
    (("f", "metadata"), ("f", "name")), (("f", "metadata"), ("f", "namespace")),
    (("f", "metadata"), ("f", "creationTimestamp")), (("f", "metadata"), ("f", "selfLink")),
    (("f", "metadata"), ("f", "uid")), (("f", "metadata"), ("f", "clusterName")),
    (("f", "metadata"), ("f", "generation")), (("f", "metadata"), ("f", "managedFields")),
    (("f", "metadata"), ("f", "resourceVersion")),
})

_MISSING: Any = object()


class _TypedError(Exception):
    """A structural error in an object (duplicate keys, bad list items)."""


# -- values ------------------------------------------------------------------------------------

def _hv(v: Any) -> tuple:
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


def _unhv(h: tuple) -> Any:
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

    def __init__(self, kind: int, meta: PatchMeta, keys: Optional[tuple] = None, deduced: bool = False):
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
        if t == "object" or "properties" in s or "additionalProperties" in s:
            if value is not None and value is not _MISSING and not isinstance(value, dict):
                return _Type(_SCALAR, meta)
            if s.get("x-kubernetes-map-type") == "atomic":
                return _Type(_ATOMIC, meta)
            if "properties" in s or isinstance(s.get("additionalProperties"), dict):
                return _Type(_MAP, meta)
            return _Type(_MAP, meta, deduced=True)
        if t is not None or s.get("x-kubernetes-int-or-string") or "anyOf" in s or "oneOf" in s:
            return _Type(_SCALAR, meta)
    if isinstance(value, dict):
        return _Type(_MAP, _EMPTY, deduced=True)
    if isinstance(value, list):
        return _Type(_ATOMIC, _EMPTY)
    return _Type(_SCALAR, _EMPTY)


def _key_default(items: PatchMeta, key: str) -> Any:
    s = items.schema
    if not s:
        return _MISSING
    prop = (s.get("properties") or {}).get(key)
    if isinstance(prop, dict) and "default" in prop:
        return prop["default"]
    return _MISSING


def _item_pe(t: _Type, item: Any) -> tuple:
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

def _value_string(h: tuple) -> str:
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


# -- typed walks: field set, compare, merge, remove ----------------------------------------------

def to_field_set(obj: Any, meta: PatchMeta) -> PathSet:
    """Every field `obj` sets, as upstream ToFieldSet (leaves, list items, null/empty fields)."""
    out: PathSet = set()
    _to_set(obj, meta, (), out)
    return out


def _to_set(value: Any, meta: PatchMeta, path: Path, out: PathSet) -> None:
    t = _classify(meta, value)
    kind = t.kind
    if kind == _SCALAR or kind == _ATOMIC:
        out.add(path)
        return
    if kind == _LIST:
        if not isinstance(value, list) or not value:
            return
        items = t.items()
        pes = []
        for i, item in enumerate(value):
            try:
                pes.append(_item_pe(t, item))
            except _TypedError as e:
                raise _TypedError(f"{_typed_error_prefix(path)}element {i}: {e}") from None
        seen: set = set()
        dups: set = set()
        for pe in pes:
            if pe in seen:
                if pe not in dups:
                    out.add(path + (pe,))
                    dups.add(pe)
            else:
                seen.add(pe)
        for pe, item in zip(pes, value):
            if pe in dups:
                continue
            p = path + (pe,)
            _to_set(item, items, p, out)
            out.add(p)
        return
    if not isinstance(value, dict) or not value:
        return
    for key, v in value.items():
        p = path + (("f", key),)
        _to_set(v, t.field(key), p, out)
        if v is None or (isinstance(v, dict) and not v) or not t.declared(key):
            out.add(p)


class Comparison:
    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: PathSet = set()
        self.modified: PathSet = set()
        self.removed: PathSet = set()

    def exclude(self, ignored: Iterable[Path]) -> "Comparison":
        ignored = tuple(ignored)
        if ignored:
            self.added = recursive_difference(self.added, ignored)
            self.modified = recursive_difference(self.modified, ignored)
            self.removed = recursive_difference(self.removed, ignored)
        return self

    @property
    def same(self) -> bool:
        return not (self.added or self.modified or self.removed)


def compare(lhs: Any, rhs: Any, meta: PatchMeta) -> Comparison:
    """Fields added, modified and removed from `lhs` to `rhs` (upstream TypedValue.Compare)."""
    c = Comparison()
    _compare(lhs, rhs, meta, (), c)
    return c


def _index(t: _Type, items: list, path: Path, allow_duplicates: bool) -> tuple[list, dict]:
    order: list = []
    observed: dict = {}
    for i, item in enumerate(items):
        try:
            pe = _item_pe(t, item)
        except _TypedError as e:
            raise _TypedError(f"{_typed_error_prefix(path)}element {i}: {e}") from None
        if pe in observed:
            if allow_duplicates:
                continue
            raise _TypedError(f"{_typed_error_prefix(path)}duplicate entries for key {path_string((pe,))}")
        observed[pe] = item
        order.append(pe)
    return order, observed


def _compare(l: Any, r: Any, meta: PatchMeta, path: Path, c: Comparison) -> None:
    if l is r and l is not _MISSING:
        return  # the same object: nothing added, removed or modified below
    t = _classify(meta, r if l is _MISSING else l)
    kind = t.kind
    if kind == _MAP:
        lm = l if isinstance(l, dict) else None
        rm = r if isinstance(r, dict) else None
        if (l is not _MISSING and l is not None and lm is None) or (r is not _MISSING and r is not None and rm is None):
            kind = _SCALAR
        elif not lm and not rm:
            kind = _SCALAR
        else:
            lm = lm or {}
            rm = rm or {}
            for key, lv in lm.items():
                _compare(lv, rm.get(key, _MISSING), t.field(key), path + (("f", key),), c)
            for key, rv in rm.items():
                if key not in lm:
                    _compare(_MISSING, rv, t.field(key), path + (("f", key),), c)
    elif kind == _LIST:
        ll = l if isinstance(l, list) else None
        rl = r if isinstance(r, list) else None
        if (l is not _MISSING and l is not None and ll is None) or (r is not _MISSING and r is not None and rl is None):
            kind = _SCALAR
        elif not ll and not rl:
            kind = _SCALAR
        else:
            _, rhs_items = _index(t, rl or [], path, True)
            lhs_order, lhs_items = _index(t, ll or [], path, True)
            items = t.items()
            for pe in lhs_order:
                _compare(lhs_items[pe], rhs_items.get(pe, _MISSING), items, path + (pe,), c)
            for pe, rv in rhs_items.items():
                if pe not in lhs_items:
                    _compare(_MISSING, rv, items, path + (pe,), c)
    if kind == _SCALAR or kind == _ATOMIC:
        if l is _MISSING:
            c.added.add(path)
        elif r is _MISSING:
            c.removed.add(path)
        elif not _equal(l, r):
            c.modified.add(path)
        return
    if l is _MISSING:
        c.added.add(path)
    elif r is _MISSING:
        c.removed.add(path)


def merge(lhs: Any, rhs: Any, meta: PatchMeta) -> Any:
    """Merge `rhs` (an applied configuration) into `lhs` (upstream TypedValue.Merge)."""
    out = _merge(lhs, rhs, meta, ())
    return {} if out is _MISSING else out


def _merge(l: Any, r: Any, meta: PatchMeta, path: Path) -> Any:
    t = _classify(meta, r if r is not _MISSING else l)
    kind = t.kind
    if kind == _MAP:
        lm = l if isinstance(l, dict) else None
        rm = r if isinstance(r, dict) else None
        if (lm or rm) and not ((l is not _MISSING and l is not None and lm is None)
                               or (r is not _MISSING and r is not None and rm is None)):
            out = {}
            lm = lm or {}
            rm = rm or {}
            same = r is _MISSING  # a live-only subtree comes back as the same object when unchanged
            for key, lv in lm.items():
                v = _merge(lv, rm.get(key, _MISSING), t.field(key), path + (("f", key),))
                if v is not _MISSING:
                    out[key] = v
                if v is not lv:
                    same = False
            for key, rv in rm.items():
                if key not in lm:
                    v = _merge(_MISSING, rv, t.field(key), path + (("f", key),))
                    if v is not _MISSING:
                        out[key] = v
            if same and out:
                return l  # identical content: compare() can skip it by identity
            return out if out else _MISSING
    elif kind == _LIST:
        ll = l if isinstance(l, list) else None
        rl = r if isinstance(r, list) else None
        if (ll or rl) and not ((l is not _MISSING and l is not None and ll is None)
                               or (r is not _MISSING and r is not None and rl is None)):
            out_list = _merge_list(t, ll or [], rl or [], path)
            if out_list and r is _MISSING and ll is not None and len(out_list) == len(ll) and \
                    all(a is b for a, b in zip(out_list, ll)):
                return l  # unchanged live-only list: the same object
            return out_list if out_list else _MISSING
    return r if r is not _MISSING else l


def _merge_list(t: _Type, lhs: list, rhs: list, path: Path) -> list:
    """Upstream's associative-list merge order: live order kept, applied items placed after the
    live items that precede them in the applied order."""
    rhs_order, rhs_items = _index(t, rhs, path, False)
    lhs_pes = []
    for i, item in enumerate(lhs):
        try:
            lhs_pes.append(_item_pe(t, item))
        except _TypedError as e:
            raise _TypedError(f"{_typed_error_prefix(path)}element {i}: {e}") from None
    lhs_first: dict = {}
    for pe, item in zip(lhs_pes, lhs):
        lhs_first.setdefault(pe, item)
    shared = [pe for pe in rhs_order if pe in lhs_first]
    shared_i = 0
    next_shared = shared[0] if shared else None
    if shared:
        shared_i = 1
    items_meta = t.items()
    merged_rhs: set = set()
    out: list = []

    def emit(pe: tuple, lv: Any, rv: Any) -> None:
        v = _merge(lv, rv, items_meta, path + (pe,))
        if v is not _MISSING:
            out.append(v)

    li = ri = 0
    n_l, n_r = len(lhs_pes), len(rhs_order)
    while li < n_l or ri < n_r:
        if li < n_l and ri < n_r:
            pe = lhs_pes[li]
            if pe == rhs_order[ri]:
                merged_rhs.add(pe)
                emit(pe, lhs_first[pe], rhs_items[pe])
                li += 1
                ri += 1
                next_shared = shared[shared_i] if shared_i < len(shared) else None
                shared_i += 1
                continue
            if pe in rhs_items and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < n_l:
            pe = lhs_pes[li]
            if pe not in rhs_items:
                emit(pe, lhs[li], _MISSING)
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
                continue
        if ri < n_r:
            pe = rhs_order[ri]
            merged_rhs.add(pe)
            emit(pe, lhs_first.get(pe, _MISSING), rhs_items[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared[shared_i] if shared_i < len(shared) else None
                shared_i += 1
    return out


def _tree(paths: Iterable[Path]) -> dict:
    """Paths as a trie: {pe: [is_member, children]}."""
    root: dict = {}
    for path in paths:
        node = root
        for i, pe in enumerate(path):
            entry = node.get(pe)
            if entry is None:
                entry = node[pe] = [False, {}]
            if i == len(path) - 1:
                entry[0] = True
            node = entry[1]
    return root


def remove_items(obj: Any, meta: PatchMeta, paths: Iterable[Path]) -> Any:
    """`obj` without the fields, list items and map entries in `paths` (upstream RemoveItems).

    A container left empty becomes null, as upstream leaves it."""
    tree = _tree(paths)
    if not tree:
        return obj
    return _remove(obj, meta, tree)


def _remove(value: Any, meta: PatchMeta, tree: dict) -> Any:
    t = _classify(meta, value)
    kind = t.kind
    if kind == _SCALAR:
        return value
    if isinstance(value, list):
        if not value or kind == _ATOMIC or kind != _LIST:
            return None
        items = t.items()
        out = []
        for item in value:
            pe = _item_pe(t, item)
            node = tree.get(pe)
            if node is not None:
                if node[0]:
                    continue
                if node[1]:
                    item = _remove(item, items, node[1])
            out.append(item)
        return out or None
    if isinstance(value, dict):
        if not value or kind == _ATOMIC:
            return None
        out_map = {}
        for key, v in value.items():
            node = tree.get(("f", key))
            if node is not None:
                if node[0]:
                    continue
                if node[1]:
                    v = _remove(v, t.field(key), node[1])
            out_map[key] = v
        return out_map or None
    return value


def recursive_difference(paths: Iterable[Path], prefixes: Iterable[Path]) -> PathSet:
    """`paths` less every path equal to or under one of `prefixes`."""
    prefixes = tuple(prefixes)
    if not prefixes:
        return set(paths)
    return {p for p in paths if not any(p[:len(x)] == x for x in prefixes)}


def ensure_named_fields_are_members(paths: Iterable[Path], meta: PatchMeta) -> PathSet:
    """Add, as members, the struct fields (declared properties) that have children in the set."""
    out = set(paths)
    metas: dict = {(): meta}
    for path in list(out):
        for i in range(1, len(path)):
            prefix = path[:i]
            if prefix in out:
                continue
            parent = metas.get(path[:i - 1])
            if parent is None:
                parent = _navigate(meta, path[:i - 1], metas)
            pe = path[i - 1]
            if pe[0] == "f" and parent.schema is not None and parent.has_field(pe[1]):
                out.add(prefix)
    return out


def _navigate(meta: PatchMeta, path: Path, cache: dict) -> PatchMeta:
    cur = meta
    for i, pe in enumerate(path):
        key = path[:i + 1]
        nxt = cache.get(key)
        if nxt is None:
            nxt = cur.field(pe[1]) if pe[0] == "f" else cur.items()
            cache[key] = nxt
        cur = nxt
    return cur


# -- fieldsV1 encoding ---------------------------------------------------------------------------

def _value_order(h: tuple) -> tuple:
    tag, v = h
    if tag == "n":
        return (0, v)
    if tag == "s":
        return (1, v)
    if tag == "b":
        return (2, v)
    if tag == "j":
        return (3 if v.startswith("[") else 4, v)
    return (5, 0)


def _pe_order(pe: tuple) -> tuple:
    kind = pe[0]
    if kind == "f":
        return (0, pe[1])
    if kind == "k":
        return (1, tuple((n, _value_order(h)) for n, h in pe[1]))
    if kind == "v":
        return (2, _value_order(pe[1]))
    return (3, pe[1])


def _pe_string(pe: tuple) -> str:
    kind = pe[0]
    if kind == "f":
        return "f:" + pe[1]
    if kind == "k":
        return "k:{" + ",".join(f"{_go_json(n)}:{_go_json(_unhv(h))}" for n, h in pe[1]) + "}"
    if kind == "v":
        return "v:" + _go_json(_unhv(pe[1]))
    return f"i:{pe[1]}"


def set_to_fields(paths: Iterable[Path]) -> dict:
    """The `fieldsV1` object for a field set, keys in upstream's order ("." after the children)."""
    return _emit(_tree(paths))


def _emit(tree: dict) -> dict:
    out: dict = {}
    for pe in sorted(tree, key=_pe_order):
        member, children = tree[pe]
        if children:
            sub = _emit(children)
            if member:
                sub["."] = {}
            out[_pe_string(pe)] = sub
        else:
            out[_pe_string(pe)] = {}
    return out


def _parse_pe(key: str) -> Optional[tuple]:
    if len(key) < 2:
        raise ValueError("key must be 2 characters long:")
    if key[1] != ":":
        raise ValueError(f"missing colon: {key}")
    kind, body = key[0], key[2:]
    if kind == "f":
        return ("f", body)
    if kind == "k":
        obj = orjson.loads(body)
        if not isinstance(obj, dict):
            raise ValueError(f"key must be an object: {key}")
        return ("k", tuple(sorted((n, _hv(v)) for n, v in obj.items())))
    if kind == "v":
        return ("v", _hv(orjson.loads(body)))
    if kind == "i":
        return ("i", int(body))
    return None  # unknown element kinds are skipped, as upstream does


def fields_to_set(fields: Optional[dict]) -> PathSet:
    """Decode a `fieldsV1` object into a field set."""
    out: PathSet = set()
    _read(fields or {}, (), out)
    return out


def _read(node: dict, prefix: Path, out: PathSet) -> None:
    if not isinstance(node, dict):
        raise ValueError("fieldsV1 must be an object")
    for key, sub in node.items():
        if key == ".":
            continue
        pe = _parse_pe(key)
        if pe is None:
            continue
        path = prefix + (pe,)
        sub = sub or {}
        children = [k for k in sub if k != "."]
        if not children or "." in sub:
            out.add(path)
        if children:
            _read(sub, path, out)


# -- managers ------------------------------------------------------------------------------------

class _Entry:
    """One manager's fields (upstream VersionedSet) plus its timestamp."""

    __slots__ = ("fields", "api_version", "applied")

    def __init__(self, fields: PathSet, api_version: str, applied: bool):
        self.fields = fields
        self.api_version = api_version
        self.applied = applied


def _manager_key(manager: str, operation: str, api_version: str, subresource: str) -> tuple:
    # Apply entries are keyed without the apiVersion (upstream BuildManagerIdentifier).
    return (manager, operation, "" if operation == "Apply" else api_version, subresource)


def _identifier(key: tuple) -> str:
    manager, operation, api_version, subresource = key
    parts = [f'"manager":{_go_json(manager)}', f'"operation":{_go_json(operation)}']
    if api_version:
        parts.append(f'"apiVersion":{_go_json(api_version)}')
    if subresource:
        parts.append(f'"subresource":{_go_json(subresource)}')
    return "{" + ",".join(parts) + "}"


def _print_manager(key: tuple) -> str:
    manager, operation, api_version, subresource = key
    s = go_repr(manager)
    if subresource:
        s += f" with subresource {go_repr(subresource)}"
    if operation == "Update":
        s += f" using {api_version}"
    return s


# fieldsV1 objects are shared between objects of one shape (see _create_from_shape) and stay the
# same from write to write for managers a request does not touch: decoding and encoding them is
# memoized (by the fieldsV1 object's identity, kept alive by the memo, and by the field set).
_DECODED: dict[int, tuple[Any, frozenset]] = {}
_ENCODED: dict[frozenset, dict] = {}
_FIELDS_MEMO_MAX = 8192


def _decoded_fields(fields_v1: Any) -> frozenset:
    hit = _DECODED.get(id(fields_v1))
    if hit is not None and hit[0] is fields_v1:
        return hit[1]
    fields = frozenset(fields_to_set(fields_v1))
    if isinstance(fields_v1, dict):
        if len(_DECODED) >= _FIELDS_MEMO_MAX:
            _DECODED.clear()
        _DECODED[id(fields_v1)] = (fields_v1, fields)
    return fields


def _encoded_fields(fields: Iterable[Path]) -> dict:
    key = fields if isinstance(fields, frozenset) else frozenset(fields)
    out = _ENCODED.get(key)
    if out is None:
        out = set_to_fields(key)
        if len(_ENCODED) >= _FIELDS_MEMO_MAX or len(_DECODED) >= _FIELDS_MEMO_MAX:
            _ENCODED.clear()
            _DECODED.clear()
        _ENCODED[key] = out
        _DECODED[id(out)] = (out, key)
    return out


def decode_managed_fields(entries: Any) -> tuple[dict, dict]:
    """managedFields → ({key: _Entry}, {key: time}); raises ValueError as upstream's decoder."""
    managers: dict = {}
    times: dict = {}
    if not entries:
        return managers, times
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} must be an object")
        op = e.get("operation")
        if op not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = e.get("apiVersion") or ""
        if not api_version:
            raise ValueError("apiVersion must not be empty")
        ft = e.get("fieldsType") or ""
        if ft == "":
            raise ValueError(f"missing fieldsType in managed fields entry {i}")
        if ft != "FieldsV1":
            raise ValueError(f"invalid fieldsType {go_repr(ft)} in managed fields entry {i}")
        key = _manager_key(e.get("manager") or "", op, api_version, e.get("subresource") or "")
        managers[key] = _Entry(_decoded_fields(e.get("fieldsV1")), api_version, op == "Apply")
        times[key] = e.get("time")
    return managers, times


def _time_seconds(t: Optional[str]) -> float:
    if not t:
        return 0
    try:
        return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0


def encode_managed_fields(managers: dict, times: dict) -> list:
    entries = []
    for key, entry in managers.items():
        manager, operation, _, subresource = key
        e: dict = {"manager": manager, "operation": "Apply" if entry.applied else operation,
                   "apiVersion": entry.api_version}
        t = times.get(key)
        if t:
            e["time"] = t
        e["fieldsType"] = "FieldsV1"
        e["fieldsV1"] = _encoded_fields(entry.fields)
        if subresource:
            e["subresource"] = subresource
        entries.append(e)
    entries.sort(key=lambda e: (e["operation"], _time_seconds(e.get("time")), e["manager"], e["apiVersion"],
                                e.get("subresource", "")))
    return entries


class _Conflicts(Exception):
    def __init__(self, conflicts: dict):
        super().__init__("conflicts")
        self.conflicts = conflicts  # {manager key: set of paths}


def _iteration_order(paths: Iterable[Path]) -> list[Path]:
    """Upstream Set.Iterate order: at each level the members first, then the children."""
    out: list[Path] = []

    def walk(tree: dict, prefix: Path) -> None:
        ordered = sorted(tree, key=_pe_order)
        for pe in ordered:
            if tree[pe][0]:
                out.append(prefix + (pe,))
        for pe in ordered:
            if tree[pe][1]:
                walk(tree[pe][1], prefix + (pe,))

    walk(_tree(paths), ())
    return out


def conflict_error(conflicts: dict) -> StatusError:
    """409 Conflict with upstream's message and FieldManagerConflict causes."""
    keys = sorted(conflicts, key=_identifier)
    flat = [(k, p) for k in keys for p in _iteration_order(conflicts[k])]
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(k)}",
               "field": path_string(p)} for k, p in flat]
    if len(flat) == 1:
        k, p = flat[0]
        message = f"Apply failed with 1 conflict: conflict with {_print_manager(k)}: {path_string(p)}"
    else:
        lines = []
        for k in keys:
            lines.append(f"conflicts with {_print_manager(k)}:")
            lines.extend(f"- {path_string(p)}" for p in _iteration_order(conflicts[k]))
        message = f"Apply failed with {len(flat)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


# -- the updater (structured-merge-diff merge.Updater) --------------------------------------------

class _Updater:
    def __init__(self, meta: PatchMeta, ignored: tuple):
        self.meta = meta
        self.ignored = ignored

    def _update(self, old: Any, new: Any, managers: dict, workflow: tuple, force: bool) -> tuple[dict, Comparison]:
        c = compare(old, new, self.meta).exclude(self.ignored)
        conflicts: dict = {}
        changed = c.modified | c.added
        for key, entry in managers.items():
            if key == workflow:
                continue
            clash = entry.fields & changed
            if clash:
                conflicts[key] = clash
        if conflicts and not force:
            raise _Conflicts(conflicts)
        out: dict = {}
        for key, entry in managers.items():
            fields = entry.fields
            if key != workflow:
                if key in conflicts:
                    fields = fields - conflicts[key]
                if c.removed:
                    fields = fields - c.removed
            if fields:
                out[key] = _Entry(fields, entry.api_version, entry.applied)
        return out, c

    def update(self, old: Any, new: Any, version: str, managers: dict, workflow: tuple) -> dict:
        managers, c = self._update(old, new, managers, workflow, True)
        prev = managers.get(workflow)
        fields = set(prev.fields) if prev else set()
        fields = ((fields | c.modified | c.added) - c.removed)
        fields = recursive_difference(fields, self.ignored)
        if fields:
            managers[workflow] = _Entry(fields, version, False)
        else:
            managers.pop(workflow, None)
        return managers

    def apply(self, live: Any, config: Any, version: str, managers: dict, workflow: tuple,
              force: bool) -> tuple[Optional[Any], dict]:
        merged = merge(live, config, self.meta)
        last = managers.get(workflow)
        fields = recursive_difference(to_field_set(config, self.meta), self.ignored)
        managers = dict(managers)
        managers[workflow] = _Entry(fields, version, True)
        merged = self._prune(merged, managers, last)
        managers, _ = self._update(live, merged, managers, workflow, force)
        if _equal(live, merged):
            return None, managers
        return merged, managers

    def _prune(self, merged: Any, managers: dict, last: Optional[_Entry]) -> Any:
        if last is None or not last.fields:
            return merged
        meta = self.meta
        last_set = ensure_named_fields_are_members(last.fields, meta)
        pruned = remove_items(merged, meta, last_set)
        # Add back what anybody (the applier's new configuration included) still owns.
        managed: PathSet = set()
        for entry in managers.values():
            managed |= entry.fields
        merged_set = ensure_named_fields_are_members(to_field_set(merged, meta), meta)
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, meta), meta)
        managed = ensure_named_fields_are_members(managed, meta)
        pruned = remove_items(merged, meta, merged_set - (pruned_set | managed))
        # Only remove what the applier itself set last time.
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, meta), meta)
        return remove_items(merged, meta, (merged_set - pruned_set) & last_set)


# -- the field manager pipeline (apiserver managedfields) ----------------------------------------

def _strip(managers: dict, key: tuple) -> None:
    entry = managers.get(key)
    if entry is None:
        return
    fields = entry.fields - _STRIPPED
    if fields:
        managers[key] = _Entry(fields, entry.api_version, entry.applied)
    else:
        del managers[key]


def _cap_update_managers(managers: dict, times: dict) -> None:
    updaters = [k for k, e in managers.items() if not e.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (_time_seconds(times.get(k)), _identifier(k)))
    first_by_version: dict = {}
    length = len(updaters)
    for key in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry = managers[key]
        version = entry.api_version
        bucket = _manager_key(ANCIENT_CHANGES, "Update", version, "")
        first = first_by_version.get(version)
        if first is None:
            first_by_version[version] = key
            continue
        if bucket not in managers:
            managers[bucket] = managers.pop(first)
            times[bucket] = times.pop(first, None)
        managers[bucket] = _Entry(entry.fields | managers[bucket].fields, version, False)
        del managers[key]
        times[bucket] = times.pop(key, None)
        length -= 1


def _record_update(upd: _Updater, old: Any, new: Any, version: str, managers: dict, times: dict,
                   key: tuple, now: str) -> dict:
    """managedFieldsUpdater + stripMeta + capManagers around a structured Update."""
    current = (_CURRENT_OPERATION, "Update", version, key[3])
    managers = upd.update(old, new, version, managers, current)
    _strip(managers, current)
    entry = managers.pop(current, None)
    if entry is not None:
        prev = managers.get(key)
        fields = entry.fields | prev.fields if prev else entry.fields
        managers[key] = _Entry(fields, entry.api_version, False)
        times[key] = now
    _cap_update_managers(managers, times)
    return managers


def _zero_object(meta: PatchMeta, template: Optional[dict]) -> dict:
    """The empty object a create starts from: the Go zero value of the kind, approximated from the
    schema (metadata/spec/status present, required struct fields present and empty, required
    lists null). Pass the real zero value as `template` where it matters."""
    if template is not None:
        return _copy(template)
    zero: dict = {}
    for name in ("metadata", "spec", "status"):
        if meta.has_field(name):
            zero[name] = _zero_struct(meta.field(name), 0)
    return zero


def _zero_struct(meta: PatchMeta, depth: int) -> dict:
    out: dict = {}
    s = meta.schema
    if not s or depth > 8:
        return out
    for name in s.get("required") or ():
        child = meta.field(name)
        cs = child.schema or {}
        if cs.get("type") == "array" or "items" in cs:
            out[name] = None
        elif "properties" in cs and cs.get("x-kubernetes-map-type") != "atomic":
            out[name] = _zero_struct(child, depth + 1)
    return out


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value if v is not None]
    return value


def _type_meta_first(obj: dict) -> dict:
    """apiVersion and kind lead, as the API server serialises typed objects."""
    if "apiVersion" not in obj and "kind" not in obj:
        return obj
    out = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out)
    return out


def _reset_fields(subresource: str, reset_fields: Optional[Iterable[Iterable[str]]]) -> tuple:
    if reset_fields is None:
        reset_fields = [("status",)] if not subresource else [("spec",)] if subresource == "status" else []
    return tuple(tuple(("f", n) for n in p) for p in reset_fields)


def _gvk_string(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def load_apply_body(body: bytes | str | dict) -> dict:
    """Decode an apply-patch body (JSON, which kubectl sends, or YAML)."""
    if isinstance(body, dict):
        return body
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            obj = yaml.load(body, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as e:
            raise bad_request(f"error decoding YAML: {e}") from None
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise bad_request("error decoding YAML: the body is not a JSON/YAML object")
    return obj


def _typed_failure(what: str, obj: dict, error: _TypedError) -> StatusError:
    md = obj.get("metadata") or {}
    where = f"{md.get('namespace', '')}/{md.get('name', '')}; {_gvk_string(obj.get('apiVersion', ''), obj.get('kind', ''))}"
    return StatusError(500, "", f"failed to {what} ({where}): {error}")


def _last_applied_allowed(live: dict, version: str, meta: PatchMeta) -> Optional[PathSet]:
    """Fields the client-side-apply annotation proves the applier already set (upstream
    lastAppliedManager); None when there is no usable annotation."""
    annotation = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED_ANNOTATION)
    if not annotation:
        return None
    try:
        last = orjson.loads(annotation)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != version:
        return None
    try:
        fields = to_field_set(last, meta)
        c = compare(last, live, meta)
    except _TypedError:
        return None
    return fields - c.modified - c.added - c.removed


def _last_applied_value(applied: dict) -> str:
    obj = _copy(applied)
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED_ANNOTATION, None)
    return _go_json(obj) + "\n"


def server_side_apply(live: Optional[dict], applied: dict | bytes | str, manager: str, meta: PatchMeta,
                      force: bool, now: str, *, subresource: str = "",
                      reset_fields: Optional[Iterable[Iterable[str]]] = None,
                      api_version: Optional[str] = None, kind: Optional[str] = None,
                      empty_object: Optional[dict] = None) -> dict:
    """Apply `applied` as `manager`; returns the object to persist with its managedFields.

    `now` is the RFC 3339 timestamp written into the managedFields entries that change.
    `api_version`/`kind`, when given, are what the endpoint serves (a body of another type is a
    400). `reset_fields` are the top-level paths the strategy resets (default: `status` on the main
    resource, `spec` on `status`); `empty_object` is the kind's zero value a create starts from.
    """
    config = load_apply_body(applied)
    version = config.get("apiVersion") or api_version or ""
    if (api_version is not None and config.get("apiVersion") != api_version) or \
            (kind is not None and config.get("kind") != kind):
        raise bad_request(f"invalid object type: {_gvk_string(config.get('apiVersion') or '', config.get('kind') or '')}")
    if isinstance((config.get("metadata") or {}).get("managedFields"), list):
        raise bad_request("metadata.managedFields must be nil")

    live_obj = _copy(live) if live else _zero_object(meta, empty_object)
    md = live_obj.get("metadata")
    try:
        managers, times = decode_managed_fields(md.pop("managedFields", None) if isinstance(md, dict) else None)
    except ValueError as e:
        raise StatusError(500, "", f"failed to decode managed fields: {e}") from None
    upd = _Updater(meta, _reset_fields(subresource, reset_fields))
    name = manager or "unknown"
    key = _manager_key(name, "Apply", version, subresource)

    try:
        if not managers and live:
            zero = _zero_object(meta, empty_object)
            before = _manager_key(BEFORE_FIRST_APPLY, "Update", version, subresource)
            managers = _record_update(upd, zero, live_obj, version, managers, times, before, now)
        try:
            result, new_managers = upd.apply(live_obj, config, version, managers, key, force)
        except _Conflicts as c:
            conflicts = c.conflicts
            allowed = _last_applied_allowed(live_obj, version, meta) if manager == "kubectl" else None
            if allowed is None:
                raise conflict_error(conflicts) from None
            remaining = {k: s - allowed for k, s in conflicts.items()}
            remaining = {k: s for k, s in remaining.items() if s}
            if remaining:
                raise conflict_error(remaining) from None
            result, new_managers = upd.apply(live_obj, config, version, managers, key, True)
    except _TypedError as e:
        raise _typed_failure("create typed patch object", config, e) from None

    _strip(new_managers, key)
    if result is None:
        result = live_obj
    else:
        times[key] = now
    result = _type_meta_first(_strip_nulls(result))
    if manager == "kubectl":
        annotations = (result.get("metadata") or {}).get("annotations") or {}
        if annotations.get(LAST_APPLIED_ANNOTATION):
            annotations[LAST_APPLIED_ANNOTATION] = _last_applied_value(config)
    times = {k: v for k, v in times.items() if k in new_managers}
    entries = encode_managed_fields(new_managers, times)
    result_md = result.setdefault("metadata", {})
    if entries:
        result_md["managedFields"] = entries
    else:
        result_md.pop("managedFields", None)
    return result


# A create's managedFields depend only on the object's shape (its keys, the types of its scalars and
# its lists' items), the request and the schema: objects made from one template (the pods of a Job,
# the scheduler's Events) share one computed entry, and only its time differs.
_CREATE_SHAPES: dict = {}
_CREATE_SHAPES_MAX = 4096


def _shape(value: Any) -> Any:
    t = type(value)
    if t is dict:
        return tuple([(k, _shape(v)) for k, v in value.items()])
    if t is list:
        return orjson.dumps(value)  # list items are identified by their values (keys, set members)
    return t


def _create_from_shape(new: dict, manager: str, operation: str, meta: PatchMeta, now: str,
                       subresource: str, reset_fields: Optional[Iterable[Iterable[str]]]) -> dict:
    """update_managed_fields for a create without requested managedFields, memoized by shape."""
    reset = _reset_fields(subresource, reset_fields)
    key = (id(meta), new.get("apiVersion"), manager, operation, subresource, reset, _shape(new))
    template = _CREATE_SHAPES.get(key, _MISSING)
    if template is _MISSING:
        update_managed_fields(None, new, manager, operation, meta, now, subresource=subresource,
                              reset_fields=reset_fields, empty_object=_zero_object(meta, None))
        entries = new["metadata"].get("managedFields")
        if entries is None:
            template = None
        elif len(entries) == 1 and entries[0].get("time") == now:
            template = entries[0]
        else:
            return new  # not a single timed entry: not memoized
        if len(_CREATE_SHAPES) >= _CREATE_SHAPES_MAX:
            _CREATE_SHAPES.clear()
        _CREATE_SHAPES[key] = template
        return new
    if template is not None:
        new["metadata"]["managedFields"] = [{k: (now if k == "time" else v) for k, v in template.items()}]
    return new


def _is_reset(entries: Any) -> bool:
    if isinstance(entries, list):
        return len(entries) == 0 or (len(entries) == 1 and entries[0] in ({}, None))
    return False


def update_managed_fields(old: Optional[dict], new: dict, manager: str, operation: str = "Update",
                          meta: Optional[PatchMeta] = None, now: str = "", *, subresource: Optional[str] = "",
                          reset_fields: Optional[Iterable[Iterable[str]]] = None,
                          empty_object: Optional[dict] = None) -> dict:
    """Record the fields `manager` changed from `old` (None on create) to `new`.

    Sets `new["metadata"]["managedFields"]` in place (and returns `new`): an `Update` entry for the
    manager, and the other managers' entries minus the fields this request took over or removed.
    Call it with the final (defaulted) object of a create, update or non-apply patch. Like
    upstream, an existing object that has never had managedFields is not tracked until its first
    apply, and a request that sends `managedFields: []` resets them. `old` is not modified.
    """
    meta = meta or PatchMeta.empty()
    subresource = subresource or ""
    new_md = new.setdefault("metadata", {})
    requested = new_md.pop("managedFields", None)
    if old is None and requested is None and empty_object is None and now:
        return _create_from_shape(new, manager, operation, meta, now, subresource, reset_fields)
    current = new  # read only below (its managedFields were taken out above)
    if old:  # a shallow copy without managedFields: the comparison only reads both objects
        old_obj = dict(old)
        if isinstance(old.get("metadata"), dict):
            old_obj["metadata"] = dict(old["metadata"])
    else:
        old_obj = _zero_object(meta, empty_object)
    old_md = old_obj.get("metadata") if isinstance(old_obj.get("metadata"), dict) else {}
    live_entries = old_md.pop("managedFields", None)
    version = current.get("apiVersion") or old_obj.get("apiVersion") or ""

    def decode_or_empty(entries: Any) -> tuple[dict, dict]:
        try:
            return decode_managed_fields(entries)
        except ValueError:
            return {}, {}

    if subresource:
        managers, times = decode_or_empty(live_entries)
    elif _is_reset(requested):
        managers, times = {}, {}
    else:
        managers, times = decode_or_empty(requested)
        if not managers:
            managers, times = decode_or_empty(live_entries)

    if not managers and old and (old_md.get("uid") or ""):
        return new  # an existing object without managedFields is not tracked before its first apply

    upd = _Updater(meta, _reset_fields(subresource, reset_fields))
    key = _manager_key(manager or "unknown", operation, version, subresource)
    try:
        managers = _record_update(upd, old_obj, current, version, managers, times, key, now)
    except _TypedError:
        if live_entries:
            new_md["managedFields"] = live_entries  # upstream keeps the live entries on failure
        return new
    times = {k: v for k, v in times.items() if k in managers}
    entries = encode_managed_fields(managers, times)
    if entries:
        new_md["managedFields"] = entries
    return new
