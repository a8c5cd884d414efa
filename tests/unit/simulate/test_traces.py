"""The trace readers (phalanx.simulate.traces): the shipped synthetic samples, each field's mapping
on hand-written rows, the options (window, time scale, limit, filters) and bad rows."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import json
import pickle
from pathlib import Path

import pytest

from phalanx.simulate.jobs import JobArrival
from phalanx.simulate.traces import FORMATS, ReadStats, TraceError, TraceWarning, read
from phalanx.simulate.traces.jsonstream import iter_array

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "examples" / "simulate" / "traces"
PAI_SAMPLE = SAMPLES / "alibaba-pai-2020"
PHILLY_SAMPLE = SAMPLES / "philly"
STATUS = "simulate.phalanx.dev/trace-status"


def _pai(tmp_path: Path, jobs: list[str], tasks: list[str]) -> Path:
    (tmp_path / "pai_job_table.csv").write_text("".join(row + "\n" for row in jobs))
    (tmp_path / "pai_task_table.csv").write_text("".join(row + "\n" for row in tasks))
    return tmp_path


def _philly(tmp_path: Path, jobs: list[object], name: str = "cluster_job_log") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(jobs, indent=2))
    return path


def _philly_job(jobid: str = "application_1_1", submitted: str = "2017-10-07 01:00:00", status: str = "Pass",
                attempts: list[object] | None = None, **extra: object) -> dict[str, object]:
    if attempts is None:
        attempts = [_attempt("2017-10-07 01:00:30", "2017-10-07 02:00:30", [8])]
    return {"status": status, "vc": "ee9e8c", "jobid": jobid, "attempts": attempts,
            "submitted_time": submitted, "user": "ce2f4c", **extra}


def _attempt(start: str | None, end: str | None, gpus_per_machine: list[int]) -> dict[str, object]:
    return {"start_time": start, "end_time": end,
            "detail": [{"ip": f"m{n}", "gpus": [f"gpu{g}" for g in range(count)]}
                       for n, count in enumerate(gpus_per_machine)]}


# --- the shipped samples -----------------------------------------------------------------------


def test_the_samples_are_what_the_generator_writes_from_its_seed(tmp_path):
    spec = importlib.util.spec_from_file_location("make_trace_samples", ROOT / "tools" / "make_trace_samples.py")
    assert spec and spec.loader
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    for written in generator.write_samples(tmp_path):
        shipped = SAMPLES / written.relative_to(tmp_path)
        assert written.read_bytes() == shipped.read_bytes(), f"{shipped} differs: run tools/make_trace_samples.py"


def test_pai_sample_yields_every_started_job_in_submission_order():
    with open(PAI_SAMPLE / "pai_job_table.csv", newline="") as stream:
        job_rows = list(csv.reader(stream))
    statuses = [row[3] for row in job_rows]
    stats = ReadStats()
    jobs = list(read("alibaba-pai-2020", str(PAI_SAMPLE), include_failed=True, stats=stats))

    assert stats.rows == len(job_rows) == 200
    assert stats.skipped["never-started"] == statuses.count("Waiting")
    assert len(jobs) == stats.jobs == 200 - statuses.count("Waiting")
    assert [job.arrival for job in jobs] == sorted(job.arrival for job in jobs)
    assert jobs[0].arrival == 0.0
    assert min(float(row[4]) for row in job_rows) + jobs[-1].arrival == max(float(row[4]) for row in job_rows)
    assert all(job.validate() == [] for job in jobs)
    assert sum(job.duration is None for job in jobs) == statuses.count("Running")
    assert any(job.pods > 1 for job in jobs) and any(job.gpus_per_pod == 0 for job in jobs)


def test_pai_sample_leaves_failed_jobs_out_unless_asked():
    with open(PAI_SAMPLE / "pai_job_table.csv", newline="") as stream:
        statuses = [row[3] for row in csv.reader(stream)]
    stats = ReadStats()
    jobs = list(read("alibaba-pai-2020", str(PAI_SAMPLE), stats=stats))
    assert stats.skipped["failed"] == statuses.count("Failed") > 0
    assert len(jobs) == 200 - statuses.count("Waiting") - statuses.count("Failed")
    assert {job.labels[STATUS] for job in jobs} == {"Terminated", "Running"}


def test_philly_sample_yields_every_scheduled_job_in_submission_order():
    records = json.loads((PHILLY_SAMPLE / "cluster_job_log").read_text())
    stats = ReadStats()
    jobs = list(read("philly", str(PHILLY_SAMPLE), include_failed=True, stats=stats))

    assert stats.rows == len(records) == 200
    no_attempts = sum(not record["attempts"] for record in records)
    assert stats.skipped["no-attempts"] == no_attempts > 0
    assert len(jobs) == 200 - no_attempts
    assert [job.arrival for job in jobs] == sorted(job.arrival for job in jobs)
    assert all(job.validate() == [] for job in jobs)
    assert stats.adjusted["gpus-per-machine-evened"] > 0
    by_name = {job.name: job for job in jobs}
    for record in records:
        if record["attempts"]:
            job = by_name[record["jobid"].replace("_", "-")]
            assert job.pods == len(record["attempts"][-1]["detail"])
            assert job.user == record["user"]


def test_philly_sample_without_failed_jobs():
    records = json.loads((PHILLY_SAMPLE / "cluster_job_log").read_text())
    failed = sum(bool(record["attempts"]) and record["status"] in ("Failed", "Killed") for record in records)
    stats = ReadStats()
    jobs = list(read("philly", str(PHILLY_SAMPLE / "cluster_job_log"), stats=stats))
    assert stats.skipped["failed"] == failed > 0
    assert {job.labels[STATUS] for job in jobs} == {"Pass"}


@pytest.mark.parametrize("format_name, path", [("alibaba-pai-2020", PAI_SAMPLE), ("philly", PHILLY_SAMPLE)])
def test_limit_takes_the_earliest_jobs(format_name, path):
    everything = list(read(format_name, str(path)))
    stats = ReadStats()
    assert list(read(format_name, str(path), limit=5, stats=stats)) == everything[:5]
    assert stats.jobs == 5
    assert list(read(format_name, str(path), limit=0)) == []


@pytest.mark.parametrize("format_name, path", [("alibaba-pai-2020", PAI_SAMPLE), ("philly", PHILLY_SAMPLE)])
def test_time_scale_divides_arrivals_and_durations(format_name, path):
    plain = list(read(format_name, str(path)))
    fast = list(read(format_name, str(path), time_scale=10))
    assert [job.name for job in fast] == [job.name for job in plain]
    for slow_job, fast_job in zip(plain, fast):
        assert fast_job.arrival == pytest.approx(slow_job.arrival / 10)
        if slow_job.duration is None:
            assert fast_job.duration is None
        else:
            assert fast_job.duration == pytest.approx(slow_job.duration / 10)


@pytest.mark.parametrize("format_name, path", [("alibaba-pai-2020", PAI_SAMPLE), ("philly", PHILLY_SAMPLE)])
def test_a_window_selects_jobs_by_trace_time_and_rebases_them(format_name, path):
    plain = list(read(format_name, str(path)))
    window = list(read(format_name, str(path), start="3h", end=6 * 3600.0))
    expected = [job for job in plain if 3 * 3600 <= job.arrival < 6 * 3600]
    assert window and len(window) == len(expected)
    for whole, part in zip(expected, window):
        assert part.name == whole.name
        assert part.arrival == pytest.approx(whole.arrival - 3 * 3600)
        assert part.duration == whole.duration


@pytest.mark.parametrize("format_name, path", [("alibaba-pai-2020", PAI_SAMPLE), ("philly", PHILLY_SAMPLE)])
def test_min_gpus_drops_smaller_jobs(format_name, path):
    plain = list(read(format_name, str(path)))
    stats = ReadStats()
    big = list(read(format_name, str(path), min_gpus=8, stats=stats))
    assert big == [job for job in plain if job.pods * job.gpus_per_pod >= 8]
    assert stats.skipped["below-min-gpus"] == len(plain) - len(big) > 0


# --- Alibaba PAI: each field ------------------------------------------------------------------


def test_pai_maps_a_job_and_its_tasks(tmp_path):
    trace = _pai(tmp_path, [
        "job_name,inst_id,user,status,start_time,end_time",  # a header row is skipped
        "bbbb,id2,u2,Terminated,1000300.0,1004000.0",
        "aaaa,id1,u1,Terminated,1000000.0,1009000.0",
    ], [
        "aaaa,ps,2.0,Terminated,1000100.0,1008000.0,600.0,29.296875,,",
        "aaaa,worker,4.0,Terminated,1000200.0,1009000.0,800.0,58.59375,100.0,V100",
        "bbbb,worker,1.0,Terminated,1000400.0,1001400.0,50.0,1.0,50.0,T4",
    ])
    stats = ReadStats()
    first, second = read("alibaba-pai-2020", str(trace), stats=stats)
    assert first == JobArrival(
        name="aaaa", arrival=0.0, duration=8900.0, pods=6, gpus_per_pod=1, cpu_per_pod="8",
        memory_per_pod="60000Mi", user="u1", source="alibaba-pai-2020:pai_job_table.csv:3",
        labels={STATUS: "Terminated", "simulate.phalanx.dev/gpu-type": "V100"})
    assert second == JobArrival(
        name="bbbb", arrival=300.0, duration=1000.0, pods=1, gpus_per_pod=1, cpu_per_pod="500m",
        memory_per_pod="1Gi", user="u2", source="alibaba-pai-2020:pai_job_table.csv:2",
        labels={STATUS: "Terminated", "simulate.phalanx.dev/gpu-type": "T4"})
    assert stats.adjusted == {"tasks-merged": 1, "gpus-rounded-up": 1}


def test_pai_rounds_fractional_gpus_up_and_keeps_cpu_only_jobs(tmp_path):
    trace = _pai(tmp_path, ["a,i,u,Terminated,10.0,20.0", "b,i,u,Terminated,11.0,20.0", "c,i,u,Terminated,12.0,30.0"], [
        "a,worker,1.0,Terminated,10.0,20.0,600.0,10.0,250.0,V100",
        "b,worker,2.0,Terminated,11.0,20.0,600.0,10.0,100.0000001,V100",
        "c,tensorflow,1.0,Terminated,12.0,30.0,400.0,10.0,,",
    ])
    jobs = {job.name: job for job in read("alibaba-pai-2020", str(trace))}
    assert (jobs["a"].gpus_per_pod, jobs["b"].gpus_per_pod, jobs["c"].gpus_per_pod) == (3, 1, 0)
    assert "simulate.phalanx.dev/gpu-type" not in jobs["c"].labels


def test_pai_running_waiting_and_failed_jobs(tmp_path):
    trace = _pai(tmp_path, [
        "run,i,u,Running,100.0,", "wait,i,u,Waiting,200.0,", "fail,i,u,Failed,300.0,400.0", "none,i,u,Terminated,50.0,60.0",
    ], [
        "run,worker,1.0,Running,150.0,,600.0,10.0,100.0,V100",
        "wait,worker,1.0,Waiting,0.0,,600.0,10.0,100.0,V100",
        "fail,worker,1.0,Failed,310.0,400.0,600.0,10.0,100.0,V100",
    ])
    stats = ReadStats()
    kept = list(read("alibaba-pai-2020", str(trace), stats=stats))
    assert [(job.name, job.arrival, job.duration) for job in kept] == [("run", 50.0, None)]
    assert stats.skipped == {"no-tasks": 1, "never-started": 1, "failed": 1}
    with_failed = list(read("alibaba-pai-2020", str(trace), include_failed=True))
    assert [(job.name, job.duration) for job in with_failed] == [("run", None), ("fail", 90.0)]


def test_pai_task_table_can_live_elsewhere(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "mine.csv").write_text("a,i,u,Terminated,10.0,20.0\n")
    (tmp_path / "t.csv").write_text("a,worker,1.0,Terminated,10.0,20.0,600.0,10.0,100.0,V100\n")
    jobs = list(read("alibaba-pai-2020", str(tmp_path / "jobs" / "mine.csv"), task_table=str(tmp_path / "t.csv")))
    assert [(job.name, job.source) for job in jobs] == [("a", "alibaba-pai-2020:mine.csv:1")]


# --- Philly: each field ---------------------------------------------------------------------------


def test_philly_maps_the_last_attempt(tmp_path):
    path = _philly(tmp_path, [
        _philly_job("application_1_2", "2017-10-07 01:10:00", attempts=[
            _attempt("2017-10-07 01:11:00", "2017-10-07 01:12:00", [8]),
            _attempt("2017-10-07 01:13:30", "2017-10-09 06:53:12", [8, 8]),
        ]),
        _philly_job("application_1_1", "2017-10-07 01:00:00"),
    ])
    first, second = read("philly", str(path))
    assert first == JobArrival(
        name="application-1-1", arrival=0.0, duration=3600.0, pods=1, gpus_per_pod=8, user="ce2f4c",
        source=f"philly:cluster_job_log:{_line_of(path, 'application_1_1')}",
        labels={STATUS: "Pass", "simulate.phalanx.dev/vc": "ee9e8c"})
    assert (second.name, second.arrival, second.pods, second.gpus_per_pod) == ("application-1-2", 600.0, 2, 8)
    assert second.duration == 2 * 86400 + 5 * 3600 + 39 * 60 + 42  # 01:13:30 on the 7th to 06:53:12 on the 9th


def _line_of(path: Path, jobid: str) -> int:
    lines = path.read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if jobid in line)
    return next(n for n in range(at, -1, -1) if lines[n].strip() == "{") + 1


def test_philly_evens_gpus_over_machines_rounding_up(tmp_path):
    path = _philly(tmp_path, [_philly_job(attempts=[_attempt("2017-10-07 01:00:00", "2017-10-07 02:00:00", [8, 4, 1])])])
    stats = ReadStats()
    (job,) = read("philly", str(path), stats=stats)
    assert (job.pods, job.gpus_per_pod) == (3, 5)
    assert stats.adjusted["gpus-per-machine-evened"] == 1


def test_philly_gaps_the_readme_documents(tmp_path):
    path = _philly(tmp_path, [
        _philly_job("application_1_1", attempts=[]),
        _philly_job("application_1_2", attempts=[_attempt(None, "2017-10-07 02:00:00", [1])]),
        _philly_job("application_1_3", attempts=[_attempt("None", "None", [1])]),
        _philly_job("application_1_4", attempts=[_attempt("2017-10-07 01:00:00", None, [2])]),
        _philly_job("application_1_5", attempts=[{"start_time": "2017-10-07 01:00:00", "end_time": None, "detail": []}]),
        _philly_job("application_1_6", status="Killed"),
    ])
    stats = ReadStats()
    (running,) = read("philly", str(path), stats=stats)
    assert (running.name, running.duration, running.gpus_per_pod) == ("application-1-4", None, 2)
    assert stats.skipped == {"no-attempts": 1, "no-start-time": 2, "no-machines": 1, "failed": 1}


def test_philly_reads_a_gzip_file_and_a_compact_one(tmp_path):
    text = json.dumps([_philly_job("application_1_1"), _philly_job("application_1_2", "2017-10-07 01:00:05")])
    with gzip.open(tmp_path / "cluster_job_log.gz", "wt") as stream:
        stream.write(text)
    jobs = list(read("philly", str(tmp_path / "cluster_job_log.gz")))
    assert [(job.name, job.arrival) for job in jobs] == [("application-1-1", 0.0), ("application-1-2", 5.0)]
    assert {job.source for job in jobs} == {"philly:cluster_job_log.gz:1"}


# --- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize("options, message", [
    ({"limit": -1}, "trace option limit: must be a whole number >= 0"),
    ({"limit": True}, "trace option limit"),
    ({"time_scale": 0}, "trace option time_scale: must be a number > 0"),
    ({"start": "yesterday"}, 'trace option start: must be seconds or a duration such as "36h"'),
    ({"start": 100, "end": 50}, "trace option end: must be after start"),
    ({"include_failed": "yes"}, "trace option include_failed: must be true or false"),
    ({"min_gpus": 1.5}, "trace option min_gpus"),
    ({"limt": 3}, 'trace format "philly": unknown option(s) limt; supported: end, include_failed, limit'),
])
def test_bad_options_are_refused_when_read_is_called(options, message):
    with pytest.raises(ValueError) as caught:
        read("philly", str(PHILLY_SAMPLE), **options)
    assert message in str(caught.value)


def test_unknown_format_and_missing_files():
    with pytest.raises(ValueError, match='unknown trace format "google"; supported: alibaba-pai-2020, philly'):
        read("google", ".")
    with pytest.raises(FileNotFoundError, match="no such file: .*nowhere/cluster_job_log"):
        read("philly", str(PHILLY_SAMPLE / "nowhere" / "cluster_job_log"))
    with pytest.raises(FileNotFoundError, match="pai_task_table.csv"):
        read("alibaba-pai-2020", str(PAI_SAMPLE / "pai_job_table.csv"), task_table="/nonexistent/pai_task_table.csv")
    assert set(FORMATS) == {"alibaba-pai-2020", "philly"}
    assert FORMATS["alibaba-pai-2020"].options == ("task_table",)


# --- bad rows ---------------------------------------------------------------------------------


@pytest.mark.parametrize("jobs, tasks, table, location, field, message", [
    (["a,i,u,Terminated,10.0"], [], "pai_job_table.csv", "line 1", "(row)", "expected 6 columns"),
    (["a,i,u,Terminated,,20.0"], [], "pai_job_table.csv", "line 1", "start_time", "missing"),
    (["a,i,u,Terminated,ten,20.0"], [], "pai_job_table.csv", "line 1", "start_time", "must be a number >= 0, got 'ten'"),
    (["a,i,u,Terminated,10.0,20.0", "a,i,u,Terminated,11.0,20.0"], [], "pai_job_table.csv", "line 2",
     "job_name", "a appears twice (first on line 1)"),
    (["a,i,u,Terminated,10.0,20.0"], ["a,w,1.0,Terminated,10.0,20.0,600.0,10.0,lots,V100"], "pai_task_table.csv",
     "line 1", "plan_gpu", "got 'lots'"),
    (["a,i,u,Terminated,10.0,20.0"], ["a,w,0.0,Terminated,10.0,20.0,600.0,10.0,100.0,V100"], "pai_task_table.csv",
     "line 1", "inst_num", "must be a whole number >= 1"),
    (["a,i,u,Terminated,10.0,20.0"], ["a,w,1.0,Terminated,30.0,20.0,600.0,10.0,100.0,V100"], "pai_task_table.csv",
     "line 1", "end_time", "20.0 is before start_time 30.0"),
])
def test_pai_bad_rows_name_file_line_and_field(tmp_path, jobs, tasks, table, location, field, message):
    trace = _pai(tmp_path, jobs, tasks)
    with pytest.raises(TraceError) as caught:
        list(read("alibaba-pai-2020", str(trace)))
    error = caught.value
    assert (error.path, error.location, error.field) == (str(trace / table), location, field)
    assert message in error.message
    assert str(error).startswith(f"{trace / table}: {location}: {field}: ")


def test_pai_bad_rows_are_skipped_and_counted_when_not_strict(tmp_path):
    trace = _pai(tmp_path, ["a,i,u,Terminated,10.0,20.0", "b,i,u,Terminated,x,20.0", "c,i,u,Terminated,12.0,20.0"], [
        "a,w,1.0,Terminated,10.0,20.0,600.0,10.0,100.0,V100",
        "c,w,1.0,Terminated,12.0,20.0,600.0,10.0,100.0",
    ])
    stats = ReadStats()
    with pytest.warns(TraceWarning, match=r"skipped 2 unreadable row\(s\); the first: .*pai_job_table.csv: line 2: start_time"):
        jobs = list(read("alibaba-pai-2020", str(trace), strict=False, stats=stats))
    assert [job.name for job in jobs] == ["a"]
    assert stats.bad_rows == 2
    assert stats.skipped["no-tasks"] == 1  # c lost its only task row
    assert [error.field for error in stats.errors] == ["start_time", "(row)"]


@pytest.mark.parametrize("job, field, message", [
    ("not a job", "(job)", "must be a JSON object, got str"),
    (_philly_job(jobid=""), "jobid", "must be a non-empty string"),
    (_philly_job(submitted="07/10/2017"), "submitted_time", 'must be a time such as "2017-10-07 01:12:09", got \'07/10/2017\''),
    (_philly_job(submitted=None), "submitted_time", "missing"),
    (_philly_job(attempts={"start_time": "x"}), "attempts", "must be a list, got dict"),
    (_philly_job(attempts=[_attempt("2017-10-07 02:00:00", "2017-10-07 01:00:00", [1])]), "attempts[0].end_time",
     "2017-10-07 01:00:00 is before start_time 2017-10-07 02:00:00"),
    (_philly_job(attempts=[{"start_time": "2017-10-07 02:00:00", "end_time": None, "detail": [{"ip": "m1"}]}]),
     "attempts[0].detail[0].gpus", "must be a list, got null"),
    (_philly_job(user=7), "user", "must be a string, got int"),
])
def test_philly_bad_records_name_file_job_line_and_field(tmp_path, job, field, message):
    path = _philly(tmp_path, [_philly_job("application_1_1"), job])
    with pytest.raises(TraceError) as caught:
        list(read("philly", str(path)))
    error = caught.value
    line = len(json.dumps([_philly_job("application_1_1")], indent=2).splitlines())  # the second element's line
    assert (error.path, error.location, error.field) == (str(path), f"job 1 (line {line})", field)
    assert message in error.message

    stats = ReadStats()
    with pytest.warns(TraceWarning, match="skipped 1 unreadable row"):
        jobs = list(read("philly", str(path), strict=False, stats=stats))
    assert [job.name for job in jobs] == ["application-1-1"]
    assert stats.bad_rows == 1


@pytest.mark.parametrize("text, location, field, message", [
    ('{"jobs": []}', "line 1", "(file)", "must be a JSON array of jobs"),
    ('[\n{"jobid": "a"},\n{"jobid": "b",, }\n]', "line 3", "[1]", "not valid JSON: Expecting property name"),
    ('[{"jobid": "a"} {"jobid": "b"}]', "line 1", "[1]", "expected ',' or ']' after element 0"),
    ('[{"jobid": "a"}] trailing', "line 1", "(file)", "unexpected text after the JSON array"),
    ('[{"jobid": "a"}', "line 1", "[1]", "expected ',' or ']' after element 0, found ''"),
])
def test_a_file_that_is_not_a_json_array_stops_the_read_even_when_not_strict(tmp_path, text, location, field, message):
    path = tmp_path / "cluster_job_log"
    path.write_text(text)
    with pytest.raises(TraceError) as caught:
        list(read("philly", str(path), strict=False))
    assert (caught.value.location, caught.value.field) == (location, field)
    assert message in caught.value.message


# --- the streaming JSON array reader ----------------------------------------------------------


@pytest.mark.parametrize("chunk_chars", [1, 2, 7, 64, 1 << 20])
def test_iter_array_decodes_elements_across_chunk_boundaries(chunk_chars):
    elements = [{"a": [1, 2.5, "x\ny"]}, 12345678, -0.5e3, "s", True, None, [], {"nested": {"deep": [[]]}}]
    for text in (json.dumps(elements), json.dumps(elements, indent=3), "  [ ]  "):
        decoded = [element for _, _, element in iter_array(io.StringIO(text), "mem", chunk_chars=chunk_chars)]
        assert decoded == json.loads(text)


def test_iter_array_reports_the_line_each_element_starts_on():
    text = '[\n  {"a": 1},\n\n  {"b":\n 2},   {"c": 3}\n]'
    found = [(index, line) for index, line, _ in iter_array(io.StringIO(text), "mem", chunk_chars=3)]
    assert found == [(0, 2), (1, 4), (2, 5)]


def test_files_that_are_not_text_stop_the_read_with_the_file_named(tmp_path):
    trace = _pai(tmp_path, ["a,i,u,Terminated,10.0,20.0"], [])
    (trace / "pai_task_table.csv").write_bytes(b"a,w,1.0,Terminated,10.0,20.0,600.0,10.0,100.0,V100\n\xff\xfe\n")
    with pytest.raises(TraceError, match=r"pai_task_table.csv: after line 0: \(file\): not UTF-8 text: 'utf-8' codec"):
        list(read("alibaba-pai-2020", str(trace), strict=False))
    (trace / "pai_task_table.csv").write_text('a,w,"' + "x" * 200_000 + '"\n')
    with pytest.raises(TraceError, match=r"pai_task_table.csv: line 1: \(file\): not a CSV table: field larger"):
        list(read("alibaba-pai-2020", str(trace)))
    log = tmp_path / "cluster_job_log"
    log.write_bytes(b'[{"jobid": "\xff"}]')
    with pytest.raises(TraceError, match=r"cluster_job_log: after line 1: \(file\): not UTF-8 text"):
        list(read("philly", str(log)))


def test_a_trace_error_survives_pickling_as_from_a_sweep_worker():
    error = TraceError("/data/cluster_job_log", "job 3 (line 5)", "jobid", "must be a non-empty string")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.field) == (TraceError, str(error), "jobid")
