"""The worst-case cost estimate of a selector, roughly as cel-go's estimator counts: comprehensions
multiply their body's cost by the size of their range."""

from __future__ import annotations

from .checker import qualified_name
from .environment import MAX_ATTRIBUTE_VALUES, MAX_ATTRIBUTES_AND_CAPACITIES
from .library import MACROS
from .syntax import Call, Ident, Index, Lit, ListLit, MapLit, Node, children, is_device_map

_DEFAULT_RANGE = MAX_ATTRIBUTE_VALUES


def _range_size(node: Node, scope: frozenset[str]) -> int:
    if isinstance(node, ListLit):
        return len(node.items)
    if isinstance(node, MapLit):
        return len(node.entries)
    if is_device_map(node, scope):
        return MAX_ATTRIBUTES_AND_CAPACITIES
    if isinstance(node, Index) and is_device_map(node.operand, scope):
        return MAX_ATTRIBUTES_AND_CAPACITIES
    if isinstance(node, Call) and node.name in ("map", "filter") and node.target is not None:
        return _range_size(node.target, scope)
    return _DEFAULT_RANGE


def estimate_cost(node: Node, scope: frozenset[str] = frozenset()) -> int:
    """Worst-case cost in CEL's units, roughly as cel-go's estimator counts them."""
    if isinstance(node, Lit):
        return 0
    if isinstance(node, Ident):
        return 1
    if isinstance(node, Call):
        if node.name in MACROS and node.target is not None and node.args and isinstance(node.args[0], Ident):
            inner = scope | {node.args[0].name}
            body = sum(estimate_cost(a, inner) for a in node.args[1:])
            return estimate_cost(node.target, scope) + _range_size(node.target, scope) * (body + 3)
        if qualified_name(node) == "cel.bind" and len(node.args) == 3 and isinstance(node.args[0], Ident):
            return (estimate_cost(node.args[1], scope)
                    + estimate_cost(node.args[2], scope | {node.args[0].name}) + 1)
        total = 1 + sum(estimate_cost(a, scope) for a in node.args)
        if node.target is not None:
            total += estimate_cost(node.target, scope)
        if node.name == "includes":
            total += MAX_ATTRIBUTE_VALUES
        return total
    return 1 + sum(estimate_cost(c, scope) for c in children(node))
