"""Admission checks of selector expressions: `check_expression` tells the API server (and the
cluster config) whether a selector is acceptable, as upstream validates at admission."""

from __future__ import annotations

from typing import Optional

from .compiler import SELECTORS
from .environment import COST_LIMIT, ERROR_FORBIDDEN, ERROR_REQUIRED, CELFeatures

def check_expression(expression: str, features: CELFeatures = CELFeatures()) -> Optional[tuple[str, str]]:
    """For admission (`phalanx.api.resource`): None when the selector is acceptable, else
    (kind, detail) with kind "Required" / "Invalid" / "InternalError" as upstream's cel.Error types,
    or "Forbidden" with upstream's `too complex, exceeds cost limit`."""
    if not expression.strip():
        return (ERROR_REQUIRED, "")
    selector = SELECTORS.get(expression, features)
    if selector.error is not None:
        return (selector.error.error_type, selector.error.message)
    if selector.max_cost > COST_LIMIT:
        return (ERROR_FORBIDDEN, "too complex, exceeds cost limit")
    return None
