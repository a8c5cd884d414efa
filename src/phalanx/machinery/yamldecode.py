"""Decoding YAML request bodies without letting one body freeze the server.

    decode_yaml(raw)     # the document as JSON-compatible values, or YAMLDecodeError("yaml: ...")

PyYAML resolves an alias to the *same* Python object, so a few hundred bytes of nested aliases
("billion laughs") load quickly but expand to billions of values as soon as anything walks or
encodes the result. Upstream's YAML decoder (go-yaml v3, which kube-apiserver uses) counts the
values it decodes and refuses a document in which values reached through aliases exceed an
allowed share: 99 % up to 400,000 decoded values, falling to 10 % at 4,000,000. `decode_yaml`
measures the expanded size of the loaded document the same way, in time linear in the document's
distinct nodes (sizes are memoized per shared object), and refuses the same documents, with the
same words. A document that refers to itself (`&a [*a]`) cannot become JSON and is refused too.

Any other failure to load, including values PyYAML rejects with a plain ValueError (an impossible
timestamp such as `2001-13-45`), becomes a `YAMLDecodeError` as well, so callers turn every bad
body into a 400 rather than an internal error.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# go-yaml v3's alias budget: the allowed ratio of alias-driven decodes to all decodes.
_RATIO_RANGE_LOW = 400_000
_RATIO_RANGE_HIGH = 4_000_000
_MIN_ALIAS_DECODES = 100
_MIN_DECODES = 1_000

EXCESSIVE_ALIASING = "yaml: document contains excessive aliasing"


class YAMLDecodeError(ValueError):
    """A YAML body that cannot be decoded; the message reads as upstream's (`yaml: ...`)."""


def allowed_alias_ratio(decodes: int) -> float:
    """The share of alias-driven decodes upstream allows in a document of `decodes` values."""
    if decodes <= _RATIO_RANGE_LOW:
        return 0.99
    if decodes >= _RATIO_RANGE_HIGH:
        return 0.10
    span = _RATIO_RANGE_HIGH - _RATIO_RANGE_LOW
    return 0.99 - 0.89 * (decodes - _RATIO_RANGE_LOW) / span


def decode_yaml(raw: bytes | str) -> Any:
    """One YAML document as Python values, refusing bodies upstream's decoder refuses."""
    try:
        value = yaml.load(raw, Loader=_LOADER)
    except yaml.YAMLError as e:
        raise YAMLDecodeError(f"yaml: {e}") from None
    except (ValueError, TypeError, OverflowError) as e:  # e.g. an impossible timestamp
        raise YAMLDecodeError(f"yaml: {e}") from None
    check_aliasing(value)
    return value


def check_aliasing(value: Any) -> None:
    """Raise YAMLDecodeError when `value`, expanded, is mostly values reached through aliases
    (objects shared between places), or when it contains itself."""
    sizes: dict[int, int] = {}
    unique = _count_unique(value, sizes, set())
    decodes = sizes.get(id(value), 1)
    alias_decodes = decodes - unique
    if (alias_decodes > _MIN_ALIAS_DECODES and decodes > _MIN_DECODES
            and alias_decodes / decodes > allowed_alias_ratio(decodes)):
        raise YAMLDecodeError(EXCESSIVE_ALIASING)


def _count_unique(root: Any, sizes: dict[int, int], seen: set[int]) -> int:
    """Fill `sizes` with the expanded size of every container under `root` (memoized by identity,
    iteratively so that depth costs no recursion); return the number of distinct values."""
    if not isinstance(root, (dict, list)):
        return 1
    unique = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            children = node.values() if isinstance(node, dict) else node
            total = 1 + (len(node) if isinstance(node, dict) else 0)  # the mapping and its keys
            for child in children:
                total += sizes.get(id(child), 1) if isinstance(child, (dict, list)) else 1
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YAMLDecodeError("yaml: document refers to itself through an alias")
        if key in seen:
            continue  # already scheduled through another path; its size is pending below it
        seen.add(key)
        on_path.add(key)
        unique += 1
        stack.append((node, True))
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                if id(child) in on_path:
                    raise YAMLDecodeError("yaml: document refers to itself through an alias")
                stack.append((child, False))
            else:
                unique += 1
        if isinstance(node, dict):
            unique += len(node)
    return unique
