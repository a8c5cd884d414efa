"""The checks `phalanx bench --cluster` replays over its pod watch log."""

from __future__ import annotations

from phalanx.sim.clusterchecks import WatchLog, _bound_once, _never_overcommitted, leftovers_check


def _pod(name, node="", phase="Pending", cpu="1", uid=None):
    return {"metadata": {"name": name, "uid": uid or name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


def _nodes(cpu="2"):
    return {"n1": {"status": {"allocatable": {"cpu": cpu, "pods": "110"}}},
            "n2": {"status": {"allocatable": {"cpu": cpu, "pods": "110"}}}}


def test_a_pod_moved_to_another_node_is_bound_twice():
    log = WatchLog()
    log.add("ADDED", _pod("a"))
    log.add("MODIFIED", _pod("a", "n1"))
    log.add("MODIFIED", _pod("a", "n1", "Running"))
    assert _bound_once(log)["ok"]
    log.add("MODIFIED", _pod("a", "n2", "Running"))
    result = _bound_once(log)
    assert not result["ok"] and "bound to n1, later to n2" in result["detail"]


def test_finished_pods_free_their_node_for_the_next():
    log = WatchLog()
    log.add("MODIFIED", _pod("a", "n1", "Running", cpu="2"))
    log.add("MODIFIED", _pod("a", "n1", "Succeeded", cpu="2"))
    log.add("MODIFIED", _pod("b", "n1", "Running", cpu="2"))
    log.add("DELETED", _pod("b", "n1", "Running", cpu="2"))
    log.add("MODIFIED", _pod("c", "n1", "Running", cpu="2"))
    assert _never_overcommitted(log, _nodes(), [])["ok"]


def test_pods_holding_a_node_at_once_beyond_its_allocatable_fail():
    log = WatchLog()
    log.add("MODIFIED", _pod("a", "n1", "Running", cpu="1500m"))
    log.add("MODIFIED", _pod("b", "n1", "Pending", cpu="1"))
    result = _never_overcommitted(log, _nodes(), [])
    assert not result["ok"] and "n1: cpu 2500m requested > 2 (with pod b)" in result["detail"]


def test_pods_of_other_namespaces_count_throughout():
    log = WatchLog()
    log.add("MODIFIED", _pod("a", "n1", "Running", cpu="1"))
    baseline = [_pod("kube-proxy", "n1", "Running", cpu="1500m")]
    assert not _never_overcommitted(log, _nodes(), baseline)["ok"]


def test_leftovers():
    assert leftovers_check({})["ok"]
    result = leftovers_check({"resourceclaims": 3})
    assert not result["ok"] and result["detail"] == "3 resourceclaims left"
