"""phalanx's own pod and node lifecycle as named, Stage-shaped transitions (the built-in stage set).

The simulated kubelet's lifecycle is a set of `Transition`s, each with a KWOK stage's shape: a
`name`, the kind it acts on, what it selects (`matches`), how long it waits (`delay`) and what it
does (`apply`), written in code so the statuses and events stay upstream's (per-container messages,
recognised programs, back-off, PersistentVolumeClaim waits). The `StageRunner` draws them exactly
as it draws the stages of KWOK Stage files:

    lifecycle = BuiltinStages("Pod", POD_TRANSITIONS, select=kubelet.select_pod, act=kubelet.act)
    runner = StageRunner(client, file_stages, now, enqueue_after, funcs, builtin=lifecycle)

`select(obj, key, now)` names the one transition that applies to `obj` and its delay (the built-in
transitions are mutually exclusive, so computing the choice once is the draw); `act(name, obj, key)`
does it. A stage from a stage file with the same `metadata.name` replaces the transition of that
name: the runner never runs a replaced transition.

`DEFAULT_STAGE_FILES` are the same transitions written as KWOK Stage YAML (package data under
`defaults/`): documentation, and a starting point for files that replace a transition.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any, Awaitable, Callable

__all__ = ["BuiltinStages", "DEFAULT_STAGE_FILES", "NODE_TRANSITIONS", "POD_TRANSITIONS", "Transition",
           "default_stage_text"]

BUILTIN_SOURCE = "built-in"


@dataclass(frozen=True)
class Transition:
    """One built-in stage: its name, the kind it acts on and what it does, in words."""

    name: str
    kind: str
    summary: str
    api_group: str = "v1"
    source: str = BUILTIN_SOURCE


POD_TRANSITIONS = (
    Transition("pod-create", "Pod", "a pod bound to the node shows ContainerCreating (PodReadyToStartContainers=False) "
                                    "while containerCreatingDelay lasts or its PersistentVolumeClaims are not Bound"),
    Transition("pod-ready", "Pod", "the containers run: phase Running, podIP, container statuses, Initialized, "
                                   "Ready and ContainersReady; Pulling/Pulled, Created, Started events"),
    Transition("pod-probe-ready", "Pod", "a container with a readinessProbe turns ready after its "
                                         "initialDelaySeconds; a node back from a failure posts Ready again"),
    Transition("pod-exit", "Pod", "the containers exit when their run time is over (phalanx.dev/run-for and "
                                  "phalanx.dev/exit-code, recognised programs, Job pods): restarted as restartPolicy "
                                  "says, else the pod ends Succeeded or Failed"),
    Transition("pod-crashloop-backoff", "Pod", "containers waiting in CrashLoopBackOff start again when the "
                                               "back-off (10s doubling to 5m) ends"),
    Transition("pod-terminating", "Pod", "a deleted pod turns not Ready at once, with Killing events"),
    Transition("pod-stopped", "Pod", "a deleted pod's containers stop after their preStop hooks or "
                                     "terminatingDelay, within the grace period (exit code 0, 137 when it ran out); "
                                     "pod-delete follows at once"),
    Transition("pod-delete", "Pod", "a deleted pod whose containers stopped (or that finished) is removed"),
)

NODE_TRANSITIONS = (
    Transition("node-initialize", "Node", "a node whose kubelet conditions are not healthy (new, or back from a "
                                          "failure) renews its Lease and posts Ready=True (event NodeReady)"),
)

DEFAULT_STAGE_FILES = ("pod-stages.yaml", "node-stages.yaml")


def default_stage_text(file: str) -> str:
    """The text of one of `DEFAULT_STAGE_FILES`."""
    return resources.files(__package__).joinpath("defaults", file).read_text(encoding="utf-8")


Select = Callable[[dict, str, float], "tuple[str, float] | None"]
Act = Callable[[str, dict, str], Awaitable[Any]]


class BuiltinStages:
    """The built-in transitions of one kind, with the code that chooses and does them."""

    def __init__(self, kind: str, transitions: tuple[Transition, ...], select: Select, act: Act):
        self.kind = kind
        self.transitions = {t.name: t for t in transitions}
        self._select = select
        self._act = act

    def select(self, obj: dict, key: str, now: float) -> tuple[Transition, float] | None:
        """The transition that applies to `obj` now and its delay in seconds, or None."""
        chosen = self._select(obj, key, now)
        if chosen is None:
            return None
        name, delay = chosen
        return self.transitions[name], delay

    async def apply(self, transition: Transition, obj: dict, key: str) -> None:
        await self._act(transition.name, obj, key)
