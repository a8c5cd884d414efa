"""What a Kubernetes user expects around the workloads: discovery and docs (`/openapi/v2`,
`kubectl explain` with upstream's descriptions), and the other built-in kinds real tools touch."""

from __future__ import annotations

import pytest

from .conftest import KUBECTL_137, Cluster

UNKNOWN = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"


@pytest.mark.parametrize("binary", ["1.36.4", "1.37.1"])
def test_apply_of_an_unknown_kind_says_no_matches_for_kind(cluster: Cluster, binary: str):
    kwargs = {"binary": KUBECTL_137} if binary == "1.37.1" else {}
    r = cluster.kubectl("apply", "-f", "-", input=UNKNOWN, **kwargs)
    assert r.returncode != 0
    assert 'no matches for kind "Widget" in version "example.com/v1"' in r.stderr, r.stderr


def test_explain_prints_upstreams_descriptions(cluster: Cluster):
    out = cluster.kubectl("explain", "podgroup.spec.schedulingPolicy").check().out
    assert "SchedulingPolicy defines the scheduling policy for this instance of the" in out
    assert "Exactly one policy must be set." in out
    out = cluster.kubectl("explain", "pod.spec.nodeName").check().out
    assert "NodeName indicates in which node this pod is scheduled." in out
    out = cluster.kubectl("explain", "resourceclaim.status.reservedFor").check().out
    assert "ReservedFor indicates which entities are currently allowed to use" in out


def test_explain_on_1_37_prints_1_37_descriptions(cluster137: Cluster):
    out = cluster137.kubectl("explain", "podgroup.spec.schedulingPolicy", binary=KUBECTL_137).check().out
    assert "VERSION:    v1beta1" in out
    assert "schedulingPolicy defines the scheduling policy for this instance of the" in out
