"""Timeline entries from either Event API, their categories, and the bound on what is kept."""

from __future__ import annotations

import asyncio

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient
from phalanx.dashboard.timeline import EventFollower, Timeline, event_entry
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

NODES = {"w1", "w2", "rack-node-10"}


def core_event(name, reason, message, type_="Normal", kind="Pod", at="2026-12-03T10:00:00Z", count=1):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default", "uid": name},
            "involvedObject": {"kind": kind, "namespace": "default" if kind != "Node" else "", "name": "obj"},
            "reason": reason, "message": message, "type": type_, "lastTimestamp": at, "count": count,
            "source": {"component": "default-scheduler"}}


def test_categories_follow_the_reason_then_the_type():
    cases = [("Scheduled", "Normal", "binding"), ("Preempted", "Normal", "preemption"),
             ("FailedScheduling", "Warning", "failure"), ("TaintManagerEviction", "Normal", "failure"),
             ("NodeNotReady", "Normal", "failure"), ("BackOff", "Warning", "failure"),
             ("SomethingOdd", "Warning", "failure"), ("Pulled", "Normal", "other")]
    for reason, type_, expected in cases:
        assert event_entry(core_event("e", reason, "m", type_), NODES)["category"] == expected, reason


def test_an_events_k8s_io_event_reads_like_a_core_one():
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default", "uid": "u"},
          "regarding": {"kind": "PodGroup", "namespace": "default", "name": "gang"}, "reason": "Preempted",
          "note": "Preempted by PodGroup default/big: 2 pod(s) on nodes w1, w2", "type": "Normal",
          "eventTime": "2026-12-03T10:00:00.000001Z", "reportingController": "default-scheduler",
          "series": {"count": 3, "lastObservedTime": "2026-12-03T10:05:00.000000Z"}}
    entry = event_entry(ev, NODES)
    assert entry["object"] == {"kind": "PodGroup", "namespace": "default", "name": "gang"}
    assert (entry["nodes"], entry["count"], entry["source"]) == (["w1", "w2"], 3, "default-scheduler")
    assert entry["time"] == "2026-12-03T10:05:00.000000Z"


def test_a_node_event_names_its_node():
    entry = event_entry(core_event("e", "NodeNotReady", "Node w2 status is now: NodeNotReady", kind="Node"), NODES)
    assert entry["nodes"] == ["obj", "w2"]


def test_the_timeline_keeps_the_newest_entries_whatever_order_they_arrive_in():
    timeline = Timeline(capacity=3)
    minutes = [5, 1, 4, 2, 3, 6]
    for m in minutes:
        timeline.record(event_entry(core_event(f"e{m}", "Scheduled", "m", at=f"2026-12-03T10:0{m}:00Z"), NODES))
    changed, removed = timeline.take_changes()
    assert [e["uid"] for e in timeline.ordered()] == ["e4", "e5", "e6"]
    assert set(changed) == {"e4", "e5", "e6"}
    assert removed == set()  # the entries that came and went before anyone was told are not news
    timeline.record(event_entry(core_event("e7", "Scheduled", "m", at="2026-12-03T10:07:00Z"), NODES))
    changed, removed = timeline.take_changes()
    assert set(changed) == {"e7"} and removed == {"e4"}


def test_a_repeated_event_updates_its_entry():
    timeline = Timeline()
    timeline.record(event_entry(core_event("e", "BackOff", "Back-off restarting", "Warning"), NODES))
    timeline.take_changes()
    timeline.record(event_entry(core_event("e", "BackOff", "Back-off restarting", "Warning",
                                           at="2026-12-03T10:01:00Z", count=2), NODES))
    changed, _ = timeline.take_changes()
    assert changed["e"]["count"] == 2 and len(timeline) == 1


async def test_a_follower_reads_the_existing_events_then_new_ones_and_says_when_it_caught_up():
    api = build_api(MemoryStore(), FeatureGates.from_config({}, release="1.36"))
    client = InProcessClient(api, field_manager="unit-test")
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u"}}
    for i in range(3):
        await client.create_event(pod, "Scheduled", f"Successfully assigned default/p to w{i}", component="s")
    seen: list[dict] = []
    follower = EventFollower(client, "v1", seen.extend, quiet=0.2)
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.caught_up.wait(), 10)
        assert sorted(e["message"] for e in seen) == [f"Successfully assigned default/p to w{i}" for i in range(3)]
        await client.create_event(pod, "Preempted", "Preempted by pod x on node w1", component="s")
        for _ in range(200):
            if len(seen) == 4:
                break
            await asyncio.sleep(0.01)
        assert seen[-1]["reason"] == "Preempted"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
