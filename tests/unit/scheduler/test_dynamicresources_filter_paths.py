"""DynamicResources' quick paths (remembered allocator answers across nodes and cycles, cached node
selectors, the claim-name pre-check of the queueing hint) answer as the plain paths do."""

from __future__ import annotations

import copy

from phalanx.dra import testing as d
from phalanx.dra.devices import DeviceID
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.interface import FilterPlugin
from phalanx.scheduler.framework.events import QueueingHint

from .test_dynamicresources import GPU, Setup, allocated, claim, hint, node, pod, tracker_with


def _statuses(rejections) -> dict[int, tuple]:
    return {i: (st.code, tuple(st.reasons())) for i, st in rejections}


def _commit(setup: Setup, state: CycleState, name: str) -> None:
    """What PreBind and the informer do: the claim carries its allocation, the in-flight entry ends."""
    info = state.read("DynamicResources").claims[0]
    written = copy.deepcopy(setup.tracker.get("default", name))
    written["status"] = {"allocation": info.allocation}
    setup.tracker.assume(written)
    setup.tracker.written(info.uid)


def test_filter_over_many_nodes_agrees_with_filter_node_by_node():
    slices = [d.gpu_slice("n0", 2), d.gpu_slice("n1", 2), d.gpu_slice("n2", 1)]
    t = tracker_with([claim(f"c{i}") for i in range(8)], slices)
    s = Setup(t, [node(f"n{i}") for i in range(5)])  # n3, n4: no devices
    for i in range(4):
        _, state, _ = s.schedule(pod(f"p{i}", ("gpu", f"claim:c{i}")))
        _commit(s, state, f"c{i}")
        nodes = s.fw.snapshot_shared_lister().list()
        for _ in range(2):  # the second round answers from what the first remembered
            p = PodInfo(pod(f"q{i}", ("gpu", f"claim:c{i + 4}")))
            quick, plain = CycleState(), CycleState()
            s.plugin.pre_filter(quick, p, nodes)
            s.plugin.pre_filter(plain, p, nodes)
            assert _statuses(s.plugin.filter_nodes(quick, p, nodes)) == \
                _statuses(FilterPlugin.filter_nodes(s.plugin, plain, p, nodes))


def test_pods_fill_the_devices_one_by_one_then_say_why_not():
    t = tracker_with([claim(f"c{i}") for i in range(7)], [d.gpu_slice("n1", 3), d.gpu_slice("n2", 3)])
    s = Setup(t, [node("n1"), node("n2"), node("n3")])
    taken = set()
    for i in range(6):
        host, state, _ = s.schedule(pod(f"p{i}", ("gpu", f"claim:c{i}")))
        result = state.read("DynamicResources").claims[0].allocation["devices"]["results"][0]
        taken.add((host, result["pool"], result["device"]))
        _commit(s, state, f"c{i}")
    assert {(h, p) for h, p, _ in taken} == {("n1", "n1"), ("n2", "n2")} and len(taken) == 6
    assert all(DeviceID(GPU, p, dev) in t.in_use for _, p, dev in taken)
    counts = s.fail(pod("p6", ("gpu", "claim:c6"))).diagnosis.reason_counts(3)
    assert counts["claim default/c6, request gpu: not enough devices: 1 requested, 0 available (3 in use)"] == 2
    assert counts["claim default/c6, request gpu: no devices matched the selectors"] == 1


def test_a_freed_device_is_seen_by_the_next_cycle():
    t = tracker_with([claim("c0"), claim("c1")], [d.gpu_slice("n1", 1)])
    s = Setup(t, [node("n1")])
    _, state, _ = s.schedule(pod("p0", ("gpu", "claim:c0")))
    _commit(s, state, "c0")
    s.fail(pod("p1", ("gpu", "claim:c1")))
    t.claim_deleted(t.get("default", "c0"))
    host, state, _ = s.schedule(pod("p1", ("gpu", "claim:c1")))
    assert host == "n1" and state.read("DynamicResources").claims[0].allocation is not None


def test_an_allocated_claims_node_selector_follows_node_labels():
    rack = d.device_slice("rack", [d.dev("nic-0")], driver=GPU, pool="rack",
                          node_selector=d.labels_selector(rack="r1"))
    c = claim("c", d.request("nic"))
    c = copy.deepcopy(c)
    c["status"] = {"allocation": {
        "devices": {"results": [{"request": "nic", "driver": GPU, "pool": "rack", "device": "nic-0"}]},
        "nodeSelector": d.labels_selector(rack="r1")}}
    t = tracker_with([c], [rack])
    n1, n2 = node("n1"), node("n2")
    n1["metadata"]["labels"]["rack"] = "r1"
    s = Setup(t, [n1, n2])
    host, _, _ = s.schedule(pod("p", ("nic", "claim:c")))
    assert host == "n1"
    n1 = copy.deepcopy(n1)
    n1["metadata"]["labels"]["rack"] = "r0"
    n2 = copy.deepcopy(n2)
    n2["metadata"]["labels"]["rack"] = "r1"
    s2 = Setup(t, [n1, n2])
    host, _, _ = s2.schedule(pod("q", ("nic", "claim:c")))
    assert host == "n2"


def test_claim_hint_looks_at_the_pods_template_claims_through_its_status():
    mine = claim("p-gpu-x", owner={"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p",
                                   "controller": True})
    t = tracker_with([mine])
    after_claim_change = hint(s_plugin(t), "resource.k8s.io/ResourceClaim")
    waiting = pod("p", ("gpu", "template:t"), statuses={"gpu": "p-gpu-x"})
    assert after_claim_change(waiting, None, mine) == QueueingHint.Queue
    elsewhere = copy.deepcopy(mine)
    elsewhere["metadata"]["namespace"] = "other"
    assert after_claim_change(waiting, None, elsewhere) == QueueingHint.QueueSkip
    not_yet = pod("p", ("gpu", "template:t"))
    assert after_claim_change(not_yet, None, mine) == QueueingHint.QueueSkip
    # a deallocation anywhere frees devices: queue even when it is not the pod's claim
    other = claim("other")
    t.claim_added(other)
    assert after_claim_change(waiting, allocated(other, "n1"), other) == QueueingHint.Queue


def s_plugin(t):
    from phalanx.scheduler.plugins.dynamicresources import DynamicResources
    return DynamicResources(t)
