"""Workload-aware preemption's building blocks: the importance order of victim units, the
preemptor's priority, and how victims are described (the whole flow runs in
tests/integration/test_preemption.py)."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import NodeInfo, PodInfo, Snapshot
from phalanx.scheduler.preemptiondryrun import VictimUnit, _overcommitted, _room_for, describe_units
from phalanx.scheduler.grouppreemption import disruption_mode, group_priority

from .builders import make_node, make_pod


def unit(name: str, priority: int, kind: str = "Pod", size: int = 1, start: str = "2026-01-01T00:00:00Z") -> VictimUnit:
    pods = [(PodInfo(make_pod(f"{name}-{i}").obj()), "n") for i in range(size)]
    return VictimUnit(kind, name, name, priority, pods, start)


@pytest.mark.parametrize("units,expected", [
    ([unit("low", 0), unit("high", 10)], ["high", "low"]),                                # priority first
    ([unit("pod", 5), unit("group", 5, "PodGroup", 2)], ["group", "pod"]),                # a group before a pod
    ([unit("small", 5, "PodGroup", 2), unit("big", 5, "PodGroup", 4)], ["big", "small"]),  # larger group first
    ([unit("late", 5, start="2026-01-01T00:05:00Z"), unit("early", 5)], ["early", "late"]),  # earlier start
    ([unit("group", 0, "PodGroup", 8), unit("pod", 1)], ["pod", "group"]),                # priority beats kind
])
def test_victims_are_ordered_most_important_first(units, expected):
    assert [u.name for u in sorted(units, key=VictimUnit.importance)] == expected


@pytest.mark.parametrize("spec,pod_priorities,expected", [
    ({"priority": 100}, [5, 2000], 100),  # the PodGroup's priority is authoritative
    ({"priority": 0}, [2000], 0),
    ({}, [5, 7], 7),                      # no priority (gate was off at creation): the pods' highest
    ({}, [], 0),
])
def test_preemptor_priority(spec, pod_priorities, expected):
    pods = [PodInfo(make_pod(f"p{i}").priority(p).obj()) for i, p in enumerate(pod_priorities)]
    assert group_priority({"spec": spec}, pods) == expected


def test_disruption_mode_defaults_to_pod():
    assert disruption_mode({"spec": {}}) == "Pod"
    assert disruption_mode({"spec": {"disruptionMode": "PodGroup"}}) == "PodGroup"


@pytest.mark.parametrize("units,text", [
    ([unit("a", 0), unit("b", 0)], "2 pod(s)"),
    ([unit("g", 0, "PodGroup", 3)], "1 pod group(s)"),
    ([unit("a", 0), unit("g", 0, "PodGroup", 3)], "1 pod(s) and 1 pod group(s)"),
])
def test_describe_units(units, text):
    assert describe_units(units) == text


def test_overcommitted_and_room_for():
    node = make_node("n").capacity(cpu="4", memory="8Gi").obj()
    ni = NodeInfo(node, [make_pod("a").req(cpu="3").node("n").obj()])
    assert not _overcommitted(ni)
    ni.add_pod_info(PodInfo(make_pod("b").req(cpu="2").node("n").obj()))
    assert _overcommitted(ni)
    other = NodeInfo(make_node("m").capacity(cpu="4", memory="8Gi").obj(), [make_pod("c").req(cpu="2").node("m").obj()])
    view = Snapshot([NodeInfo(node), other])
    assert _room_for(view, [PodInfo(make_pod("x").req(cpu="4").obj())])      # n is empty
    assert not _room_for(view, [PodInfo(make_pod("x").req(cpu="5").obj())])  # 6 free in all, 4 at most on one node
    assert not _room_for(view, [PodInfo(make_pod(f"x{i}").req(cpu="3").obj()) for i in range(3)])  # 9 > 6
