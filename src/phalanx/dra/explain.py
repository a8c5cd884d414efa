"""Why the allocator's search failed on a node, in upstream's words where upstream has them: each
request on its own (no devices matched, not enough devices with how many are in use, tainted or
short of capacity), else the constraints, else "each request fits on its own, but not all of them
together"; invalid and incomplete pools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .devices import Device, qualify, taints_prevent_allocation
from .plans import Request, selectable

if TYPE_CHECKING:
    from .allocator import _Allocation

INVALID_POOLS = "invalid resource pools were encountered"


def explain(run: "_Allocation") -> list[tuple[Optional[int], str]]:
    """Why the search failed, as (claim index, text after "claim <ref>") or (None, text)."""
    reasons: list[tuple[Optional[int], str]] = []
    invalid = run.view.invalid_pools
    if invalid:
        reasons.append((None, INVALID_POOLS + " (" + "; ".join(f"resource pool {p.key}: {p.invalid_reason}"
                                                               for p in invalid) + ")"))
    shortfalls = False
    for ci in range(len(run.claims)):  # each request alone, ignoring the others
        for slot in run.slots[ci]:
            problems = [(req, shortfall(run, ci, req)) for req in slot.alternatives]
            if slot.has_subrequests:
                if all(p for _, p in problems):
                    shortfalls = True
                    reasons.append((ci, f", request {slot.name}: none of the {len(problems)} alternatives "
                                        f"can be allocated (" + "; ".join(f"{r.name}: {p}" for r, p in problems)
                                    + ")"))
            elif problems[0][1]:
                shortfalls = True
                reasons.append((ci, f", request {slot.name}: {problems[0][1]}"))
    if not shortfalls:
        constrained = [ci for ci in range(len(run.claims)) if run.constraints[ci]]
        for ci in constrained:
            described = ", ".join(c.describe() for c in run.constraints[ci])
            reasons.append((ci, f": no set of free devices satisfies the constraints ({described})"))
        if not constrained:
            reasons.append((None, "each request fits on its own, but not all of them together"))
    incomplete = run.view.incomplete_pools
    if incomplete and shortfalls:
        reasons.append((None, "resource pools currently being updated were skipped: "
                              + ", ".join(p.key for p in incomplete)))
    return reasons


def shortfall(run: "_Allocation", ci: int, req: Request) -> Optional[str]:
    """Why this request cannot be met on its own, or None when it could be."""
    matched = [d for d in run.view.devices if selectable(req, d, run.features, run.cel_features, raise_errors=False)]
    if not matched:
        return "no devices matched the selectors"
    needed = len(matched) if req.all_mode else req.num_devices
    busy = tainted = short = 0
    available = 0
    for d in matched:
        shared = run.features.consumable_capacity and d.allow_multiple_allocations
        if not req.admin and not shared and d.id in run.in_use:
            busy += 1
        elif run.features.device_taints and d.taints and taints_prevent_allocation(d.taints, req.tolerations):
            tainted += 1
        elif not fits_alone(run, req, d):
            short += 1
        else:
            available += 1
    if available >= needed:
        return None
    details = [f"{n} {what}" for n, what in ((busy, "in use"), (tainted, "tainted"),
                                             (short, "short of capacity or shared counters")) if n]
    suffix = f" ({', '.join(details)})" if details else ""
    if req.all_mode:
        return f"not all matching devices are available: {needed} requested, {available} available{suffix}"
    return f"not enough devices: {needed} requested, {available} available{suffix}"


def fits_alone(run: "_Allocation", req: Request, device: Device) -> bool:
    if device.consumes_counters:
        if not run.features.partitionable_devices:
            return False
        available = run._available_counters(device)
        for set_name, counters in device.consumes_counters:
            have = available.get(set_name)
            if have is None:
                continue
            for n, v in counters.items():
                if n in have and have[n] < v:
                    return False
    if run.features.consumable_capacity and (req.capacity_requests or device.allow_multiple_allocations):
        demand = device.capacity_demand({qualify(k, device.driver): v for k, v in req.capacity_requests.items()})
        if demand is None:
            return False
        if device.allow_multiple_allocations:
            before = run.shared_consumed.get(device.id, {})
            if any(before.get(n, 0) + v > device.capacity[n] for n, v in demand.items()):
                return False
    return True
