"""The benchmark workloads on a Kubernetes 1.37 cluster: every `smoke` variant (written for 1.36)
runs through the same harness with `kubernetes_version="v1.37.1"` and must leave a cluster that
passes the same correctness checks, over as many objects, as the 1.36 run does. Plus what 1.37
changes in a run: the gates it merged, the versions objects are created at, and `phalanx bench
--kubernetes-version`. Timing is never asserted."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from phalanx.client import VirtualClock
from phalanx.sim.harness import RunOptions, effective_gates, run_workload
from phalanx.sim.workload import WorkloadError, parse_test_cases

from .test_bench_smoke import WORKLOADS, smoke_cases


def _run(case, workload, version):
    return run_workload(case, workload, RunOptions(clock=VirtualClock(), stall=60, timeout=600,
                                                   store_limit=False, kubernetes_version=version))


def _checked(result):
    return {c["name"]: (c["ok"], c.get("checked", 0)) for c in result["checks"]}


@pytest.mark.parametrize("case,workload", smoke_cases())
def test_smoke_workload_passes_on_1_37_as_on_1_36(case, workload):
    old, new = _run(case, workload, "v1.36.4"), _run(case, workload, "v1.37.1")
    assert new["status"] == "completed", (new.get("error"), new.get("incomplete"), new.get("traceback"))
    assert (old["kubernetesVersion"], new["kubernetesVersion"]) == ("v1.36.4", "v1.37.1")
    assert [c for c in new["checks"] if not c["ok"]] == []
    assert _checked(new) == _checked(old)
    assert new["measurements"][0]["podsScheduled"] == old["measurements"][0]["podsScheduled"] > 0


def _case(gates: dict, extra: str = "") -> tuple:
    text = f"""
- name: Gates
  featureGates: {json.dumps(gates)}
  workloadTemplate:
  - opcode: createNodes
    count: 1
  workloads:
  - name: smoke
{extra}"""
    (case,) = parse_test_cases(yaml.safe_load(text), base_dir=WORKLOADS)
    return case, case.workloads[0]


def test_1_37_maps_the_merged_gates_to_generic_workload():
    case, w = _case({"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True})
    gates, explicit, ignored, mapped = effective_gates(case, w, "1.37")
    assert gates.release == "1.37" and gates.enabled("GenericWorkload")
    assert explicit == {"GenericWorkload": True} and ignored == []
    assert mapped == {"GangScheduling": "GenericWorkload", "WorkloadAwarePreemption": "GenericWorkload"}


def test_a_merged_gate_alone_turns_on_generic_workload():
    case, w = _case({"GangScheduling": True})
    gates, explicit, _, mapped = effective_gates(case, w, "1.37")
    assert gates.enabled("GenericWorkload") and explicit == {"GenericWorkload": True}
    assert mapped == {"GangScheduling": "GenericWorkload"}


def test_1_36_keeps_the_gates_as_written():
    case, w = _case({"GenericWorkload": True, "GangScheduling": True, "CompositePodGroup": True})
    gates, explicit, ignored, mapped = effective_gates(case, w, "1.36")
    assert gates.release == "1.36" and gates.enabled("GangScheduling")
    assert explicit == {"GenericWorkload": True, "GangScheduling": True}
    assert ignored == ["CompositePodGroup"] and mapped == {}


def test_gates_1_37_cannot_express_are_an_error():
    case, w = _case({"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": False})
    with pytest.raises(WorkloadError, match="cannot be expressed in Kubernetes 1.37: "
                                            "WorkloadAwarePreemption was merged into GenericWorkload"):
        effective_gates(case, w, "1.37")


def test_an_unsupported_version_is_a_run_error():
    case, w = _case({})
    result = run_workload(case, w, RunOptions(clock=VirtualClock(), kubernetes_version="v1.35.0"))
    assert result["status"] == "error"
    assert "Kubernetes 1.35 is not supported" in result["error"]


def test_gang_checks_find_the_v1beta1_pod_groups_on_1_37():
    (case,) = [c for c, _ in smoke_cases_of("gang-preemption.yaml") if c.name == "GangPreemptionPodGroups"]
    w = next(w for w in case.workloads if w.name == "smoke")
    result = _run(case, w, "1.37")
    assert result["status"] == "completed", result.get("error")
    assert result["featureGates"] == {"GenericWorkload": True}
    gangs = next(c for c in result["checks"] if c["name"] == "gangsIntact")
    assert gangs["ok"] and gangs["checked"] > 0  # the checks found the v1beta1 PodGroups


def smoke_cases_of(filename: str) -> list:
    return [p.values[:2] for p in smoke_cases() if p.id.startswith(filename + ":")]


def test_phalanx_bench_kubernetes_version_is_in_the_output_and_json(tmp_path):
    from click.testing import CliRunner

    from phalanx.cli.main import cli
    out = tmp_path / "out.json"
    res = CliRunner().invoke(cli, ["bench", os.path.join(WORKLOADS, "gang-scheduling.yaml"), "-w", "smoke",
                                   "--kubernetes-version", "1.37", "--json", str(out), "-q", "--no-store-limit"])
    assert res.exit_code == 0, res.output
    assert "Kubernetes v1.37.1" in res.output
    assert "feature gates mapped: GangScheduling -> GenericWorkload" in res.output
    data = json.loads(out.read_text())
    assert data["kubernetesVersion"] == "v1.37.1"
    (run,) = data["runs"]
    assert run["kubernetesVersion"] == "v1.37.1" and run["status"] == "completed"
    assert run["mappedFeatureGates"] == {"GangScheduling": "GenericWorkload"}


def test_phalanx_bench_refuses_a_release_phalanx_does_not_serve():
    from click.testing import CliRunner

    from phalanx.cli.main import cli
    res = CliRunner().invoke(cli, ["bench", os.path.join(WORKLOADS, "gang-scheduling.yaml"), "-w", "smoke",
                                   "--kubernetes-version", "v1.38.0"])
    assert res.exit_code == 2
    assert "Kubernetes 1.38 is not supported" in res.output
