"""Names, label keys and label values: upstream's verdicts and messages, in bounded time."""

from __future__ import annotations

import time

import pytest

from phalanx.machinery.names import (
    LABEL_MSG,
    LABEL_VALUE_MSG,
    QUALIFIED_MSG,
    SUBDOMAIN_MSG,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    is_c_identifier,
    label_value_errors,
    qualified_name_errors,
)

EMPTY_NAME = "name part must be non-empty"


@pytest.mark.parametrize("value, errors", [
    ("app", []),
    ("example.com/app", []),
    ("a.b_c-D", []),
    # Upstream checks the name part's pattern even when it is empty: two messages.
    ("", [EMPTY_NAME, QUALIFIED_MSG]),
    ("example.com/", [EMPTY_NAME, QUALIFIED_MSG]),
    ("/app", ["prefix part must be non-empty"]),
    ("Example.com/app", ["prefix part " + SUBDOMAIN_MSG]),
    ("-app", [QUALIFIED_MSG]),
    ("a" * 64, ["name part must be no more than 63 characters"]),
    # Go's `$` is the end of the text: a final newline is not part of a valid name.
    ("app\n", [QUALIFIED_MSG]),
])
def test_qualified_names(value, errors):
    assert qualified_name_errors(value) == errors


@pytest.mark.parametrize("check, value, errors", [
    (dns1123_label_errors, "my-name", []),
    (dns1123_label_errors, "my-name\n", [LABEL_MSG]),
    (dns1123_label_errors, "my.name", [LABEL_MSG]),
    (dns1123_label_errors, "-a", [LABEL_MSG]),
    (dns1123_label_errors, "", [LABEL_MSG]),
    (dns1123_subdomain_errors, "example.com", []),
    (dns1123_subdomain_errors, "example.com\n", [SUBDOMAIN_MSG]),
    (dns1123_subdomain_errors, "example..com", [SUBDOMAIN_MSG]),
    (dns1123_subdomain_errors, "example.-com", [SUBDOMAIN_MSG]),
    (dns1123_subdomain_errors, "example-.com", [SUBDOMAIN_MSG]),
    (dns1123_subdomain_errors, ".example", [SUBDOMAIN_MSG]),
    (dns1123_subdomain_errors, "a" * 254, ["must be no more than 253 characters"]),
    (label_value_errors, "", []),
    (label_value_errors, "v1.2_x", []),
    (label_value_errors, "v1\n", [LABEL_VALUE_MSG]),
    (label_value_errors, "_v", [LABEL_VALUE_MSG]),
])
def test_names_and_label_values(check, value, errors):
    assert check(value) == errors


@pytest.mark.parametrize("value, valid", [("x", True), ("_x9", True), ("9x", False), ("x\n", False), ("", False)])
def test_c_identifiers(value, valid):
    assert is_c_identifier(value) is valid


LONG = 1024 * 1024


@pytest.mark.parametrize("value", [
    "a" * LONG + "!", "a-" * (LONG // 2) + "!", "a." * (LONG // 2) + "!", "ab-." * (LONG // 4) + "-",
    "a._" * (LONG // 3) + "!", "a" * LONG + "/" + "b" * LONG + "!",
])
def test_megabyte_values_are_judged_at_once(value):
    started = time.perf_counter()
    for check in (dns1123_label_errors, dns1123_subdomain_errors, qualified_name_errors, label_value_errors):
        assert check(value)
    assert time.perf_counter() - started < 1.0  # "does not hang": a few milliseconds each
