"""The JSONPath subset of printer columns (`additionalPrinterColumns[].jsonPath`).

    find(obj, ".spec.replicas")                                    # [3]
    find(obj, ".status.conditions[?(@.type==\"Ready\")].status")   # ["True"]
    find(obj, ".spec.items[*].name")                               # ["a", "b"]

Supported steps: `.field`, `['field']`, `[n]` (negative counts from the end), `[*]`, and filters
`[?(@.a.b=="v")]` / `!=` with a string, number or boolean literal. A path that reaches nothing
gives `[]`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Callable

_STEP = re.compile(r"""\.(?P<field>[A-Za-z0-9_\-$@/]+)|\[(?P<index>-?\d+)\]|\[(?P<star>\*)\]"""
                   r"""|\['(?P<quoted>[^']*)'\]|\[\?\(@(?P<fpath>(?:\.[A-Za-z0-9_\-]+)+)\s*(?P<op>==|!=)\s*"""
                   r"""(?P<lit>"[^"]*"|'[^']*'|[^)\s]+)\s*\)\]|\.\*""")

Step = Callable[[Any], list[Any]]


def _field(name: str) -> Step:
    return lambda v: [v[name]] if isinstance(v, dict) and name in v else []


def _index(i: int) -> Step:
    return lambda v: [v[i]] if isinstance(v, list) and -len(v) <= i < len(v) else []


def _star(v: Any) -> list[Any]:
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return list(v.values())
    return []


def _literal(text: str) -> Any:
    if text[:1] in ("'", '"'):
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _filter(path: str, op: str, lit: str) -> Step:
    keys = path.strip(".").split(".")
    want = _literal(lit)

    def get(item: Any) -> Any:
        for k in keys:
            if not isinstance(item, dict) or k not in item:
                return _NONE
            item = item[k]
        return item

    def step(v: Any) -> list[Any]:
        if not isinstance(v, list):
            return []
        return [item for item in v if (get(item) == want) == (op == "==")]
    return step


_NONE = object()


@lru_cache(maxsize=1024)
def compile_path(path: str) -> tuple[Step, ...]:
    """The steps of `path` (braces `{...}` around it are accepted); ValueError when unsupported."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None:
            raise ValueError(f"unrecognized character in action: {text[pos:]!r}")
        if m.group("field") is not None:
            steps.append(_field(m.group("field")))
        elif m.group("quoted") is not None:
            steps.append(_field(m.group("quoted")))
        elif m.group("index") is not None:
            steps.append(_index(int(m.group("index"))))
        elif m.group("fpath") is not None:
            steps.append(_filter(m.group("fpath"), m.group("op"), m.group("lit")))
        else:
            steps.append(_star)
        pos = m.end()
    return tuple(steps)


def find(obj: Any, path: str) -> list[Any]:
    values = [obj]
    for step in compile_path(path):
        values = [out for v in values for out in step(v)]
    return values
