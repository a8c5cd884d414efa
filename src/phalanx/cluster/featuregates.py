"""Feature gates: upstream 1.36 names, stages and defaults, overridden by the cluster config.

`FeatureGates.from_config({"GangScheduling": True})` gives the set every component consults
with `gates.enabled("GangScheduling")`. phalanx turns the five workload-aware-scheduling gates on
by default (they are why phalanx exists); every other gate has its upstream 1.36 default.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GateSpec:
    name: str
    stage: str  # ALPHA | BETA | GA | DEPRECATED
    default: bool
    locked: bool = False  # LockToDefault: cannot be changed
    phalanx: bool = False  # a phalanx extension, not an upstream gate


# Upstream 1.36 gates that phalanx components consult (and their upstream defaults).
KNOWN_GATES: dict[str, GateSpec] = {g.name: g for g in [
    GateSpec("GenericWorkload", "ALPHA", False),
    GateSpec("GangScheduling", "ALPHA", False),
    GateSpec("TopologyAwareWorkloadScheduling", "ALPHA", False),
    GateSpec("WorkloadAwarePreemption", "ALPHA", False),
    GateSpec("DRAWorkloadResourceClaims", "ALPHA", False),
    GateSpec("DelayedPreemption", "ALPHA", False),
    GateSpec("WorkloadWithJob", "ALPHA", False),
    GateSpec("DynamicResourceAllocation", "GA", True, locked=True),
    GateSpec("DRAAdminAccess", "BETA", True),
    GateSpec("DRAPrioritizedList", "BETA", True),
    GateSpec("DRADeviceTaints", "BETA", False),
    GateSpec("DRAPartitionableDevices", "BETA", True),
    GateSpec("DRAConsumableCapacity", "BETA", True),
    GateSpec("DRAExtendedResource", "BETA", True),
    GateSpec("DRAResourceClaimDeviceStatus", "GA", True, locked=True),
    GateSpec("DRAListTypeAttributes", "ALPHA", False),
    GateSpec("SchedulerQueueingHints", "GA", True, locked=True),
    GateSpec("SchedulerAsyncPreemption", "BETA", True),
    GateSpec("PodSchedulingReadiness", "GA", True, locked=True),
    GateSpec("JobSuccessPolicy", "GA", True, locked=True),
    GateSpec("JobPodReplacementPolicy", "GA", True, locked=True),
    GateSpec("JobManagedBy", "GA", True, locked=True),
    GateSpec("SidecarContainers", "GA", True, locked=True),
    GateSpec("PodDisruptionConditions", "GA", True, locked=True),
]}

# The gates of the user's tutorial: on in phalanx unless the config says otherwise.
WAS_GATES = ("GenericWorkload", "GangScheduling", "TopologyAwareWorkloadScheduling",
             "WorkloadAwarePreemption", "DRAWorkloadResourceClaims")


class UnknownFeatureGate(ValueError):
    pass


class FeatureGates:
    def __init__(self, overrides: dict[str, bool] | None = None, *, was_defaults: bool = True):
        self._values: dict[str, bool] = {name: spec.default for name, spec in KNOWN_GATES.items()}
        if was_defaults:
            for g in WAS_GATES:
                self._values[g] = True
        self.explicit: dict[str, bool] = {}
        for name, value in (overrides or {}).items():
            self.set(name, value)

    @classmethod
    def from_config(cls, gates: dict[str, bool] | None) -> "FeatureGates":
        return cls(gates)

    def set(self, name: str, value: bool) -> None:
        spec = KNOWN_GATES.get(name)
        if spec is None:
            raise UnknownFeatureGate(f"unrecognized feature gate: {name}")
        if spec.locked and value != spec.default:
            raise UnknownFeatureGate(f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to {str(spec.default).lower()}")
        self._values[name] = bool(value)
        self.explicit[name] = bool(value)

    def enabled(self, name: str) -> bool:
        try:
            return self._values[name]
        except KeyError:
            raise UnknownFeatureGate(f"unrecognized feature gate: {name}") from None

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)


ALL_ON = FeatureGates()
