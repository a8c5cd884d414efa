"""Feature gates of each Kubernetes release phalanx serves (1.36, 1.37), overridden by the config.

`FeatureGates({"GangScheduling": True}, release="1.36")` gives the set every component consults
with `gates.enabled("GangScheduling")`. phalanx turns the workload-aware-scheduling gates of the
release on by default (they are why phalanx exists); every other gate has its upstream default.

1.37 merged `GangScheduling` and `WorkloadAwarePreemption` into `GenericWorkload` (now beta) and
added `PodGroupPreemptionPolicy` and `CompositePodGroup`. In a 1.37 set a merged gate cannot be set
(the error names the gate that replaced it) and `enabled()` answers with the gate it merged into,
so code that asks "is gang scheduling on?" reads the same in both releases.

Rules carried over from upstream's `component-base/featuregate`:
- an unknown name is rejected (`unrecognized feature gate: X`);
- a gate locked to its default cannot be changed
  (`cannot set feature gate X to false, feature is locked to true`);
- an enabled gate whose dependencies are disabled is an error
  (`X is enabled, but depends on features that are disabled: [Y]`) — reported by
  `FeatureGates.validate()`, which the cluster config loader calls.

One phalanx rule on top: a WAS gate that is on only because of phalanx's default (not set
explicitly) turns itself off when a gate it depends on is explicitly disabled, so
`featureGates: {GenericWorkload: false}` alone gives a coherent "no workload API" cluster.

Gates upstream has already removed after graduating (`REMOVED_GATES`) cannot be set (they are
unrecognized upstream too) but `enabled()` still answers True for them, so code written against
older releases keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Protocol, Union

from .releases import RELEASES

ALPHA = "ALPHA"
BETA = "BETA"
GA = "GA"
DEPRECATED = "DEPRECATED"


@dataclass(frozen=True)
class GateSpec:
    name: str
    stage: str  # ALPHA | BETA | GA | DEPRECATED
    default: bool
    locked: bool = False  # LockToDefault: cannot be changed
    phalanx: bool = False  # a phalanx extension, not an upstream gate
    depends_on: tuple[str, ...] = ()  # upstream defaultKubernetesFeatureGateDependencies


# Upstream 1.36 gates that phalanx components consult, with their upstream 1.36 stage and default.
# Sources: kubernetes/kubernetes pkg/features/kube_features.go (versioned specs) and the
# scheduler/DRA feature list split out of it (entries at or before 1.36).
KNOWN_GATES: dict[str, GateSpec] = {g.name: g for g in [
    # Workload-aware scheduling (KEP-4671, 5710, 5732, 5547) and PodGroup claims (KEP-5729).
    GateSpec("GenericWorkload", ALPHA, False),
    GateSpec("GangScheduling", ALPHA, False, depends_on=("GenericWorkload",)),
    GateSpec("TopologyAwareWorkloadScheduling", ALPHA, False, depends_on=("GenericWorkload",)),
    GateSpec("WorkloadAwarePreemption", ALPHA, False, depends_on=("GangScheduling",)),
    GateSpec("WorkloadWithJob", ALPHA, False, depends_on=("GenericWorkload",)),
    GateSpec("DRAWorkloadResourceClaims", ALPHA, False,
             depends_on=("DynamicResourceAllocation", "GenericWorkload")),
    # Not confirmed as a 1.36 gate (upstream PR #137203 adding it was closed); kept because
    # reference/upstream-behaviour.md lists it and phalanx's preemption consults it.
    GateSpec("DelayedPreemption", ALPHA, False, depends_on=("GenericWorkload",)),
    # Dynamic Resource Allocation.
    GateSpec("DynamicResourceAllocation", GA, True, locked=True),
    GateSpec("DRAAdminAccess", GA, True, locked=True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRAPrioritizedList", GA, True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRADeviceTaints", BETA, True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRADeviceTaintRules", BETA, False, depends_on=("DRADeviceTaints",)),
    GateSpec("DRAPartitionableDevices", BETA, True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRAConsumableCapacity", BETA, True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRAExtendedResource", BETA, True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRAResourceClaimDeviceStatus", BETA, True),
    GateSpec("DRADeviceBindingConditions", BETA, True,
             depends_on=("DynamicResourceAllocation", "DRAResourceClaimDeviceStatus")),
    GateSpec("DRASchedulerFilterTimeout", BETA, True, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRAListTypeAttributes", ALPHA, False, depends_on=("DynamicResourceAllocation",)),
    GateSpec("DRANodeAllocatableResources", ALPHA, False, depends_on=("DynamicResourceAllocation",)),
    # kube-scheduler.
    GateSpec("SchedulerQueueingHints", GA, True, locked=True),
    GateSpec("SchedulerAsyncPreemption", BETA, True),
    GateSpec("SchedulerAsyncAPICalls", BETA, False),
    GateSpec("SchedulerPopFromBackoffQ", BETA, True),
    GateSpec("OpportunisticBatching", BETA, True),
    GateSpec("NominatedNodeNameForExpectation", BETA, True),
    GateSpec("ClearingNominatedNodeNameAfterBinding", BETA, True),
    GateSpec("PodSchedulingReadiness", GA, True, locked=True),
    GateSpec("MatchLabelKeysInPodTopologySpread", BETA, True),
    GateSpec("MatchLabelKeysInPodAffinity", GA, True, locked=True),
    GateSpec("NodeInclusionPolicyInPodTopologySpread", GA, True, locked=True),
    GateSpec("TaintTolerationComparisonOperators", ALPHA, False),
    GateSpec("PodLevelResources", BETA, True),
    GateSpec("NodeDeclaredFeatures", BETA, True),
    GateSpec("StorageCapacityScoring", ALPHA, False),
    # Job controller and pods.
    GateSpec("JobManagedBy", GA, True, locked=True),
    GateSpec("JobPodReplacementPolicy", GA, True, locked=True),
    GateSpec("JobSuccessPolicy", GA, True, locked=True),
    GateSpec("JobBackoffLimitPerIndex", GA, True, locked=True),
    GateSpec("MutableSchedulingDirectivesForSuspendedJobs", ALPHA, False),
    GateSpec("MutablePodResourcesForSuspendedJobs", ALPHA, False),
    GateSpec("SidecarContainers", GA, True, locked=True),
    GateSpec("PodReadyToStartContainersCondition", BETA, True),
    GateSpec("PodObservedGenerationTracking", GA, True, locked=True),
    GateSpec("InPlacePodVerticalScaling", GA, True, locked=True),
    # API server machinery.
    GateSpec("WatchList", BETA, True),
    GateSpec("ConsistentListFromCache", GA, True, locked=True),
    GateSpec("RetryGenerateName", GA, True, locked=True),
    GateSpec("OrderedNamespaceDeletion", GA, True, locked=True),
    # phalanx extensions (not upstream gates; `phalanx=True`).
    # Preferred and multi-level topology for PodGroups (annotation
    # scheduling.phalanx.dev/preferred-topology, docs/topology.md). It acts only where the
    # TopologyPlacementGenerator plugin runs, i.e. with TopologyAwareWorkloadScheduling on.
    GateSpec("PhalanxPreferredTopology", ALPHA, True, phalanx=True),
    # Workload-aware preemption for PodGroups with a topology constraint (each domain gets its own
    # eviction set, the smallest wins; docs/topology.md). Upstream 1.36 refuses preemption for
    # such groups, and so does phalanx unless this gate is on.
    GateSpec("PhalanxTopologyAwarePreemption", ALPHA, False, phalanx=True,
             depends_on=("WorkloadAwarePreemption",)),
]}

# JobSet's workload-aware-scheduling gate: JobSet's manager configuration upstream, a cluster gate in
# phalanx (which runs the JobSet controller built in); 1.37 only, as its types are 1.37's.
JOBSET_WAS_GATE = "JobSetWorkloadAwareSchedulingAPI"

# Gates upstream removed after GA: not settable (upstream says "unrecognized"), always enabled.
REMOVED_GATES = frozenset({"PodDisruptionConditions"})


# Gates a release merged into another: not settable there, and answering as the gate they joined.
MERGED_GATES: dict[str, dict[str, str]] = {
    "1.36": {},
    "1.37": {"GangScheduling": "GenericWorkload", "WorkloadAwarePreemption": "GenericWorkload"},
}


def _gates_of_1_37() -> dict[str, GateSpec]:
    """1.37's table: 1.36's with the WAS gates re-staged (sources: reference/was-1.37.md §1.8)."""
    table = {name: spec for name, spec in KNOWN_GATES.items() if name not in MERGED_GATES["1.37"]}
    for spec in [
        GateSpec("GenericWorkload", BETA, False),
        GateSpec("DRAWorkloadResourceClaims", BETA, False,
                 depends_on=("DynamicResourceAllocation", "GenericWorkload")),
        GateSpec("PodGroupPreemptionPolicy", ALPHA, False, depends_on=("GenericWorkload",)),
        GateSpec("CompositePodGroup", ALPHA, False,
                 depends_on=("GenericWorkload", "TopologyAwareWorkloadScheduling")),
        GateSpec("PhalanxTopologyAwarePreemption", ALPHA, False, phalanx=True, depends_on=("GenericWorkload",)),
        # JobSet's own gate (kubernetes-sigs/jobset pkg/features, alpha, off): `spec.scheduling` on
        # JobSets, compiled by the JobSet controller into v1beta1 Workloads and PodGroups.
        GateSpec(JOBSET_WAS_GATE, ALPHA, False, phalanx=True, depends_on=("GenericWorkload",)),
    ]:
        table[spec.name] = spec
    return table


GATES_BY_RELEASE: dict[str, dict[str, GateSpec]] = {"1.36": KNOWN_GATES, "1.37": _gates_of_1_37()}

# The gates of the user's tutorial: on in phalanx unless the config says otherwise.
WAS_GATES_BY_RELEASE: dict[str, tuple[str, ...]] = {
    "1.36": ("GenericWorkload", "GangScheduling", "TopologyAwareWorkloadScheduling",
             "WorkloadAwarePreemption", "DRAWorkloadResourceClaims"),
    "1.37": ("GenericWorkload", "TopologyAwareWorkloadScheduling", "DRAWorkloadResourceClaims",
             "PodGroupPreemptionPolicy", "CompositePodGroup"),
}
WAS_GATES = WAS_GATES_BY_RELEASE["1.36"]


def merged_gate_message(name: str, release: str) -> str | None:
    """Why `name` cannot be set in `release` when the release merged it into another gate."""
    into = MERGED_GATES.get(release, {}).get(name)
    if into is None:
        return None
    return (f"feature gate {name} was removed in Kubernetes {release}: it was merged into {into}; "
            f"set {into} instead")


class UnknownFeatureGate(ValueError):
    pass


class GateReader(Protocol):
    """Anything that answers whether a gate is on (FeatureGates, or a stand-in in tests)."""

    def enabled(self, name: str) -> bool: ...


# What the DRA code accepts as gates: a reader, a plain {name: on} mapping, or None for the defaults.
Gates = Optional[Union[GateReader, Mapping[str, bool]]]


def gate_on(gates: Gates, name: str, default: bool) -> bool:
    """Whether `name` is on in `gates`; `default` when no gates are given, the mapping lacks the
    gate, or the reader does not know it."""
    if gates is None:
        return default
    if isinstance(gates, Mapping):
        return bool(gates.get(name, default))
    try:
        return bool(gates.enabled(name))
    except Exception:
        return default


class FeatureGates:
    def __init__(self, overrides: dict[str, bool] | None = None, *, was_defaults: bool = True,
                 release: str = "1.36"):
        if release not in GATES_BY_RELEASE:
            raise UnknownFeatureGate(f"unsupported Kubernetes release {release!r} "
                                     f"(phalanx serves {', '.join(RELEASES)})")
        self.release = release
        self.specs = GATES_BY_RELEASE[release]
        self._merged = MERGED_GATES[release]
        self._values: dict[str, bool] = {name: spec.default for name, spec in self.specs.items()}
        self._phalanx_defaults: set[str] = set()
        if was_defaults:
            for g in WAS_GATES_BY_RELEASE[release]:
                if not self._values[g]:
                    self._values[g] = True
                    self._phalanx_defaults.add(g)
        self.explicit: dict[str, bool] = {}
        for name, value in (overrides or {}).items():
            self.set(name, value)

    @classmethod
    def from_config(cls, gates: dict[str, bool] | None, release: str = "1.36") -> "FeatureGates":
        return cls(gates, release=release)

    def set(self, name: str, value: bool) -> None:
        spec = self.specs.get(name)
        if spec is None:
            raise UnknownFeatureGate(merged_gate_message(name, self.release)
                                     or f"unrecognized feature gate: {name}")
        if spec.locked and value != spec.default:
            raise UnknownFeatureGate(f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to {str(spec.default).lower()}")
        self._values[name] = bool(value)
        self.explicit[name] = bool(value)
        self._settle_phalanx_defaults()

    def _settle_phalanx_defaults(self) -> None:
        """Turn off phalanx-defaulted gates whose dependencies are off (until nothing changes)."""
        changed = True
        while changed:
            changed = False
            for name in self._phalanx_defaults:
                if name in self.explicit or not self._values[name]:
                    continue
                if any(not self._values[dep] for dep in self.specs[name].depends_on):
                    self._values[name] = False
                    changed = True

    def enabled(self, name: str) -> bool:
        try:
            return self._values[name]
        except KeyError:
            if name in self._merged:
                return self._values[self._merged[name]]
            if name in REMOVED_GATES:
                return True
            raise UnknownFeatureGate(f"unrecognized feature gate: {name}") from None

    def validate(self) -> list[str]:
        """Upstream's dependency check: enabled gates whose dependencies are disabled."""
        errors = []
        for name in sorted(self._values):
            if not self._values[name]:
                continue
            disabled = [dep for dep in self.specs[name].depends_on if not self._values[dep]]
            if disabled:
                errors.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(disabled)}]")
        return errors

    def is_upstream_default(self, name: str) -> bool:
        """True when the gate has its upstream default value in this release."""
        return self.enabled(name) == self.specs[name].default

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)


ALL_ON = FeatureGates()
