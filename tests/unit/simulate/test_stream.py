"""Generators and templates: seeded (the same seed draws the same stream, another seed another),
distributed as asked, limited by count and horizon, merged in arrival order."""

from __future__ import annotations

import statistics
from collections import Counter

import pytest

from phalanx.machinery.strictyaml import DocumentReader
from phalanx.simulate.stream import merged_stream, read_workload


def entries(workload: list, horizon: float = 86400.0):
    reader = DocumentReader("test.yaml")
    out = read_workload(workload, "workload", reader, ".", horizon)
    assert reader.problems == []
    return out


GEN = {"name": "g", "arrivals": {"poisson": {"ratePerHour": 360}}, "count": 2000,
       "pods": {"choice": [1, 2, 4, 8], "weights": [4, 3, 2, 1]},
       "duration": {"lognormal": {"median": "1h", "sigma": 0.5}},
       "gpusPerPod": {"uniform": {"min": 1, "max": 4}}, "topology": {"choice": ["rack", None]},
       "sharedClaim": {"probability": 0.25}, "priority": 7}


def test_same_seed_same_stream_other_seed_other_stream():
    e = entries([{"generator": GEN}])
    first, again, other = list(merged_stream(e, seed=1)), list(merged_stream(e, seed=1)), list(merged_stream(e, seed=2))
    assert first == again
    assert [a.arrival for a in first] != [a.arrival for a in other]


def test_poisson_arrivals_have_the_asked_rate():
    jobs = list(merged_stream(entries([{"generator": GEN}]), seed=3))
    gaps = [b.arrival - a.arrival for a, b in zip(jobs, jobs[1:])]
    assert len(jobs) == 2000
    assert statistics.mean(gaps) == pytest.approx(10.0, rel=0.1)  # 360/h: one every 10 s on average
    assert statistics.stdev(gaps) == pytest.approx(10.0, rel=0.15)  # exponential: stdev = mean


def test_choice_weights_and_other_distributions():
    jobs = list(merged_stream(entries([{"generator": GEN}]), seed=4))
    pods = Counter(a.pods for a in jobs)
    assert [pods[1] / len(jobs), pods[8] / len(jobs)] == pytest.approx([0.4, 0.1], abs=0.04)
    assert statistics.median(a.duration for a in jobs) == pytest.approx(3600, rel=0.1)
    assert {a.gpus_per_pod for a in jobs} == {1, 2, 3, 4}
    assert sum(a.shared_claim for a in jobs) / len(jobs) == pytest.approx(0.25, abs=0.04)
    assert {a.topology for a in jobs} == {"rack", None} and {a.priority for a in jobs} == {7}


def test_generator_stops_at_count_end_and_horizon():
    every = {"name": "e", "arrivals": {"every": "1m"}}
    assert len(list(merged_stream(entries([{"generator": {**every, "count": 5}}]), seed=0))) == 5
    jobs = list(merged_stream(entries([{"generator": {**every, "start": "10m", "end": "20m"}}]), seed=0))
    assert [a.arrival for a in jobs] == [660.0 + 60 * i for i in range(9)]
    assert len(list(merged_stream(entries([{"generator": every}], horizon=600), seed=0))) == 9


def test_templates_are_exact_and_streams_merge_in_arrival_order():
    e = entries([{"template": {"name": "t", "count": 3, "every": "30s", "start": "15s", "pods": 4,
                               "duration": "5m", "kind": "JobSet", "minCount": 2}},
                  {"template": {"name": "u", "count": 2, "every": "30s", "gpusPerPod": 2}}])
    jobs = list(merged_stream(e, seed=0))
    assert [(a.name, a.arrival) for a in jobs] == [("u-0", 0.0), ("t-0", 15.0), ("u-1", 30.0), ("t-1", 45.0),
                                                  ("t-2", 75.0)]
    t0 = jobs[1]
    assert (t0.pods, t0.duration, t0.kind, t0.min_count, t0.source) == (4, 300.0, "JobSet", 2, "workload[0].template #0")
    assert all(not a.validate() for a in jobs)


def test_overrides_change_every_job_and_horizon_drops_late_ones():
    e = entries([{"template": {"name": "t", "count": 4, "every": "1h", "topology": "rack", "sharedClaim": True}}])
    jobs = list(merged_stream(e, seed=0, overrides={"topology": None, "sharedClaim": False}, horizon=3 * 3600))
    assert [(a.topology, a.shared_claim) for a in jobs] == [(None, False)] * 3


def test_trace_entries_call_the_trace_readers(tmp_path, monkeypatch):
    """A trace entry hands its file (relative to the scenario) and options (in Python's spelling) to
    phalanx.simulate.traces.read, and its jobs join the stream in arrival order."""
    import types

    from phalanx.simulate.jobs import JobArrival
    calls = []

    def read(fmt, path, **options):
        calls.append((fmt, path, options))
        return iter([JobArrival(name="late", arrival=50.0), JobArrival(name="early", arrival=5.0)])
    fake = types.ModuleType("phalanx.simulate.traces")
    fake.FORMATS = {"philly": object()}
    fake.read = read
    monkeypatch.setitem(__import__("sys").modules, "phalanx.simulate.traces", fake)
    (tmp_path / "log.json").write_text("[]")
    reader = DocumentReader("test.yaml")
    e = read_workload([{"trace": {"format": "philly", "path": "log.json", "limit": 10, "timeScale": 2,
                                  "start": "1h", "includeFailed": True}},
                       {"template": {"name": "t", "count": 1, "start": "10s"}}], "workload", reader, str(tmp_path),
                      86400.0)
    assert reader.problems == []
    jobs = list(merged_stream(e, seed=0))
    assert [a.name for a in jobs] == ["early", "t-0", "late"]
    assert calls == [("philly", str(tmp_path / "log.json"),
                      {"limit": 10, "time_scale": 2, "start": 3600.0, "include_failed": True})]
    reader = DocumentReader("test.yaml")
    read_workload([{"trace": {"format": "alibaba", "path": "log.json"}}], "workload", reader, str(tmp_path), 1.0)
    assert reader.problems == [("workload[0].trace.format", 'unsupported value "alibaba"; allowed: philly')]
