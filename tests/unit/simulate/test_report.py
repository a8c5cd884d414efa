"""Reports: per-variant files, the comparison's verdicts and the self-contained HTML."""

from __future__ import annotations

import base64
import csv
import json
import re

from phalanx.simulate.engine import RunResult
from phalanx.simulate.report import comparison, human_duration, write_report, write_variant
from phalanx.simulate.scenario import parse_scenario

SCENARIO = """
apiVersion: phalanx.dev/v1alpha1
kind: Scenario
name: cmp
duration: 1h
cluster:
  apiVersion: phalanx.dev/v1alpha1
  kind: Cluster
  nodePools: [{name: w, count: 2}]
variants: [{name: base}, {name: other}]
workload:
- template: {name: t, count: 2}
"""


def result(variant: str, jct: float, queueing: float) -> RunResult:
    jobs = [{"name": f"t-{i}", "status": "Complete", "started": 1.0, "finished": jct, "queueing_delay": queueing,
             "gang_wait": queueing, "jct": jct, "preempted": 0, "evicted": 0, "pods": 1} for i in range(2)]
    samples = [{"t": 60.0 * i, "gpu_allocation": 0.5, "cpu_allocation": 0.2, "pending_gangs": 0,
                "fragmentation": None} for i in range(3)]
    summary = {"jct_p90": jct, "queueing_delay_p90": queueing, "gpu_allocation_mean": 0.5, "jobs_completed": 2}
    return RunResult(scenario="cmp", variant=variant, seed=0, kubernetes_version="v1.36.4", phalanx_version="0.1.0",
                     jobs=jobs, samples=samples, summary=summary, events=[(0.0, "submit", "t-0"), (0.0, "bind", "p", "n")],
                     run={"wallSeconds": 1.0, "simulatedSeconds": 3600.0, "speedup": 3600.0, "peakRSSBytes": 2**20})


def test_comparison_verdicts():
    rows = {r["metric"]: r for r in comparison([{"summary": {"jct_p90": 100.0, "queueing_delay_p90": 0.0,
                                                             "gpu_allocation_mean": 0.50}},
                                                {"summary": {"jct_p90": 105.0, "queueing_delay_p90": 30.0,
                                                             "gpu_allocation_mean": 0.60}}])}
    assert rows["jct_p90"]["changes"][0] == {"change": 0.05, "text": "+5.0 %", "verdict": None, "headline": True}
    assert rows["queueing_delay_p90"]["changes"][0]["text"] == "from 0"
    assert rows["queueing_delay_p90"]["changes"][0]["verdict"] == "worse"
    assert rows["gpu_allocation_mean"]["changes"][0]["verdict"] == "better"  # +20 %, higher is better


def test_files_and_html(tmp_path):
    s = parse_scenario(SCENARIO, "cmp.yaml")
    dirs = []
    for r in (result("base", 100.0, 0.0), result("other", 200.0, 10.0)):
        write_variant(r, str(tmp_path / r.variant))
        dirs.append(str(tmp_path / r.variant))
    doc = json.loads((tmp_path / "base" / "result.json").read_text())
    assert doc["meta"]["variant"] == "base" and len(doc["jobs"]) == 2 and len(doc["samples"]) == 3
    assert [json.loads(line) for line in (tmp_path / "base" / "events.jsonl").read_text().splitlines()] == \
        [[0.0, "submit", "t-0"], [0.0, "bind", "p", "n"]]
    with open(tmp_path / "base" / "jobs.csv") as f:
        assert [row["jct"] for row in csv.DictReader(f)] == ["100.0", "100.0"]
    path = write_report(s, dirs, str(tmp_path))
    html = open(path).read()
    assert len(re.findall(r"data:image/png;base64,", html)) == 6
    assert base64.b64decode(re.search(r"base64,([^']+)'", html).group(1))[:4] == b"\x89PNG"
    assert "<td class=\"worse\">+100.0 %</td>" in html  # JCT p90 doubled
    assert "other</b>: JCT p90 1 m 40 s → 3 m 20 s" in html
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [v["meta"]["variant"] for v in summary["variants"]] == ["base", "other"]


def test_human_durations():
    assert [human_duration(x) for x in (5, 65, 3600 * 2 + 61)] == ["5 s", "1 m 05 s", "2 h 01 m"]
