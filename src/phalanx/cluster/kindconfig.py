"""kind's cluster config (`kind.x-k8s.io/v1alpha4`, `kind: Cluster`), accepted verbatim.

phalanx honours `name`, `featureGates`, `runtimeConfig`, `nodes[].role`, `nodes[].labels`,
`nodes[].image` (its tag is the cluster's Kubernetes version: `kindest/node:v1.37.1`),
`networking.apiServerAddress` / `apiServerPort`, and from kubeadm patches the API server's
`runtime-config`, components' `feature-gates`, the kubelet's `featureGates` and `node-labels`.
Everything else kind knows is type-checked and listed in `ClusterSpec.ignored_fields`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from phalanx.cluster.configparse import (CONTROL_PLANE, ROLES, WORKER, GateOverrides, apply_feature_gates,
                                         build_kind_nodes, check_address, decide_version, image_version,
                                         read_header)
from phalanx.cluster.spec import ClusterSpec
from phalanx.machinery.names import label_value_errors, qualified_name_errors
from phalanx.machinery.releases import UnsupportedVersion, release_of
from phalanx.machinery.strictyaml import GO_BOOLS, DocumentReader, quote

KIND_API_VERSION = "kind.x-k8s.io/v1alpha4"

# kind v1alpha4 fields, in kind's own order. Honoured ones are parsed; the rest are ignored.
KIND_CLUSTER_FIELDS = ("kind", "apiVersion", "name", "nodes", "networking", "featureGates",
                       "runtimeConfig", "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902",
                       "containerdConfigPatches", "containerdConfigPatchesJSON6902")
KIND_NODE_FIELDS = ("role", "image", "labels", "extraMounts", "extraPortMappings", "gpus",
                    "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902")
KIND_NETWORKING_FIELDS = ("ipFamily", "apiServerPort", "apiServerAddress", "podSubnet",
                          "serviceSubnet", "disableDefaultCNI", "kubeProxyMode", "dnsSearch")


@dataclass
class _KubeadmSettings:
    runtime_config: dict[str, str] = field(default_factory=dict)
    feature_gates: GateOverrides = field(default_factory=dict)
    init_labels: dict[str, str] = field(default_factory=dict)  # InitConfiguration node-labels
    join_labels: dict[str, str] = field(default_factory=dict)  # JoinConfiguration node-labels


@dataclass
class _KindNode:
    role: str
    labels: dict[str, str]
    kubeadm: _KubeadmSettings
    image: tuple[str, str] | None = None  # (version in the tag, field path)


def parse_kind(doc: dict, reader: DocumentReader, name_override: str | None,
               version_override: tuple[str, str] | None = None) -> ClusterSpec:
    """A kind `Cluster` document → ClusterSpec; problems go to `reader`. `version_override`
    (version, where: `create cluster --image`) wins over the nodes' images."""
    header = read_header(doc, reader, name_override, KIND_CLUSTER_FIELDS)
    spec, gates = header.spec, header.gates

    cluster_kubeadm = _KubeadmSettings()
    if "kubeadmConfigPatches" in doc:
        _read_kubeadm_patches(doc["kubeadmConfigPatches"], "kubeadmConfigPatches", reader, cluster_kubeadm)
    _ignore_cluster_patches(doc, reader)

    networking = doc.get("networking")
    if networking is not None and reader.expect(networking, "networking", "mapping"):
        reader.fields(networking, "networking", KIND_NETWORKING_FIELDS)
        _parse_networking(networking, reader, spec)

    nodes = _read_nodes(doc.get("nodes"), reader)
    # kubeadm patches are applied after kind's own settings, so they win: cluster-level first,
    # then per node (kind applies them in that order).
    for s in [cluster_kubeadm] + [n.kubeadm for n in nodes]:
        spec.runtime_config.update(s.runtime_config)
        gates.update(s.feature_gates)
    entries = _node_entries(nodes, cluster_kubeadm)

    decide_version(spec, version_override or _nodes_version(nodes, reader), gates, reader)
    apply_feature_gates(spec, gates, reader)
    if not reader.problems:
        spec.nodes = build_kind_nodes(spec.name, entries)
    spec.ignored_fields = list(reader.ignored)
    return spec


def _nodes_version(nodes: list[_KindNode], reader: DocumentReader) -> tuple[str, str] | None:
    """The version the nodes' images name; every node must name the same release."""
    images = [n.image for n in nodes if n.image is not None]
    if not images:
        return None
    releases: dict[str, str] = {}
    for text, where in images:
        try:
            releases.setdefault(release_of(text), where)
        except UnsupportedVersion as e:
            reader.error(where, str(e))
            return None
    if len(releases) > 1:
        first, second = list(releases.items())[:2]
        reader.error(second[1], f"Kubernetes {second[0]} differs from {first[1]} (Kubernetes {first[0]}): "
                                f"a phalanx cluster runs one Kubernetes release")
        return None
    return images[0]


def _ignore_cluster_patches(doc: dict, reader: DocumentReader) -> None:
    if "kubeadmConfigPatchesJSON6902" in doc and reader.list_of(doc["kubeadmConfigPatchesJSON6902"],
                                                                "kubeadmConfigPatchesJSON6902", "mapping"):
        reader.ignore("kubeadmConfigPatchesJSON6902")
    for key in ("containerdConfigPatches", "containerdConfigPatchesJSON6902"):
        if key in doc and reader.list_of(doc[key], key, "string"):
            reader.ignore(key)


def _read_nodes(raw_nodes: Any, reader: DocumentReader) -> list[_KindNode]:
    if raw_nodes is None or raw_nodes == []:
        raw_nodes = [{"role": CONTROL_PLANE}]  # kind's default: a single control-plane node
    nodes: list[_KindNode] = []
    if not reader.expect(raw_nodes, "nodes", "list"):
        return nodes
    for i, raw in enumerate(raw_nodes):
        node = _read_node({} if raw is None else raw, f"nodes[{i}]", reader)
        if node is not None:
            nodes.append(node)
    if nodes and not any(n.role == CONTROL_PLANE for n in nodes):
        reader.error("nodes", "must contain at least one control-plane node")
    return nodes


def _read_node(raw: Any, path: str, reader: DocumentReader) -> _KindNode | None:
    if not reader.expect(raw, path, "mapping"):
        return None
    reader.fields(raw, path, KIND_NODE_FIELDS)
    role = raw.get("role", CONTROL_PLANE)  # kind defaults a node's role to control-plane
    if role not in ROLES:
        reader.error(f"{path}.role", f"unsupported value {quote(role)}; allowed: {', '.join(ROLES)}")
        role = WORKER
    labels = reader.labels(raw.get("labels"), f"{path}.labels")
    settings = _KubeadmSettings()
    if "kubeadmConfigPatches" in raw:
        _read_kubeadm_patches(raw["kubeadmConfigPatches"], f"{path}.kubeadmConfigPatches", reader, settings)
    image = None
    if "image" in raw and reader.expect(raw["image"], f"{path}.image", "string"):
        image = image_version(raw["image"], f"{path}.image", reader)
    if "gpus" in raw and reader.expect(raw["gpus"], f"{path}.gpus", "string"):
        reader.ignore(f"{path}.gpus")
    for key in ("extraMounts", "extraPortMappings", "kubeadmConfigPatchesJSON6902"):
        if key in raw and reader.list_of(raw[key], f"{path}.{key}", "mapping"):
            reader.ignore(f"{path}.{key}")
    return _KindNode(role, labels, settings, image)


def _node_entries(nodes: list[_KindNode], cluster_kubeadm: _KubeadmSettings) -> list[tuple[str, dict[str, str]]]:
    """(role, labels) per node: kubeadm's node-labels (InitConfiguration's for the first
    control-plane node, JoinConfiguration's for the others) under the node's own labels."""
    first_control_plane = next((i for i, n in enumerate(nodes) if n.role == CONTROL_PLANE), None)
    entries = []
    for i, node in enumerate(nodes):
        from_kubeadm: dict[str, str] = {}
        init = i == first_control_plane
        for s in (cluster_kubeadm, node.kubeadm):
            from_kubeadm.update(s.init_labels if init else s.join_labels)
        entries.append((node.role, {**from_kubeadm, **node.labels}))
    return entries


def _parse_networking(net: dict, reader: DocumentReader, spec: ClusterSpec) -> None:
    if "apiServerPort" in net and reader.expect(net["apiServerPort"], "networking.apiServerPort", "integer"):
        port = net["apiServerPort"]
        if port == -1:
            port = 0  # kind: "let the backend pick"; phalanx picks a free port itself
        if not 0 <= port <= 65535:
            reader.error("networking.apiServerPort", f"invalid port {port}: must be between 0 and 65535")
        else:
            spec.port = port
    if "apiServerAddress" in net and reader.expect(net["apiServerAddress"], "networking.apiServerAddress", "string"):
        if check_address(net["apiServerAddress"], "networking.apiServerAddress", reader):
            spec.listen_address = net["apiServerAddress"]
    shallow = {"ipFamily": "string", "podSubnet": "string", "serviceSubnet": "string",
               "disableDefaultCNI": "boolean", "kubeProxyMode": "string"}
    for key, kind in shallow.items():
        if key in net and reader.expect(net[key], f"networking.{key}", kind):
            reader.ignore(f"networking.{key}")
    if "dnsSearch" in net and reader.list_of(net["dnsSearch"], "networking.dnsSearch", "string"):
        reader.ignore("networking.dnsSearch")


# ---------------------------------------------------------------------------------------------
# kubeadm patches: what phalanx can honour of them


def _extra_args(value: Any) -> dict[str, str]:
    """kubeadm extraArgs: a map (v1beta3) or a list of {name, value} (v1beta4)."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, list):
        return {str(a.get("name")): str(a.get("value", "")) for a in value if isinstance(a, dict) and "name" in a}
    return {}


def _split_pairs(text: str) -> list[tuple[str, str | None]]:
    pairs = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        pairs.append((key.strip(), value.strip() if sep else None))
    return pairs


def _read_kubeadm_patches(patches: Any, path: str, reader: DocumentReader, settings: _KubeadmSettings) -> None:
    """Take from kubeadm patches what phalanx can honour; the rest stays ignored."""
    if not reader.list_of(patches, path, "string"):
        return
    reader.ignore(path)
    for i, text in enumerate(patches):
        where = f"{path}[{i}]"
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue  # kubeadm would reject it; phalanx ignores the patch as a whole
        if not isinstance(doc, dict):
            continue
        kind = doc.get("kind")
        if kind == "ClusterConfiguration":
            _read_cluster_configuration(doc, where, reader, settings)
        elif kind == "KubeletConfiguration":
            gates = doc.get("featureGates")
            if isinstance(gates, dict):
                for gate, value in gates.items():
                    if isinstance(value, bool):
                        settings.feature_gates[str(gate)] = (value, where)
        elif kind in ("InitConfiguration", "JoinConfiguration"):
            registration = doc.get("nodeRegistration")
            args = _extra_args(registration.get("kubeletExtraArgs")) if isinstance(registration, dict) else {}
            if "node-labels" in args:
                target = settings.init_labels if kind == "InitConfiguration" else settings.join_labels
                _read_node_labels(args["node-labels"], where, reader, target)


def _read_cluster_configuration(doc: dict, where: str, reader: DocumentReader, settings: _KubeadmSettings) -> None:
    for component in ("apiServer", "controllerManager", "scheduler"):
        section = doc.get(component)
        args = _extra_args(section.get("extraArgs")) if isinstance(section, dict) else {}
        if component == "apiServer" and "runtime-config" in args:
            for key, value in _split_pairs(args["runtime-config"]):
                value = "true" if value is None else value
                if value not in GO_BOOLS:
                    reader.error(where, f"runtime-config {key}={value}: expected true or false")
                    continue
                settings.runtime_config[key] = "true" if GO_BOOLS[value] else "false"
        if "feature-gates" in args:
            _read_gate_pairs(args["feature-gates"], where, reader, settings)


def _read_node_labels(text: str, where: str, reader: DocumentReader, target: dict[str, str]) -> None:
    for key, value in _split_pairs(text):
        problems = qualified_name_errors(key) + label_value_errors(value or "")
        if problems:
            reader.error(where, f"node-labels {key}={value or ''}: {problems[0]}")
            continue
        target[key] = value or ""


def _read_gate_pairs(text: str, where: str, reader: DocumentReader, settings: _KubeadmSettings) -> None:
    for gate, value in _split_pairs(text):
        if value is None:
            reader.error(where, f"feature-gates: missing bool value for {gate}")
        elif value not in GO_BOOLS:
            reader.error(where, f"feature-gates: invalid value of {gate}={value}")
        else:
            settings.feature_gates[gate] = (GO_BOOLS[value], where)
