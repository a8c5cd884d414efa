"""Simulated DRA drivers: the DeviceClasses and ResourceSlices that dra-example-driver publishes, for
every simulated node, without kubelet plugins.

    drivers = SimulatedDRADrivers(client, factory, drivers=spec.dra_drivers, clock=clock)
    drivers.start()
    ...
    await drivers.stop()

`drivers` is what `ClusterSpec.dra_drivers` holds: None for the default (dra-example-driver's `gpu`
profile on every worker), `[]` for none, or the `draDrivers` entries of a phalanx cluster config
(plain mappings, validated by `phalanx.cluster.config.parse_dra_drivers`; `DRADriverSpec`s work too).

What gets published, per driver (docs/cluster-config.md, "Simulated DRA drivers", has the format):

- its DeviceClasses, created at start when missing; a class that exists is left as it is, even
  when a user changed it (like a Helm-installed class);
- for every node it serves, one pool named after the node, published by the helper library's
  rules: slices `<5-hex-digit index>-<driver>-<node>-<random>` (generateName), `spec.nodeName`,
  an ownerReference to the Node (controller: true) so the garbage collector removes them with
  the node, `pool.generation` 1 for a new pool and one more whenever the pool's content changes;
  devices `gpu-0` ... with dra-example-driver's attributes (`index`, `uuid`, `model`,
  `driverVersion`) and capacity (`memory: 80Gi`), or partitionable devices
  (`gpu-i-partition-j`, `gpu-i-full` consuming the shared counter set `gpu-i-counters`, published in
  a slice of its own before the devices' slice);
- network-attached pools (`spec.nodeSelector` with one term, or `spec.allNodes`), for example one
  pool per distinct value of a node label; their slices have no owner.

A node is served when it is simulated (`spec.providerID` starts with `phalanx://`), is not a
control-plane node (unless it is an untainted control plane, as in a single-node cluster, where
dra-example-driver's DaemonSet runs too) and matches the driver's `nodeSelector`. A node that stops
being served, or is deleted, loses its slices (the garbage collector would remove them too).

Allocated claims get no `status.devices` entries: dra-example-driver writes none by default.

One controller serves every node and driver: queue keys are pools, not nodes, so 5,000 nodes cost
one Node and one ResourceSlice informer (shared with the scheduler) and no task per node. Existing
slices are found again from the informer by `spec.driver` and `spec.nodeName` (node-local pools) or
by `spec.driver` without a node name (network pools), so a restarted controller creates nothing.
Writes not yet seen by the informer are remembered (client-go's mutation cache), so a quick second
sync does not publish a pool twice. Fields the API server drops (a feature gate off) are learnt from
its answer and no longer compared, as the helper library does, so a pool is not rewritten forever.

Slice content is the dra-example-driver's; UUIDs are derived from driver, pool (node) name and
device index with SHA-256, not with Go's math/rand, so they are stable but differ from a real
driver's.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from fractions import Fraction
from math import floor
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from ..controllers.base import Controller
from ..machinery.errors import StatusError
from ..machinery.names import dns1123_label_errors, dns1123_subdomain_errors
from ..machinery.quantity import canonicalize, format_quantity, parse_quantity_format

log = logging.getLogger("phalanx.nodes.dradriver")

RESOURCE_API = "resource.k8s.io/v1"
PROVIDER_PREFIX = "phalanx://"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
CONTROL_PLANE_TAINT_KEYS = (CONTROL_PLANE_LABEL, "node-role.kubernetes.io/master")

# dra-example-driver's `gpu` profile (internal/profiles/gpu/gpu.go, helm chart defaults).
DEFAULT_DRIVER_NAME = "gpu.example.com"
DEFAULT_DEVICES_PER_NODE = 8
DEFAULT_DEVICE_PREFIX = "gpu"
DEFAULT_MODEL = "LATEST-GPU-MODEL"
DEFAULT_DRIVER_VERSION = "1.0.0"
DEFAULT_CAPACITY = {"memory": "80Gi"}
DEFAULT_COUNTERS = {"memory": "80Gi", "compute": "100"}

# The helper library (k8s.io/dynamic-resource-allocation/resourceslice, 1.36).
SLICE_INDEX_MIN_LENGTH = 5
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_PER_SLICE_ADVANCED = 64  # devices with taints or consumed counters
MAX_COUNTER_SETS_PER_SLICE = 8
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_STRING_LENGTH = 64
MAX_DEVICE_COUNT = 1024  # phalanx's own sanity limit per node or pool

ATTRIBUTE_TYPES = ("int", "bool", "string", "version")
DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")

SLICE_INDEX = "phalanx.dev/dra-driver-pool"
Obj = dict[str, Any]


def default_attributes(prefix: str = DEFAULT_DEVICE_PREFIX) -> dict[str, Any]:
    """dra-example-driver's attributes, in the `attributes` format of the cluster config."""
    return {"index": "{i}", "uuid": prefix + "-{uuid}", "model": DEFAULT_MODEL,
            "driverVersion": {"version": DEFAULT_DRIVER_VERSION}}


# ---------------------------------------------------------------------------------------------
# value templates: "{i}", "{i*2+1}", "{i:02}", "{pool}", "{uuid}", "{value}"

_TOKEN_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_INDEX_EXPR_RE = re.compile(r"^\s*i\s*((?:(?://|%|\+|-|\*)\s*\d+\s*)*)(?::(\d+))?\s*$")
_OP_RE = re.compile(r"(//|%|\+|-|\*)\s*(\d+)")
_OPS: dict[str, Callable[[int, int], int]] = {
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "+": lambda a, b: a + b,
    "-": lambda a, b: a - b, "*": lambda a, b: a * b,
}
NAMED_PLACEHOLDERS = ("pool", "uuid", "value")
TEMPLATE_HELP = ("placeholders are {i} (the device index, optionally with integer operations applied left to "
                 "right, //, %, +, -, *, and a zero-padded width: {i+1}, {i//2}, {i:02}), {pool} (the pool: the "
                 "node's name for node-local devices), {uuid} (a UUID derived from driver, pool and index) and "
                 "{value} (the label value of a perValueOf pool); write {{ and }} for literal braces")


def device_uuid(driver: str, pool: str, index: int) -> str:
    """A stable UUID-shaped id for one device (dra-example-driver's `uuid` without the prefix)."""
    h = hashlib.sha256(f"{driver}\x00{pool}\x00{index}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


@dataclass
class DeviceContext:
    """What a template can refer to for one device."""

    driver: str
    pool: str
    index: int = 0
    value: str = ""
    _uuid: str | None = None

    @property
    def uuid(self) -> str:
        if self._uuid is None:
            self._uuid = device_uuid(self.driver, self.pool, self.index)
        return self._uuid


class ValueTemplate:
    """A compiled value template. `index_only` is true for a template that is one `{i...}` and
    nothing else (the attribute inference turns those into ints)."""

    def __init__(self, text: str):
        self.text = text
        self.parts: list[Any] = []
        self.uses: set[str] = set()
        pos = 0
        for m in _TOKEN_RE.finditer(text):
            self.parts.append(text[pos:m.start()])
            pos = m.end()
            token = m.group(0)
            if token in ("{{", "}}"):
                self.parts.append(token[0])
                continue
            if m.group(1) is None:
                raise ValueError(f"unbalanced {_q(token)} in {_q(text)}; {TEMPLATE_HELP}")
            inner = m.group(1).strip()
            if inner in NAMED_PLACEHOLDERS:
                self.parts.append((inner,))
                self.uses.add(inner)
                continue
            expr = _INDEX_EXPR_RE.match(m.group(1))
            if not expr:
                raise ValueError(f"invalid placeholder {_q(token)} in {_q(text)}; {TEMPLATE_HELP}")
            ops = [(op, int(arg)) for op, arg in _OP_RE.findall(expr.group(1))]
            if any(op in ("//", "%") and arg == 0 for op, arg in ops):
                raise ValueError(f"division by zero in placeholder {_q(token)} of {_q(text)}")
            width = int(expr.group(2)) if expr.group(2) else 0
            self.parts.append(("i", ops, width))
            self.uses.add("i")
        self.parts.append(text[pos:])
        self.parts = [p for p in self.parts if p != ""]
        self.literal = not self.uses
        self.index_only = len(self.parts) == 1 and isinstance(self.parts[0], tuple) and self.parts[0][0] == "i"

    def render(self, ctx: DeviceContext) -> str:
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif p[0] == "i":
                v = ctx.index
                for op, arg in p[1]:
                    v = _OPS[op](v, arg)
                out.append(str(v).zfill(p[2]) if p[2] else str(v))
            elif p[0] == "pool":
                out.append(ctx.pool)
            elif p[0] == "uuid":
                out.append(ctx.uuid)
            else:
                out.append(ctx.value)
        return "".join(out)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValueTemplate) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"ValueTemplate({self.text!r})"


# ---------------------------------------------------------------------------------------------
# attributes and capacities

_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")
_C_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def qualified_name_errors(name: str) -> list[str]:
    """An attribute or capacity name (upstream QualifiedName): a C identifier of at most 32
    characters, optionally prefixed by `<DNS subdomain of at most 63 characters>/`."""
    parts = name.split("/")
    if len(parts) > 2:
        return ["must not contain more than one slash"]
    msgs = []
    if len(parts) == 2:
        domain, ident = parts
        if not domain:
            msgs.append("the domain must not be empty")
        elif len(domain) > 63:
            msgs.append("the domain must be no more than 63 characters")
        else:
            msgs += dns1123_subdomain_errors(domain)
    else:
        ident = parts[0]
    if not ident:
        msgs.append("the name must not be empty")
    else:
        if len(ident) > 32:
            msgs.append("the name must be no more than 32 characters")
        if not _C_IDENT_RE.match(ident):
            msgs.append("the name must be a C identifier: a letter or '_' followed by letters, digits or '_'")
    return msgs


@dataclass(frozen=True)
class AttributeSpec:
    """One device attribute: `kind` is int, bool, string or version; `value` a constant or a template."""

    name: str
    kind: str
    value: Any

    def render(self, ctx: DeviceContext) -> dict:
        v = self.value
        if isinstance(v, ValueTemplate):
            text = v.render(ctx)
            if self.kind == "int":
                try:
                    return {"int": int(text)}
                except ValueError:
                    raise ValueError(f"attribute {self.name}: {_q(v.text)} gives {_q(text)}, not an integer")
            if self.kind == "version" and not _SEMVER_RE.match(text):
                raise ValueError(f"attribute {self.name}: {_q(v.text)} gives {_q(text)}, which is not a "
                                 "string compatible with semver.org spec 2.0.0")
            return {self.kind: text}
        return {self.kind: v}


@dataclass(frozen=True)
class CapacitySpec:
    name: str
    value: Any  # canonical quantity string, or a ValueTemplate

    def render(self, ctx: DeviceContext) -> dict:
        if isinstance(self.value, ValueTemplate):
            text = self.value.render(ctx)
            try:
                return {"value": canonicalize(text)}
            except ValueError:
                raise ValueError(f"capacity {self.name}: {_q(self.value.text)} gives {_q(text)}, not a quantity")
        return {"value": self.value}


def make_attribute(name: str, raw: Any) -> AttributeSpec:
    """Type an attribute as written in the config (see docs/cluster-config.md):

    - YAML booleans and integers keep their type; a string is a string, except a string that is
      only one `{i...}` placeholder (`"{i}"`, `"{i+1}"`), which is an int;
    - `{int: ...}`, `{bool: ...}`, `{string: ...}`, `{version: ...}` (upstream's own shape) say the
      type; the value may be a template (for int and version it must render to one).
    ValueError explains a value that cannot be typed."""
    if isinstance(raw, bool):
        return AttributeSpec(name, "bool", raw)
    if isinstance(raw, int):
        return AttributeSpec(name, "int", raw)
    if isinstance(raw, str):
        t = ValueTemplate(raw)
        if t.literal:
            return AttributeSpec(name, "string", t.render(DeviceContext("", "")))
        return AttributeSpec(name, "int" if t.index_only else "string", t)
    if isinstance(raw, dict):
        keys = list(raw)
        if len(keys) != 1 or keys[0] not in ATTRIBUTE_TYPES:
            raise ValueError("a typed attribute is a mapping with exactly one of int, bool, string, version; got "
                             + (", ".join(str(k) for k in keys) or "an empty mapping"))
        kind, v = keys[0], raw[keys[0]]
        if kind == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"bool: expected a boolean, got {_got(v)}")
            return AttributeSpec(name, kind, v)
        if kind == "int":
            if isinstance(v, int) and not isinstance(v, bool):
                return AttributeSpec(name, kind, v)
            if isinstance(v, str):
                t = ValueTemplate(v)
                if t.literal:
                    try:
                        return AttributeSpec(name, kind, int(t.render(DeviceContext("", ""))))
                    except ValueError:
                        raise ValueError(f"int: {_q(v)} is not an integer")
                return AttributeSpec(name, kind, t)
            raise ValueError(f"int: expected an integer or a template, got {_got(v)}")
        if kind == "string":
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                raise ValueError(f"string: expected a string, got {_got(v)}")
            t = ValueTemplate(str(v))
            return AttributeSpec(name, kind, t.render(DeviceContext("", "")) if t.literal else t)
        if not isinstance(v, str):  # version
            raise ValueError(f"version: expected a string such as \"1.0.0\", got {_got(v)}")
        t = ValueTemplate(v)
        if t.literal:
            text = t.render(DeviceContext("", ""))
            if not _SEMVER_RE.match(text):
                raise ValueError(f"version: invalid version {_q(text)}: must be a string compatible with "
                                 "semver.org spec 2.0.0")
            return AttributeSpec(name, kind, text)
        return AttributeSpec(name, kind, t)
    raise ValueError(f"expected an integer, a boolean, a string or a typed mapping ({{int: ...}}, {{bool: ...}}, "
                     f"{{string: ...}}, {{version: ...}}), got {_got(raw)}")


def make_capacity(name: str, raw: Any) -> CapacitySpec:
    """A capacity: a quantity (`80Gi`, `100`), a template rendering to one, or `{value: ...}`."""
    if isinstance(raw, dict):
        if list(raw) != ["value"]:
            raise ValueError("a capacity mapping has exactly one field, value; got "
                             + (", ".join(str(k) for k in raw) or "an empty mapping"))
        raw = raw["value"]
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise ValueError(f"expected a quantity such as 80Gi, got {_got(raw)}")
    t = ValueTemplate(str(raw))
    if t.literal:
        text = t.render(DeviceContext("", ""))
        return CapacitySpec(name, canonical_quantity(text))
    return CapacitySpec(name, t)


def canonical_quantity(text: str) -> str:
    try:
        return canonicalize(text)
    except ValueError:
        raise ValueError(f"invalid quantity {_q(text)}: quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None


# ---------------------------------------------------------------------------------------------
# the driver model


@dataclass(frozen=True)
class DeviceClassSpec:
    name: str
    selectors: tuple[str, ...]

    def object(self) -> Obj:
        return {"apiVersion": RESOURCE_API, "kind": "DeviceClass", "metadata": {"name": self.name},
                "spec": {"selectors": [{"cel": {"expression": e}} for e in self.selectors]}}


@dataclass(frozen=True)
class TaintSpec:
    key: str
    effect: str
    value: str = ""
    devices: frozenset[int] | None = None  # device indices; None: every device

    def applies_to(self, index: int) -> bool:
        return self.devices is None or index in self.devices

    def object(self) -> dict:
        t = {"key": self.key, "effect": self.effect}
        if self.value:
            t["value"] = self.value
        return t


@dataclass(frozen=True)
class PartitionSpec:
    """dra-example-driver's partitionable devices: per device `count` partitions and one `full`
    device, all consuming the device's counter set (`counters`, canonical quantities)."""

    count: int
    counters: tuple[tuple[str, str], ...] = tuple(DEFAULT_COUNTERS.items())

    def share(self) -> dict[str, str]:
        """What one partition consumes of each counter: the counter divided by the partition
        count, rounded down to an integer as the example driver does (to a milli-unit for
        counters that are not integers), in the counter's own format."""
        out = {}
        for name, text in self.counters:
            total, fmt = parse_quantity_format(text)
            part = total / self.count
            if part.denominator != 1:
                part = Fraction(floor(part)) if total.denominator == 1 else Fraction(floor(part * 1000), 1000)
            out[name] = format_quantity(part, fmt)
        return out


@dataclass(frozen=True)
class NetworkPoolSpec:
    """A pool not tied to one node: `allNodes`, a `nodeSelector` (one term) and/or one pool per
    distinct value of the node label `per_value_of`."""

    name: ValueTemplate
    devices: int
    device_prefix: str
    attributes: tuple[AttributeSpec, ...]
    capacity: tuple[CapacitySpec, ...]
    node_selector: tuple[tuple[str, str], ...] = ()
    all_nodes: bool = False
    per_value_of: str | None = None
    taints: tuple[TaintSpec, ...] = ()

    def pool_name(self, value: str = "") -> str:
        name = self.name.render(DeviceContext("", "", value=value))
        if self.per_value_of and "value" not in self.name.uses:
            name = f"{name}-{value}"
        return name

    def selector(self, value: str | None = None) -> dict | None:
        exprs = [{"key": k, "operator": "In", "values": [v]} for k, v in self.node_selector]
        if self.per_value_of is not None and value is not None:
            exprs = [e for e in exprs if e["key"] != self.per_value_of]
            exprs.append({"key": self.per_value_of, "operator": "In", "values": [value]})
        if not exprs:
            return None
        exprs.sort(key=lambda e: e["key"])
        return {"nodeSelectorTerms": [{"matchExpressions": exprs}]}


@dataclass(frozen=True)
class DRADriverSpec:
    """One simulated driver, as `phalanx.cluster.config.parse_dra_drivers` builds it."""

    name: str
    device_classes: tuple[DeviceClassSpec, ...]
    devices_per_node: int = DEFAULT_DEVICES_PER_NODE
    device_prefix: str = DEFAULT_DEVICE_PREFIX
    attributes: tuple[AttributeSpec, ...] = ()
    capacity: tuple[CapacitySpec, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    partitions: PartitionSpec | None = None
    taints: tuple[TaintSpec, ...] = ()
    pools: tuple[NetworkPoolSpec, ...] = ()

    @property
    def node_local(self) -> bool:
        return self.devices_per_node > 0


def default_driver() -> DRADriverSpec:
    """dra-example-driver's `gpu` profile: `gpu.example.com`, 8 GPUs per worker."""
    return parse_drivers([{"name": DEFAULT_DRIVER_NAME}])[0]


def parse_drivers(raw: Sequence[Mapping[str, Any]]) -> list[DRADriverSpec]:
    """`draDrivers` entries -> driver specs (ClusterConfigError on any problem)."""
    from ..cluster.config import parse_dra_drivers
    return parse_dra_drivers(list(raw))


def resolve_drivers(drivers: Iterable[Any] | None) -> list[DRADriverSpec]:
    """None -> the default driver; a list of `draDrivers` mappings and/or DRADriverSpecs -> specs."""
    if drivers is None:
        return [default_driver()]
    items = list(drivers)
    raw = [d for d in items if not isinstance(d, DRADriverSpec)]
    parsed = iter(parse_drivers(raw) if raw else [])
    return [d if isinstance(d, DRADriverSpec) else next(parsed) for d in items]


# ---------------------------------------------------------------------------------------------
# rendering devices and slices (pure functions)


def _render_device(name: str, attributes: Iterable[AttributeSpec], capacity: Iterable[CapacitySpec],
                   taints: Iterable[TaintSpec], ctx: DeviceContext) -> dict:
    d: dict[str, Any] = {"name": name}
    attrs = {a.name: a.render(ctx) for a in attributes}
    if attrs:
        d["attributes"] = attrs
    caps = {c.name: c.render(ctx) for c in capacity}
    if caps:
        d["capacity"] = caps
    ts = [t.object() for t in taints if t.applies_to(ctx.index)]
    if ts:
        d["taints"] = ts
    return d


def _chunk(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)] or []


def slice_contents(devices: list[dict], counter_sets: list[dict] | None = None) -> list[dict]:
    """Split a pool into slice specs within the API's limits: counter-set slices first (at most 8
    sets each), then device slices (128 devices, or 64 when devices use taints or counters)."""
    out = [{"sharedCounters": c} for c in _chunk(counter_sets or [], MAX_COUNTER_SETS_PER_SLICE)]
    advanced = any(d.get("taints") or d.get("consumesCounters") for d in devices)
    size = MAX_DEVICES_PER_SLICE_ADVANCED if advanced else MAX_DEVICES_PER_SLICE
    out += [{"devices": c} for c in _chunk(devices, size)]
    return out or [{}]


def render_node_pool(driver: DRADriverSpec, node_name: str) -> list[dict]:
    """The slice specs (devices / sharedCounters only) of the driver's pool on one node."""
    devices: list[dict] = []
    counter_sets: list[dict] = []
    p = driver.partitions
    share = p.share() if p else {}
    for i in range(driver.devices_per_node):
        ctx = DeviceContext(driver.name, node_name, i)
        base = f"{driver.device_prefix}-{i}"
        if p is None:
            devices.append(_render_device(base, driver.attributes, driver.capacity, driver.taints, ctx))
            continue
        counter_set = f"{base}-counters"
        counters = dict(p.counters)
        counter_sets.append({"name": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}})
        for j in range(p.count):
            d = _render_device(f"{base}-partition-{j}", driver.attributes, driver.capacity, driver.taints, ctx)
            d["attributes"] = {**d.get("attributes", {}), "partition": {"int": j}, "partitionable": {"bool": True}}
            if "capacity" in d:
                d["capacity"] = {k: ({"value": share[k]} if k in share else v) for k, v in d["capacity"].items()}
            d["consumesCounters"] = [{"counterSet": counter_set,
                                      "counters": {k: {"value": v} for k, v in share.items()}}]
            devices.append(_ordered(d))
        full = _render_device(f"{base}-full", driver.attributes, driver.capacity, driver.taints, ctx)
        full["attributes"] = {**full.get("attributes", {}), "partitionable": {"bool": True}, "full": {"bool": True}}
        full["consumesCounters"] = [{"counterSet": counter_set,
                                     "counters": {k: {"value": v} for k, v in counters.items()}}]
        devices.append(_ordered(full))
    return slice_contents(devices, counter_sets)


def _ordered(d: dict) -> dict:
    order = ("name", "attributes", "capacity", "consumesCounters", "taints")
    return {k: d[k] for k in order if k in d}


def render_network_pool(driver: DRADriverSpec, pool: NetworkPoolSpec, pool_name: str, value: str = "") -> list[dict]:
    devices = [_render_device(f"{pool.device_prefix}-{i}", pool.attributes, pool.capacity, pool.taints,
                              DeviceContext(driver.name, pool_name, i, value))
               for i in range(pool.devices)]
    return slice_contents(devices)


@dataclass
class PoolPlan:
    """Everything one pool should look like (except generation and slice names)."""

    driver: str
    name: str
    placement: dict  # {"nodeName": n} | {"nodeSelector": ...} | {"allNodes": True}
    slices: list[dict]
    owner: Obj | None = None  # the Node of a node-local pool

    @property
    def owner_name(self) -> str | None:
        return self.owner["metadata"]["name"] if self.owner else None


def is_simulated(node: Obj) -> bool:
    return str((node.get("spec") or {}).get("providerID", "")).startswith(PROVIDER_PREFIX)


def is_worker_like(node: Obj) -> bool:
    """Not a control-plane node, or a control plane without its NoSchedule taint (a cluster of one
    node), where dra-example-driver's kubelet plugin DaemonSet would run too."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if CONTROL_PLANE_LABEL not in labels:
        return True
    return not any(t.get("key") in CONTROL_PLANE_TAINT_KEYS and t.get("effect") in ("NoSchedule", "NoExecute")
                   for t in (node.get("spec") or {}).get("taints") or [])


def serves(driver: DRADriverSpec, node: Obj) -> bool:
    """Whether the driver publishes devices for this node."""
    if not is_simulated(node) or not is_worker_like(node):
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in driver.node_selector)


def network_pool_plans(driver: DRADriverSpec, nodes: Iterable[Obj]) -> dict[str, PoolPlan]:
    """The driver's network-attached pools, by pool name, given the nodes it serves."""
    plans: dict[str, PoolPlan] = {}
    served = None
    for pool in driver.pools:
        if pool.all_nodes:
            entries: list[tuple[str, str | None]] = [(pool.pool_name(), None)]
        elif pool.per_value_of is None:
            entries = [(pool.pool_name(), None)]
        else:
            if served is None:
                served = [n for n in nodes if serves(driver, n)]
            values = set()
            for n in served:
                labels = (n.get("metadata") or {}).get("labels") or {}
                if pool.per_value_of in labels and all(labels.get(k) == v for k, v in pool.node_selector
                                                       if k != pool.per_value_of):
                    values.add(labels[pool.per_value_of])
            entries = [(pool.pool_name(v), v) for v in sorted(values)]
        for name, value in entries:
            problems = pool_name_errors(name)
            if problems:
                log.warning("%s: skipping network pool %r: %s", driver.name, name, problems[0])
                continue
            if name in plans:
                log.warning("%s: network pool %r is defined twice; keeping the first", driver.name, name)
                continue
            placement = {"allNodes": True} if pool.all_nodes else {"nodeSelector": pool.selector(value)}
            plans[name] = PoolPlan(driver.name, name, placement,
                                   render_network_pool(driver, pool, name, value or ""))
    return plans


def pool_name_errors(name: str) -> list[str]:
    if not name:
        return ["must not be empty"]
    if len(name) > 253:
        return ["must be no more than 253 characters"]
    out = []
    for part in name.split("/"):
        out += dns1123_subdomain_errors(part)
    return out


def device_name_errors(name: str) -> list[str]:
    return dns1123_label_errors(name)


# ---------------------------------------------------------------------------------------------
# slice names, comparison


def index_length(slice_count: int) -> int:
    return max(SLICE_INDEX_MIN_LENGTH, len(format(max(slice_count - 1, 0), "x")))


def generate_name(index: int, slice_count: int, driver: str, owner: str | None) -> str:
    """The helper library's generateName: `<index in hex, at least 5 digits>-<driver>-[<owner>-]`."""
    name = f"{index:0{index_length(slice_count)}x}-{driver}-"
    return name + f"{owner}-" if owner else name


def decode_index(name: str, length: int) -> int | None:
    sep = name.find("-")
    if sep != length:
        return None
    try:
        return int(name[:sep], 16)
    except ValueError:
        return None


def slice_index_key(obj: Obj) -> list[str]:
    """Index of ResourceSlices: `<driver>|node|<nodeName>` or `<driver>|network`."""
    spec = obj.get("spec") or {}
    driver = spec.get("driver")
    if not driver:
        return []
    node = spec.get("nodeName")
    return [f"{driver}|node|{node}"] if node else [f"{driver}|network"]


DROPPABLE = {
    # field family -> the feature gate whose absence makes the API server drop it
    "taints": "DRADeviceTaints",
    "counters": "DRAPartitionableDevices",
}


def comparable_spec(spec: Mapping[str, Any], dropped: frozenset[str] | set[str] = frozenset()) -> dict:
    """A slice spec as compared with the desired one: taints without `timeAdded` (the API server
    sets it), empty lists as absent, dropped field families removed."""
    out: dict[str, Any] = {}
    for key in ("driver", "pool", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"):
        if spec.get(key) not in (None, False, ""):
            out[key] = spec[key]
    if "counters" in dropped:
        out.pop("perDeviceNodeSelection", None)
    elif spec.get("sharedCounters"):
        out["sharedCounters"] = spec["sharedCounters"]
    devices = []
    for d in spec.get("devices") or []:
        d = {k: v for k, v in d.items() if v not in (None, [], {})}
        if "taints" in d:
            if "taints" in dropped:
                del d["taints"]
            else:
                d["taints"] = [{k: v for k, v in t.items() if k != "timeAdded" and v not in (None, "")}
                               for t in d["taints"]]
        if "counters" in dropped:
            for k in ("consumesCounters", "nodeName", "nodeSelector", "allNodes"):
                d.pop(k, None)
        devices.append(d)
    if devices:
        out["devices"] = devices
    return out


def _fingerprint(spec: Mapping[str, Any]) -> bytes:
    return orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _controller_uid(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


class _WriteCache:
    """Slices this controller wrote or deleted that the informer may not show yet (client-go's
    MutationCache): a sync reads the informer's view corrected by these."""

    MAX_DELETED = 100_000

    def __init__(self) -> None:
        self.written: dict[str, Obj] = {}
        self.deleted: dict[str, None] = {}

    def stored(self, obj: Obj) -> None:
        self.written[obj["metadata"]["name"]] = obj
        self.deleted.pop(obj["metadata"]["name"], None)

    def removed(self, name: str) -> None:
        self.written.pop(name, None)
        self.deleted[name] = None
        while len(self.deleted) > self.MAX_DELETED:
            self.deleted.pop(next(iter(self.deleted)))

    def observed(self, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name")
        mine = self.written.get(name)
        if mine is not None and _rv(obj) >= _rv(mine):
            del self.written[name]

    def observed_delete(self, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name")
        self.written.pop(name, None)
        self.deleted.pop(name, None)

    def view(self, informer_objs: Iterable[Obj], index_key: str) -> list[Obj]:
        out = {o["metadata"]["name"]: o for o in informer_objs if o["metadata"]["name"] not in self.deleted}
        for name, mine in self.written.items():
            if index_key in slice_index_key(mine):
                cur = out.get(name)
                if cur is None or _rv(mine) > _rv(cur):
                    out[name] = mine
        return [out[k] for k in sorted(out)]


# ---------------------------------------------------------------------------------------------
# the controller


class SimulatedDRADrivers(Controller):
    """Publishes DeviceClasses and ResourceSlices for simulated DRA drivers (see module doc)."""

    name = "dra-drivers"
    workers = 4
    RENDER_CACHE_SIZE = 8192

    def __init__(self, client: Any, factory: Any = None, drivers: Iterable[Any] | None = None, **kw):
        super().__init__(client, factory, **kw)
        self.drivers = resolve_drivers(drivers)
        self.by_name = {d.name: d for d in self.drivers}
        self._writes = _WriteCache()
        self._rendered: dict[tuple[str, str], list[dict]] = {}
        self._dropped: set[str] = set()
        self._accepted: dict[str, tuple[bytes, bytes]] = {}  # slice name -> (desired, stored) the API kept
        self.created = self.updated = self.deleted = 0  # observability, tests
        if not self.drivers:
            return
        self.nodes = self.informer("v1", "Node")
        self.slices = self.informer(RESOURCE_API, "ResourceSlice", indexers={SLICE_INDEX: slice_index_key})
        self.nodes.add_event_handler(on_add=self._node_event, on_update=self._node_updated,
                                     on_delete=self._node_event)
        self.slices.add_event_handler(on_add=self._slice_event, on_update=self._slice_updated,
                                      on_delete=self._slice_deleted)

    # -- events --------------------------------------------------------------------------------
    def _node_event(self, node: Obj) -> None:
        name = (node.get("metadata") or {}).get("name")
        for d in self.drivers:
            if d.node_local:
                self.queue.add(f"node/{d.name}/{name}")
            if d.pools:
                self.queue.add(f"network/{d.name}")

    def _node_updated(self, old: Obj, new: Obj) -> None:
        def inputs(n: Obj) -> tuple:
            md = n.get("metadata") or {}
            spec = n.get("spec") or {}
            return md.get("uid"), md.get("labels"), spec.get("providerID"), spec.get("taints")
        if inputs(old) != inputs(new):
            self._node_event(new)

    def _slice_key(self, obj: Obj) -> str | None:
        spec = obj.get("spec") or {}
        driver = self.by_name.get(spec.get("driver"))
        if driver is None:
            return None
        node = spec.get("nodeName")
        return f"node/{driver.name}/{node}" if node else f"network/{driver.name}"

    def _slice_event(self, obj: Obj) -> None:
        self._writes.observed(obj)
        key = self._slice_key(obj)
        if key:
            self.queue.add(key)

    def _slice_updated(self, old: Obj, new: Obj) -> None:
        self._slice_event(new)

    def _slice_deleted(self, obj: Obj) -> None:
        self._writes.observed_delete(obj)
        key = self._slice_key(obj)
        if key:
            self.queue.add(key)

    async def setup(self) -> None:
        for d in self.drivers:
            for c in d.device_classes:
                self.queue.add(f"class/{d.name}/{c.name}")

    # -- sync ----------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        kind, _, rest = key.partition("/")
        if kind == "class":
            driver_name, _, class_name = rest.partition("/")
            driver = self.by_name.get(driver_name)
            cls = next((c for c in driver.device_classes if c.name == class_name), None) if driver else None
            if cls is not None:
                await self._ensure_class(cls)
        elif kind == "node":
            driver_name, _, node_name = rest.partition("/")
            driver = self.by_name.get(driver_name)
            if driver is not None:
                await self._sync_node_pool(driver, node_name)
        elif kind == "network":
            driver = self.by_name.get(rest)
            if driver is not None:
                await self._sync_network_pools(driver)

    async def _ensure_class(self, cls: DeviceClassSpec) -> None:
        try:
            await self.client.get(RESOURCE_API, "DeviceClass", None, cls.name)
            return  # present: a user's changes are theirs
        except StatusError as e:
            if e.code != 404:
                raise
        try:
            await self.client.create(cls.object())
            self.log.info("created DeviceClass %s", cls.name)
        except StatusError as e:
            if e.code != 409:
                raise

    def _current(self, index_key: str) -> list[Obj]:
        return self._writes.view(self.slices.by_index(SLICE_INDEX, index_key), index_key)

    async def _sync_node_pool(self, driver: DRADriverSpec, node_name: str) -> None:
        existing = self._current(f"{driver.name}|node|{node_name}")
        node = self.nodes.get(node_name)
        plan = None
        if node is not None and serves(driver, node) and driver.node_local:
            plan = PoolPlan(driver.name, node_name, {"nodeName": node_name},
                            self._node_pool_content(driver, node_name), owner=node)
        else:
            self._rendered.pop((driver.name, node_name), None)
        await self._reconcile_pool(driver.name, plan, existing)

    def _node_pool_content(self, driver: DRADriverSpec, node_name: str) -> list[dict]:
        """`render_node_pool`, remembered for the pools rendered last: the sync that follows our own
        write (the informer's event for it) compares without rendering again. Read-only."""
        key = (driver.name, node_name)
        content = self._rendered.pop(key, None)
        if content is None:
            content = render_node_pool(driver, node_name)
        self._rendered[key] = content
        while len(self._rendered) > self.RENDER_CACHE_SIZE:
            self._rendered.pop(next(iter(self._rendered)))
        return content

    async def _sync_network_pools(self, driver: DRADriverSpec) -> None:
        plans = network_pool_plans(driver, self.nodes.list())
        by_pool: dict[str, list[Obj]] = {}
        for s in self._current(f"{driver.name}|network"):
            by_pool.setdefault(((s.get("spec") or {}).get("pool") or {}).get("name", ""), []).append(s)
        for name in sorted(set(plans) | set(by_pool)):
            await self._reconcile_pool(driver.name, plans.get(name), by_pool.get(name, []))

    async def _reconcile_pool(self, driver: str, plan: PoolPlan | None, existing: list[Obj]) -> None:
        """Make the pool's slices what `plan` says (none when `plan` is None), the way the helper
        library does: match slices to desired ones by the index in their name, delete the rest,
        bump the generation when the content changes."""
        if plan is None:
            for s in existing:
                await self._delete(s)
            return
        count = len(plan.slices)
        length = index_length(count)
        owner_uid = plan.owner["metadata"].get("uid") if plan.owner else None
        same_pool = [s for s in existing if ((s.get("spec") or {}).get("pool") or {}).get("name") == plan.name]
        generation = max((((s.get("spec") or {}).get("pool") or {}).get("generation") or 0 for s in same_pool),
                         default=0)
        matched: dict[int, Obj] = {}
        obsolete: list[Obj] = []
        for s in existing:
            spec = s.get("spec") or {}
            pool = spec.get("pool") or {}
            index = decode_index(s["metadata"]["name"], length)
            if (pool.get("name") != plan.name or (pool.get("generation") or 0) < generation or index is None
                    or index >= count or index in matched or _controller_uid(s) != owner_uid):
                obsolete.append(s)
            else:
                matched[index] = s
        dropped = frozenset(self._dropped)

        def desired(i: int, gen: int) -> dict:
            spec = {"driver": driver, "pool": {"name": plan.name, "generation": gen, "resourceSliceCount": count},
                    **plan.placement, **plan.slices[i]}
            return spec

        changed = {i for i, s in matched.items()
                   if not self._same(s, desired(i, generation), dropped)}
        if not same_pool:
            generation = 1
        elif changed or obsolete or len(matched) < count:
            generation += 1

        for s in obsolete:
            await self._delete(s)
        for i, s in sorted(matched.items()):
            if i in changed or (((s.get("spec") or {}).get("pool") or {}).get("generation") != generation):
                new = {"apiVersion": RESOURCE_API, "kind": "ResourceSlice", "metadata": dict(s["metadata"]),
                       "spec": self._strip(desired(i, generation))}
                await self._write(new, desired(i, generation), update=True)
        for i in range(count):
            if i in matched:
                continue
            md: dict[str, Any] = {"generateName": generate_name(i, count, driver, plan.owner_name)}
            if plan.owner is not None:
                md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": plan.owner_name,
                                          "uid": owner_uid, "controller": True}]
            obj = {"apiVersion": RESOURCE_API, "kind": "ResourceSlice", "metadata": md,
                   "spec": self._strip(desired(i, generation))}
            await self._write(obj, desired(i, generation), update=False)

    def _strip(self, spec: dict) -> dict:
        """The desired spec without the field families the API server was found to drop."""
        if not self._dropped:
            return spec
        spec = dict(spec)
        if "counters" in self._dropped:
            spec.pop("sharedCounters", None)
        if spec.get("devices"):
            devs = []
            for d in spec["devices"]:
                d = dict(d)
                if "taints" in self._dropped:
                    d.pop("taints", None)
                if "counters" in self._dropped:
                    d.pop("consumesCounters", None)
                devs.append(d)
            spec["devices"] = devs
        return spec

    def _same(self, actual: Obj, desired_spec: dict, dropped: frozenset[str]) -> bool:
        a = _fingerprint(comparable_spec(actual.get("spec") or {}, dropped))
        d = _fingerprint(comparable_spec(desired_spec, dropped))
        if a == d:
            return True
        return self._accepted.get(actual["metadata"]["name"]) == (d, a)

    async def _write(self, obj: Obj, desired_spec: dict, *, update: bool) -> None:
        # A conflict or a vanished slice raises: the sync is retried, and the informer's event for
        # the newer state requeues the pool anyway.
        stored = await (self.client.update(obj) if update else self.client.create(obj))
        if update:
            self.updated += 1
        else:
            self.created += 1
        self._writes.stored(stored)
        self._learn_dropped(desired_spec, stored)

    def _learn_dropped(self, desired_spec: dict, stored: Obj) -> None:
        got = stored.get("spec") or {}
        dropped = frozenset(self._dropped)
        want = comparable_spec(desired_spec, dropped)
        have = comparable_spec(got, dropped)
        if want == have:
            return
        newly = set()
        if any(d.get("taints") for d in desired_spec.get("devices") or []) and \
                not any(d.get("taints") for d in got.get("devices") or []):
            newly.add("taints")
        if (desired_spec.get("sharedCounters") and not got.get("sharedCounters")) or (
                any(d.get("consumesCounters") for d in desired_spec.get("devices") or []) and
                not any(d.get("consumesCounters") for d in got.get("devices") or [])):
            newly.add("counters")
        if newly - self._dropped:
            self._dropped |= newly
            self.log.warning("some fields were dropped by the apiserver, probably because these features are "
                             "disabled: %s; no longer publishing them",
                             " ".join(sorted(DROPPABLE[f] for f in newly)))
        dropped = frozenset(self._dropped)
        want, have = comparable_spec(desired_spec, dropped), comparable_spec(got, dropped)
        if want != have:  # something else the server changed: accept it rather than fight it
            self._accepted[stored["metadata"]["name"]] = (_fingerprint(want), _fingerprint(have))

    async def _delete(self, s: Obj) -> None:
        md = s["metadata"]
        try:
            await self.client.delete(RESOURCE_API, "ResourceSlice", None, md["name"],
                                     preconditions={"uid": md.get("uid")})
            self.deleted += 1
        except StatusError as e:
            if e.code not in (404, 409):
                raise
        self._writes.removed(md["name"])
        self._accepted.pop(md["name"], None)


def _q(value: Any) -> str:
    return orjson.dumps(value).decode() if isinstance(value, str) else repr(value)


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {_q(value)}"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


__all__ = ["SimulatedDRADrivers", "DRADriverSpec", "DeviceClassSpec", "NetworkPoolSpec", "PartitionSpec",
           "TaintSpec", "AttributeSpec", "CapacitySpec", "ValueTemplate", "DeviceContext", "default_driver",
           "resolve_drivers", "render_node_pool", "network_pool_plans", "generate_name", "device_uuid",
           "make_attribute", "make_capacity", "serves", "default_attributes"]
