"""Structural schemas of custom resources: validation, pruning and defaulting of objects.

A CRD version's `schema.openAPIV3Schema` is a structural schema (a type at every level,
`properties`, `items`, `additionalProperties`, value validations). Custom objects go through
three steps, in upstream's order:

    prune(obj, schema)       # drop fields the schema does not declare (returns their paths)
    default(obj, schema)     # fill in `default:` values; non-nullable nulls are dropped first
    validate(obj, schema)    # FieldErrors with upstream's paths and messages

`x-kubernetes-preserve-unknown-fields: true` keeps undeclared fields under a node;
`x-kubernetes-embedded-resource: true` keeps `apiVersion`, `kind` and `metadata` of an embedded
object; `x-kubernetes-int-or-string` accepts integers and strings. The top level's `apiVersion`,
`kind` and `metadata` are the API server's (not pruned or validated here).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from ...machinery import errors
from ...machinery.errors import FieldError
from ...machinery.meta import deep_copy
from ...machinery.strictyaml import type_name

Schema = dict[str, Any]
_TOP_LEVEL = ("apiVersion", "kind", "metadata")
_EMBEDDED = ("apiVersion", "kind", "metadata")


def _child_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# -- pruning --------------------------------------------------------------------------------------
def prune(obj: dict, schema: Schema) -> list[str]:
    """Remove from `obj` every field `schema` does not declare; the removed paths, in order."""
    out: list[str] = []
    props = schema.get("properties") or {}
    for key in list(obj):
        if key in _TOP_LEVEL:
            continue
        sub = props.get(key)
        if sub is None:
            if not schema.get("x-kubernetes-preserve-unknown-fields") and not _additional(schema):
                out.append(key)
                del obj[key]
            elif _additional(schema):
                _prune_value(obj[key], _additional(schema) or {}, key, out)
            continue
        _prune_value(obj[key], sub, key, out)
    return out


def _additional(schema: Schema) -> Schema | None:
    add = schema.get("additionalProperties")
    if isinstance(add, dict):
        return add
    if add is True:
        return {"x-kubernetes-preserve-unknown-fields": True}
    return None


def _prune_value(value: Any, schema: Schema, path: str, out: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(value, schema, path, out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                _prune_value(v, items, f"{path}[{i}]", out)


def _prune_object(value: dict, schema: Schema, path: str, out: list[str]) -> None:
    props = schema.get("properties") or {}
    add = _additional(schema)
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    for key in list(value):
        sub = props.get(key)
        if sub is None:
            sub = add
        if sub is None:
            if preserve or (embedded and key in _EMBEDDED):
                continue
            out.append(_child_path(path, key))
            del value[key]
            continue
        _prune_value(value[key], sub, _child_path(path, key), out)


# -- defaulting -----------------------------------------------------------------------------------
def default(obj: dict, schema: Schema) -> None:
    """Apply `default:` values under `obj` (the top-level `schema`), as upstream's structural
    defaulting does: missing fields with a default get a copy of it, nulls of non-nullable fields
    are replaced by their default or dropped."""
    _default_object(obj, schema, top=True)


def _default_value(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        _default_object(value, schema, top=False)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for v in value:
                _default_value(v, items)


def _default_object(value: dict, schema: Schema, top: bool) -> None:
    props = schema.get("properties") or {}
    for key, sub in props.items():
        if top and key in _TOP_LEVEL:
            continue
        if key in value and value[key] is None and not sub.get("nullable"):
            del value[key]
        if key not in value and "default" in sub:
            value[key] = deep_copy(sub["default"])
    add = _additional(schema)
    for key, v in list(value.items()):
        if top and key in _TOP_LEVEL:
            continue
        sub = props.get(key, add)
        if sub is not None and v is not None:
            _default_value(v, sub)


# -- validation -----------------------------------------------------------------------------------
def _type_ok(value: Any, schema: Schema) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    t = schema.get("type")
    if not t:
        return True
    actual = type_name(value, json=True)
    if value is None:
        return bool(schema.get("nullable"))
    if t == "number":
        return actual in ("number", "integer")
    if t == "integer" and isinstance(value, float) and value.is_integer():
        return True
    return actual == t


def validate(obj: dict, schema: Schema) -> list[FieldError]:
    """Field errors of `obj` against its version's schema (apiVersion, kind and metadata excluded)."""
    body = {k: v for k, v in obj.items() if k not in _TOP_LEVEL}
    out: list[FieldError] = []
    _validate_object_fields(body, schema, "", out)
    return out


def validate_value(value: Any, schema: Schema, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    _validate(value, schema, path, out)
    return out


def _validate(value: Any, schema: Schema, path: str, out: list[FieldError]) -> None:
    if not _type_ok(value, schema):
        t = schema.get("type") or "integer or string"
        out.append(FieldError("FieldValueTypeInvalid", path, value,
                              f"{path} in body must be of type {t}: {errors.go_repr(type_name(value, json=True))}"))
        return
    if value is None:
        return
    if "enum" in schema and value not in schema["enum"]:
        out.append(errors.not_supported(path, value, schema["enum"]))
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        _validate_number(value, schema, path, out)
    elif isinstance(value, str):
        _validate_string(value, schema, path, out)
    elif isinstance(value, list):
        _validate_array(value, schema, path, out)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, out)


def _validate_number(value: float, schema: Schema, path: str, out: list[FieldError]) -> None:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None:
        if schema.get("exclusiveMinimum") and value <= lo:
            out.append(errors.invalid(path, value, f"{path} in body should be greater than {_num(lo)}"))
        elif value < lo:
            out.append(errors.invalid(path, value, f"{path} in body should be greater than or equal to {_num(lo)}"))
    if hi is not None:
        if schema.get("exclusiveMaximum") and value >= hi:
            out.append(errors.invalid(path, value, f"{path} in body should be less than {_num(hi)}"))
        elif value > hi:
            out.append(errors.invalid(path, value, f"{path} in body should be less than or equal to {_num(hi)}"))
    mult = schema.get("multipleOf")
    if mult and (value / mult) != int(value / mult):
        out.append(errors.invalid(path, value, f"{path} in body should be a multiple of {_num(mult)}"))


def _num(n: float) -> str:
    return str(int(n)) if isinstance(n, float) and n.is_integer() else str(n)


@lru_cache(maxsize=512)
def _pattern(p: str) -> re.Pattern[str]:
    return re.compile(p)


def _validate_string(value: str, schema: Schema, path: str, out: list[FieldError]) -> None:
    max_len, min_len = schema.get("maxLength"), schema.get("minLength")
    if max_len is not None and len(value) > max_len:
        out.append(errors.too_long(path, max_len))
    if min_len is not None and len(value) < min_len:
        out.append(errors.invalid(path, value, f"{path} in body should be at least {min_len} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None and not _pattern(pattern).search(value):
        out.append(errors.invalid(path, value, f"{path} in body should match '{pattern}'"))


def _validate_array(value: list, schema: Schema, path: str, out: list[FieldError]) -> None:
    max_items, min_items = schema.get("maxItems"), schema.get("minItems")
    if max_items is not None and len(value) > max_items:
        out.append(errors.too_many(path, len(value), max_items))
    if min_items is not None and len(value) < min_items:
        out.append(errors.invalid(path, len(value), f"{path} in body should have at least {min_items} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for i, v in enumerate(value):
            _validate(v, items, f"{path}[{i}]", out)
    out.extend(_list_type_errors(value, schema, path))


def _validate_object(value: dict, schema: Schema, path: str, out: list[FieldError]) -> None:
    max_p, min_p = schema.get("maxProperties"), schema.get("minProperties")
    if max_p is not None and len(value) > max_p:
        out.append(errors.too_many(path, len(value), max_p))
    if min_p is not None and len(value) < min_p:
        out.append(errors.invalid(path, len(value), f"{path} in body should have at least {min_p} properties"))
    _validate_object_fields(value, schema, path, out)


def _validate_object_fields(value: dict, schema: Schema, path: str, out: list[FieldError]) -> None:
    props = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            out.append(errors.required(_child_path(path, name)))
    add = _additional(schema)
    for key, v in value.items():
        sub = props.get(key, add)
        if sub is not None:
            _validate(v, sub, _child_path(path, key), out)


# -- list types (x-kubernetes-list-type) ----------------------------------------------------------
def _go_map(item: dict, keys: list[str]) -> str:
    parts = ", ".join(f'"{k}":{errors.go_repr(item.get(k))}' for k in keys if k in item)
    return "map[string]interface {}{" + parts + "}"


def _list_type_errors(value: list, schema: Schema, path: str) -> Iterator[FieldError]:
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for i, v in enumerate(value):
            if v in seen:
                yield errors.duplicate(f"{path}[{i}]", v)
            else:
                seen.append(v)
    elif list_type == "map":
        keys = list(schema.get("x-kubernetes-list-map-keys") or [])
        seen_keys: set[tuple] = set()
        for i, v in enumerate(value):
            if not isinstance(v, dict):
                continue
            k = tuple(repr(v.get(key)) for key in keys)
            if k in seen_keys:
                yield FieldError("FieldValueDuplicate", f"{path}[{i}]", None, _go_map(v, keys), has_value=False)
            else:
                seen_keys.add(k)


def type_of(schema: Schema) -> str:
    """The schema's type as a CEL rule's error names it ("object", "integer", ...)."""
    return str(schema.get("type") or ("integer-or-string" if schema.get("x-kubernetes-int-or-string") else "object"))
