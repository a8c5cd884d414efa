"""Reading a kubeconfig the way kubectl does, to the few settings an HTTP client needs.

    cfg = load_kubeconfig()                      # $KUBECONFIG (first file) or ~/.kube/config
    cfg = load_kubeconfig("kc.yaml", context="kind-phalanx")
    cfg.server, cfg.token, cfg.ssl_context()

Supported: `server`, `certificate-authority-data` / `certificate-authority`,
`insecure-skip-tls-verify`, `tls-server-name`, `token` / `tokenFile`,
`client-certificate(-data)` + `client-key(-data)`. Relative file paths are relative to the
kubeconfig's directory, as in client-go.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class KubeconfigError(Exception):
    pass


@dataclass
class ClusterConfig:
    server: str
    token: str | None = None
    ca_data: bytes | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    context: str = ""

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.server.startswith("https://"):
            return None
        ctx = ssl.create_default_context()
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode())
        if self.client_cert_data and self.client_key_data:
            # ssl loads a certificate chain from files only: write both to a private temp file.
            fd, path = tempfile.mkstemp(prefix="phalanx-client-", suffix=".pem")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(self.client_cert_data.rstrip(b"\n") + b"\n" + self.client_key_data)
                ctx.load_cert_chain(path)
            finally:
                os.unlink(path)
        return ctx


def default_kubeconfig_path() -> Path:
    env = os.environ.get("KUBECONFIG")
    if env:
        for p in env.split(os.pathsep):
            if p:
                return Path(p).expanduser()
    return Path.home() / ".kube" / "config"


def _named(entries: list[dict] | None, name: str, what: str) -> dict:
    for e in entries or []:
        if e.get("name") == name:
            return e.get(what) or {}
    raise KubeconfigError(f'{what} "{name}" not found in kubeconfig')


def _file_or_data(section: dict, data_key: str, file_key: str, base: Path) -> bytes | None:
    if section.get(data_key):
        return base64.b64decode(section[data_key])
    if section.get(file_key):
        p = Path(section[file_key]).expanduser()
        if not p.is_absolute():
            p = base / p
        return p.read_bytes()
    return None


def parse_kubeconfig(doc: dict[str, Any], *, context: str | None = None, base: Path = Path(".")) -> ClusterConfig:
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise KubeconfigError("no context chosen and the kubeconfig has no current-context")
    ctx = _named(doc.get("contexts"), ctx_name, "context")
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster")
    user = _named(doc.get("users"), ctx["user"], "user") if ctx.get("user") else {}
    server = (cluster.get("server") or "").rstrip("/")
    if not server:
        raise KubeconfigError(f'cluster "{ctx.get("cluster")}" has no server')
    token = user.get("token")
    if not token and user.get("tokenFile"):
        p = Path(user["tokenFile"]).expanduser()
        token = (p if p.is_absolute() else base / p).read_text().strip()
    return ClusterConfig(
        server=server,
        token=token or None,
        ca_data=_file_or_data(cluster, "certificate-authority-data", "certificate-authority", base),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name"),
        client_cert_data=_file_or_data(user, "client-certificate-data", "client-certificate", base),
        client_key_data=_file_or_data(user, "client-key-data", "client-key", base),
        context=ctx_name,
    )


def load_kubeconfig(path: str | os.PathLike | None = None, context: str | None = None) -> ClusterConfig:
    p = Path(path).expanduser() if path else default_kubeconfig_path()
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except FileNotFoundError:
        raise KubeconfigError(f"kubeconfig {p} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise KubeconfigError(f"cannot read kubeconfig {p}: {getattr(e, 'strerror', None) or e}") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        raise KubeconfigError(f"kubeconfig {p} is not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {p} is not a kubeconfig: expected a mapping, got {type(doc).__name__}")
    return parse_kubeconfig(doc, context=context, base=p.parent)
