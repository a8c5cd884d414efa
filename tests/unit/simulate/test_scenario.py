"""The scenario file: a valid one parses into variants, stream and failures; every bad field is an
error naming the file and the field path, all of them at once."""

from __future__ import annotations

import textwrap

import pytest

from phalanx.machinery.strictyaml import ConfigFileError
from phalanx.simulate.scenario import load_scenario, parse_scenario

CLUSTER = """
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
name: c
featureGates:
  GenericWorkload: true
  GangScheduling: true
  TopologyAwareWorkloadScheduling: true
  DRAWorkloadResourceClaims: true
runtimeConfig:
  api/alpha: "true"
nodePools:
- name: cp
  role: control-plane
- name: gpu
  count: 8
  labels:
    example.com/rack: "rack-{i//4}"
    topology.kubernetes.io/zone: zone-a
"""

BASE = """
apiVersion: phalanx.dev/v1alpha1
kind: Scenario
name: s
seed: 4
duration: 2h
cluster: cluster.yaml
workload:
- template: {name: train, count: 3, every: 10m, pods: 4, gpusPerPod: 1, duration: 30m, topology: rack}
"""


@pytest.fixture
def scenario_dir(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    return tmp_path


def write(dir_, text: str) -> str:
    path = dir_ / "scenario.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def problems(dir_, text: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigFileError) as e:
        load_scenario(write(dir_, text))
    assert str(e.value).startswith(str(dir_ / "scenario.yaml") + ": ")  # every line names the file
    return e.value.problems


def test_valid_scenario(scenario_dir):
    s = load_scenario(write(scenario_dir, BASE + """
variants:
- name: rack
- name: anywhere
  overrides: {topology: null, priority: 10}
failures:
- {at: 30m, nodes: {matchLabels: {example.com/rack: rack-1}}, recoverAfter: 10m}
- {at: 1h, node: gpu-2, devices: [gpu-0, gpu-1]}
"""))
    assert (s.name, s.seed, s.duration, s.sample_every) == ("s", 4, 7200.0, 60.0)
    assert [v.name for v in s.variants] == ["rack", "anywhere"]
    assert len(s.variants[0].cluster.nodes) == 9 and s.variants[0].cluster.storage == "memory"
    rack = list(s.stream(s.variants[0]))
    anywhere = list(s.stream(s.variants[1]))
    assert [(a.name, a.arrival, a.topology) for a in rack] == [("train-0", 0.0, "rack"), ("train-1", 600.0, "rack"),
                                                             ("train-2", 1200.0, "rack")]
    assert {(a.topology, a.priority) for a in anywhere} == {(None, 10)}
    down, devices = s.failures
    assert (down.at, down.recover_after, down.devices) == (1800.0, 600.0, None)
    assert down.nodes_of(s.variants[0].cluster) == ["gpu-4", "gpu-5", "gpu-6", "gpu-7"]
    assert (devices.node, devices.devices, devices.recover_after) == ("gpu-2", ["gpu-0", "gpu-1"], None)


def test_default_variant_and_inline_cluster(tmp_path):
    inline = textwrap.indent(CLUSTER.strip(), "  ")
    s = load_scenario(write(tmp_path, BASE.replace("cluster: cluster.yaml", "cluster:\n" + inline)))
    assert [v.name for v in s.variants] == ["default"]
    assert s.variants[0].cluster_source == "inline"


@pytest.mark.parametrize("change, path, message", [
    ("kind: Scenario", "kind", "unsupported value \"Scenari\""),
    ("duration: 2h", "duration", "invalid duration \"2 hours\""),
    ("seed: 4", "seed", "expected an integer"),
    ("name: s", "colour", "unknown field"),
])
def test_header_errors(scenario_dir, change, path, message):
    bad = {"kind": "kind: Scenari", "duration": "duration: 2 hours", "seed": "seed: four",
           "colour": "name: s\ncolour: red"}[path]
    found = problems(scenario_dir, BASE.replace(change, bad))
    assert any(p == path and message in m for p, m in found), found


@pytest.mark.parametrize("entry, path, message", [
    ("- template: {name: t, count: -1}", "workload[0].template.count", "expected an integer >= 0"),
    ("- template: {name: t, pods: {choice: [1, 2]}}", "workload[0].template.pods", "distributions are for generators"),
    ("- template: {name: t, podz: 3}", "workload[0].template.podz", "unknown field"),
    ("- template: {name: t, kind: Deployment}", "workload[0].template.kind", 'supported values: "Job", "JobSet"'),
    ("- template: {name: t, cpuPerPod: lots}", "workload[0].template.cpuPerPod", "invalid quantity"),
    ("- template: {name: t, topology: row}", "workload[0].template.topology", 'is a level "row"'),
    ("- generator: {name: g, pods: 2}", "workload[0].generator.arrivals", "required"),
    ("- generator: {name: g, arrivals: {poisson: {ratePerHour: 0}}}", "workload[0].generator.arrivals.poisson.ratePerHour",
     "expected a number > 0"),
    ("- generator: {name: g, arrivals: {every: 1m}, pods: {choice: [1, 2], weights: [1]}}",
     "workload[0].generator.pods.weights", "expected 2 numbers"),
    ("- generator: {name: g, arrivals: {every: 1m}, duration: {gamma: {k: 1}}}", "workload[0].generator.duration",
     "expected one of: choice, uniform, lognormal, exponential"),
    ("- generator: {name: g, arrivals: {every: 1m}, sharedClaim: {probability: 2}}",
     "workload[0].generator.sharedClaim.probability", "between 0 and 1"),
    ("- cron: {}", "workload[0]", "expected one of: template, generator, trace"),
    ("- trace: {format: philly, path: missing.json}", "workload[0].trace.path", "no such file or directory"),
])
def test_workload_errors(scenario_dir, entry, path, message):
    text = BASE.split("workload:")[0] + "workload:\n" + entry + "\n"
    found = problems(scenario_dir, text)
    assert any(p == path and message in m for p, m in found), found


@pytest.mark.parametrize("extra, path, message", [
    ("variants:\n- name: Rack_1", "variants[0].name", "DNS-1123 label"),
    ("variants:\n- name: a\n- name: a", "variants[1].name", 'duplicate variant "a"'),
    ("variants:\n- name: a\n  overrides: {pods: 3}", "variants[0].overrides.pods", "unknown field"),
    ("variants:\n- name: a\n  overrides: {sharedClaim: maybe}", "variants[0].overrides.sharedClaim",
     "expected a boolean"),
    ("variants:\n- name: a\n  schedulerConfig: {apiVersion: kubescheduler.config.k8s.io/v0}",
     "variants[0].schedulerConfig", "invalid KubeSchedulerConfiguration"),
    ("failures:\n- {at: 1h, node: gpu-99}", "failures[0].node", 'no node "gpu-99"'),
    ("failures:\n- {at: 1h, nodes: {matchLabels: {example.com/rack: rack-9}}}", "failures[0].nodes",
     "selects no node"),
    ("failures:\n- {at: 1h}", "failures[0]", "exactly one of: node"),
    ("failures:\n- {node: gpu-1}", "failures[0].at", "required"),
    ("failures:\n- {at: 1h, node: gpu-1, devices: []}", "failures[0].devices", "at least one device"),
])
def test_variant_and_failure_errors(scenario_dir, extra, path, message):
    found = problems(scenario_dir, BASE + extra + "\n")
    assert any(p == path and message in m for p, m in found), found


def test_every_problem_at_once(scenario_dir):
    found = problems(scenario_dir, BASE.replace("seed: 4", "seed: x").replace("duration: 2h", "duration: -1s"))
    assert {p for p, _ in found} >= {"seed", "duration"}


def test_cluster_config_errors_name_its_file(scenario_dir):
    (scenario_dir / "cluster.yaml").write_text(CLUSTER.replace("count: 8", "count: eight"))
    found = problems(scenario_dir, BASE)
    assert any(p == "cluster" and "cluster.yaml: nodePools[1].count" in m for p, m in found), found


def test_inline_cluster_errors_name_the_field(tmp_path):
    inline = textwrap.indent(CLUSTER.strip().replace("count: 8", "count: eight"), "  ")
    found = problems(tmp_path, BASE.replace("cluster: cluster.yaml", "cluster:\n" + inline))
    assert any(p == "cluster.nodePools[1].count" for p, _ in found), found


def test_kubernetes_version_maps_merged_gates(scenario_dir):
    s = load_scenario(write(scenario_dir, BASE + "kubernetesVersion: v1.37\n"))
    spec = s.variants[0].cluster
    assert spec.kubernetes_version == "v1.37.1"
    assert "GangScheduling" not in spec.feature_gates and spec.feature_gates.get("GenericWorkload") is True
    assert any("GangScheduling is GenericWorkload in Kubernetes 1.37" in n for n in s.notes)


def test_malformed_yaml_names_line():
    with pytest.raises(ConfigFileError) as e:
        parse_scenario("apiVersion: [", "broken.yaml")
    assert str(e.value).startswith("broken.yaml: line ") and "invalid YAML" in str(e.value)
