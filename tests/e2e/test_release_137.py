"""A Kubernetes 1.37 cluster as a user meets it: the version it reports, the API versions it serves,
and kubectl of both releases talking to clusters of both releases (one minor of skew each way).
"""

from __future__ import annotations

import json

import pytest

from .conftest import KUBECTL, KUBECTL_137, POD_SMOKE, Cluster

pytestmark = pytest.mark.skipif(not KUBECTL_137.exists(), reason="kubectl 1.37.1 not installed (.ci/run installs it)")


def k137(cluster: Cluster, *args: str, **kw):
    return cluster.kubectl(*args, binary=KUBECTL_137, **kw)


def test_a_cluster_with_no_config_is_the_newest_release(cluster137: Cluster):
    server = json.loads(k137(cluster137, "version", "-o", "json").check().out)["serverVersion"]
    assert server["gitVersion"] == "v1.37.1-phalanx"
    assert (server["major"], server["minor"]) == ("1", "37")
    table = cluster137.phalanx("get", "clusters").check().out.splitlines()
    assert table[0].split()[:3] == ["NAME", "STATUS", "VERSION"]
    assert ["e2e137", "Running", "v1.37.1"] in [line.split()[:3] for line in table[1:]]


def test_1_37_serves_v1beta1_and_v1alpha3_and_no_v1alpha2(cluster137: Cluster):
    versions = k137(cluster137, "api-versions").check().out.split()
    assert "scheduling.k8s.io/v1beta1" in versions
    assert "scheduling.k8s.io/v1alpha3" in versions
    assert "scheduling.k8s.io/v1alpha2" not in versions
    resources = k137(cluster137, "api-resources", "--api-group", "scheduling.k8s.io", "-o", "wide").check().out
    rows = {tuple(line.split()[:3]) for line in resources.splitlines()[1:]}
    assert ("workloads", "scheduling.k8s.io/v1beta1", "true") in rows
    assert ("podgroups", "scheduling.k8s.io/v1beta1", "true") in rows
    assert ("compositepodgroups", "scheduling.k8s.io/v1alpha3", "true") in rows



def test_a_1_36_manifest_is_refused_on_1_37(cluster137: Cluster):
    """A v1alpha2 PodGroup is refused on 1.37, in kubectl's own words, with client-side validation
    off and on (on: kubectl validates against /openapi/v2, which does not define the kind)."""
    old = "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\n" \
          "spec: {schedulingPolicy: {basic: {}}}\n"
    for validate in ("--validate=false", "--validate=strict"):
        r = k137(cluster137, "apply", "-n", "default", validate, "-f", "-", input=old)
        assert r.returncode != 0
        assert 'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1alpha2"' in r.stderr, r.stderr
    assert k137(cluster137, "get", "podgroups", "g", "-n", "default").returncode != 0


def test_1_36_serves_v1alpha2_and_no_v1beta1(cluster: Cluster):
    versions = cluster.kubectl("api-versions").check().out.split()
    assert "scheduling.k8s.io/v1alpha2" in versions
    assert "scheduling.k8s.io/v1beta1" not in versions
    assert "scheduling.k8s.io/v1alpha3" not in versions


def test_one_object_read_at_both_1_37_versions(cluster137: Cluster):
    ns = "default"
    pg = ("apiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\nmetadata: {name: both}\n"
          "spec: {schedulingPolicy: {gang: {minCount: 2}}}\n")
    assert k137(cluster137, "apply", "-n", ns, "-f", "-", input=pg).check().out.strip() \
        == "podgroup.scheduling.k8s.io/both created"
    try:
        beta = k137(cluster137, "get", "podgroups.v1beta1.scheduling.k8s.io", "both", "-n", ns, "-o", "json").check().json()
        alpha = k137(cluster137, "get", "podgroups.v1alpha3.scheduling.k8s.io", "both", "-n", ns, "-o", "json").check().json()
        assert beta["apiVersion"] == "scheduling.k8s.io/v1beta1"
        assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
        assert beta["metadata"]["uid"] == alpha["metadata"]["uid"]
        assert beta["spec"]["schedulingPolicy"] == alpha["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    finally:
        k137(cluster137, "delete", "podgroups.v1beta1.scheduling.k8s.io", "both", "-n", ns, "--wait=false")


@pytest.mark.parametrize("binary", [KUBECTL, KUBECTL_137], ids=["kubectl-1.36.4", "kubectl-1.37.1"])
def test_kubectl_of_either_release_drives_a_1_37_cluster(cluster137: Cluster, binary):
    ns = f"skew-{binary.parent.parent.name.replace('.', '')}".lower()
    run = lambda *a, **kw: cluster137.kubectl(*a, binary=binary, **kw)  # noqa: E731
    run("create", "namespace", ns).check()
    try:
        assert "Server Version: v1.37.1" in run("version").check().out
        assert run("apply", "-n", ns, "-f", "-", input=POD_SMOKE).check().out.strip() == "pod/smoke created"
        assert run("apply", "-n", ns, "-f", "-", input=POD_SMOKE).check().out.strip() == "pod/smoke unchanged"
        table = run("get", "pods", "-n", ns).check().out.splitlines()
        assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        wl = ("apiVersion: scheduling.k8s.io/v1beta1\nkind: Workload\nmetadata: {name: w}\n"
              "spec:\n  podGroupTemplates:\n  - name: workers\n    schedulingPolicy: {gang: {minCount: 2}}\n")
        assert run("apply", "-n", ns, "-f", "-", input=wl).check().out.strip() == "workload.scheduling.k8s.io/w created"
        assert run("get", "workloads", "-n", ns, "-o", "name").check().out.strip() == "workload.scheduling.k8s.io/w"
    finally:
        run("delete", "namespace", ns, "--wait=false")
