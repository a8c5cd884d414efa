"""Config value placeholders: pieces of a template and index expressions."""

from __future__ import annotations

import pytest

from phalanx.machinery.templates import Placeholder, parse_index_expression, scan_placeholders


@pytest.mark.parametrize("text, pieces", [
    ("rack-{i//16}", ["rack-", Placeholder("{i//16}", "i//16"), ""]),
    ("{{x}}", ["", "{", "x", "}", ""]),
    ("a}b", ["a", Placeholder("}", None), "b"]),
    ("gpu-{uuid}", ["gpu-", Placeholder("{uuid}", "uuid"), ""]),
])
def test_scan(text, pieces):
    assert scan_placeholders(text) == pieces


@pytest.mark.parametrize("text, variables, value, rendered", [
    ("i", "i", 7, "7"), (" i // 4 % 2 ", "i", 13, "1"), ("n+1:03", "in", 4, "005"), ("i*2-1", "in", 3, "5"),
])
def test_index_expression(text, variables, value, rendered):
    assert parse_index_expression(text, variables).render(value) == rendered


@pytest.mark.parametrize("text, variables", [("n", "i"), ("i/2", "i"), ("i:x", "i"), ("", "i"), ("uuid", "i")])
def test_not_an_index_expression(text, variables):
    assert parse_index_expression(text, variables) is None


def test_division_by_zero_is_flagged_not_raised():
    assert parse_index_expression("i%0", "i").divides_by_zero
    assert not parse_index_expression("i//2", "i").divides_by_zero
