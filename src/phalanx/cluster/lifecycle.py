"""Cluster lifecycle: create, start, stop and delete local phalanx clusters, kind-style.

    spec = load_cluster_config("kind.yaml", name=None)
    created = create_cluster(spec, wait_seconds=60, progress=print)   # ClusterError on failure
    stop_cluster("phalanx"); start_cluster("phalanx"); delete_cluster("phalanx")

Every cluster lives in its own state dir, `$PHALANX_HOME/clusters/<name>/` (default
`~/.phalanx/clusters/<name>/`):

    cluster.json        the ClusterSpec (`ClusterSpec.save`); its `port` is the port chosen for
                        this run (the configured one, or a free one picked by the lifecycle)
    port                the port the API server listens on (decimal, one line)
    pki/                ca.crt, ca.key, server.crt, server.key (see `pki.py`)
    token               the bearer token clients send
    state.db            SQLite store, owned by the control plane (`storage: sqlite`)
    control-plane.log   stdout and stderr of the control plane process
    pid                 pid of the control plane process (its own process group and session);
                        `stop` removes it, so a pid file whose process is gone means a crash
    lifecycle.json      bookkeeping: the port the config asked for (0: any) and the kubeconfig
                        files holding this cluster's entries (cleaned up on delete)

The control plane is `python -m phalanx serve --state-dir DIR` (see `control_plane_command`),
started in the background in a new session. The contract `phalanx.cluster.controlplane.serve`
meets is `SERVE_CONTRACT` below. Readiness is `GET /readyz` over TLS answering 200 `ok`.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from phalanx.cluster import kubeconfig as kubeconfigs
from phalanx.cluster.configparse import DEFAULT_CLUSTER_NAME
from phalanx.cluster.pki import ClusterPKI, ensure_pki, pki_paths
from phalanx.cluster.spec import ClusterSpec
from phalanx.machinery import durations
from phalanx.machinery.durations import format_duration
from phalanx.machinery.names import dns1123_subdomain_errors

HOME_ENV = "PHALANX_HOME"
CLUSTER_NAME_ENV = "PHALANX_CLUSTER_NAME"
DEFAULT_WAIT_SECONDS = 60.0
API_ANSWER_SECONDS = 60.0  # how long even `--wait 0` waits for the API to answer at all
STOP_GRACE_SECONDS = 10.0
LOG_TAIL_LINES = 30

SERVE_CONTRACT = """\
phalanx.cluster.controlplane.serve(state_dir: str) -> None   (blocks until shutdown)

Reads (all under state_dir; `load_serve_settings(state_dir)` returns them in one object):
  cluster.json      ClusterSpec.load(state_dir): nodes, feature gates, runtime config, storage,
                    listen address, DRA drivers, and `port`: the port to listen on (the lifecycle
                    has checked it is free; 0 only when someone runs `serve` by hand)
  pki/server.crt    TLS server certificate, issued by pki/ca.crt for 127.0.0.1, ::1, localhost
                    and the listen address
  pki/server.key    its private key
  token             the bearer token: requests must carry `Authorization: Bearer <token>`
Listens on (spec.listen_address, spec.port) with TLS ("localhost" meaning loopback).
Writes:
  port              the port actually bound, once listening (decimal); the lifecycle wrote the
                    chosen port there already, serve may overwrite it (it re-reads it while polling)
  state.db          when spec.storage == "sqlite" (nothing on disk for "memory")
  stdout/stderr     go to control-plane.log (appended on restart)
Readiness: GET /readyz answers 200 with body `ok` once the API serves requests and the simulated
  nodes are registered. `phalanx create cluster` / `start cluster` first poll GET /livez with the
  CA and token until it answers at all (even with `--wait 0`; up to API_ANSWER_SECONDS or --wait),
  then /readyz for --wait, and fail (naming the log and printing its tail) if the process exits
  first or the time runs out.
Shutdown: SIGTERM or SIGINT -> stop accepting, flush the store, exit within 10 s (then the whole
  process group gets SIGKILL). serve is the leader of its own process group and session: any
  helper process it starts stays in that group and is stopped with it.
It must not write the pid file, lifecycle.json or any kubeconfig: the lifecycle owns those.
"""


class ClusterError(RuntimeError):
    """A lifecycle operation failed; the message is what the user should read."""


# ---------------------------------------------------------------------------------------------
# where things live


def phalanx_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".phalanx").expanduser().absolute()


def clusters_root() -> Path:
    return phalanx_home() / "clusters"


def default_cluster_name() -> str:
    return os.environ.get(CLUSTER_NAME_ENV) or DEFAULT_CLUSTER_NAME


@dataclass(frozen=True)
class ClusterPaths:
    root: Path

    @classmethod
    def for_name(cls, name: str) -> "ClusterPaths":
        problems = dns1123_subdomain_errors(name)
        if problems:
            raise ClusterError(f"invalid cluster name {json.dumps(name)}: {problems[0]}")
        return cls(clusters_root() / name)

    @property
    def spec_file(self) -> Path:
        return self.root / "cluster.json"

    @property
    def pki(self) -> ClusterPKI:
        return pki_paths(self.root)

    @property
    def state_db(self) -> Path:
        return self.root / "state.db"

    @property
    def log_file(self) -> Path:
        return self.root / "control-plane.log"

    @property
    def pid_file(self) -> Path:
        return self.root / "pid"

    @property
    def port_file(self) -> Path:
        return self.root / "port"

    @property
    def lifecycle_file(self) -> Path:
        return self.root / "lifecycle.json"

    def exists(self) -> bool:
        return self.spec_file.exists()


@dataclass(frozen=True)
class ServeSettings:
    """Everything `serve(state_dir)` needs, read from the state dir."""

    state_dir: Path
    spec: ClusterSpec
    host: str
    port: int
    cert_file: Path
    key_file: Path
    ca_file: Path
    token: str
    state_db: Path
    log_file: Path


def load_serve_settings(state_dir: str | os.PathLike) -> ServeSettings:
    paths = ClusterPaths(Path(state_dir))
    spec = load_spec(paths)
    port = spec.port or _read_int(paths.port_file)
    if not port:
        raise ClusterError(f"no port for the control plane: {paths.port_file} is missing and cluster.json has port 0")
    pki = paths.pki
    return ServeSettings(state_dir=paths.root, spec=spec, host=bind_host(spec.listen_address), port=port,
                         cert_file=pki.server_cert_file, key_file=pki.server_key_file, ca_file=pki.ca_cert_file,
                         token=pki.token, state_db=paths.state_db, log_file=paths.log_file)


def list_clusters() -> list[str]:
    root = clusters_root()
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir() if (d / "cluster.json").is_file())


def control_plane_command(state_dir: Path) -> list[str]:
    """The control plane process. Tests replace this to run a stand-in server."""
    return [sys.executable, "-m", "phalanx", "serve", "--state-dir", str(state_dir)]


# ---------------------------------------------------------------------------------------------
# results and progress

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass
class StartResult:
    name: str
    server: str
    pid: int
    ready_after: float | None = None  # seconds; None when not waited for
    kubeconfig: Path | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# create / start / stop / delete


def create_cluster(spec: ClusterSpec, *, wait_seconds: float = DEFAULT_WAIT_SECONDS,
                   kubeconfig: str | os.PathLike | None = None, retain: bool = False,
                   progress: Progress = _quiet) -> StartResult:
    """Create the state dir, credentials and kubeconfig entry, and start the control plane."""
    spec = copy.deepcopy(spec)  # the chosen port is recorded in the saved copy, not the caller's
    paths = ClusterPaths.for_name(spec.name)
    paths.root.parent.mkdir(parents=True, exist_ok=True)
    try:
        paths.root.mkdir(mode=0o700)
    except FileExistsError:
        raise ClusterError(f"a cluster with the name {json.dumps(spec.name)} already exists "
                           f"(state dir {paths.root}); delete it with `phalanx delete cluster --name {spec.name}`") from None

    try:
        with _step(progress, f"Preparing nodes 📦 ({_describe_nodes(spec)})"):
            pass
        with _step(progress, "Writing configuration 📜"):
            requested = spec.port
            _write_bookkeeping(paths, {"requestedPort": requested, "kubeconfigs": []})
            port = _choose_port(spec.listen_address, requested, previous=None, own=paths.root)
            ensure_pki(paths.root, spec.name, spec.listen_address)
            spec.port = port
            spec.save(str(paths.root))
            _write_text(paths.port_file, f"{port}\n")
        result = _start_and_wait(paths, spec, port, wait_seconds, progress, fresh_log=True)
        result.kubeconfig = kubeconfigs.merge_cluster_entry(
            kubeconfigs.kubeconfig_path(kubeconfig), spec.name, result.server, paths.pki.ca_cert_pem, paths.pki.token)
        _record_kubeconfig(paths, result.kubeconfig)
        return result
    except BaseException as e:
        pid = running_pid(paths)
        if pid is not None:
            _terminate_group(pid, STOP_GRACE_SECONDS)
        paths.pid_file.unlink(missing_ok=True)
        if retain:
            if isinstance(e, ClusterError):
                raise ClusterError(f"{e}\n(state kept in {paths.root} because of --retain)") from None
            raise
        kept_log = _keep_log(paths) if isinstance(e, ClusterError) and str(paths.log_file) in str(e) else None
        shutil.rmtree(paths.root, ignore_errors=True)
        if kept_log is not None:
            raise ClusterError(str(e).replace(str(paths.log_file), str(kept_log)) + "\n(the cluster's state "
                               "dir was removed and its log kept; `--retain` keeps the state dir)") from None
        raise


def _keep_log(paths: ClusterPaths) -> Path | None:
    """Move the log of a failed create out of the state dir about to be removed, so the error
    message can name it."""
    if not paths.log_file.is_file():
        return None
    try:
        fd, kept = tempfile.mkstemp(prefix=f"phalanx-{paths.root.name}-control-plane-", suffix=".log")
        os.close(fd)
        shutil.move(str(paths.log_file), kept)
    except OSError:
        return None
    return Path(kept)


def start_cluster(name: str, *, wait_seconds: float = DEFAULT_WAIT_SECONDS, progress: Progress = _quiet) -> StartResult:
    """Start a stopped cluster from its state dir, on the same port when it is still free."""
    paths = _existing(name)
    pid = running_pid(paths)
    spec = load_spec(paths)
    previous = _read_int(paths.port_file) or spec.port
    if pid is not None:
        notes = [f"Cluster {json.dumps(name)} is already running (pid {pid})."]
        answer, why = api_get(client_host(spec.listen_address), previous or 0, paths.pki.ca_cert_file,
                              paths.pki.token, "/livez")
        if answer is None:
            notes.append(f"Its API at {server_for(spec, previous or 0)} does not answer ({why}); see the control "
                         f"plane's log {paths.log_file}, or stop it and start it again.")
        return StartResult(name, server_for(spec, previous), pid, notes=notes)
    notes = []
    if paths.pid_file.exists():  # not stopped, yet not running
        notes.append(f"Cluster {json.dumps(name)} had not been stopped: its control plane had exited (crashed or "
                     f"was killed); the control plane's log {paths.log_file} tells why.")
    with _step(progress, "Writing configuration 📜"):
        requested = _read_bookkeeping(paths).get("requestedPort", 0)
        port = _choose_port(spec.listen_address, requested, previous=previous, own=paths.root)
        if previous and port != previous:
            notes.append(f"Port {previous} is taken now; the API server moved to port {port}.")
        ensure_pki(paths.root, spec.name, spec.listen_address)
        spec.port = port
        spec.save(str(paths.root))
        _write_text(paths.port_file, f"{port}\n")
    try:
        result = _start_and_wait(paths, spec, port, wait_seconds, progress, fresh_log=False)
    except BaseException:
        pid = running_pid(paths)
        if pid is not None:
            _terminate_group(pid, STOP_GRACE_SECONDS)
        paths.pid_file.unlink(missing_ok=True)
        raise
    result.notes = notes
    for path in _recorded_kubeconfigs(paths):  # refresh the server URL (and CA) where we wrote it
        try:
            if kubeconfigs.has_cluster_entry(path, name):
                kubeconfigs.merge_cluster_entry(path, name, result.server, paths.pki.ca_cert_pem,
                                                paths.pki.token, make_current=False)
        except kubeconfigs.KubeconfigError as e:
            notes.append(f"Could not update {path}: {e}")
    return result


def stop_cluster(name: str, *, grace_seconds: float = STOP_GRACE_SECONDS) -> bool:
    """Stop the control plane and keep the state. False if it was not running."""
    paths = _existing(name)
    pid = running_pid(paths)
    if pid is None:
        paths.pid_file.unlink(missing_ok=True)
        return False
    _terminate_group(pid, grace_seconds)
    paths.pid_file.unlink(missing_ok=True)
    return True


def delete_cluster(name: str, *, kubeconfig: str | os.PathLike | None = None,
                   grace_seconds: float = STOP_GRACE_SECONDS) -> bool:
    """Stop the control plane, drop its kubeconfig entries, remove its state. False if unknown."""
    paths = ClusterPaths.for_name(name)
    existed = paths.root.exists()
    pid = running_pid(paths) if existed else None
    if pid is not None:
        _terminate_group(pid, grace_seconds)
    targets = _recorded_kubeconfigs(paths) if existed else []
    default = kubeconfigs.kubeconfig_path(kubeconfig)
    if default not in targets:
        targets.append(default)
    for path in targets:
        try:
            kubeconfigs.remove_cluster_entry(path, name)
        except kubeconfigs.KubeconfigError:
            pass  # a broken kubeconfig is not ours to fix; the state dir still goes
    if existed:
        shutil.rmtree(paths.root, ignore_errors=True)
    return existed


def export_kubeconfig(name: str, kubeconfig: str | os.PathLike | None = None) -> Path:
    """Write (merge) this cluster's entries into a kubeconfig file and make its context current."""
    paths = _existing(name)
    spec = load_spec(paths)
    port = _read_int(paths.port_file) or spec.port
    target = kubeconfigs.merge_cluster_entry(kubeconfigs.kubeconfig_path(kubeconfig), name, server_for(spec, port),
                                             paths.pki.ca_cert_pem, paths.pki.token)
    _record_kubeconfig(paths, target)
    return target


def kubeconfig_text(name: str) -> str:
    """A standalone kubeconfig for this cluster (what `phalanx get kubeconfig` prints)."""
    paths = _existing(name)
    spec = load_spec(paths)
    port = _read_int(paths.port_file) or spec.port
    return kubeconfigs.render(kubeconfigs.standalone_kubeconfig(
        name, server_for(spec, port), paths.pki.ca_cert_pem, paths.pki.token))


def load_cluster_spec(name: str) -> ClusterSpec:
    return load_spec(_existing(name))


def cluster_status(name: str) -> str:
    """`Running` or `Stopped`."""
    return "Running" if running_pid(_existing(name)) is not None else "Stopped"


# ---------------------------------------------------------------------------------------------
# process handling


def running_pid(paths: ClusterPaths) -> int | None:
    """The control plane's pid if it is alive and really ours (a stale pid file is ignored)."""
    pid = _read_int(paths.pid_file)
    if not pid or not _alive(pid):
        return None
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            if str(paths.root).encode() not in cmdline.read_bytes():
                return None  # the pid was reused by an unrelated process
        except OSError:
            return None
    return pid


def _spawn(paths: ClusterPaths, *, fresh_log: bool) -> subprocess.Popen:
    command = control_plane_command(paths.root)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(paths.log_file, "wb" if fresh_log else "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} starting: {' '.join(command)}\n".encode())
        log.flush()
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       cwd=paths.root, env=env, start_new_session=True, close_fds=True)
        except OSError as e:
            raise ClusterError(f"cannot start the control plane ({command[0]}): {e.strerror or e}") from None
    _write_text(paths.pid_file, f"{process.pid}\n")
    return process


def _start_and_wait(paths: ClusterPaths, spec: ClusterSpec, port: int, wait_seconds: float,
                    progress: Progress, *, fresh_log: bool) -> StartResult:
    """Spawn the control plane and return once its API answers (as kind's `--wait 0` returns once
    kubeadm has the API server up), and with `wait_seconds` > 0 once /readyz says ok, counting
    the wait from the spawn."""
    started = time.monotonic()
    with _step(progress, "Starting control-plane 🕹️"):
        process = _spawn(paths, fresh_log=fresh_log)
        _poll(paths, spec, process, started, max(wait_seconds, API_ANSWER_SECONDS), ready=False)
    result = StartResult(spec.name, server_for(spec, port), process.pid)
    if wait_seconds > 0:
        with _step(progress, f"Waiting ≤ {format_duration(wait_seconds)} for control-plane = Ready ⏳"):
            _poll(paths, spec, process, started, wait_seconds, ready=True)
        result.ready_after = time.monotonic() - started
        progress(f" • Ready after {format_duration(round(result.ready_after))} 💚")
    result.server = server_for(spec, _read_int(paths.port_file) or port)
    return result


def _poll(paths: ClusterPaths, spec: ClusterSpec, process: subprocess.Popen, started: float,
          within: float, *, ready: bool) -> None:
    """Poll until the API answers (`ready=False`: any HTTP answer to /livez) or is ready (/readyz
    answers `ok`), at least once; ClusterError naming the control plane's log if the process exits
    or `within` seconds from `started` pass."""
    host = client_host(spec.listen_address)
    probe = "/readyz" if ready else "/livez"
    while True:
        code = process.poll()
        if code is not None:
            raise ClusterError(f"the control plane exited with code {code} before "
                               f"{'it was ready' if ready else 'its API answered'}; " + log_tail(paths))
        port = _read_int(paths.port_file) or spec.port  # serve may rewrite it once bound
        if ready:
            ok, last = probe_ready(host, port, paths.pki.ca_cert_file, paths.pki.token)
        else:
            status, last = api_get(host, port, paths.pki.ca_cert_file, paths.pki.token, probe)
            ok = status is not None
        if ok:
            return
        if time.monotonic() >= started + within:
            what = "was not ready" if ready else "did not answer"
            raise ClusterError(f"the control plane {what} after {format_duration(within)} "
                               f"(last {probe} answer: {last}); " + log_tail(paths))
        time.sleep(0.1)


def api_get(host: str, port: int, ca_file: Path, token: str, path: str,
            timeout: float = 2.0) -> tuple[int | None, str]:
    """GET `path` over TLS, verifying the cluster CA: (HTTP status, body), or (None, why there
    was no answer: refused, timed out, TLS failure)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    conn = http.client.HTTPSConnection(host, port, context=context, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    except (OSError, ssl.SSLError, http.client.HTTPException) as e:
        return None, str(e) or type(e).__name__
    finally:
        conn.close()


def probe_ready(host: str, port: int, ca_file: Path, token: str, timeout: float = 2.0) -> tuple[bool, str]:
    """GET /readyz over TLS, verifying the cluster CA; (ready, what came back)."""
    status, body = api_get(host, port, ca_file, token, "/readyz", timeout)
    if status is None:
        return False, body
    body = body.strip()
    return status == 200 and body == "ok", f"{status} {body[:200]}"


def _terminate_group(pid: int, grace_seconds: float) -> None:
    """SIGTERM the process group led by `pid`, wait, SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, grace_seconds), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            _reap(pid)
            return
        except PermissionError:
            raise ClusterError(f"not allowed to signal the control plane (pid {pid})") from None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not _group_alive(pid):
                return
            time.sleep(0.05)
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _alive(pid: int) -> bool:
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Only zombies left (e.g. the leader, waiting to be reaped by its parent) count as gone.
    proc = Path("/proc")
    if not proc.is_dir():
        return _alive(pgid)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def log_tail(paths: ClusterPaths, lines: int = LOG_TAIL_LINES) -> str:
    """Where the control plane's log is and its last lines, for error messages."""
    try:
        tail = paths.log_file.read_text(errors="replace").splitlines()[-lines:]
    except OSError as e:
        return f"see the control plane's log {paths.log_file} ({e.strerror or e})"
    if not tail:
        return f"see the control plane's log {paths.log_file} (empty)"
    return (f"see the control plane's log {paths.log_file}; its last {len(tail)} lines:\n"
            + "\n".join("  " + line for line in tail))


# ---------------------------------------------------------------------------------------------
# ports and addresses


def bind_host(listen_address: str) -> str:
    return "127.0.0.1" if listen_address == "localhost" else listen_address


def client_host(listen_address: str) -> str:
    """The address clients use: loopback for loopback/unspecified listen addresses."""
    if listen_address in ("0.0.0.0", "localhost", "127.0.0.1", ""):
        return "127.0.0.1"
    if listen_address == "::":
        return "::1"
    return listen_address


def server_for(spec: ClusterSpec, port: int) -> str:
    return kubeconfigs.server_url(client_host(spec.listen_address), port)


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str, avoid: set[int]) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(50):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in avoid:
            return port
    raise ClusterError(f"could not find a free port on {host}")


def _choose_port(listen_address: str, requested: int, previous: int | None, own: Path) -> int:
    host = bind_host(listen_address)
    if requested:
        if not port_is_free(host, requested):
            raise ClusterError(f"port {requested} on {host} is already in use (requested by the cluster config)")
        return requested
    if previous and port_is_free(host, previous):
        return previous
    # Keep clear of ports other (stopped) clusters will want back.
    taken = {_read_int(clusters_root() / n / "port") for n in list_clusters() if clusters_root() / n != own}
    return _free_port(host, {p for p in taken if p})


# ---------------------------------------------------------------------------------------------
# small helpers


class _step:
    """Print ` ✓ title` when the block succeeds, ` ✗ title` when it raises (kind's status lines)."""

    def __init__(self, progress: Progress, title: str):
        self.progress, self.title = progress, title

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        self.progress(f" {'✗' if exc_type else '✓'} {self.title}")


def _describe_nodes(spec: ClusterSpec) -> str:
    cps = sum(1 for n in spec.nodes if n.role == "control-plane")
    workers = len(spec.nodes) - cps
    parts = [f"{cps} control-plane"] if cps else []
    if workers or not parts:
        parts.append(f"{workers} worker{'s' if workers != 1 else ''}")
    return ", ".join(parts) + ", simulated"


def load_spec(paths: ClusterPaths) -> ClusterSpec:
    """The cluster's stored spec; ClusterError naming the file when it cannot be read."""
    try:
        return ClusterSpec.load(str(paths.root))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
        raise ClusterError(f"cannot read the config of cluster {json.dumps(paths.root.name)} from "
                           f"{paths.spec_file}: {detail}") from None


def read_port(paths: ClusterPaths) -> int | None:
    """The port the control plane listens (or last listened) on, from the port file."""
    return _read_int(paths.port_file)


def _existing(name: str) -> ClusterPaths:
    paths = ClusterPaths.for_name(name)
    if not paths.exists():
        raise ClusterError(f"unknown cluster {json.dumps(name)}; `phalanx get clusters` lists the clusters there are")
    return paths


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _read_bookkeeping(paths: ClusterPaths) -> dict:
    try:
        data = json.loads(paths.lifecycle_file.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_bookkeeping(paths: ClusterPaths, data: dict) -> None:
    _write_text(paths.lifecycle_file, json.dumps(data, indent=2) + "\n")


def _recorded_kubeconfigs(paths: ClusterPaths) -> list[Path]:
    entries = _read_bookkeeping(paths).get("kubeconfigs")
    return [Path(p) for p in entries if isinstance(p, str)] if isinstance(entries, list) else []


def _record_kubeconfig(paths: ClusterPaths, target: Path) -> None:
    data = _read_bookkeeping(paths)
    recorded = _recorded_kubeconfigs(paths)
    if target not in recorded:
        data["kubeconfigs"] = [str(p) for p in recorded + [target]]
        _write_bookkeeping(paths, data)


def parse_duration(text: str) -> float:
    """kind's `--wait`: a Go duration ("60s", "5m", "1m30s", "0") or a bare number of seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d*)?", text):
        return float(text)
    try:
        seconds = durations.parse_duration(text)
    except ValueError:
        seconds = -1.0
    if seconds < 0:
        raise ValueError(f"invalid duration {json.dumps(text)}: use a number with a unit, e.g. 60s, 5m, 1m30s")
    return seconds
