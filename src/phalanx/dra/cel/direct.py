"""A direct evaluator for the common selectors.

Building a Rust-side context costs ~40 us per device; most selectors (driver, attribute and
capacity comparisons, quantity/semver calls) are evaluated faster straight from the syntax tree on
the same encoded values. Anything outside that subset, or any value shape the evaluator does not
model, raises Fallback and the CEL library evaluates the expression instead, so semantics stay
the library's. Error absorption of && and || follows CEL (false && error == false).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .environment import CELFeatures
from .library import (MAX_INT64, FunctionFailed, fn_add, fn_as_approximate_float, fn_as_integer, fn_compare_to,
                      fn_includes, fn_is_greater_than, fn_is_integer, fn_is_less_than, fn_is_quantity, fn_is_semver,
                      fn_major, fn_minor, fn_patch, fn_quantity, fn_semver, fn_sign, fn_sub)
from .analysis import string_literal_value
from .syntax import Binary, Call, Cond, Ident, Index, Lit, Node, Select, Unary, is_device_map
from .values import cel_equal

class Fallback(Exception):
    """The direct evaluator leaves this evaluation to the CEL library."""


class EvalError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


Evaluator = Callable[[dict[str, Any]], Any]
_EMPTY_MAP: dict[str, Any] = {}
_DIRECT_MEMBER_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "compareTo": fn_compare_to, "isGreaterThan": fn_is_greater_than, "isLessThan": fn_is_less_than,
    "major": fn_major, "minor": fn_minor, "patch": fn_patch, "sign": fn_sign, "isInteger": fn_is_integer,
    "asInteger": fn_as_integer, "asApproximateFloat": fn_as_approximate_float, "add": fn_add, "sub": fn_sub,
}
_DIRECT_GLOBAL_FUNCTIONS: dict[str, Callable[..., Any]] = {"quantity": fn_quantity, "isQuantity": fn_is_quantity, "semver": fn_semver,
                            "isSemver": fn_is_semver}
_STRING_METHODS: dict[str, Callable[[str, str], bool]] = {"startsWith": str.startswith, "endsWith": str.endswith, "contains": str.__contains__}


def _is_number(v: Any) -> bool:
    return (type(v) is int or type(v) is float)


def _call_library(fn: Callable[..., Any], args: list[Any]) -> Any:
    try:
        return fn(*args)
    except FunctionFailed as e:
        raise EvalError(str(e)) from None


def direct_evaluator(node: Node, features: CELFeatures) -> Optional[Evaluator]:
    """A closure evaluating `node` on the `device` fields dict, or None outside the subset."""
    builder = _BUILDERS.get(type(node))
    return builder(node, features) if builder is not None else None


def _literal_value(node: Lit) -> tuple[bool, Any]:
    """(True, value) for a literal the evaluator models, else (False, None)."""
    if node.kind == "bool":
        return True, node.text == "true"
    if node.kind == "null":
        return True, None
    if node.kind == "int":
        value = int(node.text, 0) if node.text.lower().startswith("0x") else int(node.text)
        return value <= MAX_INT64, value
    if node.kind == "double":
        return True, float(node.text)
    if node.kind == "string":
        text = string_literal_value(node)
        return text is not None, text
    return False, None


def _direct_lit(node: Lit, features: CELFeatures) -> Optional[Evaluator]:
    modelled, value = _literal_value(node)
    if not modelled:
        return None

    def constant(d: dict[str, Any], v: Any = value) -> Any:
        return v
    return constant


def _direct_ident(node: Ident, features: CELFeatures) -> Optional[Evaluator]:
    return (lambda d: d) if node.name == "device" else None


def _direct_select(node: Select, features: CELFeatures) -> Optional[Evaluator]:
    if node.optional:
        return None
    operand = direct_evaluator(node.operand, features)
    if operand is None:
        return None
    name = node.field

    def select(d: dict[str, Any]) -> Any:
        v = operand(d)
        if type(v) is dict:
            if name in v:
                return v[name]
            raise EvalError(f"no such key: {name}")
        raise Fallback
    return select


def _direct_index(node: Index, features: CELFeatures) -> Optional[Evaluator]:
    if node.optional:
        return None
    operand, index = direct_evaluator(node.operand, features), direct_evaluator(node.index, features)
    if operand is None or index is None:
        return None
    if is_device_map(node.operand, frozenset()):
        def domain(d: dict[str, Any]) -> Any:
            v, k = operand(d), index(d)
            if type(k) is not str:
                raise Fallback
            return v.get(k, _EMPTY_MAP)
        return domain

    def lookup(d: dict[str, Any]) -> Any:
        v, k = operand(d), index(d)
        if type(v) is dict and type(k) is str:
            if k in v:
                return v[k]
            raise EvalError(f"no such key: {k}")
        raise Fallback
    return lookup


def _direct_unary(node: Unary, features: CELFeatures) -> Optional[Evaluator]:
    operand = direct_evaluator(node.operand, features)
    if operand is None or node.op != "!":
        return None

    def negate(d: dict[str, Any]) -> Any:
        v = operand(d)
        if v is True or v is False:
            return not v
        raise Fallback
    return negate


def _direct_binary_node(node: Binary, features: CELFeatures) -> Optional[Evaluator]:
    left, right = direct_evaluator(node.left, features), direct_evaluator(node.right, features)
    if left is None or right is None:
        return None
    return _direct_binary(node.op, left, right)


def _direct_cond(node: Cond, features: CELFeatures) -> Optional[Evaluator]:
    cond, then, other = (direct_evaluator(node.cond, features), direct_evaluator(node.then, features),
                         direct_evaluator(node.other, features))
    if cond is None or then is None or other is None:
        return None

    def choose(d: dict[str, Any]) -> Any:
        c = cond(d)
        if c is True:
            return then(d)
        if c is False:
            return other(d)
        raise Fallback
    return choose


def _direct_binary(op: str, left: Evaluator, right: Evaluator) -> Optional[Evaluator]:
    if op in ("&&", "||"):
        decisive = op == "||"  # the value that decides: true for ||, false for &&

        def logical(d: dict[str, Any]) -> Any:
            error: Optional[EvalError] = None
            try:
                a = left(d)
            except EvalError as e:
                a, error = None, e
            if a is decisive:
                return decisive
            if error is None and a is not (not decisive):
                raise Fallback
            try:
                b = right(d)
            except EvalError as e:
                if error is None:
                    error = e
                b = None
            else:
                if b is decisive:
                    return decisive
                if b is not (not decisive):
                    raise Fallback
            if error is not None:
                raise error
            return not decisive
        return logical
    if op in ("==", "!="):
        negate = op == "!="

        def equal(d: dict[str, Any]) -> Any:
            a, b = left(d), right(d)
            ta, tb = type(a), type(b)
            if ta is tb or (_is_number(a) and _is_number(b)):
                return cel_equal(a, b) != negate
            raise Fallback
        return equal
    if op in ("<", "<=", ">", ">="):
        def order(d: dict[str, Any]) -> Any:
            a, b = left(d), right(d)
            if (_is_number(a) and _is_number(b)) or (type(a) is str and type(b) is str):
                if op == "<":
                    return a < b
                if op == "<=":
                    return a <= b
                if op == ">":
                    return a > b
                return a >= b
            raise Fallback
        return order
    if op == "in":
        def member(d: dict[str, Any]) -> Any:
            a, b = left(d), right(d)
            if type(b) is dict and type(a) is str:
                return a in b
            raise Fallback
        return member
    return None


def _direct_call(node: Call, features: CELFeatures) -> Optional[Evaluator]:
    if node.target is None:
        return _direct_global_call(node, features)
    if isinstance(node.target, Ident) and node.target.name in ("cel", "optional"):
        return None
    return _direct_member_call(node, features)


def _direct_args(node: Call, features: CELFeatures) -> Optional[list[Evaluator]]:
    args = [direct_evaluator(a, features) for a in node.args]
    return None if any(a is None for a in args) else args  # type: ignore[return-value]


def _direct_global_call(node: Call, features: CELFeatures) -> Optional[Evaluator]:
    if node.name == "has" and len(node.args) == 1 and isinstance(node.args[0], Select) \
            and not node.args[0].optional:
        return _direct_has(node.args[0], features)
    fn = _DIRECT_GLOBAL_FUNCTIONS.get(node.name)
    if fn is None and node.name != "size":
        return None
    args = _direct_args(node, features)
    if args is None:
        return None
    if fn is None:  # size()
        return _direct_size(args[0]) if len(args) == 1 else None
    return lambda d: _call_library(fn, [a(d) for a in args])


def _direct_has(field: Select, features: CELFeatures) -> Optional[Evaluator]:
    operand = direct_evaluator(field.operand, features)
    if operand is None:
        return None
    name = field.field

    def has(d: dict[str, Any]) -> Any:
        v = operand(d)
        if type(v) is dict:
            return name in v
        raise Fallback
    return has


def _direct_size(only: Evaluator) -> Evaluator:
    def size(d: dict[str, Any]) -> Any:
        v = only(d)
        if type(v) in (str, list, dict):
            return len(v)
        raise Fallback
    return size


def _direct_member_call(node: Call, features: CELFeatures) -> Optional[Evaluator]:
    target = direct_evaluator(node.target, features)  # type: ignore[arg-type]
    args = _direct_args(node, features)
    if target is None or args is None:
        return None
    method = _STRING_METHODS.get(node.name)
    if method is not None:
        return _direct_string_method(method, target, args[0]) if len(args) == 1 else None
    fn: Optional[Callable[..., Any]] = _DIRECT_MEMBER_FUNCTIONS.get(node.name)
    if fn is None and node.name == "includes" and features.list_type_attributes:
        fn = fn_includes
    if fn is None:
        return None
    call = fn
    return lambda d: _call_library(call, [target(d)] + [a(d) for a in args])


def _direct_string_method(method: Callable[[str, str], bool], target: Evaluator, arg: Evaluator) -> Evaluator:
    def string_method(d: dict[str, Any]) -> Any:
        t, a = target(d), arg(d)
        if type(t) is str and type(a) is str:
            return method(t, a)
        raise Fallback
    return string_method


_BUILDERS: dict[type, Callable[[Any, CELFeatures], Optional[Evaluator]]] = {
    Lit: _direct_lit, Ident: _direct_ident, Select: _direct_select, Index: _direct_index, Unary: _direct_unary,
    Binary: _direct_binary_node, Cond: _direct_cond, Call: _direct_call,
}
