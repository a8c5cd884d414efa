"""`phalanx dashboard` on the command line: its options, and the errors a user sees before any
server starts."""

from __future__ import annotations

from click.testing import CliRunner

from phalanx.cli.main import cli


def test_help_names_the_options():
    out = CliRunner().invoke(cli, ["dashboard", "--help"]).output
    for option in ("--name", "--kubeconfig", "--context", "--port"):
        assert option in out


def test_name_and_context_together_are_refused():
    result = CliRunner().invoke(cli, ["dashboard", "--name", "a", "--context", "b"])
    assert result.exit_code == 2 and "give one" in result.output


def test_a_missing_kubeconfig_is_an_error_not_a_server(tmp_path):
    result = CliRunner().invoke(cli, ["dashboard", "--kubeconfig", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "cannot read the kubeconfig" in result.output and "not found" in result.output


def test_a_cluster_name_missing_from_the_kubeconfig_is_an_error(tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    result = CliRunner().invoke(cli, ["dashboard", "--name", "ghost", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 1 and 'context "phalanx-ghost" not found' in result.output
