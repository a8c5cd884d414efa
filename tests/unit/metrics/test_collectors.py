"""The collectors of `phalanx.metrics` as a scrape shows them: work queue metrics by queue name,
gauges read at scrape time, the scheduler's helpers and the exposition itself."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from phalanx import metrics
from phalanx.client.workqueue import WorkQueue
from phalanx.metrics import dra
from phalanx.metrics import scheduler as sm
from phalanx.metrics.registry import ScrapeGauge, exponential_buckets


def value(series: str, /, **labels: str) -> float:
    """A sample's value in the current exposition (0 when absent)."""
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            if s.name == series and s.labels == labels:
                return s.value
    return 0.0


async def test_work_queue_metrics_follow_a_key_through_the_queue():
    q = WorkQueue("unit-queue")
    adds, depth = value("workqueue_adds_total", name="unit-queue"), value("workqueue_depth", name="unit-queue")
    waits = value("workqueue_queue_duration_seconds_count", name="unit-queue")
    works = value("workqueue_work_duration_seconds_count", name="unit-queue")
    q.add("a")
    q.add("a")  # held once
    q.add("b")
    assert value("workqueue_adds_total", name="unit-queue") - adds == 2
    assert value("workqueue_depth", name="unit-queue") - depth == 2
    key = await q.get()
    assert value("workqueue_depth", name="unit-queue") - depth == 1
    assert value("workqueue_queue_duration_seconds_count", name="unit-queue") - waits == 1
    retries = value("workqueue_retries_total", name="unit-queue")
    q.add_rate_limited(key)
    q.done(key)
    assert value("workqueue_retries_total", name="unit-queue") - retries == 1
    assert value("workqueue_work_duration_seconds_count", name="unit-queue") - works == 1
    q.shutdown()
    assert value("workqueue_depth", name="unit-queue") == depth  # a stopped queue leaves no depth behind


async def test_an_unnamed_queue_records_nothing():
    before = metrics.render()
    q = WorkQueue()
    q.add("x")
    await q.get()
    q.done("x")
    assert b'name=""' not in metrics.render() and b'name=""' not in before


def test_scrape_gauge_sums_live_sources_and_forgets_dead_ones():
    reg = CollectorRegistry()
    g = ScrapeGauge("unit_pending", "help", ("queue",), registry=reg, always=[("active",)])

    class Queue:
        def __init__(self, n: int):
            self.n = n

    a, b = Queue(2), Queue(3)
    g.add_source(a, lambda q: {("active",): q.n})
    g.add_source(b, lambda q: {("active",): q.n, ("gated",): 1})
    assert g.values() == {("active",): 5.0, ("gated",): 1.0}
    del b
    gc.collect()
    assert g.values() == {("active",): 2.0}
    assert reg.get_sample_value("unit_pending", {"queue": "active"}) == 2.0


def test_scheduler_helpers_record_upstream_series():
    before = value("scheduler_schedule_attempts_total", result="scheduled", profile="unit")
    sli = value("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="2")
    sm.pod_scheduled("unit", 0.01, 2, 0.5)
    assert value("scheduler_schedule_attempts_total", result="scheduled", profile="unit") - before == 1
    assert value("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="2") - sli == 1
    groups = value("scheduler_podgroup_schedule_attempts_total", result="unschedulable", profile="unit")
    sm.pod_group_attempt(sm.UNSCHEDULABLE, "unit", 0.2)
    assert value("scheduler_podgroup_schedule_attempts_total", result="unschedulable", profile="unit") - groups == 1
    assert sm.attempts_label(3) == "3" and sm.attempts_label(15) == "15+"
    timer = sm.ExtensionPointTimer("unit")
    points = value("scheduler_framework_extension_point_duration_seconds_count", extension_point="Reserve",
                   status="Success", profile="unit")
    timer.observe("Reserve", "Success", 0.001)
    timer.observe("Reserve", "Success", 0.001)
    assert value("scheduler_framework_extension_point_duration_seconds_count", extension_point="Reserve",
                 status="Success", profile="unit") - points == 2


def test_claim_creates_by_status_and_admin_access():
    before = value("dynamic_resource_allocation_resourceclaim_creates_total", status="failure", admin_access="true")
    dra.claim_created(False, True)
    assert value("dynamic_resource_allocation_resourceclaim_creates_total", status="failure",
                 admin_access="true") - before == 1


def test_exposition_has_upstream_buckets_and_no_created_series():
    assert exponential_buckets(0.001, 2, 3) == [0.001, 0.002, 0.004]
    text = metrics.render().decode()
    assert 'scheduler_preemption_victims_bucket{le="64.0"}' in text
    assert "_created" not in text
    assert metrics.CONTENT_TYPE.startswith("text/plain; version=0.0.4")



def test_api_server_labels_are_upstream_verbs_and_scopes():
    from phalanx.metrics import apiserver as am
    cases = [  # (method, collection, watch, apply) -> verb
        (("GET", False, False, False), "GET"), (("GET", True, False, False), "LIST"),
        (("GET", True, True, False), "WATCH"), (("PATCH", False, False, True), "APPLY"),
        (("PATCH", False, False, False), "PATCH"), (("DELETE", True, False, False), "DELETE"),
        (("POST", True, False, False), "POST")]
    for (method, collection, watch, apply), verb in cases:
        assert am.canonical_verb(method, collection=collection, watch=watch, apply=apply) == verb
    assert am.scope_of(name="x", namespace="ns") == "resource"
    assert am.scope_of(name=None, namespace="ns") == "namespace"
    assert am.scope_of(name=None, namespace=None) == "cluster"
    assert am.storage_resource_label("core/pods") == "pods"
    assert am.storage_resource_label("apps/deployments") == "deployments.apps"
