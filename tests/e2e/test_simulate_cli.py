"""`phalanx simulate` as a user runs it: the small example scenario writes a report with plots,
the data behind it and progress on stderr; a bad scenario is refused with the file and field named."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import PHALANX

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def simulate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(PHALANX), "simulate", *args], capture_output=True, text=True, env=dict(os.environ),
                          timeout=600)


def test_small_scenario_writes_the_report(tmp_path):
    out = tmp_path / "out"
    p = simulate(str(ROOT / "examples" / "simulate" / "small.yaml"), "-o", str(out), "--parallel", "1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(out / "report.html")
    progress = [line for line in p.stderr.splitlines() if line.startswith("[default]")]
    assert progress and re.search(r"simulated \(\d+ %\) · \d+ jobs: .* events/s · (ETA|done)", progress[0])
    assert progress[-1].endswith("done") and "2h0m0s / 2h0m0s" in progress[-1]

    html = (out / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(images) == 6 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "<script" not in html and "http" not in html.split("<pre>")[0]  # nothing to fetch
    assert "seed 1" in html and "v1.36.4" in html and "JCT p90" in html
    assert sorted(f.name for f in (out / "plots").iterdir()) == sorted(
        f"{n}.png" for n in ("overview", "utilization", "pending", "jct_cdf", "queueing_cdf", "fragmentation"))

    summary = json.loads((out / "summary.json").read_text())["variants"][0]
    assert summary["meta"]["variant"] == "default" and summary["meta"]["seed"] == 1
    assert summary["summary"]["jobs_submitted"] > 100 and 0 < summary["summary"]["gpu_allocation_mean"] < 1
    jobs = (out / "default" / "jobs.csv").read_text().splitlines()
    assert jobs[0].startswith("name,kind,pods") and len(jobs) == summary["summary"]["jobs_submitted"] + 1
    events = [json.loads(line) for line in (out / "default" / "events.jsonl").read_text().splitlines()]
    assert events[0][1] == "submit" and any(e[1] == "bind" for e in events)


def test_seed_flag_reruns_identically(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    text = (ROOT / "examples" / "simulate" / "small.yaml").read_text()
    scenario.write_text(text.replace("duration: 2h", "duration: 20m").replace("count: 24", "count: 3"))
    for out in ("a", "b"):
        assert simulate(str(scenario), "-o", str(tmp_path / out), "--seed", "9", "--quiet").returncode == 0
    a, b = ((tmp_path / out / "default" / "events.jsonl").read_text() for out in ("a", "b"))
    assert a == b and len(a.splitlines()) > 10


def test_bad_scenario_names_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "examples" / "simulate" / "small.yaml").read_text()
                   .replace("pods: 8, gpusPerPod: 2", "pods: eight, gpusPerPod: 2"))
    p = simulate(str(bad), "-o", str(tmp_path / "out"))
    assert p.returncode == 1
    assert f"{bad}: workload[0].template.pods: expected an integer >= 1, got string \"eight\"" in p.stderr
    assert not (tmp_path / "out").exists()  # nothing ran
