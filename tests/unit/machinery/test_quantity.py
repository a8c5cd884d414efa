"""Resource quantities: parsing, canonical forms and rounding as apimachinery does them.

The official Python client (`kubernetes.utils`) is the oracle for values; the canonical strings
come from upstream's own quantity tests.
"""

import time
from decimal import Decimal
from fractions import Fraction

import pytest
from kubernetes.utils import parse_quantity as oracle_parse

from phalanx.machinery.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    canonicalize,
    format_quantity,
    is_quantity,
    matches_quantity_pattern,
    milli_value,
    parse_quantity,
    parse_quantity_format,
    value,
)

NUMBERS = ["0", "1", "7", "12", "100", "999", "1000", "1024", "1536", "0.5", "1.5", "0.25", "2.125",
           "0.001", "123.456", "1000000", ".5", "1.", "007", "+3", "-2", "-0.75"]
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "e3", "e-3", "E6", "e0", "e+2"]


def _oracle_cases():
    for n in NUMBERS:
        for s in SUFFIXES:
            text = n + s
            expected = oracle_parse(text)
            # Upstream keeps values only down to a nano and caps binary values at 2^63-1.
            if (expected * 10**9) != (expected * 10**9).to_integral_value():
                continue
            if s.endswith("i") and abs(expected) > 2**63 - 1:
                continue
            yield text, expected


ORACLE = list(_oracle_cases())


def test_oracle_covers_many_inputs():
    assert len(ORACLE) > 350


@pytest.mark.parametrize("text,expected", ORACLE)
def test_parse_matches_the_official_client(text, expected):
    assert parse_quantity(text) == Fraction(expected)


@pytest.mark.parametrize("text,expected", ORACLE)
def test_canonical_form_has_the_same_value(text, expected):
    assert Fraction(oracle_parse(canonicalize(text))) == Fraction(expected)


@pytest.mark.parametrize("text,expected", ORACLE)
def test_format_round_trips_in_every_format(text, expected):
    for fmt in ("BinarySI", "DecimalSI", "DecimalExponent"):
        assert Fraction(oracle_parse(format_quantity(Fraction(expected), fmt))) == Fraction(expected)


@pytest.mark.parametrize("text,canonical", [
    # upstream TestQuantityParseEmit and TestQuantityString
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"),
    (".001Ki", "1024m"), (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
    ("307200Ki", "300Mi"), ("1025024Mi", "1001Gi"), ("1024Gi", "1Ti"), ("5000m", "5"), ("0.5", "500m"),
    ("0.001T", "1G"), ("1000u", "1m"), ("1.08", "1080m"), ("1080000000n", "1080m"), ("1000E", "1e21"),
    ("5000E", "5e21"), ("1000000E", "1e24"), (".001e12", "1e9"), ("0.001e0", "1e-3"), ("1000e-12", "1e-9"),
    ("00", "0"), ("1.5Gi", "1536Mi"), ("0.1", "100m"), ("1000m", "1"), ("1.5", "1500m"),
    ("0.5Mi", "512Ki"), ("100.035Ki", "102435840m"), ("9Ei", "9223372036854775807"),
    ("-1.5Gi", "-1536Mi"), ("-1000m", "-1"), ("0Mi", "0"), ("-0", "0"),
])
def test_canonical_form(text, canonical):
    assert canonicalize(text) == canonical


@pytest.mark.parametrize("text", ["100m", "1Gi", "300Mi", "1e3", "1E3", "12E", "5n", "80u", "3k", "1025",
                                  # upstream keeps these spellings verbatim, too
                                  "1.", "+1Gi", "01"])
def test_canonical_input_is_kept_verbatim(text):
    assert canonicalize(text) == text


def test_canonicalize_trims_spaces_like_json_decoding():
    assert canonicalize(" 1000m ") == "1"


@pytest.mark.parametrize("value,fmt,expected", [
    (Fraction(1, 10), "DecimalSI", "100m"),
    (Fraction(3, 2) * 2**30, "BinarySI", "1536Mi"),
    (Fraction(2**63), "BinarySI", "8Ei"),
    (Fraction(5), "BinarySI", "5"),
    (Fraction(1, 2), "BinarySI", "500m"),
    (Fraction(1023), "BinarySI", "1023"),
    (Fraction(2048), "BinarySI", "2Ki"),
    (Fraction(10**9), "DecimalSI", "1G"),
    (Fraction(10**9), "DecimalExponent", "1e9"),
    (Fraction(80, 1000), "DecimalExponent", "80e-3"),
    (Fraction(300 * 10**6), "DecimalExponent", "300e6"),
    (Fraction(1234567, 1000), "BinarySI", "1234567m"),
    (Fraction(0), "BinarySI", "0"),
    (Fraction(1, 3), "DecimalSI", "333333334n"),  # finer than a nano: rounded up, as parsing does
    (Fraction(1000), "bogus", "1e3"),  # an unknown format falls back to DecimalExponent
])
def test_format_quantity(value, fmt, expected):
    assert format_quantity(value, fmt) == expected


@pytest.mark.parametrize("text,expected", [
    ("3.001n", Fraction(4, 10**9)), ("0.0000000001", Fraction(1, 10**9)), ("0.9n", Fraction(1, 10**9)),
    ("0.00000012345", Fraction(124, 10**9)), ("1.1E-9", Fraction(2, 10**9)), ("-0.9n", Fraction(-1, 10**9)),
    ("9223372036854775807Ki", Fraction(2**63 - 1)), ("18446744073709551616", Fraction(2**64)),
])
def test_values_round_up_to_a_nano_and_binary_values_are_capped(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text,fmt", [
    ("1Ki", "BinarySI"), ("1k", "DecimalSI"), ("1", "DecimalSI"), ("1e3", "DecimalExponent"),
    ("1E", "DecimalSI"), ("0.000000000001Ki", "DecimalSI"), ("0.5Mi", "BinarySI"),
])
def test_suffix_selects_the_format(text, fmt):
    assert parse_quantity_format(text)[1] == fmt


@pytest.mark.parametrize("text,message", [
    ("", ERR_FORMAT_WRONG), (" 1", ERR_FORMAT_WRONG), ("1 ", ERR_FORMAT_WRONG), ("1.1.M", ERR_FORMAT_WRONG),
    ("1+1.0M", ERR_FORMAT_WRONG), ("0.1am", ERR_FORMAT_WRONG), ("aoeu", ERR_FORMAT_WRONG),
    ("0.1mi", ERR_SUFFIX), (".5i", ERR_SUFFIX), ("1i", ERR_SUFFIX), ("-3.01i", ERR_SUFFIX), ("-3.01e-", ERR_SUFFIX),
    ("1ki", ERR_SUFFIX), ("1KB", ERR_FORMAT_WRONG),
])
def test_invalid_quantities_fail_with_upstream_messages(text, message):
    with pytest.raises(ValueError) as e:
        parse_quantity(text)
    assert str(e.value) == message
    assert not is_quantity(text)


def test_the_regex_message_is_upstreams():
    with pytest.raises(ValueError, match=r"^quantities must match the regular expression "
                                         r"'\^\(\[\+-\]\?\[0-9\.\]\+\)\(\[eEinumkKMGTP\]\*\[-\+\]\?\[0-9\]\*\)\$'$"):
        parse_quantity("x")


@pytest.mark.parametrize("q,milli,whole", [
    ("100m", 100, 1), ("0.1", 100, 1), ("1", 1000, 1), ("1500m", 1500, 2), ("1.5Gi", 1610612736000, 1610612736),
    ("1n", 1, 1), ("1u", 1, 1), ("1001u", 2, 1), ("1000001u", 1001, 2), ("2", 2000, 2), ("0", 0, 0), ("-1500m", -1500, -2),
    ("-1u", -1, -1), (3, 3000, 3), (0.25, 250, 1),
])
def test_milli_value_and_value_round_up(q, milli, whole):
    assert milli_value(q) == milli
    assert value(q) == whole


def test_numbers_from_json_parse_like_their_text():
    assert parse_quantity(2) == 2
    assert parse_quantity(0.5) == Fraction(1, 2)
    assert parse_quantity(1e-7) == Fraction(1, 10**7)
    assert milli_value(Fraction(1, 3)) == 334
    with pytest.raises(ValueError):
        parse_quantity(True)
    with pytest.raises(ValueError):
        parse_quantity(float("nan"))


def test_results_are_exact_fractions():
    q = parse_quantity("0.1")
    assert isinstance(q, Fraction) and q * 3 == Fraction(3, 10)
    assert parse_quantity("123.456789012") == Decimal("123.456789012")


# -- bounded work: no text, whatever its shape or length, keeps the parser busy -----------------

MEGABYTE = 1024 * 1024
# "Does not hang" bounds: a short text takes well under a millisecond, a megabyte text some ten
# milliseconds (reading it is linear); the slack is for a loaded CI machine. The defects these
# guard against took seconds to hours.
PARSE_BOUND_SECONDS = 0.05
LONG_TEXT_BOUND_SECONDS = 1.0


def _bound(text: str) -> float:
    return LONG_TEXT_BOUND_SECONDS if len(text) > 1000 else PARSE_BOUND_SECONDS


def _timed_outcome(text: str) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        outcome = canonicalize(text)
    except ValueError as e:
        outcome = f"error: {e}"
    return outcome, time.perf_counter() - started


@pytest.mark.parametrize("text,outcome", [
    # Exponents within upstream's int32 scale whose value phalanx cannot hold exactly.
    ("1e999999999", f"error: {ERR_NUMERIC}"),
    ("1e10000000", f"error: {ERR_NUMERIC}"),
    ("1e200000", f"error: {ERR_NUMERIC}"),
    ("1e2147483647", f"error: {ERR_NUMERIC}"),
    ("-5.5e4097", f"error: {ERR_NUMERIC}"),
    ("1" * MEGABYTE, f"error: {ERR_NUMERIC}"),
    # Exponents outside [-(2^31-1), 2^31-1] are a suffix error upstream (not truncated to int32).
    ("1e2147483648", f"error: {ERR_SUFFIX}"),
    ("1e-2147483648", f"error: {ERR_SUFFIX}"),
    ("1e4294967297", f"error: {ERR_SUFFIX}"),
    ("1e" + "9" * MEGABYTE, f"error: {ERR_SUFFIX}"),
    ("1" + "e" * MEGABYTE, f"error: {ERR_SUFFIX}"),
    ("1" * MEGABYTE + "x", f"error: {ERR_FORMAT_WRONG}"),
    # Tiny values round up to one nano, however far below it they are.
    ("1e-2147483647", "1e-9"),
    ("-1e-999999999", "-1e-9"),
    ("0." + "0" * MEGABYTE + "1", "1n"),
    ("0." + "0" * MEGABYTE + "1Ki", "1n"),
    # Zero stays zero, whatever its exponent.
    ("0e999999999", "0"),
    ("0e-2147483647", "0"),
    # Leading zeros in an exponent are allowed, as Go's ParseInt allows them.
    ("1e" + "0" * MEGABYTE + "5", "100e3"),
    # The largest value phalanx holds, and long mantissas rounded to nanos or capped.
    ("1e4096", "10e4095"),
    ("1." + "1" * MEGABYTE, "1111111112n"),
    ("1." + "9" * MEGABYTE + "Ki", "2Ki"),
    ("1" * MEGABYTE + "Ki", "9223372036854775807"),
])
def test_pathological_quantities_are_settled_at_once(text, outcome):
    got, seconds = _timed_outcome(text)
    assert got == outcome
    assert seconds < _bound(text)


def test_long_texts_are_not_memoised():
    """A cache keyed by megabyte strings would let requests exhaust memory."""
    from phalanx.machinery import quantity

    before = quantity._parse_cached.cache_info().currsize
    parse_quantity("1." + "1" * 1000)
    assert quantity._parse_cached.cache_info().currsize == before


@pytest.mark.parametrize("text, matches", [
    ("1", True), ("-1.5Gi", True), ("+.e-", True), ("1.2.3", True), ("1e+", True), ("..", True),
    ("", False), ("e3", False), ("1 ", False), ("1\n", False), ("1x", False), ("1e3.5", False), ("1Gi3i", False),
    ("1" * MEGABYTE + "x", False), ("1" * MEGABYTE + "e" * MEGABYTE + "-" + "9" * MEGABYTE, True),
])
def test_the_format_pattern_matches_as_go_matches_it(text, matches):
    started = time.perf_counter()
    assert matches_quantity_pattern(text) is matches
    assert time.perf_counter() - started < _bound(text)
