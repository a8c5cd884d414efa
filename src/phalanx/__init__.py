"""phalanx: a Kubernetes-compatible control plane with workload-aware scheduling and DRA.

The package mirrors Kubernetes' own components (see docs/architecture.md):
machinery (names, selectors, patches, errors), api (one module per API group),
store (versioned objects + watch), apiserver (HTTP), client (one Client protocol),
controllers, nodes (simulated kubelet and DRA drivers), dra, scheduler, cluster, cli.
"""

__version__ = "0.1.0"

# The Kubernetes releases a cluster can be: `phalanx.machinery.releases`.
