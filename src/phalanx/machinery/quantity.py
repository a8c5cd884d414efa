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
small vocabulary of strings, so a repeat costs one dictionary lookup (texts longer than 64
characters are parsed afresh, never cached).

Every parse is bounded, whatever the text: linear in its length, independent of its exponent.
A decimal exponent outside upstream's int32 scale, [-(2^31-1), 2^31-1], is a suffix error, as
upstream (apimachinery rejects it rather than truncating it since kubernetes#141203). Within that
scale upstream keeps any value as a scaled decimal; phalanx holds values exactly, so it refuses a
value of 10^4097 or more with ERR_NUMERIC ("1e999999999" is accepted upstream, refused here) and
settles values below a nano (rounded up to 1n) without building them.
"""

from __future__ import annotations

import re
from decimal import ROUND_UP, Context, Decimal, InvalidOperation
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
MAX_INT32 = (1 << 31) - 1
_MAX_SCALE_DIGITS = len(str(MAX_INT32))
_NANO = Fraction(1, 10**9)
_NANO_DECIMAL = Decimal("1e-9")
# A value of 10^4097 or more cannot be held exactly without gigantic integers; Go keeps it as a
# scaled inf.Dec, phalanx refuses it (ERR_NUMERIC). Nothing a Kubernetes object carries comes near.
_MAX_EXPONENT = 4096
# Exact decimal arithmetic for the slow path: enough digits for any request body, any exponent.
_EXACT = Context(prec=999_999_999_999_999_999, Emax=999_999_999_999_999_999, Emin=-999_999_999_999_999_999,
                 traps=[InvalidOperation])
_CACHED_TEXT_MAX = 64

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {p // 10: s for s, p in _BINARY_SUFFIXES.items()}

QuantityLike = Union[str, int, float, Fraction]


# Upstream's grammar, scanned in one pass: sign, leading zeros, integer digits, optional fraction,
# suffix letters, optional signed exponent digits. Every part may be empty, so the match never
# backtracks; text left over after it is a format error.
_SCAN = re.compile(r"([+-]?)(0*)([0-9]*)(?:(\.)([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")


_NUMBER_PART = re.compile(r"[+-]?[0-9.]+")
_SUFFIX_PART = re.compile(r"[eEinumkKMGTP]*[-+]?[0-9]*")


def matches_quantity_pattern(text: str) -> bool:
    """Whether `text` matches upstream's ERR_FORMAT_WRONG pattern as Go matches it (the whole text;
    no final newline), in linear time. The greedy number part is the only split that can succeed,
    so no backtracking is needed (Python's `re` on the pattern itself is quadratic in the digits)."""
    number = _NUMBER_PART.match(text)
    return number is not None and _SUFFIX_PART.fullmatch(text, number.end()) is not None


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """Scan `[sign] digits [. digits] suffix` as upstream's parseQuantityString does.

    Returns (positive, value, num, denom, suffix); `num` has its leading zeros stripped and is
    "0" when empty, `value` is the signed numeric text the slow path parses.
    """
    m = _SCAN.match(text)
    if m is None:  # cannot happen: every group may match empty
        raise ValueError(ERR_FORMAT_WRONG)
    sign, zeros, num, dot, denom, suffix = m.groups()
    positive = sign != "-"
    if not num and not dot and not suffix and m.end() == len(text):
        return positive, "0", "0", "", ""  # only a sign and zeros
    if m.end() != len(text):
        raise ValueError(ERR_FORMAT_WRONG)
    value_end = m.start(6)
    return positive, text[:value_end], num or "0", denom or "", suffix


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) for a suffix, as upstream's suffixer interprets it.

    A decimal exponent must fit upstream's int32 scale, [-(2^31-1), 2^31-1]; any other is a
    suffix error, however many digits it has (leading zeros are allowed, as ParseInt allows them).
    """
    exp = _DECIMAL_SUFFIXES.get(suffix)
    if exp is not None:
        return 10, exp, DECIMAL_SI
    exp = _BINARY_SUFFIXES.get(suffix)
    if exp is not None:
        return 2, exp, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        negative = digits[0] == "-"
        body = digits[1:] if digits[0] in "+-" else digits
        if body and body.isascii() and body.isdigit():
            significant = body.lstrip("0")
            if len(significant) <= _MAX_SCALE_DIGITS:
                exp = int(significant or "0")
                if exp <= MAX_INT32:
                    return 10, -exp if negative else exp, DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Round a value finer than 1n away from zero to a whole number of nanos."""
    scaled = value * 10**9
    if scaled.denominator == 1:
        return value
    whole = -((-abs(scaled.numerator)) // scaled.denominator)  # ceil of the magnitude
    return Fraction(whole if value > 0 else -whole, 10**9)


def _scaled_integer(mantissa: int, scale: int) -> Fraction:
    """mantissa * 10**scale for the int64 fast path (|mantissa| < 10**18, scale >= -9), refusing
    a value whose leading digit lies beyond 10**_MAX_EXPONENT before building it."""
    if not mantissa:
        return Fraction(0)
    if scale < 0:
        return Fraction(mantissa, 10**-scale)
    if scale + len(str(mantissa)) - 1 > _MAX_EXPONENT:
        raise ValueError(ERR_NUMERIC)
    return Fraction(mantissa * 10**scale)


def _parse_uncached(text: str) -> tuple[Fraction, Format, bool]:
    """Parse: (value, format, whether the API server keeps `text` verbatim as canonical)."""
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
            amount = _scaled_integer(mantissa, scale)
            keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
        return (amount if positive else -amount), fmt, keep

    magnitude, fmt = _slow_magnitude(value_text.lstrip("+-"), base, exponent, fmt)
    return (magnitude if positive else -magnitude), fmt, False


def _slow_magnitude(digits: str, base: int, exponent: int, fmt: Format) -> tuple[Fraction, Format]:
    """Upstream's arbitrary-precision path, bounded: the magnitude of `digits` (unsigned numeric
    text) times the suffix, rounded up to a whole number of nanos, binary values capped at 2^63-1.

    The work never depends on the exponent's size and is linear in the text's length: the text is
    read as an exact `Decimal` (the suffix only moves its exponent), a value finer than 1n or a
    binary value beyond 10^19 is settled from its leading digit's position alone, and only the
    digits that survive rounding to nanos become an integer.
    """
    try:
        amount = Decimal(digits)
    except InvalidOperation:
        raise ValueError(ERR_NUMERIC) from None
    if not amount:
        return Fraction(0), fmt
    if base == 10:
        amount = amount.scaleb(exponent, _EXACT)
        top = amount.adjusted()  # the power of ten of the leading digit
        if top > _MAX_EXPONENT:
            raise ValueError(ERR_NUMERIC)
        if top < -9:
            return _NANO, fmt
        return Fraction(amount.quantize(_NANO_DECIMAL, ROUND_UP, _EXACT)), fmt
    if amount.adjusted() >= 19:  # at least 10^19 before the binary multiplier: beyond 2^63-1
        return Fraction(MAX_INT64), fmt
    scaled = _EXACT.multiply(amount, Decimal(1 << exponent))
    if scaled.adjusted() < -9:
        return _NANO, DECIMAL_SI
    magnitude = min(Fraction(scaled.quantize(_NANO_DECIMAL, ROUND_UP, _EXACT)), Fraction(MAX_INT64))
    return magnitude, DECIMAL_SI if magnitude < 1 else fmt


@lru_cache(maxsize=16384)
def _parse_cached(text: str) -> tuple[Fraction, Format, bool]:
    return _parse_uncached(text)


def _parse(text: str) -> tuple[Fraction, Format, bool]:
    """Parse once: memoised for the short strings objects carry, never for long ones (a cache of
    megabyte keys would be a way to exhaust memory)."""
    if len(text) <= _CACHED_TEXT_MAX:
        return _parse_cached(text)
    return _parse_uncached(text)


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
    text = q if isinstance(q, str) else _coerce(q)
    # `_parse` inlined (hot: every resource quantity of every pod and node)
    return (_parse_cached(text) if len(text) <= _CACHED_TEXT_MAX else _parse_uncached(text))[0]


def parse_quantity_format(q: str | int | float) -> tuple[Fraction, Format]:
    """Value and the format its suffix selects (what upstream keeps in `Quantity.Format`)."""
    text = q if isinstance(q, str) else _coerce(q)
    value, fmt, _ = _parse_cached(text) if len(text) <= _CACHED_TEXT_MAX else _parse_uncached(text)
    return value, fmt


def _strip_tens(num: int) -> tuple[int, int]:
    """(num without its trailing decimal zeros, how many there were), for a non-zero `num`, in
    O(log² zeros) big-integer divisions: the divisor doubles while it divides and halves when not."""
    zeros = 0
    width = 1
    while num % 10 == 0:
        divisor = 10**width
        if num % divisor == 0:
            num //= divisor
            zeros += width
            width *= 2
        else:
            width = max(1, width // 2)
    return num, zeros


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with value == mantissa * 10**exponent, exponent a multiple of 3, as
    upstream's AsCanonicalBytes: trailing zeros moved to the exponent, then the exponent lowered
    to the next multiple of three. `value` must be a whole number of nanos."""
    if value.denominator == 1:
        num, exponent = value.numerator, 0
    else:
        num, exponent = (value * 10**9).numerator, -9
    num, zeros = _strip_tens(num)
    exponent += zeros
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
