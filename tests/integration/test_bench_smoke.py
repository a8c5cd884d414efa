"""CI smoke of the benchmark workloads (issue: the benchmark harness): every test case in
benchmarks/workloads/*.yaml runs its `smoke` variant in-process, on virtual time, through the same
harness as `phalanx bench`, and must leave a correct cluster behind: every pod scheduled where it
should be, gangs all-or-nothing, topology respected, claims allocated and reserved, one
reservedFor entry per shared claim. Timing is never asserted."""

from __future__ import annotations

import glob
import os

import pytest

from phalanx.client import VirtualClock
from phalanx.sim.harness import RunOptions, run_workload
from phalanx.sim.workload import load_workload_file, parse_test_cases, select

WORKLOADS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "workloads")

# Test cases whose feature is not built yet (name -> reason): they must fail (strict xfail), and
# the entry goes when the feature lands.
NOT_BUILT: dict[str, str] = {}


def smoke_cases():
    out = []
    for path in sorted(glob.glob(os.path.join(WORKLOADS, "*.yaml"))):
        for case, workload in select(load_workload_file(path), label_filter="smoke"):
            marks = [pytest.mark.xfail(strict=True, reason=NOT_BUILT[case.name])] if case.name in NOT_BUILT else []
            out.append(pytest.param(case, workload, id=f"{os.path.basename(path)}:{case.name}", marks=marks))
    return out


def test_every_test_case_has_a_smoke_variant():
    for path in sorted(glob.glob(os.path.join(WORKLOADS, "*.yaml"))):
        for case in load_workload_file(path):
            assert "smoke" in {w.name for w in case.workloads}, f"{path}: {case.name} has no smoke workload"


@pytest.mark.parametrize("case,workload", smoke_cases())
def test_smoke_workload_leaves_a_correct_cluster(case, workload):
    result = run_workload(case, workload, RunOptions(clock=VirtualClock(), stall=60, timeout=600))
    assert result["status"] == "completed", (result.get("error"), result.get("incomplete"), result.get("traceback"))
    failed = [c for c in result["checks"] if not c["ok"]]
    assert failed == []
    measured = result["measurements"]
    assert measured and measured[0]["podsScheduled"] > 0
    assert measured[0]["completed"]


UNSCHEDULABLE = """
- name: TooBig
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
  - opcode: createPods
    countParam: $pods
    podTemplatePath: big.yaml
    collectMetrics: true
  workloads:
  - name: smoke
    params: {nodes: 2, pods: 3}
"""

BIG_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: big-{{.Index}}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10.1
    resources:
      requests:
        cpu: "3"
"""


def test_pods_that_never_schedule_are_reported_as_not_completed(tmp_path):
    import yaml
    (tmp_path / "big.yaml").write_text(BIG_POD)
    (case,) = parse_test_cases(yaml.safe_load(UNSCHEDULABLE), base_dir=str(tmp_path))
    result = run_workload(case, case.workloads[0], RunOptions(clock=VirtualClock(), stall=30, timeout=120))
    assert result["status"] == "did not complete"
    (inc,) = result["incomplete"]
    assert inc["op"] == "op 1 createPods 3 in namespace-1"
    assert inc["waitingFor"] == "3 pods scheduled"
    assert inc["reason"] == "no progress for 30s"
    assert inc["progress"] == 2  # one 3-CPU pod per 4-CPU node
    check = next(c for c in result["checks"] if c["name"] == "podsScheduled")
    assert not check["ok"] and "2/3 pods scheduled" in check["detail"]
    assert result["measurements"][0]["completed"] is False


def test_phalanx_bench_command_reports_table_json_and_plot(tmp_path):
    import json

    from click.testing import CliRunner

    from phalanx.cli.main import cli
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    res = CliRunner().invoke(cli, ["bench", os.path.join(WORKLOADS, "scheduling-basic.yaml"), "-w", "smoke",
                                   "--runs", "2", "--json", str(out), "--plot", str(png), "-q"])
    assert res.exit_code == 0, res.output
    assert "SchedulingBasic/smoke  [COMPLETED, 2 run(s); median (min-max)]" in res.output
    assert "SchedulingThroughput pods/s" in res.output
    data = json.loads(out.read_text())
    assert [r["run"] for r in data["runs"]] == [1, 2]
    assert data["summary"]["SchedulingBasic/smoke"]["status"] == "completed"
    assert all(r["measurements"][0]["podsScheduled"] == 10 for r in data["runs"])
    assert data["runs"][0]["storeWriteLimit"]["bindings"] == 10
    sqlite = data["runs"][0]["sqliteWriteLimit"]
    # the SQLite replay commits every write as it is made (not one group commit after the timing)
    assert sqlite["bindings"] == 10 and sqlite["commits"] >= 10
    pytest.importorskip("matplotlib")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
