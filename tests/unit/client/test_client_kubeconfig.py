"""Reading kubeconfigs for the HTTP client: contexts, token files, CA data, $KUBECONFIG."""

from __future__ import annotations

import base64

import pytest
import yaml

from phalanx.client.kubeconfig import KubeconfigError, load_kubeconfig


def kubeconfig(**users):
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "one",
        "clusters": [{"name": "c1", "cluster": {"server": "https://127.0.0.1:6443/",
                                                "certificate-authority-data": base64.b64encode(b"PEM").decode()}},
                     {"name": "c2", "cluster": {"server": "http://10.0.0.2:8080", "insecure-skip-tls-verify": True}}],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": "one", "context": {"cluster": "c1", "user": "u1"}},
                     {"name": "two", "context": {"cluster": "c2", "user": "u2"}}],
    }


def test_current_context_with_token_and_ca_data(tmp_path):
    p = tmp_path / "config"
    p.write_text(yaml.safe_dump(kubeconfig(u1={"token": "abc"}, u2={})))
    cfg = load_kubeconfig(p)
    assert (cfg.server, cfg.token, cfg.ca_data, cfg.context) == ("https://127.0.0.1:6443", "abc", b"PEM", "one")


def test_named_context_and_a_token_file_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "tok").write_text("from-file\n")
    p = tmp_path / "config"
    p.write_text(yaml.safe_dump(kubeconfig(u1={}, u2={"tokenFile": "tok"})))
    cfg = load_kubeconfig(p, context="two")
    assert (cfg.server, cfg.token, cfg.insecure_skip_tls_verify) == ("http://10.0.0.2:8080", "from-file", True)
    assert cfg.ssl_context() is None  # plain HTTP


def test_kubeconfig_env_var_names_the_file(tmp_path, monkeypatch):
    p = tmp_path / "config"
    p.write_text(yaml.safe_dump(kubeconfig(u1={"token": "env"}, u2={})))
    monkeypatch.setenv("KUBECONFIG", f"{p}:{tmp_path / 'other'}")
    assert load_kubeconfig().token == "env"


@pytest.mark.parametrize("context, message", [
    ("missing", 'context "missing" not found in kubeconfig'),
])
def test_errors(tmp_path, context, message):
    p = tmp_path / "config"
    p.write_text(yaml.safe_dump(kubeconfig(u1={}, u2={})))
    with pytest.raises(KubeconfigError) as e:
        load_kubeconfig(p, context=context)
    assert str(e.value) == message
    with pytest.raises(KubeconfigError):
        load_kubeconfig(tmp_path / "absent")


@pytest.mark.parametrize("content, message", [
    (b"[unclosed\n", "is not valid YAML (line 2, column 1): expected ',' or ']'"),
    (b"\xff\xfe not text", "cannot read kubeconfig"),
    (b"- a list\n", "is not a kubeconfig: expected a mapping, got list"),
])
def test_an_unreadable_kubeconfig_is_an_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "config"
    path.write_bytes(content)
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(path)
    assert str(path) in str(info.value) and message in str(info.value)
