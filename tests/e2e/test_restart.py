"""A stopped and started control plane keeps its objects and resourceVersions (kill -9 during
writes: tests/reliability/test_kill9.py)."""

from __future__ import annotations

from .conftest import Cluster, create_cluster


def test_stop_start_keeps_objects_and_resource_versions(tmp_path):
    c = create_cluster(tmp_path, "restart")
    try:
        c.kubectl("create", "configmap", "keep", "--from-literal=a=1").check()
        rv = c.kubectl("get", "cm", "keep", "-o", "jsonpath={.metadata.resourceVersion}").check().out
        c.phalanx("stop", "cluster", "--name", "restart").check()
        assert c.kubectl("get", "cm", "keep", "--request-timeout=3s").returncode != 0
        c.phalanx("start", "cluster", "--name", "restart").check()
        assert c.kubectl("get", "cm", "keep", "-o", "jsonpath={.data.a}").check().out == "1"
        assert c.kubectl("get", "cm", "keep", "-o", "jsonpath={.metadata.resourceVersion}").check().out == rv
        # the watch history does not survive a restart: an older resourceVersion is 410 Expired,
        # and kubectl (as every client-go reflector) relists
        from .test_errors import raw_request
        code, status = raw_request(c, "GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1")
        assert code == 410 and status["reason"] == "Expired" and "too old resource version" in status["message"]
        c.kubectl("create", "configmap", "after").check()
        rv2 = c.kubectl("get", "cm", "after", "-o", "jsonpath={.metadata.resourceVersion}").check().out
        assert int(rv2) > int(rv)
    finally:
        c.phalanx("delete", "cluster", "--name", "restart")


def test_two_clusters_side_by_side(tmp_path, cluster: Cluster):
    other = create_cluster(tmp_path, "second")
    try:
        assert other.server_url() != cluster.server_url()
        other.kubectl("create", "configmap", "only-here").check()
        assert other.kubectl("get", "cm", "only-here").returncode == 0
        r = cluster.kubectl("get", "cm", "only-here")
        assert r.returncode != 0 and "not found" in r.stderr
    finally:
        other.phalanx("delete", "cluster", "--name", "second")
