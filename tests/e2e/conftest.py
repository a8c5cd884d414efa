"""End-to-end fixtures: a real phalanx cluster started as a user starts it, driven by real kubectl.

`cluster` runs `phalanx create cluster` in a subprocess (its own PHALANX_HOME and kubeconfig), and
deletes it afterwards. `kubectl` calls the kubectl installed in the project's venv (never a system
one), with a fresh `--cache-dir` per cluster, since discovery is cached per server address.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent
KUBECTL = VENV_BIN / "kubectl"
KUBECTL_137 = VENV_BIN.parent / "kubectl-1.37" / "bin" / "kubectl"
PHALANX = VENV_BIN / "phalanx"


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def out(self) -> str:
        return self.stdout

    def json(self):
        return json.loads(self.stdout)

    def check(self) -> "Result":
        if self.returncode != 0:
            raise AssertionError(f"{' '.join(self.args)} exited {self.returncode}\n"
                                 f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}")
        return self


@dataclass
class Cluster:
    name: str
    home: Path
    kubeconfig: Path
    cache_dir: Path
    env: dict = field(default_factory=dict)

    def phalanx(self, *args: str, timeout: float = 120) -> Result:
        p = subprocess.run([str(PHALANX), *args], capture_output=True, text=True, env=self.env, timeout=timeout)
        return Result([str(PHALANX), *args], p.returncode, p.stdout, p.stderr)

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60,
                binary: Path = KUBECTL) -> Result:
        cmd = [str(binary), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]
        p = subprocess.run(cmd, capture_output=True, text=True, input=input, env=self.env, timeout=timeout)
        return Result(cmd, p.returncode, p.stdout, p.stderr)

    def kubectl_popen(self, *args: str, binary: Path = KUBECTL) -> subprocess.Popen:
        cmd = [str(binary), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)

    @property
    def state_dir(self) -> Path:
        return self.home / "clusters" / self.name

    def server_url(self) -> str:
        import yaml
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        for c in cfg["clusters"]:
            if c["name"] == f"phalanx-{self.name}":
                return c["cluster"]["server"]
        raise KeyError(self.name)

    def token(self) -> str:
        return (self.state_dir / "token").read_text().strip()


def create_cluster(tmp: Path, name: str, config: str | None = None, extra_env: dict | None = None,
                   kubernetes: str | None = "v1.36.4") -> Cluster:
    """`phalanx create cluster` of Kubernetes `kubernetes` (`--image kindest/node:<it>`; None lets
    phalanx decide from the config)."""
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    kubeconfig = tmp / "kubeconfig"
    env = dict(os.environ, PHALANX_HOME=str(home), KUBECONFIG=str(kubeconfig), **(extra_env or {}))
    env.pop("HTTPS_PROXY", None)
    env.pop("https_proxy", None)
    c = Cluster(name=name, home=home, kubeconfig=kubeconfig, cache_dir=tmp / f"kcache-{uuid.uuid4().hex[:6]}",
                env=env)
    args = ["create", "cluster", "--name", name, "--wait", "60s"]
    if kubernetes is not None:
        args += ["--image", f"kindest/node:{kubernetes}"]
    if config is not None:
        cfg = tmp / "config.yaml"
        cfg.write_text(config)
        args += ["--config", str(cfg)]
    c.phalanx(*args).check()
    return c


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Cluster:
    tmp = tmp_path_factory.mktemp("cluster")
    c = create_cluster(tmp, "e2e")
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


@pytest.fixture(scope="session")
def cluster137(tmp_path_factory) -> Cluster:
    """A Kubernetes 1.37 cluster, as `phalanx create cluster` gives one with no config."""
    tmp = tmp_path_factory.mktemp("cluster137")
    c = create_cluster(tmp, "e2e137", kubernetes=None)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


@pytest.fixture
def ns(cluster: Cluster, request) -> str:
    """A fresh namespace per test, deleted afterwards (without waiting)."""
    name = "t-" + uuid.uuid4().hex[:8]
    cluster.kubectl("apply", "-f", "-", input=f'{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}').check()
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false")


POD_SMOKE = """\
apiVersion: v1
kind: Pod
metadata:
  name: smoke
spec:
  containers:
  - name: c
    image: busybox:1
"""


def poll(fn, timeout: float = 60.0, interval: float = 0.3):
    """Call `fn` until it returns something truthy (returned) or `timeout` passes (its last value)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    return last
