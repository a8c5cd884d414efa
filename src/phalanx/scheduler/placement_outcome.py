"""What trying one placement gives the group cycle: the pods it placed (assumed on the
placement's view of the cluster), the pods it could not place and why, and whether the PodGroup
is feasible there. `schedule_one_podgroup.py` makes them, `placementsearch.py` orders and prunes
the tries, workload-aware preemption makes them on its dry-run copies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from .framework.cycle_state import CycleState
from .framework.diagnosis import FitError
from .framework.interface import Placement
from .framework.snapshot import Snapshot
from .framework.types import PodInfo, QueuedPodInfo


class Assignment(NamedTuple):
    """One member placed in a try: assumed on `node` of the try's view, reserved with `state`."""

    queued: QueuedPodInfo
    pod_info: PodInfo
    node: str
    state: CycleState


@dataclass(eq=False)
class PlacementOutcome:
    placement: Placement
    view: Optional[Snapshot] = None  # where the assumptions live until the try is reverted
    assigned: list[Assignment] = field(default_factory=list)
    assumed: dict[str, PodInfo] = field(default_factory=dict)  # pod key -> the PodInfo assumed on the view
    failures: dict[str, tuple[QueuedPodInfo, FitError]] = field(default_factory=dict)  # pod key -> why not
    feasible: bool = False
    plugins: set[str] = field(default_factory=set)  # plugins that rejected something (queueing hints)
    status_message: str = ""  # why the try stopped, when it was not a Filter failure
    message: str = ""  # what happened there, for explanations (placementsearch.describe)
    tried: bool = True  # False: left out on capacity without running the group algorithm
    kept: bool = False  # the lone feasible placement: its assumptions stay for the commit
    displaced: list[Assignment] = field(default_factory=list)  # preemption's reprieve: pods to put back
    # Pod-by-pod preemption in the cycle (WorkloadAwarePreemption off): members placed on the node
    # their PostFilter nominated, with its victims taken out of the view until the try is reverted.
    victims: list[tuple[PodInfo, str, PodInfo]] = field(default_factory=list)  # (victim, node, preemptor)
    preempting: dict[str, FitError] = field(default_factory=dict)  # member key -> why it needed preemption
    lower_nominated: list[PodInfo] = field(default_factory=list)  # lower-priority nominations to clear

    @property
    def name(self) -> str:
        return self.placement.name

    def record(self, message: str) -> dict:
        """The try as `phalanx explain` shows it under `placementsTried`."""
        return {"placement": self.placement.name, "feasible": self.feasible, "podsPlaced": len(self.assigned),
                "message": message}
