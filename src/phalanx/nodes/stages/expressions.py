"""The expressions of KWOK Stages: jq and CEL selectors, and values read by jq or CEL.

A selector requirement (`spec.selector.matchExpressions[]`) takes one of KWOK's three forms:

    {key: '.status.phase', operator: In, values: [Running]}             # the first form (jq)
    {jq: {key: '.status.phase', operator: In, values: [Running]}}       # the same, current form
    {cel: {expression: "has(self.metadata.deletionTimestamp)"}}         # true selects the object

and a value (`weightFrom`, `durationFrom`, `jitterDurationFrom`) one of

    {expressionFrom: '.metadata.annotations["delay"]'}                  # jq, the first form
    {jq: {expression: '.metadata.annotations["delay"]'}}
    {cel: {expression: "self.metadata.annotations['delay']"}}

`parse_requirement` and `parse_value` return objects with `matches(obj)` / `first(obj)`;
`ExpressionError` names the field at fault. jq runs on the `jq` package (the bindings of jq
itself), CEL on the `cel` package (the Rust `cel` crate) that phalanx's DRA selectors use, with the
object as `self`. A jq key's results match `In` when one of them (a string, or a bool or integer in
its string form) is among `values`; `Exists` when one result is not null; an expression that fails
on an object selects nothing and reads as no value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import cel
import jq

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class ExpressionError(ValueError):
    """An expression that cannot be compiled, or a requirement of the wrong shape."""


@dataclass
class Expression:
    """A jq requirement: `key`'s results related to `values` by `operator`."""

    key: str
    operator: str
    values: list[str]
    program: Any

    def matches(self, obj: dict) -> bool:
        try:
            results = self.program.input_value(obj).all()
        except ValueError:
            results = []
        present = [r for r in results if r is not None]
        if self.operator == "Exists":
            return bool(present)
        if self.operator == "DoesNotExist":
            return not present
        hit = any(_as_text(r) in self.values for r in present)
        return hit if self.operator == "In" else not hit


@dataclass
class CELRequirement:
    """A CEL requirement: the object is selected when `expression` is true for `self`."""

    expression: str
    program: Any

    def matches(self, obj: dict) -> bool:
        return _run_cel(self.program, obj) is True


@dataclass
class JQValue:
    program: Any

    def first(self, obj: dict) -> Any:
        try:
            out = self.program.input_value(obj).all()
        except ValueError:
            return None
        return out[0] if out else None


@dataclass
class CELValue:
    program: Any

    def first(self, obj: dict) -> Any:
        v = _run_cel(self.program, obj)
        if isinstance(v, datetime):
            return v.isoformat()
        if isinstance(v, timedelta):
            return f"{v.total_seconds()}s"
        return v


def _run_cel(program: Any, obj: dict) -> Any:
    try:
        return program.execute(cel.Context(variables={"self": obj}))
    except Exception:  # noqa: BLE001 - a missing field, a type error: no value, as KWOK treats it
        return None


def _as_text(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return v if isinstance(v, str) else None


def compile_jq(expr: Any, where: str) -> Any:
    if not isinstance(expr, str) or not expr:
        raise ExpressionError(f"{where}: a jq expression is required")
    try:
        return jq.compile(expr)
    except ValueError as e:
        raise ExpressionError(f"{where}: invalid jq expression {expr!r}: {e}") from None


def compile_cel(expr: Any, where: str) -> Any:
    if not isinstance(expr, str) or not expr:
        raise ExpressionError(f"{where}: Required value: a CEL expression is required")
    try:
        return cel.compile(expr)
    except Exception as e:  # noqa: BLE001 - the library raises its own parse errors
        raise ExpressionError(f"{where}: invalid CEL expression {expr!r}: {e}") from None


def parse_requirement(e: Any, at: str) -> Expression | CELRequirement:
    """One item of `matchExpressions` in any of KWOK's forms."""
    if not isinstance(e, dict):
        raise ExpressionError(f"{at}: must be an object")
    if "cel" in e:
        src = e["cel"] if isinstance(e["cel"], dict) else {}
        expr = src.get("expression")
        return CELRequirement(str(expr), compile_cel(expr, f"{at}.cel.expression"))
    if "jq" in e:
        if not isinstance(e["jq"], dict):
            raise ExpressionError(f"{at}.jq: must be an object")
        e, at = e["jq"], f"{at}.jq"
    op = e.get("operator")
    if op not in OPERATORS:
        raise ExpressionError(f"{at}.operator: Unsupported value: {op!r}: supported values: "
                              + ", ".join(f'"{o}"' for o in OPERATORS))
    values = [str(v) for v in e.get("values") or []]
    if op in ("In", "NotIn") and not values:
        raise ExpressionError(f"{at}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
    return Expression(e.get("key", ""), op, values, compile_jq(e.get("key"), f"{at}.key"))


def parse_value(src: Any, where: str) -> JQValue | CELValue | None:
    """An `ExpressionFrom` (`weightFrom`, `durationFrom`, ...) in any of KWOK's forms; None when absent."""
    if src is None:
        return None
    if not isinstance(src, dict) or not ({"expressionFrom", "jq", "cel"} & src.keys()):
        raise ExpressionError(f"{where}.expressionFrom: Required value")
    if "cel" in src:
        expr = (src["cel"] or {}).get("expression") if isinstance(src["cel"], dict) else None
        return CELValue(compile_cel(expr, f"{where}.cel.expression"))
    if "jq" in src:
        expr = (src["jq"] or {}).get("expression") if isinstance(src["jq"], dict) else None
        return JQValue(compile_jq(expr, f"{where}.jq.expression"))
    return JQValue(compile_jq(src["expressionFrom"], f"{where}.expressionFrom"))
