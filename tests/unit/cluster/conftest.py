"""The stand-in control plane the lifecycle tests start instead of `phalanx serve`.

The stand-in (`FAKE_SERVE`) meets the `serve(state_dir)` contract the real control plane must meet:
it reads the state dir through `load_serve_settings`, serves TLS with the cluster's certificate and
answers `GET /readyz` with `ok` to requests carrying the cluster token. The `env` fixture gives an
isolated PHALANX_HOME and KUBECONFIG and yields the mode the next stand-in starts in (set
`env["value"]`): ok, unready, crash, mute (never listens), ownport.
"""

from __future__ import annotations

import sys
import tempfile

import pytest

from phalanx.cluster import lifecycle

FAKE_SERVE = r'''
import http.server, ssl, sys
from phalanx.cluster.lifecycle import load_serve_settings

state_dir = sys.argv[sys.argv.index("--state-dir") + 1]
mode = sys.argv[sys.argv.index("--mode") + 1]
settings = load_serve_settings(state_dir)
print(f"fake control plane for {settings.spec.name} on {settings.host}:{settings.port}", flush=True)
if mode == "crash":
    print("fake control plane: cannot open the store", flush=True)
    sys.exit(3)
if mode == "mute":  # never listens
    import time
    time.sleep(3600)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("Authorization") != f"Bearer {settings.token}":
            self.send_response(401); self.end_headers(); return
        if self.path.split("?")[0] != "/readyz":
            self.send_response(404); self.end_headers(); return
        body = b"ok" if mode in ("ok", "ownport") else b"[-]informer-sync failed: reason withheld\nreadyz check failed"
        self.send_response(200 if mode in ("ok", "ownport") else 500)
        self.send_header("Content-Type", "text/plain"); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)

    def log_message(self, fmt, *args):
        print("request:", fmt % args, flush=True)

server = http.server.ThreadingHTTPServer((settings.host, 0 if mode == "ownport" else settings.port), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(settings.cert_file, settings.key_file)
server.socket = context.wrap_socket(server.socket, server_side=True)
if mode == "ownport":  # like a serve that binds a port of its own and reports it in the port file
    with open(f"{state_dir}/port", "w") as f:
        f.write(str(server.server_address[1]))
server.serve_forever()
'''


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An isolated PHALANX_HOME and KUBECONFIG; the stand-in control plane in mode `ok`."""
    script = tmp_path / "fake_serve.py"
    script.write_text(FAKE_SERVE)
    mode = {"value": "ok"}
    monkeypatch.setenv("PHALANX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.delenv("PHALANX_CLUSTER_NAME", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # logs a failed create keeps, temp export dirs
    monkeypatch.setattr(lifecycle, "control_plane_command",
                        lambda state_dir: [sys.executable, str(script), "--state-dir", str(state_dir),
                                           "--mode", mode["value"]])
    yield mode
    for name in lifecycle.list_clusters():
        lifecycle.delete_cluster(name)


