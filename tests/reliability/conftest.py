"""Reliability suite: a real phalanx cluster under kill -9, long watches and hostile requests.

The fixtures and helpers are the end-to-end suite's (tests/e2e/conftest.py: `phalanx create cluster`
in a subprocess with its own PHALANX_HOME, the venv's kubectl); this module imports them and adds
what the reliability tests share: the control plane's pid, a SIGKILL and a restart, and clients of
the venv's kubernetes Python library. Every test here is bounded in time and talks to loopback only.

The suite's files:
- test_kill9.py: kill -9 during concurrent writes from several clients loses no acknowledged write;
- test_watch_continuity.py: a watch from a resourceVersion delivers every event once and in order,
  and what a watch resumed after a restart gets;
- test_restart_scheduling.py: a restart while pods are being scheduled binds no pod twice and puts
  no node over its allocatable;
- test_bad_input.py: one table of hostile HTTP requests, each answered with its status code and a
  Status body, and the server still ready within a second afterwards.

RBAC allow/deny tables at the HTTP level are not repeated here: they are in
tests/unit/auth/test_http_auth.py (authentication and authorization over HTTP) and
tests/unit/auth/test_rbac_authorizer.py / test_escalation.py (the rule tables).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

# tests/ is no package (pytest imports it in importlib mode, tests/e2e as the package `e2e`): make
# `e2e` importable here as well, so its fixtures and helpers are imported rather than copied.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from e2e.conftest import Cluster, cluster, create_cluster, ns  # noqa: F401  (fixtures re-exported)
from e2e.test_errors import raw_request  # noqa: F401

# Generous "does not hang" bound for a restart that takes about a second.
RESTART_BOUND_SECONDS = 60


def control_plane_pid(c: Cluster) -> int:
    return int((c.state_dir / "pid").read_text().strip())


def kill_9(c: Cluster) -> None:
    """SIGKILL the control plane process and wait until it is gone."""
    pid = control_plane_pid(c)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if _is_zombie(pid):
            return
        time.sleep(0.05)
    raise AssertionError(f"control plane pid {pid} still alive 10 s after SIGKILL")


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def restart(c: Cluster) -> None:
    c.phalanx("start", "cluster", "--name", c.name, timeout=RESTART_BOUND_SECONDS).check()


def python_client(c: Cluster):
    """A CoreV1Api of the official kubernetes client on the cluster's kubeconfig (one per thread)."""
    from kubernetes import client, config
    api_client = config.new_client_from_config(config_file=str(c.kubeconfig))
    return client.CoreV1Api(api_client)


def open_watch(c: Cluster, path: str, timeout: float = 30):
    """A watch request over HTTPS with the kubeconfig's CA and token: (status, response).

    On 200 the response yields one JSON event per line; on an error the response is the Status."""
    import base64
    import ssl
    import urllib.error
    import urllib.request

    import yaml
    cfg = yaml.safe_load(c.kubeconfig.read_text())
    ca = next(x["cluster"]["certificate-authority-data"] for x in cfg["clusters"] if x["name"] == f"phalanx-{c.name}")
    ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
    req = urllib.request.Request(c.server_url() + path, headers={"Authorization": f"Bearer {c.token()}"})
    try:
        resp = urllib.request.urlopen(req, context=ctx, timeout=timeout)
        return resp.status, resp
    except urllib.error.HTTPError as e:
        return e.code, e
