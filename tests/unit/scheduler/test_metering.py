"""The scheduler framework's metrics (`MeteredFramework`): extension points timed by status and
profile in every pod cycle, plugins timed only in sampled cycles, the algorithm only in pod cycles."""

from __future__ import annotations

from phalanx import metrics
from phalanx.metrics import scheduler as sm
from phalanx.scheduler.framework import CycleState, PodInfo, Snapshot
from phalanx.scheduler.framework.metering import MeteredFramework, status_label
from phalanx.scheduler.framework.status import Code, Status

from .builders import make_node, make_pod


def count(series: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            if s.name == series and s.labels == labels:
                return s.value
    return 0.0


def snapshot() -> Snapshot:
    return Snapshot.from_nodes_and_pods([make_node("n1").capacity(cpu="4", memory="8Gi").obj()], [])


def cycle(fw: MeteredFramework, name: str, cpu: str, sampled: bool):
    state = CycleState()
    state.record_plugin_metrics = sampled
    return fw.scheduling_cycle(PodInfo(make_pod(name).req(cpu=cpu).obj()), snapshot(), state=state)


def test_extension_points_and_sampled_plugins():
    fw = MeteredFramework()
    profile = fw.profile_name
    points = {p: count("scheduler_framework_extension_point_duration_seconds_count", extension_point=p,
                       status="Success", profile=profile) for p in ("PreFilter", "Reserve", "Permit")}
    plugin = count("scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                   extension_point="PreFilter", status="Success")
    algorithm = count("scheduler_scheduling_algorithm_duration_seconds_count")

    assert cycle(fw, "a", "1", sampled=False).node_name == "n1"
    assert count("scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                 extension_point="PreFilter", status="Success") == plugin  # not sampled: not timed
    assert cycle(fw, "b", "1", sampled=True).node_name == "n1"
    assert count("scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                 extension_point="PreFilter", status="Success") == plugin + 1
    for p, before in points.items():
        assert count("scheduler_framework_extension_point_duration_seconds_count", extension_point=p,
                     status="Success", profile=profile) == before + 2, p
    assert count("scheduler_scheduling_algorithm_duration_seconds_count") == algorithm + 2
    assert not any(hasattr(pl, "_timed") for pl in fw.pre_filter_plugins)  # the plugins themselves again


def test_a_pod_that_fits_nowhere_is_timed_with_its_status():
    fw = MeteredFramework()
    post = count("scheduler_framework_extension_point_duration_seconds_count", extension_point="PostFilter",
                 status="Unschedulable", profile=fw.profile_name)
    algorithm = count("scheduler_scheduling_algorithm_duration_seconds_count")
    result = cycle(fw, "big", "64", sampled=False)
    assert result.status is not None and result.status.code == Code.Unschedulable
    assert count("scheduler_framework_extension_point_duration_seconds_count", extension_point="PostFilter",
                 status="Unschedulable", profile=fw.profile_name) == post + 1
    assert count("scheduler_scheduling_algorithm_duration_seconds_count") == algorithm  # only successes


def test_status_labels_are_upstream_code_names():
    assert status_label(None) == "Success"
    assert status_label(Status.new(Code.UnschedulableAndUnresolvable)) == "UnschedulableAndUnresolvable"
    assert status_label((None, Status.new(Code.Unschedulable))) == "Unschedulable"
    assert status_label((Status.new(Code.Wait), 10.0)) == "Wait"
    assert sm.PLUGIN_METRICS_SAMPLE_PERCENT == 10
