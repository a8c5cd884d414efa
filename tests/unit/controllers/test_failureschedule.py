"""The failure schedule plays the config's `failures:` against the cluster's clock, from the
cluster's creation time, and a restarted control plane ends in the state the schedule gives."""

from __future__ import annotations

from phalanx.api.faults import DEVICE_FAULT_ANNOTATION, NODE_FAULT_ANNOTATION
from phalanx.client import InformerFactory, InProcessClient
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.failureschedule import FailureSchedule, transitions

NODES = [NodeSpec(f"w-{i}", labels={"rack": f"r{i // 2}"}) for i in range(4)]


async def start(env, failures):
    factory = InformerFactory(InProcessClient(env.api, clock=env.clock, shared_reads=True), clock=env.clock)
    schedule = FailureSchedule(InProcessClient(env.api, clock=env.clock, field_manager="phalanx-failures"), factory,
                               failures=failures, clock=env.clock)
    schedule.start()
    assert await env.run_until(lambda: schedule.synced, within=5)
    return schedule, factory


async def stop(schedule, factory):
    await schedule.stop()
    await factory.stop()


def annotation(env, node, key):
    obj = env.api.get(env.api.resource("", "v1", "nodes"), "", node)
    return (obj["metadata"].get("annotations") or {}).get(key)


def down(env):
    return sorted(n.name for n in NODES if annotation(env, n.name, NODE_FAULT_ANNOTATION) == "down")


async def test_a_rack_fails_on_time_and_recovers_after(env):
    env.bootstrap(NODES)
    created = env.clock.now()
    s, f = await start(env, [{"at": 60.0, "nodes": {"matchLabels": {"rack": "r1"}}, "recoverAfter": 300.0},
                             {"at": 120.0, "node": "w-0", "devices": ["gpu-0", "gpu-3"]}])
    assert await env.run_until(lambda: down(env) == ["w-2", "w-3"], within=120)
    assert 60 <= env.clock.now() - created < 61
    assert await env.run_until(lambda: annotation(env, "w-0", DEVICE_FAULT_ANNOTATION) == "gpu-0,gpu-3", within=120)
    assert down(env) == ["w-2", "w-3"]
    assert await env.run_until(lambda: down(env) == [], within=400)
    assert 360 <= env.clock.now() - created < 361
    assert annotation(env, "w-0", DEVICE_FAULT_ANNOTATION) == "gpu-0,gpu-3"  # no recoverAfter: failed for good
    await stop(s, f)


async def test_a_restart_replays_what_is_due_in_order(env):
    env.bootstrap(NODES)
    failures = [{"at": 10.0, "node": "w-1", "recoverAfter": 20.0},
                {"at": 15.0, "node": "w-1"},
                {"at": 50.0, "node": "w-3"}]
    await env.run_until(lambda: False, within=40)  # the control plane was down until now
    s, f = await start(env, failures)
    await env.run_until(lambda: False, within=1)
    assert down(env) == []  # w-1: failed at 10 s, failed again at 15 s, recovered at 30 s
    assert await env.run_until(lambda: down(env) == ["w-3"], within=20)
    await stop(s, f)


def test_transitions_are_in_time_order():
    assert transitions([{"at": 5, "recoverAfter": 10}, {"at": 15}, {"at": 1}]) == [
        (1.0, 2, True), (5.0, 0, True), (15.0, 0, False), (15.0, 1, True)]
