"""Semantic versions as upstream's blang/semver parses and orders them."""

from __future__ import annotations

import pytest

from phalanx.dra.semver import Semver, canonical, compare, is_semver, parse_semver

# semver.org §11's example chain, in increasing precedence.
PRECEDENCE = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
              "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]


def test_precedence_chain():
    versions = [parse_semver(v) for v in PRECEDENCE]
    for i, a in enumerate(versions):
        for j, b in enumerate(versions):
            assert compare(a, b) == (i > j) - (i < j), (PRECEDENCE[i], PRECEDENCE[j])


def test_parse_keeps_parts_and_build_never_counts():
    v = parse_semver("1.2.3-alpha.1+build.7")
    assert v == Semver(1, 2, 3, ("alpha", 1), ("build", "7"))
    assert canonical(v) == "1.2.3-alpha.1"
    assert compare(v, parse_semver("1.2.3-alpha.1+other")) == 0


@pytest.mark.parametrize("text, message", [
    ("", "Version string empty"),
    ("1.2", "No Major.Minor.Patch elements found"),
    ("v1.2.3", 'Invalid character(s) found in major number "v1"'),
    ("01.2.3", 'Major number must not contain leading zeroes "01"'),
    ("1.02.3", 'Minor number must not contain leading zeroes "02"'),
    ("1.2.03", 'Patch number must not contain leading zeroes "03"'),
    ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("1.2.3-a..b", "Prerelease is empty"),
    ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
    ("1.2.3+", "Build meta data is empty"),
    ("1.2.3+a_b", 'Invalid character(s) found in build meta data "a_b"'),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError) as err:
        parse_semver(text)
    assert str(err.value) == message


@pytest.mark.parametrize("text, expected", [("v1.2.3", "1.2.3"), ("1.2", "1.2.0"), ("v1", "1.0.0"),
                                            ("01.002.0003", "1.2.3"), ("1.2.3-rc.1", "1.2.3-rc.1")])
def test_normalizing_parse(text, expected):
    assert canonical(parse_semver(text, normalize=True)) == expected


def test_short_versions_cannot_carry_prerelease_when_normalizing():
    assert not is_semver("1.2-rc.1", normalize=True)
    assert is_semver("1.2", normalize=True) and not is_semver("1.2")
