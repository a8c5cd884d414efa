"""`phalanx dashboard`: a live web view of a cluster's topology, gangs, GPUs and why pods wait.

The server (`server.py`) reads the cluster through any `Client` (the CLI gives it the HTTP client
of the user's kubeconfig), watches it with informers and pushes one JSON document (`model.py`) to
the page over Server-Sent Events. The page (`static/`: plain HTML, CSS and JavaScript, drawn on a
<canvas>) ships inside the package, so the dashboard works offline.
"""

from .model import snapshot, topology_levels
from .server import Auth, Dashboard, build_app, serve

__all__ = ["Auth", "Dashboard", "build_app", "serve", "snapshot", "topology_levels"]
