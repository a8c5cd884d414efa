"""Spelling out what the allocator chose as upstream's AllocationResult JSON: `devices.results[]`,
`devices.config[]` (class configs FromClass, then the claim's FromClaim) and the `nodeSelector`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

import orjson

from ..machinery.quantity import format_quantity
from .devices import Device
from .plans import AllocationError, RequestSlot

if TYPE_CHECKING:
    from .allocator import Chosen, ClaimsAllocator, NodeAnswer
    from .plans import ClaimPlan


def spell_results(answer: "NodeAnswer", allocator: "ClaimsAllocator", plans: list["ClaimPlan"]) -> list[dict[str, Any]]:
    """One AllocationResult per claim of `allocator` from a fitting answer (fresh dicts)."""
    assert answer.choices is not None and answer.selected is not None and answer.node_selectors is not None
    features = allocator.features
    out = []
    for ci, claim in enumerate(allocator.claims):
        slots = plans[ci].slots
        results = []
        for ri, si, device, consumed in answer.choices[ci]:
            req = slots[ri].alternatives[si]
            entry: dict[str, Any] = {"request": req.name, "driver": device.driver, "pool": device.pool_name,
                                     "device": device.name}
            if req.admin:
                entry["adminAccess"] = True
            if req.tolerations and features.device_taints:
                entry["tolerations"] = copy_json(req.tolerations)
            if device.binding_conditions and features.binding_conditions:
                entry["bindingConditions"] = list(device.binding_conditions)
                entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
            if consumed is not None:
                entry["shareID"] = allocator.cache.new_share_id()
                entry["consumedCapacity"] = {spelled(n, device): format_quantity(v, device.capacity_formats[n])
                                             for n, v in consumed.items()}
            results.append(entry)
        devices: dict[str, Any] = {"results": results}
        config = claim_config(slots, answer.selected[ci], claim)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        node_selector = answer.node_selectors[ci]
        if node_selector is not None:
            allocation["nodeSelector"] = copy_json(node_selector)
        out.append(allocation)
    return out


def node_selector(claim: Mapping[str, Any], chosen: list["Chosen"]) -> Optional[dict[str, Any]]:
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for c in chosen:
        device, s = c.device, c.device.slice
        if s.per_device:
            node_name, selector = device.node_name, device.node_selector
        else:
            node_name, selector = s.node_name, s.node_selector
        if node_name:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) > 1:
                raise AllocationError(f"create NodeSelector for claim {(claim.get('metadata') or {}).get('name', '')}: "
                                      f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
            if terms:
                add_requirements(terms[0].get("matchFields") or [], fields)
                add_requirements(terms[0].get("matchExpressions") or [], expressions)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def claim_config(slots: list[RequestSlot], selected: list[int], claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """devices.config of a result: class configs (FromClass, once per class, naming every request
    that used it), then the claim's configs (FromClaim) that concern a chosen request."""
    config: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    chosen_names: list[str] = []
    for slot, index in zip(slots, selected):
        req = slot.alternatives[index]
        chosen_names.append(req.name)
        known = class_ranges.get(req.class_name)
        if known is not None:
            for i in range(*known):
                config[i]["requests"].append(req.name)
            continue
        begin = len(config)
        for entry in (req.device_class.get("spec") or {}).get("config") or []:
            config.append({"source": "FromClass", "requests": [req.name],
                           **{k: copy_json(v) for k, v in entry.items()}})
        class_ranges[req.class_name] = (begin, len(config))
    relevant = set(chosen_names) | {slot.name for slot in slots}
    for entry in ((claim.get("spec") or {}).get("devices") or {}).get("config") or []:
        names = entry.get("requests") or []
        if names and not any(n in relevant for n in names):
            continue
        out: dict[str, Any] = {"source": "FromClaim"}
        if names:
            out["requests"] = list(names)
        out.update({k: copy_json(v) for k, v in entry.items() if k != "requests"})
        config.append(out)
    return config


def add_requirements(source: list[Any], target: list[Any]) -> None:
    """Upstream's addNewNodeSelectorRequirements: skip requirements already present."""
    for req in source:
        values = set(req.get("values") or [])
        if any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
               and set(r.get("values") or []) == values for r in target):
            continue
        target.append(copy_json(req))


def spelled(full: str, device: Device) -> str:
    """A capacity name as the slice spells it (bare when it belongs to the driver)."""
    if full in (device.spec.get("capacity") or {}):
        return full
    prefix = device.driver + "/"
    return full[len(prefix):] if full.startswith(prefix) else full


def copy_json(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))
