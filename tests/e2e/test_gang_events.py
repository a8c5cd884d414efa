"""The tutorial's gang schedules without a word of failure: no Warning event for the PodGroup or
its pods while the JobSet's pods are still being created.

Upstream's GangScheduling PreEnqueue holds a gang's pods until `minCount` of them exist, and that
wait is not a scheduling failure: no FailedScheduling is recorded for it. The tutorial's manifests
(examples/dra-integration/) are applied in README order, in a namespace of the shared cluster.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .conftest import Cluster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-integration"
README_ORDER = ("resourceclaimtemplate.yaml", "workload.yaml", "podgroup.yaml", "jobset.yaml")


def manifest(name: str) -> str:
    """The tutorial's file, in the test's namespace instead of `default`."""
    return (EXAMPLE / name).read_text().replace("  namespace: default\n", "")


def running_pods(c: Cluster, ns: str) -> list[str]:
    out = c.kubectl("get", "pods", "-n", ns, "--field-selector", "status.phase=Running", "-o",
                    "jsonpath={.items[*].metadata.name}").check().out
    return out.split()


def test_tutorial_gang_schedules_without_warning_events(cluster: Cluster, ns: str):
    for name in README_ORDER:
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest(name)).check()
    r = cluster.kubectl("wait", "-n", ns, "--for=condition=PodGroupScheduled", "podgroup/training-workers",
                        "--timeout=60s", timeout=90)
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 60
    while len(running_pods(cluster, ns)) < 6 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert len(running_pods(cluster, ns)) == 6, cluster.kubectl("get", "pods", "-n", ns, "-o", "wide").out
    events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").check().out)["items"]
    pods = set(running_pods(cluster, ns))
    ours = [e for e in events if e["involvedObject"].get("name") in pods | {"training-workers"}]
    warnings = [(e["involvedObject"]["name"], e["reason"], e["message"]) for e in ours
                if e.get("type") == "Warning" or e["reason"] == "FailedScheduling"]
    assert warnings == []
    # what a user sees: the PodGroup's events and its condition speak of success only
    table = cluster.kubectl("get", "events", "-n", ns, "--field-selector",
                            "involvedObject.kind=PodGroup,involvedObject.name=training-workers").check().out
    assert "FailedScheduling" not in table and "Warning" not in table
    assert "Scheduled" in table
    reason = cluster.kubectl("get", "podgroup", "training-workers", "-n", ns, "-o",
                             'jsonpath={.status.conditions[?(@.type=="PodGroupScheduled")].reason}').check().out
    assert reason == "Scheduled"
