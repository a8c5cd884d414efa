"""`x-kubernetes-validations`: CEL rules of a CRD schema, checked on custom objects.

Each rule is evaluated with `self` bound to the value at its schema node and, on updates,
`oldSelf` bound to the old value at the same place (object properties by name, `map` lists by
their keys). A rule that reads `oldSelf` is a transition rule: it runs only when there is an old
value (unless `optionalOldSelf`). A failed rule is a field error at the node's path (plus the
rule's `fieldPath`), of the rule's `reason` (Invalid unless told), with its `message`, its
`messageExpression`'s result, or `failed rule: <rule>`:

    errs = check(new_obj, schema, old_obj)      # [] when every rule holds
    problems = compile_errors(schema, "spec.versions[0].schema.openAPIV3Schema")   # at CRD admission

Rules are compiled once (the Rust `cel` library through `common-expression-language`, with the
Kubernetes library functions of `phalanx.dra.cel`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

import cel as _celrs

from ...dra.cel.library import BASE_FUNCTIONS
from ...dra.cel.syntax import Ident, Index, Node, ParseError, Parser, Select, children
from ...machinery.errors import FieldError
from . import schema as structural

Schema = dict[str, Any]
_MISSING = object()
_REASONS = {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
_RUST_PREFIX = re.compile(r"^Failed to parse expression .*?: (?=ERROR: )", re.S)


class _Compiled:
    __slots__ = ("program", "error", "uses_old")

    def __init__(self, program: Any, error: str | None, uses_old: bool):
        self.program = program
        self.error = error
        self.uses_old = uses_old


@lru_cache(maxsize=2048)
def _compile(expression: str) -> _Compiled:
    uses_old = bool(re.search(r"\boldSelf\b", expression))
    try:
        return _Compiled(_celrs.compile(expression), None, uses_old)
    except Exception as e:  # noqa: BLE001 - the user's expression
        text = _RUST_PREFIX.sub("", str(e), count=1)
        text = "\n".join(" | " + ln[2:] if ln.startswith("| ") else ln for ln in text.split("\n"))
        return _Compiled(None, "compilation failed: " + text, uses_old)


def compile_errors(schema: Schema, path: str) -> list[FieldError]:
    """Rules of `schema` (at the CRD field path `path`) that do not compile."""
    out: list[FieldError] = []
    for node, node_path in _walk_schema(schema, path):
        for i, rule in enumerate(node.get("x-kubernetes-validations") or ()):
            rpath = f"{node_path}.x-kubernetes-validations[{i}]"
            expr = rule.get("rule") if isinstance(rule, dict) else None
            if not expr:
                out.append(FieldError("FieldValueRequired", f"{rpath}.rule", None, "", has_value=False))
                continue
            compiled = _compile(expr)
            error = compiled.error or _undefined_field(expr, node, root=node_path == path)
            if error:
                out.append(FieldError("FieldValueInvalid", f"{rpath}.rule", expr, error))
            reason = rule.get("reason")
            if reason and reason not in _REASONS:
                from ...machinery import errors
                out.append(errors.not_supported(f"{rpath}.reason", reason, sorted(_REASONS)))
    return out


class _Undefined(Exception):
    def __init__(self, pos: int, field: str):
        super().__init__(field)
        self.pos, self.field = pos, field


_ROOT_IMPLICIT = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                  "metadata": {"type": "object", "properties": {"name": {"type": "string"},
                                                                "generateName": {"type": "string"}}}}


def _undefined_field(expr: str, schema: Schema, root: bool) -> str | None:
    """cel-go's type check of field selections on `self`/`oldSelf` against the schema:
    `compilation failed: ERROR: <input>:1:5: undefined field 'foo'` (with the source line)."""
    try:
        ast = Parser(expr).parse()
    except (ParseError, RecursionError):
        return None
    if root:
        schema = {**schema, "properties": {**_ROOT_IMPLICIT, **(schema.get("properties") or {})}}
    try:
        stack: list[Node] = [ast]
        while stack:
            n = stack.pop()
            if isinstance(n, Select):
                _resolve(n, schema)
            stack.extend(children(n))
    except _Undefined as e:
        line_start = expr.rfind("\n", 0, e.pos) + 1
        line_end = expr.find("\n", e.pos)
        text = expr[line_start:line_end if line_end != -1 else len(expr)]
        col = e.pos - line_start + 1
        line = expr.count("\n", 0, e.pos) + 1
        return (f"compilation failed: ERROR: <input>:{line}:{col}: undefined field '{e.field}'\n | {text}\n"
                f" | {'.' * (col - 1)}^")
    return None


def _resolve(node: Node, schema: Schema) -> Schema | None:
    """The schema `node` reads (None: dynamic or not rooted at self); raises _Undefined."""
    if isinstance(node, Ident):
        return schema if node.name in ("self", "oldSelf") else None
    if isinstance(node, Select):
        base = _resolve(node.operand, schema)
        return None if base is None else _select(base, node)
    if isinstance(node, Index):
        base = _resolve(node.operand, schema)
        if base is None:
            return None
        items, add = base.get("items"), base.get("additionalProperties")
        return items if isinstance(items, dict) else add if isinstance(add, dict) else None
    return None


def _select(base: Schema, node: Select) -> Schema | None:
    if base.get("x-kubernetes-preserve-unknown-fields"):
        return None
    props = base.get("properties") or {}
    if node.field in props:
        return props[node.field]
    add = base.get("additionalProperties")
    if isinstance(add, dict):
        return add
    if base.get("type") == "object" and props and not node.optional:
        raise _Undefined(max(node.pos - 1, 0), node.field)
    return None


def _walk_schema(schema: Schema, path: str) -> Iterator[tuple[Schema, str]]:
    yield schema, path
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield from _walk_schema(sub, f"{path}.properties[{key}]")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk_schema(items, f"{path}.items")
    add = schema.get("additionalProperties")
    if isinstance(add, dict):
        yield from _walk_schema(add, f"{path}.additionalProperties")


def check(obj: dict, schema: Schema, old: dict | None = None) -> list[FieldError]:
    """Field errors of every rule under `schema` that `obj` breaks (apiVersion/kind/metadata
    take part as the object has them)."""
    out: list[FieldError] = []
    _check(obj, schema, old if old is not None else _MISSING, "", out)
    return out


def _check(value: Any, schema: Schema, old: Any, path: str, out: list[FieldError]) -> None:
    if value is None:
        return
    for rule in schema.get("x-kubernetes-validations") or ():
        err = _evaluate(rule, value, old, schema, path)
        if err is not None:
            out.append(err)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        add = schema.get("additionalProperties")
        for key, v in value.items():
            sub = props.get(key, add if isinstance(add, dict) else None)
            if isinstance(sub, dict):
                o = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                _check(v, sub, o, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            olds = _old_items(value, old, schema)
            for i, v in enumerate(value):
                _check(v, items, olds[i], f"{path}[{i}]", out)


def _old_items(value: list, old: Any, schema: Schema) -> list[Any]:
    """The old item each new item is compared with: `map` lists correlate by key."""
    none: list[Any] = [_MISSING] * len(value)
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return none
    keys = schema.get("x-kubernetes-list-map-keys") or []
    by_key = {tuple(repr(o.get(k)) for k in keys): o for o in old if isinstance(o, dict)}
    return [by_key.get(tuple(repr(v.get(k)) for k in keys), _MISSING) if isinstance(v, dict) else _MISSING
            for v in value]


def _evaluate(rule: dict, value: Any, old: Any, schema: Schema, path: str) -> FieldError | None:
    expr = rule.get("rule") or ""
    compiled = _compile(expr)
    if compiled.error or compiled.program is None:
        return None  # refused when the CRD was written
    if compiled.uses_old and old is _MISSING and not rule.get("optionalOldSelf"):
        return None
    variables: dict[str, Any] = {"self": value}
    if old is not _MISSING:
        variables["oldSelf"] = old
    fpath = _field_path(path, rule.get("fieldPath") or "")
    stype = structural.type_of(schema)
    try:
        result = compiled.program.execute(_celrs.Context(variables=variables, functions=BASE_FUNCTIONS))
    except Exception as e:  # noqa: BLE001 - a runtime error is the object's problem
        detail = f"{_runtime_text(e)} evaluating rule: {_rule_text(rule)}"
        return FieldError("FieldValueInvalid", fpath, stype, detail)
    if result is True:
        return None
    reason = rule.get("reason") or "FieldValueInvalid"
    message = _message(rule, variables)
    if reason == "FieldValueInvalid":
        return FieldError(reason, fpath, stype, message)
    return FieldError(reason, fpath, None, message, has_value=False)


def _runtime_text(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"no such key: {e.args[0] if e.args else ''}"
    return str(e)


def _rule_text(rule: dict) -> str:
    return str(rule.get("message") or "failed rule: " + str(rule.get("rule", "")).strip())


def _message(rule: dict, variables: dict[str, Any]) -> str:
    expr = rule.get("messageExpression")
    if expr:
        compiled = _compile(expr)
        if compiled.program is not None:
            try:
                text = compiled.program.execute(_celrs.Context(variables=variables, functions=BASE_FUNCTIONS))
            except Exception:  # noqa: BLE001 - upstream falls back to the static message
                text = None
            if isinstance(text, str) and text.strip():
                return text
    return _rule_text(rule)


def _field_path(path: str, field_path: str) -> str:
    """The rule's path plus its `fieldPath` (`.spec.x`, `.items['k']`), as a field path."""
    if not field_path:
        return path
    rel = re.sub(r"\['([^']*)'\]", r".\1", field_path)
    return (path + rel) if path else rel.lstrip(".")
