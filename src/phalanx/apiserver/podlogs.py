"""`pods/log` for simulated nodes: log lines made from what the pod's status says happened.

No container ever runs, so a container's log is told from its status: when it started, what a
recognised program printed (`echo hi` prints `hi`, see `phalanx.machinery.programs`), and how it
ended. The log of the current run comes from `state` (or, while the container waits in
CrashLoopBackOff, from its last run, as the kubelet serves it), `--previous` from `lastState`.
The text is a function of the stored pod, so it survives restarts and needs no log files.

Errors are upstream's: a container that has not started yet is "waiting to start", a previous
run that does not exist is "not found", both as 400 BadRequest.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..machinery import errors
from ..machinery.programs import recognize


def _container(pod: dict, name: str) -> dict:
    for c in (pod.get("spec") or {}).get("containers") or []:
        if c.get("name") == name:
            return c
    return {}


def _status(pod: dict, name: str) -> dict | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == name:
            return cs
    return None


def _waiting(pod: dict, container: str) -> errors.StatusError:
    md = pod.get("metadata") or {}
    cs = _status(pod, container) or {}
    reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason") or "ContainerCreating"
    if not (pod.get("spec") or {}).get("nodeName"):
        reason = "the pod is not scheduled to a node yet"
    return errors.bad_request(f'container "{container}" in pod "{md.get("name")}" is waiting to start: {reason}')


def _run(pod: dict, container: str, previous: bool) -> dict:
    """The container run whose log is asked for: a `running` or `terminated` state."""
    cs = _status(pod, container)
    md = pod.get("metadata") or {}
    if previous:
        last = ((cs or {}).get("lastState") or {}).get("terminated")
        if not last:
            raise errors.bad_request(f'previous terminated container "{container}" in pod "{md.get("name")}" not found')
        return {"terminated": last}
    state = (cs or {}).get("state") or {}
    if "running" in state or "terminated" in state:
        return state
    last = ((cs or {}).get("lastState") or {}).get("terminated")
    if last and "waiting" in state:
        return {"terminated": last}  # in back-off: the kubelet serves the last run's log
    raise _waiting(pod, container)


def log_lines(pod: dict, container: str, previous: bool = False) -> list[tuple[str, str]]:
    """(timestamp, line) pairs of the container's simulated log."""
    run = _run(pod, container, previous)
    spec = _container(pod, container)
    node = (pod.get("spec") or {}).get("nodeName", "")
    info = run.get("running") or run.get("terminated") or {}
    started = info.get("startedAt") or ""
    lines = [(started, f'[phalanx] container "{container}" started (image {spec.get("image", "")}) '
                       f'on simulated node "{node}"')]
    program = recognize(spec.get("command"), spec.get("args"))
    if program is not None:
        lines += [(started, line) for line in program.output]
    if "terminated" in run:
        t = run["terminated"]
        lines.append((t.get("finishedAt") or started,
                      f'[phalanx] container "{container}" exited with code {t.get("exitCode", 0)} '
                      f'({t.get("reason") or "Completed"})'))
    return lines


def _rfc3339nano(ts: str) -> str:
    try:
        d = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return ts
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond * 1000:09d}Z"


def render(lines: list[tuple[str, str]], *, timestamps: bool = False, tail: int | None = None) -> str:
    if tail is not None and tail >= 0:
        lines = lines[len(lines) - tail:] if tail else []
    return "".join(f"{_rfc3339nano(ts)} {text}\n" if timestamps else f"{text}\n" for ts, text in lines)


def simulated_node_error(pod: dict, action: str) -> errors.StatusError:
    """What exec, attach and port-forward answer: the node runs no containers."""
    md = pod.get("metadata") or {}
    node = (pod.get("spec") or {}).get("nodeName") or ""
    where = f'node "{node}" is simulated by phalanx' if node else "phalanx's nodes are simulated"
    return errors.bad_request(f'unable to {action} pod "{md.get("name")}": {where} and runs no containers; '
                              f'exec, attach, cp and port-forward need a real node (kubectl logs shows the '
                              f'simulated log)')
