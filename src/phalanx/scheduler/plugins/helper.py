"""Small helpers shared by the in-tree plugins (upstream plugins/helper)."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from phalanx.scheduler.framework.status import Status


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> Optional[Status]:
    """Scale scores to [0, max_priority] by the highest one; `reverse` flips them (upstream
    DefaultNormalizeScore). All zero: all become 0, or max_priority when reversed."""
    max_count = max(scores) if scores else 0
    if max_count <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return None
    if min(scores) >= 0:
        if reverse:
            scores[:] = [max_priority - max_priority * s // max_count for s in scores]
        else:
            scores[:] = [max_priority * s // max_count for s in scores]
        return None
    for i, s in enumerate(scores):
        v = go_div(max_priority * s, max_count)
        scores[i] = max_priority - v if reverse else v
    return None


def build_broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """A piecewise-linear function through (utilization, score) points, flat outside them."""
    pts = list(shape)

    def f(p: int) -> int:
        for i, (u, s) in enumerate(pts):
            if p <= u:
                if i == 0:
                    return pts[0][1]
                pu, ps = pts[i - 1]
                return ps + go_div((s - ps) * (p - pu), (u - pu))
        return pts[-1][1]

    return f
