"""Workload files: parsing, label selection and `$param` substitution (phalanx.sim.workload)."""

from __future__ import annotations

import pytest
import yaml

from phalanx.sim.ops import make_op
from phalanx.sim.workload import (WorkloadError, label_filter_matches, parse_duration, parse_test_cases,
                                  resolve_ops, select)

FILE = """
- name: Gang
  labels: [gang]
  featureGates: {GenericWorkload: true}
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPods
    countParam: $groups
    countMultiplierParam: $podsPerGroup
    namespace: ns
    templateParams:
      podsPerGroup: $podsPerGroup
      fixed: 3
    collectMetrics: true
  workloads:
  - name: smoke
    labels: [short]
    params: {initNodes: 2, groups: 3, podsPerGroup: 4}
  - name: big
    labels: [performance]
    featureGates: {GenericWorkload: false}
    params: {initNodes: 5000, groups: 1000, podsPerGroup: 3}
- name: Basic
  workloadTemplate:
  - opcode: createNodes
    count: 1
  workloads:
  - name: big
    labels: [performance, short]
"""


def cases():
    return parse_test_cases(yaml.safe_load(FILE), base_dir="/w")


def test_params_fill_param_fields_and_template_params():
    (gang, smoke), = select(cases(), ["Gang/smoke"])
    ops = resolve_ops(gang, smoke)
    assert ops[0] == {"opcode": "createNodes", "count": 2, "index": 0}
    assert ops[1]["count"] == 3 and ops[1]["countMultiplier"] == 4
    assert ops[1]["templateParams"] == {"podsPerGroup": 4, "fixed": 3}
    assert make_op(ops[1], gang).count == 12
    assert gang.gates_for(smoke) == {"GenericWorkload": True}


def test_workload_gates_override_the_test_case():
    (gang, big), = select(cases(), ["Gang/big"])
    assert gang.gates_for(big) == {"GenericWorkload": False}


@pytest.mark.parametrize("names,label_filter,want", [
    ([], None, ["Gang/big", "Basic/big"]),                 # default filter: performance
    ([], "performance,-short", ["Gang/big"]),
    ([], "short", ["Gang/smoke", "Basic/big"]),
    (["big"], None, ["Gang/big", "Basic/big"]),            # a workload name in every case
    (["Gang"], None, ["Gang/smoke", "Gang/big"]),          # a case name
    (["Gang/smoke"], "performance", []),                  # names and labels both apply
])
def test_select(names, label_filter, want):
    assert [f"{c.name}/{w.name}" for c, w in select(cases(), names, label_filter)] == want


def test_unknown_workload_name_is_an_error():
    with pytest.raises(WorkloadError, match="no workload named Nope"):
        select(cases(), ["Nope"])


@pytest.mark.parametrize("params,message", [
    ({"initNodes": 1, "groups": 1}, "parameter podsPerGroup is undefined"),
    ({"initNodes": 1, "groups": 1, "podsPerGroup": 1, "extra": 5}, "unused parameters: extra"),
])
def test_parameter_errors(params, message):
    gang = cases()[0]
    gang.workloads[0].params = params
    with pytest.raises(WorkloadError, match=message):
        resolve_ops(gang, gang.workloads[0])


def test_unknown_op_field_and_opcode_are_errors():
    gang = cases()[0]
    with pytest.raises(WorkloadError, match="unknown field"):
        make_op({"opcode": "createNodes", "count": 1, "countt": 2}, gang)
    with pytest.raises(WorkloadError, match="unknown opcode 'createThings'"):
        make_op({"opcode": "createThings"}, gang)


def test_testcases_mapping_and_paths():
    (tc,) = parse_test_cases({"testCases": [yaml.safe_load(FILE)[1]]}, base_dir="/w/benchmarks")
    assert tc.path("templates/pod.yaml") == "/w/benchmarks/templates/pod.yaml"


@pytest.mark.parametrize("labels,flt,want", [
    (["performance"], "performance", True),
    (["performance", "short"], "performance,-short", False),
    (["integration-test"], "+integration-test,-performance", True),
    ([], "performance", False),
])
def test_label_filter(labels, flt, want):
    assert label_filter_matches(flt, labels) is want


@pytest.mark.parametrize("text,seconds", [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), (2, 2.0)])
def test_duration(text, seconds):
    assert parse_duration(text) == seconds


def test_bad_duration():
    with pytest.raises(WorkloadError):
        parse_duration("10 seconds")
