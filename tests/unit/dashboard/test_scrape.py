"""The Metrics view's figures from a Prometheus text exposition: queue depths, attempts, and the
attempt-duration percentiles between two scrapes, as histogram_quantile computes them."""

from __future__ import annotations

import pytest

from phalanx.dashboard.scrape import MetricsUnavailable, SchedulerMetrics, parse, point

HELP = """\
# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{{queue="active"}} {active}
scheduler_pending_pods{{queue="unschedulable"}} 2.0
# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{{profile="default-scheduler",result="scheduled"}} {scheduled}
# HELP scheduler_scheduling_attempt_duration_seconds [STABLE] Scheduling attempt latency in seconds.
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{{le="0.001",profile="default-scheduler",result="scheduled"}} {b1}
scheduler_scheduling_attempt_duration_seconds_bucket{{le="0.01",profile="default-scheduler",result="scheduled"}} {b2}
scheduler_scheduling_attempt_duration_seconds_bucket{{le="+Inf",profile="default-scheduler",result="scheduled"}} {b2}
scheduler_scheduling_attempt_duration_seconds_count{{profile="default-scheduler",result="scheduled"}} {b2}
scheduler_scheduling_attempt_duration_seconds_sum{{profile="default-scheduler",result="scheduled"}} 0.05
"""


def text(active=3, scheduled=10, b1=10, b2=10):
    return HELP.format(active=active, scheduled=scheduled, b1=b1, b2=b2)


def test_depths_attempts_and_percentiles():
    sample = parse(text(), at=100.0)
    assert sample.pending == {"active": 3.0, "unschedulable": 2.0}
    assert sample.attempts == {"scheduled": 10.0}
    assert sample.pod_duration.quantile(0.5) == pytest.approx(0.0005)  # inside the first bucket


def test_a_point_describes_the_interval_since_the_previous_scrape():
    before = parse(text(), at=100.0)
    now = parse(text(active=1, scheduled=30, b1=10, b2=30), at=110.0)  # 20 slower attempts since
    p = point(now, before)
    assert p["attemptsPerSecond"] == {"scheduled": 2.0}
    assert p["pending"]["active"] == 1.0
    assert 0.001 < p["podAttemptSeconds"]["p50"] <= 0.01
    assert p["podAttemptSeconds"]["count"] == 20


def test_no_observations_no_percentile():
    before = parse(text(), at=100.0)
    p = point(parse(text(), at=110.0), before)
    assert p["podAttemptSeconds"]["p50"] is None


async def test_an_unreadable_endpoint_is_reported_not_raised():
    async def forbidden():
        raise MetricsUnavailable('GET /metrics: 403 Forbidden: forbidden: User "x" cannot get path "/metrics"')
    metrics = SchedulerMetrics(forbidden)
    view = await metrics.current()
    assert not view["available"] and "403" in view["error"] and view["points"] == []


async def test_a_cluster_without_scheduler_metrics_says_so():
    async def apiserver_only():
        return "# TYPE apiserver_request_total counter\napiserver_request_total{verb=\"GET\"} 1.0\n"
    view = await SchedulerMetrics(apiserver_only).current()
    assert view["error"] is None and not view["available"]
