"""Simulated DRA drivers publish dra-example-driver's DeviceClass and ResourceSlices for simulated
nodes, on virtual time against the real API."""

from __future__ import annotations

import re

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InformerFactory, InProcessClient
from phalanx.cluster.bootstrap import node_object
from phalanx.cluster.configparse import build_kind_nodes
from phalanx.machinery.featuregates import FeatureGates
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.garbagecollector import GarbageCollector
from phalanx.dra.allocator import allocate
from phalanx.dra.testing import claim, device_class, request
from phalanx.machinery.strictyaml import ConfigFileError
from phalanx.nodes.dradriver.config import parse_dra_drivers, resolve_drivers
from phalanx.nodes.dradriver.model import (DeviceContext, PartitionSpec, attribute_name_errors, device_uuid,
                                           make_attribute, make_capacity)
from phalanx.nodes.dradriver.reconcile import SimulatedDRADrivers
from phalanx.nodes.dradriver.render import generate_name, render_node_pool

API_V = "resource.k8s.io/v1"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


# -- helpers --------------------------------------------------------------------------------------

async def start(env, drivers=None, nodes=None):
    if nodes is None:
        nodes = build_kind_nodes("kind", [("control-plane", {}), ("worker", {}), ("worker", {})])
    env.bootstrap(nodes)
    factory = InformerFactory(env.client, clock=env.clock)
    ctrl = SimulatedDRADrivers(env.client, factory, drivers=drivers, clock=env.clock)
    ctrl.start()
    await env.run_until(lambda: ctrl.synced, within=5)
    await settle(env)
    return ctrl, factory


async def restart(env, drivers=None):
    factory = InformerFactory(env.client, clock=env.clock)
    ctrl = SimulatedDRADrivers(env.client, factory, drivers=drivers, clock=env.clock)
    ctrl.start()
    await env.run_until(lambda: ctrl.synced, within=5)
    await settle(env)
    return ctrl, factory


async def stop(ctrl, factory):
    await ctrl.stop()
    await factory.stop()


async def settle(env, seconds=5):
    await env.run_until(lambda: False, within=seconds)


async def slices(env):
    items, _ = await env.client.list(API_V, "ResourceSlice")
    return sorted(items, key=lambda s: s["metadata"]["name"])


async def by_node(env, node):
    items, _ = await env.client.list(API_V, "ResourceSlice", field_selector=f"spec.nodeName={node}")
    return sorted(items, key=lambda s: s["metadata"]["name"])


async def network_slices(env, driver):
    items, _ = await env.client.list(API_V, "ResourceSlice", field_selector=f"spec.driver={driver}")
    return {s["spec"]["pool"]["name"]: s for s in items if not s["spec"].get("nodeName")}


def snapshot(items):
    return {s["metadata"]["name"]: (s["metadata"]["uid"], s["metadata"]["resourceVersion"]) for s in items}


# -- the default: dra-example-driver's gpu profile ------------------------------------------------

async def test_default_publishes_the_gpu_profile_on_every_worker(env):
    ctrl, f = await start(env)
    cls = await env.client.get(API_V, "DeviceClass", None, "gpu.example.com")
    assert cls["spec"]["selectors"] == [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]

    all_slices, _ = await env.client.list(API_V, "ResourceSlice")
    assert sorted(s["spec"]["nodeName"] for s in all_slices) == ["kind-worker", "kind-worker2"]
    assert await by_node(env, "kind-control-plane") == []

    node = await env.client.get("v1", "Node", None, "kind-worker")
    [s] = await by_node(env, "kind-worker")
    assert re.fullmatch(r"00000-gpu\.example\.com-kind-worker-[a-z0-9]{5}", s["metadata"]["name"])
    assert s["metadata"]["generateName"] == "00000-gpu.example.com-kind-worker-"
    assert s["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "kind-worker",
                                                 "uid": node["metadata"]["uid"], "controller": True}]
    spec = s["spec"]
    assert spec["driver"] == "gpu.example.com" and spec["nodeName"] == "kind-worker"
    assert spec["pool"] == {"name": "kind-worker", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == [f"gpu-{i}" for i in range(8)]
    for i, d in enumerate(spec["devices"]):
        assert set(d) == {"name", "attributes", "capacity"}
        attrs = d["attributes"]
        assert attrs["index"] == {"int": i}
        assert re.fullmatch(f"gpu-{UUID}", attrs["uuid"]["string"])
        assert attrs["model"] == {"string": "LATEST-GPU-MODEL"}
        assert attrs["driverVersion"] == {"version": "1.0.0"}
        assert d["capacity"] == {"memory": {"value": "80Gi"}}
    uuids = [d["attributes"]["uuid"]["string"] for s in all_slices for d in s["spec"]["devices"]]
    assert len(set(uuids)) == 16
    assert spec["devices"][3]["attributes"]["uuid"]["string"] == "gpu-" + device_uuid("gpu.example.com",
                                                                                      "kind-worker", 3)
    await stop(ctrl, f)


async def test_published_gpus_are_allocatable(env):
    ctrl, f = await start(env)
    node = await env.client.get("v1", "Node", None, "kind-worker2")
    all_slices, _ = await env.client.list(API_V, "ResourceSlice")
    out = allocate([claim("c", request("gpu", count=2))], node, all_slices,
                   {"gpu.example.com": device_class()}, set())
    assert out.success
    assert [(r["pool"], r["device"]) for r in out.results[0]["devices"]["results"]] == \
        [("kind-worker2", "gpu-0"), ("kind-worker2", "gpu-1")]
    await stop(ctrl, f)


async def test_single_node_cluster_publishes_on_the_untainted_control_plane(env):
    ctrl, f = await start(env, nodes=build_kind_nodes("solo", [("control-plane", {})]))
    [s] = await by_node(env, "solo-control-plane")
    assert len(s["spec"]["devices"]) == 8
    await stop(ctrl, f)


async def test_only_simulated_nodes_get_slices(env):
    ctrl, f = await start(env)
    real, _ = node_object(NodeSpec("real-node"), 9)
    real["spec"]["providerID"] = "aws:///us-east-1a/i-0abc"
    await env.client.create(real)
    await settle(env)
    assert await by_node(env, "real-node") == []
    await stop(ctrl, f)


# -- configured drivers --------------------------------------------------------------------------

NIC = {"name": "nic.example.com", "devicesPerNode": 2, "devicePrefix": "nic",
       "nodeSelector": {"example.com/nic": "yes"},
       "attributes": {"index": "{i}", "interface": "eth{i}", "rdma": True, "speed": 200,
                      "firmware": {"version": "2.{i}.0"}, "example.com/pci": "{pool}-{i:02}"},
       "capacity": {"bandwidth": "{i}00G", "queues": 64}}


async def test_custom_driver_with_two_devices_and_typed_attributes(env):
    nodes = [NodeSpec("n0", labels={"example.com/nic": "yes"}), NodeSpec("n1")]
    ctrl, f = await start(env, drivers=[NIC], nodes=nodes)
    cls = await env.client.get(API_V, "DeviceClass", None, "nic.example.com")
    assert cls["spec"]["selectors"] == [{"cel": {"expression": "device.driver == 'nic.example.com'"}}]
    classes, _ = await env.client.list(API_V, "DeviceClass")
    assert [c["metadata"]["name"] for c in classes] == ["nic.example.com"]  # no gpu.example.com
    assert await by_node(env, "n1") == []  # nodeSelector does not match
    [s] = await by_node(env, "n0")
    assert s["metadata"]["name"].startswith("00000-nic.example.com-n0-")
    devices = s["spec"]["devices"]
    assert [d["name"] for d in devices] == ["nic-0", "nic-1"]
    assert devices[1]["attributes"] == {
        "index": {"int": 1}, "interface": {"string": "eth1"}, "rdma": {"bool": True}, "speed": {"int": 200},
        "firmware": {"version": "2.1.0"}, "example.com/pci": {"string": "n0-01"}}
    assert devices[1]["capacity"] == {"bandwidth": {"value": "100G"}, "queues": {"value": "64"}}
    assert devices[0]["capacity"]["bandwidth"] == {"value": "0"}
    await stop(ctrl, f)


async def test_empty_list_disables_the_default(env):
    ctrl, f = await start(env, drivers=[])
    assert ctrl.synced
    assert (await env.client.list(API_V, "ResourceSlice"))[0] == []
    assert (await env.client.list(API_V, "DeviceClass"))[0] == []
    await stop(ctrl, f)


async def test_extra_device_classes_and_existing_classes_left_alone(env):
    mine = device_class("gpu.example.com", "device.driver == 'gpu.example.com'", "true")
    await env.client.create(mine)
    driver = {"name": "gpu.example.com", "deviceClasses": [
        {"name": "gpu.example.com"},
        {"name": "big.example.com", "selectors": ["device.driver == 'gpu.example.com'",
                                                  "device.capacity['gpu.example.com'].memory"
                                                  ".compareTo(quantity('40Gi')) >= 0"]}]}
    ctrl, f = await start(env, drivers=[driver])
    kept = await env.client.get(API_V, "DeviceClass", None, "gpu.example.com")
    assert len(kept["spec"]["selectors"]) == 2  # the user's version
    big = await env.client.get(API_V, "DeviceClass", None, "big.example.com")
    assert big["spec"]["selectors"][1]["cel"]["expression"].startswith("device.capacity")
    await stop(ctrl, f)


async def test_partitions_publish_shared_counters_and_partition_devices(env):
    driver = {"name": "gpu.example.com", "devicesPerNode": 2, "partitions": 4}
    ctrl, f = await start(env, drivers=[driver], nodes=[NodeSpec("n0")])
    counters, devices = await by_node(env, "n0")
    assert counters["metadata"]["name"].startswith("00000-gpu.example.com-n0-")
    assert devices["metadata"]["name"].startswith("00001-gpu.example.com-n0-")
    for s in (counters, devices):
        assert s["spec"]["pool"] == {"name": "n0", "generation": 1, "resourceSliceCount": 2}
    assert "devices" not in counters["spec"] and "sharedCounters" not in devices["spec"]
    assert counters["spec"]["sharedCounters"] == [
        {"name": f"gpu-{i}-counters", "counters": {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}}
        for i in range(2)]
    names = [d["name"] for d in devices["spec"]["devices"]]
    assert names == [f"gpu-{i}-partition-{j}" for j in range(4) for i in (0,)] + ["gpu-0-full"] + \
        [f"gpu-1-partition-{j}" for j in range(4)] + ["gpu-1-full"]
    part = devices["spec"]["devices"][6]
    assert part["name"] == "gpu-1-partition-1"
    assert part["attributes"]["partition"] == {"int": 1} and part["attributes"]["partitionable"] == {"bool": True}
    assert part["attributes"]["index"] == {"int": 1}
    assert part["capacity"] == {"memory": {"value": "20Gi"}}
    assert part["consumesCounters"] == [{"counterSet": "gpu-1-counters",
                                         "counters": {"memory": {"value": "20Gi"}, "compute": {"value": "25"}}}]
    full = devices["spec"]["devices"][9]
    assert full["name"] == "gpu-1-full" and full["attributes"]["full"] == {"bool": True}
    assert full["capacity"] == {"memory": {"value": "80Gi"}}
    assert full["consumesCounters"][0]["counters"] == {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}

    # The counters work: a GPU gives either its four partitions or itself, not both.
    node = await env.client.get("v1", "Node", None, "n0")
    all_slices, _ = await env.client.list(API_V, "ResourceSlice")
    classes = {"gpu.example.com": device_class()}
    one_gpu = "device.attributes['gpu.example.com'].index == 0"
    four = allocate([claim("c", request("p", count=4, selectors=[one_gpu]))], node, all_slices, classes, set())
    assert four.success
    assert [r["device"] for r in four.results[0]["devices"]["results"]] == [f"gpu-0-partition-{j}" for j in range(4)]
    five = allocate([claim("c", request("p", count=5, selectors=[one_gpu]))], node, all_slices, classes, set())
    assert not five.success
    await stop(ctrl, f)


async def test_device_taints_are_published_and_stable(env):
    driver = {"name": "gpu.example.com", "devicesPerNode": 3,
              "taints": [{"key": "example.com/unhealthy", "value": "ecc", "effect": "NoSchedule", "devices": [1]}]}
    ctrl, f = await start(env, drivers=[driver], nodes=[NodeSpec("n0")])
    [s] = await by_node(env, "n0")
    taints = [d.get("taints") for d in s["spec"]["devices"]]
    assert taints[0] is None and taints[2] is None
    assert [{k: v for k, v in t.items() if k != "timeAdded"} for t in taints[1]] == \
        [{"key": "example.com/unhealthy", "value": "ecc", "effect": "NoSchedule"}]
    assert taints[1][0]["timeAdded"]  # set by the API server; not a difference to fight over
    await settle(env, 60)
    assert ctrl.updated == 0 and ctrl.created == 1
    await stop(ctrl, f)


async def test_fields_the_api_server_drops_are_not_rewritten_forever(make_env):
    env = make_env()
    env.api = build_api(env.store, FeatureGates.from_config({"DRADeviceTaints": False}), now=env.clock.datetime)
    env.client = InProcessClient(env.api, clock=env.clock, field_manager="unit-test")
    driver = {"name": "gpu.example.com", "devicesPerNode": 2,
              "taints": [{"key": "example.com/unhealthy", "effect": "NoSchedule"}]}
    ctrl, f = await start(env, drivers=[driver], nodes=[NodeSpec("n0"), NodeSpec("n1")])
    for node in ("n0", "n1"):
        [s] = await by_node(env, node)
        assert all("taints" not in d for d in s["spec"]["devices"])
        assert s["spec"]["pool"]["generation"] == 1
    await settle(env, 60)
    assert ctrl.created == 2 and ctrl.updated == 0
    await stop(ctrl, f)


async def test_per_rack_network_pools_follow_the_nodes(env):
    nodes = [NodeSpec(f"n{i}", labels={"example.com/rack": f"rack-{i // 2}"}) for i in range(4)]
    driver = {"name": "nic.example.com", "devicesPerNode": 0, "attributes": {}, "capacity": {},
              "pools": [{"name": "fabric-{value}", "perValueOf": "example.com/rack", "devices": 4,
                         "devicePrefix": "port", "attributes": {"rack": "{value}", "port": "{i}"}},
                        {"name": "licenses", "allNodes": True, "devices": 2}]}
    ctrl, f = await start(env, drivers=[driver], nodes=nodes)
    assert await by_node(env, "n0") == []  # devicesPerNode: 0: no node-local pools
    pools = await network_slices(env, "nic.example.com")
    assert sorted(pools) == ["fabric-rack-0", "fabric-rack-1", "licenses"]
    rack1 = pools["fabric-rack-1"]
    assert rack1["metadata"]["name"].startswith("00000-nic.example.com-")
    assert not rack1["metadata"].get("ownerReferences")
    assert rack1["spec"]["nodeSelector"] == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "example.com/rack", "operator": "In", "values": ["rack-1"]}]}]}
    assert rack1["spec"]["pool"] == {"name": "fabric-rack-1", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in rack1["spec"]["devices"]] == ["port-0", "port-1", "port-2", "port-3"]
    assert rack1["spec"]["devices"][2]["attributes"] == {"rack": {"string": "rack-1"}, "port": {"int": 2}}
    assert pools["licenses"]["spec"]["allNodes"] is True and "nodeSelector" not in pools["licenses"]["spec"]

    # A rack's pool goes with its last node and comes with its first.
    await env.client.delete("v1", "Node", None, "n2")
    await settle(env)
    assert "fabric-rack-1" in await network_slices(env, "nic.example.com")
    await env.client.delete("v1", "Node", None, "n3")
    await settle(env)
    assert sorted(await network_slices(env, "nic.example.com")) == ["fabric-rack-0", "licenses"]
    new, _ = node_object(NodeSpec("n9", labels={"example.com/rack": "rack-7"}), 9)
    await env.client.create(new)
    await settle(env)
    assert sorted(await network_slices(env, "nic.example.com")) == ["fabric-rack-0", "fabric-rack-7", "licenses"]

    # The network pool is usable from its rack only.
    all_slices, _ = await env.client.list(API_V, "ResourceSlice")
    classes = {"nic.example.com": device_class("nic.example.com")}
    node0 = await env.client.get("v1", "Node", None, "n0")
    port = "device.attributes['nic.example.com'].?rack.orValue('') == 'rack-7'"
    assert not allocate([claim("c", request("p", "nic.example.com", selectors=[port]))], node0, all_slices,
                        classes, set()).success
    node9 = await env.client.get("v1", "Node", None, "n9")
    assert allocate([claim("c", request("p", "nic.example.com", selectors=[port]))], node9, all_slices,
                    classes, set()).success
    await stop(ctrl, f)


# -- lifecycle -----------------------------------------------------------------------------------

async def test_restart_creates_nothing_new(env):
    driver = {"name": "gpu.example.com", "devicesPerNode": 2, "partitions": 2,
              "pools": [{"name": "shared", "allNodes": True, "devices": 3},
                        {"name": "near-{value}", "perValueOf": "kubernetes.io/hostname"}]}
    ctrl, f = await start(env, drivers=[driver])
    before = snapshot(await slices(env))
    assert len(before) == 7  # 2 workers x (counters + devices) + shared + near-<worker> x 2
    await stop(ctrl, f)

    ctrl2, f2 = await restart(env, drivers=[driver])
    await settle(env, 60)
    assert snapshot(await slices(env)) == before
    assert (ctrl2.created, ctrl2.updated, ctrl2.deleted) == (0, 0, 0)
    await stop(ctrl2, f2)


async def test_config_change_bumps_the_pool_generation(env):
    ctrl, f = await start(env, nodes=[NodeSpec("n0")])
    [old] = await by_node(env, "n0")
    await stop(ctrl, f)

    ctrl2, f2 = await restart(env, drivers=[{"name": "gpu.example.com", "devicesPerNode": 4}])
    [new] = await by_node(env, "n0")
    assert new["metadata"]["uid"] == old["metadata"]["uid"]  # updated in place
    assert new["spec"]["pool"] == {"name": "n0", "generation": 2, "resourceSliceCount": 1}
    assert [d["name"] for d in new["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    await stop(ctrl2, f2)

    ctrl3, f3 = await restart(env, drivers=[{"name": "gpu.example.com", "devicesPerNode": 4, "partitions": 2}])
    counters, devices = await by_node(env, "n0")
    assert counters["spec"]["pool"]["generation"] == devices["spec"]["pool"]["generation"] == 3
    assert counters["metadata"]["uid"] == old["metadata"]["uid"] and "sharedCounters" in counters["spec"]
    await stop(ctrl3, f3)


async def test_a_new_node_gets_slices_and_a_deleted_one_loses_them(env):
    ctrl, f = await start(env, nodes=[NodeSpec("n0")])
    n1, _ = node_object(NodeSpec("n1"), 1)
    await env.client.create(n1)
    await settle(env)
    [s] = await by_node(env, "n1")
    assert s["spec"]["pool"]["generation"] == 1

    await env.client.delete("v1", "Node", None, "n1")
    await settle(env)
    assert await by_node(env, "n1") == []
    assert len(await by_node(env, "n0")) == 1
    await stop(ctrl, f)


async def test_garbage_collector_removes_a_deleted_nodes_slices(env):
    ctrl, f = await start(env, nodes=[NodeSpec("n0"), NodeSpec("n1")])
    await stop(ctrl, f)  # only the ownerReference is left to do the work
    gf = InformerFactory(env.client, clock=env.clock)
    gc = GarbageCollector(env.client, gf, clock=env.clock)
    gc.start()
    await env.run_until(lambda: gc.synced, within=5)
    await env.client.delete("v1", "Node", None, "n1")
    await env.run_until(lambda: False, within=30)
    assert await by_node(env, "n1") == []
    assert len(await by_node(env, "n0")) == 1
    await gc.stop()
    await gf.stop()


async def test_a_node_that_stops_matching_loses_its_slices(env):
    ctrl, f = await start(env, drivers=[NIC], nodes=[NodeSpec("n0", labels={"example.com/nic": "yes"})])
    assert len(await by_node(env, "n0")) == 1
    node = await env.client.get("v1", "Node", None, "n0")
    del node["metadata"]["labels"]["example.com/nic"]
    await env.client.update(node)
    await settle(env)
    assert await by_node(env, "n0") == []
    await stop(ctrl, f)


async def test_a_deleted_or_edited_slice_is_put_back(env):
    ctrl, f = await start(env, nodes=[NodeSpec("n0")])
    [s] = await by_node(env, "n0")
    s["spec"]["devices"] = s["spec"]["devices"][:1]
    await env.client.update(s)
    await settle(env)
    [fixed] = await by_node(env, "n0")
    assert len(fixed["spec"]["devices"]) == 8 and fixed["spec"]["pool"]["generation"] == 2

    await env.client.delete(API_V, "ResourceSlice", None, fixed["metadata"]["name"])
    await settle(env)
    [again] = await by_node(env, "n0")
    assert again["metadata"]["uid"] != fixed["metadata"]["uid"] and len(again["spec"]["devices"]) == 8
    await stop(ctrl, f)


async def test_many_nodes_one_controller(env):
    nodes = [NodeSpec(f"n{i}") for i in range(300)]
    ctrl, f = await start(env, nodes=nodes)
    await env.run_until(lambda: len(ctrl.slices.list()) == 300, within=120)
    await settle(env, 30)
    assert ctrl.created == 300 and ctrl.updated == 0 and ctrl.deleted == 0
    assert len({s["spec"]["nodeName"] for s in ctrl.slices.list()}) == 300
    await stop(ctrl, f)


# -- the model, without the API ------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (True, {"bool": True}),
    (7, {"int": 7}),
    ("H100", {"string": "H100"}),
    ("1.0.0", {"string": "1.0.0"}),
    ("42", {"string": "42"}),
    ("{i}", {"int": 5}),
    ("{i+1}", {"int": 6}),
    ("{i:03}", {"int": 5}),
    ("slot-{i//2}", {"string": "slot-2"}),
    ("{pool}", {"string": "node-a"}),
    ("{{i}}", {"string": "{i}"}),
    ({"version": "1.0.0"}, {"version": "1.0.0"}),
    ({"version": "1.{i}.0"}, {"version": "1.5.0"}),
    ({"string": "{i}"}, {"string": "5"}),
    ({"string": 12}, {"string": "12"}),
    ({"int": "{i*8}"}, {"int": 40}),
    ({"bool": False}, {"bool": False}),
])
def test_attribute_typing(raw, expected):
    assert make_attribute("a", raw).render(DeviceContext("d.example.com", "node-a", 5)) == expected


@pytest.mark.parametrize("raw, message", [
    (1.5, "expected an integer, a boolean, a string or a typed mapping"),
    ({"float": 1}, "exactly one of int, bool, string, version"),
    ({"version": "1.0"}, 'invalid version "1.0"'),
    ({"version": "1.0.0\n"}, 'invalid version "1.0.0\\n"'),
    ({"int": "x"}, 'int: "x" is not an integer'),
    ({"bool": "yes"}, 'bool: expected a boolean, got string "yes"'),
    ("{j}", 'invalid placeholder "{j}"'),
    ("{i//0}", "division by zero"),
])
def test_attribute_errors(raw, message):
    with pytest.raises(ValueError) as info:
        make_attribute("a", raw)
    assert message in str(info.value)


@pytest.mark.parametrize("name, valid", [("gpu_model", True), ("example.com/gpu", True), ("gpu\n", False),
                                         ("example.com/gpu\n", False), ("1gpu", False)])
def test_attribute_names_are_c_identifiers_to_the_end_of_the_text(name, valid):
    assert (attribute_name_errors(name) == []) == valid


def test_capacities_are_canonical_quantities():
    ctx = DeviceContext("d", "p", 2)
    assert make_capacity("m", "1024Mi").render(ctx) == {"value": "1Gi"}
    assert make_capacity("m", 100).render(ctx) == {"value": "100"}
    assert make_capacity("m", "{i}Gi").render(ctx) == {"value": "2Gi"}
    assert make_capacity("m", {"value": "0.5"}).render(ctx) == {"value": "500m"}
    with pytest.raises(ValueError, match="invalid quantity"):
        make_capacity("m", "lots")


@pytest.mark.parametrize("count, counters, share", [
    (4, {"memory": "80Gi", "compute": "100"}, {"memory": "20Gi", "compute": "25"}),
    (3, {"memory": "80Gi", "compute": "100"}, {"memory": "28633115306", "compute": "33"}),
    (2, {"power": "1500m"}, {"power": "750m"}),
])
def test_partition_share_rounds_down_like_the_example_driver(count, counters, share):
    assert PartitionSpec(count, tuple(counters.items())).share() == share


def test_slice_names_follow_the_helper_library():
    assert generate_name(0, 1, "gpu.example.com", "kind-worker") == "00000-gpu.example.com-kind-worker-"
    assert generate_name(1, 2, "gpu.example.com", None) == "00001-gpu.example.com-"
    assert generate_name(0x1a, 0x100001, "d.example.com", "n") == "00001a-d.example.com-n-"


def test_large_pools_are_split_within_api_limits():
    [driver] = parse_dra_drivers([{"name": "d.example.com", "devicesPerNode": 200}])
    assert [len(s["devices"]) for s in render_node_pool(driver, "n")] == [128, 72]
    [tainted] = parse_dra_drivers([{"name": "d.example.com", "devicesPerNode": 100,
                                "taints": [{"key": "k", "effect": "NoExecute"}]}])
    assert [len(s["devices"]) for s in render_node_pool(tainted, "n")] == [64, 36]
    [parts] = parse_dra_drivers([{"name": "d.example.com", "devicesPerNode": 10, "partitions": 1}])
    rendered = render_node_pool(parts, "n")
    assert [len(s.get("sharedCounters", [])) for s in rendered] == [8, 2, 0]
    assert len(rendered[2]["devices"]) == 20


def test_resolve_drivers():
    assert [d.name for d in resolve_drivers(None)] == ["gpu.example.com"]
    assert resolve_drivers([]) == []
    [d] = resolve_drivers([{"name": "x.example.com", "devicesPerNode": 1}])
    assert (d.name, d.devices_per_node, d.device_prefix) == ("x.example.com", 1, "gpu")
    with pytest.raises(ConfigFileError, match=r"draDrivers\[0\]\.devicesPerNode: expected an integer"):
        resolve_drivers([{"name": "x.example.com", "devicesPerNode": "1"}])


# -- failed devices (fault.phalanx.dev/devices) ----------------------------------------------------

async def set_failed_devices(env, node, value):
    obj = await env.client.get("v1", "Node", None, node)
    annotations = obj["metadata"].setdefault("annotations", {})
    if value is None:
        annotations.pop("fault.phalanx.dev/devices", None)
    else:
        annotations["fault.phalanx.dev/devices"] = value
    await env.client.update(obj)


def failure_taints(slices_, device):
    return [t for s in slices_ for d in s["spec"].get("devices") or [] if d["name"] == device
            for t in d.get("taints") or [] if t["key"] == "gpu.example.com/unhealthy"]


async def test_failed_devices_get_the_unhealthy_taint_and_keep_its_time(env):
    ctrl, f = await start(env, nodes=[NodeSpec("n0"), NodeSpec("n1")])
    await set_failed_devices(env, "n0", "gpu-2")
    await settle(env)
    [taint] = failure_taints(await by_node(env, "n0"), "gpu-2")
    assert (taint["key"], taint["effect"]) == ("gpu.example.com/unhealthy", "NoExecute") and taint["timeAdded"]
    assert not failure_taints(await by_node(env, "n0"), "gpu-1") and not failure_taints(await by_node(env, "n1"), "gpu-2")

    await settle(env, 10)
    await set_failed_devices(env, "n0", "gpu-2,gpu-5")  # a rewrite keeps gpu-2's timeAdded
    await settle(env)
    assert failure_taints(await by_node(env, "n0"), "gpu-2") == [taint]
    assert failure_taints(await by_node(env, "n0"), "gpu-5")[0]["timeAdded"] > taint["timeAdded"]

    await set_failed_devices(env, "n0", None)
    await settle(env)
    assert not any(d.get("taints") for s in await by_node(env, "n0") for d in s["spec"]["devices"])
    await stop(ctrl, f)


def test_failure_taints_need_smaller_slices():
    from phalanx.nodes.dradriver.render import render_node_devices, slice_contents, with_failure_taints
    [driver] = parse_dra_drivers([{"name": "d.example.com", "devicesPerNode": 100}])
    devices, counters = render_node_devices(driver, "n")
    assert [len(s["devices"]) for s in slice_contents(devices, counters)] == [100]
    tainted = with_failure_taints(devices, "d.example.com", ["*"], {})
    assert [len(s["devices"]) for s in slice_contents(tainted, counters)] == [64, 36]
    assert tainted[0]["taints"] == [{"key": "d.example.com/unhealthy", "effect": "NoExecute"}]
