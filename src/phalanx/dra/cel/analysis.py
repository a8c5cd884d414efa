"""What a selector reads, so evaluation can do less: the `device` fields it uses (a device's CEL
context holds only those) and the driver name of `device.driver == "<literal>"`."""

from __future__ import annotations

from typing import Optional

from .checker import qualified_name
from .library import MACROS
from .syntax import Binary, Call, Ident, Lit, Node, Select, children

def device_fields(node: Node, scope: frozenset[str] = frozenset()) -> Optional[frozenset[str]]:
    """The `device` fields the expression reads; None when it uses `device` as a whole."""
    used: set[str] = set()
    whole = False

    def walk(n: Node, sc: frozenset[str]) -> None:
        nonlocal whole
        if isinstance(n, Select) and isinstance(n.operand, Ident) and n.operand.name == "device" \
                and "device" not in sc:
            used.add(n.field)
            return
        if isinstance(n, Ident):
            if n.name == "device" and "device" not in sc:
                whole = True
            return
        if isinstance(n, Call):
            if n.name in MACROS and n.target is not None and n.args and isinstance(n.args[0], Ident):
                walk(n.target, sc)
                for a in n.args[1:]:
                    walk(a, sc | {n.args[0].name})
                return
            if qualified_name(n) == "cel.bind" and len(n.args) == 3 and isinstance(n.args[0], Ident):
                walk(n.args[1], sc)
                walk(n.args[2], sc | {n.args[0].name})
                return
        for c in children(n):
            walk(c, sc)

    walk(node, scope)
    return None if whole else frozenset(used)


def string_literal_value(node: Node) -> Optional[str]:
    """The value of a plain quoted string literal without escapes (else None)."""
    if not isinstance(node, Lit) or node.kind != "string":
        return None
    text = node.text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and "\\" not in text and not text.startswith(('"""', "'''")):
        return text[1:-1]
    return None


def driver_literal(node: Node) -> Optional[str]:
    """X for `device.driver == "X"` (either side), the dra-example-driver class selector."""
    if not isinstance(node, Binary) or node.op != "==":
        return None
    for a, b in ((node.left, node.right), (node.right, node.left)):
        if (isinstance(a, Select) and not a.optional and a.field == "driver"
                and isinstance(a.operand, Ident) and a.operand.name == "device"):
            return string_literal_value(b)
    return None

