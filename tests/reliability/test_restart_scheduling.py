"""kill -9 of the control plane while pods are being scheduled: after the restart every pod is bound
at most once (one nodeName that never changes, at most one Scheduled event), every pod that fits
is bound, and no node is over its allocatable."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter, defaultdict

import pytest

from phalanx.machinery.quantity import parse_quantity

from .conftest import Cluster, create_cluster, kill_9, open_watch, python_client, restart

THREE_WORKERS = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
- role: worker
- role: worker
"""
PODS = 30  # 1 CPU each on three 8-CPU workers: 24 fit, 6 stay Pending
CREATORS = 3
BOUND_BEFORE_KILL = 6
SETTLE_BOUND_SECONDS = 60


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1",
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


@pytest.fixture
def three_workers(tmp_path):
    c = create_cluster(tmp_path, "sched-restart", config=THREE_WORKERS)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def _record_bindings(c: Cluster, rv: str, node_names: dict[str, set[str]]) -> None:
    """Every nodeName each pod is seen with on a watch, until the server dies."""
    status, resp = open_watch(c, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}")
    assert status == 200
    with resp:
        try:
            for line in resp:
                pod = json.loads(line)["object"]
                if pod["spec"].get("nodeName"):
                    node_names[pod["metadata"]["name"]].add(pod["spec"]["nodeName"])
        except (http.client.HTTPException, OSError):
            return


def _create(c: Cluster, names: list[str]) -> None:
    api = python_client(c)
    try:
        for name in names:
            api.create_namespaced_pod("default", _pod(name), _request_timeout=10)
    except Exception:  # the kill
        return


def _settled(c: Cluster) -> list | None:
    """The pods once each is bound or marked unschedulable, else None."""
    pods = python_client(c).list_namespaced_pod("default").items
    for p in pods:
        conditions = {cond.type: cond for cond in p.status.conditions or []}
        unschedulable = (conditions.get("PodScheduled") is not None
                         and conditions["PodScheduled"].status == "False")
        if not p.spec.node_name and not unschedulable:
            return None
    return pods


def _kill_while_scheduling(c: Cluster, names: list[str]) -> dict[str, str]:
    """Create the pods from CREATORS clients; kill -9 once BOUND_BEFORE_KILL are bound. Returns the
    node of every pod a watch saw bound before the kill."""
    seen: dict[str, set[str]] = defaultdict(set)
    rv = python_client(c).list_namespaced_pod("default").metadata.resource_version
    watcher = threading.Thread(target=_record_bindings, args=(c, rv, seen), daemon=True)
    watcher.start()
    creators = [threading.Thread(target=_create, args=(c, names[i::CREATORS]), daemon=True) for i in range(CREATORS)]
    for t in creators:
        t.start()
    deadline = time.monotonic() + SETTLE_BOUND_SECONDS
    while len(seen) < BOUND_BEFORE_KILL:
        assert time.monotonic() < deadline, "no pod was bound"
        time.sleep(0.005)
    kill_9(c)  # while pods are still being created and scheduled
    for t in [*creators, watcher]:
        t.join(30)
    assert all(len(nodes) == 1 for nodes in seen.values()), seen
    return {name: next(iter(nodes)) for name, nodes in seen.items()}


def _wait_settled(c: Cluster) -> None:
    deadline = time.monotonic() + SETTLE_BOUND_SECONDS
    while _settled(c) is None:
        assert time.monotonic() < deadline, "pods neither bound nor unschedulable"
        time.sleep(0.2)
    time.sleep(1.0)  # a late second binding would show now


def _assert_one_scheduled_event_each(c: Cluster, node_of: dict[str, str], bound_after_restart: set[str]) -> None:
    events = [e for e in python_client(c).list_namespaced_event("default").items if e.reason == "Scheduled"]
    scheduled = Counter(e.involved_object.name for e in events)
    assert all(n <= 1 for n in scheduled.values()), scheduled
    assert set(scheduled) <= set(node_of), "a Scheduled event for a pod that is not bound"
    for name in bound_after_restart:  # an event written before the kill may be lost, not these
        assert scheduled[name] == 1, name
    for e in events:
        pod = e.involved_object.name
        assert e.message == f"Successfully assigned default/{pod} to {node_of[pod]}", e.message


def _requested_per_node(c: Cluster) -> dict[str, Counter]:
    requested: dict[str, Counter] = defaultdict(Counter)
    for p in python_client(c).list_pod_for_all_namespaces().items:
        if not p.spec.node_name:
            continue
        requested[p.spec.node_name]["pods"] += 1
        for ctr in p.spec.containers:
            for res, q in ((ctr.resources and ctr.resources.requests) or {}).items():
                requested[p.spec.node_name][res] += parse_quantity(q)
    return requested


def test_restart_while_scheduling_binds_each_pod_once_and_overfills_no_node(three_workers: Cluster):
    c = three_workers
    api = python_client(c)
    names = [f"p-{i}" for i in range(PODS)]
    bound_before_kill = _kill_while_scheduling(c, names)

    restart(c)
    at_restart = {p.metadata.name: p.spec.node_name for p in api.list_namespaced_pod("default").items}
    _create(c, [n for n in names if n not in at_restart])
    _wait_settled(c)
    node_of = {p.metadata.name: p.spec.node_name for p in api.list_namespaced_pod("default").items
               if p.spec.node_name}
    for name, node in bound_before_kill.items():
        assert node_of.get(name) == node, f"{name} was on {node} before the kill, now on {node_of.get(name)}"
    _assert_one_scheduled_event_each(c, node_of, set(node_of) - {n for n, node in at_restart.items() if node})

    nodes = {n.metadata.name: n.status.allocatable for n in api.list_node().items}
    for node, used in _requested_per_node(c).items():
        for res, amount in used.items():
            assert amount <= parse_quantity(nodes[node][res]), f"{node} over its allocatable {res}"
    workers_cpu = sum(int(parse_quantity(nodes[n]["cpu"])) for n in nodes if "worker" in n)
    assert len(node_of) == min(PODS, workers_cpu), "a pod that fits is not bound"
