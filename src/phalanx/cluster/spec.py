"""The normalized description of a cluster that every component starts from.

`phalanx create cluster` turns a kind config (`kind.x-k8s.io/v1alpha4`) or a phalanx config
(`phalanx.dev/v1alpha1`) into a `ClusterSpec`, writes it to `<state dir>/cluster.json` and starts
`phalanx serve --state-dir <state dir>`, which reads it back with `ClusterSpec.load`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from phalanx.machinery.releases import release_of


@dataclass
class NodeSpec:
    name: str
    role: str = "worker"  # control-plane | worker
    labels: dict[str, str] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=lambda: {"cpu": "8", "memory": "32Gi", "pods": "110"})
    taints: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ClusterSpec:
    name: str = "phalanx"
    nodes: list[NodeSpec] = field(default_factory=list)
    feature_gates: dict[str, bool] = field(default_factory=dict)  # explicit overrides only
    runtime_config: dict[str, str] = field(default_factory=dict)
    storage: str = "sqlite"  # sqlite | memory
    listen_address: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port at create time
    # Simulated DRA drivers; None means "the default gpu.example.com driver on every worker".
    dra_drivers: list[dict[str, Any]] | None = None
    ignored_fields: list[str] = field(default_factory=list)  # config fields accepted but unused
    kubelet: dict[str, Any] = field(default_factory=dict)  # simulated kubelets: stage delays (s), stage files
    scheduler: dict[str, Any] = field(default_factory=dict)  # permitWaitingTimeout, config (KubeSchedulerConfiguration)
    # kube-controller-manager settings (nodeMonitorGracePeriod, nodeEvictionRate, ...; seconds for durations)
    controller_manager: dict[str, Any] = field(default_factory=dict)
    # Scheduled failures (`failures:` of a phalanx config, normalized by cluster.failureconfig).
    failures: list[dict[str, Any]] = field(default_factory=list)
    # The Kubernetes version the cluster is (`v1.36.4`, `v1.37.1`); state dirs written before
    # clusters had a version are 1.36 clusters.
    kubernetes_version: str = "v1.36.4"
    event_ttl: float = 3600.0  # seconds an Event lives after its last write (kube-apiserver's --event-ttl)
    version_reason: str = ""  # why this version, when the config did not name one

    @property
    def release(self) -> str:
        """"1.36" or "1.37": which release's APIs, gates and behaviour the cluster has."""
        return release_of(self.kubernetes_version)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ClusterSpec":
        d = dict(d)
        d["nodes"] = [NodeSpec(**n) for n in d.get("nodes", [])]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    def save(self, state_dir: str) -> None:
        os.makedirs(state_dir, exist_ok=True)
        tmp = os.path.join(state_dir, "cluster.json.tmp")
        with open(tmp, "w") as f:
            f.write(self.to_json())
        os.replace(tmp, os.path.join(state_dir, "cluster.json"))

    @classmethod
    def load(cls, state_dir: str) -> "ClusterSpec":
        with open(os.path.join(state_dir, "cluster.json")) as f:
            return cls.from_dict(json.load(f))


def default_nodes(cluster_name: str, workers: int = 1) -> list[NodeSpec]:
    """kind's naming: `<name>-control-plane`, `<name>-worker`, `<name>-worker2`, ..."""
    nodes = [NodeSpec(f"{cluster_name}-control-plane", "control-plane")]
    for i in range(workers):
        nodes.append(NodeSpec(f"{cluster_name}-worker" + ("" if i == 0 else str(i + 1)), "worker"))
    return nodes
