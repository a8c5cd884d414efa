"""The DRA tutorial's gang leaves no FailedScheduling warning behind: until `minCount` pods of the
gang exist (and have their claim), GangScheduling's PreEnqueue holds them, which upstream records
as no event (the wait is `waiting for minCount pods from a gang to appear in scheduling queue`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Cluster, create_cluster
from .test_tutorial import poll

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-integration"


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory) -> Cluster:
    c = create_cluster(tmp_path_factory.mktemp("sched-tutorial"), "sched-tutorial",
                       config=(EXAMPLE / "kind.yaml").read_text())
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def warnings(c: Cluster) -> list[dict]:
    events = json.loads(c.kubectl("get", "events", "-o", "json").check().out)["items"]
    return [e for e in events if e.get("type") == "Warning"]


def test_tutorial_gang_schedules_without_failed_scheduling_warnings(tutorial: Cluster):
    k = tutorial.kubectl
    for f in ("resourceclaimtemplate.yaml", "workload.yaml", "podgroup.yaml", "jobset.yaml"):
        k("apply", "-f", str(EXAMPLE / f)).check()
    k("wait", "--for=condition=PodGroupScheduled", "podgroup/training-workers", "--timeout=60s").check()
    bound = poll(lambda: (n := k("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=training-job", "-o",
                                "jsonpath={.items[*].spec.nodeName}").check().out.split()) and len(n) == 6)
    assert bound, k("get", "pods", "-o", "wide").out
    failed = [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["message"])
              for e in warnings(tutorial) if e["reason"] == "FailedScheduling"]
    assert failed == []
