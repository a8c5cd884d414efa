"""The functions of the `device` environment beyond what the CEL library provides: Kubernetes'
quantity, semver and list libraries, regex `find`/`findAll`, the strings and sets extensions, and
which names the environment declares (native functions, macros, qualified names, device fields)."""

from __future__ import annotations

import logging
import re
import threading
from fractions import Fraction
from typing import Any, Callable, NoReturn

from cel import stdlib as _celstd

from ...machinery.quantity import parse_quantity
from .. import semver as _semver
from .environment import MAX_ATTRIBUTE_VALUES
from .values import (QUANTITY_KEY, SEMVER_KEY, cel_equal, decode_fraction, encode_quantity, encode_semver,
                     is_quantity_value, is_semver_value)

class FunctionFailed(Exception):
    """Raised by library functions; the message becomes the CEL runtime error."""


function_state = threading.local()
_NO_SUCH_OVERLOAD = "no such overload"
MIN_INT64 = -(1 << 63)
MAX_INT64 = (1 << 63) - 1


def _fail(message: str) -> NoReturn:
    function_state.error = message
    raise FunctionFailed(message)


def _quantity_of(v: Any) -> Fraction:
    if type(v) is dict:
        text = v.get(QUANTITY_KEY)
        if text is not None:
            return decode_fraction(text)
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def _semver_of(v: Any) -> _semver.Semver:
    if type(v) is dict:
        text = v.get(SEMVER_KEY)
        if text is not None:
            return _semver.parse_semver(text)
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def fn_quantity(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        _fail(_NO_SUCH_OVERLOAD)
    try:
        return encode_quantity(parse_quantity(text))
    except ValueError as e:
        _fail(str(e))
        raise


def fn_is_quantity(text: Any) -> bool:
    if not isinstance(text, str):
        _fail(_NO_SUCH_OVERLOAD)
    try:
        parse_quantity(text)
    except ValueError:
        return False
    return True


def fn_sign(q: Any) -> int:
    v = _quantity_of(q)
    return (v > 0) - (v < 0)


def fn_is_integer(q: Any) -> bool:
    v = _quantity_of(q)
    return v.denominator == 1 and MIN_INT64 <= v.numerator <= MAX_INT64


def fn_as_integer(q: Any) -> int:
    v = _quantity_of(q)
    if v.denominator != 1 or not MIN_INT64 <= v.numerator <= MAX_INT64:
        _fail("cannot convert value to integer")
    return v.numerator


def fn_as_approximate_float(q: Any) -> float:
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


def fn_add(q: Any, other: Any) -> dict[str, Any]:
    return encode_quantity(_quantity_of(q) + _operand(other))


def fn_sub(q: Any, other: Any) -> dict[str, Any]:
    return encode_quantity(_quantity_of(q) - _operand(other))


def _compare(a: Any, b: Any) -> int:
    if is_quantity_value(a):
        x, y = _quantity_of(a), _quantity_of(b)
        return (x > y) - (x < y)
    if is_semver_value(a):
        return _semver.compare(_semver_of(a), _semver_of(b))
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def fn_compare_to(a: Any, b: Any) -> int:
    return _compare(a, b)


def fn_is_greater_than(a: Any, b: Any) -> bool:
    return _compare(a, b) == 1


def fn_is_less_than(a: Any, b: Any) -> bool:
    return _compare(a, b) == -1


def fn_semver(text: Any, normalize: Any = False) -> dict[str, Any]:
    if not isinstance(text, str) or not isinstance(normalize, bool):
        _fail(_NO_SUCH_OVERLOAD)
    try:
        return encode_semver(_semver.parse_semver(text, normalize))
    except ValueError as e:
        _fail(str(e))
        raise


def fn_is_semver(text: Any, normalize: Any = False) -> bool:
    if not isinstance(text, str) or not isinstance(normalize, bool):
        _fail(_NO_SUCH_OVERLOAD)
    return _semver.is_semver(text, normalize)


def fn_major(v: Any) -> int:
    return _semver_of(v).major


def fn_minor(v: Any) -> int:
    return _semver_of(v).minor


def fn_patch(v: Any) -> int:
    return _semver_of(v).patch


def fn_includes(target: Any, arg: Any) -> bool:
    if isinstance(target, list):
        return any(cel_equal(item, arg) for item in target[:MAX_ATTRIBUTE_VALUES])
    return cel_equal(target, arg)


def _numbers(values: Any) -> list[Any]:
    if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        _fail(_NO_SUCH_OVERLOAD)
    return values


def fn_sum(values: Any) -> Any:
    return sum(_numbers(values))


def fn_min(values: Any) -> Any:
    if not isinstance(values, list):
        _fail(_NO_SUCH_OVERLOAD)
    if not values:
        _fail("min called on empty list")
    return min(values)


def fn_max(values: Any) -> Any:
    if not isinstance(values, list):
        _fail(_NO_SUCH_OVERLOAD)
    if not values:
        _fail("max called on empty list")
    return max(values)


def fn_is_sorted(values: Any) -> bool:
    if not isinstance(values, list):
        _fail(_NO_SUCH_OVERLOAD)
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def fn_index_of(target: Any, item: Any, *offset: Any) -> int:
    if isinstance(target, str):
        return _celstd.index_of(target, item, *offset)
    if isinstance(target, list) and not offset:
        for i, v in enumerate(target):
            if cel_equal(v, item):
                return i
        return -1
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def fn_last_index_of(target: Any, item: Any, *offset: Any) -> int:
    if isinstance(target, str):
        return _celstd.last_index_of(target, item, *offset)
    if isinstance(target, list) and not offset:
        for i in range(len(target) - 1, -1, -1):
            if cel_equal(target[i], item):
                return i
        return -1
    _fail(_NO_SUCH_OVERLOAD)
    raise AssertionError  # unreachable


def fn_find(text: Any, pattern: Any) -> str:
    if not isinstance(text, str) or not isinstance(pattern, str):
        _fail(_NO_SUCH_OVERLOAD)
    m = re.search(pattern, text)
    return m.group(0) if m else ""


def fn_find_all(text: Any, pattern: Any, *limit: Any) -> list[Any]:
    if not isinstance(text, str) or not isinstance(pattern, str):
        _fail(_NO_SUCH_OVERLOAD)
    found = [m.group(0) for m in re.finditer(pattern, text)]
    if limit and isinstance(limit[0], int) and limit[0] >= 0:
        found = found[:limit[0]]
    return found


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make any exception of a borrowed stdlib function a CEL runtime error with its message."""
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except FunctionFailed:
            raise
        except Exception as e:  # noqa: BLE001 - everything a function raises is the user's error
            _fail(str(e) or type(e).__name__)
            raise
    call.__name__ = getattr(fn, "__name__", "function")
    return call


BASE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": fn_quantity, "isQuantity": fn_is_quantity, "sign": fn_sign,
    "isInteger": fn_is_integer, "asInteger": fn_as_integer, "asApproximateFloat": fn_as_approximate_float,
    "add": fn_add, "sub": fn_sub,
    "compareTo": fn_compare_to, "isGreaterThan": fn_is_greater_than, "isLessThan": fn_is_less_than,
    "semver": fn_semver, "isSemver": fn_is_semver, "major": fn_major, "minor": fn_minor, "patch": fn_patch,
    "sum": fn_sum, "min": fn_min, "max": fn_max, "isSorted": fn_is_sorted,
    "indexOf": _guarded(fn_index_of), "lastIndexOf": _guarded(fn_last_index_of),
    "find": _guarded(fn_find), "findAll": _guarded(fn_find_all),
}
for _name in ("charAt", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim", "join"):
    BASE_FUNCTIONS[_name] = _guarded(_celstd.EXTENSIONS["strings"][_name])
for _name, _fn in _celstd.EXTENSIONS["sets"].items():
    BASE_FUNCTIONS[_name] = _guarded(_fn)
BASE_FUNCTIONS["strings.quote"] = _guarded(_celstd.EXTENSIONS["strings"]["strings.quote"])

LIST_FUNCTIONS = dict(BASE_FUNCTIONS, includes=fn_includes)

# Functions the Rust library provides natively, and macros.
NATIVE_FUNCTIONS = frozenset({
    "size", "int", "uint", "double", "string", "bytes", "dyn", "type", "duration", "timestamp",
    "matches", "contains", "startsWith", "endsWith",
    "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getHours",
    "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
    "orValue", "hasValue", "value", "or",
})
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
QUALIFIED_FUNCTIONS = frozenset({"cel.bind", "optional.of", "optional.none", "optional.ofNonZeroValue",
                                  "sets.contains", "sets.equivalent", "sets.intersects", "strings.quote"})
DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")


class _QuietOwnFunctions(logging.Filter):
    """The Rust library logs a WARNING for every exception a Python function raises. Ours raise on
    purpose (they are user errors surfaced as CEL runtime errors), so drop those records."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            return True
        return not (text.startswith("Python function '") and text.split("'", 2)[1] in LIST_FUNCTIONS)


logging.getLogger("cel").addFilter(_QuietOwnFunctions())
