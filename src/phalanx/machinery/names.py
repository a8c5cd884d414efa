"""Name, label and annotation validation in upstream's words (apimachinery `validation`).

Upstream matches these formats with Go regular expressions, whose `$` is the end of the text and
whose matching is linear. Python's `$` also matches before a final newline, and its backtracking
can turn long input quadratic, so each format here is checked by scanning: one character-class
pass (`fullmatch` of a single class cannot backtrack) plus checks on the first and last character.
The messages still quote upstream's regular expressions.
"""

from __future__ import annotations

import random
import re
from typing import Any

from .errors import FieldError, invalid, required, too_long

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_LABEL_CHARS = re.compile(r"[-a-z0-9]*")
_SUBDOMAIN_CHARS = re.compile(r"[-.a-z0-9]*")
_QUALIFIED_CHARS = re.compile(r"[-A-Za-z0-9_.]*")
_C_IDENT_CHARS = re.compile(r"[A-Za-z0-9_]*")
_ALPHANUMERIC = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_C_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def _is_label(value: str) -> bool:
    """`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, the whole text."""
    return (bool(value) and value[0] != "-" and value[-1] != "-"
            and _LABEL_CHARS.fullmatch(value) is not None)


def _is_subdomain(value: str) -> bool:
    """`[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`: labels joined by single
    dots, so no label is empty or starts or ends with '-'."""
    return (bool(value) and value[0] in _ALPHANUMERIC and value[-1] in _ALPHANUMERIC
            and _SUBDOMAIN_CHARS.fullmatch(value) is not None
            and ".." not in value and ".-" not in value and "-." not in value)


def _is_qualified_name_part(value: str) -> bool:
    """`([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the whole text."""
    return (bool(value) and value[0] in _ALPHANUMERIC and value[-1] in _ALPHANUMERIC
            and _QUALIFIED_CHARS.fullmatch(value) is not None)

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
             "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
             "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                 "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                 "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                 "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                 "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                   "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                   "'my_value',  or '12345', regex used for validation is "
                   "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError wording: `<msg> (e.g. 'a', or 'b', regex used for validation is '<fmt>')`."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    out = msg + " (e.g. "
    for i, ex in enumerate(examples):
        if i:
            out += " or "
        out += f"'{ex}', "
    return out + f"regex used for validation is '{fmt}')"


def dns1123_label_errors(value: str) -> list[str]:
    msgs = []
    if len(value) > DNS1123_LABEL_MAX:
        msgs.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _is_label(value):
        msgs.append(LABEL_MSG)
    return msgs


def dns1123_subdomain_errors(value: str) -> list[str]:
    msgs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        msgs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _is_subdomain(value):
        msgs.append(SUBDOMAIN_MSG)
    return msgs


def is_dns1123_label(value: str) -> bool:
    return not dns1123_label_errors(value)


def is_dns1123_subdomain(value: str) -> bool:
    return not dns1123_subdomain_errors(value)


def qualified_name_errors(value: str) -> list[str]:
    """Label keys and annotation keys: optional DNS-subdomain prefix + '/' + name part."""
    msgs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            msgs.append("prefix part must be non-empty")
        else:
            msgs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        msgs.append("name part must be non-empty")
    elif len(name) > 63:
        msgs.append("name part must be no more than 63 characters")
    if not _is_qualified_name_part(name):  # upstream also reports an empty name part this way
        msgs.append(QUALIFIED_MSG)
    return msgs


def label_value_errors(value: str) -> list[str]:
    msgs = []
    if len(value) > 63:
        msgs.append("must be no more than 63 characters")
    if value and not _is_qualified_name_part(value):
        msgs.append(LABEL_VALUE_MSG)
    return msgs


def is_c_identifier(value: str) -> bool:
    return bool(value) and value[0] in _C_IDENT_START and _C_IDENT_CHARS.fullmatch(value) is not None


# Label pairs found valid, checked again by a set lookup: most objects repeat a few labels. Bounded:
# cleared when full.
_VALID_LABELS: set[tuple[str, str]] = set()
_VALID_LABELS_MAX = 8192


def validate_labels(labels: dict[str, Any] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for k, v in (labels or {}).items():
        if isinstance(v, str) and (k, v) in _VALID_LABELS:
            continue
        n = len(errs)
        for m in qualified_name_errors(k):
            errs.append(invalid(path, k, m))
        if not isinstance(v, str):
            errs.append(invalid(f"{path}[{k}]", v, "must be a string"))
            continue
        for m in label_value_errors(v):
            errs.append(invalid(f"{path}", v, m))
        if len(errs) == n:
            if len(_VALID_LABELS) >= _VALID_LABELS_MAX:
                _VALID_LABELS.clear()
            _VALID_LABELS.add((k, v))
    return errs


def validate_annotations(annotations: dict[str, Any] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for k, v in (annotations or {}).items():
        for m in qualified_name_errors(k.lower()):
            errs.append(invalid(path, k, m))
        total += len(k) + len(v if isinstance(v, str) else "")
    if total > 256 * 1024:
        errs.append(too_long(path, 256 * 1024))
    return errs


def validate_name(value: str | None, path: str, *, label: bool = False) -> list[FieldError]:
    """Object name as a DNS-1123 subdomain (default) or label."""
    if not value:
        return [required(path, "name or generateName is required")]
    msgs = dns1123_label_errors(value) if label else dns1123_subdomain_errors(value)
    return [invalid(path, value, m) for m in msgs]


_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_NAME = 63
_RANDOM_LEN = 5


def generate_name(base: str, rng: random.Random | None = None) -> str:
    """`generateName` expansion: base (truncated to 58 chars) + 5 random chars."""
    r = rng or random
    if len(base) > _MAX_GENERATED_NAME - _RANDOM_LEN:
        base = base[: _MAX_GENERATED_NAME - _RANDOM_LEN]
    return base + "".join(r.choice(_NAME_CHARS) for _ in range(_RANDOM_LEN))


TOKEN_VOLUME_PREFIX = "kube-api-access-"  # the volume ServiceAccount admission adds to every pod
# Such a name as JSON writes it: generate_name's five characters after the prefix.
_TOKEN_VOLUME_NAME = re.compile(rb'"(' + TOKEN_VOLUME_PREFIX.encode() + rb'[' + _NAME_CHARS.encode()
                                + rb']{%d})"' % _RANDOM_LEN)


def token_volume_names_by_position(encoded: bytes, names: list[bytes]) -> bytes:
    """`encoded` (JSON) with each generated token volume name replaced by its position in `names`
    (names met for the first time are appended): two pods of one template, which differ only by
    that name, encode the same, and `names` tells which name stood where."""
    if b'"' + TOKEN_VOLUME_PREFIX.encode() not in encoded:
        return encoded
    for name in _TOKEN_VOLUME_NAME.findall(encoded):
        if name not in names:
            names.append(name)
    for i, name in enumerate(names):
        encoded = encoded.replace(name, b"\x00%d\x00" % i)
    return encoded
