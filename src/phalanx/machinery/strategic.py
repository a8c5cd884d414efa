"""Strategic merge patch (`application/strategic-merge-patch+json`), applied as kube-apiserver does.

    result = strategic_merge_patch(live_object, patch, PatchMeta.for_schema(schema, resolve))

A strategic merge patch is a JSON merge patch that knows, per field, how lists merge. The field's
OpenAPI extensions (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`, read through
`PatchMeta`) decide:

- maps merge recursively and a `null` value deletes a key;
- a list with strategy `merge` and a merge key merges element by element on that key; a list of
  primitives with strategy `merge` is a set union; every other list is replaced;
- where the schema says nothing (`PatchMeta.empty()`, a field it does not know), lists are
  replaced, as JSON merge patch does; a subtree marked `x-kubernetes-preserve-unknown-fields`
  without declared properties is patched with plain JSON merge patch semantics.

Directives, as kubectl sends them:

- `$patch: replace` in a map replaces the map; as an element of a merge list it replaces the list;
- `$patch: delete` in a map empties it (upstream leaves `{}`); as an element of a merge list,
  `{"$patch": "delete", "<mergeKey>": v}` deletes every element with that key;
- `$retainKeys: [...]` clears the keys of the map not listed (and rejects a patch that sets a key
  not listed);
- `$setElementOrder/<field>: [...]` orders a merge list (elements or primitives);
- `$deleteFromPrimitiveList/<field>: [...]` removes values from a list of primitives.
  Any other `$patch` value is an error, as upstream (`$patch: merge` included).

Ordering follows upstream exactly, including where it surprises: without `$setElementOrder`,
elements the live list does not have are placed before the remaining live-only elements (upstream
"prepends"), and with `$setElementOrder` live-only elements are interleaved by their live
position. Duplicate merge keys in the live list: a patch element merges into the first one, a
delete directive removes all of them.

Deliberate difference: values that are added rather than merged (a new key, a new list element,
the contents of a `$patch: replace`) are cleaned of nulls and of directives. Upstream leaves
directive keys in them for its typed decoder to drop or reject; phalanx has no such decoder.

Pure and fast: inputs are never mutated, no deep copy is made; containers are rebuilt only along
the patched paths, and untouched subtrees of the original are shared with the result. The work is
linear in the sizes of the object and the patch (`$patch: delete` directives included), and a
patch nested deeper than `MAX_PATCH_DEPTH` levels is refused up front (400, the JSON decoder's
"exceeded max depth"; upstream's decoder allows 10,000 levels, Python's recursion does not).

Errors carry upstream's words and codes: malformed directives are 400 BadRequest, a list of lists
is 422, and everything else (a missing merge key, an unknown `$patch`, an order list that does not
match) is a 500 whose message kubectl prints as `Error from server: <message>`.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

import orjson

from phalanx.machinery import errors
from phalanx.machinery.errors import StatusError
from phalanx.machinery.patch import json_type_word, merge_patch_value, patch_rejected, prune_nulls
from phalanx.machinery.patchmeta import PatchMeta

DIRECTIVE_MARKER = "$patch"
DELETE_DIRECTIVE = "delete"
REPLACE_DIRECTIVE = "replace"
MERGE_DIRECTIVE = "merge"
RETAIN_KEYS_STRATEGY = "retainKeys"
RETAIN_KEYS_DIRECTIVE = "$retainKeys"
SET_ELEMENT_ORDER_PREFIX = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST_PREFIX = "$deleteFromPrimitiveList"

# mergepatch's sentinel errors (400 BadRequest upstream).
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"

# How deeply a patch may nest objects and arrays (Kubernetes objects need a few dozen levels).
MAX_PATCH_DEPTH = 200

_MAP = "map[string]interface {}"
_SLICE = "[]interface {}"
_DROP = object()
_ABSENT = object()  # a key missing from a map
_CONTAINER_TYPES = (_MAP, _SLICE)


# -- errors --------------------------------------------------------------------------------

def _server_error(message: str) -> StatusError:
    """A plain Go error reaching the handler: 500, no reason, the message as is."""
    return StatusError(500, "", message)


def _go_float(f: float) -> str:
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if str(f).startswith("-") else "0"
    sign = "-" if f < 0 else ""
    mantissa, _, exponent = repr(abs(f)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exponent) if exponent else 0)
    if whole == "0":
        stripped = frac.lstrip("0")
        point = -(len(frac) - len(stripped)) + (int(exponent) if exponent else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    exp = point - 1
    if exp < -4 or exp >= 6:
        tail = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{tail}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_format(value: Any) -> str:
    """A JSON value as Go's `%v` prints a decoded `interface{}` (maps with sorted keys)."""
    if value is None:
        return "<nil>"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    return str(value)


_GO_TYPES = {dict: _MAP, list: _SLICE, str: "string", bool: "bool", int: "int64", float: "float64"}


def _go_type(value: Any) -> str | None:
    """The Go type encoding/json decodes a JSON value into (kube's decoder keeps ints as int64)."""
    t = _GO_TYPES.get(type(value))
    if t is not None or value is None:
        return t
    for py, go in _GO_TYPES.items():
        if isinstance(value, py):
            return go
    return None


def _go_s(value: Any) -> str:
    """Go's `%s` of an interface{} value."""
    if isinstance(value, str):
        return value
    t = _go_type(value)
    if t is None:
        return "%!s(<nil>)"
    return f"%!s({t}={go_format(value)})"


def _no_merge_key(m: Any, key: str) -> StatusError:
    return _server_error(f"map: {go_format(m)} does not contain declared merge key: {key}")


def _bad_arg_type(expected: str, actual: Any) -> StatusError:
    t = _go_type(actual)
    return _server_error(f"expected a {expected}, but received a {t if t else '%!s(<nil>)'}")


def _bad_patch_type(directive: Any, m: dict[str, Any]) -> StatusError:
    return _server_error(f"unknown patch type: {_go_s(directive)} in map: {go_format(m)}")


# -- helpers -------------------------------------------------------------------------------

def _hkey(value: Any) -> Hashable:
    """A hashable identity for a JSON value that keeps Go's typed equality (1, 1.0, true differ)."""
    if type(value) is str:
        return value
    if value is None:
        return None
    go = _go_type(value)
    if go in (_MAP, _SLICE):
        return (go, orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (go, value)


def _first_positions(order: Iterable[Any], key_of: Callable[[Any], Hashable]) -> dict[Hashable, int]:
    positions: dict[Hashable, int] = {}
    for i, item in enumerate(order):
        positions.setdefault(key_of(item), i)
    return positions


def _map_key_of(merge_key: str) -> Callable[[Any], Hashable]:
    def key_of(item: Any) -> Hashable:
        return _hkey(item.get(merge_key) if isinstance(item, dict) else None)
    return key_of


def _is_directive_key(key: str) -> bool:
    return (key == RETAIN_KEYS_DIRECTIVE or key.startswith(SET_ELEMENT_ORDER_PREFIX)
            or key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX))


def _fresh(value: Any) -> Any:
    """A patch value that is added, not merged: nulls and directives removed (`_DROP` if it is one)."""
    if isinstance(value, dict):
        if DIRECTIVE_MARKER in value:
            return _DROP
        out = {}
        for k, v in value.items():
            if v is None or _is_directive_key(k):
                continue
            fv = _fresh(v)
            if fv is not _DROP:
                out[k] = fv
        return out
    if isinstance(value, list):
        out_list = []
        for v in value:
            fv = _fresh(v)
            if fv is not _DROP:
                out_list.append(fv)
        return out_list
    return value


def _is_opaque(meta: PatchMeta) -> bool:
    """A preserve-unknown-fields subtree with no declared structure: JSON merge patch applies."""
    s = meta.schema
    if not s or not s.get("x-kubernetes-preserve-unknown-fields"):
        return False
    if s.get("properties") or isinstance(s.get("additionalProperties"), dict):
        return False
    return True


def _patch_strategy(meta: PatchMeta) -> str:
    """The field's strategy other than retainKeys ("" when none), as extractRetainKeysPatchStrategy."""
    raw = meta.extension("x-kubernetes-patch-strategy")
    strategies: list[str] = raw.split(",") if raw else []
    if not strategies:
        return ""
    if len(strategies) == 1:
        return "" if strategies[0] == RETAIN_KEYS_STRATEGY else strategies[0]
    if len(strategies) == 2:
        if strategies[0] == RETAIN_KEYS_STRATEGY:
            return strategies[1]
        if strategies[1] == RETAIN_KEYS_STRATEGY:
            return strategies[0]
    raise _server_error(f"unexpected patch strategy: [{' '.join(strategies)}]")


def _extract_key(key: str, prefix: str) -> str:
    parts = key.split("/", 1)
    if len(parts) <= 1 or parts[0] != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX:
            raise errors.bad_request(BAD_PRIMITIVE_LIST)
        raise errors.bad_request(BAD_SET_ELEMENT_ORDER)
    return parts[1]


def _element_type(*lists: list[Any] | None) -> str:
    """The common Go type of the elements of the lists (upstream sliceElementType)."""
    prev: str | None = None
    seen = False
    for lst in lists:
        for v in lst or ():
            t = _go_type(v)
            if not seen:
                seen, prev = True, t
                if t == _SLICE:
                    raise patch_rejected("lists of lists are not supported")
            if t is None or t != prev:
                shown = "[" + " ".join(go_format(x or []) for x in lists) + "]"
                raise _server_error(f"list element types are not identical: {shown}")
    if not seen or prev is None:
        raise _server_error("no elements in any of the given slices")
    return prev


def _check_depth(patch: dict[str, Any]) -> None:
    """Refuse a patch nested deeper than MAX_PATCH_DEPTH, before any recursion starts.

    Upstream's JSON decoder stops at 10,000 levels; merging recursively in Python, phalanx stops
    far sooner, with the decoder's words, so a deep patch is a 400 rather than a RecursionError.
    """
    stack: list[tuple[Any, int]] = [(patch, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= MAX_PATCH_DEPTH:
                    bracket = "{" if isinstance(child, dict) else "["
                    raise errors.bad_request(f"invalid character '{bracket}' exceeded max depth")
                stack.append((child, depth + 1))


# -- maps ----------------------------------------------------------------------------------

def strategic_merge_patch(original: dict[str, Any], patch: dict[str, Any] | None, meta: PatchMeta | None = None) -> dict[str, Any]:
    """Apply a strategic merge patch to an object; `meta` describes the object's schema.

    A `null` patch changes nothing; a patch that is not a JSON object is a 400.
    """
    if meta is None:
        meta = PatchMeta.empty()
    if patch is None:
        return dict(original)
    if not isinstance(patch, dict):
        raise errors.bad_request(
            f"json: cannot unmarshal {json_type_word(patch)} into Go value of type "
            f"map[string]interface {{}}")
    _check_depth(patch)
    if _is_opaque(meta):
        merged: dict[str, Any] = merge_patch_value(original, patch)
        return merged
    return _merge_map(original, patch, meta)


def _merge_element(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> Any:
    if _is_opaque(meta):
        return merge_patch_value(original, patch)
    return _merge_map(original, patch, meta)


def _map_directive(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if directive == REPLACE_DIRECTIVE:
        replaced: dict[str, Any] = _fresh({k: v for k, v in patch.items() if k != DIRECTIVE_MARKER})
        return replaced
    if directive == DELETE_DIRECTIVE:
        return {}
    raise _bad_patch_type(directive, patch)


def _apply_retain_keys(result: dict[str, Any], patch: dict[str, Any]) -> None:
    retain = patch[RETAIN_KEYS_DIRECTIVE]
    if not isinstance(retain, list):
        raise errors.bad_request(BAD_RETAIN_KEYS)
    keep = {v for v in retain if isinstance(v, str)}
    for key, value in patch.items():
        if key == RETAIN_KEYS_DIRECTIVE or value is None:
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX) or key.startswith(SET_ELEMENT_ORDER_PREFIX):
            continue
        if key not in keep:
            raise errors.bad_request(BAD_RETAIN_KEYS)
    for key in [k for k in result if k not in keep]:
        del result[key]


def _set_added(result: dict[str, Any], key: str, value: Any, meta: PatchMeta) -> None:
    added = prune_nulls(value) if _is_opaque(meta) else _fresh(value)
    if added is _DROP:
        result.pop(key, None)
    else:
        result[key] = added


def _merge_map(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> dict[str, Any]:
    if DIRECTIVE_MARKER in patch:
        return _map_directive(patch[DIRECTIVE_MARKER], patch)
    result = dict(original)
    if RETAIN_KEYS_DIRECTIVE in patch:
        _apply_retain_keys(result, patch)

    ordered: set[str] = set()
    for key, value in patch.items():
        if key.startswith(SET_ELEMENT_ORDER_PREFIX):
            field = _apply_set_element_order(result, patch, key, value, meta)
            if field is not None:
                ordered.add(field)

    for key, value in patch.items():
        if key == RETAIN_KEYS_DIRECTIVE or key.startswith(SET_ELEMENT_ORDER_PREFIX) or key in ordered:
            continue
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
        field = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST_PREFIX) if is_delete_list else key
        if value is None:
            result.pop(field, None)
            continue
        current = result.get(field, _ABSENT)
        patch_type = _go_type(value)
        if current is _ABSENT or _go_type(current) != patch_type:
            # New, or of another type than the live value: the patch value is set as it is.
            if not is_delete_list:
                _set_added(result, field, value, meta.field(field))
            continue
        if patch_type not in _CONTAINER_TYPES:
            result[field] = value
            continue
        field_meta = meta.field(field)
        if _is_opaque(field_meta):
            result[field] = merge_patch_value(current, value)
        elif patch_type == _SLICE:
            merged, _ = _merge_slice_handler(current, value, field_meta, is_delete_list)
            result[field] = merged
        elif _patch_strategy(field_meta) == REPLACE_DIRECTIVE:
            _set_added(result, field, value, field_meta)
        else:
            result[field] = _merge_map(current, value, field_meta)
    return result


# -- $setElementOrder ----------------------------------------------------------------------

def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _hkey(left) == _hkey(right)
    if not isinstance(left, dict):
        raise _bad_arg_type(_MAP, left)
    if not isinstance(right, dict):
        raise _bad_arg_type(_MAP, right)
    if merge_key not in left:
        raise _no_merge_key(left, merge_key)
    if merge_key not in right:
        raise _no_merge_key(right, merge_key)
    return _hkey(left[merge_key]) == _hkey(right[merge_key])


def _validate_with_order(patch_list: list[Any] | None, order: list[Any], merge_key: str) -> None:
    """The patch list must be a subsequence of the order list (deletions and directives aside)."""
    if not patch_list or not order:
        return
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP, item)
        entries = [item for item in patch_list if item.get(DIRECTIVE_MARKER) != DELETE_DIRECTIVE]
    else:
        entries = patch_list
    pi = si = 0
    while pi < len(entries) and si < len(order):
        item = entries[pi]
        if isinstance(item, dict) and DIRECTIVE_MARKER in item:
            pi += 1
            continue
        if _merge_key_equal(item, order[si], merge_key):
            pi += 1
        si += 1
    if pi < len(entries) and si >= len(order):
        raise _server_error(f"the order in patch list:\n{go_format(patch_list)}\n doesn't match "
                            f"{SET_ELEMENT_ORDER_PREFIX} list:\n{go_format(order)}")


def _partition_maps(merged: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    wanted: set[Hashable] = set()
    for item in by:
        if not isinstance(item, dict):
            raise _server_error(f"value for key {by.index(item)} is not a map")
        if merge_key in item:
            wanted.add(_hkey(item[merge_key]))
    inside: list[Any] = []
    outside: list[Any] = []
    for item in merged:
        if not isinstance(item, dict):
            raise _bad_arg_type(_MAP, item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        (inside if _hkey(item[merge_key]) in wanted else outside).append(item)
    return inside, outside


def _partition_primitives(merged: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    wanted = {_hkey(v) for v in by}
    inside: list[Any] = []
    outside: list[Any] = []
    for item in merged:
        (inside if _hkey(item) in wanted else outside).append(item)
    return inside, outside


def _apply_set_element_order(result: dict[str, Any], patch: dict[str, Any], key: str, order: Any, meta: PatchMeta) -> str | None:
    """Merge the list named by `$setElementOrder/<field>` and order it; returns the field handled."""
    if not isinstance(order, list):
        raise _bad_arg_type(_SLICE, order)
    field = _extract_key(key, SET_ELEMENT_ORDER_PREFIX)
    found_original, found_patch = field in result, field in patch
    original_list: Any = result.get(field)
    patch_list: Any = patch.get(field)
    if found_original and not isinstance(original_list, list):
        raise _bad_arg_type(_SLICE, original_list)
    if found_patch and not isinstance(patch_list, list):
        raise _bad_arg_type(_SLICE, patch_list)
    field_meta = meta.field(field)
    _patch_strategy(field_meta)
    merge_key = field_meta.merge_key or ""
    _validate_with_order(patch_list, order, merge_key)

    if found_original and not found_patch:
        merged, server_order = original_list, original_list
    elif found_patch and not found_original:
        merged, server_order = _fresh(patch_list), []
    elif found_original and found_patch:
        merged, server_order = _merge_slice_handler(original_list, patch_list, field_meta, False)
    else:
        return None

    if not merge_key and any(isinstance(v, dict) for v in merged):
        # Upstream cannot order maps without a merge key (it panics); keep the merged list.
        result[field] = merged
        return field
    if merge_key:
        patch_items, server_only = _partition_maps(merged, order, merge_key)
    else:
        patch_items, server_only = _partition_primitives(merged, order)
    kind = _element_type(original_list if found_original else None, patch_list if found_patch else None)
    result[field] = _normalize_element_order(patch_items, server_only, order, server_order, merge_key, kind)
    return field


# -- lists ---------------------------------------------------------------------------------

def _merge_slice_handler(original: list[Any], patch: list[Any], field_meta: PatchMeta,
                         is_delete_list: bool) -> tuple[list[Any], list[Any]]:
    """Merge or replace a list field; returns the new list and the live order upstream sees."""
    strategy = _patch_strategy(field_meta)
    if strategy == MERGE_DIRECTIVE or is_delete_list:
        return _merge_slice(original, patch, field_meta, is_delete_list)
    return _fresh(patch), original


def _merge_slice(original: list[Any], patch: list[Any], field_meta: PatchMeta,
                 is_delete_list: bool) -> tuple[list[Any], list[Any]]:
    if not original and not patch:
        return list(original), original
    kind = _element_type(original, patch)
    if kind != _MAP:
        if is_delete_list:
            unwanted = {_hkey(v) for v in patch}
            return [v for v in original if _hkey(v) not in unwanted], original
        merged = list({_hkey(v): v for v in [*original, *patch]}.values())
        patch_items, server_only = _partition_primitives(merged, patch)
        return _normalize_element_order(patch_items, server_only, patch, original, "", kind), original
    merge_key = field_meta.merge_key
    if not merge_key:
        raise _server_error(f"cannot merge lists without merge key for {field_meta.type or 'object'}")
    return _merge_list_of_maps(original, patch, field_meta.items(), merge_key)


class _Deletion:
    """`$patch: delete` elements applied to a live list as upstream applies them, in linear time.

    Upstream deletes each match in place (`append(list[:i], list[i+1:]...)`), so the Go array
    behind the list keeps, past the shortened length, the element that was last each time the
    length dropped; the `$setElementOrder` step later reads those positions. Rather than shift the
    list once per deletion (quadratic), the matches are found through an index of merge-key
    positions and the stale tail is recorded as it forms.
    """

    __slots__ = ("_original", "_positions", "_deleted", "_tail", "_length", "_top")

    def __init__(self, original: list[Any], merge_key: str):
        self._original = original
        self._positions: dict[Any, list[int]] = {}
        for i, item in enumerate(original):
            if merge_key in item:
                self._positions.setdefault(_hkey(item[merge_key]), []).append(i)
        self._deleted = [False] * len(original)
        self._tail: list[Any] = []  # backing[length], backing[length+1], ... in reverse order
        self._length = len(original)
        self._top = len(original) - 1  # highest position still live

    def delete(self, key: Any) -> None:
        """Remove every live element whose merge key is `key` (upstream deleteMatchingEntries)."""
        for i in self._positions.pop(key, ()):
            while self._deleted[self._top]:
                self._top -= 1
            self._tail.append(self._original[self._top])  # what stays at backing[length - 1]
            self._deleted[i] = True
            self._length -= 1

    def backing(self) -> tuple[list[Any], int]:
        """(the Go array after the deletions, the live length): live elements, then the tail."""
        if self._length == len(self._original):
            return list(self._original), self._length
        live = [item for item, gone in zip(self._original, self._deleted) if not gone]
        return live + self._tail[::-1], self._length


def _merge_list_of_maps(original: list[Any], patch: list[Any], item_meta: PatchMeta,
                        merge_key: str) -> tuple[list[Any], list[Any]]:
    """Merge a list of maps on `merge_key`.

    Returns the merged list and the live list as upstream's `$setElementOrder` step sees it
    afterwards: upstream deletes in place and appends into the freed tail of the same Go array,
    so the first appended elements take the positions deleted elements left behind.
    """
    n = len(original)
    entries: list[dict[str, Any]] = []
    replace = False
    deletion = _Deletion(original, merge_key)
    for element in patch:
        if DIRECTIVE_MARKER not in element:
            entries.append(element)
            continue
        directive = element[DIRECTIVE_MARKER]
        if directive == DELETE_DIRECTIVE:
            if merge_key not in element:
                raise _no_merge_key(element, merge_key)
            deletion.delete(_hkey(element[merge_key]))
        elif directive == REPLACE_DIRECTIVE:
            replace = True
        elif directive == MERGE_DIRECTIVE:
            raise _server_error("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, element)
    backing, length = deletion.backing()

    if replace:
        for element in entries:
            if merge_key not in element:
                raise _no_merge_key(element, merge_key)
        return [_fresh(e) for e in entries], backing

    items = backing[:length]
    index: dict[Hashable, int] = {}
    for i, item in enumerate(items):
        if merge_key in item:
            index.setdefault(_hkey(item[merge_key]), i)
    for element in entries:
        if merge_key not in element:
            raise _no_merge_key(element, merge_key)
        k = _hkey(element[merge_key])
        j = index.get(k)
        if j is None:
            index[k] = len(items)
            items.append(_fresh(element))
        else:
            items[j] = _merge_element(items[j], element, item_meta)
    seen_by_order_step = [items[i] if i < len(items) else backing[i] for i in range(n)]

    patch_items, server_only = _partition_maps(items, entries, merge_key)
    merged = _normalize_element_order(patch_items, server_only, entries, backing[:length], merge_key, _MAP)
    return merged, seen_by_order_step


def _normalize_element_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                             server_order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """Order patch items by `patch_order`, live-only items by `server_order`, then interleave.

    A live-only item goes before the next patch item only when both are in the live list and
    the live item comes first there; items new to the live list therefore lead.
    """
    if kind == _MAP:
        key_of = _map_key_of(merge_key)
        for item in (*patch_items, *patch_order, *server_only, *server_order):
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP, item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
    else:
        key_of = _hkey
    patch_pos = _first_positions(patch_order, key_of)
    server_pos = _first_positions(server_order, key_of)
    patch_items = sorted(patch_items, key=lambda it: patch_pos.get(key_of(it), -1))
    server_only = sorted(server_only, key=lambda it: server_pos.get(key_of(it), -1))

    out = []
    i = j = 0
    while i < len(server_only) and j < len(patch_items):
        left = server_pos.get(key_of(server_only[i]))
        right = server_pos.get(key_of(patch_items[j]))
        if left is not None and right is not None and left < right:
            out.append(server_only[i])
            i += 1
        else:
            out.append(patch_items[j])
            j += 1
    out.extend(server_only[i:])
    out.extend(patch_items[j:])
    return out
