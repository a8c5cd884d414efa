"""Dynamic Resource Allocation, the pure-logic core: CEL selectors, resource pools, the allocator.

No API client here: the scheduler's DynamicResources plugin and the controllers call in.

    from phalanx.dra import AllocatorCache, allocate, devices_in_use

    cache = AllocatorCache()                               # one per scheduler
    in_use = devices_in_use(all_claims) | in_flight        # set of DeviceID
    outcome = allocate(pod_claims, node, slices, classes, in_use, gates=gates, cache=cache)
    outcome.results   # [AllocationResult dict per claim] or None
    outcome.message   # "cannot allocate all claims" when it failed; outcome.reasons say why

Modules: `cel/` (selector environment, checks and compile cache), `semver`, `devices` (DeviceID, devices in
use, taints, attributes), `pools` (slice index and per-node pools), `allocator` (the search) with `plans` (claims
prepared for it), `constraints`, `results` (AllocationResults) and `explain` (why nothing fits).
"""

from .allocator import CANNOT_ALLOCATE_ALL_CLAIMS, AllocationOutcome, AllocatorCache, allocate
from .cel.compiler import CompiledSelector, SelectorCache, compile_selector
from .cel.device import CELDevice
from .cel.environment import CELCompileError, CELError, CELFeatures, CELRuntimeError
from .cel.validation import check_expression
from .devices import DeviceID, consumed_capacity, device_id, devices_in_use
from .plans import ALLOCATION_RESULTS_MAX_SIZE, AllocationError, AllocatorFeatures, SelectorError, claim_ref
from .pools import Inventory

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE", "CANNOT_ALLOCATE_ALL_CLAIMS", "AllocationError", "AllocationOutcome",
    "AllocatorCache", "AllocatorFeatures", "SelectorError", "allocate", "claim_ref",
    "CELCompileError", "CELDevice", "CELError", "CELFeatures", "CELRuntimeError", "CompiledSelector",
    "SelectorCache", "check_expression", "compile_selector",
    "DeviceID", "consumed_capacity", "device_id", "devices_in_use", "Inventory",
]
