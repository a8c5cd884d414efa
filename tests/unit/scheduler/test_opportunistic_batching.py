"""Opportunistic batching (KEP-5598): pods with one signature reuse the previous cycle's scores.

What a user sees: identical pods land exactly where full cycles would have put them (same best
score), several per node when they fit, while pods that differ, or whose placement depends on
other pods (spreading, affinity), get full cycles."""

from __future__ import annotations

import random

import pytest

from phalanx.machinery.featuregates import FeatureGates
from phalanx.scheduler.framework import CycleState, Framework, PodInfo, Snapshot
from phalanx.scheduler.framework.batch import MAX_BATCH_AGE_SECONDS

from .builders import make_node, make_pod

ON = FeatureGates({"OpportunisticBatching": True})
OFF = FeatureGates({"OpportunisticBatching": False})


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def cluster(seed: int, n: int = 30) -> Snapshot:
    rng = random.Random(seed)
    nodes, pods = [], []
    for i in range(n):
        b = make_node(f"n{i}").capacity(cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([8, 16, 32])}Gi")
        if rng.random() < 0.2:
            b = b.taint("dedicated", "x", "PreferNoSchedule")
        nodes.append(b.obj())
        for j in range(rng.randrange(4)):
            p = make_pod(f"e{i}-{j}").req(cpu=f"{rng.choice([100, 500, 900])}m", memory="1Gi").obj()
            p["spec"]["nodeName"] = f"n{i}"
            pods.append(p)
    return Snapshot.from_nodes_and_pods(nodes, pods)


def place(fw: Framework, pod: dict, snap: Snapshot):
    """One scheduling cycle with the default assumption (the pod is added to the snapshot)."""
    return fw.scheduling_cycle(PodInfo(pod), snap)


def best_total(snap: Snapshot, pod: dict) -> tuple[int, dict[str, int]]:
    """What a full cycle (batching off) scores: the best total and every feasible node's total."""
    ref = Framework(feature_gates=OFF, snapshot=snap)
    state = CycleState()
    pi = PodInfo(pod)
    feasible, _ = ref.find_nodes_that_fit_pod(state, pi)
    scores = ref.prioritize_nodes(state, pi, feasible)
    totals = scores.total_by_node()
    return max(totals.values()), totals


@pytest.mark.parametrize("seed", range(6))
def test_identical_pods_get_the_best_score_a_full_cycle_would_give(seed):
    snap = cluster(seed)
    fw = Framework(feature_gates=ON, snapshot=snap, seed=seed)
    batched = 0
    for k in range(60):
        pod = make_pod(f"p{k}").req(cpu="300m", memory="1Gi").obj()
        best, totals = best_total(snap, pod)
        result = place(fw, pod, snap)
        assert result.status is None, result.message()
        assert totals[result.node_name] == best, f"pod {k}: {result.node_name} scored {totals[result.node_name]}, best {best}"
        batched += result.schedule_result.batched
    assert batched >= 50  # most pods reuse the batch; several pods share nodes (rescoring)


def test_a_different_pod_gets_a_full_cycle():
    snap = cluster(1)
    fw = Framework(feature_gates=ON, snapshot=snap)
    place(fw, make_pod("a").req(cpu="300m").obj(), snap)
    assert place(fw, make_pod("b").req(cpu="300m").obj(), snap).schedule_result.batched
    assert not place(fw, make_pod("c").req(cpu="200m").obj(), snap).schedule_result.batched
    assert not place(fw, make_pod("d").req(cpu="200m").toleration(key="k").obj(), snap).schedule_result.batched


def test_pods_placed_by_other_pods_positions_are_never_batched():
    snap = cluster(2)
    fw = Framework(feature_gates=ON, snapshot=snap)
    for k in range(3):
        p = make_pod(f"s{k}").req(cpu="100m").label("app", "w").spread(1, "kubernetes.io/hostname", {"app": "w"}).obj()
        assert not place(fw, p, snap).schedule_result.batched
    for k in range(3):
        p = make_pod(f"a{k}").req(cpu="100m").label("app", "x").pod_anti_affinity(
            "kubernetes.io/hostname", {"app": "x"}).obj()
        assert not place(fw, p, snap).schedule_result.batched


def test_a_node_changed_by_someone_else_is_rescored_before_use():
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="16Gi").obj() for i in range(5)]
    snap = Snapshot.from_nodes_and_pods(nodes)
    fw = Framework(feature_gates=ON, snapshot=snap)
    place(fw, make_pod("p0").req(cpu="1").obj(), snap)
    # another scheduler's pod fills every node but n3 to the brim
    for i in (0, 1, 2, 4):
        other = make_pod(f"x{i}").req(cpu="3").obj()
        other["spec"]["nodeName"] = f"n{i}"
        snap.add_pod(PodInfo(other), f"n{i}")
    r = place(fw, make_pod("p1").req(cpu="1").obj(), snap)
    assert r.status is None and r.node_name == "n3"


def test_the_batch_expires_after_its_maximum_age():
    snap = cluster(3)
    fw = Framework(feature_gates=ON, snapshot=snap)
    clock = FakeClock()
    fw.batch.clock = clock
    place(fw, make_pod("a").req(cpu="100m").obj(), snap)
    clock.t += MAX_BATCH_AGE_SECONDS / 2
    assert place(fw, make_pod("b").req(cpu="100m").obj(), snap).schedule_result.batched
    clock.t += MAX_BATCH_AGE_SECONDS
    assert not place(fw, make_pod("c").req(cpu="100m").obj(), snap).schedule_result.batched


def test_the_gate_turns_batching_off():
    snap = cluster(4)
    fw = Framework(feature_gates=OFF, snapshot=snap)
    assert fw.batch is None
    for k in range(3):
        assert not place(fw, make_pod(f"p{k}").req(cpu="100m").obj(), snap).schedule_result.batched


def test_no_node_fits_any_more_ends_the_batch_with_a_fit_error():
    nodes = [make_node(f"n{i}").capacity(cpu="1", memory="4Gi").obj() for i in range(3)]
    snap = Snapshot.from_nodes_and_pods(nodes)
    fw = Framework(feature_gates=ON, snapshot=snap)
    placed = [place(fw, make_pod(f"p{k}").req(cpu="400m").obj(), snap) for k in range(7)]
    assert [r.status is None for r in placed] == [True] * 6 + [False]
    assert sorted(r.node_name for r in placed[:6]) == ["n0", "n0", "n1", "n1", "n2", "n2"]
    assert "Insufficient cpu" in placed[6].message()


def test_a_custom_plugin_that_signs_by_label_splits_pods_with_equal_specs():
    # In-tree signers read the spec only, so pods with equal specs share their fragments; a plugin
    # that reads more (here: a label) keeps that shortcut off, and its fragment decides.
    from phalanx.scheduler.framework import FilterPlugin, Registry
    from phalanx.scheduler.framework.config import KubeSchedulerProfile, PluginRef, PluginSet, Plugins
    from phalanx.scheduler.plugins import queuesort

    class ByTeam(FilterPlugin):
        NAME = "ByTeam"

        def filter(self, state, pod, node_info):
            return None

        def sign_pod(self, pod):
            return pod.labels.get("team")

    registry = Registry({"PrioritySort": queuesort.new, "ByTeam": lambda args, handle: ByTeam()})
    profile = KubeSchedulerProfile(plugins=Plugins(multi_point=PluginSet(
        enabled=[PluginRef("PrioritySort"), PluginRef("ByTeam")])))
    snap = Snapshot.from_nodes_and_pods([make_node(f"n{i}").capacity(cpu="4").obj() for i in range(3)])
    fw = Framework(profile, registry=registry, snapshot=snap, feature_gates=ON)
    place(fw, make_pod("a").req(cpu="100m").label("team", "x").obj(), snap)
    assert place(fw, make_pod("b").req(cpu="100m").label("team", "x").obj(), snap).schedule_result.batched
    assert not place(fw, make_pod("c").req(cpu="100m").label("team", "y").obj(), snap).schedule_result.batched
