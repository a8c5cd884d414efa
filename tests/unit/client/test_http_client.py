"""HTTPClient against the real aiohttp app (`build_app`) on a loopback port: the same contract as
the in-process client, kubeconfig loading (token, TLS with certificate-authority-data), and the
informer's relist-on-410 scenario over HTTP."""

from __future__ import annotations

import asyncio
import base64
import contextlib

import pytest
from aiohttp import web

from phalanx.apiserver.server import build_app
from phalanx.client import InformerFactory, VirtualClock
from phalanx.client.http import HTTPClient, status_error_from
from phalanx.machinery.errors import StatusError

TOKEN = "s3cr3t-token"


def configmap(name, namespace="default", **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


@contextlib.asynccontextmanager
async def serving(api, ssl_context=None):
    runner = web.AppRunner(build_app(api, TOKEN))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        api.store.close()  # end open watch handlers now rather than at their next 5 s wake-up
        await runner.cleanup()


def write_kubeconfig(path, server, token, ca_pem=None):
    cluster = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    import yaml
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": cluster}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))


class SignallingClock(VirtualClock):
    """Virtual time that tells the test when someone starts sleeping (here: the informer's backoff)."""

    def __init__(self):
        super().__init__()
        self.sleeping = asyncio.Event()

    async def sleep(self, seconds):
        self.sleeping.set()
        await super().sleep(seconds)


async def test_crud_and_errors_over_http(env, tmp_path):
    await env.namespace("default")
    async with serving(env.api) as port:
        kc = tmp_path / "kubeconfig"
        write_kubeconfig(kc, f"http://127.0.0.1:{port}", TOKEN)
        c = HTTPClient.from_kubeconfig(str(kc), field_manager="http-test")
        try:
            created = await c.create(configmap("a", k="v"))
            assert created["metadata"]["uid"]
            got = await c.get("v1", "configmaps", "default", "a")
            got["data"]["k"] = "w"
            updated = await c.update(got)
            assert updated["data"] == {"k": "w"}
            items, rv = await c.list("v1", "ConfigMap", "default")
            assert [i["metadata"]["name"] for i in items] == ["a"] and int(rv) >= int(updated["metadata"]["resourceVersion"])
            with pytest.raises(StatusError) as e:
                await c.get("v1", "ConfigMap", "default", "missing")
            assert (e.value.code, e.value.reason, e.value.message) == (404, "NotFound", 'configmaps "missing" not found')
            with pytest.raises(StatusError) as e:
                await c.create(configmap("a"))
            assert e.value.reason == "AlreadyExists"
            with pytest.raises(StatusError) as e:
                await c.get("v1", "Widget", "default", "x")
            assert e.value.message == 'no matches for kind "Widget" in version "v1"'
            pod = await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
            await c.bind("default", "p", "node-1", uid=pod["metadata"]["uid"])
            assert (await c.get("v1", "Pod", "default", "p"))["spec"]["nodeName"] == "node-1"
            deleted = await c.delete("v1", "ConfigMap", "default", "a", propagation="Background")
            assert (deleted["kind"], deleted["status"], deleted["details"]["name"]) == ("Status", "Success", "a")
            served = {(r.group, r.plural) for r in await c.served_resources()}
            assert {("", "pods"), ("", "namespaces")} <= served
            ev = await c.create_event(pod, "Scheduled", "Successfully assigned default/p to node-1",
                                      component="default-scheduler")
            again = await c.create_event(pod, "Scheduled", "Successfully assigned default/p to node-1",
                                         component="default-scheduler")
            assert again["metadata"]["name"] == ev["metadata"]["name"] and again["count"] == 2
        finally:
            await c.close()
        bad = HTTPClient(f"http://127.0.0.1:{port}", token="wrong")
        try:
            with pytest.raises(StatusError) as e:
                await bad.get("v1", "ConfigMap", "default", "a")
            assert (e.value.code, e.value.reason) == (401, "Unauthorized")
        finally:
            await bad.close()


async def test_tls_with_the_kubeconfigs_certificate_authority(env, tmp_path):
    pki = pytest.importorskip("phalanx.cluster.pki")
    import ssl
    p = pki.ensure_pki(tmp_path / "state", cluster_name="t", listen_address="127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(p.server_cert_file), str(p.server_key_file))
    await env.namespace("default")
    async with serving(env.api, server_ctx) as port:
        kc = tmp_path / "kubeconfig"
        write_kubeconfig(kc, f"https://127.0.0.1:{port}", TOKEN, ca_pem=p.ca_cert_pem)
        c = HTTPClient.from_kubeconfig(str(kc))
        try:
            ns = await c.get("v1", "Namespace", None, "default")
            assert ns["metadata"]["name"] == "default"
        finally:
            await c.close()
        # Without the cluster's CA the server is not trusted.
        untrusted = HTTPClient(f"https://127.0.0.1:{port}", token=TOKEN)
        try:
            with pytest.raises(StatusError) as e:
                await untrusted.get("v1", "Namespace", None, "default")
            assert e.value.code == 503 and "certificate" in e.value.message.lower()
        finally:
            await untrusted.close()


async def test_informer_relists_after_410_over_http(make_env):
    env = make_env(history=5)
    await env.namespace("default")
    for name in ("keep", "change", "remove"):
        await env.client.create(configmap(name))
    clock = SignallingClock()
    async with serving(env.api) as port:
        c = HTTPClient(f"http://127.0.0.1:{port}", token=TOKEN, clock=clock)
        factory = InformerFactory(c, clock=clock)
        inf = factory.informer("v1", "ConfigMap")
        seen: list[tuple[str, str]] = []
        caught_up = asyncio.Event()
        later = asyncio.Event()

        def note(kind, obj):
            seen.append((kind, obj["metadata"]["name"]))
            if len(seen) == 8:
                caught_up.set()
            if obj["metadata"]["name"] == "later":
                later.set()

        marker = asyncio.Event()
        inf.add_event_handler(on_add=lambda o: o["metadata"]["name"] == "marker" and marker.set())
        factory.start()
        await asyncio.wait_for(factory.wait_for_sync(), 10)
        inf.add_event_handler(on_add=lambda o: note("add", o), on_update=lambda old, new: note("update", new),
                              on_delete=lambda o: note("delete", o))
        await env.client.create(configmap("marker"))
        await asyncio.wait_for(marker.wait(), 10)  # the watch is established ...
        await clock.advance(30)  # ... and has been running for a while
        seen.clear()

        # Drop every watch, then change more than the history holds before anyone re-watches.
        env.store.close()
        cms = env.api.resource("", "v1", "configmaps")
        env.api.update(cms, "default", "change", configmap("change", k="v"))
        env.api.delete(cms, "default", "remove")
        for i in range(6):
            env.api.create(cms, "default", configmap(f"new-{i}"))

        await asyncio.wait_for(clock.sleeping.wait(), 10)  # the informer is backing off ...
        assert isinstance(inf.last_error, StatusError) and inf.last_error.code == 410  # ... after a 410
        await clock.advance(0.8)
        await asyncio.wait_for(caught_up.wait(), 10)
        assert inf.relists == 1
        assert sorted(seen) == sorted([("update", "change"), ("delete", "remove")] +
                                      [("add", f"new-{i}") for i in range(6)])
        await env.client.create(configmap("later"))
        await asyncio.wait_for(later.wait(), 10)
        assert inf.get("default/later") is not None
        await factory.stop()
        await c.close()


@pytest.mark.parametrize("code, body, reason, message", [
    (404, b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \\"x\\" not found",'
          b'"reason":"NotFound","code":404,"details":{"name":"x","kind":"pods"}}', "NotFound", 'pods "x" not found'),
    (410, {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 1 (5)"},
     "Expired", "too old resource version: 1 (5)"),
    (502, b"<html>bad gateway</html>", "Unknown", "<html>bad gateway</html>"),
    (503, b"", "ServiceUnavailable",
     "the server responded with the status code 503 but did not return more information"),
])
def test_status_errors_are_read_from_the_body(code, body, reason, message):
    err = status_error_from(code, body)
    assert (err.code, err.reason, err.message) == (code, reason, message)


async def test_a_burst_of_watch_events_arrives_whole_and_in_order(env, tmp_path):
    """The server sends a burst of events in few writes; the client splits them back into events,
    across chunk boundaries, in order."""
    await env.namespace("default")
    async with serving(env.api) as port:
        kc = tmp_path / "kubeconfig"
        write_kubeconfig(kc, f"http://127.0.0.1:{port}", TOKEN)
        c = HTTPClient.from_kubeconfig(str(kc), field_manager="http-test")
        try:
            rv = env.store.resource_version
            watch = c.watch("v1", "ConfigMap", "default", resource_version=str(rv))
            first = asyncio.ensure_future(watch.__anext__())
            await asyncio.sleep(0.2)
            for i in range(300):  # one burst, large enough to span many chunks
                env.api.create(env.api.resource("", "v1", "configmaps"), "default",
                               configmap(f"cm-{i:03d}", payload="x" * 500))
            names = [(await first)[1]["metadata"]["name"]]
            while len(names) < 300:
                _, obj = await asyncio.wait_for(watch.__anext__(), 10)
                names.append(obj["metadata"]["name"])
            assert names == [f"cm-{i:03d}" for i in range(300)]
            await watch.aclose()
        finally:
            await c.close()
