"""Compile-time checks upstream's type checker makes, for what the syntax tree tells: undeclared
names and functions, unknown `device` fields, comparisons of operands whose types cannot be
compared (`found no matching overload for '_==_' applied to '(string, int)'`), and the static
type of an expression."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Optional

from .environment import CELFeatures
from .library import DEVICE_FIELDS, MACROS, NATIVE_FUNCTIONS, QUALIFIED_FUNCTIONS
from .syntax import (RELATIONS, Binary, Call, Cond, Ident, Index, Lit, ListLit, MapLit, Node, Select, Unary, children,
                     is_device_map)


class CheckError(Exception):
    def __init__(self, pos: int, message: str):
        super().__init__(message)
        self.pos, self.message = pos, message


def qualified_name(node: Call) -> Optional[str]:
    if isinstance(node.target, Ident):
        return f"{node.target.name}.{node.name}"
    return None


def _binds(node: Call) -> Optional[Ident]:
    """The variable `cel.bind(x, init, body)` binds, when `node` is such a call."""
    if qualified_name(node) == "cel.bind" and len(node.args) == 3 and isinstance(node.args[0], Ident):
        return node.args[0]
    return None


def _comprehension_variable(node: Call) -> Optional[Ident]:
    """The iteration variable of a macro call (`xs.all(x, ...)`), when `node` is one."""
    if node.name in MACROS and node.target is not None and node.args and isinstance(node.args[0], Ident):
        return node.args[0]
    return None


def _is_device(node: Node, scope: frozenset[str]) -> bool:
    return isinstance(node, Ident) and node.name == "device" and "device" not in scope


# -- names -------------------------------------------------------------------------------------------

def check_names(node: Node, scope: frozenset[str], functions: Mapping[str, Any], features: CELFeatures) -> None:
    """Upstream's checker, for what it can tell without types: names and device fields."""
    if isinstance(node, Ident):
        if node.name not in scope and node.name != "device":
            raise CheckError(node.pos, f"undeclared reference to '{node.name}' (in container '')")
        return
    if isinstance(node, Select):
        _check_select(node, scope, functions, features)
        return
    if isinstance(node, Call):
        _check_call(node, scope, functions, features)
        return
    for child in children(node):
        check_names(child, scope, functions, features)


def _check_select(node: Select, scope: frozenset[str], functions: Mapping[str, Any], features: CELFeatures) -> None:
    if _is_device(node.operand, scope):
        allowed = DEVICE_FIELDS if features.consumable_capacity else DEVICE_FIELDS[:3]
        if node.field not in allowed:
            raise CheckError(node.pos, f"undefined field '{node.field}'")
        return
    check_names(node.operand, scope, functions, features)


def _check_call(node: Call, scope: frozenset[str], functions: Mapping[str, Any], features: CELFeatures) -> None:
    qualified = qualified_name(node)
    if qualified in QUALIFIED_FUNCTIONS and node.target.name not in scope:  # type: ignore[union-attr]
        _check_qualified_call(node, qualified, scope, functions, features)
        return
    if node.target is None and node.name == "has":
        if len(node.args) != 1 or not isinstance(node.args[0], Select):
            raise CheckError(node.pos, "invalid argument to has() macro")
        check_names(node.args[0], scope, functions, features)
        return
    if node.name in MACROS and node.target is not None:
        _check_macro(node, scope, functions, features)
        return
    if node.name not in functions and node.name not in NATIVE_FUNCTIONS:
        raise CheckError(node.pos, f"undeclared reference to '{node.name}' (in container '')")
    for child in children(node):
        check_names(child, scope, functions, features)


def _check_qualified_call(node: Call, qualified: Optional[str], scope: frozenset[str], functions: Mapping[str, Any],
                          features: CELFeatures) -> None:
    if qualified == "cel.bind":
        if len(node.args) != 3 or not isinstance(node.args[0], Ident):
            raise CheckError(node.pos, "cel.bind() variable name must be a simple identifier")
        check_names(node.args[1], scope, functions, features)
        check_names(node.args[2], scope | {node.args[0].name}, functions, features)
        return
    for a in node.args:
        check_names(a, scope, functions, features)


def _check_macro(node: Call, scope: frozenset[str], functions: Mapping[str, Any], features: CELFeatures) -> None:
    if not node.args or not isinstance(node.args[0], Ident):
        raise CheckError(node.pos, "argument must be a simple name")
    check_names(node.target, scope, functions, features)  # type: ignore[arg-type]
    inner = scope | {node.args[0].name}
    for a in node.args[1:]:
        check_names(a, inner, functions, features)


# -- comparisons -------------------------------------------------------------------------------------

# Types whose values only compare with their own type; ordering also compares int, uint and double
# with each other (Kubernetes enables cross-type numeric comparisons).
_COMPARABLE_TYPES = frozenset({"bool", "int", "uint", "double", "string", "bytes", "kubernetes.Quantity",
                               "kubernetes.Semver"})
_NUMERIC_TYPES = frozenset({"int", "uint", "double"})


def scoped_nodes(node: Node, scope: frozenset[str]) -> Iterator[tuple[Node, frozenset[str]]]:
    """Every node in source order, with the variables bound where it stands."""
    stack = [(node, scope)]
    while stack:
        n, sc = stack.pop()
        yield n, sc
        stack.extend(reversed(_scoped_children(n, sc)))


def _scoped_children(node: Node, scope: frozenset[str]) -> list[tuple[Node, frozenset[str]]]:
    if isinstance(node, Call):
        var = _comprehension_variable(node)
        if var is not None and node.target is not None:
            inner = scope | {var.name}
            return [(node.target, scope)] + [(a, inner) for a in node.args[1:]]
        var = _binds(node)
        if var is not None:
            return [(node.args[1], scope), (node.args[2], scope | {var.name})]
    return [(c, scope) for c in children(node)]


def check_comparisons(node: Node, scope: frozenset[str] = frozenset()) -> None:
    """Upstream's overload resolution for `==`, `!=`, `<`, `<=`, `>`, `>=`: operands whose static
    types are known and cannot be compared fail to compile."""
    for n, sc in scoped_nodes(node, scope):
        if isinstance(n, Binary) and n.op in RELATIONS and n.op != "in":
            left, right = static_type(n.left, sc), static_type(n.right, sc)
            if _incomparable(n.op, left, right):
                raise CheckError(n.pos, f"found no matching overload for '_{n.op}_' applied to '({left}, {right})'")


def _incomparable(op: str, left: str, right: str) -> bool:
    if left == right or left not in _COMPARABLE_TYPES or right not in _COMPARABLE_TYPES:
        return False
    return op in ("==", "!=") or not (left in _NUMERIC_TYPES and right in _NUMERIC_TYPES)


# -- static types ------------------------------------------------------------------------------------

_BOOL_FUNCTIONS = frozenset({"has", "all", "exists", "exists_one", "matches", "contains", "startsWith",
                             "endsWith", "isSemver", "isQuantity", "isGreaterThan", "isLessThan", "isInteger",
                             "includes", "isSorted", "hasValue"})
_INT_FUNCTIONS = frozenset({"size", "compareTo", "sign", "major", "minor", "patch", "asInteger", "indexOf",
                            "lastIndexOf", "int"})
_STRING_FUNCTIONS = frozenset({"string", "lowerAscii", "upperAscii", "trim", "replace", "substring", "charAt",
                               "join", "find"})
_RESULT_TYPES: dict[str, str] = {}
for _names, _kind in ((_BOOL_FUNCTIONS, "bool"), (_INT_FUNCTIONS, "int"), (_STRING_FUNCTIONS, "string"),
                      (("double", "asApproximateFloat"), "double"), (("uint",), "uint"),
                      (("map", "filter", "split", "findAll"), "list(dyn)")):
    for _name in _names:
        _RESULT_TYPES.setdefault(_name, _kind)
_DEVICE_FIELD_TYPES = {"driver": "string", "allowMultipleAllocations": "bool",
                       "attributes": "map(string, map(string, dyn))",
                       "capacity": "map(string, map(string, kubernetes.Quantity))"}
_SAME_TYPE_ARITHMETIC = ("int", "uint", "double", "string", "bytes")


def static_type(node: Node, scope: frozenset[str]) -> str:
    """The result type when the expression's shape tells it, else "dyn" (checked at runtime)."""
    typer = _TYPERS.get(type(node))
    return typer(node, scope) if typer is not None else "dyn"


def _one_or_dyn(kinds: set[str]) -> str:
    return kinds.pop() if len(kinds) == 1 else "dyn"


def _lit_type(node: Lit, scope: frozenset[str]) -> str:
    return {"null": "null_type"}.get(node.kind, node.kind)


def _ident_type(node: Ident, scope: frozenset[str]) -> str:
    return "kubernetes.DRADevice" if _is_device(node, scope) else "dyn"


def _select_type(node: Select, scope: frozenset[str]) -> str:
    if _is_device(node.operand, scope):
        return _DEVICE_FIELD_TYPES.get(node.field, "dyn")
    return "dyn"


def _index_type(node: Index, scope: frozenset[str]) -> str:
    if is_device_map(node.operand, scope):
        inner = "kubernetes.Quantity" if node.operand.field == "capacity" else "dyn"  # type: ignore[attr-defined]
        return f"map(string, {inner})"
    return "dyn"


def _unary_type(node: Unary, scope: frozenset[str]) -> str:
    return "bool" if node.op == "!" else static_type(node.operand, scope)


def _binary_type(node: Binary, scope: frozenset[str]) -> str:
    if node.op in RELATIONS or node.op in ("&&", "||"):
        return "bool"
    left, right = static_type(node.left, scope), static_type(node.right, scope)
    return left if left == right and left in _SAME_TYPE_ARITHMETIC else "dyn"


def _cond_type(node: Cond, scope: frozenset[str]) -> str:
    then, other = static_type(node.then, scope), static_type(node.other, scope)
    return then if then == other else "dyn"


def _list_type(node: ListLit, scope: frozenset[str]) -> str:
    return f"list({_one_or_dyn({static_type(i, scope) for i in node.items})})"


def _map_type(node: MapLit, scope: frozenset[str]) -> str:
    keys = _one_or_dyn({static_type(k, scope) for k, _ in node.entries})
    values = _one_or_dyn({static_type(v, scope) for _, v in node.entries})
    return f"map({keys}, {values})"


def _call_type(node: Call, scope: frozenset[str]) -> str:
    var = _binds(node)
    if var is not None:
        return static_type(node.args[2], scope | {var.name})
    kind = _RESULT_TYPES.get(node.name)
    if kind is not None:
        return kind
    if (node.name == "quantity" and node.target is None) or (node.name in ("add", "sub") and node.target is not None):
        return "kubernetes.Quantity"
    if node.name == "semver" and node.target is None:
        return "kubernetes.Semver"
    return "dyn"


_TYPERS: dict[type, Callable[[Any, frozenset[str]], str]] = {
    Lit: _lit_type, Ident: _ident_type, Select: _select_type, Index: _index_type, Unary: _unary_type,
    Binary: _binary_type, Cond: _cond_type, ListLit: _list_type, MapLit: _map_type, Call: _call_type,
}
