"""DynamicResources plugin: claims, slices and classes made by hand, fed to a DRAManager, and the
plugin run through a Framework over a snapshot (PreBind against an in-memory API server)."""

from __future__ import annotations

import copy

import pytest

from phalanx.machinery.featuregates import FeatureGates
from phalanx.dra import testing as d
from phalanx.dra.devices import DeviceID
from phalanx.scheduler.framework import CycleState, Framework, PodInfo
from phalanx.scheduler.framework.config import KubeSchedulerProfile, set_profile_defaults
from phalanx.scheduler.framework.diagnosis import FitError
from phalanx.scheduler.framework.registry import in_tree_registry
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.events import QueueingHint
from phalanx.scheduler.framework.dra_manager import DRAManager
from phalanx.scheduler.plugins.dynamicresources import DynamicResources

from .builders import make_node, make_pod
from .harness import only, snapshot

GPU = d.DRIVER


# -- builders ----------------------------------------------------------------------------------------

def node(name: str) -> dict:
    return make_node(name).capacity(cpu="8", memory="32Gi").label("kubernetes.io/hostname", name).obj()


def claim(name: str, *requests: dict, uid: str | None = None, owner: dict | None = None) -> dict:
    c = d.claim(name, *(requests or (d.request("gpu"),)))
    c["metadata"]["uid"] = uid or f"uid-{name}"
    c["metadata"]["resourceVersion"] = "10"
    if owner is not None:
        c["metadata"]["ownerReferences"] = [owner]
    return c


def allocated(c: dict, node_name: str, device: str = "gpu-0", reserved: list | None = None) -> dict:
    out = copy.deepcopy(c)
    out["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": GPU, "pool": node_name, "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
    if reserved:
        out["status"]["reservedFor"] = reserved
    return out


def pod(name: str, *claims: tuple[str, str], group: str | None = None, statuses: dict | None = None) -> dict:
    """claims: (entry name, "claim:<name>" for resourceClaimName or "template:<name>")."""
    p = make_pod(name).req(cpu="100m").obj()
    entries = []
    for entry, source in claims:
        kind, _, ref = source.partition(":")
        entries.append({"name": entry, ("resourceClaimName" if kind == "claim" else "resourceClaimTemplateName"): ref})
    p["spec"]["resourceClaims"] = entries
    if group:
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
    if statuses:
        p["status"]["resourceClaimStatuses"] = [{"name": k, "resourceClaimName": v} for k, v in statuses.items()]
    return p


def podgroup(name: str, *claims: tuple[str, str], uid: str = "uid-pg") -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}},
                     "resourceClaims": [{"name": n, "resourceClaimTemplateName": t} for n, t in claims]}}


def tracker_with(claims=(), slices=(), classes=(d.device_class(),)) -> DRAManager:
    t = DRAManager()
    for c in claims:
        t.claim_added(c)
    for s in slices:
        t.slice_added(s)
    for dc in classes:
        t.class_added(dc)
    return t


class Setup:
    """A framework with DynamicResources (plus NodeResourcesFit) over `nodes`."""

    def __init__(self, tracker: DRAManager, nodes: list[dict], *, groups: dict | None = None, client=None):
        self.tracker = tracker
        groups = groups or {}
        self.plugin = DynamicResources(tracker, client, pod_group_of=lambda p: groups.get(
            (p.get("spec") or {}).get("schedulingGroup", {}).get("podGroupName")))
        reg = in_tree_registry()
        reg.register("DynamicResources", lambda args, handle: self.plugin)
        prof = KubeSchedulerProfile()
        set_profile_defaults(prof, custom_plugins=only("DynamicResources", "NodeResourcesFit", weights={
            "NodeResourcesFit": 1}))
        self.fw = Framework(prof, registry=reg, snapshot=snapshot(nodes))

    def schedule(self, p: dict) -> tuple[str, CycleState, PodInfo]:
        """PreFilter..Score then Reserve; returns (node, state, pod info)."""
        state = CycleState()
        pi = PodInfo(p)
        res = self.fw.schedule_pod(state, pi)
        st = self.fw.run_reserve_plugins_reserve(state, pi, res.suggested_host)
        assert st is None, st
        return res.suggested_host, state, pi

    def fail(self, p: dict) -> FitError:
        with pytest.raises(FitError) as e:
            self.fw.schedule_pod(CycleState(), PodInfo(p))
        return e.value

    def pre_filter(self, p: dict):
        state = CycleState()
        r, st = self.plugin.pre_filter(state, PodInfo(p), self.fw.snapshot_shared_lister().list())
        return r, st, state


# -- PreEnqueue ----------------------------------------------------------------------------------------

OWNED_BY_OTHER = {"apiVersion": "v1", "kind": "Pod", "name": "other", "uid": "uid-other", "controller": True}


@pytest.mark.parametrize("p, claims, message", [
    (make_pod("plain").obj(), [], None),
    (pod("p", ("gpu", "template:t")), [], 'pod "default/p": ResourceClaim not created yet'),
    (pod("p", ("gpu", "template:t"), statuses={"gpu": "p-gpu-x"}), [],
     'resourceclaim.resource.k8s.io "p-gpu-x" not found'),
    (pod("p", ("gpu", "template:t"), statuses={"gpu": "p-gpu-x"}),
     [claim("p-gpu-x", owner={"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True})],
     None),
    (pod("p", ("gpu", "template:t"), statuses={"gpu": "p-gpu-x"}), [claim("p-gpu-x", owner=OWNED_BY_OTHER)],
     "ResourceClaim default/p-gpu-x was not created for Pod default/p"),
    (pod("p", ("gpu", "claim:shared")), [claim("shared")], None),
    (pod("p", ("gpu", "claim:shared")), [dict(claim("shared"), metadata=dict(
        claim("shared")["metadata"], deletionTimestamp="2026-01-01T00:00:00Z"))],
     'resourceclaim "shared" is being deleted'),
    (pod("p", ("gpu", "template:t"), statuses={"gpu": None}), [], None),  # no claim was needed
], ids=["no-claims", "status-missing", "claim-missing", "generated-claim", "other-owner", "named-claim",
        "deleting", "nothing-generated"])
def test_pre_enqueue_waits_for_every_claim(p, claims, message):
    plugin = DynamicResources(tracker_with(claims))
    st = plugin.pre_enqueue(PodInfo(p))
    if message is None:
        assert st is None
    else:
        assert st.code == Code.UnschedulableAndUnresolvable
        assert message in st.message()


def test_pre_enqueue_accepts_the_pod_groups_generated_claim():
    owner = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "name": "g", "uid": "uid-pg",
             "controller": True}
    p = pod("p", ("gpu", "template:t"), group="g", statuses={"gpu": "g-gpu-abc"})
    plugin = DynamicResources(tracker_with([claim("g-gpu-abc", owner=owner)]))
    assert plugin.pre_enqueue(PodInfo(p)) is None


# -- PreFilter ---------------------------------------------------------------------------------------

def test_missing_device_class_is_unresolvable_with_upstreams_message():
    s = Setup(tracker_with([claim("c")], classes=()), [node("n1")])
    _, st, _ = s.pre_filter(pod("p", ("gpu", "claim:c")))
    assert st.code == Code.UnschedulableAndUnresolvable
    assert st.message() == "request gpu: device class gpu.example.com does not exist"


@pytest.mark.parametrize("prioritized_list, message", [
    (False, "resource claim default/c, request gpu: has subrequests, but the DRAPrioritizedList feature is disabled"),
    (True, None),
])
def test_subrequests_need_the_prioritized_list_gate(prioritized_list, message):
    c = claim("c", d.first_available("gpu", d.request("big"), d.request("small")))
    plugin = DynamicResources(tracker_with([c]), gates=FeatureGates({"DRAPrioritizedList": prioritized_list}))
    _, st = plugin.pre_filter(CycleState(), PodInfo(pod("p", ("gpu", "claim:c"))), [])
    if message is None:
        assert st is None
    else:
        assert st.code == Code.UnschedulableAndUnresolvable and st.message() == message


def test_allocated_claim_narrows_nodes_to_its_node_selector():
    s = Setup(tracker_with([allocated(claim("c"), "n2")]), [node("n1"), node("n2")])
    r, st, _ = s.pre_filter(pod("p", ("gpu", "claim:c")))
    assert st is None and r.node_names == {"n2"}
    host, _, _ = s.schedule(pod("p", ("gpu", "claim:c")))
    assert host == "n2"


def test_full_reserved_for_makes_the_claim_in_use_unless_the_group_is_reserved():
    full = [{"resource": "pods", "name": f"x{i}", "uid": f"u{i}"} for i in range(256)]
    s = Setup(tracker_with([allocated(claim("c"), "n1", reserved=full)]), [node("n1")])
    _, st, _ = s.pre_filter(pod("p", ("gpu", "claim:c")))
    assert (st.code, st.message()) == (Code.UnschedulableAndUnresolvable, "resourceclaim in use")
    group_ref = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "uid-pg"}
    s2 = Setup(tracker_with([allocated(claim("c"), "n1", reserved=full[:255] + [group_ref])]), [node("n1")])
    _, st, _ = s2.pre_filter(pod("p", ("gpu", "claim:c"), group="g"))
    assert st is None


def test_pod_without_claims_skips_the_plugin():
    s = Setup(tracker_with(), [node("n1")])
    _, st, _ = s.pre_filter(make_pod("p").obj())
    assert st.code == Code.Skip


# -- Filter and Reserve --------------------------------------------------------------------------------

def test_pod_gets_the_first_free_device_and_a_second_pod_the_next():
    t = tracker_with([claim("c1"), claim("c2")], [d.gpu_slice("n1", 2)])
    s = Setup(t, [node("n1")])
    host, st1, _ = s.schedule(pod("p1", ("gpu", "claim:c1")))
    assert host == "n1"
    data = st1.read("DynamicResources")
    assert data.claims[0].allocation["devices"]["results"][0]["device"] == "gpu-0"
    assert DeviceID(GPU, "n1", "gpu-0") in t.in_use
    _, st2, _ = s.schedule(pod("p2", ("gpu", "claim:c2")))
    assert st2.read("DynamicResources").claims[0].allocation["devices"]["results"][0]["device"] == "gpu-1"


def test_devices_reserved_but_not_written_are_not_handed_out_twice_and_unreserve_frees_them():
    t = tracker_with([claim("c1"), claim("c2")], [d.gpu_slice("n1", 1)])
    s = Setup(t, [node("n1")])
    _, state, pi = s.schedule(pod("p1", ("gpu", "claim:c1")))
    fe = s.fail(pod("p2", ("gpu", "claim:c2")))
    assert str(fe) == ("0/1 nodes are available: 1 cannot allocate all claims, 1 claim default/c2, request gpu: "
                       "not enough devices: 1 requested, 0 available (1 in use).")
    s.fw.run_reserve_plugins_unreserve(state, pi, "n1")
    assert not t.in_use and not t.in_flight
    host, _, _ = s.schedule(pod("p2", ("gpu", "claim:c2")))
    assert host == "n1"


def test_allocated_claims_in_the_informer_take_their_devices():
    t = tracker_with([allocated(claim("old"), "n1", "gpu-0"), claim("c")], [d.gpu_slice("n1", 2)])
    s = Setup(t, [node("n1")])
    _, state, _ = s.schedule(pod("p", ("gpu", "claim:c")))
    assert state.read("DynamicResources").claims[0].allocation["devices"]["results"][0]["device"] == "gpu-1"
    t.claim_deleted(allocated(claim("old"), "n1", "gpu-0"))
    assert DeviceID(GPU, "n1", "gpu-0") not in t.in_use


def test_a_node_without_slices_is_rejected_with_the_allocators_reason():
    t = tracker_with([claim("c")], [d.gpu_slice("n1", 1)])
    s = Setup(t, [node("n1"), node("n2"), node("n3")])
    # the only device is held by another pod's in-flight allocation
    assert t.hold("someone", "default/other", {"devices": {"results": [
        {"request": "gpu", "driver": GPU, "pool": "n1", "device": "gpu-0"}]}}, "holder") is None
    fe = s.fail(pod("p", ("gpu", "claim:c")))
    counts = fe.diagnosis.reason_counts(3)
    assert counts["cannot allocate all claims"] == 3
    assert counts["claim default/c, request gpu: no devices matched the selectors"] == 2
    assert counts["claim default/c, request gpu: not enough devices: 1 requested, 0 available (1 in use)"] == 1


def test_nodes_without_devices_are_answered_from_one_allocator_run():
    t = tracker_with([claim("c")], [d.gpu_slice("n9", 1)])
    s = Setup(t, [node(f"n{i}") for i in range(6)])
    before = t.allocator_cache.calls
    fe = s.fail(pod("p", ("gpu", "claim:c")))
    assert t.allocator_cache.calls - before == 1
    statuses = {id(st) for _, st in fe.diagnosis.node_to_status.items()}
    assert len(statuses) == 1


def test_a_cel_runtime_error_is_the_users_and_quotes_the_expression():
    expr = 'device.attributes["gpu.example.com"].memory > 3'
    t = tracker_with([claim("c", d.request("gpu", selectors=[expr]))], [d.gpu_slice("n1", 2), d.gpu_slice("n2", 2)])
    s = Setup(t, [node("n1"), node("n2")])
    fe = s.fail(pod("p", ("gpu", "claim:c")))
    msg = str(fe)
    assert "CEL runtime error: no such key: memory" in msg
    assert f"expression: '{expr}'" in msg
    assert all(st.code == Code.UnschedulableAndUnresolvable for _, st in fe.diagnosis.node_to_status.items())


def test_an_allocator_error_aborts_the_cycle():
    from phalanx.scheduler.framework.diagnosis import SchedulingError
    t = tracker_with([claim("c", d.request("gpu", count=40))], [d.gpu_slice("n1", 2)])
    s = Setup(t, [node("n1")])
    with pytest.raises(SchedulingError) as e:
        s.fw.schedule_pod(CycleState(), PodInfo(pod("p", ("gpu", "claim:c"))))
    assert "number of requested devices 40 exceeds the claim limit of 32" in str(e.value)


def test_a_pending_allocation_is_reused_and_pins_later_pods_to_its_node():
    t = tracker_with([claim("shared")], [d.gpu_slice("n1", 1), d.gpu_slice("n2", 1)])
    s = Setup(t, [node("n1"), node("n2")])
    host1, st1, pi1 = s.schedule(pod("p1", ("gpu", "claim:shared")))
    r, st, _ = s.pre_filter(pod("p2", ("gpu", "claim:shared")))
    assert st is None and r.node_names == {host1}
    host2, st2, pi2 = s.schedule(pod("p2", ("gpu", "claim:shared")))
    assert host2 == host1
    assert st2.read("DynamicResources").claims[0].pending is not None
    entry = t.in_flight["uid-shared"]
    assert entry.holders == {"uid-p1", "uid-p2"}
    s.fw.run_reserve_plugins_unreserve(st1, pi1, host1)
    assert "uid-shared" in t.in_flight  # p2 still holds it
    s.fw.run_reserve_plugins_unreserve(st2, pi2, host2)
    assert "uid-shared" not in t.in_flight and not t.in_use


def test_unreserve_is_idempotent():
    t = tracker_with([claim("c")], [d.gpu_slice("n1", 1)])
    s = Setup(t, [node("n1")])
    _, state, pi = s.schedule(pod("p", ("gpu", "claim:c")))
    s.fw.run_reserve_plugins_unreserve(state, pi, "n1")
    s.fw.run_reserve_plugins_unreserve(state, pi, "n1")
    assert not t.in_use and not t.reserving


# -- tracker bookkeeping ------------------------------------------------------------------------------

def test_the_scheduler_s_own_write_wins_over_an_older_informer_version():
    t = tracker_with()
    base = claim("c")
    written = allocated(base, "n1")
    written["metadata"]["resourceVersion"] = "12"
    t.assume(written)
    stale = copy.deepcopy(base)
    stale["metadata"]["resourceVersion"] = "11"
    t.claim_updated(base, stale)
    assert t.get("default", "c")["status"]["allocation"] is not None
    assert DeviceID(GPU, "n1", "gpu-0") in t.in_use
    caught_up = copy.deepcopy(written)
    caught_up["metadata"]["resourceVersion"] = "13"
    t.claim_updated(stale, caught_up)
    assert t.get("default", "c") is caught_up
    assert t.in_use[DeviceID(GPU, "n1", "gpu-0")] == 1


def test_inventory_is_rebuilt_only_after_a_slice_change():
    t = tracker_with(slices=[d.gpu_slice("n1", 1)])
    inv = t.inventory()
    assert t.inventory() is inv
    t.slice_added(d.gpu_slice("n2", 1))
    assert t.inventory() is not inv and len(t.inventory()) == 2


# -- queueing hints --------------------------------------------------------------------------------

def hint(plugin: DynamicResources, resource: str):
    return next(e.queueing_hint_fn for e in plugin.events_to_register() if e.event.resource == resource)


def test_claim_hints():
    c = claim("c")
    t = tracker_with([c])
    after_claim_change = hint(DynamicResources(t), "resource.k8s.io/ResourceClaim")
    p = pod("p", ("gpu", "claim:c"))
    assert after_claim_change(p, None, c) == QueueingHint.Queue
    other = claim("other")
    t.claim_added(other)
    assert after_claim_change(p, None, other) == QueueingHint.QueueSkip
    touched = copy.deepcopy(c)
    touched["metadata"]["annotations"] = {"x": "y"}
    assert after_claim_change(p, c, touched) == QueueingHint.QueueSkip
    # another claim got deallocated: devices were freed
    was = allocated(other, "n1")
    assert after_claim_change(p, was, other) == QueueingHint.Queue
    # the pod's claim is still missing: nothing can help yet
    assert after_claim_change(pod("q", ("gpu", "claim:nope")), None, c) == QueueingHint.QueueSkip


def test_pod_status_hint_requires_the_pods_own_update_with_every_claim():
    t = tracker_with([claim("p-gpu-x", owner={"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p",
                                              "controller": True})])
    after_pod_change = hint(DynamicResources(t), "Pod")
    before = pod("p", ("gpu", "template:t"))
    after = pod("p", ("gpu", "template:t"), statuses={"gpu": "p-gpu-x"})
    assert after_pod_change(before, before, after) == QueueingHint.Queue
    other = pod("q", ("gpu", "template:t"), statuses={"gpu": "p-gpu-x"})
    other["metadata"]["uid"] = "uid-q"
    assert after_pod_change(before, other, other) == QueueingHint.QueueSkip


# -- PreBind against an API server ---------------------------------------------------------------

async def _api_setup(env, claims, slices=(d.gpu_slice("n1", 2),), groups=None):
    env.bootstrap()
    created = [await env.client.create(c) for c in claims]
    t = tracker_with(created, slices)
    return Setup(t, [node("n1"), node("n2")], groups=groups, client=env.client), created


def _strip(c: dict) -> dict:
    c = copy.deepcopy(c)
    for k in ("uid", "resourceVersion"):
        c["metadata"].pop(k, None)
    return c


async def _get(env, name):
    return await env.client.get("resource.k8s.io/v1", "ResourceClaim", "default", name)


async def test_pre_bind_writes_finalizer_allocation_and_pod_reservation(env):
    s, (c,) = await _api_setup(env, [_strip(claim("c"))])
    p = pod("p", ("gpu", "claim:c"))
    host, state, pi = s.schedule(p)
    st = await s.plugin.pre_bind(state, pi, host)
    assert st is None
    got = await _get(env, "c")
    assert "resource.kubernetes.io/delete-protection" in got["metadata"]["finalizers"]
    alloc = got["status"]["allocation"]
    assert alloc["devices"]["results"][0]["device"] == "gpu-0"
    assert alloc["allocationTimestamp"]
    assert alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
    assert got["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-p"}]
    assert not s.tracker.in_flight and DeviceID(GPU, "n1", "gpu-0") in s.tracker.in_use
    assert s.tracker.get("default", "c")["status"]["allocation"] is not None  # assumed until the informer


async def test_pod_group_claim_gets_one_pod_group_reservation_for_many_pods(env):
    pg = podgroup("g", ("shared-gpu", "gpu-claim-template"))
    owner = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "name": "g", "uid": "uid-pg",
             "controller": True}
    gc = _strip(claim("g-shared-gpu-abcde"))
    gc["metadata"]["ownerReferences"] = [owner]
    s, _ = await _api_setup(env, [gc], slices=(d.gpu_slice("n1", 1), d.gpu_slice("n2", 1)), groups={"g": pg})
    pods = [pod(f"w{i}", ("shared-gpu", "template:gpu-claim-template"), group="g",
                statuses={"shared-gpu": "g-shared-gpu-abcde"}) for i in range(4)]
    for i, p in enumerate(pods):
        p["metadata"]["uid"] = f"uid-w{i}"
    placed = [s.schedule(p) for p in pods]  # as one gang cycle: all Reserve before any PreBind
    assert len({h for h, _, _ in placed}) == 1
    assert t_holders(s) == {f"uid-w{i}" for i in range(4)}
    for host, state, pi in placed:
        assert await s.plugin.pre_bind(state, pi, host) is None
    got = await _get(env, "g-shared-gpu-abcde")
    assert got["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g",
                                             "uid": "uid-pg"}]
    assert len(got["status"]["allocation"]["devices"]["results"]) == 1
    assert not s.tracker.in_flight and not s.tracker.reserving


def t_holders(s: Setup) -> set:
    return set().union(*(e.holders for e in s.tracker.in_flight.values()))


async def test_pre_bind_retries_after_a_conflict(env):
    s, (c,) = await _api_setup(env, [_strip(claim("c"))])
    host, state, pi = s.schedule(pod("p", ("gpu", "claim:c")))
    # someone changes the claim after the informer saw it: our cached copy is stale
    fresh = await _get(env, "c")
    fresh["metadata"]["annotations"] = {"touched": "yes"}
    await env.client.update(fresh)
    assert await s.plugin.pre_bind(state, pi, host) is None
    got = await _get(env, "c")
    assert got["metadata"]["annotations"] == {"touched": "yes"}
    assert got["status"]["reservedFor"][0]["uid"] == "uid-p"


async def test_a_claim_allocated_elsewhere_meanwhile_fails_the_binding(env):
    s, (c,) = await _api_setup(env, [_strip(claim("c"))])
    host, state, pi = s.schedule(pod("p", ("gpu", "claim:c")))
    fresh = await _get(env, "c")
    fresh["status"] = allocated(fresh, "n1", "gpu-1")["status"]
    await env.client.update_status(fresh)
    st = await s.plugin.pre_bind(state, pi, host)
    assert st.code == Code.Error
    assert st.message() == "claim default/c got allocated elsewhere in the meantime"
    got = await _get(env, "c")
    assert got["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    assert not got["status"].get("reservedFor")


async def test_shared_claim_gets_one_allocation_and_a_reservation_per_pod(env):
    s, _ = await _api_setup(env, [_strip(claim("shared"))])
    a = s.schedule(pod("a", ("gpu", "claim:shared")))
    b = s.schedule(pod("b", ("gpu", "claim:shared")))
    # the second pod binds first: it writes the pending allocation itself
    assert await s.plugin.pre_bind(b[1], b[2], b[0]) is None
    assert await s.plugin.pre_bind(a[1], a[2], a[0]) is None
    got = await _get(env, "shared")
    assert [r["name"] for r in got["status"]["reservedFor"]] == ["b", "a"]
    assert len(got["status"]["allocation"]["devices"]["results"]) == 1


async def test_unreserve_after_pre_bind_takes_the_pod_out_of_reserved_for(env):
    s, _ = await _api_setup(env, [_strip(claim("c"))])
    host, state, pi = s.schedule(pod("p", ("gpu", "claim:c")))
    assert await s.plugin.pre_bind(state, pi, host) is None
    s.plugin.unreserve(state, pi, host)
    await s.plugin.drain()
    got = await _get(env, "c")
    assert not got["status"].get("reservedFor")
    assert got["status"]["allocation"] is not None  # the claim controller deallocates it later


async def test_post_filter_deallocates_an_unreserved_claim_that_fits_nowhere(env):
    env.bootstrap()
    c = await env.client.create(_strip(claim("c")))
    c = (await env.client.update_status(allocated(c, "gone")))
    t = tracker_with([c], [d.gpu_slice("n1", 1)])
    s = Setup(t, [node("n1")], client=env.client)
    state = CycleState()
    pi = PodInfo(pod("p", ("gpu", "claim:c")))
    with pytest.raises(FitError) as e:
        s.fw.schedule_pod(state, pi)
    result, st = s.fw.run_post_filter_plugins(state, pi, e.value.diagnosis.node_to_status)
    assert "deallocation of ResourceClaim requested" in st.message()
    await s.plugin.drain()
    assert (await _get(env, "c"))["status"].get("allocation") is None


async def test_post_filter_keeps_pod_group_reservations(env):
    env.bootstrap()
    c = await env.client.create(_strip(claim("c")))
    ref = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "uid-pg"}
    c = await env.client.update_status(allocated(c, "gone", reserved=[ref]))
    s = Setup(tracker_with([c], [d.gpu_slice("n1", 1)]), [node("n1")], client=env.client)
    state = CycleState()
    pi = PodInfo(pod("p", ("gpu", "claim:c")))
    with pytest.raises(FitError) as e:
        s.fw.schedule_pod(state, pi)
    _, st = s.fw.run_post_filter_plugins(state, pi, e.value.diagnosis.node_to_status)
    assert "still not schedulable" in st.message()
    await s.plugin.drain()
    assert (await _get(env, "c"))["status"]["allocation"] is not None


async def test_a_claim_deleted_meanwhile_fails_the_binding(env):
    s, _ = await _api_setup(env, [_strip(claim("c"))])
    host, state, pi = s.schedule(pod("p", ("gpu", "claim:c")))
    await env.client.delete("resource.k8s.io/v1", "ResourceClaim", "default", "c")
    st = await s.plugin.pre_bind(state, pi, host)
    assert st.code == Code.Error
    assert st.message().startswith("add finalizer to claim default/c: ")
    s.plugin.unreserve(state, pi, host)
    assert not s.tracker.in_flight and not s.tracker.in_use


def test_assigned_pod_delete_hint_only_for_pods_that_used_claims():
    after_delete = hint(DynamicResources(tracker_with()), "AssignedPod")
    waiting = pod("w", ("gpu", "claim:c"))
    assert after_delete(waiting, pod("gone", ("gpu", "claim:x")), None) == QueueingHint.Queue
    assert after_delete(waiting, make_pod("plain").obj(), None) == QueueingHint.QueueSkip
