"""kube-scheduler's metrics (`pkg/scheduler/metrics`), names, labels and buckets as upstream.

Pods: `scheduler_schedule_attempts_total{result,profile}` and
`scheduler_scheduling_attempt_duration_seconds{result,profile}` (result `scheduled`,
`unschedulable`, `error`; a success is counted when the pod is bound, as upstream),
`scheduler_scheduling_algorithm_duration_seconds`, `scheduler_pod_scheduling_sli_duration_seconds{attempts}`
(from the pod's first entry in the queue), `scheduler_pod_scheduling_attempts`,
`scheduler_pending_pods{queue}` (read from the queue when scraped), `scheduler_preemption_attempts_total`,
`scheduler_preemption_victims`, `scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}`
and `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}` (recorded in a
sample of the cycles, `PLUGIN_METRICS_SAMPLE_PERCENT`, as upstream).

Workload-aware scheduling (gate GenericWorkload): `scheduler_podgroup_schedule_attempts_total{result,profile}`,
`scheduler_podgroup_scheduling_attempt_duration_seconds{result,profile}`,
`scheduler_podgroup_scheduling_algorithm_duration_seconds`, and the preemption of workloads
`scheduler_workload_preemption_attempts_total{result}` and `scheduler_workload_preemption_victims`
(the KEP's draft names `scheduler_podgroup_preemption_*` were shipped under these).

The counters and histograms are `local` ones (plain numbers turned into metric families when
scraped): a cycle's increment or observation costs a dictionary read and an addition.
`ExtensionPointTimer` keeps the children of one profile.
"""

from __future__ import annotations

from .local import CounterFamily, HistogramFamily, LocalHistogram
from .registry import ScrapeGauge, exponential_buckets

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
PLUGIN_METRICS_SAMPLE_PERCENT = 10
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")

_ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)

SCHEDULE_ATTEMPTS = CounterFamily(
    "scheduler_schedule_attempts_total",
    "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
    "scheduled, while 'error' means an internal scheduler problem.",
    ("result", "profile"))
SCHEDULING_ATTEMPT_DURATION = HistogramFamily(
    "scheduler_scheduling_attempt_duration_seconds",
    "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ("result", "profile"), buckets=_ATTEMPT_BUCKETS)
SCHEDULING_ALGORITHM_DURATION = HistogramFamily(
    "scheduler_scheduling_algorithm_duration_seconds", "[BETA] Scheduling algorithm latency in seconds",
    buckets=_ATTEMPT_BUCKETS)
POD_SCHEDULING_SLI_DURATION = HistogramFamily(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
    "might involve multiple scheduling attempts.",
    ("attempts",), buckets=exponential_buckets(0.01, 2, 20))
POD_SCHEDULING_ATTEMPTS = HistogramFamily(
    "scheduler_pod_scheduling_attempts", "[STABLE] Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5))
PREEMPTION_ATTEMPTS = CounterFamily(
    "scheduler_preemption_attempts_total", "[STABLE] Total preemption attempts in the cluster till now")
PREEMPTION_VICTIMS = HistogramFamily(
    "scheduler_preemption_victims",
    "[STABLE] Number of selected preemption victims for preemption initiated by a single pod",
    buckets=exponential_buckets(1, 2, 7))
EXTENSION_POINT_DURATION = HistogramFamily(
    "scheduler_framework_extension_point_duration_seconds",
    "[STABLE] Latency for running all plugins of a specific extension point.",
    ("extension_point", "status", "profile"), buckets=exponential_buckets(0.0001, 2, 12))
PLUGIN_EXECUTION_DURATION = HistogramFamily(
    "scheduler_plugin_execution_duration_seconds",
    "[BETA] Duration for running a plugin at a specific extension point.",
    ("plugin", "extension_point", "status"), buckets=exponential_buckets(0.00001, 1.5, 20))
PENDING_PODS = ScrapeGauge(
    "scheduler_pending_pods",
    "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
    "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities that "
    "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
    "scheduler never attempted to schedule because they are gated.",
    ("queue",), always=[(q,) for q in PENDING_QUEUES])

PODGROUP_SCHEDULE_ATTEMPTS = CounterFamily(
    "scheduler_podgroup_schedule_attempts_total",
    "[ALPHA] Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group "
    "could not be scheduled, while 'error' means an internal scheduler problem.",
    ("result", "profile"))
PODGROUP_SCHEDULING_ATTEMPT_DURATION = HistogramFamily(
    "scheduler_podgroup_scheduling_attempt_duration_seconds", "[ALPHA] Pod group scheduling attempt latency in seconds",
    ("result", "profile"), buckets=_ATTEMPT_BUCKETS)
PODGROUP_SCHEDULING_ALGORITHM_DURATION = HistogramFamily(
    "scheduler_podgroup_scheduling_algorithm_duration_seconds",
    "[ALPHA] Pod group scheduling algorithm latency in seconds", buckets=_ATTEMPT_BUCKETS)
WORKLOAD_PREEMPTION_ATTEMPTS = CounterFamily(
    "scheduler_workload_preemption_attempts_total",
    "[ALPHA] Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
    ("result",))
WORKLOAD_PREEMPTION_VICTIMS = HistogramFamily(
    "scheduler_workload_preemption_victims", "[ALPHA] Number of pod preemption victims caused by workload preemption.",
    buckets=exponential_buckets(1, 2, 11))


def pod_attempt(result: str, profile: str, seconds: float) -> None:
    """A pod's scheduling attempt ended: counted and timed by result."""
    SCHEDULE_ATTEMPTS.labels(result, profile).inc()
    SCHEDULING_ATTEMPT_DURATION.labels(result, profile).observe(seconds)


def pod_scheduled(profile: str, seconds: float | None, attempts: int, since_first_queued: float | None) -> None:
    """A pod was bound: its attempt (None: the pod was placed by a group cycle, which counts its
    own attempts), the attempts it took and the SLI latency."""
    if seconds is not None:
        pod_attempt(SCHEDULED, profile, seconds)
    POD_SCHEDULING_ATTEMPTS.observe(attempts)
    if since_first_queued is not None:
        POD_SCHEDULING_SLI_DURATION.labels(attempts_label(attempts)).observe(since_first_queued)


def attempts_label(attempts: int) -> str:
    """Upstream's `attempts` label: the count, with 15 and more as `15+`."""
    return str(attempts) if attempts < 15 else "15+"


def pod_group_attempt(result: str, profile: str, seconds: float) -> None:
    PODGROUP_SCHEDULE_ATTEMPTS.labels(result, profile).inc()
    PODGROUP_SCHEDULING_ATTEMPT_DURATION.labels(result, profile).observe(seconds)


def preemption(victims: int) -> None:
    """A pod's PostFilter preempted: one attempt and how many victims it chose."""
    PREEMPTION_ATTEMPTS.inc()
    if victims:
        PREEMPTION_VICTIMS.observe(victims)


def workload_preemption(result: str, victims: int) -> None:
    WORKLOAD_PREEMPTION_ATTEMPTS.labels(result).inc()
    if victims:
        WORKLOAD_PREEMPTION_VICTIMS.observe(victims)


class ExtensionPointTimer:
    """Observations of one profile's extension points, by (extension point, status code)."""

    __slots__ = ("profile", "_children")

    def __init__(self, profile: str):
        self.profile = profile
        self._children: dict[tuple[str, str], LocalHistogram] = {}

    def observe(self, point: str, status: str, seconds: float) -> None:
        child = self._children.get((point, status))
        if child is None:
            child = self._children[(point, status)] = EXTENSION_POINT_DURATION.labels(point, status, self.profile)
        child.observe(seconds)


def plugin_duration(plugin: str, point: str, status: str, seconds: float) -> None:
    PLUGIN_EXECUTION_DURATION.labels(plugin, point, status).observe(seconds)
