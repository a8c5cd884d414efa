"""Kubernetes releases and their feature gates: what a 1.36 and a 1.37 cluster each accept."""

from __future__ import annotations

import pytest

from phalanx.machinery.featuregates import FeatureGates, UnknownFeatureGate
from phalanx.machinery.releases import UnsupportedVersion, git_version, parse_version


@pytest.mark.parametrize("text, expected", [
    ("v1.37.1", ("1.37", "v1.37.1")),
    ("1.37", ("1.37", "v1.37.1")),
    ("v1.36", ("1.36", "v1.36.4")),
    ("v1.37.0-rc.1", ("1.37", "v1.37.0-rc.1")),
])
def test_versions_name_a_release(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize("text, message", [
    ("v1.35.2", "Kubernetes 1.35 is not supported: phalanx serves 1.36 and 1.37"),
    ("latest", "invalid Kubernetes version 'latest': expected vMAJOR.MINOR[.PATCH], e.g. v1.37.1"),
])
def test_other_versions_are_refused(text, message):
    with pytest.raises(UnsupportedVersion) as e:
        parse_version(text)
    assert str(e.value) == message


def test_git_version_says_phalanx():
    assert git_version("v1.37.1") == "v1.37.1-phalanx"


def test_1_37_merged_the_gang_and_preemption_gates_into_generic_workload():
    with pytest.raises(UnknownFeatureGate) as e:
        FeatureGates({"GangScheduling": True}, release="1.37")
    assert str(e.value) == ("feature gate GangScheduling was removed in Kubernetes 1.37: it was merged into "
                            "GenericWorkload; set GenericWorkload instead")
    off = FeatureGates({"GenericWorkload": False}, release="1.37")
    assert not off.enabled("GangScheduling") and not off.enabled("WorkloadAwarePreemption")
    assert FeatureGates(release="1.37").enabled("WorkloadAwarePreemption")


def test_1_36_knows_neither_1_37_gate():
    for gate in ("CompositePodGroup", "PodGroupPreemptionPolicy"):
        with pytest.raises(UnknownFeatureGate, match=f"unrecognized feature gate: {gate}"):
            FeatureGates({gate: True}, release="1.36")


def test_1_37_stages_and_phalanx_defaults():
    gates = FeatureGates(release="1.37")
    assert gates.specs["GenericWorkload"].stage == "BETA" and not gates.specs["GenericWorkload"].default
    assert gates.specs["DRAWorkloadResourceClaims"].stage == "BETA"
    # phalanx turns the workload-aware-scheduling gates on; WorkloadWithJob stays at upstream's default.
    for gate in ("GenericWorkload", "TopologyAwareWorkloadScheduling", "DRAWorkloadResourceClaims",
                 "CompositePodGroup", "PodGroupPreemptionPolicy"):
        assert gates.enabled(gate), gate
    assert not gates.enabled("WorkloadWithJob")
    assert gates.validate() == []


def test_composite_pod_group_depends_on_topology_aware_scheduling():
    gates = FeatureGates({"CompositePodGroup": True, "TopologyAwareWorkloadScheduling": False}, release="1.37")
    assert gates.validate() == ["CompositePodGroup is enabled, but depends on features that are disabled: "
                                "[TopologyAwareWorkloadScheduling]"]
    # Left at phalanx's default, it follows its dependency off.
    assert not FeatureGates({"TopologyAwareWorkloadScheduling": False}, release="1.37").enabled("CompositePodGroup")
