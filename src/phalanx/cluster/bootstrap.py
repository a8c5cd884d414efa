"""What a new cluster holds before anyone talks to it, created idempotently at every start.

- namespaces `default`, `kube-system`, `kube-public`, `kube-node-lease`;
- the `kubernetes` Service in `default`;
- the system PriorityClasses `system-cluster-critical` and `system-node-critical`;
- one Node per `NodeSpec` of the cluster config, Ready, with kind's labels and taints;
- kind's default StorageClass `standard` (local-path provisioner, WaitForFirstConsumer), whose
  volumes the simulated provisioner (`controllers/volumeprovisioner.py`) creates;
- API Priority and Fairness: upstream's default FlowSchemas and PriorityLevelConfigurations;
- one local, Available APIService per served group-version;
- the kube-system pods a kind cluster shows (`systempods.py`), simulated and bound to their nodes.

Objects that already exist (a restarted cluster) are left as they are.
"""

from __future__ import annotations

import logging
from typing import Any

from ..api.scheduling import SYSTEM_PRIORITY_CLASSES
from ..apiserver.rest import API
from ..machinery import errors
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339
from ..api.apiregistration import local_api_services
from ..api.flowcontrol import default_objects
from .spec import ClusterSpec, NodeSpec
from .systempods import owner_reference, system_pods

log = logging.getLogger("phalanx.bootstrap")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
KUBELET_VERSION = "v1.36.0"

# kind's default StorageClass (its local-path-provisioner manifest).
DEFAULT_STORAGE_CLASS = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                 "labels": {"addonmanager.kubernetes.io/mode": "EnsureExists"}},
    "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer",
}


def _ensure(api: API, group: str, version: str, plural: str, namespace: str, obj: dict,
            status: dict | None = None) -> dict | None:
    try:
        rt = api.resource(group, version, plural)
    except errors.StatusError:
        log.warning("bootstrap: %s/%s %s is not served; skipped", group, version, plural)
        return None
    name = obj["metadata"]["name"]
    try:
        return api.get(rt, namespace if rt.namespaced else "", name)
    except errors.StatusError as e:
        if e.code != 404:
            raise
    created = api.create(rt, namespace, obj)
    if status is not None and "status" in rt.subresources:
        new = deep_copy(created)
        new["status"] = status
        created = api.update(rt, namespace, name, new, subresource="status")
    return created


def node_internal_ip(index: int) -> str:
    return f"172.{18 + index // 64000}.{(index // 250) % 256}.{index % 250 + 2}"


def pod_cidr(index: int) -> str:
    """kind's 10.244.<i>.0/24 for the first 256 nodes; beyond, /24s from 100.64.0.0/10."""
    if index < 256:
        return f"10.244.{index}.0/24"
    return f"100.{64 + (index // 256) % 64}.{index % 256}.0/24"


def node_object(node: NodeSpec, index: int, now: str | None = None) -> tuple[dict, dict]:
    """The Node (and its status) for one NodeSpec; `now` stamps the conditions (default: the wall
    clock; bootstrap passes the API server's clock)."""
    now = now or now_rfc3339()
    capacity = dict(node.capacity)
    capacity.setdefault("ephemeral-storage", "100Gi")
    capacity.setdefault("hugepages-1Gi", "0")
    capacity.setdefault("hugepages-2Mi", "0")
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", **node.labels}
    if node.role == "control-plane":
        labels.setdefault("node-role.kubernetes.io/control-plane", "")
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": node.name, "labels": labels,
                        "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                        "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
           "spec": {"podCIDR": pod_cidr(index), "podCIDRs": [pod_cidr(index)],
                    "providerID": f"phalanx://{node.name}"}}
    if node.taints:
        obj["spec"]["taints"] = [dict(t) for t in node.taints]
    status = {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": [
            _cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available", now),
            _cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now),
            _cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", now),
            _cond("Ready", "True", "KubeletReady", "kubelet is posting ready status", now),
        ],
        "addresses": [{"type": "InternalIP", "address": node_internal_ip(index)},
                      {"type": "Hostname", "address": node.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": f"{index:032x}", "systemUUID": f"{index:032x}", "bootID": f"{index:032x}",
                     "kernelVersion": "6.1.0-phalanx", "osImage": "phalanx simulated node",
                     "containerRuntimeVersion": "phalanx://0.1.0", "kubeletVersion": KUBELET_VERSION,
                     "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
    }
    return obj, status


def _cond(t: str, s: str, reason: str, message: str, now: str) -> dict:
    return {"type": t, "status": s, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now}


def bootstrap(api: API, spec: ClusterSpec) -> None:
    for ns in SYSTEM_NAMESPACES:
        _ensure(api, "", "v1", "namespaces", "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    _ensure(api, "", "v1", "services", "default", {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                 "sessionAffinity": "None"}})
    for pc in SYSTEM_PRIORITY_CLASSES:
        _ensure(api, "scheduling.k8s.io", "v1", "priorityclasses", "", deep_copy(pc))
    _ensure(api, "storage.k8s.io", "v1", "storageclasses", "", deep_copy(DEFAULT_STORAGE_CLASS))
    nodes = {}
    for i, node in enumerate(spec.nodes):
        obj, status = node_object(node, i, now_rfc3339(api.now()))
        nodes[node.name] = _ensure(api, "", "v1", "nodes", "", obj, status)
    _ensure_cluster_objects(api, spec, nodes)


def _ensure_api_services(api: API, now: str) -> None:
    """One APIService per served group-version; those bootstrap made for group-versions no longer
    served (another runtime config after a restart) go, as kube-apiserver's autoregistration does."""
    wanted = local_api_services(((rt.group, rt.version) for rt in api.types), now)
    for svc in wanted:
        status = svc.pop("status")
        _ensure(api, "apiregistration.k8s.io", "v1", "apiservices", "", svc, status)
    try:
        rt = api.resource("apiregistration.k8s.io", "v1", "apiservices")
    except errors.StatusError:
        return
    names = {svc["metadata"]["name"] for svc in wanted}
    for old in api.list(rt, None, label_selector="kube-aggregator.kubernetes.io/automanaged=onstart")["items"]:
        if old["metadata"]["name"] not in names:
            api.delete(rt, "", old["metadata"]["name"])


def _ensure_cluster_objects(api: API, spec: ClusterSpec, nodes: dict[str, dict | None]) -> None:
    now = now_rfc3339()
    for plural, obj in default_objects():
        level = obj["spec"].get("priorityLevelConfiguration", {}).get("name")
        status = {"conditions": [{"type": "Dangling", "status": "False", "reason": "Found", "lastTransitionTime": now,
                                  "message": f"This FlowSchema references the PriorityLevelConfiguration object "
                                             f"named \"{level}\" and it exists"}]} if level else None
        _ensure(api, "flowcontrol.apiserver.k8s.io", "v1", plural, "", obj, status)
    _ensure_api_services(api, now)
    version = getattr(spec, "kubernetes_version", None) or KUBELET_VERSION
    version = version if version.startswith("v") else f"v{version}"
    for pod in system_pods(spec, version):
        node = nodes.get(pod["spec"]["nodeName"])
        if node is not None and "kubernetes.io/config.mirror" in pod["metadata"]["annotations"]:
            pod["metadata"]["ownerReferences"] = [owner_reference(node)]
        _ensure(api, "", "v1", "pods", "kube-system", pod)
