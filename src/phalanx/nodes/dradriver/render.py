"""What a simulated DRA driver publishes, as pure functions of its spec and the nodes: the slice
contents of a node-local or network-attached pool, which nodes a driver serves, the helper
library's slice names, and slice specs as compared with the desired ones.

`reconcile.SimulatedDRADrivers` writes what these functions compute.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ...api.faults import device_failure_taint, device_matches
from .model import (CONTROL_PLANE_LABEL, CONTROL_PLANE_TAINT_KEYS, MAX_COUNTER_SETS_PER_SLICE,
                    MAX_DEVICES_PER_SLICE, MAX_DEVICES_PER_SLICE_ADVANCED, PROVIDER_PREFIX, SLICE_INDEX_MIN_LENGTH,
                    AttributeSpec, CapacitySpec, DeviceContext, DRADriverSpec, NetworkPoolSpec, Obj, TaintSpec,
                    pool_name_errors)

log = logging.getLogger("phalanx.nodes.dradriver")



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
    return slice_contents(*render_node_devices(driver, node_name))


def render_node_devices(driver: DRADriverSpec, node_name: str) -> tuple[list[dict], list[dict]]:
    """The devices and counter sets of the driver's pool on one node, before they are cut into
    slices."""
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
    return devices, counter_sets


def with_failure_taints(devices: list[dict], driver: str, failed: list[str], kept: Mapping[str, str]) -> list[dict]:
    """`devices` with the failure taint (`<driver>/unhealthy`, NoExecute) on those `failed` names
    (`phalanx.api.faults`); `kept` gives the `timeAdded` of failure taints already published, by
    device name, so a rewrite does not move it."""
    taint = device_failure_taint(driver)
    out = []
    for d in devices:
        if device_matches(failed, d.get("name", "")):
            t = dict(taint)
            if kept.get(d["name"]):
                t["timeAdded"] = kept[d["name"]]
            d = _ordered({**d, "taints": [*(d.get("taints") or []), t]})
        out.append(d)
    return out


def published_failure_times(driver: str, slices: Iterable[Obj]) -> dict[str, str]:
    """Device name -> `timeAdded` of the failure taint in the published slices."""
    key = device_failure_taint(driver)["key"]
    out = {}
    for s in slices:
        for d in (s.get("spec") or {}).get("devices") or []:
            for t in d.get("taints") or []:
                if t.get("key") == key and t.get("timeAdded"):
                    out[d.get("name", "")] = t["timeAdded"]
    return out


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
