"""The simulated DRA driver model: driver, device class, pool, taint and partition specs, and the
value templates their attributes and capacities are written with (`"{i}"`, `"gpu-{uuid}"`).

Specs are built from a cluster config's `draDrivers` by `config.parse_dra_drivers` and turned into
ResourceSlice contents by `render`. Defaults are dra-example-driver's `gpu` profile.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from math import floor
from typing import Any, Callable

from ...api.resource.fields import validate_qualified_name
from ...dra.semver import is_semver
from ...machinery.names import dns1123_label_errors, dns1123_subdomain_errors
from ...machinery.quantity import canonicalize, format_quantity, parse_quantity_format
from ...machinery.strictyaml import got, quote
from ...machinery.templates import IndexExpression, parse_index_expression, scan_placeholders

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
        self.parts: list[str | IndexExpression | tuple[str]] = []
        self.uses: set[str] = set()
        for piece in scan_placeholders(text):
            if isinstance(piece, str):
                if piece:
                    self.parts.append(piece)
                continue
            if piece.inner is None:
                raise ValueError(f"unbalanced {quote(piece.token)} in {quote(text)}; {TEMPLATE_HELP}")
            inner = piece.inner.strip()
            if inner in NAMED_PLACEHOLDERS:
                self.parts.append((inner,))
                self.uses.add(inner)
                continue
            expr = parse_index_expression(piece.inner, "i")
            if expr is None:
                raise ValueError(f"invalid placeholder {quote(piece.token)} in {quote(text)}; {TEMPLATE_HELP}")
            if expr.divides_by_zero:
                raise ValueError(f"division by zero in placeholder {quote(piece.token)} of {quote(text)}")
            self.parts.append(expr)
            self.uses.add("i")
        self.literal = not self.uses
        self.index_only = len(self.parts) == 1 and isinstance(self.parts[0], IndexExpression)

    def render(self, ctx: DeviceContext) -> str:
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, IndexExpression):
                out.append(p.render(ctx.index))
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


def attribute_name_errors(name: str) -> list[str]:
    """An attribute or capacity name as the API validates it (upstream's resource QualifiedName: a
    C identifier of at most 32 characters, optionally prefixed by `<DNS subdomain>/`)."""
    return [e.detail or e.body() for e in validate_qualified_name(name, "")]


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
                    raise ValueError(f"attribute {self.name}: {quote(v.text)} gives {quote(text)}, not an integer")
            if self.kind == "version" and not is_semver(text):
                raise ValueError(f"attribute {self.name}: {quote(v.text)} gives {quote(text)}, which is not a "
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
                raise ValueError(f"capacity {self.name}: {quote(self.value.text)} gives {quote(text)}, not a quantity")
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
            return AttributeSpec(name, "string", _literal(t))
        return AttributeSpec(name, "int" if t.index_only else "string", t)
    if isinstance(raw, dict):
        keys = list(raw)
        if len(keys) != 1 or keys[0] not in ATTRIBUTE_TYPES:
            raise ValueError("a typed attribute is a mapping with exactly one of int, bool, string, version; got "
                             + (", ".join(str(k) for k in keys) or "an empty mapping"))
        return _TYPED_ATTRIBUTES[keys[0]](name, raw[keys[0]])
    raise ValueError(f"expected an integer, a boolean, a string or a typed mapping ({{int: ...}}, {{bool: ...}}, "
                     f"{{string: ...}}, {{version: ...}}), got {got(raw)}")


def _literal(template: ValueTemplate) -> str:
    """The text of a template without placeholders."""
    return template.render(DeviceContext("", ""))


def _bool_attribute(name: str, v: Any) -> AttributeSpec:
    if not isinstance(v, bool):
        raise ValueError(f"bool: expected a boolean, got {got(v)}")
    return AttributeSpec(name, "bool", v)


def _int_attribute(name: str, v: Any) -> AttributeSpec:
    if isinstance(v, int) and not isinstance(v, bool):
        return AttributeSpec(name, "int", v)
    if not isinstance(v, str):
        raise ValueError(f"int: expected an integer or a template, got {got(v)}")
    t = ValueTemplate(v)
    if not t.literal:
        return AttributeSpec(name, "int", t)
    try:
        return AttributeSpec(name, "int", int(_literal(t)))
    except ValueError:
        raise ValueError(f"int: {quote(v)} is not an integer") from None


def _string_attribute(name: str, v: Any) -> AttributeSpec:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ValueError(f"string: expected a string, got {got(v)}")
    t = ValueTemplate(str(v))
    return AttributeSpec(name, "string", _literal(t) if t.literal else t)


def _version_attribute(name: str, v: Any) -> AttributeSpec:
    if not isinstance(v, str):
        raise ValueError(f"version: expected a string such as \"1.0.0\", got {got(v)}")
    t = ValueTemplate(v)
    if not t.literal:
        return AttributeSpec(name, "version", t)
    text = _literal(t)
    if not is_semver(text):
        raise ValueError(f"version: invalid version {quote(text)}: must be a string compatible with "
                         "semver.org spec 2.0.0")
    return AttributeSpec(name, "version", text)


_TYPED_ATTRIBUTES: dict[str, Callable[[str, Any], AttributeSpec]] = {
    "bool": _bool_attribute, "int": _int_attribute, "string": _string_attribute, "version": _version_attribute,
}


def make_capacity(name: str, raw: Any) -> CapacitySpec:
    """A capacity: a quantity (`80Gi`, `100`), a template rendering to one, or `{value: ...}`."""
    if isinstance(raw, dict):
        if list(raw) != ["value"]:
            raise ValueError("a capacity mapping has exactly one field, value; got "
                             + (", ".join(str(k) for k in raw) or "an empty mapping"))
        raw = raw["value"]
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise ValueError(f"expected a quantity such as 80Gi, got {got(raw)}")
    t = ValueTemplate(str(raw))
    if t.literal:
        text = t.render(DeviceContext("", ""))
        return CapacitySpec(name, canonical_quantity(text))
    return CapacitySpec(name, t)


def canonical_quantity(text: str) -> str:
    try:
        return canonicalize(text)
    except ValueError:
        raise ValueError(f"invalid quantity {quote(text)}: quantities must match the regular expression "
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
        exprs: list[dict[str, Any]] = [{"key": k, "operator": "In", "values": [v]} for k, v in self.node_selector]
        if self.per_value_of is not None and value is not None:
            exprs = [e for e in exprs if e["key"] != self.per_value_of]
            exprs.append({"key": self.per_value_of, "operator": "In", "values": [value]})
        if not exprs:
            return None
        exprs.sort(key=lambda e: e["key"])
        return {"nodeSelectorTerms": [{"matchExpressions": exprs}]}


@dataclass(frozen=True)
class DRADriverSpec:
    """One simulated driver, as `config.parse_dra_drivers` builds it."""

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
