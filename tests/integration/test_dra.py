"""DRA on an in-process cluster: the scheduler's DynamicResources plugin with the ResourceClaim
controller, a DeviceClass and ResourceSlices made by the test (dra-example-driver's shape)."""

from __future__ import annotations

from phalanx.client import InProcessClient
from phalanx.dra import testing as d

from .conftest import nodes, pod, podgroup

TEMPLATE = "gpu-claim-template"
GPU_CLASS = d.DRIVER


def claim_controller(c):
    from phalanx.controllers.resourceclaim import ResourceClaimController
    return ResourceClaimController(InProcessClient(c.api, clock=c.clock, field_manager="resourceclaim"), c.factory,
                                   gates=c.gates, clock=c.clock)


async def start(cluster_factory, n: int = 2, gpus: int = 2, cpu: str = "8", slices: bool = True, **labels):
    c = await cluster_factory().start(nodes(n, cpu=cpu, **labels), extra=(claim_controller,))
    await c.client.create(d.device_class())
    if slices:
        for i in range(n):
            await c.client.create(d.gpu_slice(f"node-{i}", gpus))
    return c


def template(name: str = TEMPLATE, **request_kw) -> dict:
    req = d.request("gpu", **request_kw)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [req]}}}}


def gpu_pod(name: str, entry: str = "gpu", *, template_name: str | None = TEMPLATE, claim_name: str | None = None,
            group: str | None = None, cpu: str = "100m") -> dict:
    p = pod(name, cpu=cpu, group=group)
    source = {"resourceClaimName": claim_name} if claim_name else {"resourceClaimTemplateName": template_name}
    p["spec"]["resourceClaims"] = [{"name": entry, **source}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": entry}]
    return p


def claims(c) -> list[dict]:
    return c.api.list(c.api.resource("resource.k8s.io", "v1", "resourceclaims"), "default")["items"]


def devices(claim: dict) -> list[str]:
    return [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]


def allocated_node(claim: dict) -> str:
    return claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]


def failed_scheduling(c, name: str) -> list[str]:
    return [e["message"] for e in c.events(name) if e["reason"] == "FailedScheduling"]


async def test_template_claim_gets_gpu_0_and_is_reserved_for_the_pod(cluster_factory):
    c = await start(cluster_factory)
    await c.client.create(template())
    await c.client.create(gpu_pod("p"))
    assert await c.run_until(lambda: c.running() == ["p"])
    (claim,) = claims(c)
    p = c.pod("p")
    assert claim["metadata"]["name"] == p["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert devices(claim) == ["gpu-0"]
    assert allocated_node(claim) == p["spec"]["nodeName"]
    assert claim["status"]["allocation"]["allocationTimestamp"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": p["metadata"]["uid"]}]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    await c.stop()


async def test_two_pods_get_distinct_gpus(cluster_factory):
    c = await start(cluster_factory, n=1, gpus=2)
    await c.client.create(template())
    for name in ("a", "b"):
        await c.client.create(gpu_pod(name))
    assert await c.run_until(lambda: len(c.running()) == 2)
    assert sorted(dev for cl in claims(c) for dev in devices(cl)) == ["gpu-0", "gpu-1"]
    # a third pod finds no free GPU and says why
    await c.client.create(gpu_pod("c"))
    await c.settle(5)
    assert "c" not in c.bound()
    msg = failed_scheduling(c, "c")[-1]
    assert msg.startswith("0/1 nodes are available: 1 cannot allocate all claims, 1 claim default/c-gpu-")
    assert "request gpu: not enough devices: 1 requested, 0 available (2 in use). still not schedulable" in msg
    await c.stop()


async def test_shared_claim_gets_one_allocation_and_a_reservation_per_pod(cluster_factory):
    c = await start(cluster_factory)
    await c.client.create(d.claim("shared", d.request("gpu")))
    for name in ("a", "b"):
        await c.client.create(gpu_pod(name, claim_name="shared"))
    assert await c.run_until(lambda: len(c.running()) == 2)
    (claim,) = claims(c)
    assert devices(claim) == ["gpu-0"]
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["a", "b"]
    assert set(c.bound().values()) == {allocated_node(claim)}
    await c.stop()


async def test_pod_waits_for_a_claim_created_later(cluster_factory):
    c = await start(cluster_factory)
    await c.client.create(gpu_pod("p", claim_name="later"))
    await c.settle(3)
    assert c.bound() == {}
    gated = c.scheduler.queue.gated
    assert [q.gating_plugin for q in gated.values()] == ["DynamicResources"]
    await c.client.create(d.claim("later", d.request("gpu")))
    assert await c.run_until(lambda: c.bound() != {})
    await c.stop()


async def test_gang_of_six_shares_the_pod_group_claim_on_the_node_of_its_gpu(cluster_factory):
    c = await start(cluster_factory, n=4, gpus=8)
    await c.client.create(template())
    pg = podgroup("training-workers", 6, resourceClaims=[{"name": "shared-gpu", "resourceClaimTemplateName": TEMPLATE}])
    await c.client.create(pg)
    for i in range(6):
        await c.client.create(gpu_pod(f"w{i}", "shared-gpu", group="training-workers"))
    assert await c.run_until(lambda: len(c.running()) == 6)
    (claim,) = claims(c)
    assert claim["metadata"]["name"].startswith("training-workers-shared-gpu-")
    group = c.podgroup("training-workers")
    assert claim["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                               "name": "training-workers", "uid": group["metadata"]["uid"]}]
    assert devices(claim) == ["gpu-0"]
    assert set(c.bound().values()) == {allocated_node(claim)}
    assert c.scheduler.stats["group_attempts"] == 1
    cond = next(x for x in group["status"]["conditions"] if x["type"] == "PodGroupScheduled")
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled")
    # a late member joins on the same node; the reservation stays the PodGroup's alone
    await c.client.create(gpu_pod("w6", "shared-gpu", group="training-workers"))
    assert await c.run_until(lambda: "w6" in c.running())
    (after,) = claims(c)
    assert after["status"]["reservedFor"] == claim["status"]["reservedFor"]
    assert c.bound()["w6"] == allocated_node(claim)
    await c.stop()


async def test_three_hundred_pods_share_one_pod_group_claim(cluster_factory):
    c = await start(cluster_factory, n=4, slices=False)
    fabric = d.device_slice("fabric", [d.dev("link-0")], pool="fabric", all_nodes=True)
    await c.client.create(fabric)
    await c.client.create(template())
    pg = podgroup("big", 300, resourceClaims=[{"name": "shared-gpu", "resourceClaimTemplateName": TEMPLATE}])
    await c.client.create(pg)
    for i in range(300):
        await c.client.create(gpu_pod(f"w{i:03d}", "shared-gpu", group="big", cpu="10m"))
    assert await c.run_until(lambda: len(c.bound()) == 300, within=120)
    (claim,) = claims(c)
    assert [r["resource"] for r in claim["status"]["reservedFor"]] == ["podgroups"]
    assert devices(claim) == ["link-0"]
    assert "nodeSelector" not in claim["status"]["allocation"]  # a device every node reaches
    assert len(set(c.bound().values())) > 1
    await c.stop()


async def test_claim_for_more_devices_than_exist_stays_pending_and_unallocated(cluster_factory):
    c = await start(cluster_factory, n=2, gpus=2)
    await c.client.create(template(count=3))
    await c.client.create(gpu_pod("p"))
    await c.settle(5)
    assert c.bound() == {}
    msg = failed_scheduling(c, "p")[-1]
    assert msg.startswith("0/2 nodes are available: 2 cannot allocate all claims, 2 claim default/p-gpu-")
    assert "request gpu: not enough devices: 3 requested, 2 available. still not schedulable" in msg
    assert all(not (cl.get("status") or {}).get("allocation") for cl in claims(c))
    cond = next(x for x in c.pod("p")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert c.scheduler.stats["attempts"] <= 2  # unresolvable: no retry loop without a cluster change
    await c.stop()


async def test_bad_cel_selector_stays_pending_and_quotes_the_expression(cluster_factory):
    c = await start(cluster_factory)
    expr = 'device.attributes["gpu.example.com"].memory > 3'
    await c.client.create(template(selectors=[expr]))
    await c.client.create(gpu_pod("p"))
    await c.settle(5)
    assert c.bound() == {}
    msg = failed_scheduling(c, "p")[-1]
    assert "CEL runtime error: no such key: memory" in msg
    assert f"expression: '{expr}'" in msg
    assert all(not (cl.get("status") or {}).get("allocation") for cl in claims(c))
    await c.stop()
