"""`server.Server`, the HTTP front: paths, verbs, authentication, content types and Status bodies, as
an HTTP client sees them (aiohttp's test client against an API from `build_api`)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from phalanx.apiserver import build_api
from phalanx.apiserver.listener import ServingLimits
from phalanx.apiserver.server import Server
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
CM_PATH = "/api/v1/namespaces/default/configmaps"


@asynccontextmanager
async def http() -> AsyncIterator[TestClient]:
    api = build_api(MemoryStore(), FeatureGates.from_config({}))
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    async with TestClient(TestServer(Server(api, TOKEN).app())) as client:
        yield client


def cm(name: str = "cm", **extra) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra})


async def test_crud_round_trip():
    async with http() as c:
        r = await c.post(CM_PATH, data=cm(data={"k": "v"}), headers=AUTH)
        assert r.status == 201
        created = await r.json()
        r = await c.get(f"{CM_PATH}/cm", headers=AUTH)
        assert r.status == 200 and (await r.json())["data"] == {"k": "v"}
        body = {**created, "data": {"k": "w"}}
        r = await c.put(f"{CM_PATH}/cm", data=orjson.dumps(body), headers=AUTH)
        assert r.status == 200 and (await r.json())["data"] == {"k": "w"}
        r = await c.patch(f"{CM_PATH}/cm", data=b'{"data":{"n":"1"}}',
                          headers={**AUTH, "Content-Type": "application/merge-patch+json"})
        assert r.status == 200 and (await r.json())["data"] == {"k": "w", "n": "1"}
        r = await c.get(CM_PATH, headers=AUTH)
        assert [i["metadata"]["name"] for i in (await r.json())["items"]] == ["cm"]
        r = await c.delete(f"{CM_PATH}/cm", headers=AUTH)
        assert r.status == 200
        r = await c.get(f"{CM_PATH}/cm", headers=AUTH)
        assert r.status == 404


@pytest.mark.parametrize("path, headers, status", [
    ("/version", {}, 200),
    ("/healthz", {}, 200),
    ("/readyz", {}, 200),
    ("/api", {}, 401),
    (CM_PATH, {}, 401),
    (CM_PATH, {"Authorization": "Bearer wrong"}, 401),
    (CM_PATH, {"Authorization": TOKEN}, 401),
    (CM_PATH, AUTH, 200),
])
async def test_authentication(path, headers, status):
    async with http() as c:
        r = await c.get(path, headers=headers)
        assert r.status == status
        if status == 401:
            assert (await r.json())["reason"] == "Unauthorized"


@pytest.mark.parametrize("method, path, headers, body, status, reason", [
    ("GET", "/api/v1/widgets", {}, b"", 404, "NotFound"),
    ("GET", "/apis/batch/v9", {}, b"", 404, "NotFound"),
    ("GET", "/api/v1/configmaps/cm", {}, b"", 404, "NotFound"),  # a namespaced item needs its namespace
    ("GET", f"{CM_PATH}/cm/status", {}, b"", 404, "NotFound"),  # ConfigMaps have no status subresource
    ("PUT", CM_PATH, {}, b"{}", 405, "MethodNotAllowed"),
    ("POST", "/api/v1", {}, b"{}", 405, "MethodNotAllowed"),
    ("POST", f"{CM_PATH}/cm", {}, cm(), 405, "MethodNotAllowed"),
    ("DELETE", "/apis/apps/v1/namespaces/default/deployments/d/scale", {}, b"", 405, "MethodNotAllowed"),
    ("POST", "/api/v1/namespaces/default/pods/p/status", {}, b"{}", 405, "MethodNotAllowed"),
    ("GET", "/api/v1/namespaces/default/pods/p/binding", {}, b"", 405, "MethodNotAllowed"),
    ("GET", f"{CM_PATH}/cm/a/b", {}, b"", 404, "NotFound"),
    ("POST", CM_PATH, {}, b"{", 400, "BadRequest"),
    ("POST", CM_PATH, {}, b"[]", 400, "BadRequest"),
    ("POST", CM_PATH, {"Content-Type": "text/plain"}, b"x", 415, "UnsupportedMediaType"),
    ("POST", f"{CM_PATH}?dryRun=Some", {}, cm(), 400, "BadRequest"),
    ("POST", f"{CM_PATH}?fieldValidation=Loose", {}, cm(), 400, "BadRequest"),
    ("POST", f"{CM_PATH}?fieldValidation=Strict", {}, cm(foo=1), 400, "BadRequest"),
    ("PATCH", f"{CM_PATH}/cm", {"Content-Type": "application/json"}, b"{}", 415, "UnsupportedMediaType"),
    ("POST", CM_PATH, {}, b" " * (3 * 1024 * 1024 + 1), 413, "RequestEntityTooLarge"),
])
async def test_errors_are_status_bodies(method, path, headers, body, status, reason):
    async with http() as c:
        r = await c.request(method, path, data=body, headers={**AUTH, **headers})
        got = await r.json()
        assert (r.status, got["kind"], got["status"], got["reason"], got["code"]) == (
            status, "Status", "Failure", reason, status)


async def test_dry_run_create_answers_without_storing():
    async with http() as c:
        r = await c.post(f"{CM_PATH}?dryRun=All", data=cm(), headers=AUTH)
        assert r.status == 201 and (await r.json())["metadata"]["name"] == "cm"
        assert (await c.get(f"{CM_PATH}/cm", headers=AUTH)).status == 404


async def test_warn_field_validation_answers_with_warning_headers():
    async with http() as c:
        r = await c.post(f"{CM_PATH}?fieldValidation=Warn", data=cm(foo=1), headers=AUTH)
        assert r.status == 201
        assert r.headers.getall("Warning") == ['299 - "unknown field \\"foo\\""']


async def test_tables_for_kubectl_get():
    async with http() as c:
        await c.post(CM_PATH, data=cm(data={"a": "1", "b": "2"}), headers=AUTH)
        r = await c.get(CM_PATH, headers={**AUTH, "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
        table = await r.json()
        assert table["kind"] == "Table"
        assert [col["name"] for col in table["columnDefinitions"]] == ["Name", "Data", "Age"]
        assert table["rows"][0]["cells"][:2] == ["cm", 2]


async def test_namespace_finalize_subresource():
    async with http() as c:
        await c.post("/api/v1/namespaces", data=orjson.dumps({"metadata": {"name": "doomed"}}), headers=AUTH)
        r = await c.delete("/api/v1/namespaces/doomed", headers=AUTH)
        ns = await r.json()
        assert ns["status"]["phase"] == "Terminating"
        ns["spec"]["finalizers"] = []
        r = await c.put("/api/v1/namespaces/doomed/finalize", data=orjson.dumps(ns), headers=AUTH)
        assert r.status == 200
        assert (await c.get("/api/v1/namespaces/doomed", headers=AUTH)).status == 404


async def test_pod_binding_subresource():
    async with http() as c:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        await c.post("/api/v1/namespaces/default/pods", data=orjson.dumps(pod), headers=AUTH)
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
        r = await c.post("/api/v1/namespaces/default/pods/p/binding", data=orjson.dumps(binding), headers=AUTH)
        assert r.status == 201 and (await r.json())["status"] == "Success"
        r = await c.get("/api/v1/namespaces/default/pods/p", headers=AUTH)
        assert (await r.json())["spec"]["nodeName"] == "n1"


@pytest.mark.parametrize("validation, warnings", [
    ("Warn", ['299 - "unknown field \\"foo\\""', '299 - "unknown field \\"status\\""']),
    ("Ignore", []),
])
@pytest.mark.parametrize("how", ["create", "merge-patch", "strategic-merge-patch", "update"])
async def test_unknown_fields_are_pruned_unless_strict(validation, warnings, how):
    extra = {"foo": 1, "status": {"z": 1}}
    async with http() as c:
        if how == "create":
            r = await c.post(f"{CM_PATH}?fieldValidation={validation}", data=cm(data={"k": "v"}, **extra),
                             headers=AUTH)
        else:
            created = await (await c.post(CM_PATH, data=cm(data={"k": "v"}), headers=AUTH)).json()
            if how == "update":
                r = await c.put(f"{CM_PATH}/cm?fieldValidation={validation}", data=orjson.dumps({**created, **extra}),
                                headers=AUTH)
            else:
                r = await c.patch(f"{CM_PATH}/cm?fieldValidation={validation}", data=orjson.dumps(extra),
                                  headers={**AUTH, "Content-Type": f"application/{how}+json"})
        assert r.status in (200, 201) and r.headers.getall("Warning", []) == warnings
        answered = await r.json()
        stored = await (await c.get(f"{CM_PATH}/cm", headers=AUTH)).json()
        for obj in (answered, stored):
            assert "foo" not in obj and "status" not in obj
            assert all(set(m["fieldsV1"]) <= {"f:data"} for m in obj["metadata"]["managedFields"])
        r = await c.patch(f"{CM_PATH}/cm?fieldValidation=Strict", data=orjson.dumps(extra),
                          headers={**AUTH, "Content-Type": "application/merge-patch+json"})
        assert r.status == 400 and (await r.json())["message"] == (
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
            'unknown field "foo", unknown field "status"')


def obj_of(kind: str, name: str) -> tuple[str, bytes]:
    """(collection path, body) of a minimal object of each kind the DELETE table uses."""
    bodies = {
        "configmaps": (CM_PATH, {"apiVersion": "v1", "kind": "ConfigMap"}),
        "pods": ("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod",
                                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        "services": ("/api/v1/namespaces/default/services", {"apiVersion": "v1", "kind": "Service",
                                                              "spec": {"ports": [{"port": 80}]}}),
        "serviceaccounts": ("/api/v1/namespaces/default/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount"}),
        "nodes": ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node"}),
        "jobs": ("/apis/batch/v1/namespaces/default/jobs", {
            "apiVersion": "batch/v1", "kind": "Job",
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}),
        "priorityclasses": ("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 10}),
    }
    path, body = bodies[kind]
    return path, orjson.dumps({**body, "metadata": {"name": name}})


@pytest.mark.parametrize("kind, group, returns_object", [
    ("configmaps", "", False),
    ("nodes", "", False),
    ("jobs", "batch", False),
    ("priorityclasses", "scheduling.k8s.io", False),
    ("pods", "", True),
    ("services", "", True),
    ("serviceaccounts", "", True),
])
async def test_delete_answers_with_a_status_or_the_object(kind, group, returns_object):
    async with http() as c:
        path, body = obj_of(kind, "x")
        created = await (await c.post(path, data=body, headers=AUTH)).json()
        r = await c.delete(f"{path}/x", headers=AUTH)
        got = await r.json()
        assert r.status == 200
        if returns_object:
            assert (got["kind"], got["metadata"]["uid"]) == (created["kind"], created["metadata"]["uid"])
        else:
            details = {"name": "x", "kind": kind, "uid": created["metadata"]["uid"]}
            if group:
                details = {"name": "x", "group": group, "kind": kind, "uid": created["metadata"]["uid"]}
            assert await r.read() == orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                   "status": "Success", "details": details}) + b"\n"


@pytest.mark.parametrize("query, status", [("", 200), ("?orphanDependents=false", 202)])
async def test_delete_held_by_a_finalizer_answers_with_the_object(query, status):
    async with http() as c:
        await c.post(CM_PATH, data=orjson.dumps({"metadata": {"name": "cm", "finalizers": ["example.com/hold"]}}),
                     headers=AUTH)
        r = await c.delete(f"{CM_PATH}/cm{query}", headers=AUTH)
        got = await r.json()
        assert r.status == status and got["kind"] == "ConfigMap" and got["metadata"]["deletionTimestamp"]


GENERIC_404 = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not '
               b'find the requested resource","reason":"NotFound","details":{},"code":404}\n')


@pytest.mark.parametrize("method, path, headers, body, expected", [
    ("GET", f"{CM_PATH}/missing", AUTH, b"",
     b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \\"missing\\" '
     b'not found","reason":"NotFound","details":{"name":"missing","kind":"configmaps"},"code":404}\n'),
    ("GET", "/apis/batch/v1/namespaces/default/jobs/missing", AUTH, b"",
     b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"jobs.batch \\"missing\\" '
     b'not found","reason":"NotFound","details":{"name":"missing","group":"batch","kind":"jobs"},"code":404}\n'),
    ("GET", "/api/v1/widgets", AUTH, b"", GENERIC_404),
    ("GET", "/apis/batch/v1/namespaces/default/widgets", AUTH, b"", GENERIC_404),
    ("GET", "/apis/batch/v2/jobs", AUTH, b"", GENERIC_404),
    ("GET", "/apis/example.com/v1/namespaces/default/widgets", AUTH, b"", b"404 page not found\n"),
    ("GET", "/apis/example.com", AUTH, b"", b"404 page not found\n"),
    ("GET", CM_PATH, {}, b"",
     b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized",'
     b'"reason":"Unauthorized","code":401}\n'),
    ("POST", CM_PATH, AUTH, cm(metadata={"name": "Bad_Name"}),
     b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \\"Bad_Name\\" is '
     b'invalid: metadata.name: Invalid value: \\"Bad_Name\\": a lowercase RFC 1123 subdomain must consist of lower '
     b'case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. '
     b'\'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*'
     b'[a-z0-9])?)*\')","reason":"Invalid","details":{"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":'
     b'"FieldValueInvalid","message":"Invalid value: \\"Bad_Name\\": a lowercase RFC 1123 subdomain must consist of '
     b'lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character '
     b'(e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*'
     b'[a-z0-9])?)*\')","field":"metadata.name"}]},"code":422}\n'),
    ("POST", CM_PATH, AUTH, b"{",
     None),  # only the shape: the decoder's words differ from Go's
])
async def test_status_bodies_are_byte_for_byte_upstream(method, path, headers, body, expected):
    async with http() as c:
        r = await c.request(method, path, data=body, headers=headers)
        raw = await r.read()
        if expected is None:
            assert list(orjson.loads(raw)) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "code"]
            assert raw.endswith(b"}\n")
        else:
            assert raw == expected


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize("body_md, message", [
    ({"name": "other"}, "the name of the object (other) does not match the name on the URL (cm)"),
    ({"name": "cm", "namespace": "kube-system"},
     "the namespace of the provided object does not match the namespace sent on the request"),
])
async def test_put_body_must_match_the_url_whether_or_not_the_object_exists(exists, body_md, message):
    async with http() as c:
        if exists:
            await c.post(CM_PATH, data=cm(), headers=AUTH)
        r = await c.put(f"{CM_PATH}/cm", data=orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                            "metadata": body_md}), headers=AUTH)
        got = await r.json()
        assert (r.status, got["reason"], got["message"]) == (400, "BadRequest", message)


@pytest.mark.parametrize("query, message", [
    # the request asks for less time than a future resourceVersion would wait (3 s): the deadline ends it
    ("timeout=200ms", "Timeout: request did not complete within requested timeout - context deadline exceeded"),
    # without a deadline of its own the list waits for the version, then says it is too large
    ("", "Timeout: Too large resource version"),
])
async def test_request_deadline_from_the_timeout_parameter(query, message):
    async with http() as c:
        path = f"{CM_PATH}?resourceVersion=999999&resourceVersionMatch=NotOlderThan&{query}"
        r = await c.get(path, headers=AUTH)
        got = await r.json()
        assert (r.status, got["reason"]) == (504, "Timeout")
        assert got["message"].startswith(message)


async def test_watches_have_no_request_deadline():
    api = build_api(MemoryStore(), FeatureGates.from_config({}))
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    limits = ServingLimits(request_timeout=0.2)
    async with TestClient(TestServer(Server(api, TOKEN, limits=limits).app())) as c:
        r = await c.get(f"{CM_PATH}?watch=true&timeoutSeconds=1", headers=AUTH)
        assert r.status == 200
        await c.post(CM_PATH, data=cm("late"), headers=AUTH)  # after the 0.2 s request deadline
        body = await r.read()
        assert b'"late"' in body


async def test_a_write_is_answered_only_once_it_is_committed(tmp_path):
    """With SQLite's group commit, a client never hears of a write a crash could still lose: the
    answer (and a watch event) waits for the commit, even a slow one."""
    import asyncio

    from phalanx.store import SQLiteStore

    class SlowCommits(SQLiteStore):
        def _flush(self):  # the commit comes late, as from a slow disk
            asyncio.get_running_loop().call_later(0.3, super()._flush)

    path = str(tmp_path / "state.db")
    api = build_api(SlowCommits(path), FeatureGates.from_config({}))
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    async with TestClient(TestServer(Server(api, TOKEN).app())) as c:
        watch = await c.get(f"{CM_PATH}?watch=true&resourceVersion={api.store.resource_version}", headers=AUTH)
        r = await c.post(CM_PATH, data=cm("durable"), headers=AUTH)
        assert r.status == 201
        on_disk = SQLiteStore(path)  # what a restart right now would find
        assert on_disk.get("core/configmaps", "default", "durable") is not None
        on_disk.close()
        line = await asyncio.wait_for(watch.content.readline(), 5)
        assert orjson.loads(line)["object"]["metadata"]["name"] == "durable"
        watch.close()
