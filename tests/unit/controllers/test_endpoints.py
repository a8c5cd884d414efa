"""The endpoints and EndpointSlice controllers with a Deployment's pods on simulated kubelets, on
virtual time against the real API: ready and not-ready addresses, named target ports, slices
owned by the Service, and updates when pods come and go."""

from __future__ import annotations

from phalanx.controllers.deployment import DeploymentController
from phalanx.controllers import endpoints as endpoints_module
from phalanx.controllers.endpoints import OVER_CAPACITY_ANNOTATION, EndpointsController, truncate_subsets
from phalanx.controllers import endpointslice as endpointslice_module
from phalanx.controllers.endpointslice import MANAGED_BY, SERVICE_NAME_LABEL, EndpointSliceController
from phalanx.controllers.replicaset import ReplicaSetController

from .harness import ControllerCluster


class Cluster(ControllerCluster):
    def make_controllers(self, env, factory, **kw):
        self.endpoints = EndpointsController(env.client, factory, **kw)
        self.slices = EndpointSliceController(env.client, factory, **kw)
        return [self.endpoints, self.slices, DeploymentController(env.client, factory, **kw),
                ReplicaSetController(env.client, factory, **kw)]

    def ep(self, name="web"):
        return self.endpoints.endpoints.get(f"default/{name}")

    def ready_ips(self):
        return sorted(p["status"]["podIP"] for p in self.endpoints.pods.list("default")
                      if not p["metadata"].get("deletionTimestamp")
                      and any(c["type"] == "Ready" and c["status"] == "True"
                              for c in p.get("status", {}).get("conditions", [])))

    def addresses(self, field="addresses"):
        return sorted(a["ip"] for s in (self.ep() or {}).get("subsets") or [] for a in s.get(field) or [])

    def service_slices(self, name="web"):
        return [s for s in self.slices.slices.list("default")
                if s["metadata"].get("labels", {}).get(SERVICE_NAME_LABEL) == name]


def deployment(replicas=3, labels=None):
    labels = labels or {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx",
                                                           "ports": [{"name": "http", "containerPort": 8080}]}]}}}}


def service(name="web", selector=None, target="http"):
    spec = {"ports": [{"name": "web", "port": 80, "targetPort": target}]}
    if selector is not False:
        spec["selector"] = selector or {"app": "web"}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def test_endpoints_list_the_ready_pods_ips_on_the_named_target_port(env):
    async with Cluster(env) as cl:
        await env.client.create(service())
        await env.client.create(deployment())
        assert await env.run_until(lambda: len(cl.ready_ips()) == 3 and cl.addresses() == cl.ready_ips())
        subset = cl.ep()["subsets"][0]
        assert subset["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
        addr = subset["addresses"][0]
        assert addr["targetRef"]["kind"] == "Pod" and addr["nodeName"]
        assert cl.ep()["metadata"]["labels"]["endpoints.kubernetes.io/managed-by"] == "endpoint-controller"


async def test_slices_carry_ready_conditions_and_belong_to_the_service(env):
    async with Cluster(env) as cl:
        svc = await env.client.create(service())
        await env.client.create(deployment())
        assert await env.run_until(lambda: len(cl.ready_ips()) == 3 and len(cl.service_slices()) == 1
                                   and sorted(a for e in cl.service_slices()[0]["endpoints"] for a in e["addresses"])
                                   == cl.ready_ips())
        s = cl.service_slices()[0]
        assert s["addressType"] == "IPv4"
        assert s["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
        assert s["metadata"]["name"].startswith("web-")
        assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == MANAGED_BY
        assert s["metadata"]["ownerReferences"][0]["uid"] == svc["metadata"]["uid"]
        assert all(e["conditions"] == {"ready": True, "serving": True, "terminating": False} for e in s["endpoints"])


async def test_scaling_down_removes_addresses(env):
    async with Cluster(env) as cl:
        await env.client.create(service())
        d = await env.client.create(deployment())
        assert await env.run_until(lambda: len(cl.addresses()) == 3)
        d = await env.client.get("apps/v1", "Deployment", "default", "web")
        d["spec"]["replicas"] = 1
        await env.client.update(d)
        assert await env.run_until(lambda: len(cl.addresses()) == 1 and cl.addresses() == cl.ready_ips())
        assert await env.run_until(lambda: len(cl.service_slices()[0]["endpoints"]) == 1)


async def test_a_service_selecting_nothing_has_empty_endpoints_and_a_placeholder_slice(env):
    async with Cluster(env) as cl:
        await env.client.create(service(selector={"app": "none"}))
        assert await env.run_until(lambda: cl.ep() is not None and len(cl.service_slices()) == 1)
        assert "subsets" not in cl.ep()
        assert cl.service_slices()[0]["endpoints"] == [] and cl.service_slices()[0]["ports"] == []


async def test_a_service_without_selector_is_left_alone_and_deleted_services_lose_endpoints(env):
    async with Cluster(env) as cl:
        await env.client.create(service(name="manual", selector=False))
        await env.client.create(service())
        assert await env.run_until(lambda: cl.ep() is not None)
        assert not await env.run_until(lambda: cl.ep("manual") is not None, within=5)
        await env.client.delete("v1", "Service", "default", "web")
        assert await env.run_until(lambda: cl.ep() is None)


# -- over capacity (upstream's truncateEndpoints) -------------------------------------------------------

def _addrs(prefix, n):
    return [{"ip": f"10.0.{prefix}.{i}"} for i in range(n)]


def test_truncation_keeps_ready_addresses_first_and_shares_them_out_by_subset_size():
    subsets = [{"addresses": _addrs(1, 6), "notReadyAddresses": _addrs(2, 2), "ports": [{"port": 1}]},
               {"addresses": _addrs(3, 3), "ports": [{"port": 2}]}]
    out, cut = truncate_subsets(subsets, capacity=6)
    assert cut
    # ceil(6/9*6) = 4 from the first subset, the 2 left from the second; no not-ready address stays
    assert out == [{"addresses": _addrs(1, 4), "ports": [{"port": 1}]},
                   {"addresses": _addrs(3, 2), "ports": [{"port": 2}]}]
    assert len(subsets[0]["addresses"]) == 6  # the input is not changed


def test_truncation_cuts_only_not_ready_addresses_while_the_ready_ones_fit():
    subsets = [{"addresses": _addrs(1, 3), "notReadyAddresses": _addrs(2, 4)},
               {"notReadyAddresses": _addrs(3, 4)}]
    out, cut = truncate_subsets(subsets, capacity=5)
    assert cut
    assert out == [{"addresses": _addrs(1, 3), "notReadyAddresses": _addrs(2, 1)},
                   {"notReadyAddresses": _addrs(3, 1)}]
    assert truncate_subsets(subsets, capacity=11) == (subsets, False)


async def test_an_endpoints_over_capacity_is_truncated_and_annotated_until_it_fits_again(env, monkeypatch):
    monkeypatch.setattr(endpoints_module, "MAX_CAPACITY", 2)
    async with Cluster(env) as cl:
        await env.client.create(service())
        await env.client.create(deployment(replicas=3))
        assert await env.run_until(lambda: len(cl.ready_ips()) == 3 and len(cl.addresses()) == 2)
        ep = cl.ep()
        assert ep["metadata"]["annotations"] == {OVER_CAPACITY_ANNOTATION: "truncated"}
        assert set(cl.addresses()) <= set(cl.ready_ips())
        # the slices are not limited
        assert await env.run_until(lambda: sum(len(s["endpoints"]) for s in cl.service_slices()) == 3)
        d = await env.client.get("apps/v1", "Deployment", "default", "web")
        d["spec"]["replicas"] = 2
        await env.client.update(d)
        assert await env.run_until(lambda: cl.addresses() == cl.ready_ips() and len(cl.ready_ips()) == 2
                                   and not (cl.ep()["metadata"].get("annotations") or {}))


async def test_a_pod_relabelled_out_of_the_selector_leaves_endpoints_and_slices(env):
    async with Cluster(env) as cl:
        await env.client.create(service())
        await env.client.create(deployment(replicas=2))
        assert await env.run_until(lambda: len(cl.addresses()) == 2
                                   and sum(len(s["endpoints"]) for s in cl.service_slices()) == 2)
        pod = sorted(cl.endpoints.pods.list("default"), key=lambda p: p["metadata"]["name"])[0]
        await env.client.patch("v1", "Pod", "default", pod["metadata"]["name"],
                               {"metadata": {"labels": {"app": "other"}}})
        # the ReplicaSet replaces it; the relabelled pod's address goes from both
        gone = pod["status"]["podIP"]
        assert await env.run_until(lambda: gone not in cl.addresses() and len(cl.addresses()) == 2
                                   and all(gone not in e["addresses"] for s in cl.service_slices()
                                           for e in s["endpoints"]))


async def test_an_endpoint_takes_its_nodes_zone_also_when_the_zone_changes(env):
    async with Cluster(env) as cl:
        await env.client.create(service())
        await env.client.create(deployment(replicas=1))
        assert await env.run_until(lambda: sum(len(s["endpoints"]) for s in cl.service_slices()) == 1)
        node = cl.service_slices()[0]["endpoints"][0]["nodeName"]
        assert "zone" not in cl.service_slices()[0]["endpoints"][0]
        await env.client.patch("v1", "Node", None, node,
                               {"metadata": {"labels": {"topology.kubernetes.io/zone": "zone-b"}}})
        # the next sync of the Service (any pod event) picks it up
        await env.client.create(deployment(replicas=1) | {"metadata": {"name": "web2", "namespace": "default"}})
        assert await env.run_until(lambda: any(e.get("zone") == "zone-b" and e.get("nodeName") == node
                                               for s in cl.service_slices() for e in s["endpoints"]))


async def test_a_new_pod_fills_a_slice_with_room_and_leaves_the_full_ones_alone(env, monkeypatch):
    monkeypatch.setattr(endpointslice_module, "MAX_ENDPOINTS_PER_SLICE", 2)

    def endpoints():
        return sorted(e["targetRef"]["name"] for s in cl.service_slices() for e in s["endpoints"])

    async def scale(n):
        d = await env.client.get("apps/v1", "Deployment", "default", "web")
        d["spec"]["replicas"] = n
        await env.client.update(d)

    async with Cluster(env) as cl:
        await env.client.create(service())
        await env.client.create(deployment(replicas=4))
        assert await env.run_until(lambda: len(endpoints()) == 4 and len(cl.service_slices()) == 2)
        before = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in cl.service_slices()}
        await scale(5)
        assert await env.run_until(lambda: len(endpoints()) == 5 and len(cl.service_slices()) == 3)
        after = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in cl.service_slices()}
        assert {n: after[n] for n in before} == before  # the two full slices were not written
        await scale(1)
        assert await env.run_until(lambda: len(endpoints()) == 1 and len(cl.service_slices()) == 1)
        assert endpoints() == sorted(p["metadata"]["name"] for p in cl.endpoints.pods.list("default")
                                     if not p["metadata"].get("deletionTimestamp"))
