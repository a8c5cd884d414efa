"""Bad input gets upstream's status code and message, and nothing is half-written."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from .conftest import Cluster

BAD_FIELD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: strict}
spec:
  foo: bar
  containers: [{name: c, image: busybox}]
"""


def raw_request(cluster: Cluster, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json", token: str | None = "default"):
    import base64
    import yaml
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = next(c["cluster"]["certificate-authority-data"] for c in cfg["clusters"]
              if c["name"] == f"phalanx-{cluster.name}")
    ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
    req = urllib.request.Request(cluster.server_url() + path, data=body, method=method)
    req.add_header("Content-Type", content_type)
    if token == "default":
        token = cluster.token()
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, _body(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, _body(e.read())


def _body(raw: bytes):
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return raw.decode()


def test_unknown_field_is_rejected_strictly(cluster: Cluster, ns: str):
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=BAD_FIELD_POD)
    assert r.returncode != 0
    assert 'strict decoding error: unknown field "spec.foo"' in r.stderr
    assert "BadRequest" in r.stderr
    assert cluster.kubectl("get", "pods", "-n", ns, "-o", "name").check().out.strip() == ""


def test_invalid_name(cluster: Cluster, ns: str):
    r = cluster.kubectl("create", "configmap", "Bad_Name", "-n", ns)
    assert r.returncode != 0
    assert 'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"' in r.stderr
    assert "RFC 1123 subdomain" in r.stderr


def test_missing_required_field(cluster: Cluster, ns: str):
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input="apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {}\n")
    assert r.returncode != 0
    assert 'The Pod "empty" is invalid' in r.stderr and "spec.containers: Required value" in r.stderr
    assert cluster.kubectl("get", "pods", "-n", ns, "-o", "name").check().out.strip() == ""


def test_immutable_field(cluster: Cluster, ns: str):
    pg = "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec:\n  schedulingPolicy:\n    gang: {minCount: 2}\n"
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=pg).check()
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=pg.replace("minCount: 2", "minCount: 3"))
    assert r.returncode != 0
    assert "field is immutable" in r.stderr and "spec.schedulingPolicy" in r.stderr
    got = cluster.kubectl("get", "podgroup", "g", "-n", ns, "-o", "jsonpath={.spec.schedulingPolicy.gang.minCount}")
    assert got.check().out == "2"


def test_stale_resource_version_conflicts(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "c", "-n", ns, "--from-literal=a=1").check()
    obj = cluster.kubectl("get", "cm", "c", "-n", ns, "-o", "json").check().json()
    cluster.kubectl("label", "cm", "c", "-n", ns, "x=y").check()
    obj["data"]["a"] = "2"
    r = cluster.kubectl("replace", "-f", "-", input=json.dumps(obj))
    assert r.returncode != 0
    assert "Conflict" in r.stderr
    assert 'Operation cannot be fulfilled on configmaps "c": the object has been modified' in r.stderr
    assert cluster.kubectl("get", "cm", "c", "-n", ns, "-o", "jsonpath={.data.a}").check().out == "1"


def test_missing_namespace(cluster: Cluster):
    r = cluster.kubectl("create", "configmap", "x", "-n", "does-not-exist")
    assert r.returncode != 0
    assert 'namespaces "does-not-exist" not found' in r.stderr


def test_malformed_json_and_yaml(cluster: Cluster, ns: str):
    code, status = raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/configmaps", b'{"metadata": {"name": ')
    assert code == 400 and status["reason"] == "BadRequest" and status["kind"] == "Status"
    code, status = raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/configmaps", b"metadata: [unclosed",
                               content_type="application/yaml")
    assert code == 400 and status["reason"] == "BadRequest"
    assert cluster.kubectl("get", "cm", "-n", ns, "-o", "name").check().out.strip() in ("", "configmap/kube-root-ca.crt")


def test_unauthenticated_request(cluster: Cluster):
    code, status = raw_request(cluster, "GET", "/api/v1/namespaces", token=None)
    assert code == 401 and status["reason"] == "Unauthorized"
    code, status = raw_request(cluster, "GET", "/api/v1/namespaces", token="wrong")
    assert code == 401
    code, body = raw_request(cluster, "GET", "/readyz", token=None)
    assert (code, body) == (200, "ok")


def test_too_large_body(cluster: Cluster, ns: str):
    big = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                      "data": {"x": "a" * (4 * 1024 * 1024)}}).encode()
    code, status = raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/configmaps", big)
    assert code == 413 and status["reason"] == "RequestEntityTooLarge"
    r = cluster.kubectl("get", "cm", "big", "-n", ns)
    assert r.returncode != 0 and "not found" in r.stderr


def test_watch_bookmarks_timeout_and_gone(cluster: Cluster, ns: str):
    import base64
    import yaml
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = next(c["cluster"]["certificate-authority-data"] for c in cfg["clusters"]
              if c["name"] == f"phalanx-{cluster.name}")
    ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())

    def stream(path):
        req = urllib.request.Request(cluster.server_url() + path)
        req.add_header("Authorization", f"Bearer {cluster.token()}")
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                return resp.status, [json.loads(l) for l in resp.read().splitlines() if l.strip()]
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    cluster.kubectl("create", "configmap", "w1", "-n", ns).check()
    # watch-list: initial ADDED events, then the initial-events-end bookmark; timeoutSeconds ends it
    code, events = stream(f"/api/v1/namespaces/{ns}/configmaps?watch=true&sendInitialEvents=true"
                          f"&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1")
    assert code == 200
    types = [e["type"] for e in events]
    assert "ADDED" in types and types[-1] == "BOOKMARK"
    assert events[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
