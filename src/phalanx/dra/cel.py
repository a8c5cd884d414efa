"""CEL for DRA device selectors: Kubernetes' `device` environment over the Rust `cel` library.

Selectors (`DeviceClass.spec.selectors[].cel.expression`, `requests[].exactly.selectors[]`) are
compiled once and evaluated once per device; both results are cached by the callers:

    features = CELFeatures.from_gates(gates)
    selector = SELECTORS.get("device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'", features)
    if selector.error:                       # CELCompileError: upstream's `compilation failed: ...`
        ...
    device = CELDevice("gpu.example.com", slice_device_dict, features)   # converted once per device
    selector.matches(device)                 # True/False, or raises CELRuntimeError

The `device` variable is upstream's `kubernetes.DRADevice`: `driver`, `attributes` (domain -> name
-> value; names without a domain live under the driver's name), `capacity` (domain -> name ->
quantity) and, with DRAConsumableCapacity, `allowMultipleAllocations`. An unknown domain reads as
an empty map; an unknown name fails with `no such key: <name>`. Available functions: the CEL
standard library, `quantity()`/`isQuantity()` with `compareTo`, `isGreaterThan`, `isLessThan`,
`add`, `sub`, `asInteger`, `asApproximateFloat`, `isInteger`, `sign`; `semver()`/`isSemver()`
(optionally normalizing) with `compareTo`, `isGreaterThan`, `isLessThan`, `major`, `minor`,
`patch`; `cel.bind`; optional values (`x.?f`, `m[?k]`, `optional.of/none`, `orValue`,
`hasValue`, `value`); Kubernetes' list library (`sum`, `min`, `max`, `isSorted`, `indexOf`,
`lastIndexOf`), regex `find`/`findAll`, the strings extension (`charAt`, `indexOf`,
`lowerAscii`, `replace`, `split`, `substring`, `trim`, `upperAscii`, `join`), `sets.*`; and
`includes` (scalar or list attribute) when DRAListTypeAttributes is on, which also exposes list
attributes (`ints`, `bools`, `strings`, `versions`) as CEL lists.

How it is built on a library that cannot carry opaque Python objects:
- Encoding. A quantity is the map `{"\\ue000quantity": "<numerator>/<denominator>"}` of its exact
  value (a normalized fraction), a semver the map `{"\\ue000semver": "<major.minor.patch[-pre]>"}`
  (build metadata dropped: it never takes part in precedence). Equal values therefore have equal
  encodings, so `==` is exact (`quantity("1Gi") == quantity("1024Mi")`, `quantity("0.5") ==
  quantity("500m")`), while `<`, `+` and `string()` on them fail at runtime as they fail
  (at compile time) upstream. Comparisons go through `compareTo` & co., which decode the maps.
- Rewriting. Expressions are parsed by a small CEL parser of our own and printed back with three
  rewrites the Rust library needs: `cel.bind(x, init, body)` -> `[init].map(x, body)[0]`;
  `a.?f` / `m[?k]` -> a conditional over `has()` / `in` and `optional.of/none`; and
  `device.attributes[d]` / `device.capacity[d]` -> `(d in ... ? ...[d] : {})` (unknown domain ->
  empty map). The same parse gives compile-time checks upstream does with its type checker:
  undeclared identifiers and functions (`undeclared reference to 'x' (in container '')`),
  unknown `device` fields (`undefined field 'x'`), and a result whose type is known not to be
  bool (`must evaluate to bool or the unknown type, not int`). A result that turns out not to be
  a bool at runtime fails with `CEL result of type string could not be converted to bool`.
- Limits. Expressions longer than 10 Ki characters do not compile. The cost limit (upstream:
  1,000,000 per evaluation) is enforced as a worst-case static estimate: comprehensions multiply
  their body cost by the size of their range (list literal length, 32 for attribute/capacity maps,
  48 otherwise); a selector whose estimate exceeds the limit fails each evaluation with upstream's
  `operation cancelled: actual cost limit exceeded`, since the Rust evaluator cannot be stopped
  half-way. `CompiledSelector.max_cost` exposes the estimate.
- Speed. A device's CEL context is built once per device and per set of `device` fields a selector
  reads (`device.driver == "x"` needs only the driver), and `device.driver == "<literal>"` is
  answered without CEL at all.

Errors are the user's. `CELCompileError` / `CELRuntimeError` carry the expression and upstream's
message (`compilation failed: ERROR: <input>:1:4: Syntax error: ...`, `no such key: model`); the
allocator wraps them into `class gpu: selector #0 on device ...: CEL runtime error: ...`.
`check_expression()` is the API-validation hook (`phalanx.api.resource.CEL_EXPRESSION_CHECK`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional

import cel as _celrs  # PyPI common-expression-language (Rust `cel` crate via PyO3)
from cel import stdlib as _celstd

from ..machinery.quantity import parse_quantity
from . import semver as _semver

MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength
COST_LIMIT = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_ATTRIBUTE_VALUES = 48  # ResourceSliceMaxAttributeValuesPerDevice

QUANTITY_KEY = "\ue000quantity"
SEMVER_KEY = "\ue000semver"

ERROR_INVALID = "Invalid"
ERROR_REQUIRED = "Required"
ERROR_INTERNAL = "InternalError"
ERROR_FORBIDDEN = "Forbidden"  # admission only: the cost estimate is over the limit

NO_SUCH_KEY_HINT = ". Consider using CEL optional chaining (?), has() macro, or orValue() for optional fields"


# -- errors ----------------------------------------------------------------------------------------

class CELError(Exception):
    """A selector failed; `expression` is the selector, `message` upstream's text."""

    def __init__(self, expression: str, message: str):
        super().__init__(message)
        self.expression = expression
        self.message = message


class CELCompileError(CELError):
    """The expression does not compile. `error_type` is upstream's cel.Error type."""

    def __init__(self, expression: str, message: str, error_type: str = ERROR_INVALID):
        super().__init__(expression, message)
        self.error_type = error_type


class CELRuntimeError(CELError):
    """Evaluating the expression for one device failed."""


def enhance_runtime_error(message: str) -> str:
    """Upstream's EnhanceRuntimeError: a hint for `no such key` errors."""
    if message.startswith("no such key:"):
        return message + NO_SUCH_KEY_HINT
    return message


class CELFeatures(NamedTuple):
    """The feature gates that change the CEL environment (a tuple: cheap to hash in cache keys)."""

    consumable_capacity: bool = True  # DRAConsumableCapacity: device.allowMultipleAllocations
    list_type_attributes: bool = False  # DRAListTypeAttributes: list attributes, includes()

    @classmethod
    def from_gates(cls, gates: Any) -> "CELFeatures":
        def on(name: str, default: bool) -> bool:
            if gates is None:
                return default
            if isinstance(gates, Mapping):
                return bool(gates.get(name, default))
            try:
                return bool(gates.enabled(name))
            except Exception:
                return default
        return cls(on("DRAConsumableCapacity", True), on("DRAListTypeAttributes", False))


# -- value encoding --------------------------------------------------------------------------------

def encode_quantity(value: Fraction) -> dict:
    return {QUANTITY_KEY: f"{value.numerator}/{value.denominator}"}


def encode_semver(version: _semver.Semver) -> dict:
    return {SEMVER_KEY: _semver.canonical(version)}


@lru_cache(maxsize=16384)
def _decode_fraction(text: str) -> Fraction:
    num, _, den = text.partition("/")
    return Fraction(int(num), int(den))


def _is_quantity_value(v: Any) -> bool:
    return type(v) is dict and QUANTITY_KEY in v


def _is_semver_value(v: Any) -> bool:
    return type(v) is dict and SEMVER_KEY in v


def cel_type_name(value: Any) -> str:
    """The CEL type name of a value as upstream prints it in errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if value is None:
        return "null_type"
    if isinstance(value, (list, tuple)):
        return "list"
    if _is_quantity_value(value):
        return "kubernetes.Quantity"
    if _is_semver_value(value):
        return "kubernetes.Semver"
    if isinstance(value, dict):
        return "map"
    name = type(value).__name__
    return {"datetime": "google.protobuf.Timestamp", "timedelta": "google.protobuf.Duration"}.get(name, name)


def cel_equal(a: Any, b: Any) -> bool:
    """CEL equality: numbers compare across int/uint/double, bools only with bools."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# -- library functions -----------------------------------------------------------------------------

class _FunctionFailed(Exception):
    """Raised by library functions; the message becomes the CEL runtime error."""


_state = threading.local()
_NO_SUCH_OVERLOAD = "no such overload"
_MIN_INT64 = -(1 << 63)
_MAX_INT64 = (1 << 63) - 1


def _fail(message: str) -> None:
    _state.error = message
    raise _FunctionFailed(message)


def _quantity_of(v: Any) -> Fraction:
    if type(v) is dict:
        text = v.get(QUANTITY_KEY)
        if text is not None:
            return _decode_fraction(text)
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def _semver_of(v: Any) -> _semver.Semver:
    if type(v) is dict:
        text = v.get(SEMVER_KEY)
        if text is not None:
            return _semver.parse_semver(text)
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def _fn_quantity(text: Any) -> dict:
    if not isinstance(text, str):
        _fail(_NO_SUCH_OVERLOAD)
    try:
        return encode_quantity(parse_quantity(text))
    except ValueError as e:
        _fail(str(e))
        raise


def _fn_is_quantity(text: Any) -> bool:
    if not isinstance(text, str):
        _fail(_NO_SUCH_OVERLOAD)
    try:
        parse_quantity(text)
    except ValueError:
        return False
    return True


def _fn_sign(q: Any) -> int:
    v = _quantity_of(q)
    return (v > 0) - (v < 0)


def _fn_is_integer(q: Any) -> bool:
    v = _quantity_of(q)
    return v.denominator == 1 and _MIN_INT64 <= v.numerator <= _MAX_INT64


def _fn_as_integer(q: Any) -> int:
    v = _quantity_of(q)
    if v.denominator != 1 or not _MIN_INT64 <= v.numerator <= _MAX_INT64:
        _fail("cannot convert value to integer")
    return v.numerator


def _fn_as_approximate_float(q: Any) -> float:
    v = _quantity_of(q)
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _operand(other: Any) -> Fraction:
    if isinstance(other, bool):
        _fail(_NO_SUCH_OVERLOAD)
    if isinstance(other, int):
        return Fraction(other)
    return _quantity_of(other)


def _fn_add(q: Any, other: Any) -> dict:
    return encode_quantity(_quantity_of(q) + _operand(other))


def _fn_sub(q: Any, other: Any) -> dict:
    return encode_quantity(_quantity_of(q) - _operand(other))


def _compare(a: Any, b: Any) -> int:
    if _is_quantity_value(a):
        x, y = _quantity_of(a), _quantity_of(b)
        return (x > y) - (x < y)
    if _is_semver_value(a):
        return _semver.compare(_semver_of(a), _semver_of(b))
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def _fn_compare_to(a: Any, b: Any) -> int:
    return _compare(a, b)


def _fn_is_greater_than(a: Any, b: Any) -> bool:
    return _compare(a, b) == 1


def _fn_is_less_than(a: Any, b: Any) -> bool:
    return _compare(a, b) == -1


def _fn_semver(text: Any, normalize: Any = False) -> dict:
    if not isinstance(text, str) or not isinstance(normalize, bool):
        _fail(_NO_SUCH_OVERLOAD)
    try:
        return encode_semver(_semver.parse_semver(text, normalize))
    except ValueError as e:
        _fail(str(e))
        raise


def _fn_is_semver(text: Any, normalize: Any = False) -> bool:
    if not isinstance(text, str) or not isinstance(normalize, bool):
        _fail(_NO_SUCH_OVERLOAD)
    return _semver.is_semver(text, normalize)


def _fn_major(v: Any) -> int:
    return _semver_of(v).major


def _fn_minor(v: Any) -> int:
    return _semver_of(v).minor


def _fn_patch(v: Any) -> int:
    return _semver_of(v).patch


def _fn_includes(target: Any, arg: Any) -> bool:
    if isinstance(target, list):
        return any(cel_equal(item, arg) for item in target[:MAX_ATTRIBUTE_VALUES])
    return cel_equal(target, arg)


def _numbers(values: Any) -> list:
    if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        _fail(_NO_SUCH_OVERLOAD)
    return values


def _fn_sum(values: Any) -> Any:
    return sum(_numbers(values))


def _fn_min(values: Any) -> Any:
    if not isinstance(values, list):
        _fail(_NO_SUCH_OVERLOAD)
    if not values:
        _fail("min called on empty list")
    return min(values)


def _fn_max(values: Any) -> Any:
    if not isinstance(values, list):
        _fail(_NO_SUCH_OVERLOAD)
    if not values:
        _fail("max called on empty list")
    return max(values)


def _fn_is_sorted(values: Any) -> bool:
    if not isinstance(values, list):
        _fail(_NO_SUCH_OVERLOAD)
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def _fn_index_of(target: Any, item: Any, *offset: Any) -> int:
    if isinstance(target, str):
        return _celstd.index_of(target, item, *offset)
    if isinstance(target, list) and not offset:
        for i, v in enumerate(target):
            if cel_equal(v, item):
                return i
        return -1
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def _fn_last_index_of(target: Any, item: Any, *offset: Any) -> int:
    if isinstance(target, str):
        return _celstd.last_index_of(target, item, *offset)
    if isinstance(target, list) and not offset:
        for i in range(len(target) - 1, -1, -1):
            if cel_equal(target[i], item):
                return i
        return -1
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def _fn_find(text: Any, pattern: Any) -> str:
    if not isinstance(text, str) or not isinstance(pattern, str):
        _fail(_NO_SUCH_OVERLOAD)
    m = re.search(pattern, text)
    return m.group(0) if m else ""


def _fn_find_all(text: Any, pattern: Any, *limit: Any) -> list:
    if not isinstance(text, str) or not isinstance(pattern, str):
        _fail(_NO_SUCH_OVERLOAD)
    found = [m.group(0) for m in re.finditer(pattern, text)]
    if limit and isinstance(limit[0], int) and limit[0] >= 0:
        found = found[:limit[0]]
    return found


def _guarded(fn: Callable) -> Callable:
    """Make any exception of a borrowed stdlib function a CEL runtime error with its message."""
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except _FunctionFailed:
            raise
        except Exception as e:  # noqa: BLE001 - everything a function raises is the user's error
            _fail(str(e) or type(e).__name__)
            raise
    call.__name__ = getattr(fn, "__name__", "function")
    return call


_BASE_FUNCTIONS: dict[str, Callable] = {
    "quantity": _fn_quantity, "isQuantity": _fn_is_quantity, "sign": _fn_sign,
    "isInteger": _fn_is_integer, "asInteger": _fn_as_integer, "asApproximateFloat": _fn_as_approximate_float,
    "add": _fn_add, "sub": _fn_sub,
    "compareTo": _fn_compare_to, "isGreaterThan": _fn_is_greater_than, "isLessThan": _fn_is_less_than,
    "semver": _fn_semver, "isSemver": _fn_is_semver, "major": _fn_major, "minor": _fn_minor, "patch": _fn_patch,
    "sum": _fn_sum, "min": _fn_min, "max": _fn_max, "isSorted": _fn_is_sorted,
    "indexOf": _guarded(_fn_index_of), "lastIndexOf": _guarded(_fn_last_index_of),
    "find": _guarded(_fn_find), "findAll": _guarded(_fn_find_all),
}
for _name in ("charAt", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim", "join"):
    _BASE_FUNCTIONS[_name] = _guarded(_celstd.EXTENSIONS["strings"][_name])
for _name, _fn in _celstd.EXTENSIONS["sets"].items():
    _BASE_FUNCTIONS[_name] = _guarded(_fn)
_BASE_FUNCTIONS["strings.quote"] = _guarded(_celstd.EXTENSIONS["strings"]["strings.quote"])

_LIST_FUNCTIONS = dict(_BASE_FUNCTIONS, includes=_fn_includes)

# Functions the Rust library provides natively, and macros.
_NATIVE_FUNCTIONS = frozenset({
    "size", "int", "uint", "double", "string", "bytes", "dyn", "type", "duration", "timestamp",
    "matches", "contains", "startsWith", "endsWith",
    "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getHours",
    "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
    "orValue", "hasValue", "value", "or",
})
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_QUALIFIED_FUNCTIONS = frozenset({"cel.bind", "optional.of", "optional.none", "optional.ofNonZeroValue",
                                  "sets.contains", "sets.equivalent", "sets.intersects", "strings.quote"})
_DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")


class _QuietOwnFunctions(logging.Filter):
    """The Rust library logs a WARNING for every exception a Python function raises. Ours raise on
    purpose (they are user errors surfaced as CEL runtime errors), so drop those records."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            return True
        return not (text.startswith("Python function '") and text.split("'", 2)[1] in _LIST_FUNCTIONS)


logging.getLogger("cel").addFilter(_QuietOwnFunctions())


# -- a small CEL parser (for checks and rewrites) --------------------------------------------------

_TOKEN_RE = re.compile(r"""
  (?P<ws>\s+|//[^\n]*)
| (?P<str>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
| (?P<num>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
| (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
""", re.X)


class _ParseError(Exception):
    pass


class _Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind, self.text, self.pos = kind, text, pos


def _tokenize(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    n = len(src)
    while pos < n:
        m = _TOKEN_RE.match(src, pos)
        if not m:
            raise _ParseError(f"unexpected character at {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(_Tok("eof", "", n))
    return toks


class _Node:
    __slots__ = ("pos",)


class _Lit(_Node):
    __slots__ = ("text", "kind")

    def __init__(self, text: str, kind: str, pos: int = 0):
        self.text, self.kind, self.pos = text, kind, pos


class _Ident(_Node):
    __slots__ = ("name",)

    def __init__(self, name: str, pos: int = 0):
        self.name, self.pos = name, pos


class _Select(_Node):
    __slots__ = ("operand", "field", "optional")

    def __init__(self, operand: _Node, field: str, optional: bool = False, pos: int = 0):
        self.operand, self.field, self.optional, self.pos = operand, field, optional, pos


class _Index(_Node):
    __slots__ = ("operand", "index", "optional")

    def __init__(self, operand: _Node, index: _Node, optional: bool = False, pos: int = 0):
        self.operand, self.index, self.optional, self.pos = operand, index, optional, pos


class _Call(_Node):
    __slots__ = ("target", "name", "args")

    def __init__(self, target: Optional[_Node], name: str, args: list, pos: int = 0):
        self.target, self.name, self.args, self.pos = target, name, args, pos


class _Unary(_Node):
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: _Node, pos: int = 0):
        self.op, self.operand, self.pos = op, operand, pos


class _Binary(_Node):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: _Node, right: _Node, pos: int = 0):
        self.op, self.left, self.right, self.pos = op, left, right, pos


class _Cond(_Node):
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond: _Node, then: _Node, other: _Node, pos: int = 0):
        self.cond, self.then, self.other, self.pos = cond, then, other, pos


class _List(_Node):
    __slots__ = ("items",)

    def __init__(self, items: list, pos: int = 0):
        self.items, self.pos = items, pos


class _Map(_Node):
    __slots__ = ("entries",)

    def __init__(self, entries: list, pos: int = 0):
        self.entries, self.pos = entries, pos


_RELATIONS = frozenset({"<", "<=", ">", ">=", "==", "!=", "in"})


class _Parser:
    def __init__(self, src: str):
        self.toks = _tokenize(src)
        self.i = 0

    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> Optional[_Tok]:
        t = self.peek()
        if t.kind in ("op", "ident") and t.text == text:
            self.i += 1
            return t
        return None

    def expect(self, text: str) -> _Tok:
        t = self.accept(text)
        if t is None:
            raise _ParseError(f"expected {text!r} at {self.peek().pos}")
        return t

    def parse(self) -> _Node:
        node = self.expr()
        if self.peek().kind != "eof":
            raise _ParseError(f"unexpected {self.peek().text!r}")
        return node

    def expr(self) -> _Node:
        cond = self.or_expr()
        q = self.accept("?")
        if q is None:
            return cond
        then = self.or_expr()
        self.expect(":")
        return _Cond(cond, then, self.expr(), q.pos)

    def or_expr(self) -> _Node:
        left = self.and_expr()
        while (t := self.accept("||")) is not None:
            left = _Binary("||", left, self.and_expr(), t.pos)
        return left

    def and_expr(self) -> _Node:
        left = self.relation()
        while (t := self.accept("&&")) is not None:
            left = _Binary("&&", left, self.relation(), t.pos)
        return left

    def relation(self) -> _Node:
        left = self.addition()
        while self.peek().text in _RELATIONS and self.peek().kind in ("op", "ident"):
            t = self.take()
            left = _Binary(t.text, left, self.addition(), t.pos)
        return left

    def addition(self) -> _Node:
        left = self.multiplication()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            t = self.take()
            left = _Binary(t.text, left, self.multiplication(), t.pos)
        return left

    def multiplication(self) -> _Node:
        left = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/", "%"):
            t = self.take()
            left = _Binary(t.text, left, self.unary(), t.pos)
        return left

    def unary(self) -> _Node:
        t = self.peek()
        if t.kind == "op" and t.text in ("!", "-"):
            self.take()
            return _Unary(t.text, self.unary(), t.pos)
        return self.member()

    def args(self, close: str) -> list:
        items: list = []
        if self.accept(close):
            return items
        while True:
            items.append(self.expr())
            if self.accept(close):
                return items
            self.expect(",")
            if self.accept(close):  # trailing comma (lists and maps)
                return items

    def member(self) -> _Node:
        node = self.primary()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text == ".":
                self.take()
                optional = self.accept("?") is not None
                name = self.take()
                if name.kind != "ident":
                    raise _ParseError(f"expected a field name at {name.pos}")
                if not optional and self.accept("("):
                    node = _Call(node, name.text, self.args(")"), name.pos)
                else:
                    node = _Select(node, name.text, optional, name.pos)
            elif t.kind == "op" and t.text == "[":
                self.take()
                optional = self.accept("?") is not None
                index = self.expr()
                self.expect("]")
                node = _Index(node, index, optional, t.pos)
            else:
                return node

    def primary(self) -> _Node:
        t = self.take()
        if t.kind == "ident":
            if t.text in ("true", "false"):
                return _Lit(t.text, "bool", t.pos)
            if t.text == "null":
                return _Lit(t.text, "null", t.pos)
            if self.peek().kind == "op" and self.peek().text == "{":
                raise _ParseError("message construction is not supported")
            if self.accept("("):
                return _Call(None, t.text, self.args(")"), t.pos)
            return _Ident(t.text, t.pos)
        if t.kind == "num":
            text = t.text.lower()
            if text.endswith("u"):
                kind = "uint"
            elif "." in text or ("e" in text and not text.startswith("0x")):
                kind = "double"
            else:
                kind = "int"
            return _Lit(t.text, kind, t.pos)
        if t.kind == "str":
            prefix = t.text[: len(t.text) - len(t.text.lstrip("rRbB"))].lower()
            return _Lit(t.text, "bytes" if "b" in prefix else "string", t.pos)
        if t.kind == "op":
            if t.text == "(":
                node = self.expr()
                self.expect(")")
                return node
            if t.text == "[":
                return _List(self.args("]"), t.pos)
            if t.text == "{":
                entries = []
                if not self.accept("}"):
                    while True:
                        key = self.expr()
                        self.expect(":")
                        entries.append((key, self.expr()))
                        if self.accept("}"):
                            break
                        self.expect(",")
                        if self.accept("}"):
                            break
                return _Map(entries, t.pos)
            if t.text == ".":
                raise _ParseError("absolute names are not supported")
        raise _ParseError(f"unexpected {t.text!r} at {t.pos}")


def _print(node: _Node) -> str:
    """CEL source for a node; operands of postfix operators are parenthesized when needed."""
    if isinstance(node, _Lit):
        return node.text
    if isinstance(node, _Ident):
        return node.name
    if isinstance(node, _Select):
        return f"{_operand_text(node.operand)}.{'?' if node.optional else ''}{node.field}"
    if isinstance(node, _Index):
        return f"{_operand_text(node.operand)}[{'?' if node.optional else ''}{_print(node.index)}]"
    if isinstance(node, _Call):
        args = ", ".join(_print(a) for a in node.args)
        if node.target is None:
            return f"{node.name}({args})"
        return f"{_operand_text(node.target)}.{node.name}({args})"
    if isinstance(node, _Unary):
        return f"{node.op}{_operand_text(node.operand)}"
    if isinstance(node, _Binary):
        return f"({_print(node.left)} {node.op} {_print(node.right)})"
    if isinstance(node, _Cond):
        return f"({_print(node.cond)} ? {_print(node.then)} : {_print(node.other)})"
    if isinstance(node, _List):
        return "[" + ", ".join(_print(i) for i in node.items) + "]"
    if isinstance(node, _Map):
        return "{" + ", ".join(f"{_print(k)}: {_print(v)}" for k, v in node.entries) + "}"
    raise TypeError(node)


def _operand_text(node: _Node) -> str:
    text = _print(node)
    if isinstance(node, (_Unary,)):
        return f"({text})"
    return text


# -- rewrites ----------------------------------------------------------------------------------------

def _is_device_map(node: _Node, scope: frozenset) -> bool:
    return (isinstance(node, _Select) and not node.optional and node.field in ("attributes", "capacity")
            and isinstance(node.operand, _Ident) and node.operand.name == "device" and "device" not in scope)


def _rewrite(node: _Node, scope: frozenset = frozenset()) -> _Node:
    """Lower cel.bind, optional selection and domain lookups to what the Rust library evaluates."""
    if isinstance(node, _Call):
        if (node.name == "bind" and isinstance(node.target, _Ident) and node.target.name == "cel"
                and "cel" not in scope and len(node.args) == 3 and isinstance(node.args[0], _Ident)):
            var = node.args[0]
            init = _rewrite(node.args[1], scope)
            body = _rewrite(node.args[2], scope | {var.name})
            return _Index(_Call(_List([init]), "map", [var, body]), _Lit("0", "int"))
        if node.name in _MACROS and node.target is not None and node.args and isinstance(node.args[0], _Ident):
            inner = scope | {node.args[0].name}
            return _Call(_rewrite(node.target, scope), node.name,
                         [node.args[0]] + [_rewrite(a, inner) for a in node.args[1:]], node.pos)
        target = _rewrite(node.target, scope) if node.target is not None else None
        return _Call(target, node.name, [_rewrite(a, scope) for a in node.args], node.pos)
    if isinstance(node, _Select):
        operand = _rewrite(node.operand, scope)
        if node.optional:
            plain = _Select(operand, node.field)
            return _Cond(_Call(None, "has", [plain]), _Call(_Ident("optional"), "of", [plain]),
                         _Call(_Ident("optional"), "none", []))
        return _Select(operand, node.field, False, node.pos)
    if isinstance(node, _Index):
        operand = _rewrite(node.operand, scope)
        index = _rewrite(node.index, scope)
        if node.optional:
            return _Cond(_Binary("in", index, operand), _Call(_Ident("optional"), "of", [_Index(operand, index)]),
                         _Call(_Ident("optional"), "none", []))
        if _is_device_map(node.operand, scope):
            return _Cond(_Binary("in", index, operand), _Index(operand, index), _Map([]))
        return _Index(operand, index, False, node.pos)
    if isinstance(node, _Unary):
        return _Unary(node.op, _rewrite(node.operand, scope), node.pos)
    if isinstance(node, _Binary):
        return _Binary(node.op, _rewrite(node.left, scope), _rewrite(node.right, scope), node.pos)
    if isinstance(node, _Cond):
        return _Cond(_rewrite(node.cond, scope), _rewrite(node.then, scope), _rewrite(node.other, scope), node.pos)
    if isinstance(node, _List):
        return _List([_rewrite(i, scope) for i in node.items], node.pos)
    if isinstance(node, _Map):
        return _Map([(_rewrite(k, scope), _rewrite(v, scope)) for k, v in node.entries], node.pos)
    return node


# -- static checks -----------------------------------------------------------------------------------

class _CheckError(Exception):
    def __init__(self, pos: int, message: str):
        super().__init__(message)
        self.pos, self.message = pos, message


def _qualified_name(node: _Call) -> Optional[str]:
    if isinstance(node.target, _Ident):
        return f"{node.target.name}.{node.name}"
    return None


def _check(node: _Node, scope: frozenset, functions: Mapping[str, Any], features: CELFeatures) -> None:
    """Upstream's checker, for what it can tell without types: names and device fields."""
    if isinstance(node, _Ident):
        if node.name not in scope and node.name != "device":
            raise _CheckError(node.pos, f"undeclared reference to '{node.name}' (in container '')")
        return
    if isinstance(node, _Select):
        if isinstance(node.operand, _Ident) and node.operand.name == "device" and "device" not in scope:
            allowed = _DEVICE_FIELDS if features.consumable_capacity else _DEVICE_FIELDS[:3]
            if node.field not in allowed:
                raise _CheckError(node.pos, f"undefined field '{node.field}'")
            return
        _check(node.operand, scope, functions, features)
        return
    if isinstance(node, _Call):
        qualified = _qualified_name(node)
        if qualified in _QUALIFIED_FUNCTIONS and node.target.name not in scope:  # type: ignore[union-attr]
            if qualified == "cel.bind":
                if len(node.args) != 3 or not isinstance(node.args[0], _Ident):
                    raise _CheckError(node.pos, "cel.bind() variable name must be a simple identifier")
                _check(node.args[1], scope, functions, features)
                _check(node.args[2], scope | {node.args[0].name}, functions, features)
                return
            for a in node.args:
                _check(a, scope, functions, features)
            return
        if node.target is None and node.name == "has":
            if len(node.args) != 1 or not isinstance(node.args[0], _Select):
                raise _CheckError(node.pos, "invalid argument to has() macro")
            _check(node.args[0], scope, functions, features)
            return
        if node.name in _MACROS and node.target is not None:
            if not node.args or not isinstance(node.args[0], _Ident):
                raise _CheckError(node.pos, "argument must be a simple name")
            _check(node.target, scope, functions, features)
            inner = scope | {node.args[0].name}
            for a in node.args[1:]:
                _check(a, inner, functions, features)
            return
        if node.name not in functions and node.name not in _NATIVE_FUNCTIONS:
            raise _CheckError(node.pos, f"undeclared reference to '{node.name}' (in container '')")
        if node.target is not None:
            _check(node.target, scope, functions, features)
        for a in node.args:
            _check(a, scope, functions, features)
        return
    for child in _children(node):
        _check(child, scope, functions, features)


def _children(node: _Node) -> Iterable[_Node]:
    if isinstance(node, _Select):
        return (node.operand,)
    if isinstance(node, _Index):
        return (node.operand, node.index)
    if isinstance(node, _Call):
        return ((node.target,) if node.target is not None else ()) + tuple(node.args)
    if isinstance(node, _Unary):
        return (node.operand,)
    if isinstance(node, _Binary):
        return (node.left, node.right)
    if isinstance(node, _Cond):
        return (node.cond, node.then, node.other)
    if isinstance(node, _List):
        return tuple(node.items)
    if isinstance(node, _Map):
        return tuple(x for kv in node.entries for x in kv)
    return ()


_BOOL_FUNCTIONS = frozenset({"has", "all", "exists", "exists_one", "matches", "contains", "startsWith",
                             "endsWith", "isSemver", "isQuantity", "isGreaterThan", "isLessThan", "isInteger",
                             "includes", "isSorted", "hasValue"})
_INT_FUNCTIONS = frozenset({"size", "compareTo", "sign", "major", "minor", "patch", "asInteger", "indexOf",
                            "lastIndexOf", "int"})
_STRING_FUNCTIONS = frozenset({"string", "lowerAscii", "upperAscii", "trim", "replace", "substring", "charAt",
                               "join", "find"})


def _static_type(node: _Node, scope: frozenset) -> str:
    """The result type when the expression's shape tells it, else "dyn" (checked at runtime)."""
    if isinstance(node, _Lit):
        return {"null": "null_type"}.get(node.kind, node.kind)
    if isinstance(node, _Ident):
        return "kubernetes.DRADevice" if node.name == "device" and node.name not in scope else "dyn"
    if isinstance(node, _Select):
        if isinstance(node.operand, _Ident) and node.operand.name == "device" and "device" not in scope:
            return {"driver": "string", "allowMultipleAllocations": "bool",
                    "attributes": "map(string, map(string, dyn))",
                    "capacity": "map(string, map(string, kubernetes.Quantity))"}.get(node.field, "dyn")
        return "dyn"
    if isinstance(node, _Index):
        if _is_device_map(node.operand, scope):
            inner = "kubernetes.Quantity" if node.operand.field == "capacity" else "dyn"  # type: ignore[attr-defined]
            return f"map(string, {inner})"
        return "dyn"
    if isinstance(node, _Unary):
        return "bool" if node.op == "!" else _static_type(node.operand, scope)
    if isinstance(node, _Binary):
        if node.op in _RELATIONS or node.op in ("&&", "||"):
            return "bool"
        left, right = _static_type(node.left, scope), _static_type(node.right, scope)
        return left if left == right and left in ("int", "uint", "double", "string", "bytes") else "dyn"
    if isinstance(node, _Cond):
        then, other = _static_type(node.then, scope), _static_type(node.other, scope)
        return then if then == other else "dyn"
    if isinstance(node, _List):
        kinds = {_static_type(i, scope) for i in node.items}
        return f"list({kinds.pop() if len(kinds) == 1 else 'dyn'})"
    if isinstance(node, _Map):
        keys = {_static_type(k, scope) for k, _ in node.entries}
        values = {_static_type(v, scope) for _, v in node.entries}
        return (f"map({keys.pop() if len(keys) == 1 else 'dyn'}, "
                f"{values.pop() if len(values) == 1 else 'dyn'})")
    if isinstance(node, _Call):
        if _qualified_name(node) == "cel.bind" and len(node.args) == 3 and isinstance(node.args[0], _Ident):
            return _static_type(node.args[2], scope | {node.args[0].name})
        name = node.name
        if name in _BOOL_FUNCTIONS:
            return "bool"
        if name in _INT_FUNCTIONS:
            return "int"
        if name in _STRING_FUNCTIONS:
            return "string"
        if (name == "quantity" and node.target is None) or (name in ("add", "sub") and node.target is not None):
            return "kubernetes.Quantity"
        if name == "semver" and node.target is None:
            return "kubernetes.Semver"
        if name in ("double", "asApproximateFloat"):
            return "double"
        if name == "uint":
            return "uint"
        if name in ("map", "filter", "split", "findAll"):
            return "list(dyn)"
    return "dyn"


_DEFAULT_RANGE = MAX_ATTRIBUTE_VALUES


def _range_size(node: _Node, scope: frozenset) -> int:
    if isinstance(node, _List):
        return len(node.items)
    if isinstance(node, _Map):
        return len(node.entries)
    if _is_device_map(node, scope):
        return MAX_ATTRIBUTES_AND_CAPACITIES
    if isinstance(node, _Index) and _is_device_map(node.operand, scope):
        return MAX_ATTRIBUTES_AND_CAPACITIES
    if isinstance(node, _Call) and node.name in ("map", "filter") and node.target is not None:
        return _range_size(node.target, scope)
    return _DEFAULT_RANGE


def _estimate_cost(node: _Node, scope: frozenset = frozenset()) -> int:
    """Worst-case cost in CEL's units, roughly as cel-go's estimator counts them."""
    if isinstance(node, _Lit):
        return 0
    if isinstance(node, _Ident):
        return 1
    if isinstance(node, _Call):
        if node.name in _MACROS and node.target is not None and node.args and isinstance(node.args[0], _Ident):
            inner = scope | {node.args[0].name}
            body = sum(_estimate_cost(a, inner) for a in node.args[1:])
            return _estimate_cost(node.target, scope) + _range_size(node.target, scope) * (body + 3)
        if _qualified_name(node) == "cel.bind" and len(node.args) == 3 and isinstance(node.args[0], _Ident):
            return (_estimate_cost(node.args[1], scope)
                    + _estimate_cost(node.args[2], scope | {node.args[0].name}) + 1)
        total = 1 + sum(_estimate_cost(a, scope) for a in node.args)
        if node.target is not None:
            total += _estimate_cost(node.target, scope)
        if node.name == "includes":
            total += MAX_ATTRIBUTE_VALUES
        return total
    return 1 + sum(_estimate_cost(c, scope) for c in _children(node))


def _device_fields(node: _Node, scope: frozenset = frozenset()) -> Optional[frozenset]:
    """The `device` fields the expression reads; None when it uses `device` as a whole."""
    used: set[str] = set()
    whole = False

    def walk(n: _Node, sc: frozenset) -> None:
        nonlocal whole
        if isinstance(n, _Select) and isinstance(n.operand, _Ident) and n.operand.name == "device" \
                and "device" not in sc:
            used.add(n.field)
            return
        if isinstance(n, _Ident):
            if n.name == "device" and "device" not in sc:
                whole = True
            return
        if isinstance(n, _Call):
            if n.name in _MACROS and n.target is not None and n.args and isinstance(n.args[0], _Ident):
                walk(n.target, sc)
                for a in n.args[1:]:
                    walk(a, sc | {n.args[0].name})
                return
            if _qualified_name(n) == "cel.bind" and len(n.args) == 3 and isinstance(n.args[0], _Ident):
                walk(n.args[1], sc)
                walk(n.args[2], sc | {n.args[0].name})
                return
        for c in _children(n):
            walk(c, sc)

    walk(node, scope)
    return None if whole else frozenset(used)


def _string_literal_value(node: _Node) -> Optional[str]:
    """The value of a plain quoted string literal without escapes (else None)."""
    if not isinstance(node, _Lit) or node.kind != "string":
        return None
    text = node.text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and "\\" not in text and not text.startswith(('"""', "'''")):
        return text[1:-1]
    return None


def _driver_literal(node: _Node) -> Optional[str]:
    """X for `device.driver == "X"` (either side), the dra-example-driver class selector."""
    if not isinstance(node, _Binary) or node.op != "==":
        return None
    for a, b in ((node.left, node.right), (node.right, node.left)):
        if (isinstance(a, _Select) and not a.optional and a.field == "driver"
                and isinstance(a.operand, _Ident) and a.operand.name == "device"):
            return _string_literal_value(b)
    return None



# -- a direct evaluator for the common selectors -----------------------------------------------------
#
# Building a Rust-side context costs ~40 us per device; most selectors (driver, attribute and
# capacity comparisons, quantity/semver calls) are evaluated faster straight from the AST on the
# same encoded values. Anything outside that subset, or any value shape the evaluator does not
# model, raises _Fallback and the CEL library evaluates the expression instead, so semantics stay
# the library's. Error absorption of && and || follows CEL (false && error == false).

class _Fallback(Exception):
    """The direct evaluator leaves this evaluation to the CEL library."""


class _EvalError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


_Evaluator = Callable[[dict], Any]
_EMPTY_MAP: dict = {}
_DIRECT_MEMBER_FUNCTIONS = {
    "compareTo": _fn_compare_to, "isGreaterThan": _fn_is_greater_than, "isLessThan": _fn_is_less_than,
    "major": _fn_major, "minor": _fn_minor, "patch": _fn_patch, "sign": _fn_sign, "isInteger": _fn_is_integer,
    "asInteger": _fn_as_integer, "asApproximateFloat": _fn_as_approximate_float, "add": _fn_add, "sub": _fn_sub,
}
_DIRECT_GLOBAL_FUNCTIONS = {"quantity": _fn_quantity, "isQuantity": _fn_is_quantity, "semver": _fn_semver,
                            "isSemver": _fn_is_semver}
_STRING_METHODS = {"startsWith": str.startswith, "endsWith": str.endswith, "contains": str.__contains__}


def _is_number(v: Any) -> bool:
    return (type(v) is int or type(v) is float)


def _call_library(fn: Callable, args: list) -> Any:
    try:
        return fn(*args)
    except _FunctionFailed as e:
        raise _EvalError(str(e)) from None


def _direct(node: _Node, features: CELFeatures) -> Optional[_Evaluator]:
    """A closure evaluating `node` on the `device` fields dict, or None outside the subset."""
    if isinstance(node, _Lit):
        if node.kind == "bool":
            value: Any = node.text == "true"
        elif node.kind == "null":
            value = None
        elif node.kind == "int":
            value = int(node.text, 0) if node.text.lower().startswith("0x") else int(node.text)
            if value > _MAX_INT64:
                return None
        elif node.kind == "double":
            value = float(node.text)
        elif node.kind == "string":
            value = _string_literal_value(node)
            if value is None:
                return None
        else:
            return None
        return lambda d, v=value: v
    if isinstance(node, _Ident):
        return (lambda d: d) if node.name == "device" else None
    if isinstance(node, _Select):
        if node.optional:
            return None
        operand = _direct(node.operand, features)
        if operand is None:
            return None
        name = node.field

        def select(d: dict) -> Any:
            v = operand(d)
            if type(v) is dict:
                if name in v:
                    return v[name]
                raise _EvalError(f"no such key: {name}")
            raise _Fallback
        return select
    if isinstance(node, _Index):
        if node.optional:
            return None
        operand, index = _direct(node.operand, features), _direct(node.index, features)
        if operand is None or index is None:
            return None
        if _is_device_map(node.operand, frozenset()):
            def domain(d: dict) -> Any:
                v, k = operand(d), index(d)
                if type(k) is not str:
                    raise _Fallback
                return v.get(k, _EMPTY_MAP)
            return domain

        def lookup(d: dict) -> Any:
            v, k = operand(d), index(d)
            if type(v) is dict and type(k) is str:
                if k in v:
                    return v[k]
                raise _EvalError(f"no such key: {k}")
            raise _Fallback
        return lookup
    if isinstance(node, _Unary):
        operand = _direct(node.operand, features)
        if operand is None or node.op != "!":
            return None

        def negate(d: dict) -> Any:
            v = operand(d)
            if v is True or v is False:
                return not v
            raise _Fallback
        return negate
    if isinstance(node, _Binary):
        left, right = _direct(node.left, features), _direct(node.right, features)
        if left is None or right is None:
            return None
        return _direct_binary(node.op, left, right)
    if isinstance(node, _Cond):
        cond, then, other = (_direct(node.cond, features), _direct(node.then, features),
                             _direct(node.other, features))
        if cond is None or then is None or other is None:
            return None

        def choose(d: dict) -> Any:
            c = cond(d)
            if c is True:
                return then(d)
            if c is False:
                return other(d)
            raise _Fallback
        return choose
    if isinstance(node, _Call):
        return _direct_call(node, features)
    return None


def _direct_binary(op: str, left: _Evaluator, right: _Evaluator) -> Optional[_Evaluator]:
    if op in ("&&", "||"):
        decisive = op == "||"  # the value that decides: true for ||, false for &&

        def logical(d: dict) -> Any:
            error: Optional[_EvalError] = None
            try:
                a = left(d)
            except _EvalError as e:
                a, error = None, e
            if a is decisive:
                return decisive
            if error is None and a is not (not decisive):
                raise _Fallback
            try:
                b = right(d)
            except _EvalError as e:
                if error is None:
                    error = e
                b = None
            else:
                if b is decisive:
                    return decisive
                if b is not (not decisive):
                    raise _Fallback
            if error is not None:
                raise error
            return not decisive
        return logical
    if op in ("==", "!="):
        negate = op == "!="

        def equal(d: dict) -> Any:
            a, b = left(d), right(d)
            ta, tb = type(a), type(b)
            if ta is tb or (_is_number(a) and _is_number(b)):
                return cel_equal(a, b) != negate
            raise _Fallback
        return equal
    if op in ("<", "<=", ">", ">="):
        def order(d: dict) -> Any:
            a, b = left(d), right(d)
            if (_is_number(a) and _is_number(b)) or (type(a) is str and type(b) is str):
                if op == "<":
                    return a < b
                if op == "<=":
                    return a <= b
                if op == ">":
                    return a > b
                return a >= b
            raise _Fallback
        return order
    if op == "in":
        def member(d: dict) -> Any:
            a, b = left(d), right(d)
            if type(b) is dict and type(a) is str:
                return a in b
            raise _Fallback
        return member
    return None


def _direct_call(node: _Call, features: CELFeatures) -> Optional[_Evaluator]:
    if node.target is None:
        if node.name == "has" and len(node.args) == 1 and isinstance(node.args[0], _Select) \
                and not node.args[0].optional:
            operand = _direct(node.args[0].operand, features)
            if operand is None:
                return None
            name = node.args[0].field

            def has(d: dict) -> Any:
                v = operand(d)
                if type(v) is dict:
                    return name in v
                raise _Fallback
            return has
        fn = _DIRECT_GLOBAL_FUNCTIONS.get(node.name)
        if fn is None and node.name != "size":
            return None
        args = [_direct(a, features) for a in node.args]
        if any(a is None for a in args):
            return None
        if node.name == "size":
            if len(args) != 1:
                return None
            only = args[0]

            def size(d: dict) -> Any:
                v = only(d)
                if type(v) in (str, list, dict):
                    return len(v)
                raise _Fallback
            return size
        return lambda d: _call_library(fn, [a(d) for a in args])  # type: ignore[misc]
    if isinstance(node.target, _Ident) and node.target.name in ("cel", "optional"):
        return None
    target = _direct(node.target, features)
    args = [_direct(a, features) for a in node.args]
    if target is None or any(a is None for a in args):
        return None
    method = _STRING_METHODS.get(node.name)
    if method is not None:
        if len(args) != 1:
            return None
        arg = args[0]

        def string_method(d: dict) -> Any:
            t, a = target(d), arg(d)
            if type(t) is str and type(a) is str:
                return method(t, a)
            raise _Fallback
        return string_method
    fn = _DIRECT_MEMBER_FUNCTIONS.get(node.name)
    if fn is None and node.name == "includes" and features.list_type_attributes:
        fn = _fn_includes
    if fn is None:
        return None
    return lambda d: _call_library(fn, [target(d)] + [a(d) for a in args])  # type: ignore[misc]


# -- compiling -----------------------------------------------------------------------------------------

def _position(src: str, pos: int) -> tuple[int, int, str]:
    line = src.count("\n", 0, pos) + 1
    start = src.rfind("\n", 0, pos) + 1
    end = src.find("\n", pos)
    return line, pos - start + 1, src[start:end if end != -1 else len(src)]


def _issue(src: str, pos: int, message: str) -> str:
    """cel-go's issue format: `ERROR: <input>:L:C: message` plus the source line and a caret."""
    line, col, text = _position(src, pos)
    return f"ERROR: <input>:{line}:{col}: {message}\n | {text}\n | {'.' * (col - 1)}^"


_RUST_PREFIX = re.compile(r"^Failed to parse expression .*?: (?=ERROR: )", re.S)


def _rust_issue(message: str) -> str:
    """The Rust parser's message, in cel-go's layout."""
    message = _RUST_PREFIX.sub("", message, count=1)
    return "\n".join(" | " + line[2:] if line.startswith("| ") else line for line in message.split("\n"))


class CompiledSelector:
    """One compiled selector expression. `error` is set when it does not compile."""

    __slots__ = ("expression", "features", "error", "program", "fields", "driver_literal", "max_cost",
                 "source", "direct")

    def __init__(self, expression: str, features: CELFeatures):
        self.expression = expression
        self.features = features
        self.error: Optional[CELCompileError] = None
        self.program: Any = None
        self.fields: Optional[frozenset] = None
        self.driver_literal: Optional[str] = None
        self.max_cost = 0
        self.source = expression  # what the Rust library compiled (after rewrites)
        self.direct: Optional[_Evaluator] = None  # the Python evaluator, when the expression fits it

    def matches(self, device: "CELDevice") -> bool:
        """Evaluate for one device; raises CELRuntimeError (or the compile error)."""
        if self.error is not None:
            raise self.error
        if device.conversion_error is not None:
            raise CELRuntimeError(self.expression, device.conversion_error)
        if self.driver_literal is not None:
            return device.driver == self.driver_literal
        if self.max_cost > COST_LIMIT:
            raise CELRuntimeError(self.expression, "operation cancelled: actual cost limit exceeded")
        if self.direct is not None:
            try:
                result = self.direct(device.fields)
            except _EvalError as e:
                raise CELRuntimeError(self.expression, e.message) from None
            except _Fallback:
                pass
            else:
                if result is True or result is False:
                    return result
                raise CELRuntimeError(self.expression, f"CEL result of type {cel_type_name(result)} could not be "
                                                       f"converted to bool")
        context = device.context(self.fields)
        _state.error = None
        try:
            result = self.program.execute(context)
        except KeyError as e:
            key = e.args[0] if e.args else ""
            raise CELRuntimeError(self.expression, f"no such key: {key}") from None
        except Exception as e:  # noqa: BLE001 - every evaluation failure is the user's error
            raise CELRuntimeError(self.expression, _runtime_message(e)) from None
        if result is True or result is False:
            return result
        raise CELRuntimeError(self.expression, f"CEL result of type {cel_type_name(result)} could not be "
                                               f"converted to bool")


def _runtime_message(error: Exception) -> str:
    own = getattr(_state, "error", None)
    if own:
        _state.error = None
        return own
    text = str(error)
    if isinstance(error, ZeroDivisionError):
        return "division by zero"
    if isinstance(error, OverflowError):
        return "integer overflow"
    if text.startswith("No such overload"):
        return "no such overload"
    if text.startswith("Unsupported operation"):
        return "no such overload"
    m = re.match(r"Undefined variable or function: '([^']*)'", text)
    if m:
        return f"undeclared reference to '{m.group(1)}'"
    return text


def compile_selector(expression: str, features: CELFeatures = CELFeatures(), direct: bool = True) -> CompiledSelector:
    """Compile without caching (see SelectorCache). Never raises: errors land in `.error`.
    `direct=False` always evaluates with the CEL library (tests compare both)."""
    result = CompiledSelector(expression, features)
    if len(expression) > MAX_EXPRESSION_LENGTH:
        result.error = CELCompileError(
            expression, f"compilation failed: expression too long: must have at most {MAX_EXPRESSION_LENGTH} bytes")
        return result
    functions = _LIST_FUNCTIONS if features.list_type_attributes else _BASE_FUNCTIONS
    rust_error: Optional[str] = None
    program = None
    try:
        program = _celrs.compile(expression)
    except Exception as e:  # noqa: BLE001
        rust_error = str(e)
    try:
        ast: Optional[_Node] = _Parser(expression).parse()
    except (_ParseError, RecursionError):
        ast = None
    optional_syntax = rust_error is not None and "unsupported syntax '" in rust_error
    if rust_error is not None and not (ast is not None and optional_syntax):
        result.error = CELCompileError(expression, "compilation failed: " + _rust_issue(rust_error))
        return result
    if ast is not None:
        try:
            _analyze(result, ast, features, functions, direct)
        except RecursionError:  # too deep for our passes (the library caps nesting itself)
            result.error, result.fields, result.driver_literal, result.direct = None, None, None, None
            ast = None
        if result.error is not None:
            return result
    if ast is None:  # beyond our parser, within the library's: evaluate as written
        if program is None:
            result.error = CELCompileError(expression, "compilation failed: " + _rust_issue(rust_error or ""))
        result.program = program
        return result
    try:
        result.program = _celrs.compile(result.source)
    except Exception as e:  # noqa: BLE001 - our rewrite produced something the library rejects
        if program is None:
            result.error = CELCompileError(expression, "unexpected compilation error: " + _rust_issue(str(e)),
                                           ERROR_INTERNAL)
            return result
        result.program, result.source, result.fields = program, expression, None
    return result


_MAX_DIRECT_DEPTH = 64


def _depth(node: _Node) -> int:
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in _children(n))
    return deepest


def _analyze(result: CompiledSelector, ast: _Node, features: CELFeatures, functions: Mapping[str, Any],
             direct: bool) -> None:
    """Checks, estimates and the rewritten source; sets `result.error` for a compile error."""
    expression = result.expression
    try:
        _check(ast, frozenset(), functions, features)
    except _CheckError as e:
        result.error = CELCompileError(expression, "compilation failed: " + _issue(expression, e.pos, e.message))
        return
    kind = _static_type(ast, frozenset())
    if kind not in ("bool", "dyn"):
        result.error = CELCompileError(expression, f"must evaluate to bool or the unknown type, not {kind}")
        return
    result.max_cost = _estimate_cost(ast)
    result.fields = _device_fields(ast)
    result.driver_literal = _driver_literal(ast)
    if direct and _depth(ast) <= _MAX_DIRECT_DEPTH:
        result.direct = _direct(ast, features)
    result.source = _print(_rewrite(ast))


class SelectorCache:
    """LRU of compiled selectors by (expression, features); failures are cached too."""

    def __init__(self, max_entries: int = 4096):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, CELFeatures], CompiledSelector] = OrderedDict()
        self.compiles = 0

    def get(self, expression: str, features: CELFeatures = CELFeatures()) -> CompiledSelector:
        key = (expression, features)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry
        entry = compile_selector(expression, features)
        self.compiles += 1
        self._entries[key] = entry
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


SELECTORS = SelectorCache()


# -- devices ---------------------------------------------------------------------------------------------

def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """`domain/id` -> (domain, id); a bare id belongs to `default_domain` (the driver)."""
    sep = name.find("/")
    if sep == -1:
        return default_domain, name
    return name[:sep], name[sep + 1:]


def attribute_cel_value(attr: Mapping[str, Any], list_type_attributes: bool) -> Any:
    """The CEL value of one DeviceAttribute; ValueError (upstream's text) when unsupported."""
    if list_type_attributes:
        for key in ("ints", "bools", "strings"):
            values = attr.get(key)
            if values is not None:
                return list(values)
        versions = attr.get("versions")
        if versions is not None:
            try:
                return [encode_semver(_semver.parse_semver(v)) for v in versions]
            except ValueError as e:
                raise ValueError(f"parse semantic version: {e}") from None
    for key in ("int", "bool", "string"):
        value = attr.get(key)
        if value is not None:
            return value
    version = attr.get("version")
    if version is not None:
        try:
            return encode_semver(_semver.parse_semver(version))
        except ValueError as e:
            raise ValueError(f"parse semantic version: {e}") from None
    raise ValueError("unsupported attribute value")


class CELDevice:
    """A device converted for CEL once; contexts are built per set of `device` fields used."""

    __slots__ = ("driver", "features", "conversion_error", "fields", "_contexts")

    def __init__(self, driver: str, device: Mapping[str, Any], features: CELFeatures = CELFeatures(),
                 parsed_capacity: Optional[Mapping[str, Fraction]] = None):
        self.driver = driver
        self.features = features
        self.conversion_error: Optional[str] = None
        attributes: dict[str, dict[str, Any]] = {}
        for name, attr in (device.get("attributes") or {}).items():
            try:
                value = attribute_cel_value(attr or {}, features.list_type_attributes)
            except ValueError as e:
                if self.conversion_error is None:
                    self.conversion_error = f"attribute {name}: {e}"
                continue
            domain, ident = split_qualified_name(name, driver)
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        if parsed_capacity is not None:  # fully qualified names -> exact values (devices.Device)
            for name, value in parsed_capacity.items():
                domain, ident = split_qualified_name(name, driver)
                capacity.setdefault(domain, {})[ident] = encode_quantity(value)
        else:
            for name, cap in (device.get("capacity") or {}).items():
                domain, ident = split_qualified_name(name, driver)
                try:
                    value = parse_quantity((cap or {}).get("value", "0"))
                except ValueError:
                    value = Fraction(0)
                capacity.setdefault(domain, {})[ident] = encode_quantity(value)
        fields: dict[str, Any] = {"driver": driver, "attributes": attributes, "capacity": capacity}
        if features.consumable_capacity:
            fields["allowMultipleAllocations"] = bool(device.get("allowMultipleAllocations") or False)
        self.fields = fields  # the `device` variable, as the Python evaluator reads it
        self._contexts: dict[Optional[frozenset], Any] = {}

    def context(self, fields: Optional[frozenset] = None) -> Any:
        ctx = self._contexts.get(fields)
        if ctx is None:
            if fields is None:
                variables = self.fields
            else:
                variables = {k: v for k, v in self.fields.items() if k in fields}
            functions = _LIST_FUNCTIONS if self.features.list_type_attributes else _BASE_FUNCTIONS
            ctx = _celrs.Context(variables={"device": variables}, functions=functions)
            self._contexts[fields] = ctx
        return ctx


def evaluate(expression: str, device: Mapping[str, Any], driver: str,
             features: CELFeatures = CELFeatures()) -> bool:
    """One-shot convenience for tests and tools: compile (cached) and evaluate."""
    selector = SELECTORS.get(expression, features)
    return selector.matches(CELDevice(driver, device, features))


# -- API validation ---------------------------------------------------------------------------------------

def check_expression(expression: str, features: CELFeatures = CELFeatures()) -> Optional[tuple[str, str]]:
    """For `phalanx.api.resource.CEL_EXPRESSION_CHECK`: None when the selector is acceptable, else
    (kind, detail) with kind "Required" / "Invalid" / "InternalError" as upstream's cel.Error types,
    or "Forbidden" with upstream's `too complex, exceeds cost limit`."""
    if not expression.strip():
        return (ERROR_REQUIRED, "")
    selector = SELECTORS.get(expression, features)
    if selector.error is not None:
        return (selector.error.error_type, selector.error.message)
    if selector.max_cost > COST_LIMIT:
        return (ERROR_FORBIDDEN, "too complex, exceeds cost limit")
    return None


def install_validation_hook() -> None:
    """Make the API server reject selectors that do not compile (upstream validates at admission)."""
    from ..api import resource as _resource_api
    _resource_api.CEL_EXPRESSION_CHECK = check_expression
