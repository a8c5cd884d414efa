"""The subset of Go's text/template that scheduler_perf's object templates use.

    tmpl = Template("name: gang-{{DivideInt .Index .podsPerGroup}}")
    tmpl.render({"Index": 7, "podsPerGroup": 3})        # -> "name: gang-2"

Workload files name templates (`podTemplatePath`, `templatePath`, `nodeTemplatePath`) whose text is
rendered once per object with `.Index` (the object's number within its op) and the op's
`templateParams`, then read as YAML. What is understood:

- actions `{{ pipeline }}`, `{{if p}} ... {{else if p}} ... {{else}} ... {{end}}`,
  `{{range p}} ... {{end}}` (over a list or, as Go 1.22 does, an integer `n` -> 0..n-1),
  `{{$x := p}}` / `{{$x = p}}`, comments `{{/* ... */}}`, and the trim markers `{{-` / `-}}`;
- operands `.`, `.Field.Sub`, `$var`, `$var.Field`, numbers, "strings", `true`, `false`, `nil`,
  `( pipeline )`, and pipelines `a | F b` (the value becomes F's last argument);
- functions: scheduler_perf's `AddInt`, `SubtractInt`, `MultiplyInt`, `DivideInt`, `Mod`, plus
  `Int`, `JSON`, `printf` (Go verbs %d %s %v), `len`, `index`, and the builtins `and`, `or`,
  `not`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`.

Missing keys print `<no value>` and are false in conditions, as Go's default `missingkey` does.
A template is parsed once; `render` is cheap enough to run for each of 50,000 pods.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

NO_VALUE = "<no value>"


class TemplateError(ValueError):
    pass


class _Missing:
    """A key that the data does not have: prints `<no value>`, false in conditions."""

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return NO_VALUE


MISSING = _Missing()


def _int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    if isinstance(v, str):
        return int(v.strip())
    if v is None or v is MISSING:
        return 0
    raise TemplateError(f"cannot use {v!r} as an integer")


def _go_div(a: int, b: int) -> int:
    if b == 0:
        raise TemplateError("integer divide by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    if b == 0:
        raise TemplateError("integer divide by zero")
    return a - b * _go_div(a, b)


def _truth(v: Any) -> bool:
    if v is None or v is MISSING:
        return False
    if isinstance(v, (bool, int, float, str, list, tuple, dict)):
        return bool(v)
    return True


def _printf(fmt: str, *args: Any) -> str:
    it = iter(args)

    def verb(m: re.Match) -> str:
        if m.group(0) == "%%":
            return "%"
        v = next(it, MISSING)
        if m.group(1) == "d":
            return str(_int(v))
        if m.group(1) == "q":
            return json.dumps(str(v))
        return _format(v)
    return re.sub(r"%%|%([dsvq])", verb, fmt)


def _format(v: Any) -> str:
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, list):
        return "[" + " ".join(_format(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_format(x)}" for k, x in sorted(v.items())) + "]"
    return str(v)


def _and(*args: Any) -> Any:
    for a in args:
        if not _truth(a):
            return a
    return args[-1]


def _or(*args: Any) -> Any:
    for a in args:
        if _truth(a):
            return a
    return args[-1]


def _cmp(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a, b
    return ("" if a is MISSING else a), ("" if b is MISSING else b)


def _eq(a: Any, *others: Any) -> bool:
    return any(x == y for x, y in (_cmp(a, o) for o in others))


FUNCS: dict[str, Callable[..., Any]] = {
    "AddInt": lambda a, b: _int(a) + _int(b),
    "SubtractInt": lambda a, b: _int(a) - _int(b),
    "MultiplyInt": lambda a, b: _int(a) * _int(b),
    "DivideInt": lambda a, b: _go_div(_int(a), _int(b)),
    "Mod": lambda a, b: _go_mod(_int(a), _int(b)),
    "Int": _int,
    "JSON": lambda v: json.dumps(None if v is MISSING else v),
    "printf": _printf,
    "len": lambda v: len(v),
    "index": lambda v, *keys: _index(v, keys),
    "and": _and,
    "or": _or,
    "not": lambda v: not _truth(v),
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "lt": lambda a, b: _cmp(a, b)[0] < _cmp(a, b)[1],
    "le": lambda a, b: _cmp(a, b)[0] <= _cmp(a, b)[1],
    "gt": lambda a, b: _cmp(a, b)[0] > _cmp(a, b)[1],
    "ge": lambda a, b: _cmp(a, b)[0] >= _cmp(a, b)[1],
}


def _index(v: Any, keys: tuple) -> Any:
    for k in keys:
        if isinstance(v, dict):
            v = v.get(k, MISSING)
        else:
            v = v[_int(k)]
    return v


def _field(v: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        if isinstance(v, dict):
            v = v.get(name, MISSING)
        elif v is MISSING or v is None:
            return MISSING
        else:
            v = getattr(v, name, MISSING)
    return v


# -- expressions ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>"(?:[^"\\]|\\.)*"|`[^`]*`)
    | (?P<num>-?\d+(?:\.\d+)?)
    | (?P<assign>:=|=)
    | (?P<punct>[()|])
    | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
    | (?P<field>(?:\.[A-Za-z0-9_]+)+|\.)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""", re.VERBOSE)


def _tokenize(src: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos or m.lastgroup is None:
            raise TemplateError(f"unexpected {src[pos:]!r} in action {src!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


class _Scope:
    __slots__ = ("dot", "vars")

    def __init__(self, dot: Any, variables: dict[str, Any]):
        self.dot = dot
        self.vars = variables


# An expression is compiled into a closure over a _Scope.
Expr = Callable[[_Scope], Any]


class _ExprParser:
    def __init__(self, tokens: list[tuple[str, str]], source: str):
        self.toks = tokens
        self.i = 0
        self.source = source

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        t = self.peek()
        if t is None:
            raise TemplateError(f"unexpected end of action {self.source!r}")
        self.i += 1
        return t

    def pipeline(self) -> Expr:
        cmds = [self.command()]
        while self.peek() == ("punct", "|"):
            self.take()
            cmds.append(self.command())
        if len(cmds) == 1:
            return cmds[0]
        first, rest = cmds[0], cmds[1:]

        def run(scope: _Scope) -> Any:
            v = first(scope)
            for c in rest:
                v = c(scope, v)
            return v
        return run

    def command(self) -> Any:
        t = self.peek()
        if t is not None and t[0] == "ident" and t[1] in FUNCS:
            self.take()
            fn = FUNCS[t[1]]
            args = []
            while self.peek() is not None and self.peek() not in (("punct", "|"), ("punct", ")")):
                args.append(self.operand())

            def call(scope: _Scope, piped: Any = MISSING, fn=fn, args=args) -> Any:
                vals = [a(scope) for a in args]
                if piped is not MISSING:
                    vals.append(piped)
                return fn(*vals)
            return call
        if t is not None and t[0] == "ident" and t[1] not in ("true", "false", "nil"):
            raise TemplateError(f'function "{t[1]}" not defined')
        op = self.operand()
        if self.peek() is not None and self.peek() not in (("punct", "|"), ("punct", ")")):
            raise TemplateError(f"can't give argument to non-function in {self.source!r}")
        return lambda scope, piped=MISSING, op=op: op(scope)

    def operand(self) -> Expr:
        kind, text = self.take()
        if kind == "punct" and text == "(":
            inner = self.pipeline()
            if self.take() != ("punct", ")"):
                raise TemplateError(f"unclosed '(' in {self.source!r}")
            return lambda scope: inner(scope)
        if kind == "str":
            value = json.loads(text) if text.startswith('"') else text[1:-1]
            return lambda scope: value
        if kind == "num":
            num = float(text) if "." in text else int(text)
            return lambda scope: num
        if kind == "ident":
            const = {"true": True, "false": False, "nil": None}
            if text in const:
                value = const[text]
                return lambda scope: value
            if text in FUNCS:  # a function used as an operand: call it without arguments
                fn = FUNCS[text]
                return lambda scope: fn()
            raise TemplateError(f'function "{text}" not defined')
        if kind == "field":
            path = tuple(p for p in text.split(".") if p)
            return lambda scope: _field(scope.dot, path)
        if kind == "var":
            name, *rest = text.split(".")
            path_t = tuple(rest)

            def var(scope: _Scope) -> Any:
                if name == "$":
                    base = scope.vars.get("$", MISSING)
                elif name not in scope.vars:
                    raise TemplateError(f"undefined variable: {name}")
                else:
                    base = scope.vars[name]
                return _field(base, path_t)
            return var
        raise TemplateError(f"unexpected {text!r} in {self.source!r}")


# -- template structure --------------------------------------------------------------------------

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)


class _Node:
    def render(self, scope: _Scope, out: list[str]) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class _Text(_Node):
    def __init__(self, text: str):
        self.text = text

    def render(self, scope, out):
        out.append(self.text)


class _Print(_Node):
    def __init__(self, expr: Expr):
        self.expr = expr

    def render(self, scope, out):
        out.append(_format(self.expr(scope)))


class _Assign(_Node):
    def __init__(self, name: str, expr: Expr):
        self.name, self.expr = name, expr

    def render(self, scope, out):
        scope.vars[self.name] = self.expr(scope)


class _If(_Node):
    def __init__(self) -> None:
        self.branches: list[tuple[Expr | None, list[_Node]]] = []

    def render(self, scope, out):
        for cond, body in self.branches:
            if cond is None or _truth(cond(scope)):
                for n in body:
                    n.render(scope, out)
                return


class _Range(_Node):
    def __init__(self, expr: Expr, key_var: str | None, value_var: str | None):
        self.expr, self.key_var, self.value_var = expr, key_var, value_var
        self.body: list[_Node] = []
        self.else_body: list[_Node] = []

    def render(self, scope, out):
        v = self.expr(scope)
        if isinstance(v, bool):
            raise TemplateError("range can't iterate over a bool")
        if isinstance(v, int):
            items = list(enumerate(range(v)))
        elif isinstance(v, dict):
            items = sorted(v.items())
        elif v is None or v is MISSING:
            items = []
        else:
            items = list(enumerate(v))
        if not items:
            for n in self.else_body:
                n.render(scope, out)
            return
        for k, item in items:
            inner = _Scope(item, dict(scope.vars))
            if self.key_var:
                inner.vars[self.key_var] = k
            if self.value_var:
                inner.vars[self.value_var] = item
            for n in self.body:
                n.render(inner, out)


_ASSIGN = re.compile(r"^\s*(\$[A-Za-z0-9_]+)\s*(?::=|=)\s*(.*)$", re.DOTALL)
_RANGE_VARS = re.compile(r"^\s*(\$[A-Za-z0-9_]+)\s*(?:,\s*(\$[A-Za-z0-9_]+)\s*)?:=\s*(.*)$", re.DOTALL)


def _pieces(text: str) -> list[tuple[str, str]]:
    """The template as ("text", s) and ("action", s) pieces, `{{-` / `-}}` trimming applied."""
    pieces: list[tuple[str, str]] = []
    pos = 0
    trim_next = False
    for m in _ACTION.finditer(text):
        chunk = text[pos:m.start()]
        if trim_next:
            chunk = chunk.lstrip()
        if m.group(1):
            chunk = chunk.rstrip()
        pieces.append(("text", chunk))
        pieces.append(("action", m.group(2)))
        trim_next = bool(m.group(3))
        pos = m.end()
    tail = text[pos:]
    pieces.append(("text", tail.lstrip() if trim_next else tail))
    return pieces


class Template:
    """A parsed template; `render(data)` returns the text."""

    def __init__(self, text: str, name: str = "template"):
        self.name = name
        self.source = text
        self.root = self._parse(text)

    def render(self, data: dict[str, Any]) -> str:
        out: list[str] = []
        scope = _Scope(data, {"$": data})
        for n in self.root:
            n.render(scope, out)
        return "".join(out)

    # -- parsing ---------------------------------------------------------------------------------
    def _parse(self, text: str) -> list[_Node]:
        root: list[_Node] = []
        stack: list[tuple[Any, list[_Node]]] = [(None, root)]
        for kind, s in _pieces(text):
            body = stack[-1][1]
            if kind == "text":
                if s:
                    body.append(_Text(s))
                continue
            act = s.strip()
            if act.startswith("/*"):
                continue
            word = act.split(None, 1)[0] if act else ""
            rest = act[len(word):].strip()
            if word in ("if", "range"):
                node, node_body = self._if(rest) if word == "if" else self._range(rest)
                body.append(node)
                stack.append((node, node_body))
            elif word == "else":
                self._else(stack, rest)
            elif word == "end":
                if len(stack) == 1:
                    raise TemplateError(f"{self.name}: unexpected {{{{end}}}}")
                stack.pop()
            elif word in ("with", "define", "template", "block", "break", "continue"):
                raise TemplateError(f"{self.name}: {{{{{word}}}}} is not supported")
            else:
                body.append(self._assign_or_print(act))
        if len(stack) != 1:
            raise TemplateError(f"{self.name}: unexpected EOF (missing {{{{end}}}})")
        return root

    def _if(self, rest: str) -> tuple[_Node, list[_Node]]:
        node = _If()
        node.branches.append((self._expr(rest), []))
        return node, node.branches[-1][1]

    def _range(self, rest: str) -> tuple[_Node, list[_Node]]:
        m = _RANGE_VARS.match(rest)
        if m:
            first, second, expr = m.group(1), m.group(2), m.group(3)
            key_var, value_var = (first, second) if second else (None, first)
            node = _Range(self._expr(expr), key_var, value_var)
        else:
            node = _Range(self._expr(rest), None, None)
        return node, node.body

    def _else(self, stack: list[tuple[Any, list[_Node]]], rest: str) -> None:
        """`else` / `else if`: the open if gets another branch, the open range its else body."""
        owner = stack[-1][0]
        if isinstance(owner, _If):
            stack.pop()
            owner.branches.append((self._expr(rest[3:]) if rest.startswith("if ") else None, []))
            stack.append((owner, owner.branches[-1][1]))
        elif isinstance(owner, _Range):
            stack.pop()
            stack.append((owner, owner.else_body))
        else:
            raise TemplateError(f"{self.name}: unexpected {{{{else}}}}")

    def _assign_or_print(self, act: str) -> _Node:
        m = _ASSIGN.match(act)
        if m:
            return _Assign(m.group(1), self._expr(m.group(2)))
        return _Print(self._expr(act))

    def _expr(self, src: str) -> Expr:
        try:
            p = _ExprParser(_tokenize(src), src)
            e = p.pipeline()
            extra = p.peek()
            if extra is not None:
                raise TemplateError(f"unexpected {extra[1]!r} in {src!r}")
        except TemplateError as err:
            raise TemplateError(f"{self.name}: {err}") from None
        return lambda scope: e(scope)
