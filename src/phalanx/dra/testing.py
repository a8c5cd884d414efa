"""Builders for DRA objects in tests (plain dicts, as the API serves them).

    node("n1", zone="a")
    gpu_slice("n1", 4)                                   # dra-example-driver shape: gpu-0..gpu-3
    device_slice("s", [dev("gpu-0", index=0, memory="80Gi")], node_name="n1", pool="n1")
    device_class("gpu.example.com")                      # selector device.driver == 'gpu.example.com'
    claim("c", request("gpu", count=2))
    claim("c", first_available("gpu", request("big", count=2), request("small")))
    allocated(claim(...), [("gpu.example.com", "n1", "gpu-0")])   # with status.allocation

Attributes given to `dev()` become typed DeviceAttributes by Python type (bool, int, str; a
`version("1.2.3")` wrapper for versions; lists for list attributes); capacities are quantity
strings.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

DRIVER = "gpu.example.com"


class version(str):
    """Marks an attribute value as a `version` attribute."""


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def _attribute(value: Any) -> dict[str, Any]:
    if isinstance(value, version):
        return {"version": str(value)}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, list) and value:
        first = value[0]
        if isinstance(first, version):
            return {"versions": [str(v) for v in value]}
        if isinstance(first, bool):
            return {"bools": list(value)}
        if isinstance(first, int):
            return {"ints": list(value)}
        return {"strings": list(value)}
    raise TypeError(f"unsupported attribute value {value!r}")


def dev(name: str, *, capacity: Optional[dict[str, str]] = None, taints: Optional[list[Any]] = None,
        consumes: Optional[list[Any]] = None, **attributes: Any) -> dict[str, Any]:
    """One device; `attributes` by keyword (use `attrs={"other.com/x": 1}` for qualified names)."""
    extra = attributes.pop("attrs", {}) or {}
    d: dict[str, Any] = {"name": name}
    all_attributes = {**attributes, **extra}
    if all_attributes:
        d["attributes"] = {k: _attribute(v) for k, v in all_attributes.items()}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if taints:
        d["taints"] = taints
    if consumes:
        d["consumesCounters"] = consumes
    return d


def gpu_devices(count: int, node_name: str = "node", model: str = "LATEST-GPU-MODEL") -> list[dict[str, Any]]:
    """dra-example-driver's GPUs: index, uuid, model, driverVersion; memory 80Gi, compute 100."""
    return [dev(f"gpu-{i}", index=i, uuid=f"gpu-{node_name}-{i:08x}", model=model,
                driverVersion=version("1.0.0"), capacity={"memory": "80Gi", "compute": "100"})
            for i in range(count)]


def device_slice(name: str, devices: list[dict[str, Any]], *, driver: str = DRIVER, pool: str = "pool",
                 node_name: Optional[str] = None, all_nodes: bool = False, node_selector: Optional[dict[str, Any]] = None,
                 per_device: bool = False, generation: int = 1, slice_count: int = 1,
                 shared_counters: Optional[list[Any]] = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                        "resourceSliceCount": slice_count}}
    if node_name is not None:
        spec["nodeName"] = node_name
    if all_nodes:
        spec["allNodes"] = True
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if per_device:
        spec["perDeviceNodeSelection"] = True
    if devices:
        spec["devices"] = devices
    if shared_counters:
        spec["sharedCounters"] = shared_counters
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def gpu_slice(node_name: str, count: int = 8, **kwargs: Any) -> dict[str, Any]:
    """A node-local slice as dra-example-driver publishes it (pool named after the node)."""
    return device_slice(f"0-{DRIVER}-{node_name}", gpu_devices(count, node_name), node_name=node_name,
                        pool=node_name, **kwargs)


def labels_selector(**labels: str) -> dict[str, Any]:
    """A NodeSelector with one term requiring the labels."""
    return {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": k, "operator": "In", "values": [v]} for k, v in labels.items()]}]}


def device_class(name: str = DRIVER, *expressions: str, config: Optional[list[Any]] = None) -> dict[str, Any]:
    selectors = expressions or (f"device.driver == '{name}'",)
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if config:
        spec["config"] = [{"opaque": c} for c in config]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def request(name: str, device_class_name: str = DRIVER, *, count: Optional[int] = None, all: bool = False,
            selectors: Iterable[str] = (), admin: Optional[bool] = None, tolerations: Optional[list[Any]] = None,
            capacity: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """An `exactly` request (or, inside first_available, a sub-request)."""
    spec: dict[str, Any] = {"deviceClassName": device_class_name,
                            "allocationMode": "All" if all else "ExactCount"}
    if not all:
        spec["count"] = 1 if count is None else count
    if selectors:
        spec["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin is not None:
        spec["adminAccess"] = admin
    if tolerations:
        spec["tolerations"] = tolerations
    if capacity:
        spec["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": spec}


def first_available(name: str, *subrequests: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": s["name"], **s["exactly"]} for s in subrequests]}


def claim(name: str, *requests: dict[str, Any], namespace: str = "default", constraints: Optional[list[Any]] = None,
          config: Optional[list[Any]] = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {"devices": devices}}


def allocated(c: dict[str, Any], devices: Iterable[tuple[Any, ...]], admin: bool = False) -> dict[str, Any]:
    """The claim with status.allocation naming (driver, pool, device) tuples."""
    results = []
    for driver, pool, device in devices:
        r: dict[str, Any] = {"request": c["spec"]["devices"]["requests"][0]["name"], "driver": driver,
                             "pool": pool, "device": device}
        if admin:
            r["adminAccess"] = True
        results.append(r)
    return {**c, "status": {"allocation": {"devices": {"results": results}}}}


def results_of(outcome: Any, claim_index: int = 0) -> list[tuple[str, str]]:
    """(request, device) pairs of one claim's allocation, for compact assertions."""
    return [(r["request"], r["device"]) for r in outcome.results[claim_index]["devices"]["results"]]
