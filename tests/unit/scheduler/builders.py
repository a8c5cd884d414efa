"""Builders for scheduler tests, after upstream's st.MakePod() / st.MakeNode().

    make_pod("p").req(cpu="100m", memory="1Gi").node_selector(zone="a").toleration(key="k").obj()
    make_node("n").capacity(cpu="4", memory="32Gi").label("zone", "a").taint("k", "v").obj()

Each `req()` adds one container with those requests; extended resources go in a dict:
`req({"example.com/gpu": "1"})`. `capacity()` sets capacity and allocatable (110 pods unless given).
"""

from __future__ import annotations

import copy
from typing import Any, Optional


def _resources(rl: Optional[dict[str, Any]], kw: dict[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in {**(rl or {}), **kw}.items():
        out[k.replace("_", "-") if k == "ephemeral_storage" else k] = str(v)
    return out


class PodBuilder:
    def __init__(self, name: str):
        self._pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [], "schedulerName": "default-scheduler"},
            "status": {"phase": "Pending"},
        }

    @property
    def _spec(self) -> dict[str, Any]:
        return self._pod["spec"]

    def namespace(self, ns: str) -> "PodBuilder":
        self._pod["metadata"]["namespace"] = ns
        return self

    def uid(self, uid: str) -> "PodBuilder":
        self._pod["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str) -> "PodBuilder":
        self._pod["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> "PodBuilder":
        self._pod["metadata"].setdefault("labels", {}).update(labels)
        return self

    def priority(self, p: int) -> "PodBuilder":
        self._spec["priority"] = p
        return self

    def req(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "PodBuilder":
        n = len(self._spec["containers"])
        self._spec["containers"].append({"name": f"c{n}", "image": "pause",
                                         "resources": {"requests": _resources(rl, kw)}})
        return self

    def container(self) -> "PodBuilder":
        """A container without requests."""
        n = len(self._spec["containers"])
        self._spec["containers"].append({"name": f"c{n}", "image": "pause"})
        return self

    def init_req(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "PodBuilder":
        inits = self._spec.setdefault("initContainers", [])
        inits.append({"name": f"i{len(inits)}", "image": "pause", "resources": {"requests": _resources(rl, kw)}})
        return self

    def sidecar_req(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "PodBuilder":
        inits = self._spec.setdefault("initContainers", [])
        inits.append({"name": f"s{len(inits)}", "image": "pause", "restartPolicy": "Always",
                      "resources": {"requests": _resources(rl, kw)}})
        return self

    def overhead(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "PodBuilder":
        self._spec["overhead"] = _resources(rl, kw)
        return self

    def pod_level_req(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "PodBuilder":
        self._spec["resources"] = {"requests": _resources(rl, kw)}
        return self

    def node_selector(self, selector: Optional[dict[str, str]] = None, **kw: str) -> "PodBuilder":
        self._spec["nodeSelector"] = {**(selector or {}), **kw}
        return self

    def _node_affinity(self) -> dict[str, Any]:
        return self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})

    def node_affinity_in(self, key: str, values: list[str], operator: str = "In") -> "PodBuilder":
        """Adds one required NodeSelectorTerm with a single expression (terms are ORed)."""
        req = self._node_affinity().setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        req["nodeSelectorTerms"].append({"matchExpressions": [{"key": key, "operator": operator, "values": values}]})
        return self

    def node_affinity_not_in(self, key: str, values: list[str]) -> "PodBuilder":
        return self.node_affinity_in(key, values, "NotIn")

    def node_affinity_names(self, names: list[str]) -> "PodBuilder":
        """A required term `matchFields: metadata.name In names` (how DaemonSet pods pin a node)."""
        req = self._node_affinity().setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        req["nodeSelectorTerms"].append({"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]})
        return self

    def preferred_node_affinity(self, weight: int, key: str, values: list[str], operator: str = "In") -> "PodBuilder":
        prefs = self._node_affinity().setdefault("preferredDuringSchedulingIgnoredDuringExecution", [])
        prefs.append({"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": operator, "values": values}]}})
        return self

    def toleration(self, key: str = "", value: str = "", effect: str = "", operator: str = "") -> "PodBuilder":
        t: dict[str, Any] = {}
        if key:
            t["key"] = key
        if operator:
            t["operator"] = operator
        elif not value and not key:
            t["operator"] = "Exists"
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> "PodBuilder":
        if not self._spec["containers"]:
            self.container()
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        self._spec["containers"][-1].setdefault("ports", []).append(p)
        return self

    def spread(self, max_skew: int, topology_key: str, match_labels: Optional[dict[str, str]] = None,
               when: str = "DoNotSchedule", min_domains: Optional[int] = None,
               match_label_keys: Optional[list[str]] = None, node_taints_policy: Optional[str] = None,
               node_affinity_policy: Optional[str] = None) -> "PodBuilder":
        c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when,
                             "labelSelector": {"matchLabels": dict(match_labels or {})}}
        if min_domains is not None:
            c["minDomains"] = min_domains
        if match_label_keys:
            c["matchLabelKeys"] = match_label_keys
        if node_taints_policy:
            c["nodeTaintsPolicy"] = node_taints_policy
        if node_affinity_policy:
            c["nodeAffinityPolicy"] = node_affinity_policy
        self._spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def _pod_affinity(self, kind: str, topology_key: str, match_labels: dict[str, str], weight: Optional[int],
                      namespaces: Optional[list[str]]) -> "PodBuilder":
        term: dict[str, Any] = {"labelSelector": {"matchLabels": match_labels}, "topologyKey": topology_key}
        if namespaces is not None:
            term["namespaces"] = namespaces
        aff = self._spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight is None:
            aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            aff.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term})
        return self

    def pod_affinity(self, topology_key: str, match_labels: dict[str, str], weight: Optional[int] = None,
                     namespaces: Optional[list[str]] = None) -> "PodBuilder":
        """Required when `weight` is None, else preferred with that weight."""
        return self._pod_affinity("podAffinity", topology_key, match_labels, weight, namespaces)

    def pod_anti_affinity(self, topology_key: str, match_labels: dict[str, str], weight: Optional[int] = None,
                          namespaces: Optional[list[str]] = None) -> "PodBuilder":
        return self._pod_affinity("podAntiAffinity", topology_key, match_labels, weight, namespaces)

    def node(self, name: str) -> "PodBuilder":
        self._spec["nodeName"] = name
        self._pod["status"]["phase"] = "Running"
        return self

    def nominated_node(self, name: str) -> "PodBuilder":
        self._pod["status"]["nominatedNodeName"] = name
        return self

    def start_time(self, ts: str) -> "PodBuilder":
        self._pod["status"]["startTime"] = ts
        return self

    def preemption_policy(self, policy: str) -> "PodBuilder":
        self._spec["preemptionPolicy"] = policy
        return self

    def scheduling_gates(self, *names: str) -> "PodBuilder":
        self._spec["schedulingGates"] = [{"name": n} for n in names]
        return self

    def terminating(self, ts: str = "2026-01-01T00:00:00Z") -> "PodBuilder":
        self._pod["metadata"]["deletionTimestamp"] = ts
        return self

    def condition(self, type_: str, status: str, reason: str = "") -> "PodBuilder":
        self._pod["status"].setdefault("conditions", []).append({"type": type_, "status": status, "reason": reason})
        return self

    def obj(self) -> dict[str, Any]:
        pod = copy.deepcopy(self._pod)
        if not pod["spec"]["containers"]:
            pod["spec"]["containers"].append({"name": "c0", "image": "pause"})
        return pod


class NodeBuilder:
    def __init__(self, name: str):
        self._node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"capacity": {}, "allocatable": {}},
        }

    def capacity(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "NodeBuilder":
        res = _resources(rl, kw)
        res.setdefault("pods", "110")
        self._node["status"]["capacity"] = dict(res)
        self._node["status"]["allocatable"] = dict(res)
        return self

    def allocatable(self, rl: Optional[dict[str, Any]] = None, **kw: Any) -> "NodeBuilder":
        self._node["status"]["allocatable"] = _resources(rl, kw)
        return self

    def label(self, key: str, value: str) -> "NodeBuilder":
        self._node["metadata"]["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> "NodeBuilder":
        t = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self._node["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, value: bool = True) -> "NodeBuilder":
        self._node["spec"]["unschedulable"] = value
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._node)


def make_pod(name: str = "p") -> PodBuilder:
    return PodBuilder(name)


def make_node(name: str = "n") -> NodeBuilder:
    return NodeBuilder(name)
