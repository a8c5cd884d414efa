"""The DRA CEL environment's settings: the feature gates that change it (`CELFeatures`), upstream's
limits, and the errors a selector gives (`CELCompileError`, `CELRuntimeError`)."""

from __future__ import annotations

from typing import NamedTuple

from ...machinery.featuregates import Gates, gate_on

MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength
COST_LIMIT = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_ATTRIBUTE_VALUES = 48  # ResourceSliceMaxAttributeValuesPerDevice

ERROR_INVALID = "Invalid"
ERROR_REQUIRED = "Required"
ERROR_INTERNAL = "InternalError"
ERROR_FORBIDDEN = "Forbidden"  # admission only: the cost estimate is over the limit

NO_SUCH_KEY_HINT = ". Consider using CEL optional chaining (?), has() macro, or orValue() for optional fields"


# -- errors ----------------------------------------------------------------------------------------

class CELError(Exception):
    """A selector failed; `expression` is the selector, `message` upstream's text."""

    def __init__(self, expression: str, message: str):
        super().__init__(message)
        self.expression = expression
        self.message = message


class CELCompileError(CELError):
    """The expression does not compile. `error_type` is upstream's cel.Error type."""

    def __init__(self, expression: str, message: str, error_type: str = ERROR_INVALID):
        super().__init__(expression, message)
        self.error_type = error_type


class CELRuntimeError(CELError):
    """Evaluating the expression for one device failed."""


def enhance_runtime_error(message: str) -> str:
    """Upstream's EnhanceRuntimeError: a hint for `no such key` errors."""
    if message.startswith("no such key:"):
        return message + NO_SUCH_KEY_HINT
    return message


class CELFeatures(NamedTuple):
    """The feature gates that change the CEL environment (a tuple: cheap to hash in cache keys)."""

    consumable_capacity: bool = True  # DRAConsumableCapacity: device.allowMultipleAllocations
    list_type_attributes: bool = False  # DRAListTypeAttributes: list attributes, includes()

    @classmethod
    def from_gates(cls, gates: Gates) -> "CELFeatures":
        def on(name: str, default: bool) -> bool:
            return gate_on(gates, name, default)
        return cls(on("DRAConsumableCapacity", True), on("DRAListTypeAttributes", False))

