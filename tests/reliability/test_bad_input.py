"""Hostile requests over HTTP: each gets its status code and a Status body at once, and the API
server (one event loop shared with the scheduler and controllers) is ready within a second after
the whole table."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest

from .conftest import Cluster, raw_request

READY_BOUND_SECONDS = 1.0


@dataclass(frozen=True)
class BadRequest:
    id: str
    method: str
    path: str  # {ns} is the test's namespace
    body: bytes | None
    content_type: str
    status: int
    reason: str | None  # the Status reason (None: upstream leaves it out)
    message: str  # a substring of the Status message


def _pod(cpu: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"},
                       "spec": {"containers": [{"name": "c", "image": "busybox:1",
                                                "resources": {"requests": {"cpu": cpu}}}]}}).encode()


YAML_ALIAS_BOMB = b"""\
apiVersion: v1
kind: ConfigMap
metadata: {name: bomb}
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""
DEEP_JSON = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":'
             + b"[" * 10_000 + b"]" * 10_000 + b"}")
FIFTY_MB = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"'
            + b"x" * (50 * 2**20) + b'"}}')
JSON = "application/json"
CM = "/api/v1/namespaces/{ns}/configmaps"

TABLE = [
    BadRequest("cpu-1e999999999", "POST", "/api/v1/namespaces/{ns}/pods", _pod("1e999999999"), JSON, 422, "Invalid",
               'Invalid value: "1e999999999": quantities must match the regular expression'),
    BadRequest("limit=-1", "GET", CM + "?limit=-1", None, JSON, 200, None, ""),
    BadRequest("resourceVersion=garbage", "GET", CM + "?resourceVersion=garbage", None, JSON, 400, "BadRequest",
               'Invalid value: "garbage": strconv.ParseUint: parsing "garbage": invalid syntax'),
    BadRequest("timeoutSeconds=nan", "GET", CM + "?watch=true&timeoutSeconds=nan", None, JSON, 400, "BadRequest",
               'strconv.ParseInt: parsing "nan": invalid syntax'),
    BadRequest("yaml-alias-bomb", "POST", CM, YAML_ALIAS_BOMB, "application/yaml", 400, "BadRequest",
               "yaml: document contains excessive aliasing"),
    BadRequest("json-10000-deep", "POST", CM, DEEP_JSON, JSON, 400, "BadRequest",
               "couldn't get version/kind; json parse error"),
    BadRequest("body-50MB", "POST", CM, FIFTY_MB, JSON, 413, "RequestEntityTooLarge",
               "Request entity too large: limit is 3145728"),
    BadRequest("strategic-$patch-garbage", "PATCH", CM + "/existing", b'{"$patch":"garbage"}',
               "application/strategic-merge-patch+json", 500, None,
               "unknown patch type: garbage in map: map[$patch:garbage]"),
    BadRequest("put-name-mismatch", "PUT", CM + "/existing",
               b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}', JSON, 400, "BadRequest",
               "the name of the object (other) does not match the name on the URL (existing)"),
]


@pytest.fixture(scope="module")
def bad_input_ns(cluster: Cluster):
    """One namespace for the table, holding the ConfigMap `existing` that PATCH and PUT aim at."""
    name = "bad-input"
    cluster.kubectl("create", "namespace", name).check()
    cluster.kubectl("create", "configmap", "existing", "-n", name, "--from-literal=a=1").check()
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false")


@pytest.mark.parametrize("case", TABLE, ids=[c.id for c in TABLE])
def test_bad_request_gets_its_status(cluster: Cluster, bad_input_ns: str, case: BadRequest):
    code, body = raw_request(cluster, case.method, case.path.format(ns=bad_input_ns), case.body,
                             content_type=case.content_type)
    assert code == case.status, body
    assert isinstance(body, dict), body
    if case.status == 200:
        assert body["kind"] == "ConfigMapList"
        assert [cm["metadata"]["name"] for cm in body["items"]] == ["existing"]  # the whole list
        assert not body["metadata"].get("continue")
        return
    assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
    assert body["status"] == "Failure" and body["code"] == case.status, body
    assert body.get("reason") == case.reason, body
    assert case.message in body["message"], body["message"]


def test_server_is_ready_after_the_table(cluster: Cluster, bad_input_ns: str):
    for case in TABLE:  # the whole table once more, back to back, then /readyz
        raw_request(cluster, case.method, case.path.format(ns=bad_input_ns), case.body, content_type=case.content_type)
    started = time.monotonic()
    code, body = raw_request(cluster, "GET", "/readyz", token=None)
    assert time.monotonic() - started < READY_BOUND_SECONDS
    assert (code, body) == (200, "ok")
    names = cluster.kubectl("get", "cm", "-n", bad_input_ns, "-o", "name").check().out.split()
    assert names == ["configmap/existing"]  # nothing half-written
    assert cluster.kubectl("get", "pods", "-n", bad_input_ns, "-o", "name").check().out.strip() == ""
