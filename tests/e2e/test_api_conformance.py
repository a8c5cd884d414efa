"""The API server answers as kube-apiserver does, seen by the real kubectl, the official Python
client and raw HTTPS: names and generateName, unknown fields, DELETE results, Status bodies byte
for byte, PUT against the URL, slow clients, watches, plain HTTP on the TLS port and the
kubeconfig's mode."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import stat
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from .conftest import Cluster, create_cluster

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402


def tls_context(cluster: Cluster) -> ssl.SSLContext:
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = next(c["cluster"]["certificate-authority-data"] for c in cfg["clusters"]
              if c["name"] == f"phalanx-{cluster.name}")
    return ssl.create_default_context(cadata=base64.b64decode(ca).decode())


def raw(cluster: Cluster, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(cluster.server_url() + path, data=body, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("Authorization", f"Bearer {cluster.token()}")
    try:
        with urllib.request.urlopen(req, context=tls_context(cluster), timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def host_port(cluster: Cluster) -> tuple[str, int]:
    url = urllib.parse.urlparse(cluster.server_url())
    return url.hostname or "127.0.0.1", url.port or 443


@pytest.fixture
def core(cluster: Cluster) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))


def configmap(name: str = "", **extra) -> str:
    md = {"name": name} if name else {}
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**md, **extra.pop("metadata", {})},
                       **extra})


# -- names ------------------------------------------------------------------------------------

def test_an_explicit_name_wins_over_generate_name(cluster: Cluster, ns: str):
    body = configmap("gn-fixed", metadata={"generateName": "gn-"})
    first = cluster.kubectl("create", "-n", ns, "-f", "-", input=body).check()
    assert first.out.strip() == "configmap/gn-fixed created"
    second = cluster.kubectl("create", "-n", ns, "-f", "-", input=body)
    assert second.returncode != 0
    assert 'Error from server (AlreadyExists): error when creating "STDIN": configmaps "gn-fixed" already exists' \
        in second.stderr


# -- unknown fields ---------------------------------------------------------------------------

@pytest.mark.parametrize("validate, warned", [("warn", True), ("ignore", False)])
def test_unknown_fields_are_dropped_unless_strict(cluster: Cluster, ns: str, validate: str, warned: bool):
    body = configmap("cm", data={"k": "v"}, foo=1, status={"z": 1})
    created = cluster.kubectl("create", f"--validate={validate}", "-n", ns, "-f", "-", input=body).check()
    assert ('unknown field "foo"' in created.stderr) == warned
    stored = cluster.kubectl("get", "configmap", "cm", "-n", ns, "-o", "json",
                             "--show-managed-fields").check().json()
    assert "foo" not in stored and "status" not in stored
    assert all(set(m["fieldsV1"]) == {"f:data"} for m in stored["metadata"]["managedFields"])
    strict = cluster.kubectl("create", "--validate=strict", "-n", ns, "-f", "-", input=configmap("cm2", foo=1))
    assert strict.returncode != 0 and 'strict decoding error: unknown field "foo"' in strict.stderr


def test_a_merge_patch_with_unknown_fields_stores_none_of_them(cluster: Cluster, core: client.CoreV1Api, ns: str):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"k": "v"}})
    patched = core.patch_namespaced_config_map("cm", ns, {"foo": 1, "status": {"z": 1}, "data": {"n": "1"}},
                                               field_validation="Warn")
    assert patched.data == {"k": "v", "n": "1"}
    code, body = raw(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps/cm")
    stored = json.loads(body)
    assert code == 200 and "foo" not in stored and "status" not in stored


# -- DELETE -----------------------------------------------------------------------------------

def test_delete_answers_a_status_or_the_object(core: client.CoreV1Api, ns: str):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}})
    status = core.delete_namespaced_config_map("cm", ns)
    assert isinstance(status, client.V1Status)
    assert (status.status, status.details.name, status.details.kind) == ("Success", "cm", "configmaps")
    core.create_namespaced_service_account(ns, {"metadata": {"name": "sa"}})
    deleted = core.delete_namespaced_service_account("sa", ns)
    assert isinstance(deleted, client.V1ServiceAccount) and deleted.metadata.name == "sa"


def test_kubectl_delete_prints_what_it_deleted(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "cm", "-n", ns).check()
    assert cluster.kubectl("delete", "configmap", "cm", "-n", ns).check().out.strip() == \
        f'configmap "cm" deleted from {ns} namespace'


# -- Status bodies ----------------------------------------------------------------------------

def test_status_bodies_are_byte_for_byte_upstream(cluster: Cluster, ns: str):
    code, body = raw(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps/missing")
    assert (code, body) == (404, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
                                 b'"configmaps \\"missing\\" not found","reason":"NotFound","details":{"name":'
                                 b'"missing","kind":"configmaps"},"code":404}\n')
    code, body = raw(cluster, "GET", f"/apis/batch/v1/namespaces/{ns}/widgets")
    assert (code, body) == (404, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
                                 b'"the server could not find the requested resource","reason":"NotFound",'
                                 b'"details":{},"code":404}\n')
    assert raw(cluster, "GET", "/apis/example.com/v1/widgets") == (404, b"404 page not found\n")
    got = cluster.kubectl("get", "--raw", f"/apis/batch/v1/namespaces/{ns}/widgets")
    assert got.returncode != 0 and "Error from server (NotFound)" in got.stderr


# -- PUT --------------------------------------------------------------------------------------

@pytest.mark.parametrize("exists", [True, False])
def test_put_with_another_name_than_the_url_is_a_bad_request(core: client.CoreV1Api, ns: str, exists: bool):
    if exists:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "url-name"}})
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map("url-name", ns, {"metadata": {"name": "body-name"}})
    assert e.value.status == 400
    assert json.loads(e.value.body)["message"] == \
        "the name of the object (body-name) does not match the name on the URL (url-name)"


# -- the connection ---------------------------------------------------------------------------

def test_plain_http_on_the_tls_port_gets_go_s_answer(cluster: Cluster):
    with socket.create_connection(host_port(cluster), timeout=10) as s:
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"


HEADER_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def impatient(tmp_path_factory) -> Cluster:
    """A cluster whose API server waits 1 s for headers and bodies; its kubeconfig existed, 0644."""
    tmp = tmp_path_factory.mktemp("impatient")
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    kubeconfig.chmod(0o644)
    c = create_cluster(tmp, "impatient", extra_env={"PHALANX_APISERVER_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
                                                    "PHALANX_APISERVER_BODY_TIMEOUT": str(HEADER_TIMEOUT)})
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def test_the_kubeconfig_holding_the_token_is_0600(impatient: Cluster):
    assert stat.S_IMODE(impatient.kubeconfig.stat().st_mode) == 0o600


def test_a_client_stalled_in_its_headers_is_disconnected(impatient: Cluster):
    with socket.create_connection(host_port(impatient), timeout=10) as s:
        with tls_context(impatient).wrap_socket(s, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")  # and nothing more
            t0 = time.monotonic()
            assert tls.recv(4096) == b""  # closed by the server
            assert time.monotonic() - t0 < 10


def test_a_client_stalled_in_its_body_gets_504(impatient: Cluster):
    with socket.create_connection(host_port(impatient), timeout=10) as s:
        with tls_context(impatient).wrap_socket(s, server_hostname="127.0.0.1") as tls:
            tls.sendall(f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                        f"Authorization: Bearer {impatient.token()}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: 100\r\n\r\n{{\"metadata\":".encode())
            assert tls.recv(4096).startswith(b"HTTP/1.1 504")


def test_kubectl_get_watch_outlives_the_timeouts(impatient: Cluster):
    impatient.kubectl("create", "namespace", "watched").check()
    proc = impatient.kubectl_popen("get", "configmaps", "-n", "watched", "-w", "--output-watch-events",
                                   "-o", "custom-columns=EVENT:.type,NAME:.object.metadata.name", "--no-headers")
    try:
        time.sleep(3 * HEADER_TIMEOUT)  # the watch idles past the header and body timeouts
        impatient.kubectl("create", "configmap", "late", "-n", "watched").check()
        lines = []
        reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(20)
        assert lines and lines[0].split() == ["ADDED", "late"]
        assert proc.poll() is None  # still watching
    finally:
        proc.kill()
        proc.wait()


def test_a_python_client_watch_outlives_the_timeouts(impatient: Cluster):
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(impatient.kubeconfig)))
    core.create_namespace({"metadata": {"name": "pywatched"}})
    seen: list[tuple[str, str]] = []
    w = watch.Watch()

    def consume() -> None:
        for ev in w.stream(core.list_namespaced_config_map, "pywatched", timeout_seconds=60):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["object"].metadata.name == "late":
                w.stop()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    time.sleep(3 * HEADER_TIMEOUT)
    core.create_namespaced_config_map("pywatched", {"metadata": {"name": "late"}})
    t.join(20)
    assert ("ADDED", "late") in seen
