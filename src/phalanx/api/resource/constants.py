"""resource.k8s.io/v1 names and limits (k8s.io/api/resource/v1), the DRA feature gates, and
whether a gate is on for a request."""

from __future__ import annotations

from ..registry import StrategyContext

GROUP = "resource.k8s.io"
VERSION = "v1"

# -- constants (k8s.io/api/resource/v1) ------------------------------------------------------------
FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DRA_ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"

DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
DEVICE_TOLERATIONS_MAX = 16
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
RESERVED_FOR_MAX = 256
ALLOCATION_RESULTS_MAX = 32
ALLOCATION_CONFIG_MAX = 2 * DEVICE_CONFIG_MAX
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_DEVICES_ADVANCED = 64  # when a device has taints, consumes counters or list attributes
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_COUNTER_SET = 32
MAX_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
MAX_COUNTERS_PER_COUNTER_CONSUMPTION = 32
MAX_ATTRIBUTES_AND_CAPACITIES = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DEVICE_TAINTS_MAX = 16
DRIVER_NAME_MAX_LENGTH = 63
POOL_NAME_MAX_LENGTH = 253
BINDING_CONDITIONS_MAX = 4
CAPACITY_VALID_VALUES_MAX = 10
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS = 8
ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH = 10 * 1024
NETWORK_DATA_MAX_IPS = 16
NETWORK_DATA_INTERFACE_NAME_MAX = 256
NETWORK_DATA_HARDWARE_ADDRESS_MAX = 128

ALLOCATION_MODES = ("All", "ExactCount")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
CONFIG_SOURCES = ("FromClaim", "FromClass")

GATE_ADMIN_ACCESS = "DRAAdminAccess"
GATE_PRIORITIZED_LIST = "DRAPrioritizedList"
GATE_DEVICE_TAINTS = "DRADeviceTaints"
GATE_PARTITIONABLE = "DRAPartitionableDevices"
GATE_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
GATE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
GATE_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
GATE_EXTENDED_RESOURCE = "DRAExtendedResource"
GATE_LIST_ATTRIBUTES = "DRAListTypeAttributes"

# Upstream 1.36 defaults for gates phalanx's FeatureGates may not know yet.
GATE_DEFAULTS = {GATE_BINDING_CONDITIONS: True, GATE_DEVICE_STATUS: True, GATE_LIST_ATTRIBUTES: False}

NAMESPACES_KEY = "core/namespaces"


def enabled(ctx: StrategyContext, gate: str) -> bool:
    try:
        return bool(ctx.enabled(gate))
    except Exception:  # a gate phalanx does not list yet: upstream's 1.36 default
        return GATE_DEFAULTS.get(gate, False)
