"""What `phalanx get clusters` reports about each local cluster, read without starting anything.

    for info in describe_clusters():           # one ClusterInfo per state dir, sorted by name
        print(info.name, info.status, info.kubernetes_version, info.nodes, info.server)
        if info.problem: print(info.problem)   # crashed, API not answering, unreadable config

Status (`ClusterInfo.status`):

    Running       the control plane process is alive and /readyz answers `ok`
    NotReady      alive, the API answers, /readyz does not say `ok` yet (starting, or failing a check)
    NotAnswering  alive, but its API does not answer at all
    Stopped       stopped with `phalanx stop cluster` (or never started): no pid file
    Crashed       the pid file is there but its process is gone: it exited without being stopped

The node count of a cluster whose API answers is the API's (`GET /api/v1/nodes?limit=1` and its
`remainingItemCount`); otherwise it is what its stored state holds (`state.db`, read-only), and
failing that the number of nodes its config declares. `nodes_from` says which.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from phalanx.cluster import lifecycle
from phalanx.cluster.lifecycle import ClusterError, ClusterPaths
from phalanx.cluster.spec import ClusterSpec
from phalanx.store.sqlite import count_stored

PROBE_TIMEOUT_SECONDS = 2.0
NODES_KEY = "core/nodes"


@dataclass
class ClusterInfo:
    name: str
    status: str  # Running | NotReady | NotAnswering | Stopped | Crashed
    kubernetes_version: str  # "" when the config cannot be read
    nodes: int | None
    nodes_from: str  # api | state | config | "" (unknown)
    server: str  # https://host:port, "" when unknown
    pid: int | None
    state_dir: str
    log_file: str
    problem: str = ""  # what the user should read about this cluster, naming the log
    host: str = ""  # where clients reach the API (with `port`); not part of to_json
    port: int = 0

    @property
    def running(self) -> bool:
        return self.status in ("Running", "NotReady", "NotAnswering")

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "running": self.running,
                "ready": self.status == "Running", "kubernetesVersion": self.kubernetes_version or None,
                "nodes": self.nodes, "nodesFrom": self.nodes_from or None, "server": self.server or None,
                "pid": self.pid, "stateDir": self.state_dir, "controlPlaneLog": self.log_file,
                **({"problem": self.problem} if self.problem else {})}


def describe_clusters() -> list[ClusterInfo]:
    return [describe_cluster(name) for name in lifecycle.list_clusters()]


def describe_cluster(name: str) -> ClusterInfo:
    """One cluster's status, version, node count and API address (ClusterError if unknown)."""
    paths = lifecycle.ClusterPaths.for_name(name)
    if not paths.exists():
        raise ClusterError(f"unknown cluster {json.dumps(name)}; `phalanx get clusters` lists the clusters there are")
    pid = lifecycle.running_pid(paths)
    info = ClusterInfo(name=name, status="Stopped", kubernetes_version="", nodes=None, nodes_from="", server="",
                       pid=pid, state_dir=str(paths.root), log_file=str(paths.log_file))
    try:
        spec: ClusterSpec | None = lifecycle.load_spec(paths)
    except ClusterError as e:
        spec, info.problem = None, str(e)
    if spec is not None:
        info.kubernetes_version = spec.kubernetes_version
        info.host, info.port = lifecycle.client_host(spec.listen_address), lifecycle.read_port(paths) or spec.port
        info.server = lifecycle.server_for(spec, info.port) if info.port else ""
    if pid is not None:
        _probe(info, paths, spec)
    elif paths.pid_file.exists():
        info.status = "Crashed"
        info.problem = info.problem or crash_message(paths)
    if info.nodes is None:
        _nodes_at_rest(info, paths, spec)
    return info


def crash_message(paths: ClusterPaths) -> str:
    """What to tell about a cluster whose control plane exited without being stopped."""
    name = paths.root.name
    try:
        lines = [line.strip() for line in paths.log_file.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    last = f" (its last line: {lines[-1][:300]})" if lines else ""
    return (f"cluster {json.dumps(name)} crashed: its control plane is not running, yet it was not stopped; see "
            f"the control plane's log {paths.log_file}{last}. `phalanx start cluster --name {name}` starts it again.")


def _probe(info: ClusterInfo, paths: ClusterPaths, spec: ClusterSpec | None) -> None:
    """Ask a live control plane whether it is ready and how many nodes it has."""
    if spec is None or not info.port:
        info.status = "NotAnswering"
        return
    host, port = info.host, info.port
    ca, token = paths.pki.ca_cert_file, paths.pki.token
    code, body = lifecycle.api_get(host, port, ca, token, "/readyz", PROBE_TIMEOUT_SECONDS)
    if code is None:
        info.status = "NotAnswering"
        info.problem = (f"cluster {json.dumps(info.name)} does not answer: its control plane (pid {info.pid}) is "
                        f"running but its API at {info.server} does not answer ({body}); see the control plane's "
                        f"log {paths.log_file}")
        return
    info.status = "Running" if code == 200 and body.strip() == "ok" else "NotReady"
    code, body = lifecycle.api_get(host, port, ca, token, "/api/v1/nodes?limit=1", PROBE_TIMEOUT_SECONDS)
    if code == 200:
        try:
            listed = json.loads(body)
            info.nodes = len(listed.get("items") or []) + int((listed.get("metadata") or {}).get("remainingItemCount") or 0)
            info.nodes_from = "api"
        except (ValueError, TypeError, AttributeError):
            pass


def _nodes_at_rest(info: ClusterInfo, paths: ClusterPaths, spec: ClusterSpec | None) -> None:
    """A stopped (or unreachable) cluster's node count: its stored state's, else its config's."""
    try:
        info.nodes, info.nodes_from = count_stored(str(paths.state_db), NODES_KEY), "state"
        return
    except sqlite3.Error:
        pass
    if spec is not None:
        info.nodes, info.nodes_from = len(spec.nodes), "config"
