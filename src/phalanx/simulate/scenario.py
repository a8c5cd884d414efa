"""The scenario file of `phalanx simulate`: what to run, on which cluster, for how long, and which
variants to compare.

    scenario = load_scenario("examples/simulate/small.yaml")     # ConfigFileError on any problem
    scenario.variants[0].cluster                                  # a ClusterSpec
    for arrival in scenario.stream(scenario.variants[0]):         # the jobs, in arrival order
        ...

The format (every problem is reported at once, each naming the file and the field path, the way
cluster configs are read: `machinery.strictyaml`):

    apiVersion: phalanx.dev/v1alpha1
    kind: Scenario
    name: gpu-day
    seed: 7                               # generators and the scheduler's tie-breaks
    kubernetesVersion: v1.36.4            # optional: the cluster's version, overriding its config
    duration: 24h                         # the simulated horizon
    sampleEvery: 60s                      # how often cluster-wide figures are sampled (default 60s)
    cluster: ../clusters/phalanx-gpu-topology.yaml   # a kind or phalanx config: a path or inline
    variants:                             # optional; each runs the same stream
    - name: rack
    - name: no-constraint
      overrides: {topology: null}         # changes to every job of the stream
      schedulerConfig: {...}              # a KubeSchedulerConfiguration, inline or a path
      cluster: ./bigger.yaml              # another cluster
    workload: [...]                       # templates, generators, traces (`stream.py`)
    failures:
    - {at: 3h, nodes: {matchLabels: {example.com/rack: rack-3}}, recoverAfter: 30m}
    - {at: 5h, node: gpu-17, devices: ["*"], recoverAfter: 1h}

Paths are relative to the scenario file. A failure without `devices` takes its nodes down
(annotation `fault.phalanx.dev/node: "down"`); with `devices` it fails those devices
(`fault.phalanx.dev/devices`, `*` for all). Without `recoverAfter` it lasts to the end.

When the scenario's `kubernetesVersion` is a release that merged gates the cluster config sets
(`GangScheduling` and `WorkloadAwarePreemption` became `GenericWorkload` in 1.37), the config's
gates are mapped to the merged ones and the scenario's `notes` say so.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..cluster.kindconfig import KIND_API_VERSION, parse_kind
from ..cluster.phalanxconfig import PHALANX_API_VERSION, parse_phalanx
from ..cluster.spec import ClusterSpec
from ..machinery.featuregates import MERGED_GATES
from ..machinery.names import dns1123_label_errors
from ..machinery.releases import UnsupportedVersion, parse_version
from ..machinery.selectors import LabelSelector, label_selector_from_object
from ..machinery.strictyaml import ConfigFileError, DocumentReader, got, is_int, key_path, load_strict_yaml, quote
from .jobs import JobArrival
from .objects import level_key
from .stream import OVERRIDE_FIELDS, StreamEntry, merged_stream, read_kind, read_quantity, read_seconds, read_workload

API_VERSION = "phalanx.dev/v1alpha1"
KIND = "Scenario"
SCENARIO_FIELDS = ("apiVersion", "kind", "name", "seed", "kubernetesVersion", "duration", "sampleEvery", "cluster",
                   "variants", "workload", "failures")
VARIANT_FIELDS = ("name", "schedulerConfig", "cluster", "overrides")
FAILURE_FIELDS = ("at", "node", "nodes", "devices", "recoverAfter")
DEFAULT_SAMPLE_EVERY = 60.0
MAX_SAMPLES = 100_000


@dataclass
class Failure:
    """Nodes (by name or label selector) or devices that fail at `at` and recover `recover_after` later."""

    at: float
    node: str | None = None
    selector: LabelSelector | None = None
    selector_text: str = ""
    devices: list[str] | None = None  # None: the node goes down
    recover_after: float | None = None
    path: str = ""

    def nodes_of(self, cluster: ClusterSpec) -> list[str]:
        if self.node is not None:
            return [self.node]
        assert self.selector is not None
        return [n.name for n in cluster.nodes if self.selector.matches(n.labels)]

    def describe(self) -> str:
        what = f"node {self.node}" if self.node else f"nodes {self.selector_text}"
        return f"{what}: devices {','.join(self.devices)}" if self.devices else f"{what}: down"


@dataclass
class Variant:
    name: str
    cluster: ClusterSpec
    cluster_source: str
    scheduler_config: dict[str, Any] | None = None
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class Scenario:
    name: str
    source: str
    seed: int
    duration: float
    sample_every: float
    variants: list[Variant]
    entries: list[StreamEntry]
    failures: list[Failure]
    document: dict[str, Any]  # the scenario as written (for the report)
    kubernetes_version: str | None = None
    notes: list[str] = field(default_factory=list)

    def stream(self, variant: Variant, seed: int | None = None) -> Iterator[JobArrival]:
        """The jobs `variant` runs: every entry's, in arrival order, with its overrides."""
        return merged_stream(self.entries, self.seed if seed is None else seed, variant.overrides, self.duration)

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)


def load_scenario(path: str) -> Scenario:
    """Read and validate a scenario file; ConfigFileError naming the file and every bad field."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigFileError(path, [("", f"cannot read scenario: {e.strerror or e}")]) from None
    return parse_scenario(text, path, os.path.dirname(os.path.abspath(path)))


def parse_scenario(text: str, source: str, base_dir: str = ".") -> Scenario:
    doc = load_strict_yaml(text, source)
    if not isinstance(doc, dict):
        raise ConfigFileError(source, [("", f"expected a {KIND} mapping at the top level, got {got(doc)}")])
    reader = DocumentReader(source)
    reader.fields(doc, "", SCENARIO_FIELDS)
    _check_header(doc, reader)
    name = doc.get("name") or os.path.splitext(os.path.basename(source))[0]
    if not isinstance(name, str):
        reader.error("name", f"expected a string, got {got(name)}")
        name = "scenario"
    seed = doc.get("seed", 0)
    if not is_int(seed):
        reader.error("seed", f"expected an integer, got {got(seed)}")
        seed = 0
    version = _read_version(doc, reader)
    duration = _read_duration(doc, reader)
    sample_every = read_seconds(doc.get("sampleEvery", DEFAULT_SAMPLE_EVERY), "sampleEvery", reader) \
        or DEFAULT_SAMPLE_EVERY
    if duration and duration / sample_every > MAX_SAMPLES:
        reader.error("sampleEvery", f"too small for the duration: at most {MAX_SAMPLES} samples per run")
    notes: list[str] = []
    cluster = None
    if "cluster" not in doc:
        reader.error("cluster", "required: a cluster config (a path, or a kind or phalanx Cluster inline)")
    else:
        cluster = read_cluster(doc["cluster"], "cluster", reader, base_dir, version, notes)
    entries = read_workload(doc.get("workload"), "workload", reader, base_dir, duration or 0.0) \
        if "workload" in doc else []
    if "workload" not in doc:
        reader.error("workload", "required: at least one template, generator or trace")
    variants = read_variants(doc.get("variants"), reader, base_dir, version, cluster, notes)
    failures = read_failures(doc.get("failures"), reader, variants)
    _check_levels(entries, variants, reader)
    reader.raise_problems()
    return Scenario(name=name, source=source, seed=seed, duration=duration or 0.0, sample_every=sample_every,
                    variants=variants, entries=entries, failures=failures, document=doc,
                    kubernetes_version=version, notes=notes)


def _check_header(doc: dict, reader: DocumentReader) -> None:
    if doc.get("apiVersion") != API_VERSION:
        what = "required" if doc.get("apiVersion") is None else f"unsupported value {quote(doc.get('apiVersion'))}"
        reader.error("apiVersion", f"{what}; allowed: {API_VERSION}")
    if doc.get("kind") != KIND:
        what = "required" if doc.get("kind") is None else f"unsupported value {quote(doc.get('kind'))}"
        reader.error("kind", f"{what}; allowed: {KIND}")


def _read_version(doc: dict, reader: DocumentReader) -> str | None:
    if doc.get("kubernetesVersion") is None or not reader.expect(doc["kubernetesVersion"], "kubernetesVersion",
                                                                 "string"):
        return None
    try:
        return parse_version(doc["kubernetesVersion"])[1]
    except UnsupportedVersion as e:
        reader.error("kubernetesVersion", str(e))
        return None


def _read_duration(doc: dict, reader: DocumentReader) -> float | None:
    if "duration" not in doc:
        reader.error("duration", "required: the simulated horizon, e.g. 24h")
        return None
    seconds = read_seconds(doc["duration"], "duration", reader)
    if seconds is not None and seconds <= 0:
        reader.error("duration", "must be > 0")
        return None
    return seconds


def _check_levels(entries: list[StreamEntry], variants: list[Variant], reader: DocumentReader) -> None:
    """Every topology level a template or generator asks for names a node label of every cluster."""
    for variant in variants:
        keys = {k for n in variant.cluster.nodes for k in n.labels}
        levels = [(e.path, level) for e in entries for level in e.topologies]
        if isinstance(variant.overrides.get("topology"), str):
            levels.append((f"variants[{variants.index(variant)}].overrides", variant.overrides["topology"]))
        for path, level in levels:
            if level_key(level, keys) is None:
                reader.error(key_path(path, "topology"), f"no node label of the cluster of variant "
                                                         f"{quote(variant.name)} is a level {quote(level)}")


# -- clusters -----------------------------------------------------------------------------------------

def read_cluster(value: Any, path: str, reader: DocumentReader, base_dir: str, version: str | None,
                 notes: list[str]) -> ClusterSpec | None:
    """A cluster config given by path (relative to the scenario) or inline; its problems are
    reported under `path` (inline) or in the config's own file."""
    if isinstance(value, str):
        file = os.path.join(base_dir, os.path.expanduser(value))
        try:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            reader.error(path, f"cannot read cluster config {file}: {e.strerror or e}")
            return None
        try:
            doc = load_strict_yaml(text, file)
        except ConfigFileError as e:
            reader.problems += [(path, f"{file}: {where}: {msg}" if where else f"{file}: {msg}")
                                for where, msg in e.problems]
            return None
        return _parse_cluster_doc(doc, file, "", reader, path, version, notes)
    if isinstance(value, dict):
        return _parse_cluster_doc(copy.deepcopy(value), reader.source, path, reader, path, version, notes)
    reader.error(path, f"expected a path or a Cluster mapping, got {got(value)}")
    return None


def _parse_cluster_doc(doc: Any, source: str, prefix: str, reader: DocumentReader, path: str, version: str | None,
                       notes: list[str]) -> ClusterSpec | None:
    if not isinstance(doc, dict):
        reader.error(path, f"expected a Cluster mapping, got {got(doc)}")
        return None
    if version is not None:
        _map_merged_gates(doc, version, source, notes)
    inner = DocumentReader(source)
    override = (version, "kubernetesVersion") if version is not None else None
    if doc.get("apiVersion") == KIND_API_VERSION:
        spec = parse_kind(doc, inner, None, override)
    elif doc.get("apiVersion") == PHALANX_API_VERSION:
        spec = parse_phalanx(doc, inner, None, override)
    else:
        inner.error("apiVersion", f"unsupported value {quote(doc.get('apiVersion'))}; allowed: {KIND_API_VERSION}, "
                                  f"{PHALANX_API_VERSION}")
        spec = None
    for where, msg in inner.problems:
        if prefix:
            reader.error(f"{prefix}.{where}" if where else prefix, msg)
        else:
            reader.error(path, f"{source}: {where}: {msg}" if where else f"{source}: {msg}")
    if spec is None or inner.problems:
        return None
    spec.storage = "memory"
    return spec


def _map_merged_gates(doc: dict, version: str, source: str, notes: list[str]) -> None:
    """Gates of the config that the scenario's release merged into another: set that one instead."""
    release = parse_version(version)[0]
    gates = doc.get("featureGates")
    merged = MERGED_GATES.get(release, {})
    if not isinstance(gates, dict) or not any(g in merged for g in gates):
        return
    new: dict[str, Any] = {}
    for gate, value in gates.items():
        target = merged.get(gate)
        if target is None:
            new[gate] = value
            continue
        new.setdefault(target, value)
        notes.append(f"{source}: featureGates.{gate} is {target} in Kubernetes {release}")
    doc["featureGates"] = new


# -- variants -----------------------------------------------------------------------------------------

def read_variants(value: Any, reader: DocumentReader, base_dir: str, version: str | None,
                  cluster: ClusterSpec | None, notes: list[str]) -> list[Variant]:
    if value is None:
        value = [{"name": "default"}]
    variants: list[Variant] = []
    if not reader.expect(value, "variants", "list"):
        return variants
    if not value:
        reader.error("variants", "must list at least one variant")
    seen: set[str] = set()
    for i, item in enumerate(value):
        path = f"variants[{i}]"
        if not reader.expect(item, path, "mapping"):
            continue
        reader.fields(item, path, VARIANT_FIELDS)
        name = item.get("name")
        if not isinstance(name, str) or dns1123_label_errors(name):
            reader.error(key_path(path, "name"), f"expected a DNS-1123 label (it names the variant's files), "
                                                 f"got {got(name)}")
            continue
        if name in seen:
            reader.error(key_path(path, "name"), f"duplicate variant {quote(name)}")
        seen.add(name)
        own = read_cluster(item["cluster"], key_path(path, "cluster"), reader, base_dir, version, notes) \
            if "cluster" in item else None
        spec = own or cluster
        if spec is None:
            continue
        spec = copy.deepcopy(spec)
        sched = _read_scheduler_config(item.get("schedulerConfig"), key_path(path, "schedulerConfig"), reader,
                                       base_dir, spec)
        if sched is not None:
            spec.scheduler["config"] = sched
        source = item["cluster"] if isinstance(item.get("cluster"), str) else "inline"
        variants.append(Variant(name=name, cluster=spec, cluster_source=source, scheduler_config=sched,
                                overrides=_read_overrides(item.get("overrides"), key_path(path, "overrides"), reader)))
    return variants


def _read_scheduler_config(value: Any, path: str, reader: DocumentReader, base_dir: str,
                           spec: ClusterSpec) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        file = os.path.join(base_dir, os.path.expanduser(value))
        try:
            with open(file, encoding="utf-8") as f:
                value = load_strict_yaml(f.read(), file)
        except OSError as e:
            reader.error(path, f"cannot read {file}: {e.strerror or e}")
            return None
        except ConfigFileError as e:
            reader.error(path, str(e))
            return None
    if not reader.expect(value, path, "mapping"):
        return None
    from ..machinery.featuregates import FeatureGates
    from ..scheduler.framework.config import load_configuration  # loads the plugins: only when one is given
    try:
        load_configuration(value, FeatureGates.from_config(spec.feature_gates, spec.release))
    except (ValueError, TypeError, KeyError) as e:
        reader.error(path, f"invalid KubeSchedulerConfiguration: {e}")
        return None
    return dict(value)


def _read_overrides(value: Any, path: str, reader: DocumentReader) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if value is None or not reader.expect(value, path, "mapping"):
        return out
    reader.fields(value, path, tuple(OVERRIDE_FIELDS))
    for key, v in value.items():
        where = key_path(path, str(key))
        if key == "topology" and v is not None and not isinstance(v, str):
            reader.error(where, f"expected a level name or null, got {got(v)}")
        elif key == "sharedClaim" and not isinstance(v, bool):
            reader.error(where, f"expected a boolean, got {got(v)}")
        elif key in ("priority", "minCount") and v is not None and not is_int(v):
            reader.error(where, f"expected an integer or null, got {got(v)}")
        elif key == "gpusPerPod" and (not is_int(v) or v < 0):
            reader.error(where, f"expected an integer >= 0, got {got(v)}")
        elif key == "kind":
            out[key] = read_kind(v, where, reader)
            continue
        elif key in ("cpuPerPod", "memoryPerPod"):
            v = read_quantity(v, where, reader)
        if key in OVERRIDE_FIELDS:
            out[key] = v
    return out


# -- failures -----------------------------------------------------------------------------------------

def read_failures(value: Any, reader: DocumentReader, variants: list[Variant]) -> list[Failure]:
    failures: list[Failure] = []
    if value is None or not reader.expect(value, "failures", "list"):
        return failures
    for i, item in enumerate(value):
        path = f"failures[{i}]"
        if not reader.expect(item, path, "mapping"):
            continue
        reader.fields(item, path, FAILURE_FIELDS)
        failure = _read_failure(item, path, reader)
        if failure is None:
            continue
        for v in variants:
            if failure.node is not None and failure.node not in {n.name for n in v.cluster.nodes}:
                reader.error(key_path(path, "node"), f"no node {quote(failure.node)} in the cluster of variant "
                                                     f"{quote(v.name)}")
            elif failure.selector is not None and not failure.nodes_of(v.cluster):
                reader.error(key_path(path, "nodes"), f"selects no node of the cluster of variant {quote(v.name)}")
        failures.append(failure)
    return failures


def _read_failure(item: dict, path: str, reader: DocumentReader) -> Failure | None:
    if "at" not in item:
        reader.error(key_path(path, "at"), "required: when the failure starts, e.g. 3h")
    at = read_seconds(item.get("at"), key_path(path, "at"), reader) if "at" in item else None
    recover = read_seconds(item.get("recoverAfter"), key_path(path, "recoverAfter"), reader, allow_none=True)
    if ("node" in item) == ("nodes" in item):
        reader.error(path, "expected exactly one of: node (a name), nodes (a label selector)")
        return None
    failure = Failure(at=at or 0.0, recover_after=recover, path=path)
    if "node" in item:
        if not reader.expect(item["node"], key_path(path, "node"), "string"):
            return None
        failure.node = item["node"]
    else:
        if not reader.expect(item["nodes"], key_path(path, "nodes"), "mapping"):
            return None
        reader.fields(item["nodes"], key_path(path, "nodes"), ("matchLabels", "matchExpressions"))
        try:
            failure.selector = label_selector_from_object(item["nodes"])
        except ValueError as e:
            reader.error(key_path(path, "nodes"), str(e))
            return None
        failure.selector_text = str(failure.selector)
    if "devices" in item:
        devices = item["devices"]
        if not reader.list_of(devices, key_path(path, "devices"), "string"):
            return None
        if not devices:
            reader.error(key_path(path, "devices"), "must name at least one device, or \"*\" for all")
            return None
        failure.devices = list(devices)
    return failure if at is not None else None
