"""The unit of a simulated workload stream: one job arriving at a moment of simulated time.

Inline templates, generators (Poisson arrivals, size distributions) and trace readers all turn
their input into `JobArrival`s; the engine turns each into API objects (a Job or a JobSet with a
gang, GPU claims and a topology constraint) when its `arrival` comes:

    JobArrival(name="train-17", arrival=3600.0, duration=5400.0, pods=8, gpus_per_pod=1,
               topology="rack", shared_claim=True, priority=100, user="alice")

Times are seconds of simulated time since the scenario's start. `duration` is how long each pod
runs once started (what the simulated kubelet is told through `phalanx.dev/run-for`); None means
the job runs until the scenario ends. `JobArrival.validate()` returns the problems found, each as a
(field, message) pair, so a reader can name the file, row and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

JobKind = Literal["Job", "JobSet"]


@dataclass(frozen=True)
class JobArrival:
    """One job of the stream. A job of `pods` > 1 is a gang: all its pods schedule or none."""

    name: str
    arrival: float
    duration: float | None = None
    pods: int = 1
    gpus_per_pod: int = 0
    cpu_per_pod: str = "1"
    memory_per_pod: str = "1Gi"
    priority: int | None = None
    kind: JobKind = "Job"
    topology: str | None = None  # the level the gang must fit in ("rack", "block", "zone"), or None
    shared_claim: bool = False  # one PodGroup-level ResourceClaim for the whole gang's GPUs
    min_count: int | None = None  # pods that must schedule together; None: all of them
    user: str | None = None  # who submitted it (traces' user / virtual cluster), for reports
    source: str | None = None  # where it came from ("alibaba-pai-2020:job_table.csv:17"), for errors
    labels: dict[str, str] = field(default_factory=dict)

    def validate(self) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if not self.name:
            problems.append(("name", "must not be empty"))
        if self.arrival < 0:
            problems.append(("arrival", f"must be >= 0 seconds, got {self.arrival}"))
        if self.duration is not None and self.duration < 0:
            problems.append(("duration", f"must be >= 0 seconds, got {self.duration}"))
        if self.pods < 1:
            problems.append(("pods", f"must be >= 1, got {self.pods}"))
        if self.gpus_per_pod < 0:
            problems.append(("gpusPerPod", f"must be >= 0, got {self.gpus_per_pod}"))
        if self.min_count is not None and not 1 <= self.min_count <= self.pods:
            problems.append(("minCount", f"must be between 1 and pods ({self.pods}), got {self.min_count}"))
        if self.kind not in ("Job", "JobSet"):
            problems.append(("kind", f'supported values: "Job", "JobSet"; got {self.kind!r}'))
        return problems
