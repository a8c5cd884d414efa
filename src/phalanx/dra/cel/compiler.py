"""Compiling a selector once (`compile_selector`, the LRU `SelectorCache` and the process-wide
`SELECTORS`) and evaluating it for a device (`CompiledSelector.matches`): our parse, checks and
rewrites, then the Rust library's program, with the direct evaluator in front when it fits."""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Mapping, Optional

import cel as _celrs  # PyPI common-expression-language (Rust `cel` crate via PyO3)

from .analysis import device_fields, driver_literal
from .checker import CheckError, check_comparisons, check_names, static_type
from .cost import estimate_cost
from .direct import EvalError, Evaluator, Fallback, direct_evaluator
from .environment import (COST_LIMIT, ERROR_INTERNAL, MAX_EXPRESSION_LENGTH, CELCompileError, CELFeatures,
                          CELRuntimeError)
from .library import BASE_FUNCTIONS, LIST_FUNCTIONS, function_state
from .rewrite import rewrite
from .syntax import Node, ParseError, Parser, children, print_node
from .values import cel_type_name

if TYPE_CHECKING:
    from .device import CELDevice

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
        self.fields: Optional[frozenset[str]] = None
        self.driver_literal: Optional[str] = None
        self.max_cost = 0
        self.source = expression  # what the Rust library compiled (after rewrites)
        self.direct: Optional[Evaluator] = None  # the Python evaluator, when the expression fits it

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
            except EvalError as e:
                raise CELRuntimeError(self.expression, e.message) from None
            except Fallback:
                pass
            else:
                if result is True or result is False:
                    return result
                raise CELRuntimeError(self.expression, f"CEL result of type {cel_type_name(result)} could not be "
                                                       f"converted to bool")
        context = device.context(self.fields)
        function_state.error = None
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
    own: Optional[str] = getattr(function_state, "error", None)
    if own:
        function_state.error = None
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
    functions = LIST_FUNCTIONS if features.list_type_attributes else BASE_FUNCTIONS
    rust_error: Optional[str] = None
    program = None
    try:
        program = _celrs.compile(expression)
    except Exception as e:  # noqa: BLE001
        rust_error = str(e)
    try:
        ast: Optional[Node] = Parser(expression).parse()
    except (ParseError, RecursionError):
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


def _depth(node: Node) -> int:
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in children(n))
    return deepest


def _analyze(result: CompiledSelector, ast: Node, features: CELFeatures, functions: Mapping[str, Any],
             direct: bool) -> None:
    """Checks, estimates and the rewritten source; sets `result.error` for a compile error."""
    expression = result.expression
    try:
        check_names(ast, frozenset(), functions, features)
        check_comparisons(ast)
    except CheckError as e:
        result.error = CELCompileError(expression, "compilation failed: " + _issue(expression, e.pos, e.message))
        return
    kind = static_type(ast, frozenset())
    if kind not in ("bool", "dyn"):
        result.error = CELCompileError(expression, f"must evaluate to bool or the unknown type, not {kind}")
        return
    result.max_cost = estimate_cost(ast)
    result.fields = device_fields(ast)
    result.driver_literal = driver_literal(ast)
    if direct and _depth(ast) <= _MAX_DIRECT_DEPTH:
        result.direct = direct_evaluator(ast, features)
    result.source = print_node(rewrite(ast))


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
