"""A Kubernetes 1.37 cluster schedules a v1beta1 gang: the three pods bind together and the
PodGroup says PodGroupInitiallyScheduled=True (kubectl 1.37)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cluster
from .test_tutorial import poll

KUBECTL_137 = Path("/work/main/.venv/kubectl-1.37/bin/kubectl")

GANG = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: trio, namespace: sched137}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
"""


def member(i: int) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: trio-{i}, namespace: sched137, labels: {{app: trio}}}}
spec:
  terminationGracePeriodSeconds: 0
  schedulingGroup: {{podGroupName: trio}}
  containers:
  - {{name: c, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}
"""


def test_v1beta1_gang_binds_together_and_is_initially_scheduled(cluster137: Cluster):
    c = cluster137

    def k(*args: str, **kw):
        return c.kubectl(*args, binary=KUBECTL_137, **kw)
    k("create", "namespace", "sched137").check()
    k("apply", "-f", "-", input=GANG).check()
    # two members alone are held; the third lets the gang go
    k("apply", "-f", "-", input=member(0) + member(1)).check()
    k("apply", "-f", "-", input=member(2)).check()
    k("wait", "-n", "sched137", "--for=condition=PodGroupInitiallyScheduled", "podgroup/trio",
      "--timeout=60s").check()
    nodes = poll(lambda: (n := k("get", "pods", "-n", "sched137", "-l", "app=trio", "-o",
                                 "jsonpath={.items[*].spec.nodeName}").check().out.split())
                 and len(n) == 3 and n)
    assert nodes, k("get", "pods", "-n", "sched137", "-o", "wide").out
    pg = json.loads(k("get", "podgroup.v1beta1.scheduling.k8s.io", "trio", "-n", "sched137",
                              "-o", "json").check().out)
    assert pg["apiVersion"] == "scheduling.k8s.io/v1beta1"
    [cond] = [x for x in pg["status"]["conditions"] if x["type"] == "PodGroupInitiallyScheduled"]
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled")
    events = json.loads(k("get", "events", "-n", "sched137", "-o", "json").check().out)["items"]
    assert [e["message"] for e in events if e["reason"] == "FailedScheduling"] == []
    k("delete", "namespace", "sched137", "--wait=false").check()
