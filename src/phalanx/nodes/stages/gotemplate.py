"""A Go `text/template` interpreter for the subset KWOK's stage templates use.

No maintained Go-template implementation exists for Python (PyPI's `go-template` binds a Go shared
library and was last released in 2019), so this module reads the part of the language that stage
`statusTemplate`s are written in:

- text and `{{ action }}`s, with `{{-` / `-}}` trimming the whitespace beside them;
- pipelines `a | f b`, parenthesised pipelines, field chains (`.a.b`, `$x.a`, `$`), string, number,
  `true`/`false`/`nil` literals, variables declared with `:=` and re-assigned with `=`;
- `if` / `else if` / `else`, `with` / `else`, `range` (over lists and maps, with `$i, $e :=`,
  and `else`), `end`; scopes as Go's (a variable lives until the `end` of its block);
- Go's builtins `and or not eq ne lt le gt ge len index print printf`, the sprig functions KWOK
  templates reach for (`dict list default quote`), and KWOK's `Quote`, `Now`, `StartTime`, `YAML`,
  `Version`, `NodeConditions`; callers add the rest (`NodeIP`, `PodIPWith`, ...).

Truth follows Go: false, 0, nil and empty strings, lists and maps are false. A missing map key is
nil. `render` raises `TemplateError` naming what it could not read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

__all__ = ["TemplateError", "render", "BUILTINS"]


class TemplateError(ValueError):
    """The template cannot be parsed or executed."""


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|`[^`]*`|\(|\)|\||:=|=|,|[^\s()|,=]+')


# -- the tree ---------------------------------------------------------------------------------
@dataclass
class _Text:
    text: str


@dataclass
class _Action:
    tokens: list[str]


@dataclass
class _Block:
    kind: str  # if | with | range
    tokens: list[str]
    body: list[Any] = field(default_factory=list)
    orelse: list[Any] = field(default_factory=list)


def _lex(src: str) -> list[tuple[str, str]]:
    """("text", s) and ("action", s) pieces, with trim markers applied."""
    out: list[tuple[str, str]] = []
    pos, trim_next = 0, False
    for m in _ACTION.finditer(src):
        text = src[pos:m.start()]
        if trim_next:
            text = text.lstrip()
        if m.group(1):
            text = text.rstrip()
        out.append(("text", text))
        out.append(("action", m.group(2).strip()))
        trim_next, pos = bool(m.group(3)), m.end()
    tail = src[pos:]
    out.append(("text", tail.lstrip() if trim_next else tail))
    return out


def _parse(src: str) -> list[Any]:
    root: list[Any] = []
    stack: list[tuple[_Block | None, list[Any]]] = [(None, root)]
    for kind, text in _lex(src):
        body = stack[-1][1]
        if kind == "text":
            if text:
                body.append(_Text(text))
            continue
        if text.startswith("/*"):
            continue
        tokens = _TOKEN.findall(text)
        if not tokens:
            raise TemplateError("empty action")
        head = tokens[0]
        if head in ("if", "with", "range"):
            block = _Block(head, tokens[1:])
            body.append(block)
            stack.append((block, block.body))
        elif head == "else":
            outer = stack[-1][0]
            if outer is None:
                raise TemplateError("unexpected {{else}}")
            block = outer
            if len(tokens) > 1 and tokens[1] in ("if", "with"):
                inner = _Block(tokens[1], tokens[2:])
                block.orelse.append(inner)
                # the chained block shares the outer block's {{end}}
                stack[-1] = (inner, inner.body)
                inner.orelse = []
            else:
                stack[-1] = (block, block.orelse)
        elif head == "end":
            if len(stack) == 1:
                raise TemplateError("unexpected {{end}}")
            stack.pop()
        elif head in ("define", "template", "block"):
            raise TemplateError(f"{{{{{head}}}}} is not supported")
        else:
            body.append(_Action(tokens))
    if len(stack) != 1:
        raise TemplateError("unexpected EOF: missing {{end}}")
    return root


# -- execution --------------------------------------------------------------------------------
def truth(v: Any) -> bool:
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict, tuple)):
        return len(v) > 0
    return True


def _go_str(v: Any) -> str:
    if v is None:
        return "<no value>"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, list):
        return "[" + " ".join(_go_str(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_str(v[k])}" for k in sorted(v)) + "]"
    return str(v)


def _field(v: Any, name: str) -> Any:
    if isinstance(v, dict):
        return v.get(name)
    if v is None:
        return None
    raise TemplateError(f"can't evaluate field {name} in type {type(v).__name__}")


def _chain(v: Any, path: str) -> Any:
    for part in path.split(".")[1:]:
        if part:
            v = _field(v, part)
    return v


class _Exec:
    def __init__(self, funcs: dict[str, Callable[..., Any]], root: Any):
        self.funcs = funcs
        self.root = root
        self.scopes: list[dict[str, Any]] = [{"$": root}]
        self.out: list[str] = []

    # variables
    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise TemplateError(f'undefined variable "{name}"')

    def assign(self, name: str, value: Any) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = value
                return
        raise TemplateError(f'undefined variable "{name}"')

    # pipelines
    def pipeline(self, tokens: list[str], dot: Any) -> Any:
        decl: list[str] = []
        op = None
        for i, t in enumerate(tokens):
            if t in (":=", "=") and all(x.startswith("$") or x == "," for x in tokens[:i]):
                decl, op, tokens = [x for x in tokens[:i] if x != ","], t, tokens[i + 1:]
                break
        value = self._commands(tokens, dot)
        if op is not None:
            for name in decl:
                if op == ":=":
                    self.scopes[-1][name] = value
                else:
                    self.assign(name, value)
        return value

    def _commands(self, tokens: list[str], dot: Any) -> Any:
        cmds: list[list[str]] = [[]]
        depth = 0
        for t in tokens:
            depth += (t == "(") - (t == ")")
            if t == "|" and depth == 0:
                cmds.append([])
            else:
                cmds[-1].append(t)
        value: Any = _NOARG
        for cmd in cmds:
            if not cmd:
                raise TemplateError("missing command in pipeline")
            value = self._command(cmd, dot, value)
        return value

    def _command(self, cmd: list[str], dot: Any, piped: Any) -> Any:
        args: list[Any] = []
        head = cmd[0]
        is_call = _is_ident(head) and head not in ("true", "false", "nil")
        i = 1 if is_call else 0
        while i < len(cmd):
            value, i = self._operand(cmd, i, dot)
            args.append(value)
        if is_call:
            fn = self.funcs.get(head)
            if fn is None:
                raise TemplateError(f'function "{head}" not defined')
            call = args + ([] if piped is _NOARG else [piped])
            try:
                return fn(*call)
            except TemplateError:
                raise
            except Exception as e:  # a function's own failure, as Go reports it
                raise TemplateError(f"error calling {head}: {e}") from e
        if piped is not _NOARG or len(args) != 1:
            raise TemplateError(f"can't give argument to non-function {head}")
        return args[0]

    def _operand(self, cmd: list[str], i: int, dot: Any) -> tuple[Any, int]:
        t = cmd[i]
        if t == "(":
            depth, j = 1, i + 1
            while j < len(cmd) and depth:
                depth += (cmd[j] == "(") - (cmd[j] == ")")
                j += 1
            if depth:
                raise TemplateError("unclosed left paren")
            value = self._commands(cmd[i + 1:j - 1], dot)
            if j < len(cmd) and cmd[j].startswith("."):
                value, j = _chain(value, cmd[j]), j + 1
            return value, j
        return self._atom(t, dot), i + 1

    def _atom(self, t: str, dot: Any) -> Any:
        if t == ".":
            return dot
        if t.startswith("."):
            return _chain(dot, t)
        if t.startswith("$"):
            name, _, rest = t.partition(".")
            value = self.lookup(name)
            return _chain(value, "." + rest) if rest else value
        if t.startswith('"'):
            return json.loads(t)
        if t.startswith("`"):
            return t[1:-1]
        if t in ("true", "false"):
            return t == "true"
        if t == "nil":
            return None
        if _is_ident(t):
            fn = self.funcs.get(t)
            if fn is None:
                raise TemplateError(f'function "{t}" not defined')
            return fn()
        try:
            return int(t, 0)
        except ValueError:
            pass
        try:
            return float(t)
        except ValueError:
            raise TemplateError(f"unexpected {t!r} in command") from None

    # nodes
    def run(self, nodes: list[Any], dot: Any) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                self.out.append(node.text)
            elif isinstance(node, _Action):
                value = self.pipeline(node.tokens, dot)
                if not _is_declaration(node.tokens):
                    self.out.append(_go_str(value))
            else:
                self._block(node, dot)

    def _scoped(self, nodes: list[Any], dot: Any, names: dict[str, Any] | None = None) -> None:
        self.scopes.append(dict(names or {}))
        try:
            self.run(nodes, dot)
        finally:
            self.scopes.pop()

    def _block(self, node: _Block, dot: Any) -> None:
        if node.kind == "range":
            self._range(node, dot)
            return
        self.scopes.append({})
        try:
            value = self.pipeline(node.tokens, dot)
            if truth(value):
                self.run(node.body, value if node.kind == "with" else dot)
            else:
                self.run(node.orelse, dot)
        finally:
            self.scopes.pop()

    def _range(self, node: _Block, dot: Any) -> None:
        tokens, names = node.tokens, []
        if ":=" in tokens:
            cut = tokens.index(":=")
            names, tokens = [x for x in tokens[:cut] if x != ","], tokens[cut + 1:]
        value = self._commands(tokens, dot)
        if isinstance(value, dict):
            items = [(k, value[k]) for k in sorted(value)]
        elif isinstance(value, (list, tuple)):
            items = list(enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            items = [(i, i) for i in range(value)]
        elif value is None:
            items = []
        else:
            raise TemplateError(f"range can't iterate over {_go_str(value)}")
        if not items:
            self._scoped(node.orelse, dot)
            return
        for k, v in items:
            bound = {names[-1]: v} if names else {}
            if len(names) == 2:
                bound[names[0]] = k
            self._scoped(node.body, v, bound)


class _Marker:
    pass


_NOARG: Any = _Marker()


def _is_declaration(tokens: list[str]) -> bool:
    for i, t in enumerate(tokens):
        if t in (":=", "="):
            return all(x.startswith("$") or x == "," for x in tokens[:i])
    return False


def _is_ident(t: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t))


# -- functions --------------------------------------------------------------------------------
def _eq(a: Any, *bs: Any) -> bool:
    return any(a == b for b in bs)


def _and(*args: Any) -> Any:
    for a in args:
        if not truth(a):
            return a
    return args[-1]


def _or(*args: Any) -> Any:
    for a in args:
        if truth(a):
            return a
    return args[-1]


def _index(v: Any, *keys: Any) -> Any:
    for k in keys:
        if isinstance(v, dict):
            v = v.get(k)
        elif isinstance(v, (list, tuple)):
            if not isinstance(k, int) or not 0 <= k < len(v):
                raise TemplateError(f"index out of range: {k}")
            v = v[k]
        elif v is None:
            return None
        else:
            raise TemplateError(f"can't index item of type {type(v).__name__}")
    return v


def quote_json(s: Any) -> str:
    """KWOK's `Quote`: the value as JSON, itself quoted when it is not a string."""
    data = json.dumps(s, separators=(",", ":"))
    return data if data.startswith('"') else json.dumps(data)


def to_yaml(s: Any, indent: int = 0) -> str:
    """KWOK's `YAML`: the value as YAML; with an indent, every line (after a leading newline) is
    indented by that many levels of two spaces."""
    data = yaml.safe_dump(s, default_flow_style=False, sort_keys=True)
    if indent > 0:
        pad = " " * (indent * 2)
        data = ("\n" + data).replace("\n", "\n" + pad)
    return data


def _printf(fmt: str, *args: Any) -> str:
    py = re.sub(r"%[vsdqt]", lambda m: "%r" if m.group() == "%q" else "%s", fmt)
    return py % tuple(_go_str(a) if not isinstance(a, str) else a for a in args)


def _default(d: Any, v: Any = None) -> Any:
    return v if truth(v) else d


def _dict(*kv: Any) -> dict:
    return {str(kv[i]): (kv[i + 1] if i + 1 < len(kv) else "") for i in range(0, len(kv), 2)}


BUILTINS: dict[str, Callable[..., Any]] = {
    "eq": _eq, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "and": _and, "or": _or,
    "not": lambda a: not truth(a), "len": lambda v: len(v or ()), "index": _index,
    "print": lambda *a: "".join(_go_str(x) for x in a), "printf": _printf,
    "dict": _dict, "list": lambda *a: list(a), "default": _default, "quote": lambda *a: " ".join(
        json.dumps(_go_str(x)) for x in a if x is not None),
    "Quote": quote_json, "YAML": to_yaml,
}


def render(src: str, data: Any, funcs: dict[str, Callable[..., Any]] | None = None) -> str:
    """Execute the template `src` with `data` as dot; `funcs` add to (or override) the builtins."""
    table = dict(BUILTINS)
    table.update(funcs or {})
    ex = _Exec(table, data)
    ex.run(_parse(src), data)
    return "".join(ex.out)
