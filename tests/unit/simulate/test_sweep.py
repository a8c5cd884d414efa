"""Sweeps (phalanx.simulate.sweep.run_tasks): independent tasks on local processes and on a local
Ray instance, results in the tasks' order, progress, and a failed task's error with its name.

The tasks are functions any worker can import (the standard library's and phalanx's own), as a
sweep's tasks must be. The Ray tests need the `ray` extra and skip, saying so, without it.
"""

from __future__ import annotations

import operator
import sys
import time

import pytest

from phalanx.machinery.durations import parse_duration
from phalanx.simulate.sweep import SweepTask, SweepTaskError, run_tasks

TASKS = [
    SweepTask("sum", operator.add, (1, 2)),
    SweepTask("duration", parse_duration, ("1m30s",)),  # imports phalanx in the worker
    SweepTask("power", pow, (2, 10)),
    SweepTask("keywords", dict, (), {"policy": "rack", "gangs": [1, 8]}),
]
EXPECTED = [3, 90.0, 1024, {"policy": "rack", "gangs": [1, 8]}]
FAILING = SweepTask("divide-by-zero", operator.truediv, (1, 0))

# The pool's threads must not fail when a sweep stops early.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def __call__(self, done: int, total: int, name: str) -> None:
        self.calls.append((done, total, name))


def _check_progress(recorder: Recorder, tasks: list[SweepTask]) -> None:
    assert [done for done, _, _ in recorder.calls] == list(range(1, len(tasks) + 1))
    assert {total for _, total, _ in recorder.calls} == {len(tasks)}
    assert sorted(name for _, _, name in recorder.calls) == sorted(task.name for task in tasks)


@pytest.mark.parametrize("parallel", [None, 1, 2])
def test_local_processes_return_results_in_the_tasks_order(parallel):
    recorder = Recorder()
    assert run_tasks(TASKS, parallel=parallel, ray_address=None, progress=recorder) == EXPECTED
    _check_progress(recorder, TASKS)


@pytest.mark.timeout(120)  # a worker left running would hold the sweep for the hour it sleeps
def test_a_failed_task_is_named_with_its_error_and_the_workers_traceback():
    with pytest.raises(SweepTaskError) as caught:
        run_tasks([SweepTask("sleeps-an-hour", time.sleep, (3600,)), *TASKS, FAILING], parallel=2)
    error = caught.value
    assert str(error) == 'sweep task "divide-by-zero" failed: ZeroDivisionError: division by zero'
    assert (error.task, type(error.error)) == ("divide-by-zero", ZeroDivisionError)
    assert "ZeroDivisionError" in error.remote_traceback and "call_task" in error.remote_traceback


def test_a_result_that_is_not_json_able_fails_its_task():
    with pytest.raises(SweepTaskError, match='sweep task "a-set" failed: TypeError: the result is not JSON-able'):
        run_tasks([SweepTask("a-set", set, ([1, 2],))], parallel=1)


def test_no_tasks_and_bad_arguments():
    assert run_tasks([], parallel=None, ray_address=None, progress=None) == []
    with pytest.raises(ValueError, match="parallel: must be a whole number >= 1, got 0"):
        run_tasks(TASKS, parallel=0)
    with pytest.raises(TypeError, match=r"tasks\[1\]: must be a SweepTask"):
        run_tasks([TASKS[0], (operator.add, (1, 2))])  # type: ignore[list-item]


def test_a_ray_address_without_ray_installed_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RuntimeError, match=r'Ray is not installed: pip install "phalanx\[ray\]"'):
        run_tasks(TASKS, ray_address="local")


def _ray():
    return pytest.importorskip("ray", reason="Ray is not installed (the `ray` extra: pip install -e '.[ray]')")


def test_ray_local_instance_returns_results_in_the_tasks_order():
    ray = _ray()
    recorder = Recorder()
    assert run_tasks(TASKS, parallel=2, ray_address="local", progress=recorder) == EXPECTED
    _check_progress(recorder, TASKS)
    assert not ray.is_initialized()  # the instance run_tasks started is shut down


@pytest.mark.timeout(180)  # a task left running would hold the sweep for the hour it sleeps
def test_ray_names_a_failed_task_and_leaves_the_callers_ray_running():
    ray = _ray()
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        with pytest.raises(SweepTaskError) as caught:
            run_tasks([SweepTask("sleeps-an-hour", time.sleep, (3600,)), *TASKS, FAILING], parallel=None,
                      ray_address="local")
        error = caught.value
        assert str(error) == 'sweep task "divide-by-zero" failed: ZeroDivisionError: division by zero'
        assert isinstance(error.error, ZeroDivisionError)
        assert "call_task" in error.remote_traceback and "\x1b[" not in error.remote_traceback
        assert ray.is_initialized()
        assert run_tasks(TASKS[:2], ray_address="auto") == EXPECTED[:2]  # the caller's Ray, whatever the address
    finally:
        ray.shutdown()
