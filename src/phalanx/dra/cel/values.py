"""How CEL values are encoded for a library that cannot carry Python objects: a quantity is the map
`{"\\ue000quantity": "<num>/<den>"}` of its exact value, a semver `{"\\ue000semver": "<canonical>"}`;
their CEL type names and CEL equality."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

from .. import semver as _semver

QUANTITY_KEY = "\ue000quantity"
SEMVER_KEY = "\ue000semver"

def encode_quantity(value: Fraction) -> dict[str, Any]:
    return {QUANTITY_KEY: f"{value.numerator}/{value.denominator}"}


def encode_semver(version: _semver.Semver) -> dict[str, Any]:
    return {SEMVER_KEY: _semver.canonical(version)}


@lru_cache(maxsize=16384)
def decode_fraction(text: str) -> Fraction:
    num, _, den = text.partition("/")
    return Fraction(int(num), int(den))


def is_quantity_value(v: Any) -> bool:
    return type(v) is dict and QUANTITY_KEY in v


def is_semver_value(v: Any) -> bool:
    return type(v) is dict and SEMVER_KEY in v


def cel_type_name(value: Any) -> str:
    """The CEL type name of a value as upstream prints it in errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if value is None:
        return "null_type"
    if isinstance(value, (list, tuple)):
        return "list"
    if is_quantity_value(value):
        return "kubernetes.Quantity"
    if is_semver_value(value):
        return "kubernetes.Semver"
    if isinstance(value, dict):
        return "map"
    name = type(value).__name__
    return {"datetime": "google.protobuf.Timestamp", "timedelta": "google.protobuf.Duration"}.get(name, name)


def cel_equal(a: Any, b: Any) -> bool:
    """CEL equality: numbers compare across int/uint/double, bools only with bools."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
