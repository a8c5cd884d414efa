"""YAML request bodies: aliasing budgets as upstream's decoder keeps them, every failure a YAMLDecodeError."""

from __future__ import annotations

import time

import pytest

from phalanx.machinery.yamldecode import (EXCESSIVE_ALIASING, YAMLDecodeError, allowed_alias_ratio,
                                          decode_yaml)


def laughs(levels: int, width: int = 9) -> str:
    lines = ["x0: &a0 [" + ",".join(["lol"] * width) + "]"]
    lines += [f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines)


@pytest.mark.parametrize("text, expected", [
    ("a: 1\nb: [x, y]\n", {"a": 1, "b": ["x", "y"]}),
    ("base: &b {cpu: 1}\nother: *b\n", {"base": {"cpu": 1}, "other": {"cpu": 1}}),  # a little aliasing is fine
    ("", None),
])
def test_documents_decode(text, expected):
    assert decode_yaml(text) == expected


@pytest.mark.parametrize("levels", [4, 6, 9])
def test_alias_bombs_are_refused_at_once(levels):
    started = time.perf_counter()
    with pytest.raises(YAMLDecodeError, match=EXCESSIVE_ALIASING):
        decode_yaml(laughs(levels))
    assert time.perf_counter() - started < 1.0  # milliseconds; generous for a loaded machine


def test_many_plain_values_are_not_aliasing():
    text = "items:\n" + "".join(f"- {{name: n{i}, v: {i}}}\n" for i in range(5000))
    assert len(decode_yaml(text)["items"]) == 5000


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n"])
def test_a_document_that_contains_itself_is_refused(text):
    with pytest.raises(YAMLDecodeError, match="refers to itself"):
        decode_yaml(text)


@pytest.mark.parametrize("text", ["a: 2001-13-45\n", "a: [1, 2\n", "a: b: c\n", "--- 1\n--- 2\n"])
def test_malformed_documents_are_decode_errors(text):
    with pytest.raises(YAMLDecodeError, match="^yaml: "):
        decode_yaml(text)


@pytest.mark.parametrize("decodes, ratio", [(1000, 0.99), (400_000, 0.99), (4_000_000, 0.10),
                                            (2_200_000, 0.545)])
def test_allowed_alias_ratio_falls_from_99_to_10_percent(decodes, ratio):
    assert allowed_alias_ratio(decodes) == pytest.approx(ratio)
