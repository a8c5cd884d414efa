"""The dashboard's HTTP side against a real in-process API: the one-time login token and the
session cookie, the Host check, the JSON document, the live stream and `/api/explain`."""

from __future__ import annotations

import asyncio
import contextlib

import orjson
from aiohttp import CookieJar
from aiohttp.test_utils import TestClient, TestServer

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient
from phalanx.dashboard import Auth, Dashboard, build_app
from phalanx.dashboard.scrape import SchedulerMetrics
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

GATES = {"1.36": {"GenericWorkload": True, "GangScheduling": True, "DRAWorkloadResourceClaims": True},
         "1.37": {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}}


def node(name):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}


@contextlib.asynccontextmanager
async def dashboard(release="1.36", hosts=None, metrics=None):
    """A dashboard over a fresh API holding node w1, and an HTTP client for it with a cookie jar."""
    api = build_api(MemoryStore(), FeatureGates.from_config(GATES[release], release=release))
    client = InProcessClient(api, field_manager="unit-test")
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    await client.create(node("w1"))
    dash = Dashboard(client, debounce=0, metrics=metrics)
    await dash.start()
    auth = Auth("login-token")
    http = TestClient(TestServer(build_app(dash, auth, allowed_hosts=hosts)), cookie_jar=CookieJar(unsafe=True))
    await http.start_server()
    try:
        yield http, client, dash
    finally:
        await http.close()
        await dash.stop()


async def login(http):
    resp = await http.get("/?token=login-token", allow_redirects=False)
    assert resp.status == 302 and "token" not in resp.headers["Location"]
    return resp


async def test_every_path_needs_the_login_first():
    async with dashboard() as (http, _, _):
        for path in ("/", "/static/app.js", "/api/state", "/api/stream", "/api/explain?name=x"):
            resp = await http.get(path)
            assert resp.status == 401, path
        resp = await http.get("/?token=wrong", allow_redirects=False)
        assert resp.status == 401


async def test_the_login_token_opens_a_session_once():
    async with dashboard() as (http, _, _):
        resp = await login(http)
        cookie = resp.cookies["phalanx_dashboard"]
        assert cookie["httponly"] and cookie["samesite"] == "Strict"
        page = await http.get("/")
        assert page.status == 200 and "<canvas" in await page.text()
        assert (await http.get("/static/app.js")).headers["Content-Type"].startswith("text/javascript")
        # The token is spent: a second use (another browser, a leaked URL) is refused.
        http.session.cookie_jar.clear()
        again = await http.get("/?token=login-token", allow_redirects=False)
        assert again.status == 401
        assert (await http.get("/api/state")).status == 401


async def test_a_foreign_host_header_is_refused():
    async with dashboard(hosts={"127.0.0.1:1"}) as (http, _, _):
        resp = await http.get("/?token=login-token", allow_redirects=False)
        assert resp.status == 403


async def test_state_is_the_cluster_document_with_the_pod_group_version_discovery_found():
    for release, version in (("1.36", "scheduling.k8s.io/v1alpha2"), ("1.37", "scheduling.k8s.io/v1beta1")):
        async with dashboard(release) as (http, _, _):
            await login(http)
            doc = await (await http.get("/api/state")).json()
            assert doc["podGroupAPI"] == version
            assert [n["name"] for n in doc["nodes"]] == ["w1"]


async def _frames(resp):
    """The stream's messages as (event, data) pairs."""
    while True:
        frame = await resp.content.readuntil(b"\n\n")
        event, data = frame.decode().strip().split("\n")
        yield event.removeprefix("event: "), orjson.loads(data.removeprefix("data: "))


async def test_the_stream_sends_the_document_once_then_patches_of_what_changed():
    async with dashboard() as (http, client, _):
        await login(http)
        resp = await http.get("/api/stream")
        assert resp.headers["Content-Type"] == "text/event-stream"
        frames = _frames(resp)
        event, first = await anext(frames)
        assert event == "snapshot" and [n["name"] for n in first["nodes"]] == ["w1"]
        await client.create(node("w2"))
        event, patch = await anext(frames)
        while "w2" not in [n["name"] for n in patch["set"].get("nodes", [])]:  # other rows may come first
            event, patch = await anext(frames)
        assert event == "patch" and patch["generation"] > first["generation"]
        # Only the new node's row travels, not w1's.
        assert [n["name"] for n in patch["set"]["nodes"]] == ["w2"]
        await client.delete("v1", "Node", None, "w1")
        event, patch = await anext(frames)
        while "w1" not in patch["delete"].get("nodes", []):
            event, patch = await anext(frames)
        assert event == "patch"
        resp.close()


async def test_a_page_that_fell_behind_the_kept_patches_gets_a_new_snapshot():
    async with dashboard() as (_, client, dash):
        start = dash.generation
        for i in range(3):
            await client.create(node(f"extra-{i}"))
            await asyncio.sleep(0)
            dash._flush()
        assert dash.patches_after(start) is not None and len(dash.patches_after(start)) == 3
        dash.patches.clear()
        assert dash.patches_after(start) is None  # the page must start again from a snapshot
        assert dash.patches_after(dash.generation) == []


async def test_pod_lookup_gives_the_node_of_a_pod():
    async with dashboard() as (http, client, dash):
        await login(http)
        await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                             "spec": {"nodeName": "w1", "containers": [{"name": "c", "image": "busybox"}]}})
        for _ in range(100):
            if "default/p" in dash.view.objects["Pod"]:
                break
            await asyncio.sleep(0.01)
        body = await (await http.get("/api/pod?namespace=default&name=p")).json()
        assert body["nodes"] == ["w1"]
        assert (await http.get("/api/pod?namespace=default&name=nope")).status == 404


EXPOSITION = """\
# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 3.0
scheduler_pending_pods{queue="unschedulable"} 1.0
"""


async def test_metrics_are_scraped_when_the_page_asks_and_no_more_often_than_the_interval():
    async def scrape():
        return EXPOSITION
    async with dashboard(metrics=SchedulerMetrics(scrape)) as (http, _, dash):
        await login(http)
        assert dash.metrics.scrapes == 0  # nothing is scraped while no page has the view open
        body = await (await http.get("/api/metrics")).json()
        assert dash.metrics.scrapes == 1 and body["error"] is None
        assert body["available"] and len(body["points"]) == 1
        assert body["points"][0]["pending"] == {"active": 3.0, "unschedulable": 1.0}
        await http.get("/api/metrics")
        assert dash.metrics.scrapes == 1  # within the interval: the last scrape is served again


async def test_explain_gives_what_phalanx_explain_prints():
    async with dashboard() as (http, client, _):
        await login(http)
        await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        body = await (await http.get("/api/explain?kind=pod&namespace=default&name=p")).json()
        assert body["text"].startswith("Pod default/p")
        assert "no scheduling decision recorded yet" in body["text"]
        assert body["nodes"] == []  # the nodes the diagnosis names, for the map
        missing = await http.get("/api/explain?kind=podgroup&namespace=default&name=nope")
        assert missing.status == 404
        assert (await http.get("/api/explain?kind=node&name=w1")).status == 400
