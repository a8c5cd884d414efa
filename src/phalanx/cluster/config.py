"""Cluster config files → `ClusterSpec`: kind's `Cluster` format and phalanx's own.

    spec = load_cluster_config("kind.yaml", name=None)   # ClusterConfigError on any problem
    spec = load_cluster_config(None, name="dev")         # no file: 1 control-plane + 1 worker

Two formats, told apart by `apiVersion`:

- `kind.x-k8s.io/v1alpha4`, `kind: Cluster` — the file a kind user already has, accepted verbatim.
  phalanx honours `name`, `featureGates`, `runtimeConfig`, `nodes[].role`, `nodes[].labels`,
  `networking.apiServerAddress` / `apiServerPort`, and from kubeadm patches the API server's
  `runtime-config`, components' `feature-gates`, the kubelet's `featureGates` and `node-labels`.
  Everything else kind knows (node images, mounts, port mappings, CNI settings, containerd patches,
  the rest of the kubeadm patches) is accepted, type-checked and listed in
  `ClusterSpec.ignored_fields` so the CLI can say once that it has no effect.
- `phalanx.dev/v1alpha1`, `kind: Cluster` — what kind's format cannot say: node pools of any size
  with templated labels (`rack-{i//16}`), capacity, taints, storage, listen address, port and
  simulated DRA drivers. See docs/cluster-config.md.

Both are strict: an unknown field, a wrong type or a bad value is an error naming the file, the
field path and what is allowed (`kind.yaml: nodes[1].rolez: unknown field; allowed: role, ...`);
every problem in the file is reported at once. Malformed YAML names the line and column.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

from phalanx.machinery.durations import parse_duration
from phalanx.machinery.featuregates import FeatureGates, UnknownFeatureGate
from phalanx.cluster.spec import ClusterSpec, NodeSpec
from phalanx.machinery.names import (dns1123_label_errors, dns1123_subdomain_errors,
                                     label_value_errors, qualified_name_errors)

DEFAULT_CLUSTER_NAME = "phalanx"
KIND_API_VERSION = "kind.x-k8s.io/v1alpha4"
PHALANX_API_VERSION = "phalanx.dev/v1alpha1"
CONTROL_PLANE = "control-plane"
WORKER = "worker"
ROLES = (CONTROL_PLANE, WORKER)

CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
EXCLUDE_FROM_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
CONTROL_PLANE_TAINT = {"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
STORAGE_BACKENDS = ("sqlite", "memory")
DEFAULT_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}

# kind v1alpha4 fields, in kind's own order. Honoured ones are parsed; the rest are ignored.
KIND_CLUSTER_FIELDS = ("kind", "apiVersion", "name", "nodes", "networking", "featureGates",
                       "runtimeConfig", "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902",
                       "containerdConfigPatches", "containerdConfigPatchesJSON6902")
KIND_NODE_FIELDS = ("role", "image", "labels", "extraMounts", "extraPortMappings", "gpus",
                    "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902")
KIND_NETWORKING_FIELDS = ("ipFamily", "apiServerPort", "apiServerAddress", "podSubnet",
                          "serviceSubnet", "disableDefaultCNI", "kubeProxyMode", "dnsSearch")
PHALANX_CLUSTER_FIELDS = ("apiVersion", "kind", "name", "featureGates", "runtimeConfig",
                          "nodePools", "storage", "listenAddress", "port", "draDrivers", "kubelet", "scheduler")
PHALANX_KUBELET_FIELDS = ("containerCreatingDelay", "terminatingDelay")
PHALANX_SCHEDULER_FIELDS = ("permitWaitingTimeout", "config")
PHALANX_POOL_FIELDS = ("name", "count", "role", "labels", "capacity", "taints")
TAINT_FIELDS = ("key", "value", "effect")

_QUANTITY_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")
_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


class ClusterConfigError(ValueError):
    """Every problem found in one config file, each as `<file>: <field path>: <message>`."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# YAML with duplicate-key detection (kind's strict decoder rejects duplicates too)


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _construct_mapping_no_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            continue  # unhashable key: the base constructor reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {_q(key)}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping_no_duplicates)


def parse_yaml(text: str, source: str) -> Any:
    """One YAML document, or ClusterConfigError naming the line and column of the problem."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = e.problem or e.context or "invalid YAML"
        raise ClusterConfigError(source, [(where, f"invalid YAML: {problem}")]) from None
    except yaml.YAMLError as e:
        raise ClusterConfigError(source, [("", f"invalid YAML: {e}")]) from None


# ---------------------------------------------------------------------------------------------
# field paths and type checks


def _key_path(parent: str, key: str) -> str:
    """`featureGates.GangScheduling`, but `labels[example.com/rack]` for keys with dots or slashes."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{key}]"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def _q(value: Any) -> str:
    """Quote a value in messages the way Go's %q does: "worker", not 'worker'."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _got(value: Any) -> str:
    """`string "yes"`, `integer 42`, `mapping`: what a type error found."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return f"{_type_name(value)} {_q(value)}"
    return _type_name(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class _Reader:
    """Collects problems and ignored fields while walking one config document."""

    source: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def error(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def expect(self, value: Any, path: str, kind: str) -> bool:
        ok = {"mapping": isinstance(value, dict), "list": isinstance(value, list),
              "string": isinstance(value, str), "boolean": isinstance(value, bool),
              "integer": _is_int(value)}[kind]
        if not ok:
            article = "an" if kind[0] in "aeiou" else "a"
            self.error(path, f"expected {article} {kind}, got {_got(value)}")
        return ok

    def fields(self, obj: dict, path: str, allowed: tuple[str, ...]) -> None:
        for key in obj:
            if key not in allowed:
                where = _key_path(path, str(key))
                self.error(where, f"unknown field; allowed: {', '.join(allowed)}")

    def list_of(self, value: Any, path: str, kind: str) -> bool:
        if not self.expect(value, path, "list"):
            return False
        ok = True
        for i, item in enumerate(value):
            ok = self.expect(item, f"{path}[{i}]", kind) and ok
        return ok

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        out: dict[str, str] = {}
        if value is None:
            return out
        if not self.expect(value, path, "mapping"):
            return out
        for k, v in value.items():
            if not isinstance(k, str):
                self.error(path, f"keys must be strings, got {_type_name(k)} {_q(k)}")
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                v = str(v)
            if not isinstance(v, str):
                self.error(_key_path(path, k), f"expected a string, got {_got(v)}")
                continue
            out[k] = v
        return out

    def labels(self, value: Any, path: str) -> dict[str, str]:
        labels = self.string_map(value, path)
        for k, v in labels.items():
            for msg in qualified_name_errors(k):
                self.error(_key_path(path, k), f"invalid label key: {msg}")
            for msg in label_value_errors(v):
                self.error(_key_path(path, k), f"invalid label value {_q(v)}: {msg}")
        return labels

    def feature_gates(self, value: Any, path: str) -> dict[str, bool]:
        gates: dict[str, bool] = {}
        if value is None:
            return gates
        if not self.expect(value, path, "mapping"):
            return gates
        for name, enabled in value.items():
            where = _key_path(path, str(name))
            if not isinstance(enabled, bool):
                self.error(where, f"expected a boolean, got {_got(enabled)}")
                continue
            gates[str(name)] = enabled
        return gates

    def runtime_config(self, value: Any, path: str) -> dict[str, str]:
        out: dict[str, str] = {}
        if value is None:
            return out
        if not self.expect(value, path, "mapping"):
            return out
        for key, raw in value.items():
            where = _key_path(path, str(key))
            if isinstance(raw, bool):
                out[str(key)] = "true" if raw else "false"
            elif isinstance(raw, str) and raw in _GO_BOOLS:
                out[str(key)] = "true" if _GO_BOOLS[raw] else "false"
            else:
                self.error(where, f"expected \"true\" or \"false\", got {_got(raw)}")
        return out

    def ignore(self, path: str) -> None:
        if path not in self.ignored:
            self.ignored.append(path)


# ---------------------------------------------------------------------------------------------
# public entry points


def load_cluster_config(path: str | None, name: str | None = None) -> ClusterSpec:
    """Read a kind or phalanx config file (`-` for stdin; None for the default cluster).

    `name`, when given, overrides the config's `name` (like `kind create cluster --name`).
    """
    if path is None:
        cluster_name = name or DEFAULT_CLUSTER_NAME
        _check_cluster_name(cluster_name, "--name")
        return ClusterSpec(name=cluster_name, nodes=build_kind_nodes(cluster_name, DEFAULT_ROLES))
    source = "<stdin>" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as e:
        raise ClusterConfigError(source, [("", f"cannot read config: {e.strerror or e}")]) from None
    return parse_cluster_config(text, source, name)


def parse_cluster_config(text: str, source: str, name: str | None = None) -> ClusterSpec:
    """Parse config text; `source` names the file in error messages."""
    doc = parse_yaml(text, source)
    if doc is None:
        raise ClusterConfigError(source, [("", "empty config; expected a kind.x-k8s.io/v1alpha4 or "
                                                "phalanx.dev/v1alpha1 Cluster")])
    if not isinstance(doc, dict):
        raise ClusterConfigError(source, [("", f"expected a mapping at the top level, got {_type_name(doc)}")])
    api_version = doc.get("apiVersion")
    reader = _Reader(source)
    if api_version == KIND_API_VERSION:
        spec = _parse_kind(doc, reader, name)
    elif api_version == PHALANX_API_VERSION:
        spec = _parse_phalanx(doc, reader, name)
    else:
        what = "required" if api_version is None else f"unsupported value {_q(api_version)}"
        raise ClusterConfigError(source, [("apiVersion", f"{what}; allowed: {KIND_API_VERSION}, {PHALANX_API_VERSION}")])
    if reader.problems:
        raise ClusterConfigError(source, reader.problems)
    return spec


def default_cluster_spec(name: str = DEFAULT_CLUSTER_NAME) -> ClusterSpec:
    """What `phalanx create cluster` builds with no config: one control-plane and one worker."""
    return load_cluster_config(None, name)


# ---------------------------------------------------------------------------------------------
# shared pieces


def _check_cluster_name(name: Any, path: str, reader: _Reader | None = None) -> bool:
    problems = []
    if not isinstance(name, str):
        problems.append(f"expected a string, got {_type_name(name)}")
    else:
        problems.extend(f"invalid cluster name {_q(name)}: {m}" for m in dns1123_subdomain_errors(name))
    if not problems:
        return True
    if reader is None:
        raise ClusterConfigError(path if path == "--name" else "config", [("" if path == "--name" else path, problems[0])])
    for p in problems:
        reader.error(path, p)
    return False


def _check_kind(doc: dict, reader: _Reader) -> None:
    if doc.get("kind") != "Cluster":
        what = "required" if "kind" not in doc else f"unsupported value {_q(doc.get('kind'))}"
        reader.error("kind", f"{what}; allowed: Cluster")


def _apply_feature_gates(spec: ClusterSpec, gates: dict[str, tuple[bool, str]], reader: _Reader) -> None:
    """Validate gate overrides the way kube components do at startup, then keep them."""
    overrides: dict[str, bool] = {}
    for gate, (value, where) in gates.items():
        try:
            FeatureGates({gate: value})
        except UnknownFeatureGate as e:
            reader.error(where, str(e))
            continue
        overrides[gate] = value
    if reader.problems:
        return
    for problem in FeatureGates(overrides).validate():
        reader.error("featureGates", problem)
    spec.feature_gates = overrides


def _finish_nodes(nodes: list[NodeSpec]) -> list[NodeSpec]:
    """kind/kubeadm role labels and taints: control-plane nodes are tainted unless no worker exists."""
    has_workers = any(n.role == WORKER for n in nodes)
    for n in nodes:
        base = {"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        if n.role == CONTROL_PLANE:
            base[CONTROL_PLANE_LABEL] = ""
            base[EXCLUDE_FROM_LB_LABEL] = ""
            if has_workers and not any(t.get("key") == CONTROL_PLANE_LABEL for t in n.taints):
                n.taints = [dict(CONTROL_PLANE_TAINT)] + n.taints
        base.update(n.labels)
        n.labels = base
    return nodes


def _kind_named_nodes(cluster: str, nodes: list[tuple[str, dict[str, str]]]) -> list[NodeSpec]:
    counts = {CONTROL_PLANE: 0, WORKER: 0}
    out = []
    for role, labels in nodes:
        counts[role] += 1
        suffix = "" if counts[role] == 1 else str(counts[role])
        out.append(NodeSpec(name=f"{cluster}-{role}{suffix}", role=role, labels=dict(labels),
                            capacity=dict(DEFAULT_CAPACITY)))
    return out


def build_kind_nodes(cluster: str, nodes: list[tuple[str, dict[str, str]]]) -> list[NodeSpec]:
    """kind's naming: `<c>-control-plane`, `<c>-control-plane2`, `<c>-worker`, `<c>-worker2`, ..."""
    return _finish_nodes(_kind_named_nodes(cluster, nodes))


# With no config (and for a phalanx config without nodePools): one control-plane and one worker.
DEFAULT_ROLES: list[tuple[str, dict[str, str]]] = [(CONTROL_PLANE, {}), (WORKER, {})]


# ---------------------------------------------------------------------------------------------
# kind.x-k8s.io/v1alpha4


@dataclass
class _KubeadmSettings:
    runtime_config: dict[str, str] = field(default_factory=dict)
    feature_gates: dict[str, tuple[bool, str]] = field(default_factory=dict)
    init_labels: dict[str, str] = field(default_factory=dict)  # InitConfiguration node-labels
    join_labels: dict[str, str] = field(default_factory=dict)  # JoinConfiguration node-labels


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


def _read_kubeadm_patches(patches: Any, path: str, reader: _Reader, settings: _KubeadmSettings) -> None:
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
            for component in ("apiServer", "controllerManager", "scheduler"):
                section = doc.get(component)
                args = _extra_args(section.get("extraArgs")) if isinstance(section, dict) else {}
                if component == "apiServer" and "runtime-config" in args:
                    for key, value in _split_pairs(args["runtime-config"]):
                        value = "true" if value is None else value
                        if value not in _GO_BOOLS:
                            reader.error(where, f"runtime-config {key}={value}: expected true or false")
                            continue
                        settings.runtime_config[key] = "true" if _GO_BOOLS[value] else "false"
                if "feature-gates" in args:
                    _read_gate_pairs(args["feature-gates"], where, reader, settings)
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
                for key, value in _split_pairs(args["node-labels"]):
                    problems = qualified_name_errors(key) + label_value_errors(value or "")
                    if problems:
                        reader.error(where, f"node-labels {key}={value or ''}: {problems[0]}")
                        continue
                    target[key] = value or ""


def _read_gate_pairs(text: str, where: str, reader: _Reader, settings: _KubeadmSettings) -> None:
    for gate, value in _split_pairs(text):
        if value is None:
            reader.error(where, f"feature-gates: missing bool value for {gate}")
        elif value not in _GO_BOOLS:
            reader.error(where, f"feature-gates: invalid value of {gate}={value}")
        else:
            settings.feature_gates[gate] = (_GO_BOOLS[value], where)


def _parse_kind(doc: dict, reader: _Reader, name_override: str | None) -> ClusterSpec:
    reader.fields(doc, "", KIND_CLUSTER_FIELDS)
    _check_kind(doc, reader)
    spec = ClusterSpec()

    cluster_name = name_override or doc.get("name") or DEFAULT_CLUSTER_NAME
    if name_override:
        _check_cluster_name(name_override, "--name")
    elif not _check_cluster_name(cluster_name, "name", reader):
        cluster_name = DEFAULT_CLUSTER_NAME
    spec.name = cluster_name

    gates = {g: (v, _key_path("featureGates", g)) for g, v in reader.feature_gates(doc.get("featureGates"), "featureGates").items()}
    spec.runtime_config = reader.runtime_config(doc.get("runtimeConfig"), "runtimeConfig")

    cluster_kubeadm = _KubeadmSettings()
    if "kubeadmConfigPatches" in doc:
        _read_kubeadm_patches(doc["kubeadmConfigPatches"], "kubeadmConfigPatches", reader, cluster_kubeadm)
    for key in ("kubeadmConfigPatchesJSON6902",):
        if key in doc and reader.list_of(doc[key], key, "mapping"):
            reader.ignore(key)
    for key in ("containerdConfigPatches", "containerdConfigPatchesJSON6902"):
        if key in doc and reader.list_of(doc[key], key, "string"):
            reader.ignore(key)

    networking = doc.get("networking")
    if networking is not None and reader.expect(networking, "networking", "mapping"):
        reader.fields(networking, "networking", KIND_NETWORKING_FIELDS)
        _parse_kind_networking(networking, reader, spec)

    node_entries: list[tuple[str, dict[str, str]]] = []
    node_kubeadm: list[_KubeadmSettings] = []
    raw_nodes = doc.get("nodes")
    if raw_nodes is None or raw_nodes == []:
        raw_nodes = [{"role": CONTROL_PLANE}]  # kind's default: a single control-plane node
    if reader.expect(raw_nodes, "nodes", "list"):
        for i, raw in enumerate(raw_nodes):
            path = f"nodes[{i}]"
            if raw is None:
                raw = {}
            if not reader.expect(raw, path, "mapping"):
                continue
            reader.fields(raw, path, KIND_NODE_FIELDS)
            role = raw.get("role", CONTROL_PLANE)  # kind defaults a node's role to control-plane
            if role not in ROLES:
                reader.error(f"{path}.role", f"unsupported value {_q(role)}; allowed: {', '.join(ROLES)}")
                role = WORKER
            labels = reader.labels(raw.get("labels"), f"{path}.labels")
            settings = _KubeadmSettings()
            if "kubeadmConfigPatches" in raw:
                _read_kubeadm_patches(raw["kubeadmConfigPatches"], f"{path}.kubeadmConfigPatches", reader, settings)
            for key, kind in (("image", "string"), ("gpus", "string")):
                if key in raw and reader.expect(raw[key], f"{path}.{key}", kind):
                    reader.ignore(f"{path}.{key}")
            for key in ("extraMounts", "extraPortMappings", "kubeadmConfigPatchesJSON6902"):
                if key in raw and reader.list_of(raw[key], f"{path}.{key}", "mapping"):
                    reader.ignore(f"{path}.{key}")
            node_entries.append((role, labels))
            node_kubeadm.append(settings)
        if node_entries and not any(role == CONTROL_PLANE for role, _ in node_entries):
            reader.error("nodes", "must contain at least one control-plane node")

    # kubeadm-derived settings: cluster-level first, then per node (kind applies them in that order).
    all_settings = [cluster_kubeadm] + node_kubeadm
    for s in all_settings:  # kubeadm patches are applied after kind's own settings, so they win
        spec.runtime_config.update(s.runtime_config)
        gates.update(s.feature_gates)
    first_control_plane = next((i for i, (role, _) in enumerate(node_entries) if role == CONTROL_PLANE), None)
    for i, (role, labels) in enumerate(node_entries):
        from_kubeadm: dict[str, str] = {}
        init = i == first_control_plane
        for s in (cluster_kubeadm, node_kubeadm[i]):
            from_kubeadm.update(s.init_labels if init else s.join_labels)
        node_entries[i] = (role, {**from_kubeadm, **labels})

    _apply_feature_gates(spec, gates, reader)
    if not reader.problems:
        spec.nodes = build_kind_nodes(spec.name, node_entries)
    spec.ignored_fields = list(reader.ignored)
    return spec


def _parse_kind_networking(net: dict, reader: _Reader, spec: ClusterSpec) -> None:
    if "apiServerPort" in net and reader.expect(net["apiServerPort"], "networking.apiServerPort", "integer"):
        port = net["apiServerPort"]
        if port == -1:
            port = 0  # kind: "let the backend pick"; phalanx picks a free port itself
        if not 0 <= port <= 65535:
            reader.error("networking.apiServerPort", f"invalid port {port}: must be between 0 and 65535")
        else:
            spec.port = port
    if "apiServerAddress" in net and reader.expect(net["apiServerAddress"], "networking.apiServerAddress", "string"):
        if _check_address(net["apiServerAddress"], "networking.apiServerAddress", reader):
            spec.listen_address = net["apiServerAddress"]
    shallow = {"ipFamily": "string", "podSubnet": "string", "serviceSubnet": "string",
               "disableDefaultCNI": "boolean", "kubeProxyMode": "string"}
    for key, kind in shallow.items():
        if key in net and reader.expect(net[key], f"networking.{key}", kind):
            reader.ignore(f"networking.{key}")
    if "dnsSearch" in net and reader.list_of(net["dnsSearch"], "networking.dnsSearch", "string"):
        reader.ignore("networking.dnsSearch")


def _duration_seconds(value: Any) -> float | None:
    """A Go duration (`500ms`, `2s`, `1m30s`) or a number of seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 else None
    try:
        seconds = parse_duration(str(value))
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _check_address(value: str, path: str, reader: _Reader) -> bool:
    if value == "localhost":
        return True
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        reader.error(path, f"invalid address {_q(value)}: must be an IP address or \"localhost\"")
        return False


# ---------------------------------------------------------------------------------------------
# phalanx.dev/v1alpha1


def _parse_phalanx(doc: dict, reader: _Reader, name_override: str | None) -> ClusterSpec:
    reader.fields(doc, "", PHALANX_CLUSTER_FIELDS)
    _check_kind(doc, reader)
    spec = ClusterSpec()

    cluster_name = name_override or doc.get("name") or DEFAULT_CLUSTER_NAME
    if name_override:
        _check_cluster_name(name_override, "--name")
    elif not _check_cluster_name(cluster_name, "name", reader):
        cluster_name = DEFAULT_CLUSTER_NAME
    spec.name = cluster_name

    gates = {g: (v, _key_path("featureGates", g)) for g, v in reader.feature_gates(doc.get("featureGates"), "featureGates").items()}
    spec.runtime_config = reader.runtime_config(doc.get("runtimeConfig"), "runtimeConfig")

    if "storage" in doc and reader.expect(doc["storage"], "storage", "string"):
        if doc["storage"] not in STORAGE_BACKENDS:
            reader.error("storage", f"unsupported value {_q(doc['storage'])}; allowed: {', '.join(STORAGE_BACKENDS)}")
        else:
            spec.storage = doc["storage"]
    if "listenAddress" in doc and reader.expect(doc["listenAddress"], "listenAddress", "string"):
        if _check_address(doc["listenAddress"], "listenAddress", reader):
            spec.listen_address = doc["listenAddress"]
    if "port" in doc and reader.expect(doc["port"], "port", "integer"):
        if not 0 <= doc["port"] <= 65535:
            reader.error("port", f"invalid port {doc['port']}: must be between 0 and 65535 (0 picks a free port)")
        else:
            spec.port = doc["port"]
    if "kubelet" in doc and reader.expect(doc["kubelet"], "kubelet", "mapping"):
        for k, v in doc["kubelet"].items():
            if k not in PHALANX_KUBELET_FIELDS:
                reader.error(f"kubelet.{k}", f"unknown field; allowed: {', '.join(PHALANX_KUBELET_FIELDS)}")
            elif _duration_seconds(v) is None:
                reader.error(f"kubelet.{k}", f"invalid duration {_q(str(v))}: use Go durations such as 500ms, 2s, 1m")
            else:
                spec.kubelet[k] = _duration_seconds(v)
    if "scheduler" in doc and reader.expect(doc["scheduler"], "scheduler", "mapping"):
        for k, v in doc["scheduler"].items():
            if k not in PHALANX_SCHEDULER_FIELDS:
                reader.error(f"scheduler.{k}", f"unknown field; allowed: {', '.join(PHALANX_SCHEDULER_FIELDS)}")
            elif k == "permitWaitingTimeout":
                if _duration_seconds(v) is None:
                    reader.error("scheduler.permitWaitingTimeout", f"invalid duration {_q(str(v))}")
                else:
                    spec.scheduler["permitWaitingTimeout"] = _duration_seconds(v)
            elif k == "config":
                if reader.expect(v, "scheduler.config", "mapping"):
                    try:
                        from ..scheduler.framework.config import load_configuration
                        load_configuration(v)
                    except (ValueError, TypeError, KeyError) as e:
                        reader.error("scheduler.config", f"invalid KubeSchedulerConfiguration: {e}")
                    else:
                        spec.scheduler["config"] = copy.deepcopy(v)
    if "draDrivers" in doc and doc["draDrivers"] is not None:
        disabled_gates = {g for g, (enabled, _) in gates.items() if not enabled}
        problems_before = len(reader.problems)
        _parse_dra_drivers(doc["draDrivers"], "draDrivers", reader, disabled_gates)
        if len(reader.problems) == problems_before:
            spec.dra_drivers = copy.deepcopy(doc["draDrivers"])

    nodes: list[NodeSpec] = []
    pools = doc.get("nodePools")
    if pools is None:
        nodes = _kind_named_nodes(spec.name, DEFAULT_ROLES)
    elif reader.expect(pools, "nodePools", "list"):
        seen_pools: set[str] = set()
        next_index = 0
        for p, pool in enumerate(pools):
            path = f"nodePools[{p}]"
            if not reader.expect(pool, path, "mapping"):
                continue
            built = _parse_pool(pool, path, reader, seen_pools, next_index)
            next_index += len(built)
            nodes.extend(built)
        seen_names: set[str] = set()
        for n in nodes:
            if n.name in seen_names:
                reader.error("nodePools", f"duplicate node name {_q(n.name)}")
                break
            seen_names.add(n.name)

    _apply_feature_gates(spec, gates, reader)
    if not reader.problems:
        spec.nodes = _finish_nodes(nodes)
    spec.ignored_fields = list(reader.ignored)
    return spec


def _parse_pool(pool: dict, path: str, reader: _Reader, seen: set[str], first_index: int) -> list[NodeSpec]:
    reader.fields(pool, path, PHALANX_POOL_FIELDS)
    ok = True
    name = pool.get("name")
    if name is None:
        reader.error(f"{path}.name", "required")
        ok = False
    elif reader.expect(name, f"{path}.name", "string"):
        for msg in dns1123_label_errors(name):
            reader.error(f"{path}.name", f"invalid pool name {_q(name)}: {msg}")
            ok = False
        if name in seen:
            reader.error(f"{path}.name", f"duplicate pool name {_q(name)}")
            ok = False
        seen.add(name)
    else:
        ok = False

    count = pool.get("count", 1)
    if not reader.expect(count, f"{path}.count", "integer"):
        ok = False
    elif count < 0:
        reader.error(f"{path}.count", f"invalid count {count}: must be 0 or more")
        ok = False

    role = pool.get("role", WORKER)
    if role not in ROLES:
        reader.error(f"{path}.role", f"unsupported value {_q(role)}; allowed: {', '.join(ROLES)}")
        ok = False

    label_templates = _parse_label_templates(pool.get("labels"), f"{path}.labels", reader)
    capacity = _parse_capacity(pool.get("capacity"), f"{path}.capacity", reader)
    taints = _parse_taints(pool.get("taints"), f"{path}.taints", reader)
    if not ok or label_templates is None:
        return []

    nodes = []
    reported: set[str] = set()
    for i in range(count):
        n = first_index + i
        labels = {}
        for key, render in label_templates.items():
            value = render(i, n)
            if key not in reported:
                problems = label_value_errors(value)
                if problems:
                    reader.error(_key_path(f"{path}.labels", key),
                                 f"template gives invalid label value {_q(value)} for node {i}: {problems[0]}")
                    reported.add(key)
            labels[key] = value
        nodes.append(NodeSpec(name=f"{name}-{i}", role=role, labels=labels, capacity=dict(capacity),
                              taints=[dict(t) for t in taints]))
    return nodes


def _parse_capacity(value: Any, path: str, reader: _Reader) -> dict[str, str]:
    capacity = dict(DEFAULT_CAPACITY)
    for resource, quantity in reader.string_map(value, path).items():
        where = _key_path(path, resource)
        for msg in qualified_name_errors(resource):
            reader.error(where, f"invalid resource name: {msg}")
        if not _QUANTITY_RE.match(quantity):
            reader.error(where, f"invalid quantity {_q(quantity)}: quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        capacity[resource] = quantity
    return capacity


def _parse_taints(value: Any, path: str, reader: _Reader) -> list[dict[str, str]]:
    taints: list[dict[str, str]] = []
    if value is None or not reader.expect(value, path, "list"):
        return taints
    for t, raw in enumerate(value):
        where = f"{path}[{t}]"
        if not reader.expect(raw, where, "mapping"):
            continue
        reader.fields(raw, where, TAINT_FIELDS)
        taint: dict[str, str] = {}
        key = raw.get("key")
        if key is None:
            reader.error(f"{where}.key", "required")
        elif reader.expect(key, f"{where}.key", "string"):
            for msg in qualified_name_errors(key):
                reader.error(f"{where}.key", f"invalid taint key: {msg}")
            taint["key"] = key
        if "value" in raw and raw["value"] is not None:
            if reader.expect(raw["value"], f"{where}.value", "string"):
                for msg in label_value_errors(raw["value"]):
                    reader.error(f"{where}.value", f"invalid taint value: {msg}")
                if raw["value"]:
                    taint["value"] = raw["value"]
        effect = raw.get("effect")
        if effect is None:
            reader.error(f"{where}.effect", "required")
        elif effect not in TAINT_EFFECTS:
            reader.error(f"{where}.effect", f"unsupported value {_q(effect)}; allowed: {', '.join(TAINT_EFFECTS)}")
        else:
            taint["effect"] = effect
        taints.append(taint)
    return taints


# ---------------------------------------------------------------------------------------------
# label templates: "rack-{i//16}", "gpu-{i:03}", "zone-{n//1024%4}"

_PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_EXPR_RE = re.compile(r"^\s*([in])\s*((?:(?://|%|\+|-|\*)\s*\d+\s*)*)(?::(\d+))?\s*$")
_OP_RE = re.compile(r"(//|%|\+|-|\*)\s*(\d+)")
_OPS: dict[str, Callable[[int, int], int]] = {
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "+": lambda a, b: a + b,
    "-": lambda a, b: a - b, "*": lambda a, b: a * b,
}

TEMPLATE_HELP = ("placeholders are {i} (index in the pool) or {n} (index in the cluster), optionally "
                 "followed by integer operations applied left to right (//, %, +, -, *) and a zero-padded "
                 "width, e.g. {i//16}, {n%8}, {i//4%2}, {i:03}; write {{ and }} for literal braces")


def compile_template(template: str) -> Callable[[int, int], str]:
    """Compile a label template into `render(i, n) -> str`; ValueError explains a bad template."""
    parts: list[Any] = []
    pos = 0
    for m in _PLACEHOLDER_RE.finditer(template):
        parts.append(template[pos:m.start()])
        pos = m.end()
        token = m.group(0)
        if token in ("{{", "}}"):
            parts.append(token[0])
            continue
        if m.group(1) is None:
            raise ValueError(f"unbalanced {_q(token)} in template {_q(template)}; {TEMPLATE_HELP}")
        expr = _EXPR_RE.match(m.group(1))
        if not expr:
            raise ValueError(f"invalid placeholder {_q(token)} in template {_q(template)}; {TEMPLATE_HELP}")
        var, ops_text, width = expr.group(1), expr.group(2), expr.group(3)
        ops = [(op, int(arg)) for op, arg in _OP_RE.findall(ops_text)]
        for op, arg in ops:
            if op in ("//", "%") and arg == 0:
                raise ValueError(f"division by zero in placeholder {_q(token)} of template {_q(template)}")
        parts.append((var, ops, int(width) if width else 0))
    parts.append(template[pos:])

    literal_only = all(isinstance(p, str) for p in parts)
    if literal_only:
        text = "".join(parts)
        return lambda i, n: text

    def render(i: int, n: int) -> str:
        out = []
        for p in parts:
            if isinstance(p, str):
                out.append(p)
                continue
            var, ops, width = p
            value = i if var == "i" else n
            for op, arg in ops:
                value = _OPS[op](value, arg)
            out.append(str(value).zfill(width) if width else str(value))
        return "".join(out)

    return render


def _parse_label_templates(value: Any, path: str, reader: _Reader) -> dict[str, Callable[[int, int], str]] | None:
    templates: dict[str, Callable[[int, int], str]] = {}
    ok = True
    for key, template in reader.string_map(value, path).items():
        where = _key_path(path, key)
        for msg in qualified_name_errors(key):
            reader.error(where, f"invalid label key: {msg}")
            ok = False
        try:
            templates[key] = compile_template(template)
        except ValueError as e:
            reader.error(where, str(e))
            ok = False
    return templates if ok else None


# ---------------------------------------------------------------------------------------------
# draDrivers: simulated DRA drivers (the model and its rendering live in phalanx.nodes.dradriver)

DRA_DRIVER_FIELDS = ("name", "deviceClasses", "nodeSelector", "devicesPerNode", "devicePrefix", "attributes",
                     "capacity", "partitions", "taints", "pools")
DRA_CLASS_FIELDS = ("name", "selectors")
DRA_PARTITION_FIELDS = ("count", "counters")
DRA_TAINT_FIELDS = ("key", "value", "effect", "devices")
DRA_POOL_FIELDS = ("name", "nodeSelector", "allNodes", "perValueOf", "devices", "devicePrefix", "attributes",
                   "capacity", "taints")
DRA_PARTITIONS_GATE = "DRAPartitionableDevices"
DRA_TAINTS_GATE = "DRADeviceTaints"


def parse_dra_drivers(value: Any, source: str = "draDrivers", disabled_gates: Any = ()) -> list:
    """Validate `draDrivers` entries and build `phalanx.nodes.dradriver.DRADriverSpec`s;
    ClusterConfigError (naming `source` and each field) on any problem."""
    reader = _Reader(source)
    drivers = _parse_dra_drivers(value, "draDrivers", reader, set(disabled_gates))
    if reader.problems:
        raise ClusterConfigError(source, reader.problems)
    return drivers


def _parse_dra_drivers(value: Any, path: str, reader: _Reader, disabled_gates: set[str]) -> list:
    from phalanx.nodes import dradriver as dra

    drivers: list = []
    if not reader.expect(value, path, "list"):
        return drivers
    names: set[str] = set()
    classes: dict[str, str] = {}
    for d, raw in enumerate(value):
        where = f"{path}[{d}]"
        if not reader.expect(raw, where, "mapping"):
            continue
        before = len(reader.problems)
        driver = _parse_dra_driver(raw, where, reader, disabled_gates, dra)
        if driver is None:
            continue
        if driver.name in names:
            reader.error(f"{where}.name", f"duplicate driver name {_q(driver.name)}")
        names.add(driver.name)
        for c, cls in enumerate(driver.device_classes):
            if cls.name in classes:
                reader.error(f"{where}.deviceClasses[{c}].name" if "deviceClasses" in raw else f"{where}.name",
                             f"DeviceClass {_q(cls.name)} is already defined by {classes[cls.name]}")
            classes.setdefault(cls.name, where)
        if len(reader.problems) == before:
            drivers.append(driver)
    return drivers


def _dra_driver_name(value: Any, path: str, reader: _Reader) -> str | None:
    if value is None:
        reader.error(path, "required")
        return None
    if not reader.expect(value, path, "string"):
        return None
    problems = (["must be no more than 63 characters"] if len(value) > 63 else []) + dns1123_subdomain_errors(value)
    for msg in problems:
        reader.error(path, f"invalid driver name {_q(value)}: {msg}")
    return None if problems else value


def _dra_count(raw: dict, key: str, where: str, reader: _Reader, default: int, dra: Any) -> int | None:
    value = raw.get(key, default)
    if value is None:
        return default
    if not reader.expect(value, f"{where}.{key}", "integer"):
        return None
    if not 0 <= value <= dra.MAX_DEVICE_COUNT:
        reader.error(f"{where}.{key}", f"invalid count {value}: must be between 0 and {dra.MAX_DEVICE_COUNT}")
        return None
    return value


def _dra_prefix(raw: dict, where: str, reader: _Reader, default: str) -> str | None:
    value = raw.get("devicePrefix")
    if value is None:
        return default
    if not reader.expect(value, f"{where}.devicePrefix", "string"):
        return None
    problems = dns1123_label_errors(value)
    for msg in problems:
        reader.error(f"{where}.devicePrefix", f"invalid device prefix {_q(value)}: {msg}")
    return None if problems else value


def _dra_named_values(raw: dict, field: str, what: str, make: Any, where: str, reader: _Reader,
                      default: Any, dra: Any) -> tuple | None:
    """`attributes` or `capacity` of a driver or pool: qualified names mapped through `make`."""
    value = raw.get(field)
    path = f"{where}.{field}"
    if value is None:
        if not isinstance(default, dict):
            return default  # already parsed (a pool inheriting its driver's)
        value = default
    elif not reader.expect(value, path, "mapping"):
        return None
    out = []
    ok = True
    for name, v in value.items():
        at = _key_path(path, str(name))
        if not isinstance(name, str):
            reader.error(path, f"keys must be strings, got {_type_name(name)} {_q(name)}")
            ok = False
            continue
        for msg in dra.qualified_name_errors(name):
            reader.error(at, f"invalid {what} name: {msg}")
            ok = False
        try:
            out.append(make(name, v))
        except ValueError as e:
            reader.error(at, str(e))
            ok = False
    return tuple(out) if ok else None


def _dra_attributes(raw: dict, where: str, reader: _Reader, default: Any, dra: Any) -> tuple | None:
    return _dra_named_values(raw, "attributes", "attribute", dra.make_attribute, where, reader, default, dra)


def _dra_capacity(raw: dict, where: str, reader: _Reader, default: Any, dra: Any) -> tuple | None:
    return _dra_named_values(raw, "capacity", "capacity", dra.make_capacity, where, reader, default, dra)


def _dra_taints(raw: dict, where: str, reader: _Reader, disabled_gates: set[str], dra: Any,
                device_count: int | None) -> tuple | None:
    value = raw.get("taints")
    path = f"{where}.taints"
    if value is None:
        return ()
    if not reader.expect(value, path, "list"):
        return None
    if value and DRA_TAINTS_GATE in disabled_gates:
        reader.error(path, f"device taints need the feature gate {DRA_TAINTS_GATE}, which featureGates disables")
        return None
    out = []
    ok = True
    for t, item in enumerate(value):
        at = f"{path}[{t}]"
        if not reader.expect(item, at, "mapping"):
            ok = False
            continue
        reader.fields(item, at, DRA_TAINT_FIELDS)
        key, effect, taint_value, devices = item.get("key"), item.get("effect"), item.get("value") or "", None
        if key is None:
            reader.error(f"{at}.key", "required")
            ok = False
        elif reader.expect(key, f"{at}.key", "string"):
            for msg in qualified_name_errors(key):
                reader.error(f"{at}.key", f"invalid taint key: {msg}")
                ok = False
        else:
            ok = False
        if taint_value and reader.expect(taint_value, f"{at}.value", "string"):
            for msg in label_value_errors(taint_value):
                reader.error(f"{at}.value", f"invalid taint value: {msg}")
                ok = False
        elif taint_value:
            ok = False
        if effect is None:
            reader.error(f"{at}.effect", "required")
            ok = False
        elif effect not in dra.DEVICE_TAINT_EFFECTS:
            reader.error(f"{at}.effect",
                         f"unsupported value {_q(effect)}; allowed: {', '.join(dra.DEVICE_TAINT_EFFECTS)}")
            ok = False
        if item.get("devices") is not None:
            if reader.list_of(item["devices"], f"{at}.devices", "integer"):
                devices = frozenset(item["devices"])
                for i in item["devices"]:
                    if i < 0 or (device_count is not None and i >= device_count):
                        reader.error(f"{at}.devices", f"device index {i} is out of range: devices are numbered "
                                                      f"0 to {max((device_count or 0) - 1, 0)}")
                        ok = False
            else:
                ok = False
        if ok:
            out.append(dra.TaintSpec(key=key, effect=effect, value=taint_value, devices=devices))
    return tuple(out) if ok else None


def _dra_partitions(raw: dict, where: str, reader: _Reader, disabled_gates: set[str], dra: Any) -> Any:
    """None (no partitions), a PartitionSpec, or False on error."""
    value = raw.get("partitions")
    path = f"{where}.partitions"
    if value is None:
        return None
    counters = dict(dra.DEFAULT_COUNTERS)
    if isinstance(value, dict):
        reader.fields(value, path, DRA_PARTITION_FIELDS)
        count = value.get("count")
        if count is None:
            reader.error(f"{path}.count", "required")
            return False
        count_path = f"{path}.count"
        if value.get("counters") is not None:
            raw_counters = value["counters"]
            if not reader.expect(raw_counters, f"{path}.counters", "mapping"):
                return False
            counters = {}
            for name, q in raw_counters.items():
                at = _key_path(f"{path}.counters", str(name))
                for msg in dns1123_label_errors(str(name)):
                    reader.error(at, f"invalid counter name: {msg}")
                if isinstance(q, bool) or not isinstance(q, (str, int)):
                    reader.error(at, f"expected a quantity such as 80Gi, got {_got(q)}")
                    continue
                try:
                    counters[str(name)] = dra.canonical_quantity(str(q))
                except ValueError as e:
                    reader.error(at, str(e))
            if not counters:
                reader.error(f"{path}.counters", "must not be empty")
    else:
        count, count_path = value, path
    if not reader.expect(count, count_path, "integer"):
        return False
    if count < 0:
        reader.error(count_path, f"invalid partition count {count}: must be 0 or more")
        return False
    if count == 0:
        return None
    if DRA_PARTITIONS_GATE in disabled_gates:
        reader.error(path, f"partitionable devices need the feature gate {DRA_PARTITIONS_GATE}, "
                           "which featureGates disables")
        return False
    return dra.PartitionSpec(count=count, counters=tuple(counters.items()))


def _dra_classes(raw: dict, where: str, reader: _Reader, driver: str | None, dra: Any) -> tuple | None:
    default_selector = f"device.driver == '{driver}'"
    value = raw.get("deviceClasses")
    path = f"{where}.deviceClasses"
    if value is None:
        return (dra.DeviceClassSpec(driver, (default_selector,)),) if driver else None
    if not reader.expect(value, path, "list"):
        return None
    out = []
    ok = True
    seen: set[str] = set()
    for c, item in enumerate(value):
        at = f"{path}[{c}]"
        if not reader.expect(item, at, "mapping"):
            ok = False
            continue
        reader.fields(item, at, DRA_CLASS_FIELDS)
        name = item.get("name")
        if name is None:
            reader.error(f"{at}.name", "required")
            ok = False
            continue
        if not reader.expect(name, f"{at}.name", "string"):
            ok = False
            continue
        for msg in dns1123_subdomain_errors(name):
            reader.error(f"{at}.name", f"invalid DeviceClass name {_q(name)}: {msg}")
            ok = False
        if name in seen:
            reader.error(f"{at}.name", f"duplicate DeviceClass name {_q(name)}")
            ok = False
        seen.add(name)
        selectors = item.get("selectors")
        if selectors is None:
            selectors = [default_selector] if driver else []
        elif not reader.list_of(selectors, f"{at}.selectors", "string"):
            ok = False
            continue
        for s, expr in enumerate(selectors):
            problem = _cel_problem(expr)
            if problem:
                reader.error(f"{at}.selectors[{s}]", problem)
                ok = False
        out.append(dra.DeviceClassSpec(name, tuple(selectors)))
    return tuple(out) if ok else None


def _cel_problem(expression: str) -> str | None:
    if not expression.strip():
        return "must not be empty"
    try:
        from phalanx.dra.cel import check_expression
    except ImportError:  # pragma: no cover - the CEL library is a dependency
        return None
    problem = check_expression(expression)
    if problem is None:
        return None
    kind, detail = problem
    return f"invalid CEL expression: {detail}" if detail else f"invalid CEL expression ({kind})"


def _dra_check_devices(where: str, reader: _Reader, dra: Any, driver: str, prefix: str, count: int,
                       attributes: tuple, capacity: tuple, partitions: Any, pool: str) -> None:
    """What only rendering shows: device names, attribute values (for the first and last device) and
    the per-device limit of attributes and capacities."""
    extra = 2 if partitions else 0
    total = len(attributes) + len(capacity) + extra
    if total > dra.MAX_ATTRIBUTES_AND_CAPACITIES:
        reader.error(where, f"a device has {total} attributes and capacities"
                            + (" (with partition and partitionable, or partitionable and full)" if extra else "")
                            + f"; at most {dra.MAX_ATTRIBUTES_AND_CAPACITIES} are allowed")
    if count <= 0:
        return
    last = count - 1
    longest = f"{prefix}-{last}" + (f"-partition-{partitions.count - 1}" if partitions else "")
    for msg in dra.device_name_errors(longest):
        reader.error(where, f"device name {_q(longest)} is invalid: {msg}")
    for index in sorted({0, last}):
        ctx = dra.DeviceContext(driver, pool, index, "value")
        for a in attributes:
            try:
                rendered = a.render(ctx)
            except ValueError as e:
                reader.error(_key_path(f"{where}.attributes", a.name), str(e))
                return
            text = rendered.get("string")
            if isinstance(text, str) and len(text) > dra.MAX_ATTRIBUTE_STRING_LENGTH:
                reader.error(_key_path(f"{where}.attributes", a.name),
                             f"gives {_q(text)} for device {index}, longer than "
                             f"{dra.MAX_ATTRIBUTE_STRING_LENGTH} characters")
                return
        for c in capacity:
            try:
                c.render(ctx)
            except ValueError as e:
                reader.error(_key_path(f"{where}.capacity", c.name), str(e))
                return


def _parse_dra_driver(raw: dict, where: str, reader: _Reader, disabled_gates: set[str], dra: Any) -> Any:
    reader.fields(raw, where, DRA_DRIVER_FIELDS)
    before = len(reader.problems)
    name = _dra_driver_name(raw.get("name"), f"{where}.name", reader)
    classes = _dra_classes(raw, where, reader, name, dra)
    node_selector = reader.labels(raw.get("nodeSelector"), f"{where}.nodeSelector")
    count = _dra_count(raw, "devicesPerNode", where, reader, dra.DEFAULT_DEVICES_PER_NODE, dra)
    prefix = _dra_prefix(raw, where, reader, dra.DEFAULT_DEVICE_PREFIX)
    attributes = _dra_attributes(raw, where, reader, dra.default_attributes(prefix or dra.DEFAULT_DEVICE_PREFIX), dra)
    capacity = _dra_capacity(raw, where, reader, dict(dra.DEFAULT_CAPACITY), dra)
    partitions = _dra_partitions(raw, where, reader, disabled_gates, dra)
    taints = _dra_taints(raw, where, reader, disabled_gates, dra, count)
    if None in (name, classes, count, prefix, attributes, capacity, taints) or partitions is False:
        return None
    sample_node = "phalanx-worker"
    _dra_check_devices(where, reader, dra, name, prefix, count, attributes, capacity, partitions, sample_node)
    pools = _dra_pools(raw, where, reader, disabled_gates, dra, name, prefix, attributes, capacity)
    if pools is None or len(reader.problems) > before:
        return None
    return dra.DRADriverSpec(name=name, device_classes=classes, devices_per_node=count, device_prefix=prefix,
                             attributes=attributes, capacity=capacity, node_selector=tuple(node_selector.items()),
                             partitions=partitions, taints=taints, pools=pools)


def _dra_pools(raw: dict, where: str, reader: _Reader, disabled_gates: set[str], dra: Any, driver: str,
               prefix: str, attributes: tuple, capacity: tuple) -> tuple | None:
    value = raw.get("pools")
    path = f"{where}.pools"
    if value is None:
        return ()
    if not reader.expect(value, path, "list"):
        return None
    out = []
    ok = True
    names: set[str] = set()
    for p, item in enumerate(value):
        at = f"{path}[{p}]"
        if not reader.expect(item, at, "mapping"):
            ok = False
            continue
        before = len(reader.problems)
        reader.fields(item, at, DRA_POOL_FIELDS)
        name_template = None
        name = item.get("name")
        if name is None:
            reader.error(f"{at}.name", "required")
        elif reader.expect(name, f"{at}.name", "string"):
            try:
                name_template = dra.ValueTemplate(name)
            except ValueError as e:
                reader.error(f"{at}.name", str(e))
            else:
                if name_template.uses - {"value"}:
                    reader.error(f"{at}.name", "a pool name can only use the {value} placeholder")
                    name_template = None
        node_selector = reader.labels(item.get("nodeSelector"), f"{at}.nodeSelector")
        all_nodes = item.get("allNodes", False)
        if all_nodes is None:
            all_nodes = False
        reader.expect(all_nodes, f"{at}.allNodes", "boolean")
        per_value_of = item.get("perValueOf")
        if per_value_of is not None and reader.expect(per_value_of, f"{at}.perValueOf", "string"):
            for msg in qualified_name_errors(per_value_of):
                reader.error(f"{at}.perValueOf", f"invalid label key: {msg}")
        if all_nodes is True and (node_selector or per_value_of is not None):
            reader.error(at, "allNodes: true cannot be combined with nodeSelector or perValueOf")
        elif all_nodes is not True and not node_selector and per_value_of is None:
            reader.error(at, "one of allNodes: true, nodeSelector or perValueOf is required")
        if name_template is not None and "value" in name_template.uses and per_value_of is None:
            reader.error(f"{at}.name", "the {value} placeholder needs perValueOf")
        count = _dra_count(item, "devices", at, reader, 1, dra)
        pool_prefix = _dra_prefix(item, at, reader, prefix)
        pool_attributes = _dra_attributes(item, at, reader, attributes, dra)
        pool_capacity = _dra_capacity(item, at, reader, capacity, dra)
        pool_taints = _dra_taints(item, at, reader, disabled_gates, dra, count)
        if len(reader.problems) > before or None in (name_template, count, pool_prefix, pool_attributes,
                                                     pool_capacity, pool_taints):
            ok = False
            continue
        sample_value = "value" if per_value_of else ""
        sample_pool = name_template.render(dra.DeviceContext(driver, "", value=sample_value))
        if per_value_of and "value" not in name_template.uses:
            sample_pool = f"{sample_pool}-{sample_value}"
        for msg in dra.pool_name_errors(sample_pool):
            reader.error(f"{at}.name", f"invalid pool name {_q(sample_pool)}: {msg}")
        if per_value_of is None and name in names:
            reader.error(f"{at}.name", f"duplicate pool name {_q(name)}")
        names.add(name)
        _dra_check_devices(at, reader, dra, driver, pool_prefix, count, pool_attributes, pool_capacity, None,
                           sample_pool)
        if len(reader.problems) > before:
            ok = False
            continue
        out.append(dra.NetworkPoolSpec(name=name_template, devices=count, device_prefix=pool_prefix,
                                       attributes=pool_attributes, capacity=pool_capacity,
                                       node_selector=tuple(node_selector.items()), all_nodes=all_nodes is True,
                                       per_value_of=per_value_of, taints=pool_taints))
    return tuple(out) if ok else None
