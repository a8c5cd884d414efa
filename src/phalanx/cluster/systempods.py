"""The kube-system pods a kind cluster shows, created at bootstrap: simulated, so `kubectl get pods
-n kube-system` looks as users expect.

On the first control-plane node: the static pods' mirror pods `etcd-<node>`,
`kube-apiserver-<node>`, `kube-controller-manager-<node>` and `kube-scheduler-<node>` (labels
`component=<name>`, `tier=control-plane`, owned by their Node as mirror pods are), and two
`coredns-<hash>-<suffix>` pods (`k8s-app=kube-dns`). On every node: `kube-proxy-<suffix>` and
`kindnet-<suffix>`. Names, labels, priority classes and tolerations are kind's; the pods are bound
(`nodeName` set) so the scheduler never sees them, and the simulated kubelet runs them. They carry
`phalanx.dev/simulated: "true"` and request no resources, so they take no room from workloads
(upstream's coredns and control-plane pods do request CPU and memory). Suffixes are derived from the
node name, so a restart finds the same pods. Clusters larger than `MAX_NODES_WITH_NODE_PODS` get the
control-plane pods only: thousands of simulated nodes would otherwise carry thousands of idle pods.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .spec import ClusterSpec, NodeSpec

Obj = dict[str, Any]
SIMULATED = {"phalanx.dev/simulated": "true"}
MAX_NODES_WITH_NODE_PODS = 100
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the characters of upstream's generated name suffixes
_CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
_IMAGES = {"etcd": "registry.k8s.io/etcd:3.6.5-0", "coredns": "registry.k8s.io/coredns/coredns:v1.12.1",
           "kindnet": "docker.io/kindest/kindnetd:v20250512-df8de77b"}


def _suffix(seed: str, n: int = 5) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:n])


def _pod(name: str, node: str, labels: dict[str, str], container: str, image: str, priority_class: str,
         annotations: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "kube-system", "labels": labels,
                         "annotations": {**SIMULATED, **(annotations or {})}},
            "spec": {"nodeName": node, "priorityClassName": priority_class, "automountServiceAccountToken": False,
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": container, "image": image}]}}


def _mirror_pod(component: str, node: str, version: str) -> Obj:
    image = _IMAGES.get(component, f"registry.k8s.io/{component}:{version}")
    pod = _pod(f"{component}-{node}", node, {"component": component, "tier": "control-plane"}, component, image,
               "system-node-critical", {"kubernetes.io/config.source": "file",
                                        "kubernetes.io/config.mirror": _suffix(component + node, 32)})
    pod["spec"]["hostNetwork"] = True
    return pod


def _coredns(node: str, index: int) -> Obj:
    template_hash = _suffix("coredns", 10)
    name = f"coredns-{template_hash}-{_suffix(f'coredns-{index}')}"
    return _pod(name, node, {"k8s-app": "kube-dns", "pod-template-hash": template_hash}, "coredns",
                _IMAGES["coredns"], "system-cluster-critical")


def _node_pods(node: str, version: str) -> list[Obj]:
    proxy = _pod(f"kube-proxy-{_suffix('kube-proxy-' + node)}", node, {"k8s-app": "kube-proxy"}, "kube-proxy",
                 f"registry.k8s.io/kube-proxy:{version}", "system-node-critical")
    kindnet = _pod(f"kindnet-{_suffix('kindnet-' + node)}", node, {"app": "kindnet", "k8s-app": "kindnet",
                                                                   "tier": "node"},
                   "kindnet-cni", _IMAGES["kindnet"], "system-node-critical")
    for pod in (proxy, kindnet):
        pod["spec"]["hostNetwork"] = True
    return [proxy, kindnet]


def system_pods(spec: ClusterSpec, version: str) -> list[Obj]:
    """The kube-system pods of a cluster of `spec`'s nodes (none without a control-plane node)."""
    control_planes: list[NodeSpec] = [n for n in spec.nodes if n.role == "control-plane"]
    if not control_planes:
        return []
    cp = control_planes[0].name
    pods = [_mirror_pod(c, cp, version) for c in _CONTROL_PLANE]
    pods += [_coredns(cp, i) for i in range(2)]
    if len(spec.nodes) <= MAX_NODES_WITH_NODE_PODS:
        for node in spec.nodes:
            pods += _node_pods(node.name, version)
    return pods


def owner_reference(node: Obj) -> Obj:
    """A mirror pod's owner: its Node."""
    return {"apiVersion": "v1", "kind": "Node", "name": node["metadata"]["name"], "uid": node["metadata"]["uid"],
            "controller": True}
