"""The less common opcodes, run through the harness on virtual time (phalanx.sim.ops)."""

from __future__ import annotations

import yaml

from phalanx.client import VirtualClock
from phalanx.sim.harness import RunOptions, run_workload
from phalanx.sim.workload import parse_test_cases

POD = """
apiVersion: v1
kind: Pod
metadata:
  generateName: churn-
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: registry.k8s.io/pause:3.10.1, resources: {requests: {cpu: 100m}}}
"""

CASE = """
- name: Ops
  workloadTemplate:
  - opcode: createNodes
    count: 3
    labelNodePrepareStrategy: {labelKey: zone, labelValues: [a, b]}
  - opcode: createNamespaces
    prefix: team
    count: 2
  - opcode: createPods
    count: 4
    namespace: team-0
  - opcode: churn
    mode: recreate
    number: 2
    templatePaths: [pod.yaml]
    intervalMilliseconds: 1000
  - opcode: startCollectingMetrics
    name: window
    namespaces: [team-1]
  - opcode: createPods
    count: 6
    namespace: team-1
    skipWaitToCompletion: true
  - opcode: barrier
    namespaces: [team-1]
  - opcode: sleep
    duration: 5s
  - opcode: stopCollectingMetrics
  - opcode: deletePods
    namespace: team-0
  workloads:
  - name: smoke
"""


def test_ops_run_in_order_and_leave_what_they_say(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (case,) = parse_test_cases(yaml.safe_load(CASE), base_dir=str(tmp_path))
    clock = VirtualClock()
    result = run_workload(case, case.workloads[0], RunOptions(clock=clock, stall=30, timeout=60, store_limit=False))
    assert result["status"] == "completed", result
    assert [c["name"] for c in result["checks"] if not c["ok"]] == []
    (m,) = result["measurements"]
    assert (m["name"], m["namespaces"], m["podsScheduled"]) == ("window", ["team-1"], 6)
    assert [t["op"] for t in result["opTimings"]][-1] == "op 9 deletePods"
    # churn ran for the sleep: every other tick it created a pod in its ring, every other it deleted one
    assert result["schedulerStats"]["bound"] >= 4 + 6 + 2
    assert result["components"] == ["scheduler"]
