"""Semantic versions as DRA's CEL `semver` type sees them (github.com/blang/semver/v4 rules).

Kubernetes parses `version` device attributes and the `semver("1.2.3")` CEL function with blang's
strict `semver.Parse`; `semver(s, true)` first normalizes (`v` prefix dropped, missing minor/patch
filled with 0, leading zeros removed). Errors carry blang's own wording, which users then see in
CEL runtime errors:

    v = parse_semver("1.2.3-alpha.1+build.7")
    v.major, v.minor, v.patch, v.pre      # 1, 2, 3, ("alpha", 1)
    compare(parse_semver("1.0.0-alpha"), parse_semver("1.0.0"))   # -1
    canonical(v)                          # "1.2.3-alpha.1" (build metadata dropped: it never
                                          # takes part in comparisons, so equal versions share it)
    parse_semver("01.2.3")                # ValueError: Major number must not contain leading zeroes "01"
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple, Union

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_MAX_UINT64 = (1 << 64) - 1

PreReleasePart = Union[int, str]

# The API's check of a device's `version` attribute: upstream's semver regular expression, anchored
# at the end of the text with `\Z` (Go's `$`; Python's `$` would also accept a final newline). Use
# it with `match`. CEL's semver() parses with the functions below instead.
SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?\Z")


class Semver(NamedTuple):
    major: int
    minor: int
    patch: int
    pre: tuple[PreReleasePart, ...] = ()
    build: tuple[str, ...] = ()


def _contains_only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)


def _has_leading_zeroes(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def _parse_uint(text: str) -> int:
    """Go's strconv.ParseUint(text, 10, 64), with its error wording."""
    if not text or not _contains_only(text, _NUMBERS):
        raise ValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    value = int(text)
    if value > _MAX_UINT64:
        raise ValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return value


def _number(text: str, what: str) -> int:
    if not _contains_only(text, _NUMBERS):
        raise ValueError(f'Invalid character(s) found in {what.lower()} number "{text}"')
    if _has_leading_zeroes(text):
        raise ValueError(f'{what} number must not contain leading zeroes "{text}"')
    return _parse_uint(text)


def _prerelease_part(text: str) -> PreReleasePart:
    if not text:
        raise ValueError("Prerelease is empty")
    if _contains_only(text, _NUMBERS):
        if _has_leading_zeroes(text):
            raise ValueError(f'Numeric PreRelease version must not contain leading zeroes "{text}"')
        return _parse_uint(text)
    if _contains_only(text, _ALPHANUM):
        return text
    raise ValueError(f'Invalid character(s) found in prerelease "{text}"')


@lru_cache(maxsize=4096)
def _parse_strict(text: str) -> Semver:
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "Major")
    minor = _number(parts[1], "Minor")
    patch_text = parts[2]
    build: list[str] = []
    pre: list[PreReleasePart] = []
    plus = patch_text.find("+")
    if plus != -1:
        build = patch_text[plus + 1:].split(".")
        patch_text = patch_text[:plus]
    dash = patch_text.find("-")
    if dash != -1:
        pre_texts = patch_text[dash + 1:].split(".")
        patch_text = patch_text[:dash]
    else:
        pre_texts = []
    patch = _number(patch_text, "Patch")
    for p in pre_texts:
        pre.append(_prerelease_part(p))
    for b in build:
        if not b:
            raise ValueError("Build meta data is empty")
        if not _contains_only(b, _ALPHANUM):
            raise ValueError(f'Invalid character(s) found in build meta data "{b}"')
    return Semver(major, minor, patch, tuple(pre), tuple(build))


def _normalize(text: str) -> str:
    """apiserver's normalizeAndParse preprocessing (semver(s, true))."""
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        while len(parts) < 3:
            parts.append("0")
    return ".".join(parts)


def parse_semver(text: str, normalize: bool = False) -> Semver:
    """Parse as blang's semver.Parse (or apiserver's normalizing variant); ValueError on failure."""
    return _parse_strict(_normalize(text) if normalize else text)


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _compare_pre(a: PreReleasePart, b: PreReleasePart) -> int:
    if isinstance(a, int):
        if isinstance(b, int):
            return (a > b) - (a < b)
        return -1
    if isinstance(b, int):
        return 1
    return (a > b) - (a < b)


def compare(a: Semver, b: Semver) -> int:
    """-1, 0 or 1 by semver 2.0.0 precedence; build metadata is ignored."""
    for x, y in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if x != y:
            return 1 if x > y else -1
    if not a.pre and not b.pre:
        return 0
    if not a.pre:
        return 1
    if not b.pre:
        return -1
    for part_a, part_b in zip(a.pre, b.pre):
        c = _compare_pre(part_a, part_b)
        if c:
            return c
    return (len(a.pre) > len(b.pre)) - (len(a.pre) < len(b.pre))


def canonical(v: Semver) -> str:
    """`major.minor.patch[-pre]`: equal precedence gives equal text (build metadata is dropped)."""
    text = f"{v.major}.{v.minor}.{v.patch}"
    if v.pre:
        text += "-" + ".".join(str(p) for p in v.pre)
    return text
