"""Kubernetes resource quantities (`resource.Quantity`): parse, format, canonicalize.

Values are exact `fractions.Fraction`s, never floats. Parsing follows apimachinery's
`ParseQuantity` to the letter: binary suffixes (Ki Mi Gi Ti Pi Ei), decimal suffixes
(n u m "" k M G T P E), decimal exponents (`1e3`, `1E-3`), values finer than a nano rounded away
from zero, binary values capped at 2^63-1. Formatting reproduces the canonical form the API
server writes back:

    parse_quantity("1.5Gi")             # Fraction(1610612736, 1)
    canonicalize("1.5Gi")               # "1536Mi"
    canonicalize("0.5")                 # "500m"
    format_quantity(Fraction(1, 10), "DecimalSI")   # "100m"
    milli_value("0.1")                  # 100     (MilliValue: rounded up)
    value("1500m")                      # 2       (Value: rounded up)

`parse_quantity` and `canonicalize` are memoised: schedulers call them per pod and per node with a
small vocabulary of strings, so a repeat costs one dictionary lookup.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Literal, Union

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]
BINARY_SI: Format = "BinarySI"
DECIMAL_SI: Format = "DecimalSI"
DECIMAL_EXPONENT: Format = "DecimalExponent"

# Upstream's error texts (apimachinery pkg/api/resource).
ERR_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

MAX_INT64 = (1 << 63) - 1
_NANO = Fraction(1, 10**9)
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
# Beyond this decimal exponent a value cannot be held exactly without gigantic integers; Go keeps
# it as a scaled inf.Dec. Nothing a Kubernetes object carries comes near it.
_MAX_EXPONENT = 4096

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {p // 10: s for s, p in _BINARY_SUFFIXES.items()}

QuantityLike = Union[str, int, float, Fraction]


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """Scan `[sign] digits [. digits] suffix` as upstream's parseQuantityString does.

    Returns (positive, value, num, denom, suffix); `num` has its leading zeros stripped and is
    "0" when empty, `value` is the signed numeric text the slow path parses.
    """
    positive = True
    pos = 0
    end = len(text)
    if end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(ERR_FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) for a suffix, as upstream's suffixer interprets it."""
    exp = _DECIMAL_SUFFIXES.get(suffix)
    if exp is not None:
        return 10, exp, DECIMAL_SI
    exp = _BINARY_SUFFIXES.get(suffix)
    if exp is not None:
        return 2, exp, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            exp = int(digits)
            if -(1 << 63) <= exp < (1 << 63):
                return 10, exp, DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Round a value finer than 1n away from zero to a whole number of nanos."""
    scaled = value * 10**9
    if scaled.denominator == 1:
        return value
    whole = -((-abs(scaled.numerator)) // scaled.denominator)  # ceil of the magnitude
    return Fraction(whole if value > 0 else -whole, 10**9)


@lru_cache(maxsize=16384)
def _parse(text: str) -> tuple[Fraction, Format, bool]:
    """Parse once: (value, format, whether the API server keeps `text` verbatim as canonical)."""
    if not text:
        raise ValueError(ERR_FORMAT_WRONG)
    if text == "0":
        return Fraction(0), DECIMAL_SI, True
    positive, value_text, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)

    # Upstream's int64 fast path: it also decides whether the input string is reused verbatim.
    if fmt == BINARY_SI:
        precision = 15 - len(num) - (exponent * 3 // 10) - 1 if not denom else -1
        scale = 0
    else:
        precision = 18 - (len(num) + len(denom))
        scale = exponent - len(denom)
    if precision >= 0 and scale >= -9:
        shifted = num + denom
        mantissa = int(shifted)
        if fmt == BINARY_SI:
            amount = Fraction(mantissa << exponent)
            keep = (mantissa & 0x07) != 0
        else:
            amount = Fraction(mantissa) * (Fraction(10) ** scale)
            keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
        return (amount if positive else -amount), fmt, keep

    # Slow path: arbitrary precision, rounded to nano, binary capped.
    digits = value_text.lstrip("+-")
    if not any(c in _DIGITS for c in digits) or digits.count(".") > 1:
        raise ValueError(ERR_NUMERIC)
    if base == 10 and exponent > _MAX_EXPONENT:
        raise ValueError(ERR_NUMERIC)
    int_part, _, frac_part = digits.partition(".")
    magnitude = Fraction(int(int_part or "0") * 10 ** len(frac_part) + int(frac_part or "0"), 10 ** len(frac_part))
    if base == 10:
        if exponent < -_MAX_EXPONENT:
            magnitude = _NANO if magnitude else Fraction(0)
        else:
            magnitude *= Fraction(10) ** exponent
    else:
        magnitude *= 1 << exponent
    if magnitude:
        magnitude = _round_up_to_nano(magnitude)
    if fmt == BINARY_SI and magnitude > MAX_INT64:
        magnitude = Fraction(MAX_INT64)
    if fmt == BINARY_SI and 0 < magnitude < 1:
        fmt = DECIMAL_SI
    return (magnitude if positive else -magnitude), fmt, False


def _coerce(q: object) -> str:
    if isinstance(q, str):
        return q
    if isinstance(q, bool):
        raise ValueError(ERR_FORMAT_WRONG)
    if isinstance(q, int):
        return str(q)
    if isinstance(q, float):
        if q != q or q in (float("inf"), float("-inf")):
            raise ValueError(ERR_FORMAT_WRONG)
        return repr(q)
    raise ValueError(ERR_FORMAT_WRONG)


def parse_quantity(q: QuantityLike) -> Fraction:
    """The exact value of a quantity string (or a JSON number), as upstream's ParseQuantity."""
    if isinstance(q, Fraction):
        return q
    return _parse(_coerce(q))[0]


def parse_quantity_format(q: str | int | float) -> tuple[Fraction, Format]:
    """Value and the format its suffix selects (what upstream keeps in `Quantity.Format`)."""
    value, fmt, _ = _parse(_coerce(q))
    return value, fmt


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with value == mantissa * 10**exponent, exponent a multiple of 3, as
    upstream's AsCanonicalBytes: trailing zeros moved to the exponent, then the exponent lowered
    to the next multiple of three. `value` must be a whole number of nanos."""
    if value.denominator == 1:
        num, exponent = value.numerator, 0
    else:
        num, exponent = (value * 10**9).numerator, -9
    while num % 10 == 0:
        num //= 10
        exponent += 1
    shift = exponent % 3
    if shift:
        num *= 10**shift
        exponent -= shift
    return num, exponent


def format_quantity(value: Fraction | int, fmt: Format) -> str:
    """The canonical string of `value` in `fmt`, as upstream's Quantity.String() writes it.

    A value finer than one nano is first rounded away from zero, as parsing would have done.
    An unknown format falls back to DecimalExponent, as upstream does.
    """
    value = Fraction(value)
    if not value:
        return "0"
    if (value * 10**9).denominator != 1:
        value = _round_up_to_nano(value)
    if fmt == BINARY_SI:
        if -1024 < value < 1024 or value.denominator != 1:
            fmt = DECIMAL_SI
        else:
            mantissa = value.numerator
            power = 0
            magnitude = abs(mantissa)
            while magnitude >= 1024 and magnitude % 1024 == 0 and power < 6:
                magnitude //= 1024
                power += 1
            return f"{magnitude if mantissa > 0 else -magnitude}{_BINARY_BY_POWER.get(power, '')}"
    elif fmt != DECIMAL_SI:
        fmt = DECIMAL_EXPONENT
    mantissa, exponent = _decimal_parts(value)
    if fmt == DECIMAL_SI:
        suffix = _DECIMAL_BY_EXPONENT.get(exponent)
        if suffix is not None:
            return f"{mantissa}{suffix}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


@lru_cache(maxsize=16384)
def _canonicalize(text: str) -> str:
    value, fmt, keep = _parse(text)
    return text if keep else format_quantity(value, fmt)


def canonicalize(q: str | int | float) -> str:
    """The string the API server stores for a quantity field (surrounding spaces trimmed, as
    JSON decoding does; the input is kept verbatim when upstream considers it canonical)."""
    text = _coerce(q).strip()
    return _canonicalize(text)


def _scaled_ceil(value: Fraction) -> int:
    """Round away from zero to an integer, as upstream's ScaledValue does."""
    if value.denominator == 1:
        return value.numerator
    magnitude = -((-abs(value.numerator)) // value.denominator)
    return magnitude if value > 0 else -magnitude


@lru_cache(maxsize=16384)
def _milli_of_text(text: str) -> int:
    return _scaled_ceil(_parse(text)[0] * 1000)


@lru_cache(maxsize=16384)
def _value_of_text(text: str) -> int:
    return _scaled_ceil(_parse(text)[0])


def milli_value(q: QuantityLike) -> int:
    """Upstream's MilliValue: the value in thousandths, rounded up (away from zero)."""
    if isinstance(q, str):
        return _milli_of_text(q)
    return _scaled_ceil(parse_quantity(q) * 1000)


def value(q: QuantityLike) -> int:
    """Upstream's Value: the value rounded up (away from zero) to an integer."""
    if isinstance(q, str):
        return _value_of_text(q)
    return _scaled_ceil(parse_quantity(q))


def is_quantity(q: object) -> bool:
    """True when `q` parses as a quantity."""
    try:
        parse_quantity(q)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True
