"""kubeconfig merging: our entries in, theirs untouched, ours out again on delete."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from phalanx.cluster.kubeconfig import (KubeconfigError, context_name, kubeconfig_path, merge_cluster_entry,
                                        remove_cluster_entry, render, server_url, standalone_kubeconfig)

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KUBECTL = Path(sys.executable).parent / "kubectl"

FOREIGN = """\
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://prod.example.com
    insecure-skip-tls-verify: true
  name: prod
contexts:
- context:
    cluster: prod
    user: admin
    namespace: team-a
  name: prod
current-context: prod
preferences:
  colors: true
users:
- name: admin
  user:
    token: secret
extensions:
- name: something
  extension: {a: 1}
"""


def read(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def names(config: dict, section: str) -> list[str]:
    return [e["name"] for e in config.get(section) or []]


def test_new_file_gets_cluster_context_and_token_user(tmp_path):
    path = tmp_path / "kube" / "config"
    merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok")
    config = read(path)
    assert config["current-context"] == "phalanx-dev"
    assert config["clusters"] == [{"cluster": {"certificate-authority-data": base64.b64encode(CA).decode(),
                                               "server": "https://127.0.0.1:6443"}, "name": "phalanx-dev"}]
    assert config["contexts"] == [{"context": {"cluster": "phalanx-dev", "user": "phalanx-dev"}, "name": "phalanx-dev"}]
    assert config["users"] == [{"name": "phalanx-dev", "user": {"token": "tok"}}]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_merge_keeps_foreign_entries_and_keys(tmp_path):
    path = tmp_path / "config"
    path.write_text(FOREIGN)
    merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok")
    config = read(path)
    foreign = yaml.safe_load(FOREIGN)
    assert names(config, "clusters") == ["prod", "phalanx-dev"]
    assert names(config, "users") == ["admin", "phalanx-dev"]
    assert config["clusters"][0] == foreign["clusters"][0]
    assert config["contexts"][0] == foreign["contexts"][0]
    assert config["users"][0] == foreign["users"][0]
    assert config["preferences"] == {"colors": True} and config["extensions"] == foreign["extensions"]
    assert config["current-context"] == "phalanx-dev"


def test_merging_again_replaces_our_entries_in_place(tmp_path):
    path = tmp_path / "config"
    path.write_text(FOREIGN)
    merge_cluster_entry(path, "dev", "https://127.0.0.1:1111", CA, "old")
    merge_cluster_entry(path, "other", "https://127.0.0.1:2222", CA, "x")
    merge_cluster_entry(path, "dev", "https://127.0.0.1:3333", CA, "new", make_current=False)
    config = read(path)
    assert names(config, "clusters") == ["prod", "phalanx-dev", "phalanx-other"]
    dev = next(c for c in config["clusters"] if c["name"] == "phalanx-dev")
    assert dev["cluster"]["server"] == "https://127.0.0.1:3333"
    assert next(u for u in config["users"] if u["name"] == "phalanx-dev")["user"] == {"token": "new"}
    assert config["current-context"] == "phalanx-other"


@pytest.mark.parametrize("current, expected", [("phalanx-dev", ""), ("prod", "prod")])
def test_remove_drops_only_ours_and_resets_current_context_if_it_was_ours(tmp_path, current, expected):
    path = tmp_path / "config"
    path.write_text(FOREIGN)
    merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok", make_current=(current == "phalanx-dev"))
    assert remove_cluster_entry(path, "dev")
    config = read(path)
    assert names(config, "clusters") == ["prod"] and names(config, "contexts") == ["prod"]
    assert names(config, "users") == ["admin"]
    assert config["current-context"] == expected
    assert not remove_cluster_entry(path, "dev")  # nothing left to remove


def test_remove_from_missing_file_is_a_no_op(tmp_path):
    assert not remove_cluster_entry(tmp_path / "absent", "dev")
    assert not (tmp_path / "absent").exists()


def test_invalid_kubeconfig_is_not_clobbered(tmp_path):
    path = tmp_path / "config"
    path.write_text("clusters: [\n")
    with pytest.raises(KubeconfigError, match="not valid YAML"):
        merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok")
    assert path.read_text() == "clusters: [\n"
    assert not (tmp_path / "config.lock").exists()


def test_symlinked_kubeconfig_stays_a_symlink(tmp_path):
    real = tmp_path / "real-config"
    real.write_text(FOREIGN)
    link = tmp_path / "config"
    link.symlink_to(real)
    merge_cluster_entry(link, "dev", "https://127.0.0.1:6443", CA, "tok")
    assert link.is_symlink() and "phalanx-dev" in names(read(real), "contexts")


@pytest.mark.parametrize("before", [0o644, 0o640, 0o600])
def test_a_file_holding_the_token_is_left_0600(tmp_path, before):
    path = tmp_path / "config"
    path.write_text(FOREIGN)
    os.chmod(path, before)
    merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_removing_an_entry_keeps_the_file_mode(tmp_path):
    path = tmp_path / "config"
    merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok")
    os.chmod(path, 0o640)
    assert remove_cluster_entry(path, "dev")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_kubeconfig_path_precedence(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(["", str(first), str(second)]))
    assert kubeconfig_path(None) == first
    assert kubeconfig_path(str(second)) == second
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kubeconfig_path(None) == tmp_path / ".kube" / "config"


def test_server_url_brackets_ipv6():
    assert server_url("127.0.0.1", 6443) == "https://127.0.0.1:6443"
    assert server_url("::1", 6443) == "https://[::1]:6443"


def test_standalone_kubeconfig_names_everything_phalanx_name():
    config = yaml.safe_load(render(standalone_kubeconfig("dev", "https://127.0.0.1:1", CA, "tok")))
    assert context_name("dev") == "phalanx-dev" == config["current-context"]
    assert names(config, "clusters") == names(config, "contexts") == names(config, "users") == ["phalanx-dev"]


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl is not installed in the venv")
def test_real_kubectl_reads_the_merged_file(tmp_path):
    path = tmp_path / "config"
    path.write_text(FOREIGN)
    merge_cluster_entry(path, "dev", "https://127.0.0.1:6443", CA, "tok")
    out = subprocess.run([str(KUBECTL), "config", "get-contexts", "-o", "name", "--kubeconfig", str(path)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert sorted(out) == ["phalanx-dev", "prod"]
    current = subprocess.run([str(KUBECTL), "config", "current-context", "--kubeconfig", str(path)],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert current == "phalanx-dev"
