"""`phalanx export logs`: collect what someone needs to understand a cluster into one directory, as `kind export logs` does.

    result = export_logs("phalanx", None, progress=print)   # None: a new temporary directory
    print(result.directory, result.dumped, result.notes)

The directory gets:

    phalanx-version.txt      the phalanx that exports (and Python, platform)
    kubernetes-version.txt   the cluster's Kubernetes version (and the API's /version when it answers)
    status.json              what `phalanx get clusters -o json` says about the cluster now
    cluster.json             the cluster's stored config (its ClusterSpec)
    lifecycle.json, port     the lifecycle's bookkeeping
    control-plane.log        the control plane's log (stdout and stderr, all runs)
    nodes/<node>.txt         each node described, as `kubectl describe node` does   } when the API
    cluster-info/...         every served resource as YAML per namespace, events,   } answers; see
                             pod logs                                               } clusterdump.py
    state.db                 a consistent copy of the stored state                  } when it does not
    export.txt               what was collected, and what was skipped and why

Credentials never leave the state dir: the PKI's private keys and the bearer token are not copied,
and Secrets in the dump have their values redacted. A stopped (or crashed, or unanswering)
cluster is not started: its files on disk are copied and the dump is skipped, which `export.txt`
and `ExportResult.notes` say.
"""

from __future__ import annotations

import asyncio
import json
import platform
import shutil
import sqlite3
import ssl
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import phalanx
from phalanx.client.http import HTTPClient
from phalanx.cluster import lifecycle
from phalanx.cluster.clusterdump import MAX_POD_LOG_CONTAINERS, DumpSummary, dump_cluster
from phalanx.cluster.lifecycle import ClusterError, ClusterPaths, Progress
from phalanx.cluster.status import ClusterInfo, describe_cluster
from phalanx.machinery.errors import StatusError

COPIED_FILES = ("cluster.json", "lifecycle.json", "port", "control-plane.log")
DUMP_REQUEST_TIMEOUT_SECONDS = 120.0


@dataclass
class ExportResult:
    directory: Path
    dumped: bool
    notes: list[str] = field(default_factory=list)
    summary: DumpSummary | None = None


def export_logs(name: str, directory: str | Path | None = None, *,
                progress: Progress = lambda _: None) -> ExportResult:
    """Collect the cluster's logs, config, version and (when its API answers) a dump into
    `directory` (created if missing; default a new temporary directory). ClusterError when the
    cluster is unknown or the directory cannot be written."""
    info = describe_cluster(name)
    paths = ClusterPaths.for_name(name)
    target = _prepare(directory, name)
    result = ExportResult(directory=target, dumped=False)
    try:
        _write_basics(target, paths, info)
        if info.running and info.status != "NotAnswering":
            progress(f" • Dumping the cluster's objects, node descriptions and pod logs from {info.server} ...")
            _dump(target, paths, info, result)
        else:
            result.notes.append(_skip_reason(info))
        if not result.dumped:
            _copy_state(paths, target, result)
        _write_summary(target, info, result)
    except OSError as e:
        raise ClusterError(f"cannot write the logs of cluster {json.dumps(name)} to {target}: "
                           f"{e.strerror or e}") from None
    return result


def _prepare(directory: str | Path | None, name: str) -> Path:
    if directory is None:
        return Path(tempfile.mkdtemp(prefix=f"phalanx-logs-{name}-"))
    target = Path(directory).expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise ClusterError(f"cannot export logs to {target}: it exists and is not a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ClusterError(f"cannot export logs to {target}: {e.strerror or e}") from None
    return target


def _write_basics(target: Path, paths: ClusterPaths, info: ClusterInfo) -> None:
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    (target / "phalanx-version.txt").write_text(
        f"phalanx v{phalanx.__version__} python{platform.python_version()} {sys.platform}/{machine}\n")
    (target / "kubernetes-version.txt").write_text((info.kubernetes_version or "<unknown>") + "\n")
    (target / "status.json").write_text(json.dumps(info.to_json(), indent=2) + "\n")
    for name in COPIED_FILES:
        source = paths.root / name
        if source.is_file():
            shutil.copyfile(source, target / name)


def _skip_reason(info: ClusterInfo) -> str:
    why = {"Stopped": "the cluster is stopped", "Crashed": "the cluster's control plane is not running (crashed)",
           "NotAnswering": "the cluster's API does not answer"}.get(info.status, f"the cluster is {info.status}")
    return (f"The dump of objects, node descriptions and pod logs was skipped: {why}. Copied what is on disk "
            f"(config, log, stored state); `phalanx start cluster --name {info.name}` and export again for a dump."
            if info.status != "NotAnswering" else
            f"The dump of objects, node descriptions and pod logs was skipped: {why} (see the control plane's log "
            f"{info.log_file}). Copied what is on disk (config, log, stored state).")


def _client(paths: ClusterPaths, info: ClusterInfo) -> HTTPClient:
    context = ssl.create_default_context(cafile=str(paths.pki.ca_cert_file))
    return HTTPClient(info.server, token=paths.pki.token, ssl_context=context, field_manager="phalanx-export-logs",
                      request_timeout=DUMP_REQUEST_TIMEOUT_SECONDS)


def _dump(target: Path, paths: ClusterPaths, info: ClusterInfo, result: ExportResult) -> None:
    async def run() -> DumpSummary:
        client = _client(paths, info)
        try:
            return await dump_cluster(client, target / "cluster-info", target / "nodes")
        finally:
            await client.close()
    code, version = lifecycle.api_get(info.host, info.port, paths.pki.ca_cert_file, paths.pki.token, "/version")
    if code == 200:
        with open(target / "kubernetes-version.txt", "a") as f:
            f.write(f"GET /version: {version.strip()}\n")
    try:
        result.summary = asyncio.run(run())
    except StatusError as e:
        result.notes.append(f"The dump was cut short: {e.message} (see the control plane's log {info.log_file}).")
        return
    result.dumped = True
    if result.summary.errors:
        result.notes.append(f"{len(result.summary.errors)} resource(s) could not be listed; see export.txt.")
    if result.summary.pod_logs_left_out:
        result.notes.append(f"The logs of {result.summary.pod_logs_left_out} container(s) were left out: at most "
                            f"{MAX_POD_LOG_CONTAINERS} are fetched, those of troubled pods first.")


def _copy_state(paths: ClusterPaths, target: Path, result: ExportResult) -> None:
    """A consistent copy of state.db (the WAL included), read-only: the control plane may be running."""
    if not paths.state_db.is_file():
        return
    try:
        source = sqlite3.connect(f"file:{paths.state_db}?mode=ro", uri=True, timeout=5.0)
        copy = sqlite3.connect(target / "state.db")
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
    except sqlite3.Error as e:
        result.notes.append(f"Could not copy the stored state {paths.state_db}: {e}")


def _write_summary(target: Path, info: ClusterInfo, result: ExportResult) -> None:
    lines = [f"phalanx export logs of cluster {json.dumps(info.name)} ({info.status}, Kubernetes "
             f"{info.kubernetes_version or '<unknown>'}), from {info.state_dir}", ""]
    summary = result.summary
    if summary is not None:
        lines += [f"cluster-info/: {summary.objects} objects of {summary.resources} resources in {summary.files} files; "
                  f"{summary.pod_logs} container logs",
                  f"nodes/: {summary.nodes_described} nodes described",
                  "Secret values are redacted."]
        lines += [f"error: {e}" for e in summary.errors]
    lines += result.notes
    lines += ["", "Not copied: the cluster's private keys (pki/*.key) and bearer token."]
    (target / "export.txt").write_text("\n".join(lines) + "\n")
