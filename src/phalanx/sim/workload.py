"""Workload files in scheduler_perf's format: test cases, op templates and parameterised workloads.

    cases = load_workload_file("benchmarks/workloads/scheduling-basic.yaml")
    for case, workload in select(cases, names=["SchedulingBasic/5000Nodes_10000Pods"]):
        ops = resolve_ops(case, workload)          # op dicts with every `$param` substituted

A file is what upstream's `performance-config.yaml` is: a list of test cases (or a mapping whose
`testCases` key holds that list). Each test case has

- `name`, optional `featureGates`, `labels`, `defaultPodTemplatePath`, `schedulerConfigPath`
  (not supported: reported), `defaultThresholdMetricSelector`, and the phalanx extension
  `kubelets: true` (run the simulated kubelets: only for workloads that need Running pods);
- `workloadTemplate`: the ops, run one after the other (see `phalanx.sim.ops` for the opcodes);
- `workloads`: named parameter sets with their own `labels`, `featureGates` (override the test
  case's), `threshold` and `thresholdMetricSelector`.

An op field `fooParam: $name` sets `foo` to the workload's param `name` (upstream's `countParam`,
`durationParam`, `maxClaimsPerNodeParam`, `countMultiplierParam`); any other string value that is
exactly `$name` (typically in `templateParams`) is replaced by the param's value. A param that no
op uses is an error, as upstream reports it. Template paths are relative to the file.

Labels select workloads as upstream's `-perf-scheduling-label-filter` does: `performance,-short`
means "has `performance` and not `short`" over the test case's and the workload's labels together.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import yaml

from ..machinery import durations

DEFAULT_LABEL_FILTER = "performance"


class WorkloadError(ValueError):
    """A workload file that cannot be run as written."""


@dataclass
class Workload:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    feature_gates: dict[str, bool] = field(default_factory=dict)
    threshold: float | dict[str, float] | None = None
    threshold_metric_selector: dict[str, Any] | None = None


@dataclass
class TestCase:
    name: str
    workload_template: list[dict[str, Any]]
    workloads: list[Workload]
    feature_gates: dict[str, bool] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    default_pod_template_path: str | None = None
    scheduler_config_path: str | None = None
    default_threshold_metric_selector: dict[str, Any] | None = None
    kubelets: bool = False
    base_dir: str = "."
    source: str = ""

    __test__ = False  # not a pytest class, whatever its name says

    def gates_for(self, workload: Workload) -> dict[str, bool]:
        return {**self.feature_gates, **workload.feature_gates}

    def threshold_selector(self, workload: Workload) -> dict[str, Any]:
        return (workload.threshold_metric_selector or self.default_threshold_metric_selector
                or {"name": "SchedulingThroughput", "dataBucket": "Average"})

    def path(self, relative: str) -> str:
        return relative if os.path.isabs(relative) else os.path.normpath(os.path.join(self.base_dir, relative))


def _labels(v: Any, where: str) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise WorkloadError(f"{where}: labels must be a list of strings")
    return list(v)


def _gates(v: Any, where: str) -> dict[str, bool]:
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, bool) for x in v.values()):
        raise WorkloadError(f"{where}: featureGates must map gate names to true/false")
    return dict(v)


def parse_test_cases(data: Any, *, base_dir: str = ".", source: str = "") -> list[TestCase]:
    if isinstance(data, dict):
        data = data.get("testCases")
    if not isinstance(data, list):
        raise WorkloadError(f"{source or 'workload file'}: expected a list of test cases (or testCases: [...])")
    cases: list[TestCase] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        if not isinstance(raw, dict) or not raw.get("name"):
            raise WorkloadError(f"{source}: test case {i} has no name")
        name = str(raw["name"])
        if name in seen:
            raise WorkloadError(f"{source}: test case name {name} is not unique")
        seen.add(name)
        template = _workload_template(raw.get("workloadTemplate"), name)
        workloads = _parse_workloads(raw.get("workloads") or [], name)
        cases.append(TestCase(name, copy.deepcopy(template), workloads, _gates(raw.get("featureGates"), name),
                              _labels(raw.get("labels"), name), raw.get("defaultPodTemplatePath"),
                              raw.get("schedulerConfigPath"), raw.get("defaultThresholdMetricSelector"),
                              bool(raw.get("kubelets", False)), base_dir, source))
    return cases


def _workload_template(template: Any, case: str) -> list:
    if not isinstance(template, list) or not template:
        raise WorkloadError(f"{case}: workloadTemplate must be a non-empty list of ops")
    for j, op in enumerate(template):
        if not isinstance(op, dict) or not op.get("opcode"):
            raise WorkloadError(f"{case}: op {j} has no opcode")
    return template


def _parse_workloads(raws: list, case: str) -> list[Workload]:
    workloads: list[Workload] = []
    names: set[str] = set()
    for w in raws:
        if not isinstance(w, dict) or not w.get("name"):
            raise WorkloadError(f"{case}: a workload has no name")
        wname = str(w["name"])
        if wname in names:
            raise WorkloadError(f"{case}: workload name {wname} is not unique")
        names.add(wname)
        params = w.get("params") or {}
        if not isinstance(params, dict):
            raise WorkloadError(f"{case}/{wname}: params must be a mapping")
        workloads.append(Workload(wname, dict(params), _labels(w.get("labels"), f"{case}/{wname}"),
                                  _gates(w.get("featureGates"), f"{case}/{wname}"), w.get("threshold"),
                                  w.get("thresholdMetricSelector")))
    if not workloads:
        raise WorkloadError(f"{case}: no workloads")
    return workloads


def load_workload_file(path: str) -> list[TestCase]:
    with open(path) as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise WorkloadError(f"{path}: {e}") from None
    return parse_test_cases(data, base_dir=os.path.dirname(os.path.abspath(path)), source=path)


# -- selection -------------------------------------------------------------------------------------

def label_filter_matches(label_filter: str, labels: Iterable[str]) -> bool:
    have = set(labels)
    for item in (s.strip() for s in label_filter.split(",")):
        if not item:
            continue
        if item.startswith("-"):
            if item[1:] in have:
                return False
        elif item.lstrip("+") not in have:
            return False
    return True


def select(cases: list[TestCase], names: Iterable[str] = (), label_filter: str | None = None
           ) -> list[tuple[TestCase, Workload]]:
    """Workloads chosen by name (`Case/Workload`, a workload name in any case, or a case name) and
    label filter. With no names and no filter, upstream's default filter `performance` applies."""
    names = list(names)
    if not names and label_filter is None:
        label_filter = DEFAULT_LABEL_FILTER
    chosen: list[tuple[TestCase, Workload]] = []
    unmatched = set(names)
    for tc in cases:
        for w in tc.workloads:
            if names:
                hits = {n for n in names if n in (f"{tc.name}/{w.name}", w.name, tc.name)}
                if not hits:
                    continue
                unmatched -= hits
            if label_filter is not None and not label_filter_matches(label_filter, tc.labels + w.labels):
                continue
            chosen.append((tc, w))
    if unmatched:
        raise WorkloadError(f"no workload named {', '.join(sorted(unmatched))}; have: "
                            + ", ".join(f"{tc.name}/{w.name}" for tc in cases for w in tc.workloads))
    return chosen


# -- parameters ------------------------------------------------------------------------------------

_PARAM = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


def _lookup(params: dict[str, Any], ref: str, where: str, used: set[str]) -> Any:
    m = _PARAM.match(ref)
    if not m:
        raise WorkloadError(f"{where}: {ref!r} is not a parameter reference ($name)")
    name = m.group(1)
    if name not in params:
        raise WorkloadError(f"{where}: parameter {name} is undefined")
    used.add(name)
    return params[name]


def _substitute(value: Any, params: dict[str, Any], where: str, used: set[str]) -> Any:
    if isinstance(value, str) and _PARAM.match(value):
        return _lookup(params, value, where, used)
    if isinstance(value, list):
        return [_substitute(v, params, where, used) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, params, f"{where}.{k}", used) for k, v in value.items()}
    return value


def resolve_ops(tc: TestCase, w: Workload) -> list[dict[str, Any]]:
    """The test case's ops with the workload's params filled in (each op gets `index`)."""
    used: set[str] = set()
    ops: list[dict[str, Any]] = []
    for i, raw in enumerate(tc.workload_template):
        where = f"{tc.name}/{w.name} op {i} ({raw['opcode']})"
        op: dict[str, Any] = {}
        for key, value in raw.items():
            if key.endswith("Param") and key != "templateParams" and isinstance(value, str):
                op[key[: -len("Param")]] = _lookup(w.params, value, f"{where}.{key}", used)
            else:
                op[key] = _substitute(value, w.params, f"{where}.{key}", used)
        op["index"] = i
        ops.append(op)
    unused = sorted(set(w.params) - used)
    if unused:
        raise WorkloadError(f"{tc.name}/{w.name}: unused parameters: {', '.join(unused)}")
    return ops


def parse_duration(value: Any) -> float:
    """Go's duration syntax (`10s`, `1m30s`, `500ms`) or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return durations.parse_duration(str(value))
    except ValueError:
        raise WorkloadError(f"invalid duration {value!r}") from None
