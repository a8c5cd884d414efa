"""`spec.successPolicy`: whether the succeeded indexes of an Indexed Job meet one of its rules."""

from __future__ import annotations

from typing import Any

from .indexes import Intervals

Obj = dict[str, Any]


def match_success_policy(policy: Obj | None, completions: int, succeeded: Intervals) -> str | None:
    """The SuccessCriteriaMet message (`Matched rules at index <i>`) when a rule is met."""
    if not policy or not len(succeeded):
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = Intervals.parse(rule["succeededIndexes"], completions)
            if not len(required):
                continue
            contains = sum(1 for a, b in required.items for ix in range(a, b + 1) if succeeded.has(ix))
            if contains == required.total() or (count is not None and contains >= count):
                return f"Matched rules at index {index}"
        elif count is not None and succeeded.total() >= count:
            return f"Matched rules at index {index}"
    return None

