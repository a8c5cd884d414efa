"""CustomResourceDefinitions on a real phalanx cluster, driven by the real kubectl, the official
Python client's CustomObjectsApi and kopf: a CRD with a structural schema, a CEL rule, a status
subresource and printer columns is applied and its custom resources are served as upstream serves
them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import Cluster

pytestmark = pytest.mark.e2e

GROUP = "stable.example.com"

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Spec
      type: string
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: CronTabSpec is what the user asks for.
            required: [cronSpec]
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must not exceed maxReplicas
            properties:
              cronSpec:
                type: string
                description: How often the job runs, in cron syntax.
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'
              image:
                type: string
                description: The container image to run.
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
              maxReplicas:
                type: integer
                default: 5
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
"""


def crontab(name: str, **spec: object) -> str:
    body = {"apiVersion": f"{GROUP}/v1", "kind": "CronTab", "metadata": {"name": name},
            "spec": {"cronSpec": "* * * * */5", "image": "my-cron-image", **spec}}
    return json.dumps(body)


@pytest.fixture(scope="module")
def crd(cluster: Cluster):
    cluster.kubectl("apply", "-f", "-", input=CRD).check()
    cluster.kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com",
                    "--timeout=30s").check()
    yield "crontabs.stable.example.com"


def test_crd_established_and_in_discovery(cluster: Cluster, crd: str):
    got = cluster.kubectl("get", "crd", crd, "-o", "json").check().json()
    conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conds == {"NamesAccepted": "True", "Established": "True"}
    resources = cluster.kubectl("api-resources", "--api-group", GROUP, "-o", "wide").check().out
    line = next(ln for ln in resources.splitlines() if ln.startswith("crontabs"))
    assert line.split()[:5] == ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    assert "all" in line


def test_create_get_and_printer_columns(cluster: Cluster, crd: str, ns: str):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=crontab("my-new-cron-object")).check()
    out = cluster.kubectl("get", "ct", "-n", ns).check().out.splitlines()
    assert out[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert out[1].split()[:6] == ["my-new-cron-object", "*", "*", "*", "*", "*/5"]
    assert out[1].split()[6] == "1"  # defaulted
    obj = cluster.kubectl("get", "crontab", "my-new-cron-object", "-n", ns, "-o", "json").check().json()
    assert obj["spec"]["maxReplicas"] == 5
    # `kubectl get all` lists it too (category "all").
    assert "crontab.stable.example.com/my-new-cron-object" in cluster.kubectl("get", "all", "-n", ns).check().out


def test_invalid_objects_are_refused_with_field_paths(cluster: Cluster, crd: str, ns: str):
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=crontab("bad", replicas=20))
    assert r.returncode != 0
    assert 'The CronTab "bad" is invalid: spec.replicas: Invalid value: 20: spec.replicas in body should be ' \
           'less than or equal to 10' in r.stderr
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=crontab("bad", replicas=7, maxReplicas=6))
    assert r.returncode != 0
    assert 'The CronTab "bad" is invalid: spec: Invalid value: "object": replicas must not exceed maxReplicas' \
        in r.stderr
    r = cluster.kubectl("create", "-n", ns, "-f", "-", input=crontab("bad", cronSpec="often"))
    assert "spec.cronSpec: Invalid value: \"often\": spec.cronSpec in body should match" in r.stderr


def test_unknown_fields_pruned_or_refused_strictly(cluster: Cluster, crd: str, ns: str):
    r = cluster.kubectl("create", "-n", ns, "-f", "-", input=crontab("strict", colour="blue"))
    assert r.returncode != 0
    assert 'strict decoding error: unknown field "spec.colour"' in r.stderr
    cluster.kubectl("create", "--validate=false", "-n", ns, "-f", "-", input=crontab("lax", colour="blue")).check()
    obj = cluster.kubectl("get", "crontab", "lax", "-n", ns, "-o", "json").check().json()
    assert "colour" not in obj["spec"]


def test_status_subresource(cluster: Cluster, crd: str, ns: str):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=crontab("st")).check()
    cluster.kubectl("patch", "crontab", "st", "-n", ns, "--subresource=status", "--type=merge",
                    "-p", '{"status":{"phase":"Running"},"spec":{"replicas":3}}').check()
    obj = cluster.kubectl("get", "crontab", "st", "-n", ns, "-o", "json").check().json()
    assert obj["status"] == {"phase": "Running"} and obj["spec"]["replicas"] == 1


def test_explain_describes_the_schema(cluster: Cluster, crd: str):
    out = cluster.kubectl("explain", "crontab.spec").check().out
    assert "CronTabSpec is what the user asks for." in out
    assert "cronSpec\t<string> -required-" in out
    assert "How often the job runs, in cron syntax." in out


def test_server_side_apply_merges_list_map_entries(cluster: Cluster, crd: str, ns: str):
    cluster.kubectl("apply", "--server-side", "--field-manager=a", "-n", ns, "-f", "-",
                    input=crontab("ssa", ports=[{"name": "http", "port": 80}])).check()
    second = {"apiVersion": f"{GROUP}/v1", "kind": "CronTab", "metadata": {"name": "ssa"},
              "spec": {"ports": [{"name": "metrics", "port": 9090}]}}
    cluster.kubectl("apply", "--server-side", "--field-manager=b", "-n", ns, "-f", "-",
                    input=json.dumps(second)).check()
    obj = cluster.kubectl("get", "crontab", "ssa", "-n", ns, "-o", "json").check().json()
    assert obj["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]


def test_python_client_custom_objects_api(cluster: Cluster, crd: str, ns: str):
    from kubernetes import client, config, watch
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
    created = api.create_namespaced_custom_object(GROUP, "v1", ns, "crontabs", json.loads(crontab("py")))
    assert created["spec"]["replicas"] == 1
    assert api.get_namespaced_custom_object(GROUP, "v1", ns, "crontabs", "py")["metadata"]["uid"] == \
        created["metadata"]["uid"]
    names = [o["metadata"]["name"] for o in api.list_namespaced_custom_object(GROUP, "v1", ns, "crontabs")["items"]]
    assert "py" in names
    patched = api.patch_namespaced_custom_object(GROUP, "v1", ns, "crontabs", "py", {"spec": {"replicas": 2}})
    assert patched["spec"]["replicas"] == 2
    w = watch.Watch()
    seen = []
    for ev in w.stream(api.list_namespaced_custom_object, GROUP, "v1", ns, "crontabs",
                       field_selector="metadata.name=py", timeout_seconds=5):
        seen.append((ev["type"], ev["object"]["metadata"]["name"], ev["object"]["spec"]["replicas"]))
        w.stop()
    assert seen == [("ADDED", "py", 2)]
    api.delete_namespaced_custom_object(GROUP, "v1", ns, "crontabs", "py")
    names = [o["metadata"]["name"] for o in api.list_namespaced_custom_object(GROUP, "v1", ns, "crontabs")["items"]]
    assert "py" not in names


KOPF_OPERATOR = '''
import kopf

@kopf.on.startup()
def configure(settings, **_):
    settings.persistence.finalizer = "example.com/kopf-finalizer"
    settings.posting.enabled = False

@kopf.on.create("stable.example.com", "v1", "crontabs")
def created(spec, name, patch, **_):
    patch.status["phase"] = "Seen " + spec["cronSpec"]
    print("HANDLED", name, flush=True)
'''


def _kopf_path() -> str | None:
    """Where kopf is installed: importable here, or the test extra's target dir (KOPF_PATH)."""
    try:
        import kopf  # noqa: F401
        return ""
    except ImportError:
        return os.environ.get("KOPF_PATH") or None


def test_kopf_handles_a_create_event(cluster: Cluster, crd: str, ns: str, tmp_path: Path):
    where = _kopf_path()
    if where is None:
        pytest.skip("kopf is not installed (pip install '.[test]')")
    op = tmp_path / "operator.py"
    op.write_text(textwrap.dedent(KOPF_OPERATOR))
    env = dict(cluster.env)
    if where:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (where, env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", ns, str(op)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=crontab("kopf-obj")).check()
        phase = None
        for _ in range(120):
            obj = cluster.kubectl("get", "crontab", "kopf-obj", "-n", ns, "-o", "json").check().json()
            phase = (obj.get("status") or {}).get("phase")
            if phase or proc.poll() is not None:
                break
            time.sleep(0.5)
        assert phase == "Seen * * * * */5", _output(proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _output(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.stdout.read() if proc.stdout else ""


def test_deleting_the_crd_deletes_its_objects(cluster: Cluster, ns: str):
    other = CRD.replace("crontabs", "backups").replace("CronTab", "Backup").replace("crontab", "backup") \
        .replace("shortNames: [ct]", "shortNames: [bk]")
    cluster.kubectl("apply", "-f", "-", input=other).check()
    cluster.kubectl("wait", "--for=condition=Established", "crd/backups.stable.example.com", "--timeout=30s").check()
    body = json.loads(crontab("b1"))
    body["kind"] = "Backup"
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(body)).check()
    cluster.kubectl("delete", "crd", "backups.stable.example.com", "--timeout=60s").check()
    assert cluster.kubectl("get", "crd", "backups.stable.example.com").returncode != 0
    r = cluster.kubectl("get", "backups.stable.example.com", "-n", ns)
    assert r.returncode != 0
    assert 'the server doesn\'t have a resource type "backups"' in r.stderr
    # Re-created, it starts empty: the objects went with it.
    cluster.kubectl("apply", "-f", "-", input=other).check()
    cluster.kubectl("wait", "--for=condition=Established", "crd/backups.stable.example.com", "--timeout=30s").check()
    assert cluster.kubectl("get", "backups", "-n", ns, "-o", "json").check().json()["items"] == []
    cluster.kubectl("delete", "crd", "backups.stable.example.com", "--timeout=60s").check()


MULTI_VERSION_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.org
spec:
  group: example.org
  scope: Cluster
  names: {plural: widgets, kind: Widget, shortNames: [wd]}
  conversion: {strategy: None}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v1
    served: true
    storage: true
    subresources:
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {size: {type: integer}}}
"""


def test_versions_scale_and_restart_on_137(tmp_path):
    """Two served versions converted with strategy None, the scale subresource, and custom types
    served again after a restart (kubectl 1.37 on a 1.37 cluster)."""
    from .conftest import KUBECTL_137, create_cluster
    c = create_cluster(tmp_path, "crd137", kubernetes="v1.37.1")

    def kubectl(*args: str, input: str | None = None):
        return c.kubectl(*args, input=input, binary=KUBECTL_137)
    try:
        kubectl("apply", "-f", "-", input=MULTI_VERSION_CRD).check()
        kubectl("wait", "--for=condition=Established", "crd/widgets.example.org", "--timeout=30s").check()
        kubectl("apply", "-f", "-", input='{"apiVersion":"example.org/v1beta1","kind":"Widget",'
                                          '"metadata":{"name":"w"},"spec":{"size":2}}').check()
        as_v1 = kubectl("get", "widgets.v1.example.org", "w", "-o", "json").check().json()
        assert as_v1["apiVersion"] == "example.org/v1" and as_v1["spec"] == {"size": 2}
        as_beta = kubectl("get", "widgets.v1beta1.example.org", "w", "-o", "json").check().json()
        assert as_beta["apiVersion"] == "example.org/v1beta1"
        kubectl("scale", "widget", "w", "--replicas=4").check()
        assert kubectl("get", "wd", "w", "-o", "jsonpath={.spec.size}").check().out == "4"
        c.phalanx("stop", "cluster", "--name", "crd137").check()
        c.phalanx("start", "cluster", "--name", "crd137").check()
        assert kubectl("get", "wd", "w", "-o", "jsonpath={.spec.size}").check().out == "4"
        r = kubectl("apply", "-f", "-", input='{"apiVersion":"example.org/v1","kind":"Widget",'
                                              '"metadata":{"name":"w2"},"spec":{"size":"big"}}')
        assert 'spec.size: Invalid value: "big": spec.size in body must be of type integer: "string"' in r.stderr
    finally:
        c.phalanx("delete", "cluster", "--name", "crd137")
