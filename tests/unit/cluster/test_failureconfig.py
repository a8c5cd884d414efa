"""The failure parts of a phalanx cluster config: `controllerManager:`, `kubelet.nodeLeaseDurationSeconds`
and `failures:`, kept in the ClusterSpec, with errors that name the file and the field."""

from __future__ import annotations

import pytest

from phalanx.cluster.components import node_lifecycle_config
from phalanx.cluster.config import parse_cluster_config
from phalanx.cluster.spec import ClusterSpec
from phalanx.machinery.strictyaml import ConfigFileError

HEAD = """apiVersion: phalanx.dev/v1alpha1
kind: Cluster
nodePools:
- {name: w, count: 4, labels: {rack: "r{i//2}"}}
"""


def problems(text: str) -> str:
    with pytest.raises(ConfigFileError) as info:
        parse_cluster_config(text, "c.yaml")
    return str(info.value)


def test_settings_and_schedule_are_kept_normalized():
    spec = parse_cluster_config(HEAD + """kubelet: {nodeLeaseDurationSeconds: 2}
controllerManager:
  nodeMonitorPeriod: 500ms
  nodeMonitorGracePeriod: 4s
  nodeStartupGracePeriod: 1m
  nodeEvictionRate: 10
  secondaryNodeEvictionRate: 0
  largeClusterSizeThreshold: 3
  unhealthyZoneThreshold: 0.7
  terminatedPodGCThreshold: 0
failures:
- {at: 60s, nodes: {matchLabels: {rack: r1}}, recoverAfter: 5m}
- {at: 2m, node: w-3, devices: [gpu-0, "*"]}
- {at: 0, nodes: {matchExpressions: [{key: rack, operator: In, values: [r0]}]}}
""", "c.yaml")
    assert spec.kubelet == {"nodeLeaseDurationSeconds": 2}
    assert spec.controller_manager == {"nodeMonitorPeriod": 0.5, "nodeMonitorGracePeriod": 4.0,
                                       "nodeStartupGracePeriod": 60.0, "nodeEvictionRate": 10.0,
                                       "secondaryNodeEvictionRate": 0.0, "largeClusterSizeThreshold": 3,
                                       "unhealthyZoneThreshold": 0.7, "terminatedPodGCThreshold": 0}
    assert spec.failures == [
        {"at": 60.0, "recoverAfter": 300.0, "nodes": {"matchLabels": {"rack": "r1"}}},
        {"at": 120.0, "node": "w-3", "devices": ["gpu-0", "*"]},
        {"at": 0.0, "nodes": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r0"]}]}}]
    config = node_lifecycle_config(spec.controller_manager)
    assert (config.node_monitor_period, config.node_monitor_grace_period, config.node_eviction_rate,
            config.large_cluster_size_threshold, config.unhealthy_zone_threshold) == (0.5, 4.0, 10.0, 3, 0.7)
    again = ClusterSpec.from_dict(__import__("json").loads(spec.to_json()))
    assert again.failures == spec.failures and again.controller_manager == spec.controller_manager


def test_defaults_are_upstreams():
    spec = parse_cluster_config(HEAD, "c.yaml")
    assert spec.failures == [] and spec.controller_manager == {}
    config = node_lifecycle_config({})
    assert (config.node_monitor_period, config.node_monitor_grace_period, config.node_startup_grace_period,
            config.node_eviction_rate, config.secondary_node_eviction_rate, config.large_cluster_size_threshold,
            config.unhealthy_zone_threshold) == (5.0, 50.0, 60.0, 0.1, 0.01, 50, 0.55)


@pytest.mark.parametrize("body, expected", [
    ("controllerManager: {nodeMonitorGracePeriod: soon}",
     'controllerManager.nodeMonitorGracePeriod: invalid duration "soon": must be positive'),
    ("controllerManager: {nodeMonitorPeriod: 0s}", 'controllerManager.nodeMonitorPeriod: invalid duration "0s"'),
    ("controllerManager: {nodeEvictionRate: -1}", 'controllerManager.nodeEvictionRate: invalid value "-1"'),
    ("controllerManager: {unhealthyZoneThreshold: 1.5}",
     "controllerManager.unhealthyZoneThreshold: invalid value \"1.5\": must be a number between 0 and 1"),
    ("controllerManager: {largeClusterSizeThreshold: 2.5}",
     "controllerManager.largeClusterSizeThreshold: expected an integer"),
    ("controllerManager: {podEvictionTimeout: 5m}", "controllerManager.podEvictionTimeout: unknown field"),
    ("controllerManager: [1]", "controllerManager: expected a mapping"),
    ("kubelet: {nodeLeaseDurationSeconds: 0}", "kubelet.nodeLeaseDurationSeconds: invalid value 0: must be greater than 0"),
    ("kubelet: {nodeLeaseDurationSeconds: 1s}", "kubelet.nodeLeaseDurationSeconds: expected an integer"),
    ("failures: {at: 1s}", "failures: expected a list"),
    ("failures: [{node: w-1}]", "failures[0].at: required"),
    ("failures: [{at: -1s, node: w-1}]", 'failures[0].at: invalid duration "-1s"'),
    ("failures: [{at: 1s, node: w-1, recoverAfter: 0s}]", 'failures[0].recoverAfter: invalid duration "0s"'),
    ("failures: [{at: 1s}]", "failures[0]: set exactly one of node (a node name) and nodes (a label selector)"),
    ("failures: [{at: 1s, node: w-1, nodes: {}}]", "failures[0]: set exactly one of node"),
    ("failures: [{at: 1s, node: w-9}]", 'failures[0].node: no node "w-9" in this cluster'),
    ("failures: [{at: 1s, nodes: {matchLabels: {rack: r9}}}]", "failures[0].nodes: matches no node of this cluster"),
    ("failures: [{at: 1s, nodes: {matchExpressions: [{key: rack, operator: Near}]}}]",
     "failures[0].nodes.matchExpressions[0].operator: Invalid value"),
    ("failures: [{at: 1s, nodes: {labels: {rack: r1}}}]", "failures[0].nodes.labels: unknown field"),
    ("failures: [{at: 1s, node: w-1, devices: []}]", "failures[0].devices: must name at least one device"),
    ("failures: [{at: 1s, node: w-1, devices: gpu-0}]", "failures[0].devices: expected a list"),
    ("failures: [{at: 1s, node: w-1, devices: [GPU_0]}]", 'failures[0].devices[0]: invalid device name "GPU_0"'),
    ("failures: [{at: 1s, node: w-1, when: now}]", "failures[0].when: unknown field"),
])
def test_errors_name_the_file_and_field(body, expected):
    assert f"c.yaml: {expected}" in problems(HEAD + body + "\n")
