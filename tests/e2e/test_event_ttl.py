"""Events expire after the cluster's `apiServer.eventTTL` (kube-apiserver's `--event-ttl`), counted
from their last write, also across a restart of the control plane."""

from __future__ import annotations

import pytest

from .conftest import Cluster, create_cluster, poll

CONFIG = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
apiServer:
  eventTTL: 4s
nodePools:
- name: cp
  role: control-plane
- name: worker
  count: 1
"""


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory) -> Cluster:
    c = create_cluster(tmp_path_factory.mktemp("eventttl"), "eventttl", config=CONFIG)
    yield c
    c.phalanx("delete", "cluster", "--name", "eventttl")


def events_of(c: Cluster, pod: str) -> list[str]:
    out = c.kubectl("get", "events", "--field-selector", f"involvedObject.name={pod}",
                    "-o", "jsonpath={.items[*].reason}").check().out
    return out.split()


def test_events_go_once_their_ttl_has_passed(short_lived: Cluster):
    c = short_lived
    c.kubectl("run", "ttl", "--image=busybox", "--restart=Never", "--", "sleep", "3600").check()
    assert poll(lambda: "Started" in events_of(c, "ttl"), 30)
    assert poll(lambda: events_of(c, "ttl") == [], 30), events_of(c, "ttl")
    c.kubectl("delete", "pod", "ttl", "--wait=false").check()


def test_a_restarted_control_plane_still_expires_events(short_lived: Cluster):
    c = short_lived
    c.kubectl("run", "ttl2", "--image=busybox", "--restart=Never", "--", "sleep", "3600").check()
    assert poll(lambda: "Started" in events_of(c, "ttl2"), 30)
    c.phalanx("stop", "cluster", "--name", "eventttl").check()
    c.phalanx("start", "cluster", "--name", "eventttl").check()
    assert poll(lambda: "Started" not in events_of(c, "ttl2"), 30), events_of(c, "ttl2")
