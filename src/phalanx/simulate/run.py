"""`phalanx simulate SCENARIO.yaml`: every variant in its own process, then one report.

    report = simulate("examples/simulate/small.yaml", "out", seed=None, parallel=2, quiet=False)
    # out/report.html, out/summary.{json,csv}, out/plots/*.png, out/<variant>/{result.json, jobs.csv, ...}

Variants run as independent processes, at most `parallel` at a time (default: the machine's CPUs):
through `phalanx.simulate.sweep.run_tasks` when it is installed (local processes, or a Ray cluster
with `ray_address`), else a `spawn`ed `ProcessPoolExecutor` of its own. Each worker runs with
`PYTHONHASHSEED=0`, so a seed reproduces a run to the event whatever process runs it (sets of strings
iterate in hash order, and a few of the components' choices follow such an order). Each worker
writes its variant's files and reports progress on stderr, at most once a second: simulated time,
jobs, informer events per second and the ETA.
"""

from __future__ import annotations

import importlib
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any, Callable, Sequence

from ..machinery.durations import format_duration
from .engine import ProgressReport, run_variant
from .report import write_report, write_variant
from .scenario import load_scenario

HASH_SEED = "0"


def human(seconds: float) -> str:
    return format_duration(round(seconds))


def format_progress(p: ProgressReport) -> str:
    share = 100 * p.simulated / p.horizon if p.horizon else 100.0
    eta = "done" if p.done else (f"ETA {human(p.eta)}" if p.eta is not None else "ETA ?")
    return (f"[{p.variant}] {human(p.simulated)} / {human(p.horizon)} simulated ({share:.0f} %) · "
            f"{p.submitted:,} jobs: {p.finished:,} finished, {p.running:,} running, {p.pending:,} pending · "
            f"{p.events_per_second:,.0f} events/s · {eta}")


def run_variant_task(scenario_path: str, variant: str, seed: int | None, out_dir: str, quiet: bool) -> dict[str, Any]:
    """One variant, in a worker process: run it, write its files; returns its metadata and summary."""
    scenario = load_scenario(scenario_path)

    def progress(p: ProgressReport) -> None:
        print(format_progress(p), file=sys.stderr, flush=True)

    result = run_variant(scenario, scenario.variant(variant), seed=seed, progress=None if quiet else progress)
    write_variant(result, os.path.join(out_dir, variant))
    return {"meta": result.meta(), "summary": result.summary}


Task = tuple[str, Callable[..., Any], tuple[Any, ...]]


def _run_local(tasks: Sequence[Task], parallel: int) -> list[Any]:
    """Each task in a spawned process of its own (the fallback when sweep.run_tasks is absent)."""
    ctx = get_context("spawn")
    results: list[Any] = []
    with ProcessPoolExecutor(max_workers=max(1, min(parallel, len(tasks))), mp_context=ctx,
                             max_tasks_per_child=1) as pool:
        futures = [(name, pool.submit(fn, *args)) for name, fn, args in tasks]
        for name, future in futures:
            try:
                results.append(future.result())
            except Exception as e:
                raise RuntimeError(f'variant "{name}" failed: {type(e).__name__}: {e}') from e
    return results


def run_tasks(tasks: Sequence[Task], parallel: int, ray_address: str | None) -> list[Any]:
    try:
        sweep = importlib.import_module("phalanx.simulate.sweep")  # local processes or a Ray cluster
    except ImportError:
        if ray_address is not None:
            raise RuntimeError("--ray-address needs phalanx.simulate.sweep, which this installation does not have") \
                from None
        return _run_local(tasks, parallel)
    return list(sweep.run_tasks([sweep.SweepTask(name, fn, args) for name, fn, args in tasks],
                                parallel=parallel, ray_address=ray_address))


def simulate(scenario_path: str, out_dir: str, *, seed: int | None = None, parallel: int | None = None,
             quiet: bool = False, ray_address: str | None = None) -> str:
    """Run every variant of the scenario and write the report; returns the report's path."""
    scenario = load_scenario(scenario_path)  # errors before any process starts
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.abspath(scenario_path)
    tasks: list[Task] = [(v.name, run_variant_task, (path, v.name, seed, os.path.abspath(out_dir), quiet))
                         for v in scenario.variants]
    saved = os.environ.get("PYTHONHASHSEED")
    os.environ["PYTHONHASHSEED"] = HASH_SEED  # the workers' hash seed (they read it when they start)
    try:
        run_tasks(tasks, parallel or os.cpu_count() or 1, ray_address)
    finally:
        if saved is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = saved
    if seed is not None:
        scenario.seed = seed
    return write_report(scenario, [os.path.join(out_dir, v.name) for v in scenario.variants], out_dir)
