"""Topology-aware workload scheduling on an in-process cluster (issue: topology-aware workload
scheduling): required rack constraints, explanations, late members, phalanx's preferred
topology, and the feature gate."""

from __future__ import annotations

from .conftest import nodes, pod, podgroup

RACK = "topology.kubernetes.io/rack"
BLOCK = "example.com/block"
PREFERRED = "scheduling.phalanx.dev/preferred-topology"


def cond(obj: dict, t: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == t), None)


def racked(n: int, per_rack: int, cpu: str = "4", prefix: str = "node", **more) -> list:
    return nodes(n, cpu=cpu, prefix=prefix, **{RACK: lambda i: f"{prefix}-rack-{i // per_rack}"}, **more)


def tas_group(name: str, min_count: int, key: str = RACK, **metadata) -> dict:
    pg = podgroup(name, min_count, schedulingConstraints={"topology": [{"key": key}]})
    pg["metadata"].update(metadata)
    return pg


def rack_of(c, node_name: str) -> str | None:
    node = c.api.get(c.api.resource("", "v1", "nodes"), "", node_name)
    return (node["metadata"].get("labels") or {}).get(RACK)


async def test_rack_constrained_gang_lands_in_one_rack_the_tightest(cluster_factory):
    c = cluster_factory()
    # three racks of two 4-cpu nodes, and one big unlabelled node that must never be used
    await c.start(racked(6, 2) + nodes(1, cpu="64", prefix="plain"))
    await c.client.create(pod("busy", cpu="3", nodeName="node-2"))  # node-rack-1 is the fullest
    await c.client.create(tas_group("g", 3))
    for i in range(3):
        await c.client.create(pod(f"p{i}", cpu="1", group="g"))
    assert await c.run_until(lambda: len([n for n in c.bound() if n.startswith("p")]) == 3)
    placed = {n: node for n, node in c.bound().items() if n.startswith("p")}
    assert {rack_of(c, node) for node in placed.values()} == {"node-rack-1"}
    assert "plain-0" not in placed.values()
    st = cond(c.podgroup("g"), "PodGroupScheduled")
    assert (st["status"], st["reason"]) == ("True", "Scheduled")
    ev = next(e for e in c.events("g") if e["reason"] == "Scheduled")
    assert ev["message"] == f"Successfully placed 3 pod(s) of pod group default/g in {RACK}=node-rack-1"
    await c.stop()


async def test_gang_that_fits_no_single_rack_stays_pending_and_names_each_domain(cluster_factory):
    c = cluster_factory()
    await c.start(racked(4, 2, cpu="3") + nodes(1, cpu="64", prefix="plain"))
    await c.client.create(pod("busy", cpu="2", nodeName="node-2"))
    await c.client.create(tas_group("g", 3))
    for i, cpu in enumerate(["1", "1", "3"]):
        await c.client.create(pod(f"p{i}", cpu=cpu, group="g"))
    await c.settle(5)
    assert not any(n.startswith("p") for n in c.bound())
    st = cond(c.podgroup("g"), "PodGroupScheduled")
    assert (st["status"], st["reason"]) == ("False", "Unschedulable")
    # rack-0 has 6 free cpu, but once p0 and p1 are spread over its nodes no node has 3 for p2;
    # rack-1 (4 free cpu) cannot hold the group's 5 at all and is not tried
    assert st["message"].startswith(  # (workload-aware preemption may add what it found)
        "2/3 pods fit, 3 required; 1 pod: 2 Insufficient cpu; "
        f"2 placements evaluated: {RACK}=node-rack-0: 2/3 pods fit (pod p2: 0/2 nodes are available: "
        "2 Insufficient cpu; minCount (3) cannot be satisfied: 2 scheduled, 0 remaining); "
        f"{RACK}=node-rack-1: not tried, free capacity cannot hold 3 pods (cpu: 4 free, 5 requested)")
    from phalanx.scheduler.explain import explain_podgroup
    text = await explain_podgroup(c.client, "default", "g")
    assert f"placement {RACK}=node-rack-0: infeasible, 2 pod(s) placed (2/3 pods fit (pod p2:" in text
    assert f"placement {RACK}=node-rack-1: infeasible, 0 pod(s) placed (not tried, free capacity" in text
    ps = cond(c.pod("p0"), "PodScheduled")
    assert ps["reason"] == "Unschedulable" and f"{RACK}=node-rack-1: not tried" in ps["message"]
    await c.stop()


async def test_pending_group_is_retried_when_a_domain_frees_up(cluster_factory):
    c = cluster_factory()
    await c.start(racked(4, 2, cpu="3"))
    for i in (0, 2):
        await c.client.create(pod(f"busy{i}", cpu="2", nodeName=f"node-{i}"))
    await c.client.create(tas_group("g", 2))
    for i in range(2):
        await c.client.create(pod(f"p{i}", cpu="3", group="g"))
    await c.settle(5)
    assert not any(n.startswith("p") for n in c.bound())
    await c.client.delete("v1", "Pod", "default", "busy2")
    assert await c.run_until(lambda: len([n for n in c.bound() if n.startswith("p")]) == 2, within=30)
    assert {rack_of(c, n) for p, n in c.bound().items() if p.startswith("p")} == {"node-rack-1"}
    await c.stop()


async def test_late_member_stays_in_the_domain_of_its_group(cluster_factory):
    c = cluster_factory()
    # rack-0: two 2-cpu nodes; rack-1: two 8-cpu nodes
    await c.start(racked(2, 2, cpu="2") + racked(2, 2, cpu="8", prefix="big"))
    await c.client.create(tas_group("g", 2))
    for i in range(2):
        await c.client.create(pod(f"p{i}", cpu="1", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    assert {rack_of(c, n) for n in c.bound().values()} == {"node-rack-0"}  # the tighter rack
    # a late member that fits its group's rack joins it there
    await c.client.create(pod("p2", cpu="1", group="g"))
    assert await c.run_until(lambda: "p2" in c.bound())
    assert rack_of(c, c.bound()["p2"]) == "node-rack-0"
    # one that does not fit there stays pending, although the other rack has room
    await c.client.create(pod("p3", cpu="2", group="g"))
    await c.settle(5)
    assert "p3" not in c.bound()
    diag = c.scheduler.last_diagnosis["group:default/g"]
    assert [p["placement"] for p in diag["placementsTried"]] == [f"{RACK}=node-rack-0"]
    await c.stop()


async def test_preferred_rack_inside_required_block(cluster_factory):
    c = cluster_factory()
    block = {BLOCK: lambda i: "block-0"}
    await c.start(racked(4, 2, **block) + racked(2, 2, prefix="far", **{BLOCK: lambda i: "block-1"}))
    ann = {"annotations": {PREFERRED: RACK}}
    await c.client.create(tas_group("g", 2, key=BLOCK, **ann))
    for i in range(2):
        await c.client.create(pod(f"g{i}", cpu="1", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    racks = {rack_of(c, n) for n in c.bound().values()}
    assert len(racks) == 1 and racks <= {"node-rack-0", "node-rack-1", "far-rack-0"}
    ev = next(e for e in c.events("g") if e["reason"] == "Scheduled")
    assert f"/{RACK}=" in ev["message"]  # placed in a preferred rack, not just the block
    # three pods of 3 cpu fit no rack (two nodes each): the group falls back to a whole block
    await c.client.create(tas_group("h", 3, key=BLOCK, **ann))
    for i in range(3):
        await c.client.create(pod(f"h{i}", cpu="3", group="h"))
    assert await c.run_until(lambda: len([n for n in c.bound() if n.startswith("h")]) == 3)
    placed = [n for p, n in c.bound().items() if p.startswith("h")]
    assert all(n.startswith("node-") for n in placed)  # block-0, the only block with room for three
    assert len({rack_of(c, n) for n in placed}) == 2
    ev = next(e for e in c.events("h") if e["reason"] == "Scheduled")
    assert ev["message"].endswith(f"in {BLOCK}=block-0")
    await c.stop()


async def test_preferred_topology_gate_off_ignores_the_annotation(cluster_factory):
    c = cluster_factory(gates={"PhalanxPreferredTopology": False})
    await c.start(racked(4, 2, **{BLOCK: lambda i: "block-0"}))
    await c.client.create(tas_group("g", 2, key=BLOCK, annotations={PREFERRED: RACK}))
    for i in range(2):
        await c.client.create(pod(f"g{i}", cpu="1", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    ev = next(e for e in c.events("g") if e["reason"] == "Scheduled")
    assert ev["message"].endswith(f"in {BLOCK}=block-0")
    await c.stop()


async def test_gate_off_drops_the_constraint_and_splits_nothing(cluster_factory):
    c = cluster_factory(gates={"TopologyAwareWorkloadScheduling": False})
    await c.start(racked(4, 2, cpu="2"))
    await c.client.create(tas_group("g", 4))
    assert "schedulingConstraints" not in c.podgroup("g")["spec"]
    for i in range(4):
        await c.client.create(pod(f"p{i}", cpu="2", group="g"))  # needs both racks
    assert await c.run_until(lambda: len(c.bound()) == 4)
    assert {rack_of(c, n) for n in c.bound().values()} == {"node-rack-0", "node-rack-1"}
    assert c.scheduler.stats["placements_tried"] == c.scheduler.stats["group_attempts"] == 1
    await c.stop()


async def test_shared_network_attached_claim_and_its_gang_land_in_the_same_rack(cluster_factory):
    """Topology with DRA: a PodGroup claim on a per-rack network-attached pool (slice nodeSelector)
    is allocated from the rack its gang is placed in; a rack without a reachable device is not a
    feasible placement even when the packing score prefers it."""
    from phalanx.client import InProcessClient
    from phalanx.controllers.resourceclaim import ResourceClaimController
    from phalanx.dra import testing as d

    def claims_controller(cl):
        return ResourceClaimController(InProcessClient(cl.api, clock=cl.clock), cl.factory, gates=cl.gates,
                                       clock=cl.clock)

    c = await cluster_factory().start(racked(4, 2), extra=(claims_controller,))
    await c.client.create(d.device_class())
    # only rack-1 has a fabric device reachable from its nodes
    await c.client.create(d.device_slice("fabric-rack-1", [d.dev("fabric-0")], pool="fabric-rack-1",
                                         node_selector=d.labels_selector(**{RACK: "node-rack-1"})))
    await c.client.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                           "metadata": {"name": "fabric", "namespace": "default"},
                           "spec": {"spec": {"devices": {"requests": [d.request("fabric")]}}}})
    # a small pod makes rack-0 the tighter (preferred) domain for packing
    await c.client.create(pod("filler", cpu="1", nodeName="node-0"))
    pg = tas_group("g", 4)
    pg["spec"]["resourceClaims"] = [{"name": "net", "resourceClaimTemplateName": "fabric"}]
    await c.client.create(pg)
    for i in range(4):
        p = pod(f"g-{i}", cpu="1", group="g")
        p["spec"]["resourceClaims"] = [{"name": "net", "resourceClaimTemplateName": "fabric"}]
        p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "net"}]
        await c.client.create(p)
    assert await c.run_until(lambda: len([n for n in c.bound() if n.startswith("g-")]) == 4, within=60)
    racks = {rack_of(c, node) for name, node in c.bound().items() if name.startswith("g-")}
    assert racks == {"node-rack-1"}
    claim = next(cl for cl in c.api.list(c.api.resource("resource.k8s.io", "v1", "resourceclaims"), "default")["items"])
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("fabric-rack-1", "fabric-0")]
    assert claim["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                               "name": "g", "uid": c.podgroup("g")["metadata"]["uid"]}]
    await c.stop()
