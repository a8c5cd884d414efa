"""RBAC as a user sees it: a kubeconfig from `phalanx create kubeconfig` bound to `view` in one
namespace, impersonation, `kubectl auth can-i|whoami` and `kubectl create token`."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from .conftest import KUBECTL, Cluster, Result


class User:
    """kubectl with another kubeconfig (and its own discovery cache) on the same cluster."""

    def __init__(self, cluster: Cluster, kubeconfig: Path):
        self.cluster = cluster
        self.kubeconfig = kubeconfig
        self.cache_dir = kubeconfig.parent / f"kcache-{uuid.uuid4().hex[:6]}"

    def kubectl(self, *args: str) -> Result:
        cmd = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.cluster.env, timeout=60)
        return Result(cmd, p.returncode, p.stdout, p.stderr)


@pytest.fixture
def alice(cluster: Cluster, ns: str, tmp_path: Path) -> User:
    """User "alice" (group "dev"), bound to the `view` ClusterRole in `ns` only."""
    user = "alice-" + uuid.uuid4().hex[:6]
    r = cluster.phalanx("create", "kubeconfig", "--name", cluster.name, "--user", user, "--group", "dev",
                        "--namespace", ns).check()
    path = tmp_path / "alice.kubeconfig"
    path.write_text(r.out)
    cluster.kubectl("create", "rolebinding", "alice-view", "--clusterrole", "view", "--user", user, "-n", ns).check()
    return User(cluster, path)


def table_lines(text: str) -> set[str]:
    """A kubectl table's lines with runs of blanks collapsed to one."""
    return {" ".join(line.split()) for line in text.splitlines()}


def name_of(u: User) -> str:
    return yaml.safe_load(u.kubeconfig.read_text())["contexts"][0]["name"].split("@")[0]


def test_view_binding_allows_reading_its_namespace_only(cluster: Cluster, ns: str, alice: User):
    user = name_of(alice)
    cluster.kubectl("run", "web", "--image", "busybox:1", "-n", ns).check()
    assert "web" in alice.kubectl("get", "pods").check().out

    r = alice.kubectl("run", "mine", "--image", "busybox:1")
    assert r.returncode != 0
    assert (f'Error from server (Forbidden): pods is forbidden: User "{user}" cannot create resource '
            f'"pods" in API group "" in the namespace "{ns}"') in r.stderr

    r = alice.kubectl("get", "pods", "-n", "default")
    assert r.returncode != 0
    assert (f'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" '
            f'in the namespace "default"') in r.stderr

    r = alice.kubectl("get", "nodes")
    assert r.returncode != 0
    assert f'nodes is forbidden: User "{user}" cannot list resource "nodes" in API group "" at the cluster scope' \
        in r.stderr


def test_can_i_and_whoami(cluster: Cluster, ns: str, alice: User):
    assert alice.kubectl("auth", "can-i", "get", "pods").check().out.strip() == "yes"
    r = alice.kubectl("auth", "can-i", "create", "pods")
    assert (r.returncode, r.out.strip()) == (1, "no")
    r = alice.kubectl("auth", "can-i", "get", "pods", "-n", "default")
    assert r.out.strip() == "no"

    lines = table_lines(alice.kubectl("auth", "can-i", "--list").check().out)
    assert "Resources Non-Resource URLs Resource Names Verbs" in lines
    assert "pods [] [] [get list watch]" in lines
    assert "deployments.apps [] [] [get list watch]" in lines
    assert "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]" in lines
    assert "[/api/*] [] [get]" in lines
    assert not any(line.startswith("secrets ") for line in lines)

    who = table_lines(alice.kubectl("auth", "whoami").check().out)
    assert f"Username {name_of(alice)}" in who
    assert "Groups [dev system:authenticated]" in who


def test_impersonation_needs_the_impersonate_verb(cluster: Cluster, ns: str, alice: User):
    user = name_of(alice)
    # Discovery cached first: with a cold cache kubectl reads the discovery 403 without its body
    # and says only "Forbidden: unknown", as it does against upstream.
    alice.kubectl("get", "pods").check()
    r = alice.kubectl("--as", "someone", "get", "pods")
    assert r.returncode != 0
    assert (f'users "someone" is forbidden: User "{user}" cannot impersonate resource "users" in API group "" '
            f'at the cluster scope') in r.stderr

    role = f"impersonate-someone-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "clusterrole", role, "--verb", "impersonate", "--resource", "users",
                    "--resource-name", "someone").check()
    cluster.kubectl("create", "clusterrolebinding", role, "--clusterrole", role, "--user", user).check()
    who = table_lines(alice.kubectl("--as", "someone", "auth", "whoami").check().out)
    assert "Username someone" in who
    r = alice.kubectl("--as", "someone", "get", "pods")  # someone has no binding of its own
    assert 'User "someone" cannot list resource "pods"' in r.stderr
    r = alice.kubectl("--as", "someone-else", "get", "pods")
    assert f'users "someone-else" is forbidden: User "{user}" cannot impersonate' in r.stderr

    # The admin (system:masters) may impersonate anyone.
    assert cluster.kubectl("auth", "can-i", "get", "pods", "-n", ns, "--as", user).check().out.strip() == "yes"
    assert cluster.kubectl("auth", "can-i", "delete", "pods", "-n", ns, "--as", user).out.strip() == "no"


def test_create_token_authenticates_as_the_service_account(cluster: Cluster, ns: str, tmp_path: Path):
    cluster.kubectl("create", "serviceaccount", "builder", "-n", ns).check()
    token = cluster.kubectl("create", "token", "builder", "-n", ns, "--duration", "20m").check().out.strip()
    assert token.count(".") == 2

    def as_sa(*args: str) -> Result:
        return cluster.kubectl("--token", token, *args)

    who = table_lines(as_sa("auth", "whoami").check().out)
    assert f"Username system:serviceaccount:{ns}:builder" in who
    assert f"Groups [system:serviceaccounts system:serviceaccounts:{ns} system:authenticated]" in who
    r = as_sa("get", "pods", "-n", ns)
    assert f'User "system:serviceaccount:{ns}:builder" cannot list resource "pods"' in r.stderr
    cluster.kubectl("create", "rolebinding", "builder-edit", "--clusterrole", "edit",
                    "--serviceaccount", f"{ns}:builder", "-n", ns).check()
    as_sa("create", "configmap", "made-by-sa", "-n", ns).check()

    cluster.kubectl("delete", "serviceaccount", "builder", "-n", ns).check()
    r = as_sa("get", "pods", "-n", ns)
    assert r.returncode != 0 and "Unauthorized" in r.stderr

    r = cluster.kubectl("create", "token", "builder", "-n", ns)
    assert r.returncode != 0 and 'serviceaccounts "builder" not found' in r.stderr


TYPO_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: typo}
rule:
- {apiGroups: [""], resources: [pods], verbs: [get]}
"""


def test_rbac_kinds_have_schemas(cluster: Cluster, ns: str):
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=TYPO_ROLE)
    assert r.returncode != 0 and 'strict decoding error: unknown field "rule"' in r.stderr
    out = cluster.kubectl("explain", "rolebinding.roleRef").check().out
    assert "kind\t<string> -required-" in out and "name\t<string> -required-" in out
