"""What `phalanx bench --cluster` applies for each shape, and the room and config it needs."""

from __future__ import annotations

import pytest
import yaml

from phalanx.sim.clusterbench import cluster_config, room_for_pods
from phalanx.sim.clustershapes import GPU_TAINT, ShapeParams, build_shape


def test_jobset_is_the_tutorials_jobset_with_one_podgroup_and_claim_per_gang():
    shape = build_shape(ShapeParams("jobset", pods=32, gangs=4))
    kinds = [m["kind"] for m in shape.manifests]
    assert kinds == ["ResourceClaimTemplate", "Workload"] + ["PodGroup"] * 4 + ["JobSet"]
    groups = [m for m in shape.manifests if m["kind"] == "PodGroup"]
    assert {g["metadata"]["name"] for g in groups} == {"gang-0", "gang-1", "gang-2", "gang-3"}
    for g in groups:
        assert g["spec"]["schedulingPolicy"] == {"gang": {"minCount": 8}}
        assert g["spec"]["schedulingConstraints"] == {"topology": [{"key": "example.com/rack"}]}
        assert g["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-claim"}]
    jobset = shape.manifests[-1]
    rjobs = jobset["spec"]["replicatedJobs"]
    assert [r["name"] for r in rjobs] == ["gang-0", "gang-1", "gang-2", "gang-3"]
    pod = rjobs[2]["template"]["spec"]["template"]["spec"]
    assert pod["schedulingGroup"] == {"podGroupName": "gang-2"}
    assert pod["resourceClaims"] == groups[0]["spec"]["resourceClaims"]  # the PodGroup's claim, shared
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert rjobs[2]["template"]["spec"]["parallelism"] == 8
    assert shape.tolerated == (GPU_TAINT,) and shape.at_once == 32


def test_jobset_pods_must_divide_into_gangs():
    with pytest.raises(ValueError, match="not a multiple of --gangs 5"):
        build_shape(ShapeParams("jobset", pods=32, gangs=5))


def test_gang_shape_creates_podgroups_before_their_pods():
    shape = build_shape(ShapeParams("gang", pods=9, nodes=3))
    kinds = [o["kind"] for o in shape.objects]
    assert kinds == ["PodGroup"] * 3 + ["Pod"] * 9
    assert shape.objects[-1]["spec"]["schedulingGroup"] == {"podGroupName": "gang-2"}
    assert shape.config["nodePools"][1]["count"] == 3


def test_indexed_job_runs_parallelism_pods_at_once():
    shape = build_shape(ShapeParams("indexed-job", pods=100, parallelism=30, run_for="2s"))
    job = shape.manifests[0]
    assert job["spec"]["completions"] == 100 and job["spec"]["parallelism"] == 30
    assert job["spec"]["template"]["metadata"]["annotations"] == {"phalanx.dev/run-for": "2s"}
    assert shape.at_once == 30 and shape.finishes


def test_unknown_shape():
    with pytest.raises(ValueError, match="unknown shape 'nope'"):
        build_shape(ShapeParams("nope"))


def _node(name, pods, taint=None):
    spec = {"taints": [{"key": taint, "effect": "NoSchedule"}]} if taint else {}
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": {"pods": str(pods)}}}


def test_room_counts_nodes_whose_taints_the_shape_tolerates():
    nodes = {"items": [_node("gpu-0", 110, GPU_TAINT), _node("cpu-0", 110), _node("cp", 110, "node-role")]}
    assert room_for_pods(nodes) == 110
    assert room_for_pods(nodes, tolerated=(GPU_TAINT,)) == 220


def test_external_scheduler_config_turns_the_built_in_scheduler_off(tmp_path):
    generated = build_shape(ShapeParams("basic", pods=10, nodes=2)).config
    path = cluster_config(None, generated, True, tmp_path)
    doc = yaml.safe_load(open(path))
    assert doc["scheduler"] == {"enabled": False} and doc["nodePools"][1]["count"] == 2
    assert cluster_config("given.yaml", generated, False, tmp_path) == "given.yaml"
    assert cluster_config(None, None, False, tmp_path) is None


def test_external_scheduler_needs_a_phalanx_config(tmp_path):
    kind = tmp_path / "kind.yaml"
    kind.write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")
    with pytest.raises(ValueError, match="phalanx.dev/v1alpha1"):
        cluster_config(str(kind), None, True, tmp_path)
