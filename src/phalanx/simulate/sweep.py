"""Independent simulation runs side by side: on local processes (the default) or on a Ray cluster.

A sweep is a list of tasks, each a picklable callable (a module-level function) with its
arguments, returning a JSON-able result (what orjson encodes: dicts, lists, numbers, strings,
dataclasses). `run_tasks` runs them and returns their results in the tasks' order:

    tasks = [SweepTask("baseline", run_variant, (scenario_path, "baseline")),
             SweepTask("rack-topology", run_variant, (scenario_path, "rack-topology"))]
    results = run_tasks(tasks, parallel=2, ray_address=None, progress=show_progress)

- Locally (`ray_address` None) each task runs in its own fresh process (a `spawn`ed
  `ProcessPoolExecutor` worker that runs one task and exits), `parallel` at a time (default: the
  machine's CPUs), so runs share no state: no global registry, cache or event loop.
- With `ray_address`, `ray.init(address=ray_address)` connects to that cluster ("auto", a head's
  "host:6379", "ray://host:10001") or, with "local", starts a Ray instance on this machine; each
  task is a Ray task of one CPU, at most `parallel` in flight (default: all, Ray queues them by
  the cluster's CPUs). Ray is the `ray` extra (`pip install 'phalanx[ray]'`), and the cluster's
  nodes need phalanx installed, the same version, as the tasks import it there. An already
  initialized Ray (the caller's `ray.init`) is used as it is and left running.

`progress(done, total, name)` is called in the calling process each time a task finishes, `name`
being the task that did. The first task to fail stops the sweep: the tasks not started are
cancelled, the running ones stopped, and `SweepTaskError` names the task and carries its error
(and the traceback text from the worker).

As with any `spawn`ed process, a script (not the `phalanx` command) that calls `run_tasks` keeps
its own work under `if __name__ == "__main__":`, since the workers import the main module.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import orjson

Progress = Callable[[int, int, str], None]
_ANSI_ESCAPE_RE = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours the traceback text it sends


@dataclass(frozen=True)
class SweepTask:
    """One run of a sweep: `function(*args, **kwargs)`, named for progress and errors."""

    name: str
    function: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class SweepTaskError(RuntimeError):
    """A task of a sweep failed: `task` is its name, `error` what it raised, `remote_traceback`
    the traceback text from the process that ran it (when there is one)."""

    def __init__(self, task: str, error: BaseException, remote_traceback: str | None = None) -> None:
        self.task = task
        self.error = error
        self.remote_traceback = remote_traceback
        super().__init__(f'sweep task "{task}" failed: {type(error).__name__}: {error}')


def run_tasks(tasks: Sequence[SweepTask], *, parallel: int | None = None, ray_address: str | None = None,
              progress: Progress | None = None) -> list[Any]:
    """The tasks' results in their order (see the module docstring); SweepTaskError on the first failure."""
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1):
        raise ValueError(f"parallel: must be a whole number >= 1, got {parallel!r}")
    for position, task in enumerate(tasks):
        if not isinstance(task, SweepTask) or not callable(task.function):
            raise TypeError(f"tasks[{position}]: must be a SweepTask with a callable function, got {task!r}")
    if not tasks:
        return []
    if ray_address is not None:
        return _run_on_ray(tasks, parallel, ray_address, progress)
    return _run_on_processes(tasks, parallel, progress)


def call_task(function: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """What a worker runs: the task, and a check that its result is JSON-able (the same in both places)."""
    result = function(*args, **kwargs)
    try:
        orjson.dumps(result)
    except TypeError as error:
        raise TypeError(f"the result is not JSON-able: {error}") from None
    return result


def _run_on_processes(tasks: Sequence[SweepTask], parallel: int | None, progress: Progress | None) -> list[Any]:
    workers = min(len(tasks), parallel or os.cpu_count() or 1)
    results: list[Any] = [None] * len(tasks)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               max_tasks_per_child=1)
    try:
        index_of: dict[Future[Any], int] = {
            pool.submit(call_task, task.function, task.args, dict(task.kwargs)): index
            for index, task in enumerate(tasks)
        }
        pending, done = set(index_of), 0
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=index_of.__getitem__):
                index = index_of[future]
                error = future.exception()
                if error is not None:
                    # the worker's traceback comes as the cause, a _RemoteTraceback holding its text
                    raise SweepTaskError(tasks[index].name, error, getattr(error.__cause__, "tb", None)) from error
                results[index] = future.result()
                done += 1
                if progress is not None:
                    progress(done, len(tasks), tasks[index].name)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers still running a task."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    # Before 3.14 only the pool's own table knows its processes; ended, they break the pool, which
    # fails what was queued, and shutdown then has nothing to wait for.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _run_on_ray(tasks: Sequence[SweepTask], parallel: int | None, address: str,
                progress: Progress | None) -> list[Any]:
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        options: dict[str, Any] = {"address": address}
        if address == "local":
            options.update(include_dashboard=False, num_cpus=parallel)
        ray.init(**options)
    try:
        return _ray_sweep(ray, tasks, parallel or len(tasks), progress)
    finally:
        if started_here:
            ray.shutdown()


def _ray_sweep(ray: Any, tasks: Sequence[SweepTask], in_flight: int, progress: Progress | None) -> list[Any]:
    remote_call = ray.remote(num_cpus=1, max_retries=0)(call_task)
    results: list[Any] = [None] * len(tasks)
    index_of: dict[Any, int] = {}
    waiting = iter(enumerate(tasks))
    done = 0

    def submit_more() -> None:
        while len(index_of) < in_flight:
            step = next(waiting, None)
            if step is None:
                return
            index, task = step
            reference = remote_call.options(name=task.name).remote(task.function, task.args, dict(task.kwargs))
            index_of[reference] = index

    submit_more()
    while index_of:
        (reference,), _ = ray.wait(list(index_of), num_returns=1)
        index = index_of.pop(reference)
        try:
            results[index] = ray.get(reference)
        except Exception as error:
            for other in index_of:
                ray.cancel(other, force=True)
            cause = getattr(error, "cause", None)
            raise SweepTaskError(tasks[index].name, cause if isinstance(cause, BaseException) else error,
                                 _ANSI_ESCAPE_RE.sub("", str(error))) from error
        done += 1
        if progress is not None:
            progress(done, len(tasks), tasks[index].name)
        submit_more()
    return results


def _import_ray() -> Any:
    """The ray module (imported by name: it is an optional extra without type information)."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise RuntimeError('a Ray address was given but Ray is not installed: pip install "phalanx[ray]"') from None
