"""A smoke run with kubectl 1.37.1 (one minor ahead of the emulated 1.36)."""

from __future__ import annotations

import pytest

from .conftest import KUBECTL_137, POD_SMOKE, Cluster

pytestmark = pytest.mark.skipif(not KUBECTL_137.exists(), reason="kubectl 1.37.1 not installed (.ci/run installs it)")


def test_kubectl_137_smoke(cluster: Cluster, ns: str):
    k = lambda *a, **kw: cluster.kubectl(*a, binary=KUBECTL_137, **kw)  # noqa: E731
    assert "Server Version: v1.36" in k("version").check().out
    assert k("apply", "-n", ns, "-f", "-", input=POD_SMOKE).check().out.strip() == "pod/smoke created"
    assert k("apply", "-n", ns, "-f", "-", input=POD_SMOKE).check().out.strip() == "pod/smoke unchanged"
    assert k("apply", "-n", ns, "-f", "-", input=POD_SMOKE.replace("busybox:1", "busybox:2")).check().out.strip() \
        == "pod/smoke configured"
    table = k("get", "pods", "-n", ns).check().out.splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    pg = "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec:\n  schedulingPolicy: {basic: {}}\n"
    assert k("apply", "-n", ns, "-f", "-", input=pg).check().out.strip() == "podgroup.scheduling.k8s.io/g created"
    assert k("apply", "-n", ns, "-f", "-", input=pg.replace("{name: g}", "{name: g, labels: {a: b}}")).check().out.strip() \
        == "podgroup.scheduling.k8s.io/g configured"
    assert k("delete", "pod", "smoke", "-n", ns, "--wait=false").returncode == 0
