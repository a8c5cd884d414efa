"""Typed walks over two values: compare (fields added, modified, removed), merge an applied
configuration into a live object, and remove a set of fields (upstream TypedValue Compare, Merge,
RemoveItems)."""

from __future__ import annotations

from typing import Any, Iterable

from ..patchmeta import PatchMeta
from .fieldsets import _tree, recursive_difference
from .values import (_ATOMIC, _LIST, _MAP, _MISSING, _SCALAR, Path, PathElement, PathSet, PathTrie, _classify, _equal, _item_pe, _Type,
                     _TypedError, _typed_error_prefix, path_string)

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


def compare(lhs: Any, rhs: Any, meta: PatchMeta, skip: Iterable[Path] = ()) -> Comparison:
    """Fields added, modified and removed from `lhs` to `rhs` (upstream TypedValue.Compare).
    `skip`: top-level fields not to walk at all (a subresource's reset fields, which the caller
    excludes from the result anyway: a status write need not walk the whole spec)."""
    c = Comparison()
    top = {p[0][1] for p in skip if len(p) == 1 and p[0][0] == "f"}
    if top and isinstance(lhs, dict) and isinstance(rhs, dict):
        lhs = {k: v for k, v in lhs.items() if k not in top}
        rhs = {k: v for k, v in rhs.items() if k not in top}
    _compare(lhs, rhs, meta, (), c)
    return c


def _index(t: _Type, items: list[Any], path: Path, allow_duplicates: bool) -> tuple[list[PathElement], dict[PathElement, Any]]:
    order: list[PathElement] = []
    observed: dict[PathElement, Any] = {}
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
        descended = _compare_maps(t, l, r, path, c)
    elif kind == _LIST:
        descended = _compare_lists(t, l, r, path, c)
    else:
        descended = False
    if l is _MISSING:
        c.added.add(path)
    elif r is _MISSING:
        c.removed.add(path)
    elif not descended and not _equal(l, r):
        c.modified.add(path)


def _compare_maps(t: _Type, l: Any, r: Any, path: Path, c: Comparison) -> bool:
    """Compare two maps entry by entry; False (nothing done) when they compare as leaves instead:
    one is not a map, or neither has entries."""
    lm = l if isinstance(l, dict) else None
    rm = r if isinstance(r, dict) else None
    if not lm and not rm:
        return False
    if (lm is None and l is not _MISSING and l is not None) or (rm is None and r is not _MISSING and r is not None):
        return False  # one side is not a map: they compare as leaves
    lm = lm or {}
    rm = rm or {}
    for key, lv in lm.items():
        _compare(lv, rm.get(key, _MISSING), t.field(key), path + (("f", key),), c)
    for key, rv in rm.items():
        if key not in lm:
            _compare(_MISSING, rv, t.field(key), path + (("f", key),), c)
    return True


def _compare_lists(t: _Type, l: Any, r: Any, path: Path, c: Comparison) -> bool:
    """Compare two associative lists item by item; False when they compare as leaves instead."""
    ll = l if isinstance(l, list) else None
    rl = r if isinstance(r, list) else None
    if not ll and not rl:
        return False
    if (ll is None and l is not _MISSING and l is not None) or (rl is None and r is not _MISSING and r is not None):
        return False  # one side is not a list: they compare as leaves
    _, rhs_items = _index(t, rl or [], path, True)
    lhs_order, lhs_items = _index(t, ll or [], path, True)
    items = t.items()
    for pe in lhs_order:
        _compare(lhs_items[pe], rhs_items.get(pe, _MISSING), items, path + (pe,), c)
    for pe, rv in rhs_items.items():
        if pe not in lhs_items:
            _compare(_MISSING, rv, items, path + (pe,), c)
    return True


def merge(lhs: Any, rhs: Any, meta: PatchMeta) -> Any:
    """Merge `rhs` (an applied configuration) into `lhs` (upstream TypedValue.Merge)."""
    out = _merge(lhs, rhs, meta, ())
    return {} if out is _MISSING else out


def _merge(l: Any, r: Any, meta: PatchMeta, path: Path) -> Any:
    t = _classify(meta, r if r is not _MISSING else l)
    kind = t.kind
    if kind == _MAP or kind == _LIST:
        # Merged entry by entry when one side has entries and neither is of another type.
        container = dict if kind == _MAP else list
        lc = l if isinstance(l, container) else None
        rc = r if isinstance(r, container) else None
        if (lc or rc) and (lc is not None or l is _MISSING or l is None) and \
                (rc is not None or r is _MISSING or r is None):
            return _merge_maps(t, l, r, path) if kind == _MAP else _merge_lists(t, l, r, path)
    return r if r is not _MISSING else l


def _merge_maps(t: _Type, l: Any, r: Any, path: Path) -> Any:
    lm = l if isinstance(l, dict) else {}
    rm = r if isinstance(r, dict) else {}
    out = {}
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


def _merge_lists(t: _Type, l: Any, r: Any, path: Path) -> Any:
    ll = l if isinstance(l, list) else None
    out_list = _merge_list(t, ll or [], r if isinstance(r, list) else [], path)
    if out_list and r is _MISSING and ll is not None and len(out_list) == len(ll) and \
            all(a is b for a, b in zip(out_list, ll)):
        return l  # unchanged live-only list: the same object
    return out_list if out_list else _MISSING


def _merge_list(t: _Type, lhs: list[Any], rhs: list[Any], path: Path) -> list[Any]:
    """Upstream's associative-list merge order: live order kept, applied items placed after the
    live items that precede them in the applied order."""
    rhs_order, rhs_items = _index(t, rhs, path, False)
    lhs_pes = _item_pes(t, lhs, path)
    lhs_first: dict[PathElement, Any] = {}
    for pe, item in zip(lhs_pes, lhs):
        lhs_first.setdefault(pe, item)
    shared = iter([pe for pe in rhs_order if pe in lhs_first])  # items in both, in the applied order
    next_shared = next(shared, None)
    items_meta = t.items()
    merged_rhs: set[PathElement] = set()
    out: list[Any] = []

    def emit(pe: PathElement, lv: Any, rv: Any) -> None:
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
                next_shared = next(shared, None)
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
            if next_shared == pe:
                next_shared = next(shared, None)
    return out


def _item_pes(t: _Type, items: list[Any], path: Path) -> list[PathElement]:
    """The path element of each item, in order (duplicates kept)."""
    pes = []
    for i, item in enumerate(items):
        try:
            pes.append(_item_pe(t, item))
        except _TypedError as e:
            raise _TypedError(f"{_typed_error_prefix(path)}element {i}: {e}") from None
    return pes


def remove_items(obj: Any, meta: PatchMeta, paths: Iterable[Path]) -> Any:
    """`obj` without the fields, list items and map entries in `paths` (upstream RemoveItems).

    A container left empty becomes null, as upstream leaves it."""
    tree = _tree(paths)
    if not tree:
        return obj
    return _remove(obj, meta, tree)


def _remove(value: Any, meta: PatchMeta, tree: PathTrie) -> Any:
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

