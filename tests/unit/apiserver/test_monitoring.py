"""`/metrics`, `/livez` and `/readyz` as a client sees them: who may read the metrics, the request
counters a request leaves behind, stored objects, and the named health checks."""

from __future__ import annotations

import contextlib

import aiohttp
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from phalanx.apiserver.auth.authenticator import user_token_claims
from phalanx.apiserver.auth.filters import RequestAuth
from phalanx.apiserver.auth.policy import ensure_bootstrap_policy
from phalanx.apiserver.server import Server

ADMIN = "admin-secret"


class Served:
    def __init__(self, port: int, auth: RequestAuth, server: Server):
        self.base, self.auth, self.server = f"http://127.0.0.1:{port}", auth, server

    def token_for(self, user: str, *groups: str) -> str:
        a = self.auth.authenticator
        return a.key.sign(user_token_claims(user, groups, 600, a.now()))

    async def call(self, method: str, path: str, token: str | None = ADMIN, body=None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with aiohttp.ClientSession() as s:
            async with s.request(method, self.base + path, json=body, headers=headers) as r:
                return r.status, await r.text()


@contextlib.asynccontextmanager
async def serving(env):
    env.bootstrap()
    ensure_bootstrap_policy(env.api)
    auth = RequestAuth.for_cluster(env.api, ADMIN)
    server = Server(env.api, ADMIN, auth=auth)
    runner = web.AppRunner(server.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield Served(runner.addresses[0][1], auth, server)
    finally:
        await runner.cleanup()


def samples(text: str, name: str) -> dict[frozenset, float]:
    """The samples of one series name, by their label set."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[frozenset(s.labels.items())] = s.value
    return out


def labels(**kw: str) -> frozenset:
    return frozenset(kw.items())


async def test_metrics_need_the_get_verb_on_the_non_resource_url(env):
    async with serving(env) as srv:
        assert (await srv.call("GET", "/metrics", token=None))[0] == 401
        status, body = await srv.call("GET", "/metrics", token=srv.token_for("bob"))
        assert status == 403 and 'cannot get path \\"/metrics\\"' in body
        assert (await srv.call("GET", "/metrics", token=srv.token_for("prom", "system:monitoring")))[0] == 200
        status, body = await srv.call("GET", "/metrics")
        assert status == 200 and "# TYPE apiserver_request_total counter" in body


async def test_requests_are_counted_by_verb_resource_scope_and_code(env):
    async with serving(env) as srv:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}}
        before = samples((await srv.call("GET", "/metrics"))[1], "apiserver_request_total")
        assert (await srv.call("POST", "/api/v1/namespaces/default/configmaps", body=cm))[0] == 201
        assert (await srv.call("POST", "/api/v1/namespaces/default/configmaps", body=cm))[0] == 409
        assert (await srv.call("GET", "/api/v1/namespaces/default/configmaps/m"))[0] == 200
        assert (await srv.call("GET", "/api/v1/configmaps"))[0] == 200
        text = (await srv.call("GET", "/metrics"))[1]
        after = samples(text, "apiserver_request_total")
        common = dict(dry_run="", group="", version="v1", resource="configmaps", subresource="", component="apiserver")
        for key, delta in [(labels(verb="POST", scope="namespace", code="201", **common), 1),
                           (labels(verb="POST", scope="namespace", code="409", **common), 1),
                           (labels(verb="GET", scope="resource", code="200", **common), 1),
                           (labels(verb="LIST", scope="cluster", code="200", **common), 1)]:
            assert after.get(key, 0) - before.get(key, 0) == delta, key
        durations = samples(text, "apiserver_request_duration_seconds_count")
        assert durations[labels(verb="GET", scope="resource", **common)] >= 1
        stored = samples(text, "apiserver_storage_objects")
        assert stored[labels(resource="configmaps")] == len(env.store.list("core/configmaps")[0])
        assert stored[labels(resource="clusterroles.rbac.authorization.k8s.io")] > 0


async def test_health_checks_are_named(env):
    async with serving(env) as srv:
        status, body = await srv.call("GET", "/readyz?verbose", token=None)
        assert status == 200
        assert body.splitlines() == ["[+]ping ok", "[+]log ok", "[+]storage ok", "[+]shutdown ok",
                                     "readyz check passed"]
        status, body = await srv.call("GET", "/livez?verbose&exclude=log", token=None)
        assert body.splitlines() == ["[+]ping ok", "[+]log excluded: ok", "[+]storage ok", "livez check passed"]
        assert await srv.call("GET", "/livez", token=None) == (200, "ok")
        assert await srv.call("GET", "/readyz/storage") == (200, "ok")
        assert (await srv.call("GET", "/readyz/etcd"))[0] == 404
        srv.server.ready = False
        status, body = await srv.call("GET", "/readyz", token=None)
        assert status == 500 and body.splitlines()[-2:] == ["[-]shutdown failed: reason withheld",
                                                             "readyz check failed"]


async def test_view_reads_the_metrics_api_through_the_aggregated_reader_role(env):
    async with serving(env) as srv:
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "v", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}
        assert (await srv.call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                               body=binding))[0] == 201
        alice = srv.token_for("alice")
        status, body = await srv.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", token=alice)
        assert status == 200 and '"kind":"PodMetricsList"' in body
        status, _ = await srv.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods", token=alice)
        assert status == 403


async def test_a_log_handler_that_cannot_flush_fails_livez(env):
    import logging

    class Stuck(logging.Handler):
        def emit(self, record):
            pass

        def flush(self):
            raise OSError("disk full")

    stuck = Stuck()
    logging.getLogger().addHandler(stuck)
    try:
        async with serving(env) as srv:
            status, body = await srv.call("GET", "/livez?verbose", token=None)
            assert status == 500 and "[-]log failed: reason withheld" in body.splitlines()
            assert body.splitlines()[-1] == "livez check failed"
    finally:
        logging.getLogger().removeHandler(stuck)


async def test_an_open_watch_is_a_long_running_request(env):
    import asyncio
    async with serving(env) as srv:
        watching = labels(verb="WATCH", group="", version="v1", resource="configmaps", subresource="",
                          scope="namespace", component="apiserver")
        async with aiohttp.ClientSession() as s:
            url = srv.base + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
            async with s.get(url, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
                assert r.status == 200
                open_now = samples((await srv.call("GET", "/metrics"))[1], "apiserver_longrunning_requests")
                assert open_now[watching] == 1
                r.close()
        for _ in range(200):  # the watch ends (its timeout, or the client gone)
            done = samples((await srv.call("GET", "/metrics"))[1], "apiserver_longrunning_requests")
            if done[watching] == 0:
                break
            await asyncio.sleep(0.05)
        assert done[watching] == 0
