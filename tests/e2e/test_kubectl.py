"""The real kubectl against a real phalanx cluster: every assertion is on kubectl's own output."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import Cluster

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
    tier: front
spec:
  containers:
  - name: c
    image: busybox:1
    env:
    - name: A
      value: "1"
  - name: d
    image: busybox:1
"""


def test_version_and_api_resources(cluster: Cluster):
    out = cluster.kubectl("version").check().out
    assert "Server Version: v1.36" in out
    res = cluster.kubectl("api-resources").check().out
    for line in ["pods", "podgroups", "workloads", "resourceclaims", "resourceclaimtemplates", "deviceclasses",
                 "resourceslices", "jobsets", "jobs", "deployments", "priorityclasses", "namespaces", "nodes"]:
        assert f"\n{line} " in res or res.startswith(line + " ") or f"\n{line}  " in res, line
    assert "scheduling.k8s.io/v1alpha2" in res
    assert "resource.k8s.io/v1" in res


def test_nodes_of_the_default_cluster(cluster: Cluster):
    out = cluster.kubectl("get", "nodes").check().out.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {l.split()[0]: l.split() for l in out[1:]}
    assert rows["e2e-control-plane"][1:3] == ["Ready", "control-plane"]
    assert rows["e2e-worker"][1:3] == ["Ready", "<none>"]
    taints = cluster.kubectl("get", "node", "e2e-control-plane", "-o", "jsonpath={.spec.taints[0].key}:{.spec.taints[0].effect}").check().out
    assert taints == "node-role.kubernetes.io/control-plane:NoSchedule"
    cpu = cluster.kubectl("get", "node", "e2e-worker", "-o", "jsonpath={.status.allocatable.cpu} {.status.capacity.memory} {.status.capacity.pods}").check().out
    assert cpu == "8 32Gi 110"


def test_system_namespaces_exist(cluster: Cluster):
    out = cluster.kubectl("get", "namespaces", "-o", "name").check().out.split()
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"]:
        assert f"namespace/{ns}" in out


def test_apply_created_unchanged_configured(cluster: Cluster, ns: str):
    assert cluster.kubectl("apply", "-n", ns, "-f", "-", input=POD).check().out.strip() == "pod/web created"
    assert cluster.kubectl("apply", "-n", ns, "-f", "-", input=POD).check().out.strip() == "pod/web unchanged"
    edited = POD.replace("    image: busybox:1\n    env:", "    image: busybox:2\n    env:").replace(
        "    tier: front\n", "")
    assert cluster.kubectl("apply", "-n", ns, "-f", "-", input=edited).check().out.strip() == "pod/web configured"
    pod = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "json").check().json()
    assert [c["image"] for c in pod["spec"]["containers"]] == ["busybox:2", "busybox:1"]
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_server_side_apply_and_conflict(cluster: Cluster, ns: str):
    cm = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: {ns}\ndata:\n  a: '1'\n"
    out = cluster.kubectl("apply", "--server-side", "-f", "-", input=cm).check().out
    assert out.strip() == "configmap/cfg serverside-applied"
    r = cluster.kubectl("apply", "--server-side", "--field-manager", "other", "-f", "-", input=cm.replace("'1'", "'2'"))
    assert r.returncode != 0
    assert "conflict" in r.stderr.lower() and ".data.a" in r.stderr
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager", "other", "-f", "-",
                    input=cm.replace("'1'", "'2'")).check()
    assert cluster.kubectl("get", "cm", "cfg", "-n", ns, "-o", "jsonpath={.data.a}").check().out == "2"
    managers = cluster.kubectl("get", "cm", "cfg", "-n", ns, "--show-managed-fields", "-o",
                               "jsonpath={.metadata.managedFields[*].manager}").check().out.split()
    assert "other" in managers


def test_create_get_formats(cluster: Cluster, ns: str):
    assert cluster.kubectl("create", "-n", ns, "-f", "-", input=POD).check().out.strip() == "pod/web created"
    table = cluster.kubectl("get", "pods", "-n", ns).check().out.splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[0] == "web"
    wide = cluster.kubectl("get", "pods", "-n", ns, "-o", "wide").check().out.splitlines()
    assert wide[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                               "READINESS", "GATES"]
    y = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "yaml").check().out
    assert "kind: Pod" in y and "name: web" in y
    j = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "json").check().json()
    assert j["metadata"]["uid"] and j["spec"]["containers"][0]["name"] == "c"
    assert cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "jsonpath={.metadata.labels.app}").check().out == "web"
    labels = cluster.kubectl("get", "pods", "-n", ns, "--show-labels").check().out.splitlines()
    assert labels[0].split()[-1] == "LABELS" and "app=web,tier=front" in labels[1]
    assert cluster.kubectl("get", "pods", "-n", ns, "-l", "app=web", "-o", "name").check().out.strip() == "pod/web"
    assert cluster.kubectl("get", "pods", "-n", ns, "-l", "app in (x,y)", "-o", "name").check().out.strip() == ""
    assert cluster.kubectl("get", "pods", "-n", ns, "-l", "!tier", "-o", "name").check().out.strip() == ""
    assert cluster.kubectl("get", "pods", "-n", ns, "--field-selector", "metadata.name=web",
                           "-o", "name").check().out.strip() == "pod/web"
    assert cluster.kubectl("get", "pods", "-n", ns, "--field-selector", "status.phase=Succeeded",
                           "-o", "name").check().out.strip() == ""
    allns = cluster.kubectl("get", "pods", "-A").check().out.splitlines()
    assert allns[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert any(l.split()[:2] == [ns, "web"] for l in allns[1:])


def test_get_watch_sees_events(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "w1", "-n", ns).check()
    proc = cluster.kubectl_popen("get", "configmaps", "-n", ns, "-w", "--request-timeout=20s")
    try:
        time.sleep(1.5)
        cluster.kubectl("create", "configmap", "w2", "-n", ns).check()
        cluster.kubectl("label", "configmap", "w1", "-n", ns, "x=y").check()
        time.sleep(1.5)
    finally:
        proc.terminate()
    out, _ = proc.communicate(timeout=10)
    names = [l.split()[0] for l in out.splitlines()[1:] if l.strip()]
    assert "w2" in names and names.count("w1") >= 2


def test_wait_condition_delete_jsonpath(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "c1", "-n", ns).check()
    cluster.kubectl("label", "configmap", "c1", "-n", ns, "ready=yes").check()
    out = cluster.kubectl("wait", "-n", ns, "--for=jsonpath={.metadata.labels.ready}=yes", "configmap/c1",
                          "--timeout=20s").check().out
    assert out.strip() == "configmap/c1 condition met"
    # A condition set through the status subresource of a PodGroup.
    cluster.kubectl("apply", "-n", ns, "-f", "-", input="""
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: g}
spec: {schedulingPolicy: {basic: {}}}
""").check()
    proc = cluster.kubectl_popen("wait", "-n", ns, "--for=condition=Demo", "podgroup/g", "--timeout=30s")
    time.sleep(1)
    patch = json.dumps({"status": {"conditions": [{"type": "Demo", "status": "True", "reason": "Done",
                                                   "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    cluster.kubectl("patch", "podgroup", "g", "-n", ns, "--subresource=status", "--type=merge", "-p", patch).check()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip() == "podgroup.scheduling.k8s.io/g condition met"
    proc = cluster.kubectl_popen("wait", "-n", ns, "--for=delete", "configmap/c1", "--timeout=30s")
    time.sleep(1)
    cluster.kubectl("delete", "configmap", "c1", "-n", ns, "--wait=false").check()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "configmap/c1 condition met" in out


def test_delete_blocks_on_finalizer(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input="""
apiVersion: v1
kind: ConfigMap
metadata: {name: held, finalizers: [example.com/hold]}
""").check()
    proc = cluster.kubectl_popen("delete", "configmap", "held", "-n", ns, "--timeout=60s")
    time.sleep(2)
    assert proc.poll() is None, "delete returned while the finalizer holds the object"
    got = cluster.kubectl("get", "configmap", "held", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}").check().out
    assert got
    cluster.kubectl("patch", "configmap", "held", "-n", ns, "--type=json",
                    "-p", '[{"op":"remove","path":"/metadata/finalizers"}]').check()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert 'configmap "held" deleted' in out
    r = cluster.kubectl("get", "configmap", "held", "-n", ns)
    assert r.returncode != 0 and 'configmaps "held" not found' in r.stderr


def test_describe_shows_events(cluster: Cluster, ns: str):
    cluster.kubectl("create", "-n", ns, "-f", "-", input=POD).check()
    uid = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "jsonpath={.metadata.uid}").check().out
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1", "namespace": ns},
             "involvedObject": {"kind": "Pod", "name": "web", "namespace": ns, "uid": uid, "apiVersion": "v1"},
             "reason": "Testing", "message": "hello from the test", "type": "Normal",
             "source": {"component": "e2e"}, "count": 1,
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}
    cluster.kubectl("create", "-f", "-", input=json.dumps(event)).check()
    out = cluster.kubectl("describe", "pod", "web", "-n", ns).check().out
    assert "Name:" in out and "web" in out
    assert "Events:" in out and "Testing" in out and "hello from the test" in out


def test_explain(cluster: Cluster):
    out = cluster.kubectl("explain", "pods.spec.containers").check().out
    assert "KIND:" in out and "Pod" in out and "FIELD:" in out
    out = cluster.kubectl("explain", "podgroup.spec").check().out
    assert "schedulingPolicy" in out
    out = cluster.kubectl("explain", "resourceclaim.status.reservedFor").check().out
    assert "uid" in out


def test_patch_label_annotate(cluster: Cluster, ns: str):
    cluster.kubectl("create", "-n", ns, "-f", "-", input=POD).check()
    assert cluster.kubectl("patch", "pod", "web", "-n", ns, "-p",
                           '{"spec":{"containers":[{"name":"d","image":"busybox:3"}]}}').check().out.strip() \
        == "pod/web patched"
    imgs = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "jsonpath={.spec.containers[*].image}").check().out
    assert imgs == "busybox:1 busybox:3"  # strategic merge: containers merged by name
    cluster.kubectl("patch", "pod", "web", "-n", ns, "--type=merge", "-p",
                    '{"metadata":{"labels":{"tier":null}}}').check()
    cluster.kubectl("patch", "pod", "web", "-n", ns, "--type=json", "-p",
                    '[{"op":"add","path":"/metadata/labels/extra","value":"1"}]').check()
    labels = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "jsonpath={.metadata.labels}").check().json()
    assert labels == {"app": "web", "extra": "1"}
    assert cluster.kubectl("label", "pod", "web", "-n", ns, "k=v").check().out.strip() == "pod/web labeled"
    assert cluster.kubectl("annotate", "pod", "web", "-n", ns, "note=hi").check().out.strip() == "pod/web annotated"
    got = cluster.kubectl("get", "pod", "web", "-n", ns, "-o",
                          "jsonpath={.metadata.labels.k}/{.metadata.annotations.note}").check().out
    assert got == "v/hi"
    r = cluster.kubectl("patch", "pod", "web", "-n", ns, "--type=json", "-p",
                        '[{"op":"test","path":"/metadata/labels/k","value":"nope"}]')
    assert r.returncode != 0


def test_namespace_cascade(cluster: Cluster):
    cluster.kubectl("create", "namespace", "cascade").check()
    cluster.kubectl("create", "configmap", "a", "-n", "cascade").check()
    cluster.kubectl("create", "-n", "cascade", "-f", "-", input=POD).check()
    out = cluster.kubectl("delete", "namespace", "cascade", "--timeout=60s").check().out
    assert 'namespace "cascade" deleted' in out
    r = cluster.kubectl("get", "configmap", "a", "-n", "cascade")
    assert r.returncode != 0 and "not found" in r.stderr


def test_owner_cascade(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "owner", "-n", ns).check()
    uid = cluster.kubectl("get", "cm", "owner", "-n", ns, "-o", "jsonpath={.metadata.uid}").check().out
    dep = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "dependent", "namespace": ns,
                        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}
    cluster.kubectl("create", "-f", "-", input=json.dumps(dep)).check()
    cluster.kubectl("delete", "configmap", "owner", "-n", ns).check()
    out = cluster.kubectl("wait", "--for=delete", "configmap/dependent", "-n", ns, "--timeout=30s")
    assert out.returncode == 0, out.stderr
    # Orphan keeps the dependent and drops the reference.
    cluster.kubectl("create", "configmap", "owner2", "-n", ns).check()
    uid2 = cluster.kubectl("get", "cm", "owner2", "-n", ns, "-o", "jsonpath={.metadata.uid}").check().out
    dep["metadata"].update(name="dependent2", ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap",
                                                               "name": "owner2", "uid": uid2}])
    cluster.kubectl("create", "-f", "-", input=json.dumps(dep)).check()
    cluster.kubectl("delete", "configmap", "owner2", "-n", ns, "--cascade=orphan").check()
    refs = cluster.kubectl("get", "cm", "dependent2", "-n", ns, "-o", "jsonpath={.metadata.ownerReferences}").check().out
    assert refs == ""


def test_typed_create_commands(cluster: Cluster, ns: str):
    """kubectl's typed generators send protobuf bodies."""
    assert cluster.kubectl("create", "namespace", f"{ns}-x").check().out.strip() == f"namespace/{ns}-x created"
    assert cluster.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=2", "-n", ns).check().out.strip() \
        == "deployment.apps/web created"
    assert cluster.kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}").check().out == "2"
    assert cluster.kubectl("create", "secret", "generic", "s", "--from-literal=k=v", "-n", ns).check().out.strip() \
        == "secret/s created"
    assert cluster.kubectl("get", "secret", "s", "-n", ns, "-o", "jsonpath={.data.k}").check().out == "dg=="
    cluster.kubectl("delete", "namespace", f"{ns}-x", "--wait=false").check()


def test_pod_is_scheduled_and_runs(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=POD).check()
    out = cluster.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/web", "--timeout=30s").check().out
    assert out.strip() == "pod/web condition met"
    row = cluster.kubectl("get", "pod", "web", "-n", ns, "-o", "wide").check().out.splitlines()[1].split()
    assert row[1:3] == ["2/2", "Running"] and row[6] == "e2e-worker"
    desc = cluster.kubectl("describe", "pod", "web", "-n", ns).check().out
    assert f"Successfully assigned {ns}/web to e2e-worker" in desc


def test_dry_run_and_field_validation_warn(cluster: Cluster, ns: str):
    out = cluster.kubectl("create", "configmap", "dry", "-n", ns, "--dry-run=server").check().out
    assert out.strip() == "configmap/dry created (server dry run)"
    r = cluster.kubectl("get", "configmap", "dry", "-n", ns)
    assert r.returncode != 0 and "not found" in r.stderr
    warn = cluster.kubectl("apply", "-n", ns, "--validate=warn", "-f", "-",
                           input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w}\ndata: {a: b}\nbogus: 1\n")
    assert warn.returncode == 0, warn.stderr
    assert 'unknown field "bogus"' in warn.stderr
    assert cluster.kubectl("get", "cm", "w", "-n", ns, "-o", "jsonpath={.data.a}").check().out == "b"


def test_list_in_chunks(cluster: Cluster, ns: str):
    for i in range(5):
        cluster.kubectl("create", "configmap", f"c{i}", "-n", ns).check()
    out = cluster.kubectl("get", "configmaps", "-n", ns, "--chunk-size=2", "-o", "name", "-v=6").check()
    names = [n for n in out.out.split() if n.startswith("configmap/c")]
    assert names == [f"configmap/c{i}" for i in range(5)]
    assert out.stderr.count("limit=2") >= 3  # three pages were fetched
