"""phalanx's own cluster config (`phalanx.dev/v1alpha1`, `kind: Cluster`): what kind's format
cannot say. Node pools of any size with templated labels (`rack-{i//16}`), capacity, taints,
storage, listen address, port, kubelet, scheduler and controller-manager settings, simulated DRA
drivers (`draDrivers`, parsed by `phalanx.nodes.dradriver.config`) and scheduled failures
(`failures`, with `controllerManager` parsed by `phalanx.cluster.failureconfig`). See
docs/cluster-config.md and docs/failures.md.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any, Callable

from phalanx.cluster.configparse import (DEFAULT_CAPACITY, DEFAULT_ROLES, ROLES, WORKER, apply_feature_gates,
                                         check_address, decide_version, duration_seconds, finish_nodes,
                                         kind_named_nodes, read_header)
from phalanx.cluster.failureconfig import parse_controller_manager, parse_failures
from phalanx.cluster.spec import ClusterSpec, NodeSpec
from phalanx.machinery.names import dns1123_label_errors, label_value_errors, qualified_name_errors
from phalanx.machinery.strictyaml import DocumentReader, key_path, quote
from phalanx.machinery.templates import IndexExpression, parse_index_expression, scan_placeholders

PHALANX_API_VERSION = "phalanx.dev/v1alpha1"
PHALANX_CLUSTER_FIELDS = ("apiVersion", "kind", "name", "kubernetesVersion", "featureGates", "runtimeConfig",
                          "nodePools", "storage", "listenAddress", "port", "draDrivers", "kubelet", "scheduler",
                          "controllerManager", "failures", "apiServer")
PHALANX_API_SERVER_FIELDS = ("eventTTL",)
PHALANX_KUBELET_FIELDS = ("containerCreatingDelay", "terminatingDelay", "stages", "nodeLeaseDurationSeconds")
PHALANX_SCHEDULER_FIELDS = ("enabled", "permitWaitingTimeout", "config")
PHALANX_POOL_FIELDS = ("name", "count", "role", "labels", "capacity", "taints")
TAINT_FIELDS = ("key", "value", "effect")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
STORAGE_BACKENDS = ("sqlite", "memory")

_QUANTITY_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")


def parse_phalanx(doc: dict, reader: DocumentReader, name_override: str | None,
                  version_override: tuple[str, str] | None = None) -> ClusterSpec:
    """A phalanx `Cluster` document → ClusterSpec; problems go to `reader`. `version_override`
    (version, where: `create cluster --image`) wins over `kubernetesVersion`."""
    header = read_header(doc, reader, name_override, PHALANX_CLUSTER_FIELDS)
    spec, gates = header.spec, header.gates
    _parse_serving(doc, reader, spec)
    if "kubelet" in doc and reader.expect(doc["kubelet"], "kubelet", "mapping"):
        _parse_kubelet(doc["kubelet"], reader, spec)
    if "scheduler" in doc and reader.expect(doc["scheduler"], "scheduler", "mapping"):
        _parse_scheduler(doc["scheduler"], reader, spec)
    if "draDrivers" in doc and doc["draDrivers"] is not None:
        # Imported here, not at the top: the DRA validators load the CEL library (about a second),
        # which every `phalanx` command would pay for otherwise.
        from phalanx.nodes.dradriver.config import read_dra_drivers
        disabled_gates = {g for g, (enabled, _) in gates.items() if not enabled}
        problems_before = len(reader.problems)
        read_dra_drivers(doc["draDrivers"], "draDrivers", reader, disabled_gates)
        if len(reader.problems) == problems_before:
            spec.dra_drivers = copy.deepcopy(doc["draDrivers"])
    nodes = _parse_node_pools(doc.get("nodePools"), reader, spec.name)
    if doc.get("apiServer") is not None and reader.expect(doc["apiServer"], "apiServer", "mapping"):
        _parse_api_server(doc["apiServer"], reader, spec)
    if doc.get("controllerManager") is not None:
        parse_controller_manager(doc["controllerManager"], reader, spec)
    if doc.get("failures") is not None:
        parse_failures(doc["failures"], reader, spec, finish_nodes([NodeSpec(**vars(n)) for n in nodes]))
    chosen = version_override
    if chosen is None and doc.get("kubernetesVersion") is not None and \
            reader.expect(doc["kubernetesVersion"], "kubernetesVersion", "string"):
        chosen = (doc["kubernetesVersion"], "kubernetesVersion")
    decide_version(spec, chosen, gates, reader)
    apply_feature_gates(spec, gates, reader)
    if not reader.problems:
        spec.nodes = finish_nodes(nodes)
    spec.ignored_fields = list(reader.ignored)
    return spec


def _parse_serving(doc: dict, reader: DocumentReader, spec: ClusterSpec) -> None:
    """`storage`, `listenAddress` and `port`."""
    if "storage" in doc and reader.expect(doc["storage"], "storage", "string"):
        if doc["storage"] not in STORAGE_BACKENDS:
            reader.error("storage", f"unsupported value {quote(doc['storage'])}; allowed: {', '.join(STORAGE_BACKENDS)}")
        else:
            spec.storage = doc["storage"]
    if "listenAddress" in doc and reader.expect(doc["listenAddress"], "listenAddress", "string"):
        if check_address(doc["listenAddress"], "listenAddress", reader):
            spec.listen_address = doc["listenAddress"]
    if "port" in doc and reader.expect(doc["port"], "port", "integer"):
        if not 0 <= doc["port"] <= 65535:
            reader.error("port", f"invalid port {doc['port']}: must be between 0 and 65535 (0 picks a free port)")
        else:
            spec.port = doc["port"]


def _parse_kubelet(section: dict, reader: DocumentReader, spec: ClusterSpec) -> None:
    for k, v in section.items():
        if k == "stages":
            _parse_stages(v, reader, spec)
            continue
        if k == "nodeLeaseDurationSeconds":
            if reader.expect(v, "kubelet.nodeLeaseDurationSeconds", "integer"):
                if v <= 0:
                    reader.error("kubelet.nodeLeaseDurationSeconds", f"invalid value {v}: must be greater than 0")
                else:
                    spec.kubelet[k] = v
            continue
        seconds = duration_seconds(v)
        if k not in PHALANX_KUBELET_FIELDS:
            reader.error(f"kubelet.{k}", f"unknown field; allowed: {', '.join(PHALANX_KUBELET_FIELDS)}")
        elif seconds is None:
            reader.error(f"kubelet.{k}", f"invalid duration {quote(str(v))}: use Go durations such as 500ms, 2s, 1m")
        else:
            spec.kubelet[k] = seconds


def _stage_files(entry: str, reader: DocumentReader) -> list[str]:
    """The files an entry of `kubelet.stages` names: a file, or the `.yaml`/`.yml` files of a
    directory in name order; relative paths start at the config file's directory."""
    base = os.path.dirname(os.path.abspath(reader.source)) if reader.source not in ("<stdin>", "-") else os.getcwd()
    path = os.path.join(base, os.path.expanduser(entry))
    if os.path.isdir(path):
        return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith((".yaml", ".yml")))
    return [path]


def _parse_stages(value: Any, reader: DocumentReader, spec: ClusterSpec) -> None:
    """`kubelet.stages`: KWOK Stage files (or directories of them), read and checked now and kept
    in the cluster's spec, so a restarted cluster runs the same stages."""
    if not reader.expect(value, "kubelet.stages", "list"):
        return
    from phalanx.nodes.stages import StageError, load_stages  # only for this field (CLI start-up)
    kept = []
    for i, entry in enumerate(value):
        where = f"kubelet.stages[{i}]"
        if not reader.expect(entry, where, "string"):
            continue
        for path in _stage_files(entry, reader):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                load_stages(text, path)
            except OSError as e:
                reader.error(where, f"cannot read stage file {quote(path)}: {e.strerror or e}")
            except StageError as e:
                reader.error(where, str(e))
            else:
                kept.append({"source": path, "text": text})
    spec.kubelet["stages"] = kept


def _parse_api_server(section: dict, reader: DocumentReader, spec: ClusterSpec) -> None:
    """`apiServer:` — `eventTTL` (kube-apiserver's `--event-ttl`): how long an Event lives after
    its last write, a Go duration > 0."""
    for k, v in section.items():
        if k not in PHALANX_API_SERVER_FIELDS:
            reader.error(f"apiServer.{k}", f"unknown field; allowed: {', '.join(PHALANX_API_SERVER_FIELDS)}")
            continue
        seconds = duration_seconds(v)
        if not seconds:
            reader.error("apiServer.eventTTL", f"invalid duration {quote(str(v))}: must be a Go duration > 0, e.g. 1h")
        else:
            spec.event_ttl = seconds


def _parse_scheduler(section: dict, reader: DocumentReader, spec: ClusterSpec) -> None:
    for k, v in section.items():
        if k not in PHALANX_SCHEDULER_FIELDS:
            reader.error(f"scheduler.{k}", f"unknown field; allowed: {', '.join(PHALANX_SCHEDULER_FIELDS)}")
        elif k == "enabled":
            if reader.expect(v, "scheduler.enabled", "boolean"):
                spec.scheduler["enabled"] = v
        elif k == "permitWaitingTimeout":
            seconds = duration_seconds(v)
            if seconds is None:
                reader.error("scheduler.permitWaitingTimeout", f"invalid duration {quote(str(v))}")
            else:
                spec.scheduler["permitWaitingTimeout"] = seconds
        elif reader.expect(v, "scheduler.config", "mapping"):
            from phalanx.scheduler.framework.config import load_configuration  # only for this section (CLI start-up)
            try:
                load_configuration(v)
            except (ValueError, TypeError, KeyError) as e:
                reader.error("scheduler.config", f"invalid KubeSchedulerConfiguration: {e}")
            else:
                spec.scheduler["config"] = copy.deepcopy(v)


def _parse_node_pools(pools: Any, reader: DocumentReader, cluster_name: str) -> list[NodeSpec]:
    if pools is None:
        return kind_named_nodes(cluster_name, DEFAULT_ROLES)
    nodes: list[NodeSpec] = []
    if not reader.expect(pools, "nodePools", "list"):
        return nodes
    seen_pools: set[str] = set()
    for p, pool in enumerate(pools):
        path = f"nodePools[{p}]"
        if reader.expect(pool, path, "mapping"):
            nodes.extend(_parse_pool(pool, path, reader, seen_pools, len(nodes)))
    seen_names: set[str] = set()
    for n in nodes:
        if n.name in seen_names:
            reader.error("nodePools", f"duplicate node name {quote(n.name)}")
            break
        seen_names.add(n.name)
    return nodes


def _parse_pool(pool: dict, path: str, reader: DocumentReader, seen: set[str], first_index: int) -> list[NodeSpec]:
    reader.fields(pool, path, PHALANX_POOL_FIELDS)
    name = _pool_name(pool.get("name"), f"{path}.name", reader, seen)
    ok = name is not None
    count = pool.get("count", 1)
    if not reader.expect(count, f"{path}.count", "integer"):
        ok = False
    elif count < 0:
        reader.error(f"{path}.count", f"invalid count {count}: must be 0 or more")
        ok = False
    role = pool.get("role", WORKER)
    if role not in ROLES:
        reader.error(f"{path}.role", f"unsupported value {quote(role)}; allowed: {', '.join(ROLES)}")
        ok = False
    label_templates = _parse_label_templates(pool.get("labels"), f"{path}.labels", reader)
    capacity = _parse_capacity(pool.get("capacity"), f"{path}.capacity", reader)
    taints = _parse_taints(pool.get("taints"), f"{path}.taints", reader)
    if not ok or label_templates is None:
        return []
    nodes = []
    reported: set[str] = set()
    for i in range(count):
        labels = _render_labels(label_templates, i, first_index + i, f"{path}.labels", reader, reported)
        nodes.append(NodeSpec(name=f"{name}-{i}", role=role, labels=labels, capacity=dict(capacity),
                              taints=[dict(t) for t in taints]))
    return nodes


def _pool_name(name: Any, path: str, reader: DocumentReader, seen: set[str]) -> str | None:
    if name is None:
        reader.error(path, "required")
        return None
    if not reader.expect(name, path, "string"):
        return None
    ok = True
    for msg in dns1123_label_errors(name):
        reader.error(path, f"invalid pool name {quote(name)}: {msg}")
        ok = False
    if name in seen:
        reader.error(path, f"duplicate pool name {quote(name)}")
        ok = False
    seen.add(name)
    return name if ok else None


def _render_labels(templates: dict[str, Callable[[int, int], str]], i: int, n: int, path: str,
                   reader: DocumentReader, reported: set[str]) -> dict[str, str]:
    """One node's labels; a template giving an invalid value is reported once per key."""
    labels = {}
    for key, render in templates.items():
        value = render(i, n)
        if key not in reported:
            problems = label_value_errors(value)
            if problems:
                reader.error(key_path(path, key),
                             f"template gives invalid label value {quote(value)} for node {i}: {problems[0]}")
                reported.add(key)
        labels[key] = value
    return labels


def _parse_capacity(value: Any, path: str, reader: DocumentReader) -> dict[str, str]:
    capacity = dict(DEFAULT_CAPACITY)
    for resource, quantity in reader.string_map(value, path).items():
        where = key_path(path, resource)
        for msg in qualified_name_errors(resource):
            reader.error(where, f"invalid resource name: {msg}")
        if not _QUANTITY_RE.match(quantity):
            reader.error(where, f"invalid quantity {quote(quantity)}: quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        capacity[resource] = quantity
    return capacity


def _parse_taints(value: Any, path: str, reader: DocumentReader) -> list[dict[str, str]]:
    taints: list[dict[str, str]] = []
    if value is None or not reader.expect(value, path, "list"):
        return taints
    for t, raw in enumerate(value):
        where = f"{path}[{t}]"
        if reader.expect(raw, where, "mapping"):
            taints.append(_parse_taint(raw, where, reader))
    return taints


def _parse_taint(raw: dict, where: str, reader: DocumentReader) -> dict[str, str]:
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
        reader.error(f"{where}.effect", f"unsupported value {quote(effect)}; allowed: {', '.join(TAINT_EFFECTS)}")
    else:
        taint["effect"] = effect
    return taint


# ---------------------------------------------------------------------------------------------
# label templates: "rack-{i//16}", "gpu-{i:03}", "zone-{n//1024%4}"

TEMPLATE_HELP = ("placeholders are {i} (index in the pool) or {n} (index in the cluster), optionally "
                 "followed by integer operations applied left to right (//, %, +, -, *) and a zero-padded "
                 "width, e.g. {i//16}, {n%8}, {i//4%2}, {i:03}; write {{ and }} for literal braces")


def compile_template(template: str) -> Callable[[int, int], str]:
    """Compile a label template into `render(i, n) -> str`; ValueError explains a bad template."""
    parts: list[str | IndexExpression] = []
    for piece in scan_placeholders(template):
        if isinstance(piece, str):
            parts.append(piece)
            continue
        if piece.inner is None:
            raise ValueError(f"unbalanced {quote(piece.token)} in template {quote(template)}; {TEMPLATE_HELP}")
        expr = parse_index_expression(piece.inner, "in")
        if expr is None:
            raise ValueError(f"invalid placeholder {quote(piece.token)} in template {quote(template)}; {TEMPLATE_HELP}")
        if expr.divides_by_zero:
            raise ValueError(f"division by zero in placeholder {quote(piece.token)} of template {quote(template)}")
        parts.append(expr)

    if all(isinstance(p, str) for p in parts):
        text = "".join(p for p in parts if isinstance(p, str))
        return lambda i, n: text

    def render(i: int, n: int) -> str:
        return "".join(p if isinstance(p, str) else p.render(i if p.variable == "i" else n) for p in parts)

    return render


def _parse_label_templates(value: Any, path: str, reader: DocumentReader
                           ) -> dict[str, Callable[[int, int], str]] | None:
    templates: dict[str, Callable[[int, int], str]] = {}
    ok = True
    for key, template in reader.string_map(value, path).items():
        where = key_path(path, key)
        for msg in qualified_name_errors(key):
            reader.error(where, f"invalid label key: {msg}")
            ok = False
        try:
            templates[key] = compile_template(template)
        except ValueError as e:
            reader.error(where, str(e))
            ok = False
    return templates if ok else None
