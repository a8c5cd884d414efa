"""KWOK Stage files: selectors (jq), delays, weights and Go status templates, read as KWOK reads them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from phalanx.nodes.stages import StageError, load_stages, parse_stage, pick
from phalanx.nodes.stages.gotemplate import TemplateError, render

KWOK_STAGES = Path(__file__).resolve().parents[4] / "shared" / "data" / "kwok-stages"


def kwok_file(name: str) -> str:
    path = KWOK_STAGES / f"{name}.yaml"
    if not path.exists():
        pytest.skip(f"KWOK's stage files are not in {KWOK_STAGES} (shared test data)")
    return path.read_text()


def stage(spec: dict, name: str = "s") -> dict:
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name},
            "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Pod"}, **spec}}


def job_pod(**status) -> dict:
    return {"metadata": {"name": "p", "ownerReferences": [{"kind": "Job", "name": "j"}]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": status}


def test_kwok_pod_complete_selects_running_job_pods_only():
    (s,) = load_stages(kwok_file("pod-complete"), "pod-complete.yaml")
    assert s.matches(job_pod(phase="Running"))
    assert not s.matches(job_pod(phase="Pending"))
    deleted = job_pod(phase="Running")
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not s.matches(deleted)
    bare = job_pod(phase="Running")
    bare["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet"}]
    assert not s.matches(bare)


def test_kwok_node_stage_selects_on_condition_query():
    (s,) = load_stages(kwok_file("node-initialize"), "node-initialize.yaml")
    assert s.kind == "Node"
    assert s.matches({"status": {}})
    assert s.matches({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not s.matches({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})


def test_kwok_heartbeat_delay_is_drawn_between_duration_and_jitter():
    (s,) = load_stages(kwok_file("node-heartbeat"), "node-heartbeat.yaml")
    delays = {s.delay({}, 0.0, random.Random(seed)) for seed in range(20)}
    assert all(20.0 <= d <= 25.0 for d in delays) and len(delays) > 1
    assert s.immediate_next


def test_delay_from_annotation_as_duration_time_or_empty():
    s = parse_stage(stage({"delay": {"durationMilliseconds": 1000, "durationFrom": {
        "expressionFrom": '.metadata.annotations["d"]'}}}))
    assert s.delay({"metadata": {"annotations": {"d": "5s"}}}, 0.0) == 5.0
    assert s.delay({"metadata": {"annotations": {"d": "1970-01-01T00:01:40Z"}}}, 40.0) == 60.0
    assert s.delay({"metadata": {"annotations": {"d": ""}}}, 0.0) == 0.0
    assert s.delay({"metadata": {}}, 0.0) == 1.0


def test_weights_pick_among_matching_stages():
    heavy = parse_stage(stage({"weight": 1000}, "heavy"))
    light = parse_stage(stage({"weight": 0, "weightFrom": {"expressionFrom": ".metadata.annotations.w"}}, "light"))
    obj = {"metadata": {"annotations": {}}}
    assert {pick([heavy, light], obj, random.Random(i)).name for i in range(10)} == {"heavy"}
    obj["metadata"]["annotations"]["w"] = "1000000"
    picked = [pick([heavy, light], obj, random.Random(i)).name for i in range(50)]
    assert picked.count("light") > 40


def test_selector_labels_annotations_and_operators():
    s = parse_stage(stage({"selector": {"matchLabels": {"app": "a"}, "matchAnnotations": {"x": "1"},
                                        "matchExpressions": [{"key": ".spec.hostNetwork", "operator": "In",
                                                              "values": ["true"]}]}}))
    obj = {"metadata": {"labels": {"app": "a"}, "annotations": {"x": "1"}}, "spec": {"hostNetwork": True}}
    assert s.matches(obj)
    obj["spec"]["hostNetwork"] = False
    assert not s.matches(obj)


@pytest.mark.parametrize("spec, field", [
    ({"selector": {"matchExpressions": [{"key": ".a", "operator": "Matches"}]}}, "matchExpressions[0].operator"),
    ({"selector": {"matchExpressions": [{"key": ".a[", "operator": "Exists"}]}}, "matchExpressions[0].key"),
    ({"selector": {"matchExpressions": [{"key": ".a", "operator": "In"}]}}, "matchExpressions[0].values"),
    ({"delay": {"durationMilliseconds": -1}}, "spec.delay.durationMilliseconds"),
    ({"resourceRef": {}}, "spec.resourceRef.kind"),
])
def test_bad_stage_names_file_and_field(spec, field):
    with pytest.raises(StageError) as e:
        load_stages(yaml.safe_dump(stage(spec, "bad")), "my-stages.yaml")
    assert "my-stages.yaml" in str(e.value) and "bad" in str(e.value) and field in str(e.value)


def test_kwok_pod_ready_template_renders_running_status():
    (s,) = load_stages(kwok_file("pod-ready"), "pod-ready.yaml")
    pod = {"metadata": {"name": "p", "uid": "u", "namespace": "default"},
           "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "busybox"}],
                    "readinessGates": [{"conditionType": "example.com/ok"}]}, "status": {}}
    funcs = {"Now": lambda: "2026-01-01T00:00:00Z", "NodeIPWith": lambda n: "172.18.0.2",
             "PodIPWith": lambda *a: "10.244.0.2"}
    status = yaml.safe_load(render(s.next["statusTemplate"], pod, funcs))
    assert status["phase"] == "Running" and status["podIP"] == "10.244.0.2" and status["hostIP"] == "172.18.0.2"
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "Ready", "ContainersReady", "example.com/ok"]
    assert status["containerStatuses"][0]["state"]["running"]["startedAt"] == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize("src, data, out", [
    ('{{ $x := "a" }}{{ $x | Quote }}', None, '"a"'),
    ("{{ range $i, $e := .l }}{{ $i }}={{ $e }};{{ else }}none{{ end }}", {"l": ["a", "b"]}, "0=a;1=b;"),
    ("{{ range .l }}x{{ else }}none{{ end }}", {"l": []}, "none"),
    ("{{ with .m }}{{ .k }}{{ else }}no{{ end }}", {"m": {"k": 1}}, "1"),
    ('{{ if eq .a "x" }}1{{ else if eq .a "y" }}2{{ else }}3{{ end }}', {"a": "y"}, "2"),
    ("{{ or .missing 7 }}", {}, "7"),
    ('{{ index .m "a/b" }}', {"m": {"a/b": "v"}}, "v"),
    ("a  {{- 1 -}}  b", None, "a1b"),
    ("{{ YAML .m 1 }}", {"m": {"k": "v"}}, "\n  k: v\n  "),
    ("{{ 5 | Quote }}", None, '"5"'),
])
def test_go_template_subset(src, data, out):
    assert render(src, data) == out


def test_go_template_errors_name_the_problem():
    with pytest.raises(TemplateError, match="Nope"):
        render("{{ Nope }}", {})
    with pytest.raises(TemplateError, match="end"):
        render("{{ if .a }}x", {})
