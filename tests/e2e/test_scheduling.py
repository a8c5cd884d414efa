"""Gang scheduling seen through kubectl and `phalanx explain`, and the standalone scheduler."""

from __future__ import annotations

import os
import subprocess
import time

from .conftest import PHALANX, Cluster


def gang(ns: str, name: str, min_count: int, pods: int, cpu: str = "100m", scheduler: str | None = None) -> str:
    docs = [f"""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {name}, namespace: {ns}}}
spec:
  schedulingPolicy:
    gang: {{minCount: {min_count}}}
"""]
    for i in range(pods):
        sched = f"\n  schedulerName: {scheduler}" if scheduler else ""
        docs.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}-{i}, namespace: {ns}}}
spec:{sched}
  terminationGracePeriodSeconds: 0
  schedulingGroup: {{podGroupName: {name}}}
  containers:
  - name: c
    image: busybox
    resources: {{requests: {{cpu: "{cpu}"}}}}
""")
    return "---\n".join(docs)


def test_gang_scheduled_columns_describe_wait(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-f", "-", input=gang(ns, "g", 3, 3)).check()
    out = cluster.kubectl("wait", "-n", ns, "--for=condition=PodGroupScheduled", "podgroup/g", "--timeout=30s").check().out
    assert out.strip() == "podgroup.scheduling.k8s.io/g condition met"
    table = cluster.kubectl("get", "podgroup", "g", "-n", ns).check().out.splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert table[1].split()[:4] == ["g", "Gang", "<none>", "Scheduled"]
    desc = cluster.kubectl("describe", "podgroup", "g", "-n", ns).check().out
    assert "PodGroupScheduled" in desc and "Scheduled" in desc
    assert "Successfully placed 3 pod(s) of pod group" in desc
    cluster.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod", "-l", "!nonexistent", "--timeout=30s").check()


def test_unschedulable_gang_explained(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-f", "-", input=gang(ns, "big", 3, 3, cpu="6")).check()
    out = cluster.kubectl("wait", "-n", ns, "--for=jsonpath={.status.conditions[0].reason}=Unschedulable",
                          "podgroup/big", "--timeout=30s").check().out
    assert "condition met" in out
    msg = cluster.kubectl("get", "podgroup", "big", "-n", ns, "-o",
                          "jsonpath={.status.conditions[0].message}").check().out
    assert msg.startswith("1/3 pods fit, 3 required;")
    assert "Insufficient cpu" in msg
    assert cluster.kubectl("get", "pods", "-n", ns, "--field-selector", "spec.nodeName=", "-o", "name").check().out.count("pod/") == 3
    ex = cluster.phalanx("explain", "podgroup", "big", "-n", ns, "--kubeconfig", str(cluster.kubeconfig)).check().out
    assert "PodGroup " + ns + "/big" in ex and "Gang (minCount 3)" in ex
    assert "1/3 pods fit, 3 required" in ex and "Insufficient cpu" in ex
    assert "pods: 3 (0 bound, 3 pending)" in ex
    ex = cluster.phalanx("explain", "pod", "big-2", "-n", ns, "--kubeconfig", str(cluster.kubeconfig)).check().out
    assert "FailedScheduling" in ex and "Insufficient cpu" in ex


def test_pending_gang_below_min_count_is_explained(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-f", "-", input=gang(ns, "few", 4, 2)).check()
    time.sleep(1)
    r = cluster.kubectl("wait", "-n", ns, "--for=jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].reason}"
                        "=SchedulingGated", "pod/few-0", "pod/few-1", "--timeout=30s")
    assert r.returncode == 0, r.stderr
    rows = cluster.kubectl("get", "pods", "-n", ns, "--no-headers").check().out.splitlines()
    assert len(rows) == 2 and all(r.split()[2] == "SchedulingGated" for r in rows), rows
    ex = cluster.phalanx("explain", "pod", "few-0", "-n", ns, "--kubeconfig", str(cluster.kubeconfig)).check().out
    assert "held before scheduling: waiting for minCount pods from a gang to appear in scheduling queue" in ex
    assert "pod group few: 2/4 pods exist (minCount 4)" in ex


def test_standalone_scheduler_over_http(cluster: Cluster, ns: str):
    proc = subprocess.Popen([str(PHALANX), "scheduler", "--kubeconfig", str(cluster.kubeconfig),
                             "--scheduler-name", "second-scheduler"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cluster.env)
    try:
        cluster.kubectl("apply", "-f", "-", input=gang(ns, "second", 2, 2, scheduler="second-scheduler")).check()
        r = cluster.kubectl("wait", "-n", ns, "--for=condition=PodGroupScheduled", "podgroup/second", "--timeout=60s")
        assert r.returncode == 0, r.stderr
        events = cluster.kubectl("get", "events", "-n", ns, "--field-selector", "reason=Scheduled",
                                 "-o", "jsonpath={range .items[*]}{.source.component}{\"\\n\"}{end}").check().out
        assert "second-scheduler" in events.split()
        bound = cluster.kubectl("get", "pods", "-n", ns, "-o", "jsonpath={.items[*].spec.nodeName}").check().out.split()
        assert len(bound) == 2
        # the gang scenarios, over HTTP: a late member joins the scheduled group ...
        late = gang(ns, "second", 2, 3, scheduler="second-scheduler").split("---\n")[-1]
        cluster.kubectl("apply", "-f", "-", input=late).check()
        r = cluster.kubectl("wait", "-n", ns, "--for=jsonpath={.spec.nodeName}=e2e-worker", "pod/second-2",
                            "--timeout=60s")
        assert r.returncode == 0, r.stderr
        # ... a gang that cannot fit binds nothing and says why ...
        cluster.kubectl("apply", "-f", "-", input=gang(ns, "huge", 2, 2, cpu="6", scheduler="second-scheduler")).check()
        r = cluster.kubectl("wait", "-n", ns, "--for=jsonpath={.status.conditions[0].reason}=Unschedulable",
                            "podgroup/huge", "--timeout=60s")
        assert r.returncode == 0, r.stderr
        msg = cluster.kubectl("get", "podgroup", "huge", "-n", ns, "-o",
                              "jsonpath={.status.conditions[0].message}").check().out
        assert msg.startswith("1/2 pods fit, 2 required;") and "Insufficient cpu" in msg
        # ... and a gang below minCount stays at PreEnqueue until its last member comes
        docs = gang(ns, "wait", 3, 3, scheduler="second-scheduler").split("---\n")
        cluster.kubectl("apply", "-f", "-", input="---\n".join(docs[:3])).check()
        time.sleep(2)
        assert cluster.kubectl("get", "pods", "-n", ns, "-l", "!nonexistent", "--field-selector",
                               "spec.nodeName=", "-o", "name").check().out.count("pod/wait-") == 2
        cluster.kubectl("apply", "-f", "-", input=docs[3]).check()
        r = cluster.kubectl("wait", "-n", ns, "--for=condition=PodGroupScheduled", "podgroup/wait", "--timeout=60s")
        assert r.returncode == 0, r.stderr
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
