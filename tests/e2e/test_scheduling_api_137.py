"""The Kubernetes 1.37 scheduling.k8s.io API (Workload and PodGroup at v1beta1 and v1alpha3,
CompositePodGroup at v1alpha3) on a 1.37 phalanx cluster, driven by kubectl 1.37 and the official
Python client 37.x; and a 1.36 cluster, which still serves v1alpha2 only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from .conftest import KUBECTL_137, Cluster

CLIENT_37 = Path(sys.executable).parent.parent / "client-37"

WORKLOAD = """\
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata:
  name: training
spec:
  controllerRef: {apiGroup: jobset.x-k8s.io, kind: JobSet, name: training}
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang: {minCount: 4}
"""

POD_GROUP = """\
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: training-workers
spec:
  workloadRef: {workloadName: training, templateName: workers}
  schedulingPolicy:
    gang: {minCount: 4}
"""

COMPOSITE_WORKLOAD = """\
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata:
  name: lws
spec:
  compositePodGroupTemplates:
  - name: replicas
    schedulingPolicy:
      gang: {minGroupCount: 2}
    podGroupTemplates:
    - name: leader
      schedulingPolicy: {basic: {}}
"""

COMPOSITE = """\
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata:
  name: replica-0
spec:
  workloadRef: {workloadName: lws, templateName: replicas}
  schedulingPolicy:
    gang: {minGroupCount: 2}
"""


def kubectl(cluster: Cluster, *args: str, input: str | None = None):
    return cluster.kubectl(*args, input=input, binary=KUBECTL_137)


def poll(fn, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        last = fn()
        if last or time.monotonic() > deadline:
            return last
        time.sleep(0.2)


@pytest.fixture
def ns137(cluster137: Cluster):
    name = "t-" + uuid.uuid4().hex[:8]
    kubectl(cluster137, "create", "namespace", name).check()
    yield name
    kubectl(cluster137, "delete", "namespace", name, "--wait=false")


def test_workload_and_pod_group_lifecycle(cluster137: Cluster, ns137: str):
    kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=WORKLOAD).check()
    kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=POD_GROUP).check()
    wl = kubectl(cluster137, "get", "-n", ns137, "workloads.v1beta1.scheduling.k8s.io", "training",
                 "-o", "json").check().json()
    assert wl["spec"]["podGroupTemplates"] == [
        {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}, "schedulingConstraints": None}]
    pg = kubectl(cluster137, "get", "-n", ns137, "podgroup", "training-workers", "-o", "json").check().json()
    assert pg["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert pg["spec"]["disruptionMode"] == {"single": {}}
    assert pg["spec"]["priority"] == 0 and pg["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert pg["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    table = kubectl(cluster137, "get", "-n", ns137, "podgroups").check().out.splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert table[1].split()[:3] == ["training-workers", "Gang", "training"]

    kubectl(cluster137, "patch", "-n", ns137, "podgroup", "training-workers", "--type=merge",
            "-p", '{"spec":{"schedulingPolicy":{"gang":{"minCount":2}}}}').check()
    kubectl(cluster137, "patch", "-n", ns137, "workload", "training", "--type=json", "-p",
            '[{"op":"replace","path":"/spec/podGroupTemplates/0/schedulingPolicy/gang/minCount","value":3}]').check()
    alpha = kubectl(cluster137, "get", "-n", ns137, "podgroups.v1alpha3.scheduling.k8s.io", "training-workers",
                    "-o", "json").check().json()
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert alpha["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    wl = kubectl(cluster137, "get", "-n", ns137, "workloads.v1alpha3.scheduling.k8s.io", "training",
                 "-o", "json").check().json()
    assert wl["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 3}}

    condition = {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/1 nodes are available", "lastTransitionTime": "2026-10-01T12:00:00Z"}
    kubectl(cluster137, "patch", "-n", ns137, "podgroup", "training-workers", "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": {"conditions": [condition]}})).check()
    row = kubectl(cluster137, "get", "-n", ns137, "podgroup", "training-workers", "--no-headers").check().out
    assert row.split()[:4] == ["training-workers", "Gang", "training", "Unschedulable"]
    bad = {**condition, "reason": ""}
    r = kubectl(cluster137, "patch", "-n", ns137, "podgroup", "training-workers", "--subresource=status",
                "--type=merge", "-p", json.dumps({"status": {"conditions": [bad]}}))
    assert r.returncode == 1
    assert 'status.conditions[0].reason: Required value: must be set' in r.stderr

    kubectl(cluster137, "delete", "-n", ns137, "workload", "training", "--timeout=60s").check()
    assert kubectl(cluster137, "get", "-n", ns137, "workloads", "-o", "name").check().out == ""


def test_pod_group_delete_releases_the_protection_finalizer(cluster137: Cluster, ns137: str):
    kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=WORKLOAD).check()
    kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=POD_GROUP).check()
    kubectl(cluster137, "delete", "-n", ns137, "podgroup", "training-workers", "--wait=false").check()
    gone = poll(lambda: kubectl(cluster137, "get", "-n", ns137, "podgroups", "-o", "name").out == "", timeout=20)
    assert gone


def test_composite_pod_group_create_get(cluster137: Cluster, ns137: str):
    kubectl(cluster137, "apply", "--server-side", "-n", ns137, "-f", "-", input=COMPOSITE_WORKLOAD).check()
    wl = kubectl(cluster137, "get", "-n", ns137, "workload", "lws", "-o", "json").check().json()
    assert wl["spec"]["podGroupTemplates"] is None  # no omitempty upstream
    assert wl["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][0]["schedulingConstraints"] is None
    relabelled = COMPOSITE_WORKLOAD.replace("  name: lws\n", "  name: lws\n  labels: {app: lws}\n")
    kubectl(cluster137, "apply", "--server-side", "-n", ns137, "-f", "-", input=relabelled).check()
    labels = kubectl(cluster137, "get", "-n", ns137, "workload", "lws", "-o", "jsonpath={.metadata.labels}")
    assert json.loads(labels.check().out) == {"app": "lws"}
    kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=COMPOSITE).check()
    cpg = kubectl(cluster137, "get", "-n", ns137, "compositepodgroup", "replica-0", "-o", "json").check().json()
    assert cpg["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert cpg["spec"]["disruptionMode"] == {"single": {}}
    assert cpg["spec"]["workloadRef"] == {"workloadName": "lws", "templateName": "replicas"}
    table = kubectl(cluster137, "get", "-n", ns137, "compositepodgroups").check().out.splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "AGE"]
    assert table[1].split()[:3] == ["replica-0", "Gang", "lws"]


def test_validation_errors_as_kubectl_prints_them(cluster137: Cluster, ns137: str):
    bad = POD_GROUP.replace("minCount: 4", "minCount: 0").replace("workloadRef: {workloadName: training, "
                                                                  "templateName: workers}\n  ", "")
    r = kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=bad)
    assert r.returncode == 1
    assert r.stderr.strip() == ('The PodGroup "training-workers" is invalid: spec.schedulingPolicy.gang.minCount: '
                                'Required value')
    kubectl(cluster137, "create", "-n", ns137, "-f", "-", input=WORKLOAD).check()
    r = kubectl(cluster137, "patch", "-n", ns137, "workload", "training", "--type=merge",
                "-p", '{"spec":{"podGroupTemplates":[{"name":"workers","schedulingPolicy":{"basic":{}}}]}}')
    assert r.returncode == 1
    assert r.stderr.strip() == (
        'The Workload "training" is invalid: \n'
        '* spec.podGroupTemplates[0].schedulingPolicy.basic: Invalid value: null: field is immutable\n'
        '* spec.podGroupTemplates[0].schedulingPolicy.gang: Invalid value: null: field cannot be cleared once set')


def test_kubectl_explain_pod_group_spec(cluster137: Cluster):
    out = kubectl(cluster137, "explain", "podgroups.spec").check().out
    assert "GROUP:      scheduling.k8s.io" in out
    assert "VERSION:    v1beta1" in out
    for field in ("workloadRef", "schedulingPolicy", "disruptionMode", "parentCompositePodGroupName",
                  "preemptionPolicy"):
        assert f"  {field}\t" in out
    nested = kubectl(cluster137, "explain", "workloads.spec.compositePodGroupTemplates.schedulingPolicy.gang")
    assert "minGroupCount\t<integer> -required-" in nested.check().out


def test_kubectl_client_side_validation_and_server_side_apply(cluster137: Cluster, ns137: str):
    typo = WORKLOAD.replace("minCount: 4", "minCout: 4")
    r = kubectl(cluster137, "create", "-n", ns137, "-f", "-", "--validate=strict", input=typo)
    assert r.returncode == 1
    assert 'unknown field "spec.podGroupTemplates[0].schedulingPolicy.gang.minCout"' in r.stderr
    kubectl(cluster137, "apply", "--server-side", "-n", ns137, "-f", "-", input=WORKLOAD).check()
    kubectl(cluster137, "apply", "--server-side", "-n", ns137, "-f", "-",
            input=WORKLOAD.replace("minCount: 4", "minCount: 5")).check()
    wl = kubectl(cluster137, "get", "-n", ns137, "workload", "training", "-o", "json").check().json()
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 5}}


PYTHON_CLIENT_SCRIPT = textwrap.dedent("""\
    import json, sys
    from kubernetes import client, config, watch
    api = client.SchedulingV1beta1Api(config.new_client_from_config(config_file=sys.argv[1]))
    ns = sys.argv[2]
    wl = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "py"},
          "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]}}
    api.create_namespaced_workload(ns, wl)
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "py-workers"},
          "spec": {"workloadRef": {"workloadName": "py", "templateName": "workers"},
                   "schedulingPolicy": {"gang": {"minCount": 2}}}}
    created = api.create_namespaced_pod_group(ns, pg)
    patched = api.patch_namespaced_pod_group("py-workers", ns, {"spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})
    events = []
    w = watch.Watch()
    for ev in w.stream(api.list_namespaced_pod_group, ns, timeout_seconds=5):
        events.append([ev["type"], ev["object"].metadata.name, ev["object"].spec.scheduling_policy.gang.min_count])
        w.stop()
    mode = created.spec.disruption_mode
    print(json.dumps({"created": "single" if mode.single is not None and mode.all is None else "all",
                      "patched": patched.spec.scheduling_policy.gang.min_count, "events": events}))
""")


def test_python_client_37(cluster137: Cluster, ns137: str, tmp_path: Path):
    if not CLIENT_37.is_dir():
        pytest.skip("the kubernetes 37.x client is not installed at .venv/client-37")
    script = tmp_path / "client37.py"
    script.write_text(PYTHON_CLIENT_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(CLIENT_37)}
    p = subprocess.run([sys.executable, str(script), str(cluster137.kubeconfig), ns137], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"created": "single", "patched": 1,
                                    "events": [["ADDED", "py-workers", 1]]}


def test_a_1_36_cluster_serves_v1alpha2_and_refuses_v1beta1(cluster: Cluster):
    r = cluster.kubectl("get", "workloads.v1beta1.scheduling.k8s.io", "-A")
    assert r.returncode == 1
    assert 'the server doesn\'t have a resource type "workloads"' in r.stderr
    versions = cluster.kubectl("api-versions").check().out.split()
    assert "scheduling.k8s.io/v1alpha2" in versions
    assert "scheduling.k8s.io/v1beta1" not in versions and "scheduling.k8s.io/v1alpha3" not in versions
    r = cluster.kubectl("create", "--dry-run=server", "--validate=false", "-n", "default", "-f", "-", input=POD_GROUP)
    assert r.returncode == 1
    assert 'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1beta1"' in r.stderr
