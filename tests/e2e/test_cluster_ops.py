"""Operating a cluster as a user does: `phalanx create cluster --wait 0`, `get clusters` while it runs
and once stopped, `export logs` of both, `start` again, and the error paths (a crash, a control plane
that cannot start, bad input), with real clusters and the real kubectl."""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

import yaml

from .conftest import Cluster

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: main
    image: busybox:1
    command: [sleep, "3600"]
"""


def new_cluster(tmp: Path, name: str) -> Cluster:
    """A Cluster handle with its own PHALANX_HOME and kubeconfig (not created yet)."""
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PHALANX_HOME=str(home), KUBECONFIG=str(tmp / "kubeconfig"))
    env.pop("HTTPS_PROXY", None)
    env.pop("https_proxy", None)
    return Cluster(name=name, home=home, kubeconfig=tmp / "kubeconfig", cache_dir=tmp / f"kcache-{uuid.uuid4().hex[:6]}",
                   env=env)


def clusters_json(c: Cluster) -> dict:
    return {entry["name"]: entry for entry in c.phalanx("get", "clusters", "-o", "json").check().json()}


def table_row(c: Cluster) -> list[str]:
    r = c.phalanx("get", "clusters").check()
    header, *rows = [line.split() for line in r.out.splitlines()]
    assert header == ["NAME", "STATUS", "VERSION", "NODES", "SERVER"]
    return next(row for row in rows if row[0] == c.name)


def no_traceback(r) -> None:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr


def test_create_get_stop_start_and_export_logs(tmp_path):
    c = new_cluster(tmp_path, "ops")
    try:
        c.phalanx("create", "cluster", "--name", "ops", "--wait", "0", "--image", "kindest/node:v1.36.4").check()
        # --wait 0 returns once the API answers: kubectl works at once, without retrying
        assert "kube-system" in c.kubectl("get", "namespaces", "-o", "name").check().out

        c.kubectl("create", "-f", "-", input=POD.format(name="first")).check()
        c.kubectl("create", "-f", "-", input=POD.format(name="second")).check()
        c.kubectl("wait", "--for=condition=Ready", "pod/first", "pod/second", "--timeout=60s").check()

        assert table_row(c) == ["ops", "Running", "v1.36.4", "2", c.server_url()]
        entry = clusters_json(c)["ops"]
        assert (entry["running"], entry["ready"], entry["nodes"], entry["nodesFrom"]) == (True, True, 2, "api")
        assert entry["controlPlaneLog"] == str(c.state_dir / "control-plane.log")

        running = tmp_path / "logs-running"
        r = c.phalanx("export", "logs", "--name", "ops", str(running)).check()
        assert r.out.strip() == str(running)
        check_running_export(running)

        c.phalanx("stop", "cluster", "--name", "ops").check()
        assert table_row(c) == ["ops", "Stopped", "v1.36.4", "2", c.server_url()]
        assert clusters_json(c)["ops"]["nodesFrom"] == "state"

        stopped = tmp_path / "logs-stopped"
        r = c.phalanx("export", "logs", "--name", "ops", str(stopped)).check()
        assert "The dump of objects, node descriptions and pod logs was skipped: the cluster is stopped" in r.stderr
        for name in ("control-plane.log", "cluster.json", "kubernetes-version.txt", "state.db", "export.txt"):
            assert (stopped / name).stat().st_size > 0, name
        assert not (stopped / "cluster-info").exists()
        assert table_row(c)[1] == "Stopped"  # exporting did not start it

        c.phalanx("start", "cluster", "--name", "ops").check()
        assert table_row(c)[1] == "Running"
        assert c.kubectl("get", "pod", "first", "-o", "name").check().out.strip() == "pod/first"
    finally:
        c.phalanx("delete", "cluster", "--name", "ops")


def check_running_export(out: Path) -> None:
    """kind's `export logs` contents: log, config, version; plus a cluster-info dump and node descriptions."""
    for name in ("control-plane.log", "cluster.json", "kubernetes-version.txt", "phalanx-version.txt", "export.txt",
                 "nodes/ops-control-plane.txt", "nodes/ops-worker.txt", "cluster-info/nodes.yaml",
                 "cluster-info/namespaces.yaml", "cluster-info/default/pods.yaml", "cluster-info/default/events.yaml",
                 "cluster-info/kube-system/pods.yaml", "cluster-info/default/logs/first/main.log"):
        assert (out / name).stat().st_size > 0, name
    assert "control plane serving on" in (out / "control-plane.log").read_text()
    assert "v1.36.4" in (out / "kubernetes-version.txt").read_text()
    pods = yaml.safe_load((out / "cluster-info" / "default" / "pods.yaml").read_text())
    assert pods["kind"] == "List"
    assert sorted(p["metadata"]["name"] for p in pods["items"]) == ["first", "second"]
    assert all("managedFields" not in p["metadata"] for p in pods["items"])
    events = yaml.safe_load((out / "cluster-info" / "default" / "events.yaml").read_text())["items"]
    assert {"Scheduled", "Started"} <= {e["reason"] for e in events}
    worker = (out / "nodes" / "ops-worker.txt").read_text()
    scheduled_on_worker = [p["metadata"]["name"] for p in pods["items"] if p["spec"]["nodeName"] == "ops-worker"]
    assert "Name:               ops-worker" in worker and "Allocated resources:" in worker
    assert all(f"  default      {name}" in worker for name in scheduled_on_worker)
    assert 'container "main" started' in (out / "cluster-info" / "default" / "logs" / "first" / "main.log").read_text()


def test_a_crash_is_reported_with_the_log_and_start_recovers(tmp_path):
    c = new_cluster(tmp_path, "crashy")
    try:
        c.phalanx("create", "cluster", "--name", "crashy", "--wait", "60s").check()
        pid = int((c.state_dir / "pid").read_text())
        os.kill(pid, signal.SIGKILL)
        log = c.state_dir / "control-plane.log"
        r = c.phalanx("get", "clusters")
        while "Crashed" not in r.out:  # the kill lands asynchronously; each round asks the CLI again
            r = c.phalanx("get", "clusters")
        assert r.returncode == 0
        assert 'WARNING: cluster "crashy" crashed' in r.stderr and f"see the control plane's log {log}" in r.stderr
        r = c.phalanx("export", "logs", "--name", "crashy", str(tmp_path / "logs")).check()
        assert "skipped: the cluster's control plane is not running (crashed)" in r.stderr
        r = c.phalanx("start", "cluster", "--name", "crashy").check()
        assert f"the control plane's log {log} tells why" in r.stderr
        assert table_row(c)[1] == "Running"
    finally:
        c.phalanx("delete", "cluster", "--name", "crashy")


def test_a_control_plane_that_cannot_start_names_its_log(tmp_path):
    c = new_cluster(tmp_path, "broken")
    try:
        c.phalanx("create", "cluster", "--name", "broken").check()
        c.phalanx("stop", "cluster", "--name", "broken").check()
        for name in ("state.db-wal", "state.db-shm"):
            (c.state_dir / name).unlink(missing_ok=True)
        (c.state_dir / "state.db").write_bytes(b"this is not a database" * 100)
        r = c.phalanx("start", "cluster", "--name", "broken", "--wait", "0")
        assert r.returncode == 1
        log = c.state_dir / "control-plane.log"
        assert r.stderr.count("ERROR: failed to start cluster: the control plane exited with code 1 before its "
                              f"API answered; see the control plane's log {log}; its last ") == 1, r.stderr
        assert "file is not a database" in r.stderr
        assert table_row(c)[1] == "Stopped"
    finally:
        c.phalanx("delete", "cluster", "--name", "broken")


def test_bad_input_gets_cli_errors_naming_the_cluster_file_and_field(tmp_path):
    c = new_cluster(tmp_path, "nothere")
    config = tmp_path / "bad.yaml"
    config.write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: boss\n")
    r = c.phalanx("create", "cluster", "--config", str(config))
    no_traceback(r)
    assert r.returncode == 1 and str(config) in r.stderr and "nodes[0].role" in r.stderr
    for args, message in (
            (("export", "logs", "--name", "nothere"), 'unknown cluster "nothere"'),
            (("start", "cluster", "--name", "nothere"), 'unknown cluster "nothere"'),
            (("get", "kubeconfig", "--name", "No_Such"), 'invalid cluster name "No_Such"'),
            (("create", "cluster", "--config", str(tmp_path / "missing.yaml")), str(tmp_path / "missing.yaml")),
            (("create", "cluster", "--config", str(tmp_path)), str(tmp_path)),
            (("get", "featuregates", "--config", str(tmp_path / "missing.yaml")), str(tmp_path / "missing.yaml"))):
        r = c.phalanx(*args)
        no_traceback(r)
        assert r.returncode == 1 and "ERROR: " in r.stderr and message in r.stderr, (args, r.stderr)
    r = c.phalanx("create", "cluster", "--wait", "soon")
    no_traceback(r)
    assert r.returncode == 2 and "Invalid value for '--wait'" in r.stderr
    assert json.loads(c.phalanx("get", "clusters", "-o", "json").check().out) == []
