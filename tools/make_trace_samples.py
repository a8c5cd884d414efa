#!/usr/bin/env python3
"""Write the small SYNTHETIC trace samples in examples/simulate/traces/: 200 made-up jobs in each
schema the trace readers take (phalanx.simulate.traces), from a fixed seed.

    python tools/make_trace_samples.py            # rewrite examples/simulate/traces/
    python tools/make_trace_samples.py --out DIR  # somewhere else

No row comes from a real trace: names, users, times and sizes are drawn from `random.Random(SEED)`
with shapes loosely like the published traces' (many 1-GPU jobs, some gangs of 8-GPU machines,
parameter-server jobs, failures, a job still running at the end, a job that never started), so the
readers' every mapping path is exercised. The same seed writes the same bytes; the tests check it.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

SEED = 20200718
JOBS = 200
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "examples" / "simulate" / "traces"

PAI_GPU_TYPES = ("V100", "P100", "T4", "MISC")
PAI_STATUSES = ("Terminated",) * 16 + ("Failed",) * 2 + ("Running", "Waiting")
PHILLY_STATUSES = ("Pass",) * 7 + ("Killed",) * 2 + ("Failed",)


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def _seconds(value: float) -> str:
    return f"{value:.1f}"


def pai_tables(rng: random.Random) -> tuple[str, str]:
    """The job table and the task table (header-less CSV, the trace's column order)."""
    users = [_hex(rng, 12) for _ in range(12)]
    jobs, tasks = [], []
    submit = 1_000_000.0 + rng.randrange(86_400)
    for _ in range(JOBS):
        submit += round(rng.expovariate(1 / 300.0))
        name, status = _hex(rng, 24), rng.choice(PAI_STATUSES)
        launch = submit + round(rng.expovariate(1 / 120.0))
        run = round(rng.lognormvariate(7.5, 1.2)) + 1
        job_tasks = _pai_tasks(rng, name, status, launch, run)
        ends = [float(task[5]) for task in job_tasks if task[5]]
        job_end = "" if status in ("Running", "Waiting") or not ends else _seconds(max(ends))
        jobs.append([name, _hex(rng, 60), rng.choice(users), status, _seconds(submit), job_end])
        tasks.extend(job_tasks)
    rng.shuffle(tasks)  # the trace's tables are not in submission order either
    return _csv(sorted(jobs)), _csv(tasks)


def _pai_tasks(rng: random.Random, job: str, status: str, launch: float, run: float) -> list[list[str]]:
    started = status != "Waiting"
    start = _seconds(launch) if started else "0.0"
    end = _seconds(launch + run) if started and status != "Running" else ""
    gpu_type = rng.choice(PAI_GPU_TYPES)
    shape = rng.random()
    if shape < 0.1:  # CPU only
        return [[job, "tensorflow", "1.0", status, start, end, "400.0", "14.6484375", "", ""]]
    if shape < 0.3:  # parameter servers and workers
        workers = rng.choice((2, 4, 8, 16))
        return [[job, "ps", f"{rng.choice((1, 2))}.0", status, start, end, "600.0", "29.296875", "", ""],
                [job, "worker", f"{workers}.0", status, start, end, "800.0", "58.59375", "100.0", gpu_type]]
    gpus = rng.choice((25.0, 50.0, 100.0, 100.0, 100.0, 200.0, 400.0, 800.0))
    instances = rng.choice((1, 1, 1, 1, 2, 4, 8)) if gpus >= 800 else 1
    return [[job, "worker", f"{instances}.0", status, start, end, f"{gpus * 6:.1f}", "29.296875",
             f"{gpus:.1f}", gpu_type]]


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def philly_log(rng: random.Random) -> str:
    """The cluster_job_log: a JSON array, one job per line."""
    users = [_hex(rng, 6) for _ in range(10)]
    vcs = [_hex(rng, 6) for _ in range(4)]
    machines = [f"m{number}" for number in range(1, 65)]
    submit = datetime(2017, 10, 3, 0, 0, 0) + timedelta(seconds=rng.randrange(3600))
    jobs = []
    for number in range(JOBS):
        submit += timedelta(seconds=round(rng.expovariate(1 / 400.0)))
        jobs.append({
            "status": rng.choice(PHILLY_STATUSES),
            "vc": rng.choice(vcs),
            "jobid": f"application_1506638472019_{10000 + number}",
            "attempts": _philly_attempts(rng, submit, machines, last_job=number == JOBS - 1),
            "submitted_time": f"{submit:%Y-%m-%d %H:%M:%S}",
            "user": rng.choice(users),
        })
    for position in range(0, JOBS - 1, 7):  # not quite in submission order, as the real log
        jobs[position], jobs[position + 1] = jobs[position + 1], jobs[position]
    return "[\n" + ",\n".join(json.dumps(job) for job in jobs) + "\n]\n"


def _philly_attempts(rng: random.Random, submit: datetime, machines: list[str], *, last_job: bool) -> list[dict]:
    if rng.random() < 0.05 and not last_job:
        return []  # never scheduled
    gpus = rng.choice((1, 1, 1, 2, 4, 8, 8, 16, 32))
    if gpus > 8:
        layout = [8] * (gpus // 8)
    elif gpus == 8 and rng.random() < 0.25:
        layout = [4, 2, 2]  # spread over machines with room: uneven
    else:
        layout = [gpus]
    attempts = []
    start = submit + timedelta(seconds=round(rng.expovariate(1 / 600.0)))
    for attempt in range(rng.choice((1, 1, 1, 2, 3))):
        run = timedelta(seconds=round(rng.lognormvariate(7.8, 1.4)) + 1)
        hosts = rng.sample(machines, len(layout))
        attempts.append({
            "start_time": f"{start:%Y-%m-%d %H:%M:%S}",
            "end_time": f"{start + run:%Y-%m-%d %H:%M:%S}",
            "detail": [{"ip": host, "gpus": [f"gpu{index}" for index in range(count)]}
                       for host, count in zip(hosts, layout)],
        })
        start += run + timedelta(seconds=rng.randrange(5, 120))
    if last_job:
        attempts[-1]["end_time"] = None  # still running when the log was taken
    return attempts


def write_samples(out: Path) -> list[Path]:
    """Write both samples under `out`; the paths written."""
    rng = random.Random(SEED)
    job_table, task_table = pai_tables(rng)
    files = {
        out / "alibaba-pai-2020" / "pai_job_table.csv": job_table,
        out / "alibaba-pai-2020" / "pai_task_table.csv": task_table,
        out / "philly" / "cluster_job_log": philly_log(rng),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write (default: %(default)s)")
    for path in write_samples(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
