"""Label and field selectors, parsed and matched as kube-apiserver does.

Label selectors come in two shapes:

    sel = parse_label_selector("app=web,tier in (a,b),!canary")     # ?labelSelector=...
    sel = label_selector_from_object({"matchLabels": {"app": "web"}})  # metav1.LabelSelector
    sel.matches({"app": "web", "tier": "a"})    # True
    str(sel)                                    # "!canary,app=web,tier in (a,b)" (canonical)
    sel.equality_requirements()                 # {"app": "web"} when only `=`/`==`/`in (x)`, else None

Field selectors (`?fieldSelector=metadata.name=p,status.phase!=Running`):

    fs = parse_field_selector("metadata.name=p")
    fs.matches(lambda field: {"metadata.name": "p"}.get(field))
    fs.requirements                              # [("metadata.name", "=", "p")]

Node affinity terms (core `NodeSelectorTerm`) are compiled once and matched per node:

    term = compile_node_selector_term({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]})
    term.matches(node)                           # or node_selector_term_matches(term_dict, node)

Parse errors raise `ValueError` carrying upstream's message. Parsed selectors are immutable and
`parse_label_selector` / `parse_field_selector` are memoised, so a watch or list handler can call
them per request without cost.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Optional

from .errors import go_repr
from .names import label_value_errors, qualified_name_errors

# Operators (k8s.io/apimachinery/pkg/selection).
IN = "in"
NOT_IN = "notin"
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_BINARY_OPERATORS = [IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN]
_VALID_OPERATORS = _BINARY_OPERATORS + [EXISTS, DOES_NOT_EXIST]

# How many values each operator takes (least, most) and upstream's message when the count is wrong.
_VALUE_COUNTS: dict[str, tuple[int, float, str]] = {
    **dict.fromkeys((IN, NOT_IN), (1, float("inf"), "for 'in', 'notin' operators, values set can't be empty")),
    **dict.fromkeys((EQUALS, DOUBLE_EQUALS, NOT_EQUALS), (1, 1, "exact-match compatibility requires one single value")),
    **dict.fromkeys((EXISTS, DOES_NOT_EXIST), (0, 0, "values set must be empty for exists and does not exist")),
    **dict.fromkeys((GREATER_THAN, LESS_THAN), (1, 1, "for 'Gt', 'Lt' operators, exactly one value is required")),
}

_MIN_INT64 = -(1 << 63)
_MAX_INT64 = (1 << 63) - 1


def _parse_int64(text: str) -> Optional[int]:
    """Go's strconv.ParseInt(text, 10, 64), or None."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    n = int(text)
    return n if _MIN_INT64 <= n <= _MAX_INT64 else None


def _go_string_slice(values: Optional[list[Any]]) -> str:
    """`%#v` of a Go []string, as field errors print a rejected value list."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_repr(v) for v in values) + "}"


def _field_error(path: str, body: str) -> str:
    return f"{path}: {body}"


def _aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message alone, several in brackets (duplicates
    dropped, first occurrence kept)."""
    seen = list(dict.fromkeys(messages))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def _key_error(key: str, path: str) -> Optional[str]:
    msgs = qualified_name_errors(key)
    if msgs:
        return _field_error(path, f"Invalid value: {go_repr(key)}: " + "; ".join(msgs))
    return None


def _join_path(base: str, child: str) -> str:
    return f"{base}.{child}" if base else child


class Requirement:
    """One `key op values` term of a label selector (upstream `labels.Requirement`)."""

    __slots__ = ("key", "operator", "values", "_value_set", "_int")

    def __init__(self, key: str, operator: str, values: Iterable[str] = ()):
        self.key = key
        self.operator = operator
        self.values: tuple[str, ...] = tuple(values)
        self._value_set = frozenset(self.values)
        self._int = _parse_int64(self.values[0]) if operator in (GREATER_THAN, LESS_THAN) and len(self.values) == 1 else None

    @classmethod
    def new(cls, key: str, operator: str, values: Optional[list[str]], path: str = "") -> "Requirement":
        """Validate as upstream's NewRequirement; raises ValueError with its aggregate message."""
        errs: list[str] = []
        e = _key_error(key, _join_path(path, "key"))
        if e:
            errs.append(e)
        vals = values if values is not None else None
        n = len(vals or [])
        values_path = _join_path(path, "values")
        counts = _VALUE_COUNTS.get(operator)
        if counts is not None:
            least, most, rule = counts
            if not least <= n <= most:
                errs.append(_field_error(values_path, f"Invalid value: {_go_string_slice(vals)}: {rule}"))
            if operator == GREATER_THAN or operator == LESS_THAN:
                for i, v in enumerate(vals or []):
                    if _parse_int64(v) is None:
                        errs.append(_field_error(f"{values_path}[{i}]", f"Invalid value: {go_repr(v)}: "
                                                                        "for 'Gt', 'Lt' operators, the value must be an integer"))
        else:
            supported = ", ".join(go_repr(o) for o in _VALID_OPERATORS)
            errs.append(_field_error(_join_path(path, "operator"),
                                     f"Unsupported value: {go_repr(operator)}: supported values: {supported}"))
        for i, v in enumerate(vals or []):
            msgs = label_value_errors(v)
            if msgs:
                errs.append(_field_error(f"{values_path}[{i}][{key}]", f"Invalid value: {go_repr(v)}: " + "; ".join(msgs)))
        if errs:
            raise ValueError(_aggregate(errs))
        return cls(key, operator, vals or ())

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (EQUALS, DOUBLE_EQUALS, IN):
            v = labels.get(self.key)
            return v is not None and v in self._value_set
        if op in (NOT_EQUALS, NOT_IN):
            v = labels.get(self.key)
            return v is None or v not in self._value_set
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            v = labels.get(self.key)
            if v is None or self._int is None:
                return False
            n = _parse_int64(v)
            if n is None:
                return False
            return n > self._int if op == GREATER_THAN else n < self._int
        return False

    def __str__(self) -> str:
        op = self.operator
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        if op == EXISTS:
            return self.key
        vals = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({vals})"
        sym = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{sym}{vals}"

    def __repr__(self) -> str:
        return f"Requirement({self.key!r}, {self.operator!r}, {list(self.values)!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Requirement) and self.key == other.key and self.operator == other.operator
                and self.values == other.values)

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))


class LabelSelector:
    """An AND of requirements; `LabelSelector.nothing()` matches no object at all."""

    __slots__ = ("requirements", "_equality", "_nothing", "_string")

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False):
        reqs = sorted(requirements, key=lambda r: r.key)
        self.requirements: tuple[Requirement, ...] = tuple(reqs)
        self._nothing = nothing
        eq: dict[str, str] = {}
        equality_only = not nothing
        for r in reqs:
            if r.operator in (EQUALS, DOUBLE_EQUALS) or (r.operator == IN and len(r.values) == 1):
                if r.key in eq and eq[r.key] != r.values[0]:
                    equality_only = False
                    break
                eq[r.key] = r.values[0]
            else:
                equality_only = False
                break
        self._equality: Optional[dict[str, str]] = eq if equality_only else None
        self._string: Optional[str] = None

    @classmethod
    def everything(cls) -> "LabelSelector":
        return _EVERYTHING

    @classmethod
    def nothing(cls) -> "LabelSelector":
        return _NOTHING

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (matches every object)."""
        return not self._nothing and not self.requirements

    @property
    def is_nothing(self) -> bool:
        return self._nothing

    def matches(self, labels: Optional[Mapping[str, str]]) -> bool:
        if self._nothing:
            return False
        labels = labels or {}
        eq = self._equality
        if eq is not None:
            get = labels.get
            for k, v in eq.items():
                if get(k) != v:
                    return False
            return True
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def equality_requirements(self) -> Optional[dict[str, str]]:
        """{key: value} when every requirement is an exact match (so callers can use an index);
        None when any requirement needs a scan. An empty selector gives {}."""
        return None if self._equality is None else dict(self._equality)

    def requires_exact_match(self, key: str) -> Optional[str]:
        """Upstream RequiresExactMatch: the single value `key` must have, if the selector says so."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        if self._string is None:
            self._string = "" if self._nothing else ",".join(str(r) for r in self.requirements)
        return self._string

    def __repr__(self) -> str:
        return "LabelSelector(<nothing>)" if self._nothing else f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LabelSelector) and self._nothing == other._nothing
                and self.requirements == other.requirements)

    def __hash__(self) -> int:
        return hash((self._nothing, self.requirements))


_EVERYTHING = LabelSelector()
_NOTHING = LabelSelector(nothing=True)


# -- the query-string parser (upstream labels.Parse) ---------------------------------------------

_ERROR, _EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _IDENT, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)
_TOKENS = {")": _CLOSE, ",": _COMMA, "!": _NOT, "==": _DEQ, "=": _EQ, ">": _GT, "in": _IN, "<": _LT,
           "!=": _NEQ, "notin": _NOTIN, "(": _OPEN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    n = len(s)
    i = 0
    while True:
        while i < n and s[i] in _WHITESPACE:
            i += 1
        if i >= n:
            items.append((_EOS, ""))
            return items
        ch = s[i]
        if ch in _SPECIAL:
            buf = ""
            last: Optional[tuple[int, str]] = None
            while i < n and s[i] in _SPECIAL:
                candidate = buf + s[i]
                tok = _TOKENS.get(candidate)
                if tok is not None:
                    buf = candidate
                    last = (tok, candidate)
                    i += 1
                elif last is not None:
                    break
                else:
                    buf = candidate
                    i += 1
            if last is None:
                items.append((_ERROR, f"error expected: keyword found '{buf}'"))
            else:
                items.append(last)
        else:
            start = i
            while i < n and s[i] not in _SPECIAL and s[i] not in _WHITESPACE:
                i += 1
            word = s[start:i]
            items.append((_TOKENS.get(word, _IDENT), word))


class _Parser:
    __slots__ = ("items", "pos")

    def __init__(self, text: str):
        self.items = _lex(text)
        self.pos = 0

    def lookahead(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_IN, _NOTIN):
            tok = _IDENT
        return tok, lit

    def consume(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        self.pos += 1
        if values and tok in (_IN, _NOTIN):
            tok = _IDENT
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_IDENT, _NOT):
                try:
                    reqs.append(self.requirement())
                except ValueError as e:
                    raise ValueError(f"unable to parse requirement: {e}") from None
                t, l = self.consume(True)
                if t == _EOS:
                    return reqs
                if t == _COMMA:
                    t2, l2 = self.lookahead(True)
                    if t2 not in (_IDENT, _NOT):
                        raise ValueError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise ValueError(f"found '{l}', expected: ',' or 'end of string'")
            elif tok == _EOS:
                return reqs
            else:
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        operator = ""
        tok, lit = self.consume(True)
        if tok == _NOT:
            operator = DOES_NOT_EXIST
            tok, lit = self.consume(True)
        if tok != _IDENT:
            raise ValueError(f"found '{lit}', expected: identifier")
        e = _key_error(lit, "")
        if e:
            raise ValueError(e)
        key = lit
        t, _ = self.lookahead(True)
        if t in (_EOS, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return Requirement.new(key, operator, [])
        tok, lit = self.consume(False)
        operator = {_IN: IN, _EQ: EQUALS, _DEQ: DOUBLE_EQUALS, _GT: GREATER_THAN, _LT: LESS_THAN,
                    _NOTIN: NOT_IN, _NEQ: NOT_EQUALS}.get(tok, "")
        if not operator:
            raise ValueError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        values = self.set_values() if operator in (IN, NOT_IN) else self.exact_value()
        return Requirement.new(key, operator, sorted(values))

    def set_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != _OPEN:
            raise ValueError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_IDENT, _COMMA):
            values = self.identifiers()
            tok, _ = self.consume(True)
            if tok != _CLOSE:
                raise ValueError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CLOSE:
            self.consume(True)
            return {""}
        raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == _IDENT:
                values.add(lit)
                t2, l2 = self.lookahead(True)
                if t2 == _COMMA:
                    continue
                if t2 == _CLOSE:
                    return values
                raise ValueError(f"found '{l2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not values:
                    values.add("")
                t2, _ = self.lookahead(True)
                if t2 == _CLOSE:
                    values.add("")
                    return values
                if t2 == _COMMA:
                    self.consume(True)
                    values.add("")
                continue
            raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead(True)
        if tok in (_EOS, _COMMA):
            return {""}
        tok, lit = self.consume(True)
        if tok == _IDENT:
            return {lit}
        raise ValueError(f"found '{lit}', expected: identifier")


@lru_cache(maxsize=4096)
def parse_label_selector(selector: str) -> LabelSelector:
    """Parse the `labelSelector` query-string syntax (upstream `labels.Parse`)."""
    nul = selector.find("\x00")  # upstream's lexer stops at a NUL byte
    if nul >= 0:
        selector = selector[:nul]
    reqs = _Parser(selector).parse()
    return LabelSelector(reqs) if reqs else _EVERYTHING


_SELECTOR_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_object(selector: Optional[Mapping[str, Any]]) -> LabelSelector:
    """A metav1.LabelSelector as upstream's LabelSelectorAsSelector converts it.

    None selects nothing; an empty selector (no matchLabels, no matchExpressions) selects
    everything. Errors raise ValueError with upstream's text.
    """
    if selector is None:
        return _NOTHING
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return _EVERYTHING
    reqs = [Requirement.new(k, EQUALS, [v]) for k, v in match_labels.items()]
    for expr in expressions:
        op = _SELECTOR_OPERATORS.get(expr.get("operator", ""))
        if op is None:
            raise ValueError(f"{go_repr(expr.get('operator', ''))} is not a valid label selector operator")
        values = expr.get("values")
        reqs.append(Requirement.new(expr.get("key", ""), op, list(values) if values else None))
    return LabelSelector(reqs)


# -- node selector terms (core v1 NodeSelectorTerm, component-helpers nodeaffinity) -------------

_NODE_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST,
                   "Gt": GREATER_THAN, "Lt": LESS_THAN}


class NodeSelectorTerm:
    """A compiled NodeSelectorTerm: labels via `matchExpressions`, `metadata.name` via `matchFields`.

    `errors` lists what upstream reports when parsing the term; a term with errors, or with no
    requirement at all, matches no node.
    """

    __slots__ = ("labels", "fields", "errors")

    def __init__(self, term: Optional[Mapping[str, Any]], path: str = ""):
        self.labels: Optional[LabelSelector] = None
        self.fields: Optional[list[tuple[str, bool, str]]] = None
        self.errors: list[str] = []
        term = term or {}
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if exprs:
            reqs = []
            for i, e in enumerate(exprs):
                p = _join_path(path, "matchExpressions") + f"[{i}]"
                op = _NODE_OPERATORS.get(e.get("operator", ""))
                if op is None:
                    supported = ", ".join(go_repr(o) for o in _NODE_OPERATORS)
                    self.errors.append(_field_error(p + ".operator", f"Unsupported value: {go_repr(e.get('operator', ''))}: "
                                                                     f"supported values: {supported}"))
                    continue
                try:
                    values = e.get("values")
                    reqs.append(Requirement.new(e.get("key", ""), op, list(values) if values else None, p))
                except ValueError as err:
                    self.errors.append(str(err))
            if not self.errors:
                self.labels = LabelSelector(reqs)
        if fields:
            parsed = []
            for i, f in enumerate(fields):
                p = _join_path(path, "matchFields") + f"[{i}]"
                op = f.get("operator", "")
                values = f.get("values") or []
                if op in ("In", "NotIn"):
                    if len(values) != 1:
                        self.errors.append(_field_error(p + ".values", f"Invalid value: {_go_string_slice(f.get('values'))}: "
                                                                       "must have one element"))
                    else:
                        parsed.append((f.get("key", ""), op == "In", values[0]))
                else:
                    self.errors.append(_field_error(p + ".operator", f"Unsupported value: {go_repr(op)}: "
                                                                     'supported values: "In", "NotIn"'))
            if not self.errors:
                self.fields = parsed

    def matches(self, node: Mapping[str, Any]) -> bool:
        if self.errors or (self.labels is None and self.fields is None):
            return False
        meta = node.get("metadata") or {}
        if self.labels is not None and not self.labels.matches(meta.get("labels") or {}):
            return False
        if self.fields is not None:
            name = meta.get("name") or ""
            for key, equal, want in self.fields:
                have = name if key == "metadata.name" else ""
                if (have == want) != equal:
                    return False
        return True


def compile_node_selector_term(term: Optional[Mapping[str, Any]]) -> NodeSelectorTerm:
    return NodeSelectorTerm(term)


def node_selector_term_matches(term: Optional[Mapping[str, Any]], node: Mapping[str, Any]) -> bool:
    """True when `node` satisfies one NodeSelectorTerm (all its expressions and fields)."""
    return NodeSelectorTerm(term).matches(node)


def node_selector_matches(selector: Optional[Mapping[str, Any]], node: Mapping[str, Any]) -> bool:
    """A core NodeSelector: the terms are ORed; None matches every node."""
    if selector is None:
        return True
    return any(NodeSelectorTerm(t).matches(node) for t in selector.get("nodeSelectorTerms") or [])


# -- field selectors (upstream fields.ParseSelector) -------------------------------------------

_ESCAPES = str.maketrans({"\\": "\\\\", ",": "\\,", "=": "\\="})


def escape_field_value(value: str) -> str:
    """Escape `\\`, `,` and `=` for use as a field selector value (upstream EscapeValue)."""
    return value.translate(_ESCAPES)


def _unescape(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out = []
    in_slash = False
    for c in value:
        if in_slash:
            if c in "\\,=":
                out.append(c)
            else:
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{c}")
            in_slash = False
            continue
        if c == "\\":
            in_slash = True
        elif c in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(selector: str) -> list[str]:
    if not selector:
        return []
    terms = []
    start = 0
    in_slash = False
    for i, c in enumerate(selector):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


# The leftmost operator; at one position "!=" before "==" before "=", as upstream tries them.
_FIELD_OPERATOR = re.compile(r"!=|==|=")


def _split_term(term: str) -> Optional[tuple[str, str, str]]:
    m = _FIELD_OPERATOR.search(term)
    if m is None:
        return None
    return term[:m.start()], m.group(), term[m.end():]


class FieldSelector:
    """An AND of `field op value` terms; op is "=", "==" or "!="."""

    __slots__ = ("requirements", "_exact")

    def __init__(self, requirements: Iterable[tuple[str, str, str]] = ()):
        self.requirements: list[tuple[str, str, str]] = list(requirements)
        self._exact = {f: v for f, op, v in reversed(self.requirements) if op != "!="}

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, get: Callable[[str], Optional[str]]) -> bool:
        """`get(field)` returns the object's value for a field (None/"" when it has none)."""
        for field, op, want in self.requirements:
            have = get(field) or ""
            if (have == want) == (op == "!="):
                return False
        return True

    def requires_exact_match(self, field: str) -> Optional[str]:
        """The value `field` must equal, when a `=`/`==` term says so (upstream RequiresExactMatch)."""
        return self._exact.get(field)

    def __str__(self) -> str:
        return ",".join(f"{f}{'!=' if op == '!=' else '='}{escape_field_value(v)}" for f, op, v in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSelector) and self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash(tuple(self.requirements))


@lru_cache(maxsize=4096)
def parse_field_selector(selector: str) -> FieldSelector:
    """Parse the `fieldSelector` query-string syntax (upstream `fields.ParseSelector`)."""
    reqs = []
    for part in sorted(_split_terms(selector)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise ValueError(f"invalid selector: '{selector}'; can't understand '{part}'")
        field, op, raw = split
        reqs.append((field, op, _unescape(raw)))
    return FieldSelector(reqs)
