"""The pod statuses a kubelet writes, as pure functions of the pod, the node and the time.

`plan(pod)` says what the pod's containers will do (how long they run, their exit code), from, in
order: the `phalanx.dev/run-for` / `phalanx.dev/exit-code` annotations (shorthands that win over
everything), the containers' commands when each is a program `phalanx.machinery.programs`
recognises, and KWOK's default for the pods of Jobs (a Job's pod whose command is not recognised
completes with exit code 0 as soon as it runs). A container without a command runs its image's
entrypoint, which a simulation cannot know: like any unrecognised program, it runs until told.

The other functions build the status of each step of upstream's lifecycle: ContainerCreating,
Running (readiness from probes: a container with a `readinessProbe` turns ready after its
`initialDelaySeconds`), CrashLoopBackOff (waiting, with the last termination), terminated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..machinery.durations import format_duration, parse_duration
from ..machinery.programs import Program, recognize

RUN_FOR = "phalanx.dev/run-for"
EXIT_CODE = "phalanx.dev/exit-code"
CRASH_LOOP = "CrashLoopBackOff"
BACKOFF_INITIAL = 10.0  # upstream kubelet's container restart back-off: 10s doubling ...
BACKOFF_MAX = 300.0  # ... to 5 minutes,
BACKOFF_RESET = 600.0  # forgotten after a container ran for 10 minutes


def run_for_seconds(pod: dict) -> float | None:
    """The pod's `phalanx.dev/run-for` annotation in seconds; None when absent, negative or not a Go
    duration (`30s`, `1m30s`, `500ms`)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_FOR)
    if not text:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


@dataclass
class Plan:
    """How long the pod's containers run (None: until told) and the exit code they end with."""

    run_for: float | None
    exit_code: int = 0


def _owned_by_job(pod: dict) -> bool:
    return any(r.get("kind") == "Job" and str(r.get("apiVersion", "")).startswith("batch/")
               for r in (pod.get("metadata") or {}).get("ownerReferences") or [])


def container_program(pod: dict, c: dict) -> Program | None:
    return recognize(c.get("command"), c.get("args"))


def _annotated_exit_code(pod: dict) -> int | None:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(EXIT_CODE)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return 1


def _programs(pod: dict) -> list[Program] | None:
    """What each container runs; None when one of them runs until told."""
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        p = container_program(pod, c)
        if p is None and (c.get("command") or c.get("args")) and _owned_by_job(pod):
            p = Program()  # KWOK's pod-complete: a Job's pod succeeds once it runs
        if p is None or p.duration is None:
            return None
        out.append(p)
    return out or None


def plan(pod: dict) -> Plan:
    code = _annotated_exit_code(pod)
    run_for = run_for_seconds(pod)
    if run_for is not None:
        return Plan(run_for, code or 0)
    programs = _programs(pod)
    if programs is None:
        return Plan(None, code or 0)
    exit_code = code if code is not None else next((p.exit_code for p in programs if p.exit_code), 0)
    return Plan(max(p.duration or 0.0 for p in programs), exit_code)


def next_backoff(current: float | None) -> float:
    return BACKOFF_INITIAL if current is None else min(BACKOFF_MAX, current * 2)


# -- conditions -------------------------------------------------------------------------------
def cond(t: str, status: str, now: str, reason: str | None = None, message: str | None = None) -> dict:
    c: dict[str, Any] = {"type": t, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def set_conditions(status: dict, conds: list[dict]) -> None:
    """Set conditions by type, keeping lastTransitionTime when the status did not change."""
    existing = {c.get("type"): c for c in status.get("conditions") or []}
    out = []
    for c in conds:
        old = existing.pop(c["type"], None)
        if old is not None and old.get("status") == c["status"]:
            c = dict(c, lastTransitionTime=old.get("lastTransitionTime", c["lastTransitionTime"]))
        out.append(c)
    # keep conditions set by others (PodScheduled, DisruptionTarget, readiness gates)
    status["conditions"] = [*existing.values(), *out]
    order = {"PodReadyToStartContainers": 0, "Initialized": 1, "Ready": 2, "ContainersReady": 3, "PodScheduled": 4}
    status["conditions"].sort(key=lambda c: order.get(c.get("type"), 5))


def readiness(status: dict, now: str, unready: list[str], reason: str = "ContainersNotReady") -> None:
    """Ready and ContainersReady from the names of the containers that are not ready."""
    if unready:
        message = f"containers with unready status: [{' '.join(unready)}]"
        set_conditions(status, [cond("Ready", "False", now, reason, message),
                                cond("ContainersReady", "False", now, reason, message)])
    else:
        set_conditions(status, [cond("Ready", "True", now), cond("ContainersReady", "True", now)])


def probe_delay(c: dict) -> float:
    """Seconds after start before the container is ready: its readiness probe's initial delay."""
    probe = c.get("readinessProbe")
    if not isinstance(probe, dict):
        return 0.0
    return float(probe.get("initialDelaySeconds") or 0)


def pod_ref(pod: dict) -> str:
    md = pod["metadata"]
    return f"{md.get('name')}_{md.get('namespace')}({md.get('uid', '')})"


def backoff_status(pod: dict, now: str, delay: float, exit_code: int) -> dict:
    """Containers waiting in CrashLoopBackOff after exiting with `exit_code`."""
    status = dict(pod.get("status") or {})
    cstats = []
    for cs in status.get("containerStatuses") or []:
        started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
        cstats.append(dict(cs, ready=False, started=False, state={"waiting": {
            "reason": CRASH_LOOP, "message": f"back-off {format_duration(delay)} restarting failed "
                                             f"container={cs.get('name')} pod={pod_ref(pod)}"}},
            lastState={"terminated": terminated(exit_code, started, now, cs.get("containerID", ""))}))
    status["containerStatuses"] = cstats
    readiness(status, now, [c["name"] for c in cstats])
    return status


def terminated(exit_code: int, started: str, finished: str, container_id: str) -> dict:
    return {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error", "startedAt": started,
            "finishedAt": finished, "containerID": container_id}


def stopped_status(pod: dict, now: str, exit_code: int) -> dict:
    """Every container terminated (on deletion): not ready, with its exit code."""
    status = dict(pod.get("status") or {})
    cstats = []
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "terminated" in state:
            cstats.append(cs)
            continue
        started = (state.get("running") or {}).get("startedAt", now)
        cstats.append(dict(cs, ready=False, started=False,
                           state={"terminated": terminated(exit_code, started, now, cs.get("containerID", ""))}))
    status["containerStatuses"] = cstats
    set_conditions(status, [cond("PodReadyToStartContainers", "False", now)])
    readiness(status, now, [c["name"] for c in cstats])
    return status


def unready_status(pod: dict, now: str) -> dict:
    """The pod being deleted: not ready any more while its containers stop."""
    status = dict(pod.get("status") or {})
    status["containerStatuses"] = [dict(cs, ready=False) for cs in status.get("containerStatuses") or []]
    readiness(status, now, [c["name"] for c in status["containerStatuses"]])
    return status


def prestop_seconds(c: dict) -> float:
    """How long the container's preStop hook takes: a `sleep` action, or an exec of a recognised
    program; 0 for the others."""
    hook = ((c.get("lifecycle") or {}).get("preStop")) or {}
    if isinstance(hook.get("sleep"), dict):
        return float(hook["sleep"].get("seconds") or 0)
    if isinstance(hook.get("exec"), dict):
        p = recognize(hook["exec"].get("command"), None)
        if p is not None:
            return float("inf") if p.duration is None else p.duration
    return 0.0
