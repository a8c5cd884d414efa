"""The scheduling framework: extension points, Status, CycleState, NodeInfo/PodInfo, Snapshot,
profiles and the runtime that runs a profile's plugins (see runtime.py for the entry points)."""

from .config import KubeSchedulerConfiguration, KubeSchedulerProfile, default_profile, load_configuration
from .cycle_state import CycleState, NotFoundError
from .diagnosis import Diagnosis, FitError, NodeToStatus, NoNodesAvailableError, SchedulingError, fit_error_message
from .interface import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    NominatingInfo,
    NominatingMode,
    PermitPlugin,
    Placement,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementProgress,
    PlacementScorePlugin,
    Plugin,
    PodGroupAssignments,
    PodGroupInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    WaitingPod,
)
from .registry import Registry, in_tree_registry
from .nominator import Nominator
from .results import ScheduleResult, SchedulingCycleResult, ScoreResult
from .runtime import Framework
from .services import EventRecorder, HandleServices
from .snapshot import Snapshot
from .status import Code, Status, as_status
from .events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from .resources import Resource
from .types import NodeInfo, PodInfo, QueuedPodInfo
