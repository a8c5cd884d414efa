"""Fast YAML text for JSON-shaped data (what the API returns), in the block style `kubectl get -o yaml` prints.

    text = dump_yaml({"apiVersion": "v1", "kind": "List", "items": [pod, ...]})
    assert yaml.safe_load(text) == the same data

For dumps of whole clusters (`phalanx export logs`): PyYAML's representer walks every value in
Python and takes seconds for a few thousand pods; this writes the same data in a fraction of that.
It knows only what JSON holds (dict with string keys, list, str, int, float, bool, None) and keeps
mapping order. A string is written plain when no YAML 1.1 or 1.2 reader could take it for anything
else (no leading digit, sign or dot, no indicator characters, not a boolean or null word),
otherwise double-quoted with JSON's escapes, which YAML's double-quoted style shares.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

import yaml

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:@%+=,()' -]*\Z")
_RISKY = (": ", " #", ":\n")
# Words some YAML reader (1.1 or 1.2) takes for a boolean or null when plain.
_SPECIAL_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}
# What YAML does not allow unescaped, or reads as a line break (NEL, LS, PS), beyond the C0
# controls, which JSON escapes already.
_ESCAPED = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")
_IMPLICIT = yaml.resolver.Resolver.yaml_implicit_resolvers
_STR_TAG = "tag:yaml.org,2002:str"
INDENT = "  "


def dump_yaml(value: Any) -> str:
    """`value` as a YAML document (block style, ending in a newline)."""
    lines: list[str] = []
    if isinstance(value, dict) and value:
        _mapping(value, "", lines)
    elif isinstance(value, list) and value:
        _sequence(value, "", lines)
    else:
        lines.append(_scalar(value))
    return "\n".join(lines) + "\n"


def _mapping(value: dict[str, Any], pad: str, lines: list[str], first_prefix: str | None = None) -> None:
    """Each `key: value` at `pad`; the first line may start with `first_prefix` (a list's `- `)."""
    for i, (key, item) in enumerate(value.items()):
        head = (first_prefix if i == 0 and first_prefix is not None else pad) + _string(str(key)) + ":"
        if isinstance(item, dict) and item:
            lines.append(head)
            _mapping(item, pad + INDENT, lines)
        elif isinstance(item, list) and item:
            lines.append(head)
            _sequence(item, pad, lines)  # indentless, as PyYAML and kubectl write lists in mappings
        else:
            lines.append(f"{head} {_scalar(item)}")


def _sequence(value: list[Any], pad: str, lines: list[str]) -> None:
    for item in value:
        if isinstance(item, dict) and item:
            _mapping(item, pad + INDENT, lines, first_prefix=pad + "- ")
        elif isinstance(item, list) and item:
            lines.append(pad + "-")
            _sequence(item, pad + INDENT, lines)
        else:
            lines.append(f"{pad}- {_scalar(item)}")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    raise TypeError(f"cannot write {type(value).__name__} as YAML: only JSON's types")


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "." not in text:  # 1e+100: a YAML 1.1 float needs a dot
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0" + (f"e{exponent}" if exponent else "")
    return text


@lru_cache(maxsize=65536)
def _string(text: str) -> str:
    if _plain_is_safe(text):
        return text
    quoted = json.dumps(text, ensure_ascii=False)  # escapes ", \\ and the C0 controls
    return _ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _plain_is_safe(text: str) -> bool:
    if not _PLAIN.match(text) or text.endswith((" ", ":")) or any(r in text for r in _RISKY):
        return False
    if text.lower() in _SPECIAL_WORDS:
        return False
    return all(tag == _STR_TAG or not pattern.match(text) for tag, pattern in _IMPLICIT.get(text[0], ()))
