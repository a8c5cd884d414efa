"""Gang scheduling of PodGroups on an in-process cluster (issue: the workload-aware scheduler)."""

from __future__ import annotations

import pytest

from phalanx.machinery.errors import StatusError

from .conftest import nodes, pod, podgroup


def cond(obj: dict, t: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == t), None)


async def test_gang_of_six_with_room_binds_all_in_one_cycle(cluster_factory):
    c = await cluster_factory().start(nodes(3))
    await c.client.create(podgroup("g", 6))
    for i in range(6):
        await c.client.create(pod(f"p{i}", group="g"))
    assert await c.run_until(lambda: len(c.running()) == 6)
    assert len(c.bound()) == 6
    assert c.scheduler.stats["group_attempts"] == 1
    pg = c.podgroup("g")
    st = cond(pg, "PodGroupScheduled")
    assert (st["status"], st["reason"]) == ("True", "Scheduled")
    ev = [e["reason"] for e in c.events("p0")]
    assert "Scheduled" in ev
    msg = next(e["message"] for e in c.events("p0") if e["reason"] == "Scheduled")
    assert msg.startswith("Successfully assigned default/p0 to node-")
    await c.stop()


async def test_a_gang_that_assembles_at_once_is_not_reported_gated(cluster_factory):
    """Members held by GangScheduling until the gang is complete say so on the pod only after
    KEP-5501's delay: a gang whose pods all arrive within it never shows SchedulingGated."""
    c = await cluster_factory().start(nodes(3))
    reasons: list[str] = []
    c.store.listeners.append(lambda ev: reasons.extend(
        (x.get("reason") or "") for x in ((ev.object.get("status") or {}).get("conditions") or [])
        if ev.key == "core/pods" and x.get("type") == "PodScheduled"))
    await c.client.create(podgroup("g", 4))
    for i in range(4):
        await c.client.create(pod(f"p{i}", group="g"))
        await c.settle(1)  # the members arrive over three seconds
    assert await c.run_until(lambda: len(c.bound()) == 4)
    assert "SchedulingGated" not in reasons
    await c.stop()


async def test_gang_that_fits_four_of_six_binds_none_and_says_why(cluster_factory):
    c = await cluster_factory().start(nodes(2, cpu="2"))
    await c.client.create(podgroup("g", 6))
    for i in range(6):
        await c.client.create(pod(f"p{i}", group="g"))
    await c.settle(5)
    assert c.bound() == {}
    st = cond(c.podgroup("g"), "PodGroupScheduled")
    assert (st["status"], st["reason"]) == ("False", "Unschedulable")
    assert st["message"] == ("4/6 pods fit, 6 required; 1 pod: 2 Insufficient cpu; 1 pod not evaluated "
                             "(minCount (6) cannot be satisfied: 4 scheduled, 1 remaining)")
    p = c.pod("p0")
    ps = cond(p, "PodScheduled")
    assert (ps["status"], ps["reason"]) == ("False", "Unschedulable")
    await c.stop()


async def test_min_count_larger_than_pods_keeps_all_pending(cluster_factory):
    c = await cluster_factory().start(nodes(3))
    await c.client.create(podgroup("g", 4))
    for i in range(3):
        await c.client.create(pod(f"p{i}", group="g"))
    await c.settle(5)
    assert c.bound() == {}
    gated = c.scheduler.queue.gated
    assert len(gated) == 3
    assert all(q.gating_plugin == "GangScheduling" for q in gated.values())
    ps = cond(c.pod("p0"), "PodScheduled")
    assert (ps["status"], ps["reason"], ps["message"]) == (
        "False", "SchedulingGated", "waiting for minCount pods from a gang to appear in scheduling queue")
    # the fourth pod releases the gang
    await c.client.create(pod("p3", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 4)
    await c.stop()


async def test_pod_group_created_after_its_pods_releases_them(cluster_factory):
    c = await cluster_factory().start(nodes(2))
    for i in range(2):
        await c.client.create(pod(f"p{i}", group="late"))
    await c.settle(3)
    assert c.bound() == {}
    q = next(iter(c.scheduler.queue.gated.values()))
    assert 'waiting for pods\'s pod group "late" to appear in scheduling queue' in \
        c.scheduler.fw.run_pre_enqueue_plugins(q.pod_info).message()
    await c.client.create(podgroup("late", 2))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    await c.stop()


async def test_late_member_joins_a_scheduled_group(cluster_factory):
    c = await cluster_factory().start(nodes(2))
    await c.client.create(podgroup("g", 2))
    for i in range(2):
        await c.client.create(pod(f"p{i}", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    await c.client.create(pod("p2", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 3)
    await c.stop()


async def test_basic_policy_schedules_what_fits(cluster_factory):
    c = await cluster_factory().start(nodes(1, cpu="2"))
    await c.client.create(podgroup("b"))
    for i in range(3):
        await c.client.create(pod(f"p{i}", group="b"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    await c.settle(3)
    assert len(c.bound()) == 2
    st = cond(c.podgroup("b"), "PodGroupScheduled")
    assert st["status"] == "True"
    await c.stop()


async def test_pod_group_with_missing_workload_is_refused(cluster_factory):
    c = await cluster_factory().start(nodes(1))
    pg = podgroup("g", 2, podGroupTemplateRef={"workload": {"workloadName": "nope", "podGroupTemplateName": "w"}})
    with pytest.raises(StatusError) as e:
        await c.client.create(pg)
    assert e.value.code == 403
    assert 'PodGroup rejected: Workload "nope" not found' in e.value.message
    await c.stop()


async def test_single_pods_schedule_with_upstream_messages(cluster_factory):
    c = await cluster_factory().start(nodes(2, cpu="2"))
    await c.client.create(pod("small", cpu="1"))
    await c.client.create(pod("huge", cpu="64"))
    assert await c.run_until(lambda: "small" in c.bound())
    await c.settle(3)
    assert "huge" not in c.bound()
    ev = next(e for e in c.events("huge") if e["reason"] == "FailedScheduling")
    assert ev["message"] == "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    await c.stop()


async def test_permit_timeout_releases_reservations(cluster_factory):
    """On the pod-by-pod path (no group cycles, as 1.35) gang pods wait at Permit for minCount;
    the configurable timeout rejects them and releases what they reserved."""
    c = cluster_factory(permit_timeout=30, pod_group_cycles=False)
    await c.start(nodes(1, cpu="2"))
    await c.client.create(podgroup("g", 3))
    for i in range(3):
        await c.client.create(pod(f"p{i}", group="g"))
    # two pods fit and wait at Permit holding the node's 2 cpus; the third cannot fit
    assert await c.run_until(lambda: len(c.scheduler.fw.waiting_pods) == 2, within=10)
    assert c.bound() == {}
    assert sum(1 for s in c.scheduler.cache.pods.values() if s.assumed) == 2
    assert await c.run_until(lambda: any(e["reason"] == "FailedScheduling" and "rejected due to timeout after "
                                         "waiting 30s at plugin GangScheduling" in e["message"]
                                         for n in ("p0", "p1", "p2") for e in c.events(n)), within=40)
    assert c.bound() == {}
    await c.stop()


async def test_deleting_a_pod_group_with_live_pods_waits_for_them(cluster_factory):
    from phalanx.client import InProcessClient
    from phalanx.controllers.podgroupprotection import PodGroupProtectionController

    c = cluster_factory()
    await c.start(nodes(2), extra=[lambda cl: PodGroupProtectionController(
        InProcessClient(cl.api, clock=cl.clock), cl.factory, clock=cl.clock)])
    await c.client.create(podgroup("g", 2))
    for i in range(2):
        await c.client.create(pod(f"p{i}", group="g"))
    assert await c.run_until(lambda: len(c.running()) == 2)
    await c.client.delete("scheduling.k8s.io/v1alpha2", "PodGroup", "default", "g")
    await c.settle(5)
    pg = c.podgroup("g")
    assert pg["metadata"]["deletionTimestamp"]
    assert "scheduling.k8s.io/podgroup-protection" in pg["metadata"]["finalizers"]
    for i in range(2):
        await c.client.delete("v1", "Pod", "default", f"p{i}")
    rt = c.api.resource("scheduling.k8s.io", "v1alpha2", "podgroups")
    assert await c.run_until(lambda: c.api.store.get(rt.key, "default", "g") is None, within=30)
    await c.stop()
