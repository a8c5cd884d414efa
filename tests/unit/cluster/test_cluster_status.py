"""`phalanx get clusters` and `phalanx export logs` with the stand-in control plane (conftest.py):
status, node counts at rest, crash and not-answering warnings naming the log, export of a stopped
cluster, node descriptions, and bad input as CLI errors. The dump of a running cluster is
exercised against a real one in tests/e2e/test_cluster_ops.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import pytest
from click.testing import CliRunner

from phalanx.cli.main import cli
from phalanx.cluster import lifecycle
from phalanx.cluster.config import load_cluster_config
from phalanx.cluster.nodedescription import describe_node
from phalanx.cluster.status import describe_cluster


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def create(name: str) -> lifecycle.StartResult:
    return lifecycle.create_cluster(load_cluster_config(None, name))


def paths(name: str) -> lifecycle.ClusterPaths:
    return lifecycle.ClusterPaths.for_name(name)


def store_nodes(name: str, count: int) -> None:
    """A state.db holding `count` nodes, as a control plane leaves it (table of store/sqlite.py)."""
    db = sqlite3.connect(paths(name).state_db)
    db.execute("CREATE TABLE objects (key TEXT, namespace TEXT, name TEXT, rv INTEGER, data BLOB)")
    db.executemany("INSERT INTO objects VALUES ('core/nodes', '', ?, 1, '{}')", [(f"n{i}",) for i in range(count)])
    db.execute("INSERT INTO objects VALUES ('core/pods', 'default', 'p', 2, '{}')")
    db.commit()
    db.close()


# --- get clusters -----------------------------------------------------------------------------------


def test_running_cluster_shows_status_version_nodes_and_server(env):
    created = create("dev")
    info = describe_cluster("dev")
    assert (info.status, info.kubernetes_version, info.server, info.pid) == \
        ("Running", "v1.37.1", created.server, created.pid)
    # the stand-in serves no /api/v1/nodes and keeps no state.db: the config's two nodes
    assert (info.nodes, info.nodes_from) == (2, "config")
    r = run("get", "clusters", "-o", "json")
    [entry] = json.loads(r.stdout)
    assert entry["status"] == "Running" and entry["running"] and entry["ready"]
    assert entry["controlPlaneLog"] == str(paths("dev").log_file) and "problem" not in entry


def test_not_ready_cluster(env):
    env["value"] = "unready"
    lifecycle.create_cluster(load_cluster_config(None, "dev"), wait_seconds=0)
    assert describe_cluster("dev").status == "NotReady"


def test_stopped_cluster_counts_nodes_from_its_stored_state_without_starting(env):
    create("dev")
    lifecycle.stop_cluster("dev")
    store_nodes("dev", 5)
    r = run("get", "clusters")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.splitlines()[1].split()[:4] == ["dev", "Stopped", "v1.37.1", "5"]
    assert describe_cluster("dev").nodes_from == "state" and lifecycle.cluster_status("dev") == "Stopped"


def test_crashed_cluster_is_reported_with_its_log(env):
    created = create("dev")
    os.kill(created.pid, signal.SIGKILL)
    os.waitpid(created.pid, 0)  # gone (this test process started it)
    r = run("get", "clusters")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[1].split()[:2] == ["dev", "Crashed"]
    assert "WARNING: cluster \"dev\" crashed" in r.stderr
    assert f"see the control plane's log {paths('dev').log_file} (its last line: " in r.stderr
    assert "`phalanx start cluster --name dev` starts it again" in r.stderr
    started = lifecycle.start_cluster("dev")
    assert any(str(paths("dev").log_file) in note for note in started.notes)
    assert describe_cluster("dev").status == "Running"


def test_cluster_whose_api_does_not_answer_is_reported_with_its_log(env):
    created = create("dev")
    os.kill(created.pid, signal.SIGSTOP)
    try:
        info = describe_cluster("dev")
        again = lifecycle.start_cluster("dev")
    finally:
        os.kill(created.pid, signal.SIGCONT)
    assert info.status == "NotAnswering"
    assert "does not answer" in info.problem and str(paths("dev").log_file) in info.problem
    assert again.notes[0] == f'Cluster "dev" is already running (pid {created.pid}).'
    assert "does not answer" in again.notes[1] and f"see the control plane's log {paths('dev').log_file}" in again.notes[1]


def test_unreadable_cluster_config_is_a_warning_naming_the_file(env):
    create("dev")
    lifecycle.stop_cluster("dev")
    paths("dev").spec_file.write_text("{not json")
    r = run("get", "clusters")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[1].split()[:3] == ["dev", "Stopped", "<unknown>"]
    assert f"cannot read the config of cluster \"dev\" from {paths('dev').spec_file}" in r.stderr
    r = run("start", "cluster", "--name", "dev")
    assert r.exit_code == 1 and "\nERROR: failed to start cluster: cannot read the config of cluster" in r.stderr


def test_bad_output_format_and_unknown_cluster_are_cli_errors(env):
    r = CliRunner().invoke(cli, ["get", "clusters", "-o", "wide"])
    assert r.exit_code == 2 and "'wide' is not one of 'table', 'json', 'name'" in r.stderr
    r = run("export", "logs", "--name", "ghost")
    assert r.exit_code == 1 and 'unknown cluster "ghost"' in r.stderr
    r = run("export", "logs", "--name", "Bad_Name")
    assert r.exit_code == 1 and 'invalid cluster name "Bad_Name"' in r.stderr


# --- export logs of a cluster that is not running ------------------------------------------------------


def test_export_logs_of_a_stopped_cluster_copies_what_is_on_disk(env, tmp_path):
    create("dev")
    lifecycle.stop_cluster("dev")
    store_nodes("dev", 3)
    out = tmp_path / "logs"
    r = run("export", "logs", "--name", "dev", str(out))
    assert r.exit_code == 0 and r.stdout == f"{out}\n"
    assert "the dump of objects, node descriptions and pod logs was skipped: the cluster is stopped" in r.stderr.lower()
    for name in ("cluster.json", "control-plane.log", "phalanx-version.txt", "kubernetes-version.txt", "status.json",
                 "export.txt", "state.db"):
        assert (out / name).stat().st_size > 0, name
    assert "fake control plane for dev" in (out / "control-plane.log").read_text()
    assert (out / "kubernetes-version.txt").read_text() == "v1.37.1\n"
    assert json.loads((out / "status.json").read_text())["status"] == "Stopped"
    copy = sqlite3.connect(out / "state.db")
    assert copy.execute("SELECT COUNT(*) FROM objects WHERE key='core/nodes'").fetchone() == (3,)
    copy.close()
    token = paths("dev").pki.token
    for path in out.rglob("*"):  # no credentials leave the state dir
        assert not path.name.endswith(".key")
        if path.is_file() and path.name != "state.db":
            assert token not in path.read_text()
    assert not (out / "cluster-info").exists()


def test_export_logs_defaults_to_a_new_temporary_directory(env):
    create("dev")
    lifecycle.stop_cluster("dev")
    r = run("export", "logs", "--name", "dev")
    out = r.stdout.strip()
    assert r.exit_code == 0 and os.path.basename(out).startswith("phalanx-logs-dev-")
    assert os.path.isfile(os.path.join(out, "control-plane.log"))


def test_export_logs_into_a_file_is_an_error_naming_it(env, tmp_path):
    create("dev")
    target = tmp_path / "taken"
    target.write_text("x")
    r = run("export", "logs", "--name", "dev", str(target))
    assert r.exit_code == 1
    assert r.stderr.endswith(f"ERROR: failed to export logs: cannot export logs to {target}: it exists and is not "
                             "a directory\n")


# --- node descriptions ------------------------------------------------------------------------------


def test_node_description_has_kubectls_sections_pods_allocations_devices_and_events():
    node = {"metadata": {"name": "w1", "labels": {"node-role.kubernetes.io/worker": "", "zone": "a"},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi"}, "allocatable": {"cpu": "4", "memory": "8Gi"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}

    def pod(name, node_name, cpu, phase="Running"):
        return {"metadata": {"namespace": "team", "name": name},
                "spec": {"nodeName": node_name, "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu}}}]},
                "status": {"phase": phase}}
    pods = [pod("a", "w1", "500m"), pod("b", "w1", "1"), pod("done", "w1", "2", "Succeeded"), pod("other", "w2", "3")]
    events = [{"involvedObject": {"kind": "Node", "name": "w1"}, "type": "Warning", "reason": "NodeNotReady",
               "message": "Node w1 status is now: NodeNotReady", "lastTimestamp": "2026-01-01T00:01:00Z",
               "source": {"component": "node-controller"}},
              {"involvedObject": {"kind": "Pod", "name": "w1"}, "reason": "Scheduled"}]
    slices = [{"metadata": {"name": "s1"}, "spec": {"nodeName": "w1", "driver": "gpu.example.com",
                                                    "pool": {"name": "w1"}, "devices": [{"name": "gpu-0"}]}}]
    text = describe_node(node, pods, events, slices)
    assert "Name:               w1\nRoles:              worker\n" in text
    assert "Taints:             gpu=true:NoSchedule\n" in text
    assert "Non-terminated Pods:  (2 in total)" in text and "done" not in text and "other" not in text
    assert "  cpu       1500m (37%)  1500m (37%)" in text
    assert "  memory    2Gi (25%)    0 (0%)" in text
    assert "  s1: driver gpu.example.com, pool w1, 1 devices (gpu-0)" in text
    assert "Warning  NodeNotReady  2026-01-01T00:01:00Z  node-controller  Node w1 status is now: NodeNotReady" in text
    assert "Scheduled" not in text


# --- no tracebacks ------------------------------------------------------------------------------------


def test_a_config_that_is_not_utf8_is_an_error_naming_the_file(env, tmp_path):
    config = tmp_path / "kind.yaml"
    config.write_bytes(b"\xff\xfekind: Cluster\n")
    r = run("create", "cluster", "--config", str(config))
    assert r.exit_code == 1 and f"{config}: cannot read config: not UTF-8 text (byte 0: b'\\xff')" in r.stderr


def test_an_unforeseen_error_is_one_error_line_not_a_traceback(env, monkeypatch, capsys):
    from phalanx.cli import clusters
    from phalanx.cli.main import main

    def broken() -> list:
        raise RuntimeError("the disk said no")
    monkeypatch.setattr(clusters, "describe_clusters", broken)
    monkeypatch.delenv("PHALANX_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["get", "clusters"])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("ERROR: RuntimeError: the disk said no\n") and "Traceback" not in err
