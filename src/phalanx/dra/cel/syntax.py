"""A small CEL parser of our own (for checks and rewrites): tokens, the syntax tree, the parser and
the printer that turns a tree back into CEL source."""

from __future__ import annotations

import re
from typing import Iterable, Optional

_TOKEN_RE = re.compile(r"""
  (?P<ws>\s+|//[^\n]*)
| (?P<str>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
| (?P<num>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
| (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
""", re.X)


class ParseError(Exception):
    pass


class Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind, self.text, self.pos = kind, text, pos


def tokenize(src: str) -> list[Token]:
    toks: list[Token] = []
    pos = 0
    n = len(src)
    while pos < n:
        m = _TOKEN_RE.match(src, pos)
        if not m:
            raise ParseError(f"unexpected character at {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            toks.append(Token(kind, m.group(), pos))
        pos = m.end()
    toks.append(Token("eof", "", n))
    return toks


class Node:
    __slots__ = ("pos",)


class Lit(Node):
    __slots__ = ("text", "kind")

    def __init__(self, text: str, kind: str, pos: int = 0):
        self.text, self.kind, self.pos = text, kind, pos


class Ident(Node):
    __slots__ = ("name",)

    def __init__(self, name: str, pos: int = 0):
        self.name, self.pos = name, pos


class Select(Node):
    __slots__ = ("operand", "field", "optional")

    def __init__(self, operand: Node, field: str, optional: bool = False, pos: int = 0):
        self.operand, self.field, self.optional, self.pos = operand, field, optional, pos


class Index(Node):
    __slots__ = ("operand", "index", "optional")

    def __init__(self, operand: Node, index: Node, optional: bool = False, pos: int = 0):
        self.operand, self.index, self.optional, self.pos = operand, index, optional, pos


class Call(Node):
    __slots__ = ("target", "name", "args")

    def __init__(self, target: Optional[Node], name: str, args: list[Node], pos: int = 0):
        self.target, self.name, self.args, self.pos = target, name, args, pos


class Unary(Node):
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Node, pos: int = 0):
        self.op, self.operand, self.pos = op, operand, pos


class Binary(Node):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Node, right: Node, pos: int = 0):
        self.op, self.left, self.right, self.pos = op, left, right, pos


class Cond(Node):
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond: Node, then: Node, other: Node, pos: int = 0):
        self.cond, self.then, self.other, self.pos = cond, then, other, pos


class ListLit(Node):
    __slots__ = ("items",)

    def __init__(self, items: list[Node], pos: int = 0):
        self.items, self.pos = items, pos


class MapLit(Node):
    __slots__ = ("entries",)

    def __init__(self, entries: list[tuple[Node, Node]], pos: int = 0):
        self.entries, self.pos = entries, pos


RELATIONS = frozenset({"<", "<=", ">", ">=", "==", "!=", "in"})


class Parser:
    def __init__(self, src: str):
        self.toks = tokenize(src)
        self.i = 0

    def peek(self, offset: int = 0) -> Token:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> Optional[Token]:
        t = self.peek()
        if t.kind in ("op", "ident") and t.text == text:
            self.i += 1
            return t
        return None

    def expect(self, text: str) -> Token:
        t = self.accept(text)
        if t is None:
            raise ParseError(f"expected {text!r} at {self.peek().pos}")
        return t

    def parse(self) -> Node:
        node = self.expr()
        if self.peek().kind != "eof":
            raise ParseError(f"unexpected {self.peek().text!r}")
        return node

    def expr(self) -> Node:
        cond = self.or_expr()
        q = self.accept("?")
        if q is None:
            return cond
        then = self.or_expr()
        self.expect(":")
        return Cond(cond, then, self.expr(), q.pos)

    def or_expr(self) -> Node:
        left = self.and_expr()
        while (t := self.accept("||")) is not None:
            left = Binary("||", left, self.and_expr(), t.pos)
        return left

    def and_expr(self) -> Node:
        left = self.relation()
        while (t := self.accept("&&")) is not None:
            left = Binary("&&", left, self.relation(), t.pos)
        return left

    def relation(self) -> Node:
        left = self.addition()
        while self.peek().text in RELATIONS and self.peek().kind in ("op", "ident"):
            t = self.take()
            left = Binary(t.text, left, self.addition(), t.pos)
        return left

    def addition(self) -> Node:
        left = self.multiplication()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            t = self.take()
            left = Binary(t.text, left, self.multiplication(), t.pos)
        return left

    def multiplication(self) -> Node:
        left = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/", "%"):
            t = self.take()
            left = Binary(t.text, left, self.unary(), t.pos)
        return left

    def unary(self) -> Node:
        t = self.peek()
        if t.kind == "op" and t.text in ("!", "-"):
            self.take()
            return Unary(t.text, self.unary(), t.pos)
        return self.member()

    def args(self, close: str) -> list[Node]:
        items: list[Node] = []
        if self.accept(close):
            return items
        while True:
            items.append(self.expr())
            if self.accept(close):
                return items
            self.expect(",")
            if self.accept(close):  # trailing comma (lists and maps)
                return items

    def member(self) -> Node:
        node = self.primary()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text == ".":
                self.take()
                optional = self.accept("?") is not None
                name = self.take()
                if name.kind != "ident":
                    raise ParseError(f"expected a field name at {name.pos}")
                if not optional and self.accept("("):
                    node = Call(node, name.text, self.args(")"), name.pos)
                else:
                    node = Select(node, name.text, optional, name.pos)
            elif t.kind == "op" and t.text == "[":
                self.take()
                optional = self.accept("?") is not None
                index = self.expr()
                self.expect("]")
                node = Index(node, index, optional, t.pos)
            else:
                return node

    def primary(self) -> Node:
        t = self.take()
        if t.kind == "ident":
            return self.identifier(t)
        if t.kind == "num":
            return _number(t)
        if t.kind == "str":
            prefix = t.text[: len(t.text) - len(t.text.lstrip("rRbB"))].lower()
            return Lit(t.text, "bytes" if "b" in prefix else "string", t.pos)
        if t.kind == "op":
            return self.bracketed(t)
        raise ParseError(f"unexpected {t.text!r} at {t.pos}")

    def identifier(self, t: Token) -> Node:
        if t.text in ("true", "false"):
            return Lit(t.text, "bool", t.pos)
        if t.text == "null":
            return Lit(t.text, "null", t.pos)
        if self.peek().kind == "op" and self.peek().text == "{":
            raise ParseError("message construction is not supported")
        if self.accept("("):
            return Call(None, t.text, self.args(")"), t.pos)
        return Ident(t.text, t.pos)

    def bracketed(self, t: Token) -> Node:
        if t.text == "(":
            node = self.expr()
            self.expect(")")
            return node
        if t.text == "[":
            return ListLit(self.args("]"), t.pos)
        if t.text == "{":
            return MapLit(self.entries(), t.pos)
        if t.text == ".":
            raise ParseError("absolute names are not supported")
        raise ParseError(f"unexpected {t.text!r} at {t.pos}")

    def entries(self) -> list[tuple[Node, Node]]:
        entries: list[tuple[Node, Node]] = []
        if self.accept("}"):
            return entries
        while True:
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr()))
            if self.accept("}"):
                return entries
            self.expect(",")
            if self.accept("}"):
                return entries


def _number(t: Token) -> Lit:
    text = t.text.lower()
    if text.endswith("u"):
        kind = "uint"
    elif "." in text or ("e" in text and not text.startswith("0x")):
        kind = "double"
    else:
        kind = "int"
    return Lit(t.text, kind, t.pos)


def print_node(node: Node) -> str:
    """CEL source for a node; operands of postfix operators are parenthesized when needed."""
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Ident):
        return node.name
    if isinstance(node, Select):
        return f"{_operand_text(node.operand)}.{'?' if node.optional else ''}{node.field}"
    if isinstance(node, Index):
        return f"{_operand_text(node.operand)}[{'?' if node.optional else ''}{print_node(node.index)}]"
    if isinstance(node, Call):
        args = ", ".join(print_node(a) for a in node.args)
        if node.target is None:
            return f"{node.name}({args})"
        return f"{_operand_text(node.target)}.{node.name}({args})"
    if isinstance(node, Unary):
        return f"{node.op}{_operand_text(node.operand)}"
    if isinstance(node, Binary):
        return f"({print_node(node.left)} {node.op} {print_node(node.right)})"
    if isinstance(node, Cond):
        return f"({print_node(node.cond)} ? {print_node(node.then)} : {print_node(node.other)})"
    if isinstance(node, ListLit):
        return "[" + ", ".join(print_node(i) for i in node.items) + "]"
    if isinstance(node, MapLit):
        return "{" + ", ".join(f"{print_node(k)}: {print_node(v)}" for k, v in node.entries) + "}"
    raise TypeError(node)


def _operand_text(node: Node) -> str:
    text = print_node(node)
    if isinstance(node, (Unary,)):
        return f"({text})"
    return text



def children(node: Node) -> Iterable[Node]:
    if isinstance(node, Select):
        return (node.operand,)
    if isinstance(node, Index):
        return (node.operand, node.index)
    if isinstance(node, Call):
        return ((node.target,) if node.target is not None else ()) + tuple(node.args)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Cond):
        return (node.cond, node.then, node.other)
    if isinstance(node, ListLit):
        return tuple(node.items)
    if isinstance(node, MapLit):
        return tuple(x for kv in node.entries for x in kv)
    return ()


def is_device_map(node: Node, scope: frozenset[str]) -> bool:
    return (isinstance(node, Select) and not node.optional and node.field in ("attributes", "capacity")
            and isinstance(node.operand, Ident) and node.operand.name == "device" and "device" not in scope)
