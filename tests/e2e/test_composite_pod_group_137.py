"""examples/composite-pod-group/ on a Kubernetes 1.37 cluster with kubectl 1.37.1: a leader + workers
tree binds in one zone with each leaf in one rack; a second tree whose workers fit in no rack binds
nothing at all, not even its leader, and its pods say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import KUBECTL_137, Cluster, create_cluster
from .test_tutorial import poll

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "composite-pod-group"
ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"

pytestmark = pytest.mark.skipif(not KUBECTL_137.exists(), reason="kubectl 1.37.1 not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def composite(tmp_path_factory) -> Cluster:
    tmp = tmp_path_factory.mktemp("composite")
    c = create_cluster(tmp, "composite", config=(EXAMPLE.parent / "clusters" / "phalanx-composite-1.37.yaml").read_text(), kubernetes=None)
    yield c
    c.phalanx("delete", "cluster", "--name", "composite")


def pods_of(k, jobset: str) -> list[dict]:
    out = k("get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={jobset}", "-o", "json").check().json()
    return out["items"]


def test_a_tree_binds_in_one_zone_and_an_infeasible_leaf_blocks_its_sibling(composite: Cluster):
    def k(*args: str, **kw):
        return composite.kubectl(*args, binary=KUBECTL_137, **kw)

    k("apply", "-f", str(EXAMPLE)).check()  # the directory, as the README says

    def five_running():
        pods = pods_of(k, "trainer")
        return pods if len(pods) == 5 and all(p["status"].get("phase") == "Running" for p in pods) else None
    pods = poll(five_running, timeout=90)
    assert pods, k("get", "pods", "-o", "wide").out
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in k("get", "nodes", "-o", "json").check().json()["items"]}
    placed = {p["metadata"]["name"]: nodes[p["spec"]["nodeName"]] for p in pods}
    assert len({labels[ZONE] for labels in placed.values()}) == 1
    assert len({labels[RACK] for name, labels in placed.items() if "-workers-" in name}) == 1
    for pg in ("trainer-leader", "trainer-workers"):
        k("wait", "--for=condition=PodGroupInitiallyScheduled", f"podgroup/{pg}", "--timeout=30s").check()

    # The same tree with five 6-CPU workers: no rack has five free nodes, so nothing of it binds.
    def bigger(text: str) -> str:
        return (text.replace("trainer", "big").replace("minCount: 4", "minCount: 5")
                .replace("completions: 4", "completions: 5").replace("parallelism: 4", "parallelism: 5"))
    for f in ("workload.yaml", "compositepodgroup.yaml", "podgroups.yaml", "jobset.yaml"):
        k("apply", "-f", "-", input=bigger((EXAMPLE / f).read_text())).check()

    def leader_says_why():
        pods = pods_of(k, "big")
        leader = next((p for p in pods if "-leader-" in p["metadata"]["name"]), None)
        cond = next((c for c in ((leader or {}).get("status") or {}).get("conditions") or []
                     if c["type"] == "PodScheduled"), None)
        return cond if cond and 'composite pod group "big" cannot be scheduled' in cond.get("message", "") else None
    cond = poll(leader_says_why, timeout=60)
    assert cond, json.dumps(pods_of(k, "big"), indent=1)[:3000]
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert all(not p["spec"].get("nodeName") for p in pods_of(k, "big"))
    group = k("get", "podgroup", "big-leader", "-o", "json").check().json()
    initially = next(c for c in group["status"]["conditions"] if c["type"] == "PodGroupInitiallyScheduled")
    assert initially["status"] == "False" and "pod groups big-workers do not fit" in initially["message"]
