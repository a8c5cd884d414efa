"""The allocator's fast paths give the answers a fresh search gives: DevicesInUse bookkeeping, answers
remembered per node (and shared by nodes that reach the same devices), results spelled out per claim."""

from __future__ import annotations

import itertools
import random

from phalanx.dra import AllocatorCache, allocate, device_id
from phalanx.dra.allocator import ClaimsAllocator
from phalanx.dra.devices import DevicesInUse
from phalanx.dra.pools import Inventory
from phalanx.dra.testing import (DRIVER, claim, dev, device_class, device_slice, first_available, gpu_slice,
                                 labels_selector, node, request, results_of)

CLASSES = {DRIVER: device_class(), "big": device_class("big", "device.attributes['gpu.example.com'].index >= 2")}


def gpu(pool: str, name: str):
    return device_id(DRIVER, pool, name)


# -- DevicesInUse ----------------------------------------------------------------------------------------

def test_devices_in_use_counts_holders_and_versions_pools_on_busy_free_transitions():
    usage = DevicesInUse()
    usage.hold("a", [gpu("n1", "gpu-0")])
    v1 = usage.pool_version((DRIVER, "n1"))
    usage.hold("b", [gpu("n1", "gpu-0")])  # already busy: the pool's devices did not change
    assert usage[gpu("n1", "gpu-0")] == 2 and usage.pool_version((DRIVER, "n1")) == v1
    usage.drop("a")
    assert gpu("n1", "gpu-0") in usage and usage.pool_version((DRIVER, "n1")) == v1
    usage.drop("b")
    assert gpu("n1", "gpu-0") not in usage and not usage
    assert usage.pool_version((DRIVER, "n1")) > v1
    assert usage.pool_version((DRIVER, "n2")) == 0


def test_devices_in_use_replaces_what_a_holder_held_and_sums_shared_capacity():
    from fractions import Fraction
    usage = DevicesInUse()
    usage.hold("a", [gpu("n1", "gpu-0")])
    usage.hold("a", [gpu("n1", "gpu-1")])
    assert list(usage) == [gpu("n1", "gpu-1")]
    shared = gpu("n2", "nic")
    usage.hold("x", [], {shared: {"bw": Fraction(10)}})
    usage.hold("y", [], {shared: {"bw": Fraction(5)}})
    before = usage.pool_version((DRIVER, "n2"))
    assert usage.consumed() == {shared: {"bw": Fraction(15)}}
    usage.drop("x")
    assert usage.consumed() == {shared: {"bw": Fraction(5)}}
    assert usage.pool_version((DRIVER, "n2")) > before


# -- remembered answers -------------------------------------------------------------------------------------

def test_a_claim_of_the_same_shape_takes_the_remembered_answer_with_its_own_name():
    cache = AllocatorCache()
    inventory = Inventory([gpu_slice("n1", 4)])
    usage = DevicesInUse()
    usage.hold("other", [gpu("n1", "gpu-0")])
    first = ClaimsAllocator([claim("a", request("gpu"))], CLASSES, cache=cache)
    assert results_of(first.allocate(node("n1"), inventory, usage)) == [("gpu", "gpu-1")]
    steps = cache.search_steps
    second = ClaimsAllocator([claim("b", request("gpu"), config=[{"opaque": {"driver": DRIVER, "parameters": {}}}])],
                             CLASSES, cache=cache)
    outcome = second.allocate(node("n1"), inventory, usage)
    assert cache.search_steps == steps  # no search
    assert results_of(outcome) == [("gpu", "gpu-1")]
    assert outcome.results[0]["devices"]["config"] == [
        {"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": {}}}]


def test_a_different_shape_is_searched_again():
    cache = AllocatorCache()
    inventory = Inventory([gpu_slice("n1", 4)])
    usage = DevicesInUse()
    ClaimsAllocator([claim("a", request("gpu"))], CLASSES, cache=cache).allocate(node("n1"), inventory, usage)
    outcome = ClaimsAllocator([claim("b", request("gpu", "big"))], CLASSES, cache=cache).allocate(
        node("n1"), inventory, usage)
    assert results_of(outcome) == [("gpu", "gpu-2")]


def test_a_change_in_the_nodes_pool_makes_the_answer_recomputed_and_other_nodes_keep_theirs():
    cache = AllocatorCache()
    inventory = Inventory([gpu_slice("n1", 2), gpu_slice("n2", 2)])
    usage = DevicesInUse()
    allocator = ClaimsAllocator([claim("a", request("gpu"))], CLASSES, cache=cache)
    assert results_of(allocator.allocate(node("n1"), inventory, usage)) == [("gpu", "gpu-0")]
    assert results_of(allocator.allocate(node("n2"), inventory, usage)) == [("gpu", "gpu-0")]
    usage.hold("x", [gpu("n1", "gpu-0")])
    views = inventory.cached_views()
    assert allocator.remembered(views["n1"], usage) is None
    assert allocator.remembered(views["n2"], usage) is not None
    assert results_of(allocator.allocate(node("n1"), inventory, usage)) == [("gpu", "gpu-1")]
    usage.hold("y", [gpu("n1", "gpu-1")])
    outcome = allocator.allocate(node("n1"), inventory, usage)
    assert not outcome.success
    assert outcome.reasons == ["claim default/a, request gpu: not enough devices: 1 requested, 0 available (2 in use)"]
    # the remembered failure explains itself with the asking claim's name
    other = ClaimsAllocator([claim("b", request("gpu"))], CLASSES, cache=cache)
    assert other.allocate(node("n1"), inventory, usage).reasons == [
        "claim default/b, request gpu: not enough devices: 1 requested, 0 available (2 in use)"]


def test_nodes_reaching_the_same_devices_share_one_search():
    rack = device_slice("rack", [dev("nic-0", index=0), dev("nic-1", index=1)], pool="rack", node_selector=labels_selector(rack="r1"))
    cache = AllocatorCache()
    inventory = Inventory([rack])
    usage = DevicesInUse()
    allocator = ClaimsAllocator([claim("a", request("nic"))], CLASSES, cache=cache)
    assert results_of(allocator.allocate(node("n0", rack="r1"), inventory, usage)) == [("nic", "nic-0")]
    steps = cache.search_steps
    answers = [allocator.allocate(node(f"n{i}", rack="r1"), inventory, usage) for i in range(1, 5)]
    assert [results_of(a) for a in answers] == [[("nic", "nic-0")]] * 4
    assert cache.search_steps == steps  # no further search
    assert not allocator.allocate(node("n9", rack="r0"), inventory, usage).success


def test_remembered_on_many_nodes_checks_labels_when_slices_select_nodes():
    rack = device_slice("rack", [dev("nic-0")], pool="rack", node_selector=labels_selector(rack="r1"))
    inventory = Inventory([rack])
    usage = DevicesInUse()
    allocator = ClaimsAllocator([claim("a", request("nic"))], CLASSES)
    n1 = node("n1", rack="r1")
    assert allocator.remembered_on(["n1"], inventory, usage, [n1]) == [None]  # nothing planned yet
    assert allocator.allocate(n1, inventory, usage).success
    assert allocator.remembered_on(["n1"], inventory, usage, [n1])[0].fits
    relabeled = node("n1", rack="r0")
    assert allocator.remembered_on(["n1"], inventory, usage, [relabeled]) == [None]
    assert not allocator.allocate(relabeled, inventory, usage).success
    assert allocator.remembered_on(["n1", "n2"], inventory, usage) == [None, None]  # nodes are needed


def test_results_are_fresh_objects_with_a_fresh_share_id_each_time():
    ids = itertools.count()
    d = dev("gpu-0", capacity={"memory": "40Gi"})
    d["allowMultipleAllocations"] = True
    inventory = Inventory([device_slice("s", [d], pool="n1", node_name="n1")])
    cache = AllocatorCache(new_share_id=lambda: f"share-{next(ids)}")
    allocator = ClaimsAllocator([claim("c", request("gpu", capacity={"memory": "16Gi"}))], CLASSES, cache=cache)
    answer = allocator.answer(node("n1"), inventory, DevicesInUse())
    first, second = answer.results(allocator), answer.results(allocator)
    assert first is not second and first[0] is not second[0]
    assert [r[0]["devices"]["results"][0]["shareID"] for r in (first, second)] == ["share-0", "share-1"]


def test_shared_capacity_held_in_devices_in_use_is_respected():
    from fractions import Fraction
    d = dev("gpu-0", capacity={"memory": "40Gi"})
    d["allowMultipleAllocations"] = True
    inventory = Inventory([device_slice("s", [d], pool="n1", node_name="n1")])
    usage = DevicesInUse()
    allocator = ClaimsAllocator([claim("c", request("gpu", capacity={"memory": "16Gi"}))], CLASSES)
    assert allocator.allocate(node("n1"), inventory, usage).success
    usage.hold("x", [], {gpu("n1", "gpu-0"): {f"{DRIVER}/memory": Fraction(30 * 2**30)}})
    assert not allocator.allocate(node("n1"), inventory, usage).success


def test_first_available_and_all_mode_answers_match_plain_allocate():
    claims = [claim("fa", first_available("gpu", request("big", "big", count=2), request("any", count=1))),
              claim("all", request("gpu", all=True))]
    slices = [gpu_slice("n1", 4)]
    for c in claims:
        for held in ((), ("gpu-2",), ("gpu-2", "gpu-3")):
            usage = DevicesInUse()
            usage.hold("x", [gpu("n1", h) for h in held])
            fast = ClaimsAllocator([c], CLASSES).allocate(node("n1"), Inventory(slices), usage)
            plain = allocate([c], node("n1"), slices, CLASSES, {gpu("n1", h) for h in held})
            assert fast.success == plain.success
            assert (fast.results if fast.success else fast.reasons) == \
                (plain.results if plain.success else plain.reasons)


def test_remembered_answers_agree_with_fresh_searches_through_random_changes():
    rng = random.Random(7)
    nodes = [node(f"n{i}", rack=f"r{i % 2}") for i in range(4)]
    slices = [gpu_slice(f"n{i}", 3) for i in range(4)] + [
        device_slice("rack-0", [dev("nic-0", index=0), dev("nic-1", index=1)], pool="rack-0", node_selector=labels_selector(rack="r0"))]
    shapes = [
        lambda n: claim(n, request("gpu")),
        lambda n: claim(n, request("gpu", count=2)),
        lambda n: claim(n, request("gpu", "big")),
        lambda n: claim(n, request("gpu"), request("nic")),
        lambda n: claim(n, first_available("x", request("two", count=2), request("one"))),
    ]
    cache = AllocatorCache()
    inventory = Inventory(slices)
    usage = DevicesInUse()
    held: dict[str, list] = {}
    for step in range(300):
        c = rng.choice(shapes)(f"c{step}")
        at = rng.choice(nodes)
        fast = ClaimsAllocator([c], CLASSES, cache=cache).allocate(at, inventory, usage)
        plain = allocate([c], at, slices, CLASSES, set(usage))
        assert fast.success == plain.success, step
        if fast.success:
            assert fast.results == plain.results, step
            if rng.random() < 0.6:
                held[c["metadata"]["name"]] = [device_id(r["driver"], r["pool"], r["device"])
                                               for r in fast.results[0]["devices"]["results"]]
                usage.hold(c["metadata"]["name"], held[c["metadata"]["name"]])
        else:
            assert fast.reasons == plain.reasons, step
        if held and rng.random() < 0.3:
            gone = rng.choice(sorted(held))
            usage.drop(gone)
            del held[gone]


def _filter_like_a_scheduler(allocator, nodes, inventory, usage):
    """What DynamicResources.filter_nodes does: remembered answers, a search where there is none."""
    names = [n["metadata"]["name"] for n in nodes]
    if not allocator.planned:
        allocator.answer(nodes[0], inventory, usage)
    remembered = allocator.remembered_on(names, inventory, usage)
    return [a if a is not None else allocator.answer(n, inventory, usage) for a, n in zip(remembered, nodes)]


def test_remembered_on_many_nodes_agrees_with_fresh_searches_through_random_changes():
    """The answer index (answers kept per claim shape until a pool their node reaches changes)
    gives what a fresh search gives, on node-local pools and a pool every node reaches."""
    rng = random.Random(11)
    nodes = [node(f"n{i}") for i in range(6)]
    slices = [gpu_slice(f"n{i}", 2) for i in range(6)] + [
        device_slice("fabric", [dev("nic-0", index=0), dev("nic-1", index=1)], pool="fabric", all_nodes=True)]
    shapes = [lambda n: claim(n, request("gpu")), lambda n: claim(n, request("gpu", count=2)),
              lambda n: claim(n, request("gpu"), request("nic"))]
    cache = AllocatorCache()
    inventory = Inventory(slices)
    assert not inventory.label_dependent
    usage = DevicesInUse()
    held: dict[str, list] = {}
    for step in range(400):
        c = rng.choice(shapes)(f"c{step}")
        answers = _filter_like_a_scheduler(ClaimsAllocator([c], CLASSES, cache=cache), nodes, inventory, usage)
        for at, answer in zip(nodes, answers):
            plain = allocate([c], at, slices, CLASSES, set(usage))
            assert answer.fits == plain.success, (step, at["metadata"]["name"])
        fitting = [(at, a) for at, a in zip(nodes, answers) if a.fits]
        if fitting and rng.random() < 0.6:
            at, _ = rng.choice(fitting)
            results = ClaimsAllocator([c], CLASSES, cache=cache).allocate(at, inventory, usage).results
            held[c["metadata"]["name"]] = [device_id(r["driver"], r["pool"], r["device"])
                                           for r in results[0]["devices"]["results"]]
            usage.hold(c["metadata"]["name"], held[c["metadata"]["name"]])
        if held and rng.random() < 0.4:
            gone = rng.choice(sorted(held))
            usage.drop(gone)
            del held[gone]


def test_pools_changed_since_names_the_pools_bumped_and_gives_up_past_its_log(monkeypatch):
    import phalanx.dra.devices as devices
    monkeypatch.setattr(devices, "_MAX_CHANGE_LOG", 4)
    usage = DevicesInUse()
    start = usage.version
    usage.hold("a", [gpu("n1", "gpu-0")])
    usage.hold("b", [gpu("n2", "gpu-0")])
    assert usage.pools_changed_since(start) == {(DRIVER, "n1"), (DRIVER, "n2")}
    mid = usage.version
    assert usage.pools_changed_since(mid) == set()
    for i in range(6):
        usage.hold(f"x{i}", [gpu("n3", f"gpu-{i}")])
    assert usage.pools_changed_since(start) is None  # trimmed: the caller checks everything again
    assert usage.pools_changed_since(usage.version - 1) == {(DRIVER, "n3")}
