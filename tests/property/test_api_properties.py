"""End to end through the in-process HTTP API: any body, sent as any create or patch, gets a
Status answer or an object, never an internal error, and the API still answers right after."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import example, given
from hypothesis import strategies as st

from phalanx.apiserver import build_api
from phalanx.apiserver.server import build_app
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

from .strategies import json_values, pods

PODS = "/api/v1/namespaces/default/pods"
PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml"]


class InProcessServer:
    """The real aiohttp app over an in-memory API, driven from synchronous hypothesis examples."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        api = build_api(MemoryStore(), FeatureGates.from_config({}))
        ns = api.resource("", "v1", "namespaces")
        api.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        self.client = TestClient(TestServer(build_app(api, None)), loop=self.loop)
        self.loop.run_until_complete(self.client.start_server())

    def request(self, method: str, path: str, body: bytes = b"", content_type: str = "application/json",
                ) -> tuple[int, object]:
        async def send():
            async with self.client.request(method, path, data=body,
                                           headers={"Content-Type": content_type}) as resp:
                raw = await resp.read()
                try:
                    return resp.status, orjson.loads(raw)
                except orjson.JSONDecodeError:
                    return resp.status, raw.decode(errors="replace")
        return self.loop.run_until_complete(send())

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


@pytest.fixture(scope="module")
def server():
    s = InProcessServer()
    seed = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "seed"},
            "spec": {"containers": [{"name": "a", "image": "busybox", "ports": [{"containerPort": 80}]}]}}
    assert s.request("POST", PODS, orjson.dumps(seed))[0] == 201
    yield s
    s.close()


def _assert_status_answer(status: int, body: object) -> None:
    """An answer upstream could give: an object, or a Status that is not a caught exception."""
    if status >= 400:
        assert isinstance(body, dict) and body.get("kind") == "Status", body
        assert body.get("reason") != "InternalError", body["message"]


def _assert_still_serving(server: InProcessServer) -> None:
    assert server.request("GET", "/readyz") == (200, "ok")
    status, seed = server.request("GET", f"{PODS}/seed")
    assert status == 200 and seed["metadata"]["name"] == "seed"


def _pod_body(pod: dict, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", **pod, "metadata": {**(pod.get("metadata") or {}), "name": name}}


bodies = st.one_of(pods.map(lambda p: orjson.dumps(_pod_body(p, "fuzz"))), json_values(12).map(orjson.dumps),
                   st.binary(max_size=40))


@given(st.sampled_from(["create", *PATCH_TYPES]), bodies)
@example("create", orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"},
                                 "spec": {"containers": [{"name": "c", "image": "i",
                                                          "resources": {"requests": {"cpu": "1e999999999"}}}]}}))
@example("application/strategic-merge-patch+json", b'{"$patch":"garbage"}')
@example("application/strategic-merge-patch+json", b'{"spec":' * 300 + b"1" + b"}" * 300)
def test_any_request_gets_a_status_answer_and_the_api_keeps_serving(server, verb, body):
    if verb == "create":
        status, answer = server.request("POST", PODS, body)
        if status == 201:
            assert server.request("DELETE", f"{PODS}/{answer['metadata']['name']}")[0] == 200
    else:
        status, answer = server.request("PATCH", f"{PODS}/seed", body, verb)
        if status == 200:  # put the seed back as it was for the next example
            server.request("PUT", f"{PODS}/seed", orjson.dumps({**answer, "spec": {"containers": [
                {"name": "a", "image": "busybox", "ports": [{"containerPort": 80}]}]}}))
    _assert_status_answer(status, answer)
    _assert_still_serving(server)


def test_a_deeply_nested_unknown_field_is_not_an_internal_error(server):
    deep = b'{"a":' * 300 + b"1" + b"}" * 300
    body = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},'
            b'"spec":{"containers":[{"name":"c","image":"i"}],"x":' + deep + b"}}")
    status, answer = server.request("POST", PODS, body)
    server.request("DELETE", f"{PODS}/deep")
    _assert_status_answer(status, answer)


def test_a_long_malformed_quantity_is_refused_at_once(server):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "long"},
           "spec": {"containers": [{"name": "a", "image": "b",
                                    "resources": {"requests": {"cpu": "1" * 20000 + "x"}}}]}}
    started = time.perf_counter()
    status, answer = server.request("POST", PODS, orjson.dumps(pod))
    assert status == 400 and "quantities must match the regular expression" in answer["message"]
    assert time.perf_counter() - started < 0.5  # milliseconds once linear; generous for a loaded machine


def test_a_yaml_create_is_not_an_internal_error(server):
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-yaml}\ndata: {k: v}\n"
    status, answer = server.request("POST", "/api/v1/namespaces/default/configmaps", body, "application/yaml")
    _assert_status_answer(status, answer)


def _aliased_yaml(levels: int, width: int = 9) -> bytes:
    """A few hundred bytes of YAML whose aliases expand to width**levels strings ("billion laughs")."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: laughs}", "data: {k: v}",
             "x0: &a0 [" + ",".join(["lol"] * width) + "]"]
    lines += [f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines).encode()


def test_yaml_alias_expansion_is_refused_at_once(server):
    started = time.perf_counter()
    status, answer = server.request("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Ignore",
                                    _aliased_yaml(6), "application/yaml")
    server.request("DELETE", "/api/v1/namespaces/default/configmaps/laughs")
    assert status == 400
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("patch_type, body", [
    ("application/merge-patch+json", b'{"metadata":false}'),
    ("application/strategic-merge-patch+json", b'{"metadata":false}'),
    ("application/json-patch+json", b'[{"op":"replace","path":"/metadata","value":1.5}]'),
])
def test_a_patch_replacing_metadata_with_a_scalar_is_not_an_internal_error(server, patch_type, body):
    status, answer = server.request("PATCH", f"{PODS}/seed", body, patch_type)
    _assert_status_answer(status, answer)
