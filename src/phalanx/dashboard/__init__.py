"""`phalanx dashboard`: a live web view of a cluster's topology, gangs, GPUs and why pods wait.

The server (`server.py`) reads the cluster through any `Client` (the CLI gives it the HTTP client
of the user's kubeconfig) and watches it with informers; `state.ClusterView` keeps one row per
thing the page draws (rows from `model.py` and `workloads.py`) and turns changes into patches. The
page gets the whole document once, then patches, over Server-Sent Events; the timeline comes from
the cluster's Events (`timeline.py`), the Metrics view from the API server's `/metrics`
(`scrape.py`). The page (`static/`: plain HTML, CSS and JavaScript, drawn on a <canvas>) ships
inside the package, so the dashboard works offline.
"""

from .model import snapshot, topology_levels
from .server import Auth, Dashboard, build_app, serve
from .state import ClusterView

__all__ = ["Auth", "ClusterView", "Dashboard", "build_app", "serve", "snapshot", "topology_levels"]
