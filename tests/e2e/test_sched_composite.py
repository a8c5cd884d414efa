"""A CompositePodGroup tree on a Kubernetes 1.37 cluster (kubectl 1.37): a root with two leaf
PodGroups binds all its pods at once, and each leaf says PodGroupInitiallyScheduled=True; a pod
whose parent does not exist waits with upstream's message."""

from __future__ import annotations

import json

from .conftest import Cluster
from .test_sched_release137 import KUBECTL_137
from .test_tutorial import poll

NS = "tree137"

WORKLOAD = f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {{name: w, namespace: {NS}}}
spec:
  podGroupTemplates:
  - {{name: leader, schedulingPolicy: {{basic: {{}}}}}}
  - {{name: workers, schedulingPolicy: {{basic: {{}}}}}}
  - {{name: orphan, schedulingPolicy: {{basic: {{}}}}}}
"""

TREE = f"""
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {{name: root, namespace: {NS}}}
spec:
  workloadRef: {{workloadName: w, templateName: root}}
  schedulingPolicy: {{gang: {{minGroupCount: 2}}}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: leader, namespace: {NS}}}
spec:
  parentCompositePodGroupName: root
  workloadRef: {{workloadName: w, templateName: leader}}
  schedulingPolicy: {{gang: {{minCount: 1}}}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: workers, namespace: {NS}}}
spec:
  parentCompositePodGroupName: root
  workloadRef: {{workloadName: w, templateName: workers}}
  schedulingPolicy: {{gang: {{minCount: 2}}}}
"""


def member(name: str, group: str) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NS}, labels: {{app: tree}}}}
spec:
  terminationGracePeriodSeconds: 0
  schedulingGroup: {{podGroupName: {group}}}
  containers:
  - {{name: c, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}
"""


def test_composite_tree_binds_all_leaves_together(cluster137: Cluster):
    def k(*args: str, **kw):
        return cluster137.kubectl(*args, binary=KUBECTL_137, **kw)
    k("create", "namespace", NS).check()
    k("apply", "-f", "-", input=WORKLOAD).check()  # the PodGroups' workloadRef must name an existing template
    k("apply", "-f", "-", input=TREE).check()
    k("apply", "-f", "-", input=member("leader-0", "leader") + member("worker-0", "workers")).check()

    def gated(pod: str) -> str:
        return k("get", "pod", pod, "-n", NS, "-o",
                 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}').check().out
    # the workers' leaf lacks a pod: the tree is short of its quorum and nothing binds
    assert poll(lambda: gated("leader-0") == 'waiting for composite pod group "root" tree to meet quorum'), \
        gated("leader-0")
    k("apply", "-f", "-", input=member("worker-1", "workers")).check()
    for leaf in ("leader", "workers"):
        k("wait", "-n", NS, "--for=condition=PodGroupInitiallyScheduled", f"podgroup/{leaf}", "--timeout=60s").check()
    pods = json.loads(k("get", "pods", "-n", NS, "-l", "app=tree", "-o", "json").check().out)["items"]
    assert sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")) == \
        ["leader-0", "worker-0", "worker-1"]
    # a leaf whose parent does not exist waits, in upstream's words
    orphan = (TREE.split("---")[1].replace("name: leader", "name: orphan")
              .replace("templateName: leader", "templateName: orphan")
              .replace("parentCompositePodGroupName: root", "parentCompositePodGroupName: nowhere"))
    k("apply", "-f", "-", input=orphan + member("orphan-0", "orphan")).check()
    assert poll(lambda: gated("orphan-0") == "nowhere not found in workload forest"), gated("orphan-0")
    k("delete", "namespace", NS, "--wait=false").check()
