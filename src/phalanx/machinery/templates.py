"""Placeholders in config values, the small template language of cluster configs: literal text with
`{i}`-style placeholders, `{{` and `}}` for literal braces.

    for piece in scan_placeholders("rack-{i//16:02}"):   # "rack-", Placeholder("{i//16:02}", "i//16:02")
        ...
    expr = parse_index_expression("i//16:02", variables="in")
    expr.render(37)                                       # "02"

An index expression is a variable (one letter of `variables`), integer operations applied left to
right (`//`, `%`, `+`, `-`, `*`) and an optional zero-padded width (`:03`). Node pool labels use it
with `i` and `n` (`cluster.phalanxconfig`), simulated DRA driver values with `i` next to named
placeholders such as `{uuid}` (`nodes.dradriver.model`); each says its own errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Union

_PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_OPS_TEXT = r"((?:(?://|%|\+|-|\*)\s*\d+\s*)*)"
_OP_RE = re.compile(r"(//|%|\+|-|\*)\s*(\d+)")
_OPS: dict[str, Callable[[int, int], int]] = {
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "+": lambda a, b: a + b,
    "-": lambda a, b: a - b, "*": lambda a, b: a * b,
}


@dataclass(frozen=True)
class Placeholder:
    """`{...}` as written (`token`) and what is between the braces (`inner`); `inner` is None for
    an unbalanced `{` or `}`."""

    token: str
    inner: str | None


def scan_placeholders(text: str) -> list[Union[str, Placeholder]]:
    """The template's pieces in order: literal text (braces unescaped) and placeholders."""
    pieces: list[Union[str, Placeholder]] = []
    pos = 0
    for m in _PLACEHOLDER_RE.finditer(text):
        pieces.append(text[pos:m.start()])
        pos = m.end()
        token = m.group(0)
        pieces.append(token[0] if token in ("{{", "}}") else Placeholder(token, m.group(1)))
    pieces.append(text[pos:])
    return pieces


@dataclass(frozen=True)
class IndexExpression:
    """`i//16%4:03`: a variable, operations applied left to right, a zero-padded width (0: none)."""

    variable: str
    ops: tuple[tuple[str, int], ...]
    width: int

    @property
    def divides_by_zero(self) -> bool:
        return any(op in ("//", "%") and arg == 0 for op, arg in self.ops)

    def render(self, value: int) -> str:
        for op, arg in self.ops:
            value = _OPS[op](value, arg)
        return str(value).zfill(self.width) if self.width else str(value)


@lru_cache(maxsize=None)
def _expression_re(variables: str) -> re.Pattern[str]:
    return re.compile(r"^\s*([" + re.escape(variables) + r"])\s*" + _OPS_TEXT + r"(?::(\d+))?\s*$")


def parse_index_expression(text: str, variables: str) -> IndexExpression | None:
    """The index expression between a placeholder's braces; None when it is not one."""
    m = _expression_re(variables).match(text)
    if m is None:
        return None
    ops = tuple((op, int(arg)) for op, arg in _OP_RE.findall(m.group(2)))
    return IndexExpression(m.group(1), ops, int(m.group(3)) if m.group(3) else 0)
