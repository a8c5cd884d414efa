"""Quantities: any text parses to an exact value or fails with one of upstream's three errors,
at once; canonical forms read back as the same value."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import example, given
from hypothesis import strategies as st

from phalanx.machinery.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    MAX_INT64,
    canonicalize,
    format_quantity,
    milli_value,
    parse_quantity,
    parse_quantity_format,
    value,
)

UPSTREAM_ERRORS = {ERR_FORMAT_WRONG, ERR_NUMERIC, ERR_SUFFIX}
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
NANO = Fraction(1, 10**9)

digits = st.text("0123456789", max_size=30)
exponents = st.one_of(st.integers(min_value=-40, max_value=40),
                      st.integers(min_value=-(2**31 - 1), max_value=2**31 - 1),
                      st.integers(min_value=-(2**70), max_value=2**70))


@st.composite
def quantity_texts(draw) -> str:
    """Texts of upstream's grammar: sign, digits, fraction, suffix or exponent (any size)."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(digits)
    fraction = draw(st.one_of(st.none(), digits))
    if not whole and not fraction:
        whole = "0"
    number = whole if fraction is None else f"{whole}.{fraction}"
    suffix = draw(st.one_of(st.sampled_from(SUFFIXES),
                            st.builds(lambda e, x: f"{e}{x:+d}" if x < 0 or draw(st.booleans()) else f"{e}{x}",
                                      st.sampled_from(["e", "E"]), exponents)))
    return sign + number + suffix


any_text = st.one_of(quantity_texts(), st.text("0123456789.+-eEinumkKMGTP ", max_size=40), st.text(max_size=20))


def _outcome(text: str):
    try:
        return parse_quantity(text)
    except ValueError as e:
        assert str(e) in UPSTREAM_ERRORS
        return None


@given(any_text)
@example("1e999999999")
@example("1e2147483647")
@example("1e2147483648")
@example("-1e-2147483647")
@example("0e999999999")
@example("1." + "9" * 5000 + "Ki")
def test_any_text_parses_exactly_or_fails_with_an_upstream_error(text):
    parsed = _outcome(text)
    assert parsed is None or isinstance(parsed, Fraction)
    if parsed is not None:
        assert (parsed / NANO).denominator == 1  # never finer than a nano
        assert isinstance(milli_value(text), int) and isinstance(value(text), int)


@given(quantity_texts())
def test_the_canonical_form_reads_back_as_the_same_value_and_format(text):
    parsed = _outcome(text)
    if parsed is None:
        return
    canonical = canonicalize(text)
    assert parse_quantity(canonical) == parsed
    assert canonicalize(canonical) == canonical
    fmt = parse_quantity_format(text)[1]
    if parsed and fmt != BINARY_SI:  # a canonical BinarySI value may be written without a suffix
        assert parse_quantity_format(canonical)[1] in (fmt, DECIMAL_SI, DECIMAL_EXPONENT)


@given(st.one_of(st.fractions(max_denominator=10**12), st.integers(min_value=-(2**70), max_value=2**70).map(Fraction)),
       st.sampled_from([BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT]))
def test_formatted_values_parse_back_rounded_up_to_a_nano(number, fmt):
    scaled = number / NANO
    magnitude = -((-abs(scaled.numerator)) // scaled.denominator)  # away from zero
    expected = Fraction(magnitude if number >= 0 else -magnitude) * NANO
    text = format_quantity(number, fmt)
    if text.endswith("i") and abs(expected) > MAX_INT64:  # a binary suffix is capped, as upstream
        expected = MAX_INT64 if expected > 0 else -MAX_INT64
    assert parse_quantity(text) == expected
