"""Rewrites the Rust CEL library needs: `cel.bind` -> a one-element map, optional selection and
indexing -> conditionals over `has()` / `in`, and `device.attributes[d]` / `device.capacity[d]` ->
an empty map for an unknown domain."""

from __future__ import annotations

from typing import Any, Callable

from .library import MACROS
from .syntax import Binary, Call, Cond, Ident, Index, Lit, ListLit, MapLit, Node, Select, Unary, is_device_map


def rewrite(node: Node, scope: frozenset[str] = frozenset()) -> Node:
    """Lower cel.bind, optional selection and domain lookups to what the Rust library evaluates."""
    rewriter = _REWRITERS.get(type(node))
    return rewriter(node, scope) if rewriter is not None else node


def _optional_of(value: Node) -> Node:
    return Call(Ident("optional"), "of", [value])


def _optional_none() -> Node:
    return Call(Ident("optional"), "none", [])


def _rewrite_call(node: Call, scope: frozenset[str]) -> Node:
    if (node.name == "bind" and isinstance(node.target, Ident) and node.target.name == "cel"
            and "cel" not in scope and len(node.args) == 3 and isinstance(node.args[0], Ident)):
        var = node.args[0]
        init = rewrite(node.args[1], scope)
        body = rewrite(node.args[2], scope | {var.name})
        return Index(Call(ListLit([init]), "map", [var, body]), Lit("0", "int"))
    if node.name in MACROS and node.target is not None and node.args and isinstance(node.args[0], Ident):
        inner = scope | {node.args[0].name}
        return Call(rewrite(node.target, scope), node.name,
                    [node.args[0]] + [rewrite(a, inner) for a in node.args[1:]], node.pos)
    target = rewrite(node.target, scope) if node.target is not None else None
    return Call(target, node.name, [rewrite(a, scope) for a in node.args], node.pos)


def _rewrite_select(node: Select, scope: frozenset[str]) -> Node:
    operand = rewrite(node.operand, scope)
    if node.optional:
        plain = Select(operand, node.field)
        return Cond(Call(None, "has", [plain]), _optional_of(plain), _optional_none())
    return Select(operand, node.field, False, node.pos)


def _rewrite_index(node: Index, scope: frozenset[str]) -> Node:
    operand = rewrite(node.operand, scope)
    index = rewrite(node.index, scope)
    if node.optional:
        return Cond(Binary("in", index, operand), _optional_of(Index(operand, index)), _optional_none())
    if is_device_map(node.operand, scope):
        return Cond(Binary("in", index, operand), Index(operand, index), MapLit([]))
    return Index(operand, index, False, node.pos)


_REWRITERS: dict[type, Callable[[Any, frozenset[str]], Node]] = {
    Call: _rewrite_call, Select: _rewrite_select, Index: _rewrite_index,
    Unary: lambda n, sc: Unary(n.op, rewrite(n.operand, sc), n.pos),
    Binary: lambda n, sc: Binary(n.op, rewrite(n.left, sc), rewrite(n.right, sc), n.pos),
    Cond: lambda n, sc: Cond(rewrite(n.cond, sc), rewrite(n.then, sc), rewrite(n.other, sc), n.pos),
    ListLit: lambda n, sc: ListLit([rewrite(i, sc) for i in n.items], n.pos),
    MapLit: lambda n, sc: MapLit([(rewrite(k, sc), rewrite(v, sc)) for k, v in n.entries], n.pos),
}
