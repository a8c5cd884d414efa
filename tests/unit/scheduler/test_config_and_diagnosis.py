"""KubeSchedulerConfiguration defaults and merging, and the FailedScheduling message format."""

from __future__ import annotations

import pytest
import yaml

from phalanx.machinery.featuregates import FeatureGates
from phalanx.scheduler.framework import Code, Framework, Status
from phalanx.scheduler.framework.config import (
    ConfigurationError,
    KubeSchedulerConfiguration,
    PluginRef,
    PluginSet,
    default_plugin_args,
    default_plugins,
    load_configuration,
    merge_plugin_set,
)
from phalanx.scheduler.framework.diagnosis import Diagnosis, FitError, NodeToStatus, fit_error_message


def _names(refs: list[PluginRef]) -> list[tuple[str, int]]:
    return [(r.name, r.weight) for r in refs]


def test_default_plugins_match_upstream_with_1_36_gates():
    gates = FeatureGates({"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True})
    assert _names(default_plugins(gates).multi_point.enabled) == [
        ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
        ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
        ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 0), ("DefaultPreemption", 0),
        ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
        ("NodeDeclaredFeatures", 0), ("GangScheduling", 0), ("TopologyPlacementGenerator", 0), ("PodGroupPodsCount", 1)]


def test_default_framework_runs_the_in_tree_plugins_with_upstream_weights():
    fw = Framework()
    lp = fw.list_plugins()
    assert [p["name"] for p in lp["filter"]] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                                                 "NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"]
    assert {p["name"]: p["weight"] for p in lp["score"]} == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
        "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1}
    assert [p["name"] for p in lp["postFilter"]] == ["DefaultPreemption"]
    assert "DefaultBinder" in fw.unavailable_plugins and "ImageLocality" in fw.unavailable_plugins


@pytest.mark.parametrize("custom, enabled, disabled", [
    (PluginSet(), ["A", "B", "C"], []),
    (PluginSet(disabled=[PluginRef("B")]), ["A", "C"], ["B"]),
    (PluginSet(disabled=[PluginRef("*")], enabled=[PluginRef("C"), PluginRef("X")]), ["C", "X"], ["*"]),
    (PluginSet(enabled=[PluginRef("X"), PluginRef("B", 5)]), ["A", "B:5", "C", "X"], []),
])
def test_merge_plugin_set(custom, enabled, disabled):
    default = PluginSet(enabled=[PluginRef("A"), PluginRef("B", 1), PluginRef("C")])
    merged = merge_plugin_set(default, custom)
    assert [f"{p.name}:{p.weight}" if p.weight and p.name == "B" and p.weight != 1 else p.name for p in merged.enabled] == enabled
    assert [p.name for p in merged.disabled] == disabled


def test_plugin_args_defaults():
    assert default_plugin_args("NodeResourcesFit") == {"scoringStrategy": {
        "type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}
    assert default_plugin_args("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated",
                                                                         "resources": [{"name": "cpu"}]}}) == {
        "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}}
    assert default_plugin_args("DefaultPreemption") == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    assert default_plugin_args("InterPodAffinity") == {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False}
    assert default_plugin_args("PodTopologySpread")["defaultingType"] == "System"
    assert default_plugin_args("NodeResourcesBalancedAllocation")["resources"] == [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    assert default_plugin_args("NodeName") is None


def test_load_configuration_from_yaml():
    cfg = load_configuration(yaml.safe_load("""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
- schedulerName: binpack
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""))
    assert cfg.percentage_of_nodes_to_score == 30
    prof = cfg.profiles[0]
    assert prof.scheduler_name == "binpack"
    assert prof.args_for("NodeResourcesFit")["scoringStrategy"] == {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}
    assert prof.args_for("DefaultPreemption") == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    fw = Framework(prof, percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score)
    scores = {p["name"]: p["weight"] for p in fw.list_plugins()["score"]}
    assert scores["NodeResourcesFit"] == 5 and "NodeResourcesBalancedAllocation" not in scores
    assert fw.num_feasible_nodes_to_find(1000) == 300


def test_default_configuration_has_one_default_profile():
    cfg = KubeSchedulerConfiguration()
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert cfg.percentage_of_nodes_to_score == 0


@pytest.mark.parametrize("obj, message", [
    ({"percentageOfNodesToScore": 120}, "percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]"),
    ({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}, 'profiles[1].schedulerName: Duplicate value: "a"'),
    ({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Random"}}}]}]},
     'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Random": supported values: '
     '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
])
def test_invalid_configuration(obj, message):
    with pytest.raises(ConfigurationError) as e:
        load_configuration(obj)
    assert str(e.value) == message


# -- FailedScheduling messages -----------------------------------------------------------------------

def _st(code: Code, *reasons: str, plugin: str = "P") -> Status:
    return Status.new(code, *reasons).with_plugin(plugin)


def test_message_counts_and_sorts_reasons():
    d = Diagnosis()
    d.node_to_status.set("cp", _st(Code.UnschedulableAndUnresolvable,
                                   "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"))
    for n in ("w1", "w2", "w3"):
        d.node_to_status.set(n, _st(Code.Unschedulable, "Insufficient cpu"))
    assert fit_error_message(4, d) == ("0/4 nodes are available: 1 node(s) had untolerated taint "
                                       "{node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu.")


def test_message_counts_each_reason_of_a_multi_reason_status():
    d = Diagnosis()
    d.node_to_status.set("a", _st(Code.Unschedulable, "Insufficient cpu", "Insufficient memory"))
    d.node_to_status.set("b", _st(Code.Unschedulable, "Insufficient memory"))
    d.node_to_status.set("c", _st(Code.Unschedulable, "Too many pods"))
    # Sorted as strings, exactly as upstream's sort.Strings does.
    assert fit_error_message(3, d) == "0/3 nodes are available: 1 Insufficient cpu, 1 Too many pods, 2 Insufficient memory."


def test_message_uses_the_prefilter_message_alone():
    d = Diagnosis(NodeToStatus(absent_nodes_status=_st(Code.UnschedulableAndUnresolvable, "pod affinity terms conflict")))
    d.pre_filter_msg = "pod affinity terms conflict"
    assert fit_error_message(5, d) == "0/5 nodes are available: pod affinity terms conflict."


def test_message_counts_absent_nodes_and_appends_the_postfilter_message():
    d = Diagnosis(NodeToStatus(absent_nodes_status=_st(Code.UnschedulableAndUnresolvable,
                                                       "node(s) didn't satisfy plugin(s) [NodeAffinity]")))
    d.node_to_status.set("n1", _st(Code.Unschedulable, "node(s) didn't have free ports for the requested pod ports"))
    d.post_filter_msg = ("preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
                         "2 Preemption is not helpful for scheduling.")
    assert str(FitError(None, 3, d)) == (
        "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.")


def test_plugin_counts_for_explanations():
    d = Diagnosis()
    d.node_to_status.set("a", _st(Code.Unschedulable, "Insufficient cpu", plugin="NodeResourcesFit"))
    d.node_to_status.set("b", _st(Code.Unschedulable, "Insufficient cpu", plugin="NodeResourcesFit"))
    d.node_to_status.set("c", _st(Code.UnschedulableAndUnresolvable, "x", plugin="TaintToleration"))
    assert d.plugin_counts() == {"NodeResourcesFit": 2, "TaintToleration": 1}
    names = ["a", "b", "c", "d"]
    assert d.node_to_status.nodes_for_status_code(names, Code.Unschedulable) == ["a", "b"]
    assert d.node_to_status.nodes_for_status_code(names, Code.UnschedulableAndUnresolvable) == ["c", "d"]
