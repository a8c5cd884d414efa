"""The Metrics API (`metrics.k8s.io/v1beta1`) as `kubectl top` reads it: discovery, NodeMetrics and
PodMetrics from requests or the usage annotations, selectors, NotFound and read-only verbs."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from aiohttp.test_utils import TestClient, TestServer

from phalanx.apiserver import build_api
from phalanx.apiserver.server import Server
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
METRICS = "/apis/metrics.k8s.io/v1beta1"


def pod(name: str, node: str, phase: str = "Running", annotations: dict | None = None, **requests: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name}, "annotations": annotations or {}},
            "spec": {"nodeName": node, "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": requests}},
                {"name": "side", "image": "busybox"}]},
            "status": {"phase": phase}}


@asynccontextmanager
async def http() -> AsyncIterator[TestClient]:
    api = build_api(MemoryStore(), FeatureGates.from_config({}))
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    nodes = api.resource("", "v1", "nodes")
    api.create(nodes, "", {"metadata": {"name": "n1", "labels": {"zone": "a"}}})
    api.create(nodes, "", {"metadata": {"name": "n2", "annotations": {"phalanx.dev/usage-cpu": "3",
                                                                       "phalanx.dev/usage-memory": "1Gi"}}})
    pods = api.resource("", "v1", "pods")
    for p in (pod("web", "n1", cpu="250m", memory="64Mi"),
              pod("busy", "n1", annotations={"phalanx.dev/usage-cpu": "1", "phalanx.dev/usage-memory": "1Mi"}),
              pod("done", "n1", phase="Succeeded", cpu="4")):
        created = api.create(pods, "default", {k: v for k, v in p.items() if k != "status"})
        api.update(pods, "default", p["metadata"]["name"], {**created, "status": p["status"]}, subresource="status")
    async with TestClient(TestServer(Server(api, TOKEN).app())) as client:
        yield client


async def get(c: TestClient, path: str, **headers: str):
    r = await c.get(path, headers={**AUTH, **headers})
    return r.status, await r.json()


async def test_discovery_lists_the_group_read_only():
    async with http() as c:
        status, doc = await get(c, METRICS)
        assert status == 200
        assert {r["name"]: (r["kind"], r["namespaced"], r["verbs"]) for r in doc["resources"]} == {
            "nodes": ("NodeMetrics", False, ["get", "list"]), "pods": ("PodMetrics", True, ["get", "list"])}


async def test_pod_metrics_come_from_requests_or_annotations():
    async with http() as c:
        status, lst = await get(c, f"{METRICS}/namespaces/default/pods")
        assert status == 200 and lst["kind"] == "PodMetricsList"
        by_name = {m["metadata"]["name"]: m for m in lst["items"]}
        assert set(by_name) == {"web", "busy"}  # a finished pod has no metrics
        assert by_name["web"]["containers"] == [
            {"name": "main", "usage": {"cpu": "250000000n", "memory": "65536Ki"}},
            {"name": "side", "usage": {"cpu": "0n", "memory": "0Ki"}}]
        assert [c["usage"]["cpu"] for c in by_name["busy"]["containers"]] == ["1000000000n", "1000000000n"]
        status, one = await get(c, f"{METRICS}/namespaces/default/pods/web")
        assert status == 200 and one["kind"] == "PodMetrics" and one["window"] == "10s"
        status, lst = await get(c, f"{METRICS}/pods?labelSelector=app%3Dbusy")
        assert [m["metadata"]["name"] for m in lst["items"]] == ["busy"]


async def test_node_metrics_sum_the_running_pods_unless_annotated():
    async with http() as c:
        status, lst = await get(c, f"{METRICS}/nodes")
        assert status == 200 and lst["kind"] == "NodeMetricsList"
        usage = {m["metadata"]["name"]: m["usage"] for m in lst["items"]}
        assert usage == {"n1": {"cpu": "2250000000n", "memory": "67584Ki"},
                         "n2": {"cpu": "3000000000n", "memory": "1048576Ki"}}
        status, table = await get(c, f"{METRICS}/nodes?labelSelector=zone%3Da",
                                  Accept="application/json;as=Table;v=v1;g=meta.k8s.io")
        assert [col["name"] for col in table["columnDefinitions"]] == ["Name", "CPU", "Memory", "Window"]
        assert [r["cells"][0] for r in table["rows"]] == ["n1"]


async def test_missing_metrics_and_writes_are_refused_as_metrics_server_does():
    async with http() as c:
        status, body = await get(c, f"{METRICS}/namespaces/default/pods/done")
        assert (status, body["message"]) == (404, 'podmetrics.metrics.k8s.io "default/done" not found')
        status, body = await get(c, f"{METRICS}/nodes/n9")
        assert (status, body["message"]) == (404, 'nodemetrics.metrics.k8s.io "n9" not found')
        r = await c.delete(f"{METRICS}/nodes/n1", headers=AUTH)
        assert r.status == 405
        r = await c.get(f"{METRICS}/nodes?watch=1", headers=AUTH)
        assert r.status == 405
        r = await c.get("/openapi/v3/apis/metrics.k8s.io/v1beta1", headers=AUTH)
        assert r.status == 200
