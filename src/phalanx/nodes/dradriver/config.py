"""The `draDrivers` section of a phalanx cluster config → `DRADriverSpec`s, strictly validated.

    drivers = parse_dra_drivers(doc["draDrivers"], "cluster.yaml")   # ConfigFileError on any problem
    drivers = resolve_drivers(spec.dra_drivers)   # None → dra-example-driver's `gpu` profile

The cluster config parser calls `read_dra_drivers` with its own `DocumentReader`, so problems in
`draDrivers` are reported with the rest of the file. docs/cluster-config.md ("Simulated DRA
drivers") has the format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable, Literal, Mapping, TypeVar, Union

from ...dra.cel.validation import check_expression
from ...machinery.names import (dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
                                qualified_name_errors)
from ...machinery.strictyaml import DocumentReader, got, key_path, quote, type_name
from .model import (DEFAULT_CAPACITY, DEFAULT_COUNTERS, DEFAULT_DEVICE_PREFIX, DEFAULT_DEVICES_PER_NODE,
                    DEFAULT_DRIVER_NAME, DEVICE_TAINT_EFFECTS, MAX_ATTRIBUTE_STRING_LENGTH,
                    MAX_ATTRIBUTES_AND_CAPACITIES, MAX_DEVICE_COUNT, AttributeSpec, CapacitySpec, DeviceClassSpec,
                    DeviceContext, DRADriverSpec, NetworkPoolSpec, PartitionSpec, TaintSpec, ValueTemplate,
                    attribute_name_errors, canonical_quantity, default_attributes, device_name_errors,
                    make_attribute, make_capacity, pool_name_errors)

DRA_DRIVER_FIELDS = ("name", "deviceClasses", "nodeSelector", "devicesPerNode", "devicePrefix", "attributes",
                     "capacity", "partitions", "taints", "pools")
DRA_CLASS_FIELDS = ("name", "selectors")
DRA_PARTITION_FIELDS = ("count", "counters")
DRA_TAINT_FIELDS = ("key", "value", "effect", "devices")
DRA_POOL_FIELDS = ("name", "nodeSelector", "allNodes", "perValueOf", "devices", "devicePrefix", "attributes",
                   "capacity", "taints")
DRA_PARTITIONS_GATE = "DRAPartitionableDevices"
DRA_TAINTS_GATE = "DRADeviceTaints"

# What `ClusterSpec.dra_drivers` and `SimulatedDRADrivers(drivers=...)` hold: `draDrivers` mappings
# as written in a config, or specs already parsed.
DriverEntry = Union[Mapping[str, Any], DRADriverSpec]
Raw = Mapping[str, Any]
Spec = TypeVar("Spec", AttributeSpec, CapacitySpec)


def parse_dra_drivers(value: Any, source: str = "draDrivers", disabled_gates: Collection[str] = ()
                      ) -> list[DRADriverSpec]:
    """Validate `draDrivers` entries and build their specs; ConfigFileError (naming `source` and
    each field) on any problem."""
    reader = DocumentReader(source)
    drivers = read_dra_drivers(value, "draDrivers", reader, set(disabled_gates))
    reader.raise_problems()
    return drivers


def default_driver() -> DRADriverSpec:
    """dra-example-driver's `gpu` profile: `gpu.example.com`, 8 GPUs per worker."""
    return parse_dra_drivers([{"name": DEFAULT_DRIVER_NAME}])[0]


def resolve_drivers(drivers: Iterable[DriverEntry] | None) -> list[DRADriverSpec]:
    """None → the default driver; `draDrivers` mappings and/or DRADriverSpecs → specs, in order."""
    if drivers is None:
        return [default_driver()]
    items = list(drivers)
    raw = [d for d in items if not isinstance(d, DRADriverSpec)]
    parsed = iter(parse_dra_drivers(raw) if raw else [])
    return [d if isinstance(d, DRADriverSpec) else next(parsed) for d in items]


def read_dra_drivers(value: Any, path: str, reader: DocumentReader, disabled_gates: set[str]) -> list[DRADriverSpec]:
    """The drivers of a `draDrivers` list; each problem goes to `reader`, a driver with one is left out."""
    drivers: list[DRADriverSpec] = []
    if not reader.expect(value, path, "list"):
        return drivers
    names: set[str] = set()
    classes: dict[str, str] = {}
    for d, raw in enumerate(value):
        where = f"{path}[{d}]"
        if not reader.expect(raw, where, "mapping"):
            continue
        before = len(reader.problems)
        driver = _read_driver(raw, where, reader, disabled_gates)
        if driver is None:
            continue
        if driver.name in names:
            reader.error(f"{where}.name", f"duplicate driver name {quote(driver.name)}")
        names.add(driver.name)
        for c, cls in enumerate(driver.device_classes):
            if cls.name in classes:
                reader.error(f"{where}.deviceClasses[{c}].name" if "deviceClasses" in raw else f"{where}.name",
                             f"DeviceClass {quote(cls.name)} is already defined by {classes[cls.name]}")
            classes.setdefault(cls.name, where)
        if len(reader.problems) == before:
            drivers.append(driver)
    return drivers


def _read_driver(raw: Raw, where: str, reader: DocumentReader, disabled_gates: set[str]) -> DRADriverSpec | None:
    reader.fields(raw, where, DRA_DRIVER_FIELDS)
    before = len(reader.problems)
    name = _driver_name(raw.get("name"), f"{where}.name", reader)
    classes = _device_classes(raw, where, reader, name)
    node_selector = reader.labels(raw.get("nodeSelector"), f"{where}.nodeSelector")
    count = _device_count(raw, "devicesPerNode", where, reader, DEFAULT_DEVICES_PER_NODE)
    prefix = _device_prefix(raw, where, reader, DEFAULT_DEVICE_PREFIX)
    attributes = _named_values(raw, "attributes", "attribute", make_attribute, where, reader,
                               default_attributes(prefix or DEFAULT_DEVICE_PREFIX))
    capacity = _named_values(raw, "capacity", "capacity", make_capacity, where, reader, dict(DEFAULT_CAPACITY))
    partitions = _partitions(raw, where, reader, disabled_gates)
    taints = _taints(raw, where, reader, disabled_gates, count)
    if (name is None or classes is None or count is None or prefix is None or attributes is None
            or capacity is None or taints is None or partitions is False):
        return None
    devices = _Devices(name, prefix, count, attributes, capacity)
    _check_devices(where, reader, devices, partitions or None, pool="phalanx-worker")
    pools = _network_pools(raw, where, reader, disabled_gates, devices)
    if pools is None or len(reader.problems) > before:
        return None
    return DRADriverSpec(name=name, device_classes=classes, devices_per_node=count, device_prefix=prefix,
                         attributes=attributes, capacity=capacity, node_selector=tuple(node_selector.items()),
                         partitions=partitions or None, taints=taints, pools=pools)


@dataclass(frozen=True)
class _Devices:
    """A driver's (or pool's) devices as parsed so far: what a pool inherits and what is checked."""

    driver: str
    prefix: str
    count: int
    attributes: tuple[AttributeSpec, ...]
    capacity: tuple[CapacitySpec, ...]


def _driver_name(value: Any, path: str, reader: DocumentReader) -> str | None:
    if value is None:
        reader.error(path, "required")
        return None
    if not reader.expect(value, path, "string"):
        return None
    problems = (["must be no more than 63 characters"] if len(value) > 63 else []) + dns1123_subdomain_errors(value)
    for msg in problems:
        reader.error(path, f"invalid driver name {quote(value)}: {msg}")
    return None if problems else value


def _device_count(raw: Raw, key: str, where: str, reader: DocumentReader, default: int) -> int | None:
    value = raw.get(key, default)
    if value is None:
        return default
    if not reader.expect(value, f"{where}.{key}", "integer"):
        return None
    if not 0 <= value <= MAX_DEVICE_COUNT:
        reader.error(f"{where}.{key}", f"invalid count {value}: must be between 0 and {MAX_DEVICE_COUNT}")
        return None
    return int(value)


def _device_prefix(raw: Raw, where: str, reader: DocumentReader, default: str) -> str | None:
    value = raw.get("devicePrefix")
    if value is None:
        return default
    if not reader.expect(value, f"{where}.devicePrefix", "string"):
        return None
    problems = dns1123_label_errors(value)
    for msg in problems:
        reader.error(f"{where}.devicePrefix", f"invalid device prefix {quote(value)}: {msg}")
    return None if problems else str(value)


def _named_values(raw: Raw, field: str, what: str, make: Callable[[str, Any], Spec], where: str,
                  reader: DocumentReader, default: Mapping[str, Any] | tuple[Spec, ...]) -> tuple[Spec, ...] | None:
    """`attributes` or `capacity` of a driver or pool: qualified names mapped through `make`.
    `default` is a mapping as written, or the specs a pool inherits from its driver."""
    value = raw.get(field)
    path = f"{where}.{field}"
    if value is None:
        if isinstance(default, tuple):
            return default
        value = default
    elif not reader.expect(value, path, "mapping"):
        return None
    out = []
    ok = True
    for name, v in value.items():
        at = key_path(path, str(name))
        if not isinstance(name, str):
            reader.error(path, f"keys must be strings, got {type_name(name)} {quote(name)}")
            ok = False
            continue
        for msg in attribute_name_errors(name):
            reader.error(at, f"invalid {what} name: {msg}")
            ok = False
        try:
            out.append(make(name, v))
        except ValueError as e:
            reader.error(at, str(e))
            ok = False
    return tuple(out) if ok else None


def _taints(raw: Raw, where: str, reader: DocumentReader, disabled_gates: set[str],
            device_count: int | None) -> tuple[TaintSpec, ...] | None:
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
    for t, item in enumerate(value):
        taint = _taint(item, f"{path}[{t}]", reader, device_count)
        if taint is not None:
            out.append(taint)
    return tuple(out) if len(out) == len(value) else None


def _taint(item: Any, at: str, reader: DocumentReader, device_count: int | None) -> TaintSpec | None:
    """One device taint; None when it has a problem (an unknown field alone does not reject it)."""
    if not reader.expect(item, at, "mapping"):
        return None
    reader.fields(item, at, DRA_TAINT_FIELDS)
    before = len(reader.problems)
    key, effect, value = item.get("key"), item.get("effect"), item.get("value") or ""
    if key is None:
        reader.error(f"{at}.key", "required")
    elif reader.expect(key, f"{at}.key", "string"):
        for msg in qualified_name_errors(key):
            reader.error(f"{at}.key", f"invalid taint key: {msg}")
    if value and reader.expect(value, f"{at}.value", "string"):
        for msg in label_value_errors(value):
            reader.error(f"{at}.value", f"invalid taint value: {msg}")
    if effect is None:
        reader.error(f"{at}.effect", "required")
    elif effect not in DEVICE_TAINT_EFFECTS:
        reader.error(f"{at}.effect", f"unsupported value {quote(effect)}; allowed: {', '.join(DEVICE_TAINT_EFFECTS)}")
    devices = _taint_devices(item.get("devices"), f"{at}.devices", reader, device_count)
    if len(reader.problems) > before or devices is False:
        return None
    return TaintSpec(key=key, effect=effect, value=value, devices=devices)


def _taint_devices(value: Any, path: str, reader: DocumentReader, device_count: int | None
                   ) -> frozenset[int] | None | Literal[False]:
    """The device indices a taint applies to (None: every device), or False on error."""
    if value is None:
        return None
    if not reader.list_of(value, path, "integer"):
        return False
    ok = True
    for i in value:
        if i < 0 or (device_count is not None and i >= device_count):
            reader.error(path, f"device index {i} is out of range: devices are numbered "
                               f"0 to {max((device_count or 0) - 1, 0)}")
            ok = False
    return frozenset(value) if ok else False


def _partitions(raw: Raw, where: str, reader: DocumentReader, disabled_gates: set[str]
                ) -> PartitionSpec | None | Literal[False]:
    """None (no partitions), a PartitionSpec, or False on error."""
    value = raw.get("partitions")
    path = f"{where}.partitions"
    if value is None:
        return None
    counters: dict[str, str] | None = dict(DEFAULT_COUNTERS)
    if isinstance(value, dict):
        reader.fields(value, path, DRA_PARTITION_FIELDS)
        count = value.get("count")
        if count is None:
            reader.error(f"{path}.count", "required")
            return False
        count_path = f"{path}.count"
        if value.get("counters") is not None:
            counters = _counters(value["counters"], f"{path}.counters", reader)
            if counters is None:
                return False
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
    return PartitionSpec(count=count, counters=tuple((counters or {}).items()))


def _counters(raw: Any, path: str, reader: DocumentReader) -> dict[str, str] | None:
    """A partition's shared counters (canonical quantities); None when the value is not a mapping."""
    if not reader.expect(raw, path, "mapping"):
        return None
    counters = {}
    for name, q in raw.items():
        at = key_path(path, str(name))
        for msg in dns1123_label_errors(str(name)):
            reader.error(at, f"invalid counter name: {msg}")
        if isinstance(q, bool) or not isinstance(q, (str, int)):
            reader.error(at, f"expected a quantity such as 80Gi, got {got(q)}")
            continue
        try:
            counters[str(name)] = canonical_quantity(str(q))
        except ValueError as e:
            reader.error(at, str(e))
    if not counters:
        reader.error(path, "must not be empty")
    return counters


def _device_classes(raw: Raw, where: str, reader: DocumentReader, driver: str | None
                    ) -> tuple[DeviceClassSpec, ...] | None:
    default_selector = f"device.driver == '{driver}'"
    value = raw.get("deviceClasses")
    path = f"{where}.deviceClasses"
    if value is None:
        return (DeviceClassSpec(driver, (default_selector,)),) if driver else None
    if not reader.expect(value, path, "list"):
        return None
    out = []
    seen: set[str] = set()
    for c, item in enumerate(value):
        cls = _device_class(item, f"{path}[{c}]", reader, [default_selector] if driver else [], seen)
        if cls is not None:
            out.append(cls)
    return tuple(out) if len(out) == len(value) else None


def _device_class(item: Any, at: str, reader: DocumentReader, default_selectors: list[str],
                  seen: set[str]) -> DeviceClassSpec | None:
    if not reader.expect(item, at, "mapping"):
        return None
    reader.fields(item, at, DRA_CLASS_FIELDS)
    name = item.get("name")
    if name is None:
        reader.error(f"{at}.name", "required")
        return None
    if not reader.expect(name, f"{at}.name", "string"):
        return None
    ok = True
    for msg in dns1123_subdomain_errors(name):
        reader.error(f"{at}.name", f"invalid DeviceClass name {quote(name)}: {msg}")
        ok = False
    if name in seen:
        reader.error(f"{at}.name", f"duplicate DeviceClass name {quote(name)}")
        ok = False
    seen.add(name)
    selectors = item.get("selectors")
    if selectors is None:
        selectors = default_selectors
    elif not reader.list_of(selectors, f"{at}.selectors", "string"):
        return None
    for s, expr in enumerate(selectors):
        problem = _cel_problem(expr)
        if problem:
            reader.error(f"{at}.selectors[{s}]", problem)
            ok = False
    return DeviceClassSpec(name, tuple(selectors)) if ok else None


def _cel_problem(expression: str) -> str | None:
    if not expression.strip():
        return "must not be empty"
    problem = check_expression(expression)
    if problem is None:
        return None
    kind, detail = problem
    return f"invalid CEL expression: {detail}" if detail else f"invalid CEL expression ({kind})"


def _check_devices(where: str, reader: DocumentReader, devices: _Devices, partitions: PartitionSpec | None,
                   pool: str) -> None:
    """What only rendering shows: device names, attribute values (for the first and last device) and
    the per-device limit of attributes and capacities."""
    extra = 2 if partitions else 0
    total = len(devices.attributes) + len(devices.capacity) + extra
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        reader.error(where, f"a device has {total} attributes and capacities"
                            + (" (with partition and partitionable, or partitionable and full)" if extra else "")
                            + f"; at most {MAX_ATTRIBUTES_AND_CAPACITIES} are allowed")
    if devices.count <= 0:
        return
    last = devices.count - 1
    longest = f"{devices.prefix}-{last}" + (f"-partition-{partitions.count - 1}" if partitions else "")
    for msg in device_name_errors(longest):
        reader.error(where, f"device name {quote(longest)} is invalid: {msg}")
    for index in sorted({0, last}):
        if not _check_rendering(where, reader, devices, DeviceContext(devices.driver, pool, index, "value")):
            return


def _check_rendering(where: str, reader: DocumentReader, devices: _Devices, ctx: DeviceContext) -> bool:
    """Render one device's attributes and capacities; False after the first problem."""
    for a in devices.attributes:
        try:
            rendered = a.render(ctx)
        except ValueError as e:
            reader.error(key_path(f"{where}.attributes", a.name), str(e))
            return False
        text = rendered.get("string")
        if isinstance(text, str) and len(text) > MAX_ATTRIBUTE_STRING_LENGTH:
            reader.error(key_path(f"{where}.attributes", a.name),
                         f"gives {quote(text)} for device {ctx.index}, longer than "
                         f"{MAX_ATTRIBUTE_STRING_LENGTH} characters")
            return False
    for c in devices.capacity:
        try:
            c.render(ctx)
        except ValueError as e:
            reader.error(key_path(f"{where}.capacity", c.name), str(e))
            return False
    return True


# ---------------------------------------------------------------------------------------------
# network-attached pools


def _network_pools(raw: Raw, where: str, reader: DocumentReader, disabled_gates: set[str],
                   driver: _Devices) -> tuple[NetworkPoolSpec, ...] | None:
    value = raw.get("pools")
    path = f"{where}.pools"
    if value is None:
        return ()
    if not reader.expect(value, path, "list"):
        return None
    out = []
    names: set[str] = set()
    for p, item in enumerate(value):
        pool = _network_pool(item, f"{path}[{p}]", reader, disabled_gates, driver, names)
        if pool is not None:
            out.append(pool)
    return tuple(out) if len(out) == len(value) else None


def _network_pool(item: Any, at: str, reader: DocumentReader, disabled_gates: set[str], driver: _Devices,
                  names: set[str]) -> NetworkPoolSpec | None:
    if not reader.expect(item, at, "mapping"):
        return None
    before = len(reader.problems)
    reader.fields(item, at, DRA_POOL_FIELDS)
    name_template = _pool_name_template(item.get("name"), f"{at}.name", reader)
    node_selector, all_nodes, per_value_of = _pool_placement(item, at, reader)
    if name_template is not None and "value" in name_template.uses and per_value_of is None:
        reader.error(f"{at}.name", "the {value} placeholder needs perValueOf")
    count = _device_count(item, "devices", at, reader, 1)
    prefix = _device_prefix(item, at, reader, driver.prefix)
    attributes = _named_values(item, "attributes", "attribute", make_attribute, at, reader, driver.attributes)
    capacity = _named_values(item, "capacity", "capacity", make_capacity, at, reader, driver.capacity)
    taints = _taints(item, at, reader, disabled_gates, count)
    if (len(reader.problems) > before or name_template is None or count is None or prefix is None
            or attributes is None or capacity is None or taints is None):
        return None
    pool = NetworkPoolSpec(name=name_template, devices=count, device_prefix=prefix, attributes=attributes,
                           capacity=capacity, node_selector=tuple(node_selector.items()), all_nodes=all_nodes,
                           per_value_of=per_value_of, taints=taints)
    sample_pool = pool.pool_name("value" if per_value_of else "")
    for msg in pool_name_errors(sample_pool):
        reader.error(f"{at}.name", f"invalid pool name {quote(sample_pool)}: {msg}")
    if per_value_of is None and name_template.text in names:
        reader.error(f"{at}.name", f"duplicate pool name {quote(name_template.text)}")
    names.add(name_template.text)
    _check_devices(at, reader, _Devices(driver.driver, prefix, count, attributes, capacity), None, sample_pool)
    return pool if len(reader.problems) == before else None


def _pool_name_template(name: Any, path: str, reader: DocumentReader) -> ValueTemplate | None:
    if name is None:
        reader.error(path, "required")
        return None
    if not reader.expect(name, path, "string"):
        return None
    try:
        template = ValueTemplate(name)
    except ValueError as e:
        reader.error(path, str(e))
        return None
    if template.uses - {"value"}:
        reader.error(path, "a pool name can only use the {value} placeholder")
        return None
    return template


def _pool_placement(item: Raw, at: str, reader: DocumentReader) -> tuple[dict[str, str], bool, str | None]:
    """A pool's `nodeSelector`, `allNodes` and `perValueOf`, with the rules on combining them."""
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
    return node_selector, all_nodes is True, per_value_of


__all__ = ["DriverEntry", "parse_dra_drivers", "read_dra_drivers", "default_driver", "resolve_drivers"]
