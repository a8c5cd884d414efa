"""The scheduler's framework with upstream's metrics: `MeteredFramework` is a `Framework` that
times its extension points and, in sampled cycles, its plugins.

- `scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}` for the
  points that run once per pod: PreFilter, PostFilter, PreScore, Score, Reserve, Permit, PreBind,
  Bind (Filter runs per node and, as upstream, has no whole-point timing);
- `scheduler_scheduling_algorithm_duration_seconds`: a pod cycle's `schedule_pod` that found a node
  (not the evaluations of a group cycle or of a preemption dry run);
- `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}`: each plugin at
  PreFilter, PostFilter, PreScore, Reserve and Permit when the cycle's `CycleState.record_plugin_metrics`
  says so (the pod cycle sets it for `PLUGIN_METRICS_SAMPLE_PERCENT` of its cycles, as upstream).
  A sampled cycle runs timing stand-ins of those plugins (`_Timed`, made once at construction);
  the other cycles run the plugins themselves. Filter and Score, which run per node, are not
  sampled, so that the per-node path stays untouched.

A cycle pays one `perf_counter` pair and one `observe` per extension point: the label children
are resolved once per (point, status).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

from phalanx.metrics import scheduler as sm

from .cycle_state import CycleState
from .diagnosis import NodeToStatus
from .interface import PostFilterResult, PreFilterResult
from .results import ScoreResult, SchedulingCycleResult, ScheduleResult
from .runtime import Framework
from .snapshot import Snapshot
from .status import Code, Status
from .types import NodeInfo, PodInfo

Obj = dict[str, Any]
# extension point -> (plugin list attribute, plugin method) of the plugins timed in sampled cycles
SAMPLED_POINTS = {"PreFilter": ("pre_filter_plugins", "pre_filter"),
                  "PostFilter": ("post_filter_plugins", "post_filter"),
                  "PreScore": ("pre_score_plugins", "pre_score"),
                  "Reserve": ("reserve_plugins", "reserve"),
                  "Permit": ("permit_plugins", "permit")}


_CODE_NAMES = {code: code.name for code in Code}  # Code.String()


def status_label(out: Any) -> str:
    """The status code a runner's or plugin's result carries (`Success` for None)."""
    if isinstance(out, tuple):
        out = next((x for x in out if isinstance(x, Status)), None)
    return _CODE_NAMES[out.code] if isinstance(out, Status) else "Success"


class _Timed:
    """A plugin as a sampled cycle runs it: its method at one extension point is timed; every
    other attribute is the plugin's."""

    def __init__(self, plugin: Any, point: str, method: str):
        self._plugin = plugin
        self._name = plugin.name()
        self._point = point
        self._method = getattr(plugin, method)
        setattr(self, method, self._timed)

    def _timed(self, *args: Any) -> Any:
        start = time.perf_counter()
        out = self._method(*args)
        sm.plugin_duration(self._name, self._point, status_label(out), time.perf_counter() - start)
        return out

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._plugin, attr)


class MeteredFramework(Framework):
    """A `Framework` that records upstream's scheduler framework metrics."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._points = sm.ExtensionPointTimer(self.profile_name)
        self._in_pod_cycle = False
        # plugin list attribute -> (the plugins, their timing stand-ins)
        self._sampling = {attr: (getattr(self, attr), [_Timed(pl, point, method) for pl in getattr(self, attr)])
                          for point, (attr, method) in SAMPLED_POINTS.items()}

    def _observe(self, point: str, st: Optional[Status], start: float) -> None:
        self._points.observe(point, "Success" if st is None else _CODE_NAMES[st.code], time.perf_counter() - start)

    def _use_timed_plugins(self, timed: bool) -> None:
        for attr, (plain, stand_ins) in self._sampling.items():
            setattr(self, attr, stand_ins if timed else plain)

    def scheduling_cycle(self, pod: PodInfo | Obj, snapshot: Optional[Snapshot] = None, *,
                         state: Optional[CycleState] = None,
                         assume: Optional[Callable[[PodInfo, str], PodInfo]] = None,
                         forget: Optional[Callable[[PodInfo, str], None]] = None) -> SchedulingCycleResult:
        self._in_pod_cycle = True
        sampled = state is not None and state.record_plugin_metrics
        if sampled:
            self._use_timed_plugins(True)
        try:
            return super().scheduling_cycle(pod, snapshot, state=state, assume=assume, forget=forget)
        finally:
            self._in_pod_cycle = False
            if sampled:
                self._use_timed_plugins(False)

    def schedule_pod(self, state: CycleState, pod: PodInfo | Obj, snapshot: Optional[Snapshot] = None) -> ScheduleResult:
        if not self._in_pod_cycle:
            return super().schedule_pod(state, pod, snapshot)
        self._in_pod_cycle = False  # evaluations nested in this one are not the pod's algorithm
        start = time.perf_counter()
        result = super().schedule_pod(state, pod, snapshot)
        sm.SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - start)
        return result

    def run_pre_filter_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                               ) -> tuple[Optional[PreFilterResult], Optional[Status], list[str]]:
        start = time.perf_counter()
        out = super().run_pre_filter_plugins(state, pod, nodes)
        self._observe("PreFilter", out[1], start)
        return out

    def run_post_filter_plugins(self, state: CycleState, pod: PodInfo,
                                node_to_status: NodeToStatus) -> tuple[Optional[PostFilterResult], Status]:
        start = time.perf_counter()
        out = super().run_post_filter_plugins(state, pod, node_to_status)
        self._observe("PostFilter", out[1], start)
        return out

    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        start = time.perf_counter()
        out = super().run_pre_score_plugins(state, pod, nodes)
        self._observe("PreScore", out, start)
        return out

    def run_score_plugins(self, state: CycleState, pod: PodInfo,
                          nodes: Sequence[NodeInfo]) -> tuple[Optional[ScoreResult], Optional[Status]]:
        start = time.perf_counter()
        out = super().run_score_plugins(state, pod, nodes)
        self._observe("Score", out[1], start)
        return out

    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        start = time.perf_counter()
        out = super().run_reserve_plugins_reserve(state, pod, node_name)
        self._observe("Reserve", out, start)
        return out

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        start = time.perf_counter()
        out = super().run_permit_plugins(state, pod, node_name)
        self._observe("Permit", out, start)
        return out

    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        start = time.perf_counter()
        out = await super().run_pre_bind_plugins(state, pod, node_name)
        self._observe("PreBind", out, start)
        return out

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        start = time.perf_counter()
        out = await super().run_bind_plugins(state, pod, node_name)
        self._observe("Bind", out, start)
        return out
