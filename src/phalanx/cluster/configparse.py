"""What kind's and phalanx's cluster config formats share: the cluster name, feature gates and
runtime config at the top of both, addresses and durations, and kind's node naming, labels and
control-plane taints.

`kindconfig` and `phalanxconfig` parse one format each; `config.parse_cluster_config` picks one.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from phalanx.cluster.spec import ClusterSpec, NodeSpec
from phalanx.machinery.durations import parse_duration
from phalanx.machinery.featuregates import MERGED_GATES, FeatureGates, UnknownFeatureGate
from phalanx.machinery.releases import NEWEST, PATCH_VERSIONS, RELEASES, UnsupportedVersion, parse_version
from phalanx.machinery.names import dns1123_subdomain_errors
from phalanx.machinery.strictyaml import GO_BOOLS, ConfigFileError, DocumentReader, got, key_path, quote, type_name

DEFAULT_CLUSTER_NAME = "phalanx"
CONTROL_PLANE = "control-plane"
WORKER = "worker"
ROLES = (CONTROL_PLANE, WORKER)

CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
EXCLUDE_FROM_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
CONTROL_PLANE_TAINT = {"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"}
DEFAULT_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}

# With no config (and for a phalanx config without nodePools): one control-plane and one worker.
DEFAULT_ROLES: list[tuple[str, dict[str, str]]] = [(CONTROL_PLANE, {}), (WORKER, {})]

# Feature gate overrides, each with the field path that set it (for messages).
GateOverrides = dict[str, tuple[bool, str]]


@dataclass
class ClusterHeader:
    """What both formats say at the top: the spec so far and the feature gates asked for."""

    spec: ClusterSpec
    gates: GateOverrides = field(default_factory=dict)


def read_header(doc: dict, reader: DocumentReader, name_override: str | None,
                allowed_fields: tuple[str, ...]) -> ClusterHeader:
    """Unknown fields, `kind`, `name` (or `--name`), `featureGates` and `runtimeConfig`."""
    reader.fields(doc, "", allowed_fields)
    check_kind(doc, reader)
    spec = ClusterSpec()
    cluster_name = name_override or doc.get("name") or DEFAULT_CLUSTER_NAME
    if name_override:
        check_cluster_name(name_override, "--name")
    elif not check_cluster_name(cluster_name, "name", reader):
        cluster_name = DEFAULT_CLUSTER_NAME
    spec.name = cluster_name
    gates = {g: (v, key_path("featureGates", g))
             for g, v in read_feature_gates(doc.get("featureGates"), "featureGates", reader).items()}
    spec.runtime_config = read_runtime_config(doc.get("runtimeConfig"), "runtimeConfig", reader)
    return ClusterHeader(spec, gates)


def check_cluster_name(name: Any, path: str, reader: DocumentReader | None = None) -> bool:
    """A DNS subdomain; without a reader (the `--name` flag) a bad name raises at once."""
    problems = []
    if not isinstance(name, str):
        problems.append(f"expected a string, got {type_name(name)}")
    else:
        problems.extend(f"invalid cluster name {quote(name)}: {m}" for m in dns1123_subdomain_errors(name))
    if not problems:
        return True
    if reader is None:
        raise ConfigFileError(path if path == "--name" else "config", [("" if path == "--name" else path, problems[0])])
    for p in problems:
        reader.error(path, p)
    return False


def check_kind(doc: dict, reader: DocumentReader) -> None:
    if doc.get("kind") != "Cluster":
        what = "required" if "kind" not in doc else f"unsupported value {quote(doc.get('kind'))}"
        reader.error("kind", f"{what}; allowed: Cluster")


def read_feature_gates(value: Any, path: str, reader: DocumentReader) -> dict[str, bool]:
    gates: dict[str, bool] = {}
    if value is None or not reader.expect(value, path, "mapping"):
        return gates
    for name, enabled in value.items():
        if not isinstance(enabled, bool):
            reader.error(key_path(path, str(name)), f"expected a boolean, got {got(enabled)}")
            continue
        gates[str(name)] = enabled
    return gates


def read_runtime_config(value: Any, path: str, reader: DocumentReader) -> dict[str, str]:
    """`runtimeConfig`: API groups/versions switched on or off, as "true"/"false"."""
    out: dict[str, str] = {}
    if value is None or not reader.expect(value, path, "mapping"):
        return out
    for key, raw in value.items():
        if isinstance(raw, bool):
            out[str(key)] = "true" if raw else "false"
        elif isinstance(raw, str) and raw in GO_BOOLS:
            out[str(key)] = "true" if GO_BOOLS[raw] else "false"
        else:
            reader.error(key_path(path, str(key)), f"expected \"true\" or \"false\", got {got(raw)}")
    return out


def decide_version(spec: ClusterSpec, chosen: tuple[str, str] | None, gates: GateOverrides,
                   reader: DocumentReader) -> None:
    """The cluster's Kubernetes version: `chosen` (version text, where it came from) when given;
    otherwise the newest release phalanx serves, unless the config sets a gate only an older release
    has (the seed's kind config enables GangScheduling: it is a 1.36 config)."""
    if chosen is not None:
        text, where = chosen
        try:
            _, spec.kubernetes_version = parse_version(text)
        except UnsupportedVersion as e:
            reader.error(where, str(e))
        return
    reason = "the newest release phalanx serves"
    for release in reversed(RELEASES):
        older_only = [g for g in gates if g in MERGED_GATES.get(release, {})]
        if not older_only:
            spec.kubernetes_version, spec.version_reason = PATCH_VERSIONS[release], reason
            return
        reason = (f"the config sets {older_only[0]}, which Kubernetes {release} merged into "
                  f"{MERGED_GATES[release][older_only[0]]}")
    spec.kubernetes_version, spec.version_reason = PATCH_VERSIONS[RELEASES[0]], reason


def image_version(image: Any, where: str, reader: DocumentReader) -> tuple[str, str] | None:
    """The version a kind node image names in its tag (`kindest/node:v1.37.1@sha256:...`)."""
    if not isinstance(image, str):
        return None
    tag = image.split("@", 1)[0].rpartition("/")[2].partition(":")[2]
    if not tag:
        reader.error(where, f"cannot tell the Kubernetes version of image {quote(image)}: phalanx reads "
                            f"it from the image tag, e.g. kindest/node:{PATCH_VERSIONS[NEWEST]}")
        return None
    return tag, where


def apply_feature_gates(spec: ClusterSpec, gates: GateOverrides, reader: DocumentReader) -> None:
    """Validate gate overrides the way kube components of the cluster's release do at startup,
    then keep them."""
    overrides: dict[str, bool] = {}
    release = spec.release
    for gate, (value, where) in gates.items():
        try:
            FeatureGates({gate: value}, release=release)
        except UnknownFeatureGate as e:
            reader.error(where, str(e))
            continue
        overrides[gate] = value
    if reader.problems:
        return
    for problem in FeatureGates(overrides, release=release).validate():
        reader.error("featureGates", problem)
    spec.feature_gates = overrides


def finish_nodes(nodes: list[NodeSpec]) -> list[NodeSpec]:
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


def kind_named_nodes(cluster: str, nodes: list[tuple[str, dict[str, str]]]) -> list[NodeSpec]:
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
    return finish_nodes(kind_named_nodes(cluster, nodes))


def duration_seconds(value: Any) -> float | None:
    """A Go duration (`500ms`, `2s`, `1m30s`) or a number of seconds; None when neither or negative."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 else None
    try:
        seconds = parse_duration(str(value))
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def check_address(value: str, path: str, reader: DocumentReader) -> bool:
    if value == "localhost":
        return True
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        reader.error(path, f"invalid address {quote(value)}: must be an IP address or \"localhost\"")
        return False
