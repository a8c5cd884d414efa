"""Field sets (Python sets of paths): the fields a value sets, set algebra on paths, and the
`fieldsV1` wire encoding (`f:`, `k:`, `v:`, `i:`, `.`) in both directions."""

from __future__ import annotations

from typing import Any, Iterable, Optional

import orjson

from ..interning import EMPTY_FIELDS, shared_fields
from ..patchmeta import PatchMeta
from .values import (_ATOMIC, _LIST, _SCALAR, Path, PathElement, PathSet, PathTrie, _classify, _go_json, _hv, _item_pe, _TypedError,
                     _typed_error_prefix, _unhv)

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
        seen: set[Any] = set()
        dups: set[Any] = set()
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


def _tree(paths: Iterable[Path]) -> PathTrie:
    """Paths as a trie: {pe: [is_member, children]}."""
    root: PathTrie = {}
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


def recursive_difference(paths: Iterable[Path], prefixes: Iterable[Path]) -> PathSet:
    """`paths` less every path equal to or under one of `prefixes`."""
    prefixes = tuple(prefixes)
    if not prefixes:
        return set(paths)
    return {p for p in paths if not any(p[:len(x)] == x for x in prefixes)}


def ensure_named_fields_are_members(paths: Iterable[Path], meta: PatchMeta) -> PathSet:
    """Add, as members, the struct fields (declared properties) that have children in the set."""
    out = set(paths)
    metas: dict[Path, PatchMeta] = {(): meta}
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


def _navigate(meta: PatchMeta, path: Path, cache: dict[Path, PatchMeta]) -> PatchMeta:
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

def _value_order(h: tuple[str, Any]) -> tuple[Any, ...]:
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


def _pe_order(pe: PathElement) -> tuple[Any, ...]:
    kind = pe[0]
    if kind == "f":
        return (0, pe[1])
    if kind == "k":
        return (1, tuple((n, _value_order(h)) for n, h in pe[1]))
    if kind == "v":
        return (2, _value_order(pe[1]))
    return (3, pe[1])


def _pe_string(pe: PathElement) -> str:
    kind = pe[0]
    if kind == "f":
        return f"f:{pe[1]}"
    if kind == "k":
        return "k:{" + ",".join(f"{_go_json(n)}:{_go_json(_unhv(h))}" for n, h in pe[1]) + "}"
    if kind == "v":
        return "v:" + _go_json(_unhv(pe[1]))
    return f"i:{pe[1]}"


def set_to_fields(paths: Iterable[Path]) -> dict[str, Any]:
    """The `fieldsV1` object for a field set, keys in upstream's order ("." after the children).
    Read-only: its subtrees are shared with equal ones of other objects (`machinery.interning`)."""
    return _emit(_tree(paths))


def _emit(tree: PathTrie) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pe in sorted(tree, key=_pe_order):
        member, children = tree[pe]
        if children:
            sub = _emit(children)
            if member:
                sub = shared_fields({**sub, ".": EMPTY_FIELDS})
            out[_pe_string(pe)] = sub
        else:
            out[_pe_string(pe)] = EMPTY_FIELDS
    return shared_fields(out)


def _parse_pe(key: str) -> Optional[PathElement]:
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


def fields_to_set(fields: Optional[dict[str, Any]]) -> PathSet:
    """Decode a `fieldsV1` object into a field set."""
    out: PathSet = set()
    _read(fields or {}, (), out)
    return out


def _read(node: dict[str, Any], prefix: Path, out: PathSet) -> None:
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

