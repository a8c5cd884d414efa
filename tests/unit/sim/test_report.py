"""Benchmark summaries and tables (phalanx.sim.report) and the throughput sampler's arithmetic."""

from __future__ import annotations

from phalanx.sim.metrics import distribution, percentile
from phalanx.sim.report import format_table, summarize


def run(status="completed", avg=100.0, incomplete=(), group_ms=None):
    m = {"SchedulingThroughput": {"Average": avg, "Perc50": avg, "Perc90": avg, "Perc95": avg, "Perc99": avg},
         "overallThroughput": avg, "wallSeconds": 10.0, "extensionPoints": {"Filter": {"Average": 1.5}},
         "podGroupAttempts": {"scheduled": {"Average": group_ms, "Perc50": group_ms}} if group_ms else {}}
    return {"testCase": "Gang", "workload": "w", "status": status, "measurements": [m], "checks": [],
            "incomplete": list(incomplete), "wallSeconds": 12.0, "peakRSSBytes": 300 * 1024 * 1024,
            "storeWriteLimit": {"podsPerSecond": 1000.0}, "ratioToStoreLimit": avg / 1000.0,
            "threshold": {"metric": "SchedulingThroughput", "dataBucket": "Average", "threshold": 150,
                          "expectLower": False, "measured": avg, "met": avg >= 150}}


def test_summary_takes_medians_over_runs():
    s = summarize([run(avg=100), run(avg=300), run(avg=200)])["Gang/w"]
    assert s["status"] == "completed" and s["runs"] == 3
    assert s["SchedulingThroughput"]["Average"] == {"median": 200, "min": 100, "max": 300, "runs": 3}
    assert s["threshold"]["met"] is True
    table = format_table({"Gang/w": s})
    assert "avg 200 (100-300)" in table
    assert "threshold SchedulingThroughput Average >= 150: 200 -> MET" in table
    assert "peak RSS 300 MiB" in table


def test_a_run_that_did_not_complete_is_said_so():
    inc = {"op": "op 3 createPods", "waitingFor": "30 pods scheduled", "reason": "no progress for 60s", "progress": 12}
    s = summarize([run(), run(status="did not complete", incomplete=[inc])])
    table = format_table(s)
    assert "Gang/w  [DID NOT COMPLETE, 2 run(s)" in table
    assert "did not complete: op 3 createPods: waiting for 30 pods scheduled: no progress for 60s (progress 12)" in table


def test_group_attempts_shown_in_ms():
    table = format_table(summarize([run(group_ms=2.5)]))
    assert "podgroup attempt ms (scheduled)  avg 2.50" in table


def test_percentiles_are_nearest_rank_as_upstream():
    vals = sorted(float(v) for v in range(1, 11))
    assert [percentile(vals, p) for p in (50, 90, 95, 99)] == [5.0, 9.0, 10.0, 10.0]
    d = distribution([0.001, 0.003], 1000.0)
    assert d["count"] == 2 and d["Average"] == 2.0 and d["Max"] == 3.0
