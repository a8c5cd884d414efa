"""kubeconfig entries for phalanx clusters, merged like kind does: never clobber anyone else's.

    path = kubeconfig_path(None)          # $KUBECONFIG's first entry, else ~/.kube/config
    merge_cluster_entry(path, "dev", "https://127.0.0.1:43121", ca_pem, token)
    remove_cluster_entry(path, "dev")
    print(render(standalone_kubeconfig("dev", server, ca_pem, token)))

Each cluster gets one `clusters`, `contexts` and `users` entry, all named `phalanx-<name>`
(kind names them `kind-<name>`), with `certificate-authority-data`, `server:` and a bearer
`token:`. Merging replaces only those three entries, leaves every other entry and key as it was,
and makes the context current. Removing drops them and, if the context was current, sets
`current-context` to "" (as kind does). Writes are atomic (temp file + rename, symlinks followed)
and serialized with client-go's `<file>.lock` convention so a concurrent kubectl does not lose an
update. A file that a merge writes a token into is left 0600, whatever its mode was (a bearer token
in a world-readable file is anyone's); a removal keeps the file's mode.
"""

from __future__ import annotations

import base64
import errno
import os
import time
from pathlib import Path
from typing import Any

import yaml

CONTEXT_PREFIX = "phalanx-"
LOCK_TIMEOUT_SECONDS = 10.0


class KubeconfigError(RuntimeError):
    pass


def context_name(cluster: str) -> str:
    """`phalanx-<cluster>`: the name of the cluster, user and context entries."""
    return f"{CONTEXT_PREFIX}{cluster}"


def kubeconfig_path(explicit: str | os.PathLike | None = None) -> Path:
    """Where to write: an explicit path, else the first entry of $KUBECONFIG, else ~/.kube/config."""
    if explicit:
        return Path(explicit).expanduser()
    for entry in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if entry.strip():
            return Path(entry.strip()).expanduser()
    return Path.home() / ".kube" / "config"


def server_url(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"https://{host}:{port}"


def cluster_entries(cluster: str, server: str, ca_pem: bytes, token: str) -> tuple[dict, dict, dict]:
    """The (cluster, context, user) entries for one phalanx cluster."""
    name = context_name(cluster)
    return (
        {"cluster": {"certificate-authority-data": base64.b64encode(ca_pem).decode(), "server": server},
         "name": name},
        {"context": {"cluster": name, "user": name}, "name": name},
        {"name": name, "user": {"token": token}},
    )


def standalone_kubeconfig(cluster: str, server: str, ca_pem: bytes, token: str) -> dict:
    """A complete kubeconfig holding only this cluster (what `phalanx get kubeconfig` prints)."""
    c, ctx, u = cluster_entries(cluster, server, ca_pem, token)
    return {"apiVersion": "v1", "clusters": [c], "contexts": [ctx], "current-context": ctx["name"],
            "kind": "Config", "preferences": {}, "users": [u]}


def render(config: dict) -> str:
    return yaml.safe_dump(config, default_flow_style=False, sort_keys=False)


def load(path: str | os.PathLike) -> dict:
    """Read a kubeconfig; a missing or empty file is an empty config."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML ({e}); not touching it") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping; not touching it")
    return data


def merge_cluster_entry(path: str | os.PathLike, cluster: str, server: str, ca_pem: bytes, token: str,
                        *, make_current: bool = True) -> Path:
    """Add or replace this cluster's entries in the kubeconfig at `path`; return the file written."""
    target = _resolve(path)
    with _KubeconfigLock(target):
        config = load(target)
        config.setdefault("apiVersion", "v1")
        config.setdefault("kind", "Config")
        config.setdefault("preferences", {})
        for section, entry in zip(("clusters", "contexts", "users"), cluster_entries(cluster, server, ca_pem, token)):
            entries = config.get(section)
            if not isinstance(entries, list):
                entries = []
            for i, existing in enumerate(entries):
                if isinstance(existing, dict) and existing.get("name") == entry["name"]:
                    entries[i] = entry
                    break
            else:
                entries.append(entry)
            config[section] = entries
        if make_current:
            config["current-context"] = context_name(cluster)
        _write_atomic(target, render(config), mode=0o600)
    return target


def remove_cluster_entry(path: str | os.PathLike, cluster: str) -> bool:
    """Drop this cluster's entries; reset current-context if it pointed at them. True if changed."""
    target = _resolve(path)
    if not target.exists():
        return False
    name = context_name(cluster)
    with _KubeconfigLock(target):
        config = load(target)
        changed = False
        for section in ("clusters", "contexts", "users"):
            entries = config.get(section)
            if not isinstance(entries, list):
                continue
            kept = [e for e in entries if not (isinstance(e, dict) and e.get("name") == name)]
            if len(kept) != len(entries):
                config[section] = kept
                changed = True
        if config.get("current-context") == name:
            config["current-context"] = ""
            changed = True
        if changed:
            _write_atomic(target, render(config))
    return changed


def has_cluster_entry(path: str | os.PathLike, cluster: str) -> bool:
    name = context_name(cluster)
    contexts = load(_resolve(path)).get("contexts") or []
    return any(isinstance(c, dict) and c.get("name") == name for c in contexts)


# ---------------------------------------------------------------------------------------------


def _resolve(path: str | os.PathLike) -> Path:
    """Follow symlinks so a linked ~/.kube/config is updated, not replaced by a plain file."""
    return Path(os.path.realpath(Path(path).expanduser()))


def _write_atomic(target: Path, text: str, mode: int | None = None) -> None:
    """Replace `target` with `text`, in `mode` (None: the file's current mode, 0600 for a new file)."""
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o600
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), mode)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class _KubeconfigLock:
    """client-go's lock: create `<file>.lock` exclusively, remove it when done."""

    def __init__(self, target: Path, timeout: float = LOCK_TIMEOUT_SECONDS):
        self.lock = target.with_name(target.name + ".lock")
        self.timeout = timeout

    def __enter__(self) -> "_KubeconfigLock":
        self.lock.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                os.close(os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                return self
            except OSError as e:
                if e.errno != errno.EEXIST:
                    raise KubeconfigError(f"cannot lock kubeconfig: {self.lock}: {e.strerror}") from None
                if time.monotonic() > deadline:
                    raise KubeconfigError(
                        f"timed out waiting for the kubeconfig lock {self.lock}; if no other kubectl or "
                        f"phalanx is running, remove that file") from None
                time.sleep(0.05)

    def __exit__(self, *exc: Any) -> None:
        self.lock.unlink(missing_ok=True)
