"""The structured allocator: what a pod's claims get on a node, and why not when they don't."""

from __future__ import annotations

import itertools

import pytest

from phalanx.machinery.featuregates import FeatureGates
from phalanx.dra import (AllocationError, AllocatorCache, SelectorError, allocate, consumed_capacity, device_id,
                         devices_in_use)
from phalanx.dra.pools import Inventory
from phalanx.dra.testing import (DRIVER, allocated, claim, dev, device_class, device_slice, first_available,
                                 gpu_slice, labels_selector, node, request, results_of)

CLASSES = {DRIVER: device_class()}
N1 = node("n1")


def used(*names: str, pool: str = "n1", driver: str = DRIVER) -> set:
    return {device_id(driver, pool, n) for n in names}


def run(claims, slices, *, classes=CLASSES, in_use=frozenset(), at=N1, gates=None, cache=None, **kwargs):
    return allocate(claims if isinstance(claims, list) else [claims], at, slices, classes, in_use,
                    gates=gates, cache=cache, **kwargs)


# -- the basics ----------------------------------------------------------------------------------------

def test_simple_claim_on_an_empty_node_gets_gpu_0_with_upstreams_result_shape():
    outcome = run(claim("c", request("gpu")), [gpu_slice("n1", 4)])
    assert outcome.success and outcome.message == ""
    assert outcome.results == [{
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
    }]


def test_devices_in_use_are_skipped():
    outcome = run(claim("c", request("gpu")), [gpu_slice("n1", 4)], in_use=used("gpu-0", "gpu-1"))
    assert results_of(outcome) == [("gpu", "gpu-2")]


def test_count_two():
    outcome = run(claim("c", request("gpu", count=2)), [gpu_slice("n1", 4)], in_use=used("gpu-1"))
    assert results_of(outcome) == [("gpu", "gpu-0"), ("gpu", "gpu-2")]


def test_two_requests_get_distinct_devices():
    outcome = run(claim("c", request("a"), request("b")), [gpu_slice("n1", 2)])
    assert results_of(outcome) == [("a", "gpu-0"), ("b", "gpu-1")]


def test_slices_of_other_nodes_are_not_reachable():
    outcome = run(claim("c", request("gpu")), [gpu_slice("n2", 4)])
    assert not outcome.success and outcome.message == "cannot allocate all claims"
    assert outcome.reasons == ["claim default/c, request gpu: no devices matched the selectors"]


def test_not_enough_devices_explains_what_is_missing():
    outcome = run(claim("c", request("gpu", count=8)), [gpu_slice("n1", 8)], in_use=used(*[f"gpu-{i}" for i in range(5)]))
    assert outcome.results is None
    assert outcome.reasons == ["claim default/c, request gpu: not enough devices: 8 requested, 3 available (5 in use)"]


def test_search_order_is_pools_by_driver_then_name_then_slices_by_name():
    slices = [
        device_slice("z-slice", [dev("dev-z")], driver="b.example.com", pool="p", node_name="n1"),
        device_slice("b-slice", [dev("dev-b1")], pool="q", node_name="n1", slice_count=2),
        device_slice("a-slice", [dev("dev-a1"), dev("dev-a0")], pool="q", node_name="n1", slice_count=2),
        device_slice("only", [dev("dev-p")], pool="p", node_name="n1"),
    ]
    classes = {"any": device_class("any", "true")}
    outcome = run(claim("c", request("all", "any", count=5)), slices, classes=classes)
    # b.example.com/p, then gpu.example.com/p, then gpu.example.com/q (slice a-slice before b-slice).
    assert [d for _, d in results_of(outcome)] == ["dev-z", "dev-p", "dev-a1", "dev-a0", "dev-b1"]


# -- allocationMode All and pool completeness ------------------------------------------------------------

def test_all_mode_takes_every_matching_device():
    outcome = run(claim("c", request("gpu", all=True)), [gpu_slice("n1", 3)])
    assert results_of(outcome) == [("gpu", "gpu-0"), ("gpu", "gpu-1"), ("gpu", "gpu-2")]


def test_all_mode_fails_when_one_matching_device_is_in_use():
    outcome = run(claim("c", request("gpu", all=True)), [gpu_slice("n1", 3)], in_use=used("gpu-1"))
    assert outcome.reasons == ["claim default/c, request gpu: not all matching devices are available: "
                               "3 requested, 2 available (1 in use)"]


def test_all_mode_with_an_incomplete_pool_is_an_error():
    incomplete = gpu_slice("n1", 2, slice_count=2)  # the pool announces two slices, only one exists
    with pytest.raises(AllocationError) as err:
        run(claim("c", request("gpu", all=True)), [incomplete])
    assert str(err.value) == ("claim default/c, request gpu: asks for all devices, but resource pool "
                              "gpu.example.com/n1 is currently being updated")


def test_incomplete_pools_are_skipped_for_exact_counts():
    slices = [device_slice("a", [dev("half")], pool="updating", node_name="n1", slice_count=2),
              device_slice("b", [dev("whole")], pool="ready", node_name="n1")]
    assert results_of(run(claim("c", request("gpu")), slices)) == [("gpu", "whole")]
    outcome = run(claim("c", request("gpu")), slices[:1])
    assert not outcome.success
    assert outcome.reasons[-1] == "resource pools currently being updated were skipped: gpu.example.com/updating"


def test_only_the_newest_pool_generation_counts():
    old = device_slice("old", [dev("gpu-old")], pool="n1", node_name="n1", generation=1)
    new = device_slice("new", [dev("gpu-new")], pool="n1", node_name="n1", generation=2)
    assert results_of(run(claim("c", request("gpu", all=True)), [old, new])) == [("gpu", "gpu-new")]


def test_a_pool_repeating_a_device_name_is_invalid():
    slices = [device_slice("a", [dev("gpu-0")], pool="n1", node_name="n1", slice_count=2),
              device_slice("b", [dev("gpu-0")], pool="n1", node_name="n1", slice_count=2)]
    outcome = run(claim("c", request("gpu")), slices)
    assert outcome.reasons[0] == ("invalid resource pools were encountered (resource pool gpu.example.com/n1: "
                                  "duplicate device name gpu-0)")
    with pytest.raises(AllocationError, match="resource pool gpu.example.com/n1 is currently invalid"):
        run(claim("c", request("gpu", all=True)), slices)


# -- firstAvailable ---------------------------------------------------------------------------------------

def test_first_available_takes_the_first_alternative_that_fits():
    c = claim("c", first_available("gpu", request("big", count=2), request("small")),
              config=[{"requests": ["gpu/small"], "opaque": {"driver": DRIVER, "parameters": {"small": True}}},
                      {"requests": ["gpu/big"], "opaque": {"driver": DRIVER, "parameters": {"big": True}}}])
    assert results_of(run(c, [gpu_slice("n1", 2)])) == [("gpu/big", "gpu-0"), ("gpu/big", "gpu-1")]
    outcome = run(c, [gpu_slice("n1", 2)], in_use=used("gpu-0"))
    assert results_of(outcome) == [("gpu/small", "gpu-1")]
    assert outcome.results[0]["devices"]["config"] == [
        {"source": "FromClaim", "requests": ["gpu/small"], "opaque": {"driver": DRIVER, "parameters": {"small": True}}}]


def test_first_available_explains_every_alternative():
    c = claim("c", first_available("gpu", request("big", count=4), request("tagged", selectors=["false"])))
    outcome = run(c, [gpu_slice("n1", 2)])
    assert outcome.reasons == ["claim default/c, request gpu: none of the 2 alternatives can be allocated "
                               "(gpu/big: not enough devices: 4 requested, 2 available; "
                               "gpu/tagged: no devices matched the selectors)"]


def test_first_available_needs_its_gate():
    c = claim("c", first_available("gpu", request("one")))
    with pytest.raises(AllocationError, match="claim default/c, request gpu: has subrequests, but the "
                                              "DRAPrioritizedList feature is disabled"):
        run(c, [gpu_slice("n1", 1)], gates=FeatureGates({"DRAPrioritizedList": False}))


# -- constraints -------------------------------------------------------------------------------------------

def numa_slice() -> dict:
    return device_slice("s", [dev("gpu-0", numa=0, model="A"), dev("gpu-1", numa=1, model="A"),
                              dev("gpu-2", numa=1, model="B"), dev("gpu-3", model="B")], pool="n1", node_name="n1")


def test_match_attribute_across_two_requests_backtracks_to_an_equal_pair():
    c = claim("c", request("a"), request("b", selectors=["device.attributes['gpu.example.com'].model == 'B'"]),
              constraints=[{"requests": ["a", "b"], "matchAttribute": "gpu.example.com/numa"}])
    # a=gpu-0 (numa 0) leaves only gpu-2 (numa 1) for b: the search must go back and give a gpu-1.
    assert results_of(run(c, [numa_slice()])) == [("a", "gpu-1"), ("b", "gpu-2")]


def test_a_device_without_the_attribute_fails_the_constraint():
    c = claim("c", request("b", count=2, selectors=["device.attributes['gpu.example.com'].model == 'B'"]),
              constraints=[{"matchAttribute": "gpu.example.com/numa"}])  # no list: every request
    outcome = run(c, [numa_slice()])
    assert not outcome.success
    assert outcome.reasons == ["claim default/c: no set of free devices satisfies the constraints "
                               "(matchAttribute gpu.example.com/numa)"]


def test_constraint_limited_to_other_requests_does_not_apply():
    c = claim("c", request("a", count=2), request("b"),
              constraints=[{"requests": ["b"], "matchAttribute": "gpu.example.com/numa"}])
    assert results_of(run(c, [numa_slice()])) == [("a", "gpu-0"), ("a", "gpu-1"), ("b", "gpu-2")]


# -- several claims --------------------------------------------------------------------------------------------

def test_two_claims_of_one_pod_compete_for_the_node():
    first, second = claim("first", request("gpu", count=2)), claim("second", request("gpu", count=2))
    outcome = run([first, second], [gpu_slice("n1", 4)])
    assert results_of(outcome, 0) == [("gpu", "gpu-0"), ("gpu", "gpu-1")]
    assert results_of(outcome, 1) == [("gpu", "gpu-2"), ("gpu", "gpu-3")]
    outcome = run([first, second], [gpu_slice("n1", 3)])
    assert not outcome.success
    assert outcome.reasons == ["each request fits on its own, but not all of them together"]


def test_backtracking_across_claims():
    anything = claim("anything", request("gpu"))
    picky = claim("picky", request("gpu", selectors=["device.attributes['gpu.example.com'].index == 0"]))
    outcome = run([anything, picky], [gpu_slice("n1", 2)])
    assert results_of(outcome, 0) == [("gpu", "gpu-1")] and results_of(outcome, 1) == [("gpu", "gpu-0")]


# -- admin access ----------------------------------------------------------------------------------------------

def test_admin_access_uses_devices_in_use_and_is_marked():
    outcome = run(claim("c", request("gpu", all=True, admin=True)), [gpu_slice("n1", 2)], in_use=used("gpu-0", "gpu-1"))
    assert outcome.results[0]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": f"gpu-{i}", "adminAccess": True} for i in (0, 1)]


def test_admin_access_never_takes_one_device_twice_in_a_claim():
    outcome = run(claim("c", request("gpu", count=2, admin=True)), [gpu_slice("n1", 1)])
    assert not outcome.success


def test_admin_access_needs_its_gate():
    gates = {"DRAAdminAccess": False}
    with pytest.raises(AllocationError, match="claim default/c, request gpu: admin access is requested, but the "
                                              "feature is disabled"):
        run(claim("c", request("gpu", admin=True)), [gpu_slice("n1", 1)], gates=gates)


def test_devices_in_use_ignores_admin_access_results():
    claims = [allocated(claim("a", request("gpu")), [(DRIVER, "n1", "gpu-0")]),
              allocated(claim("b", request("gpu")), [(DRIVER, "n1", "gpu-1")], admin=True),
              claim("pending", request("gpu"))]
    assert devices_in_use(claims) == used("gpu-0")


# -- taints ------------------------------------------------------------------------------------------------------

def tainted_slice(effect: str = "NoSchedule") -> dict:
    return device_slice("s", [dev("gpu-0", taints=[{"key": "broken", "value": "fan", "effect": effect}]), dev("gpu-1")],
                        pool="n1", node_name="n1")


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_tainted_devices_are_skipped(effect):
    assert results_of(run(claim("c", request("gpu")), [tainted_slice(effect)])) == [("gpu", "gpu-1")]


def test_other_taint_effects_do_not_block():
    assert results_of(run(claim("c", request("gpu")), [tainted_slice("None")])) == [("gpu", "gpu-0")]


@pytest.mark.parametrize("toleration, tolerated", [
    ({"key": "broken", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),
    ({"key": "broken", "operator": "Equal", "value": "fan"}, True),
    ({"key": "broken", "value": "fan", "effect": "NoSchedule"}, True),
    ({"key": "broken", "value": "pump"}, False),
    ({"key": "broken", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, False),
])
def test_tolerations(toleration, tolerated):
    outcome = run(claim("c", request("gpu", tolerations=[toleration])), [tainted_slice()])
    assert results_of(outcome) == [("gpu", "gpu-0" if tolerated else "gpu-1")]
    assert outcome.results[0]["devices"]["results"][0]["tolerations"] == [toleration]


def test_taints_are_ignored_without_the_gate():
    outcome = run(claim("c", request("gpu", tolerations=[{"operator": "Exists"}])), [tainted_slice()],
                  gates={"DRADeviceTaints": False})
    assert outcome.results[0]["devices"]["results"] == [{"request": "gpu", "driver": DRIVER, "pool": "n1",
                                                         "device": "gpu-0"}]


def test_all_tainted_explained():
    outcome = run(claim("c", request("gpu", count=2)), [tainted_slice()])
    assert outcome.reasons == ["claim default/c, request gpu: not enough devices: 2 requested, 1 available (1 tainted)"]


# -- partitionable devices (shared counters) ------------------------------------------------------------------------

def partitioned_node() -> list[dict]:
    """dra-example-driver with partitions: a counters slice and a devices slice in one pool."""
    def consumes(memory: str) -> list:
        return [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": memory}}}]
    counters = device_slice("0-counters", [], pool="n1", node_name="n1", slice_count=2,
                            shared_counters=[{"name": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}])
    devices = device_slice("1-devices", [dev("gpu-0-full", consumes=consumes("40Gi")),
                                         dev("gpu-0-part-0", consumes=consumes("20Gi")),
                                         dev("gpu-0-part-1", consumes=consumes("20Gi"))],
                           pool="n1", node_name="n1", slice_count=2)
    return [counters, devices]


def test_a_full_device_uses_all_counters_of_its_partitions():
    assert results_of(run(claim("c", request("gpu")), partitioned_node())) == [("gpu", "gpu-0-full")]
    outcome = run(claim("c", request("gpu")), partitioned_node(), in_use=used("gpu-0-full"))
    assert not outcome.success
    assert outcome.reasons == ["claim default/c, request gpu: not enough devices: 1 requested, 0 available "
                               "(1 in use, 2 short of capacity or shared counters)"]


def test_a_used_partition_excludes_the_full_device():
    outcome = run(claim("c", request("gpu")), partitioned_node(), in_use=used("gpu-0-part-0"))
    assert results_of(outcome) == [("gpu", "gpu-0-part-1")]


def test_two_partitions_fit_where_full_plus_partition_does_not():
    # gpu-0-full comes first but leaves no counters for a second device: back off to the partitions.
    outcome = run(claim("c", request("gpu", count=2)), partitioned_node())
    assert results_of(outcome) == [("gpu", "gpu-0-part-0"), ("gpu", "gpu-0-part-1")]


def test_counter_consuming_devices_need_the_partitionable_gate():
    outcome = run(claim("c", request("gpu")), partitioned_node(), gates={"DRAPartitionableDevices": False})
    assert not outcome.success


# -- node selection ------------------------------------------------------------------------------------------------

def test_per_device_node_selection():
    devices = [dev("local-1"), dev("local-2"), dev("everywhere"), dev("zone-a")]
    devices[0]["nodeName"] = "n1"
    devices[1]["nodeName"] = "n2"
    devices[2]["allNodes"] = True
    devices[3]["nodeSelector"] = labels_selector(zone="a")
    s = device_slice("s", devices, pool="fabric", per_device=True)
    on_n2 = run(claim("c", request("gpu", all=True)), [s], at=node("n2", zone="b"))
    assert results_of(on_n2) == [("gpu", "local-2"), ("gpu", "everywhere")]
    assert on_n2.results[0]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    everywhere = run(claim("c", request("gpu", selectors=["device.attributes['gpu.example.com'].size() == 0"])),
                     [device_slice("s", [dev("zone-a"), dev("everywhere")], pool="fabric", per_device=True)],
                     at=node("n3", zone="a"))
    assert not everywhere.success  # no device names a node: none is offered
    in_zone = run(claim("c", request("gpu", count=2)), [s], at=node("n9", zone="a"))
    assert results_of(in_zone) == [("gpu", "everywhere"), ("gpu", "zone-a")]
    assert in_zone.results[0]["nodeSelector"] == labels_selector(zone="a")
    assert not run(claim("c", request("gpu", count=2)), [s], at=node("n9", zone="a"),
                   gates={"DRAPartitionableDevices": False}).success


def test_network_attached_pools_leave_the_node_open():
    everywhere = device_slice("net", [dev("nic-0")], pool="net", all_nodes=True)
    outcome = run(claim("c", request("nic")), [everywhere])
    assert outcome.results[0] == {"devices": {"results": [
        {"request": "nic", "driver": DRIVER, "pool": "net", "device": "nic-0"}]}}
    rack = device_slice("rack", [dev("nic-1")], pool="rack", node_selector=labels_selector(rack="r1"))
    outcome = run(claim("c", request("nic")), [rack], at=node("n1", rack="r1"))
    assert outcome.results[0]["nodeSelector"] == labels_selector(rack="r1")
    assert not run(claim("c", request("nic")), [rack], at=node("n2", rack="r2")).success


def test_node_local_device_pins_the_allocation_even_with_network_devices():
    slices = [device_slice("net", [dev("nic-0")], pool="net", all_nodes=True), gpu_slice("n1", 1)]
    outcome = run(claim("c", request("nic"), request("gpu")), slices)
    assert outcome.results[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]


# -- selectors ---------------------------------------------------------------------------------------------------

def test_class_selector_and_request_selectors_must_all_match():
    slices = [device_slice("s", [dev("other", model="LATEST-GPU-MODEL")], driver="other.example.com", pool="n1",
                           node_name="n1"),
              gpu_slice("n1", 3)]
    c = claim("c", request("gpu", selectors=[
        "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'",
        "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.attributes['gpu.example.com'].index > 0"]))
    assert results_of(run(c, slices)) == [("gpu", "gpu-1")]
    tight = claim("c", request("gpu", selectors=["device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('80Gi'))"]))
    assert run(tight, slices).reasons == ["claim default/c, request gpu: no devices matched the selectors"]


def test_missing_device_class_is_an_error():
    with pytest.raises(AllocationError) as err:
        run(claim("c", request("gpu", "nope")), [gpu_slice("n1", 1)])
    assert str(err.value) == ('claim default/c, request gpu: could not retrieve device class nope: '
                              'deviceclass.resource.k8s.io "nope" not found')


def test_class_selector_compile_error_is_reported_with_the_expression():
    classes = {DRIVER: device_class(DRIVER, "device.driver ==")}
    with pytest.raises(SelectorError) as err:
        run(claim("c", request("gpu")), [gpu_slice("n1", 1)], classes=classes)
    assert str(err.value).startswith("class gpu.example.com: selector #0: CEL compile error: compilation failed: "
                                     "ERROR: <input>:1:17: Syntax error")
    assert err.value.expression == "device.driver =="
    assert "expression: 'device.driver =='" in err.value.explanation


def test_claim_selector_runtime_error_names_the_device_and_hints():
    c = claim("c", request("gpu", selectors=["device.attributes['gpu.example.com'].sharing == 'x'"]))
    with pytest.raises(SelectorError) as err:
        run(c, [gpu_slice("n1", 2)], in_use=used("gpu-0"))
    assert str(err.value) == ("claim default/c: selector #0 on device gpu.example.com/n1/gpu-1: CEL runtime error: "
                              "no such key: sharing. Consider using CEL optional chaining (?), has() macro, or "
                              "orValue() for optional fields")
    assert err.value.expression == "device.attributes['gpu.example.com'].sharing == 'x'"


def test_selector_errors_only_surface_for_devices_the_search_reaches():
    c = claim("c", request("gpu", selectors=["device.attributes['gpu.example.com'].sharing == 'x'"]))
    outcome = run(c, [gpu_slice("n1", 1)], in_use=used("gpu-0"))
    assert not outcome.success


def test_too_many_devices_for_one_claim():
    with pytest.raises(AllocationError, match="claim default/c: number of requested devices 33 exceeds the claim "
                                              "limit of 32"):
        run(claim("c", request("a", count=30), request("b", count=3)), [gpu_slice("n1", 40)])


# -- configuration ---------------------------------------------------------------------------------------------------

def test_config_from_class_once_per_class_then_from_claim():
    classes = {DRIVER: device_class(DRIVER, config=[{"driver": DRIVER, "parameters": {"kind": "GpuConfig"}}]),
               "plain": device_class("plain", "true")}
    c = claim("c", request("a"), request("b"), request("c", "plain"),
              config=[{"requests": ["b"], "opaque": {"driver": DRIVER, "parameters": {"sharing": "TimeSlicing"}}},
                      {"requests": ["zzz"], "opaque": {"driver": DRIVER, "parameters": {"unused": True}}},
                      {"opaque": {"driver": DRIVER, "parameters": {"everyone": True}}}])
    config = run(c, [gpu_slice("n1", 3)], classes=classes).results[0]["devices"]["config"]
    assert config == [
        {"source": "FromClass", "requests": ["a", "b"], "opaque": {"driver": DRIVER, "parameters": {"kind": "GpuConfig"}}},
        {"source": "FromClaim", "requests": ["b"], "opaque": {"driver": DRIVER, "parameters": {"sharing": "TimeSlicing"}}},
        {"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": {"everyone": True}}},
    ]


# -- consumable capacity (simplified) -----------------------------------------------------------------------------------

def shared_slice() -> dict:
    d = dev("gpu-0", capacity={"memory": "40Gi"})
    d["allowMultipleAllocations"] = True
    return device_slice("s", [d], pool="n1", node_name="n1")


def test_shared_device_gives_capacity_to_several_claims():
    ids = itertools.count()
    cache = AllocatorCache(new_share_id=lambda: f"share-{next(ids)}")
    c = claim("c", request("gpu", capacity={"memory": "16Gi"}))
    first = run(c, [shared_slice()], cache=cache)
    assert first.results[0]["devices"]["results"] == [{"request": "gpu", "driver": DRIVER, "pool": "n1",
                                                      "device": "gpu-0", "shareID": "share-0",
                                                      "consumedCapacity": {"memory": "16Gi"}}]
    done = [{**c, "status": {"allocation": first.results[0]}}]
    assert devices_in_use(done) == set()
    second = run(c, [shared_slice()], cache=cache, consumed_capacity=consumed_capacity(done))
    assert second.results[0]["devices"]["results"][0]["shareID"] == "share-1"
    done.append({**c, "status": {"allocation": second.results[0]}})
    third = run(c, [shared_slice()], cache=cache, consumed_capacity=consumed_capacity(done))
    assert not third.success  # 16 + 16 + 16 > 40


def test_shared_device_without_request_takes_the_whole_capacity():
    outcome = run(claim("c", request("gpu", count=2)), [shared_slice()])
    assert not outcome.success
    assert results_of(run(claim("c", request("gpu")), [shared_slice()])) == [("gpu", "gpu-0")]


# -- caching ---------------------------------------------------------------------------------------------------------

def test_cache_follows_slice_and_class_changes():
    cache = AllocatorCache()
    slices = [gpu_slice("n1", 1)]
    c = claim("c", request("gpu"))
    assert results_of(run(c, slices, cache=cache)) == [("gpu", "gpu-0")]
    grown = [gpu_slice("n1", 2)]
    assert results_of(run(c, grown, cache=cache, in_use=used("gpu-0"))) == [("gpu", "gpu-1")]
    narrowed = {DRIVER: device_class(DRIVER, "device.attributes['gpu.example.com'].index == 1")}
    assert results_of(run(c, grown, cache=cache, classes=narrowed)) == [("gpu", "gpu-1")]
    assert results_of(run(c, grown, cache=cache)) == [("gpu", "gpu-0")]


def test_an_inventory_can_be_passed_instead_of_slices():
    inventory = Inventory([gpu_slice("n1", 2), gpu_slice("n2", 2)])
    cache = AllocatorCache()
    outcome = run(claim("c", request("gpu")), inventory, at=node("n2"), cache=cache)
    assert outcome.results[0]["devices"]["results"][0]["pool"] == "n2"


def test_same_claim_on_many_nodes_reuses_its_preparation():
    cache = AllocatorCache()
    c = claim("c", request("gpu"))
    slices = [gpu_slice(f"n{i}", 2) for i in range(5)]
    pools = [run(c, slices, at=node(f"n{i}"), cache=cache).results[0]["devices"]["results"][0]["pool"]
             for i in range(5)]
    assert pools == [f"n{i}" for i in range(5)]
    assert len(cache.claim_plans) == 1 and cache.selectors.compiles == 1


def test_node_relabeling_is_seen_through_the_cache():
    cache = AllocatorCache()
    rack = [device_slice("rack", [dev("nic-1")], pool="rack", node_selector=labels_selector(rack="r1"))]
    assert not run(claim("c", request("nic")), rack, at=node("n1", rack="r0"), cache=cache).success
    assert run(claim("c", request("nic")), rack, at=node("n1", rack="r1"), cache=cache).success
