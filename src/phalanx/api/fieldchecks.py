"""Small field validators shared by every kind: non-negative numbers, int-or-percent values
(maxSurge, maxUnavailable, minAvailable) and the messages upstream words them with."""

from __future__ import annotations

import re
from typing import Any

from ..machinery.errors import FieldError, invalid

IS_NEGATIVE_MSG = "must be greater than or equal to 0"
IMMUTABLE_MSG = "field is immutable"
PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
               "'93%', regex used for validation is '[0-9]+%')")


_PERCENT_RE = re.compile(r"^[0-9]+%$")


def validate_positive_int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, bool):
        return [invalid(path, value, "must be an integer or percentage (e.g '5%%')")]
    if isinstance(value, str):
        return [] if _PERCENT_RE.match(value) else [invalid(path, value, PERCENT_MSG)]
    if isinstance(value, int):
        return [] if value >= 0 else [invalid(path, value, IS_NEGATIVE_MSG)]
    return [invalid(path, value, "must be an integer or percentage (e.g '5%%')")]


def int_or_percent_value(value: Any) -> int:
    if isinstance(value, str):
        if _PERCENT_RE.match(value):
            return int(value[:-1])
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 0


def is_not_more_than_100_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str) and _PERCENT_RE.match(value) and int(value[:-1]) > 100:
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def validate_nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, IS_NEGATIVE_MSG)]
    return []
