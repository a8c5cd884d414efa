"""Cluster lifecycle with a stand-in control plane (the `env` fixture, conftest.py): create, two
side by side, stop/start, delete, failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from phalanx.cli.main import cli
from phalanx.cluster import lifecycle
from phalanx.cluster.config import load_cluster_config
from phalanx.cluster.lifecycle import ClusterError

KUBECTL = Path(sys.executable).parent / "kubectl"


def spec(name: str = "phalanx", config: str | None = None, tmp_path: Path | None = None):
    if config is None:
        return load_cluster_config(None, name)
    path = tmp_path / f"{name}.yaml"
    path.write_text(config)
    return load_cluster_config(str(path), name)


def kubeconfig(tmp_path) -> dict:
    return yaml.safe_load((tmp_path / "kubeconfig").read_text())


def ready(name: str) -> bool:
    """What a client sees: /readyz on the port in the port file, with the cluster's CA and token."""
    paths = lifecycle.ClusterPaths.for_name(name)
    port = int(paths.port_file.read_text())
    return lifecycle.probe_ready("127.0.0.1", port, paths.pki.ca_cert_file, paths.pki.token)[0]


# --- create -------------------------------------------------------------------------------------


def test_create_writes_the_state_dir_starts_the_control_plane_and_the_kubeconfig(env, tmp_path):
    lines: list[str] = []
    result = lifecycle.create_cluster(spec("dev"), progress=lines.append)
    root = tmp_path / "home" / "clusters" / "dev"
    for name in ("cluster.json", "pki/ca.crt", "pki/server.key", "token", "control-plane.log", "pid", "port"):
        assert (root / name).exists(), name
    port = int((root / "port").read_text())
    assert result.server == f"https://127.0.0.1:{port}"
    assert int((root / "pid").read_text()) == result.pid == lifecycle.running_pid(lifecycle.ClusterPaths(root))
    assert ready("dev")
    assert lines[:4] == [" ✓ Preparing nodes 📦 (1 control-plane, 1 worker, simulated)",
                         " ✓ Writing configuration 📜", " ✓ Starting control-plane 🕹️",
                         " ✓ Waiting ≤ 1m0s for control-plane = Ready ⏳"]
    config = kubeconfig(tmp_path)
    assert config["current-context"] == "phalanx-dev"
    assert config["clusters"][0]["cluster"]["server"] == result.server
    assert config["users"][0]["user"]["token"] == (root / "token").read_text().strip()
    assert lifecycle.list_clusters() == ["dev"]
    assert "fake control plane for dev" in (root / "control-plane.log").read_text()


def test_serve_settings_follow_the_contract(env, tmp_path):
    lifecycle.create_cluster(spec("dev"))
    root = tmp_path / "home" / "clusters" / "dev"
    s = lifecycle.load_serve_settings(root)
    assert s.spec.name == "dev" and s.host == "127.0.0.1"
    assert s.port == s.spec.port == int((root / "port").read_text())  # cluster.json carries the chosen port
    assert (s.cert_file, s.key_file, s.ca_file) == (root / "pki/server.crt", root / "pki/server.key",
                                                    root / "pki/ca.crt")
    assert json.loads((root / "lifecycle.json").read_text()) == {"requestedPort": 0,
                                                                 "kubeconfigs": [str(tmp_path / "kubeconfig")]}
    assert s.state_db == root / "state.db" and s.token == (root / "token").read_text().strip()
    assert "serve(state_dir" in lifecycle.SERVE_CONTRACT


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl is not installed in the venv")
def test_real_kubectl_reaches_the_cluster_through_the_written_kubeconfig(env, tmp_path):
    lifecycle.create_cluster(spec("dev"))
    out = subprocess.run([str(KUBECTL), "--kubeconfig", str(tmp_path / "kubeconfig"), "--context", "phalanx-dev",
                          "get", "--raw", "/readyz"], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr


def test_creating_an_existing_cluster_fails_and_leaves_it_alone(env):
    first = lifecycle.create_cluster(spec("dev"))
    with pytest.raises(ClusterError, match='a cluster with the name "dev" already exists'):
        lifecycle.create_cluster(spec("dev"))
    assert lifecycle.running_pid(lifecycle.ClusterPaths.for_name("dev")) == first.pid and ready("dev")


def test_two_clusters_run_side_by_side_on_different_ports(env, tmp_path):
    a = lifecycle.create_cluster(spec("a"))
    b = lifecycle.create_cluster(spec("b"))
    assert a.server != b.server and ready("a") and ready("b")
    assert lifecycle.list_clusters() == ["a", "b"]
    config = kubeconfig(tmp_path)
    assert [c["name"] for c in config["contexts"]] == ["phalanx-a", "phalanx-b"]
    assert config["current-context"] == "phalanx-b"
    lifecycle.delete_cluster("a")
    assert lifecycle.list_clusters() == ["b"] and ready("b")
    assert [c["name"] for c in kubeconfig(tmp_path)["contexts"]] == ["phalanx-b"]


def test_configured_port_is_used(env, tmp_path):
    port = lifecycle._free_port("127.0.0.1", set())
    result = lifecycle.create_cluster(spec("fixed", f"kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"
                                                    f"networking:\n  apiServerPort: {port}\n", tmp_path))
    assert result.server == f"https://127.0.0.1:{port}"
    with pytest.raises(ClusterError, match=f"port {port} on 127.0.0.1 is already in use"):
        lifecycle.create_cluster(spec("clash", f"apiVersion: phalanx.dev/v1alpha1\nkind: Cluster\nport: {port}\n",
                                      tmp_path))
    assert lifecycle.list_clusters() == ["fixed"]


def test_port_reported_by_serve_is_the_one_clients_get(env, tmp_path):
    env["value"] = "ownport"
    result = lifecycle.create_cluster(spec("dev"))
    port = int((tmp_path / "home" / "clusters" / "dev" / "port").read_text())
    assert result.server == f"https://127.0.0.1:{port}" == kubeconfig(tmp_path)["clusters"][0]["cluster"]["server"]
    assert ready("dev")


# --- failures -------------------------------------------------------------------------------------


def test_control_plane_that_exits_fails_create_with_its_log_and_cleans_up(env, tmp_path):
    env["value"] = "crash"
    with pytest.raises(ClusterError) as info:
        lifecycle.create_cluster(spec("dev"), kubeconfig=tmp_path / "kubeconfig")
    message = str(info.value)
    assert "the control plane exited with code 3 before its API answered" in message
    assert "fake control plane: cannot open the store" in message
    assert lifecycle.list_clusters() == [] and not (tmp_path / "home" / "clusters" / "dev").exists()
    assert not (tmp_path / "kubeconfig").exists()
    # the state dir is gone, but the log the message names is kept
    kept = Path(message.split("see the control plane's log ", 1)[1].split(";", 1)[0])
    try:
        assert "cannot open the store" in kept.read_text() and "`--retain` keeps the state dir" in message
    finally:
        kept.unlink()


def test_retain_keeps_the_state_of_a_failed_create(env, tmp_path):
    env["value"] = "crash"
    with pytest.raises(ClusterError, match="--retain"):
        lifecycle.create_cluster(spec("dev"), retain=True)
    root = tmp_path / "home" / "clusters" / "dev"
    assert "cannot open the store" in (root / "control-plane.log").read_text()
    assert lifecycle.running_pid(lifecycle.ClusterPaths(root)) is None


def test_control_plane_that_never_gets_ready_times_out_and_is_stopped(env):
    env["value"] = "unready"
    with pytest.raises(ClusterError) as info:
        # Long enough for the fake control plane to start and answer /readyz on a loaded machine.
        lifecycle.create_cluster(spec("dev"), wait_seconds=3)
    assert "not ready after 3s" in str(info.value)
    assert "readyz check failed" in str(info.value)
    assert lifecycle.list_clusters() == []


def test_wait_zero_returns_once_the_api_answers_without_waiting_for_readiness(env):
    env["value"] = "unready"
    result = lifecycle.create_cluster(spec("dev"), wait_seconds=0)
    assert result.ready_after is None and lifecycle.cluster_status("dev") == "Running"
    paths = lifecycle.ClusterPaths.for_name("dev")
    status, _ = lifecycle.api_get("127.0.0.1", int(paths.port_file.read_text()), paths.pki.ca_cert_file,
                                  paths.pki.token, "/readyz")
    assert status == 500  # answering, though not ready


def test_wait_zero_fails_naming_the_log_when_the_api_never_answers(env, monkeypatch, tmp_path):
    env["value"] = "mute"
    monkeypatch.setattr(lifecycle, "API_ANSWER_SECONDS", 1.0)
    with pytest.raises(ClusterError) as info:
        lifecycle.create_cluster(spec("dev"), wait_seconds=0, retain=True)
    log = tmp_path / "home" / "clusters" / "dev" / "control-plane.log"
    assert "the control plane did not answer after 1s (last /livez answer: " in str(info.value)
    assert f"see the control plane's log {log}; its last " in str(info.value)
    assert lifecycle.cluster_status("dev") == "Stopped"


# --- stop / start / delete ------------------------------------------------------------------------


def test_stop_keeps_state_and_start_comes_back_on_the_same_port(env, tmp_path):
    created = lifecycle.create_cluster(spec("dev"))
    root = tmp_path / "home" / "clusters" / "dev"
    assert lifecycle.stop_cluster("dev")
    assert lifecycle.cluster_status("dev") == "Stopped" and not (root / "pid").exists()
    assert (root / "cluster.json").exists() and (root / "token").exists()
    assert not lifecycle.stop_cluster("dev")  # already stopped
    started = lifecycle.start_cluster("dev")
    assert started.server == created.server and started.pid != created.pid and ready("dev")
    again = lifecycle.start_cluster("dev")
    assert again.pid == started.pid and again.notes == [f'Cluster "dev" is already running (pid {started.pid}).']
    assert "starting" in (root / "control-plane.log").read_text().split("--- ", 2)[2]  # log appended


def test_start_moves_to_a_new_port_when_the_old_one_is_taken(env, tmp_path):
    import socket
    created = lifecycle.create_cluster(spec("dev"))
    lifecycle.stop_cluster("dev")
    old_port = int(created.server.rsplit(":", 1)[1])
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the old port may be in TIME_WAIT
        squatter.bind(("127.0.0.1", old_port))
        squatter.listen()
        started = lifecycle.start_cluster("dev")
    assert started.server != created.server and started.notes and "moved to port" in started.notes[0]
    assert kubeconfig(tmp_path)["clusters"][0]["cluster"]["server"] == started.server
    assert ready("dev")


def test_start_fails_when_the_configured_port_is_taken(env, tmp_path):
    import socket
    port = lifecycle._free_port("127.0.0.1", set())
    lifecycle.create_cluster(spec("fixed", f"apiVersion: phalanx.dev/v1alpha1\nkind: Cluster\nport: {port}\n", tmp_path))
    lifecycle.stop_cluster("fixed")
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        with pytest.raises(ClusterError, match=f"port {port} on 127.0.0.1 is already in use"):
            lifecycle.start_cluster("fixed")
    assert lifecycle.cluster_status("fixed") == "Stopped"


def test_stale_pid_file_does_not_count_as_running(env, tmp_path):
    lifecycle.create_cluster(spec("dev"))
    lifecycle.stop_cluster("dev")
    (tmp_path / "home" / "clusters" / "dev" / "pid").write_text(f"{os.getpid()}\n")  # alive, but not ours
    assert lifecycle.cluster_status("dev") == "Stopped"


def test_delete_stops_removes_state_and_kubeconfig_entries(env, tmp_path):
    foreign = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "prod", "cluster": {"server": "https://x"}}],
               "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "u"}}],
               "users": [{"name": "u", "user": {"token": "t"}}], "current-context": "prod"}
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(foreign))
    created = lifecycle.create_cluster(spec("dev"))
    assert lifecycle.delete_cluster("dev")
    assert not (tmp_path / "home" / "clusters" / "dev").exists()
    config = kubeconfig(tmp_path)
    assert [c["name"] for c in config["contexts"]] == ["prod"] and config["current-context"] == ""
    assert not lifecycle._alive(created.pid)
    assert not lifecycle.delete_cluster("dev")  # a missing cluster is not an error


def test_unknown_cluster_errors(env):
    for operation in (lifecycle.stop_cluster, lifecycle.start_cluster, lifecycle.export_kubeconfig):
        with pytest.raises(ClusterError, match='unknown cluster "ghost"'):
            operation("ghost")


# --- the CLI --------------------------------------------------------------------------------------


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# The tutorial's kind.yaml, byte for byte (examples/dra-integration/, as seed/dra-integration.md has it).
TUTORIAL = (Path(__file__).resolve().parents[3] / "examples" / "dra-integration" / "kind.yaml").read_text()


def test_cli_create_with_the_tutorial_config_prints_kind_like_lines(env, tmp_path):
    (tmp_path / "kind.yaml").write_text(TUTORIAL)
    r = run("create", "cluster", "--config", str(tmp_path / "kind.yaml"))
    assert r.exit_code == 0, r.output
    err = r.stderr
    assert err.startswith('Creating cluster "phalanx" ...\n')
    assert err.count("nodes[0].kubeadmConfigPatches") == 1
    assert " ✓ Preparing nodes 📦 (1 control-plane, 4 workers, simulated)" in err
    assert " ✓ Starting control-plane 🕹️" in err
    assert 'Set kubectl context to "phalanx-phalanx"' in err
    assert "You can now use your cluster with:\n\nkubectl cluster-info --context phalanx-phalanx\n" in err
    assert r.stdout == ""
    assert kubeconfig(tmp_path)["current-context"] == "phalanx-phalanx"


def test_cli_get_clusters_and_delete(env):
    r = run("get", "clusters")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "No phalanx clusters found.\n")
    assert run("create", "cluster", "--name", "one", "-q").exit_code == 0
    assert run("create", "cluster", "--name", "two", "-q", "--image", "kindest/node:v1.36.4").exit_code == 0
    rows = [line.split() for line in run("get", "clusters").stdout.splitlines()]
    assert [row[:4] for row in rows] == [["NAME", "STATUS", "VERSION", "NODES"], ["one", "Running", "v1.37.1", "2"],
                                         ["two", "Running", "v1.36.4", "2"]]
    r = run("delete", "cluster", "--name", "one")
    assert (r.exit_code, r.stderr) == (0, 'Deleting cluster "one" ...\n')
    r = run("delete", "cluster", "--name", "one")  # again: fine, as with kind
    assert (r.exit_code, r.stderr) == (0, 'Deleting cluster "one" ...\n')
    assert run("get", "clusters", "-o", "name").stdout == "two\n"


def test_cli_delete_all_clusters(env):
    assert run("create", "cluster", "--name", "one", "-q").exit_code == 0
    assert run("create", "cluster", "--name", "two", "-q").exit_code == 0
    r = run("delete", "clusters", "--all")
    assert r.exit_code == 0 and r.stderr.endswith('Deleted clusters: ["one" "two"]\n')
    assert lifecycle.list_clusters() == []
    assert run("delete", "clusters").exit_code == 2  # neither names nor --all


def test_cli_name_defaults_to_the_environment(env, monkeypatch):
    monkeypatch.setenv("PHALANX_CLUSTER_NAME", "envname")
    assert run("create", "cluster", "-q").exit_code == 0
    assert run("get", "clusters").stdout.splitlines()[1].split()[:3] == ["envname", "Running", "v1.37.1"]
    assert run("stop", "cluster").stderr == 'Stopped cluster "envname"\n'
    assert run("start", "cluster").exit_code == 0


def test_cli_create_existing_cluster_fails_like_kind(env):
    assert run("create", "cluster", "-q").exit_code == 0
    r = run("create", "cluster")
    assert r.exit_code == 1
    assert 'ERROR: failed to create cluster: a cluster with the name "phalanx" already exists' in r.stderr


def test_cli_config_error_names_file_and_field(env, tmp_path):
    bad = tmp_path / "kind.yaml"
    bad.write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n- rolez: worker\n")
    r = run("create", "cluster", "--config", str(bad))
    assert r.exit_code == 1
    assert f"{bad}: nodes[1].rolez: unknown field; allowed: role, image, labels" in r.stderr
    assert lifecycle.list_clusters() == []


def test_cli_export_and_get_kubeconfig(env, tmp_path):
    assert run("create", "cluster", "--name", "dev", "-q").exit_code == 0
    other = tmp_path / "other-kubeconfig"
    r = run("export", "kubeconfig", "--name", "dev", "--kubeconfig", str(other))
    assert (r.exit_code, r.stderr) == (0, 'Set kubectl context to "phalanx-dev"\n')
    assert yaml.safe_load(other.read_text())["current-context"] == "phalanx-dev"
    printed = yaml.safe_load(run("get", "kubeconfig", "--name", "dev").stdout)
    assert printed["clusters"] == yaml.safe_load(other.read_text())["clusters"]
    # delete cleans every kubeconfig the cluster was written to
    run("delete", "cluster", "--name", "dev")
    assert yaml.safe_load(other.read_text())["contexts"] == []


def test_cli_featuregates_table_marks_non_default_values(env, tmp_path):
    (tmp_path / "kind.yaml").write_text(TUTORIAL.replace("  GangScheduling: true\n", "  DRADeviceTaints: false\n"))
    assert run("create", "cluster", "--config", str(tmp_path / "kind.yaml"), "-q").exit_code == 0
    lines = run("get", "featuregates").stdout.splitlines()
    table = {line.split()[0]: line.split()[1:] for line in lines[1:-2]}
    assert lines[0].split() == ["NAME", "STAGE", "ENABLED"]
    assert table["GangScheduling"] == ["ALPHA", "true*"]
    assert table["DRADeviceTaints"] == ["BETA", "false*"]
    assert table["DynamicResourceAllocation"] == ["GA", "true"]
    assert table["PhalanxPreferredTopology"] == ["ALPHA", "(phalanx)", "true"]
    assert table["PhalanxTopologyAwarePreemption"] == ["ALPHA", "(phalanx)", "false"]
    assert lines[-2] == "* differs from the upstream Kubernetes 1.36 default"
    assert lines[-1] == "(phalanx) a phalanx extension beyond Kubernetes 1.36, not an upstream gate"


def test_cli_bad_wait_is_a_usage_error(env):
    r = run("create", "cluster", "--wait", "soon")
    assert r.exit_code == 2 and 'invalid duration "soon"' in r.stderr


def test_cli_version():
    r = run("version")
    assert r.exit_code == 0 and r.stdout.startswith("phalanx v") and "v1.36" in r.stdout


def test_python_dash_m_phalanx_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "phalanx", "version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("phalanx v")


@pytest.mark.parametrize("text, seconds", [
    ("60s", 60), ("1m30s", 90), ("5m", 300), ("500ms", 0.5), ("0", 0), ("2h", 7200), ("45", 45), ("1.5s", 1.5),
])
def test_parse_duration(text, seconds):
    assert lifecycle.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["-5s", "5 minutes", "", "1x"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError, match="invalid duration"):
        lifecycle.parse_duration(text)


def test_cluster_json_round_trips_the_spec(env, tmp_path):
    s = spec("dev", TUTORIAL, tmp_path)
    created = lifecycle.create_cluster(s)
    saved = json.loads((tmp_path / "home" / "clusters" / "dev" / "cluster.json").read_text())
    assert saved["feature_gates"] == s.feature_gates and len(saved["nodes"]) == 5
    assert s.port == 0  # the caller's spec is not changed
    s.port = int(created.server.rsplit(":", 1)[1])
    assert lifecycle.load_cluster_spec("dev") == s
