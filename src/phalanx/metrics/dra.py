"""Dynamic Resource Allocation metrics of the ResourceClaim controller.

- `dynamic_resource_allocation_resourceclaim_creates_total{status,admin_access}`: ResourceClaims the
  controller created from templates, by outcome (`success`, `failure`) and whether the claim asks
  for admin access (`true`, `false`), as `k8s.io/dynamic-resource-allocation/resourceclaim/metrics`.
"""

from __future__ import annotations

from prometheus_client import Counter

from .registry import REGISTRY

CLAIM_CREATES = Counter(
    "dynamic_resource_allocation_resourceclaim_creates_total",
    "[ALPHA] Number of ResourceClaims creation requests, categorized by creation status and admin access",
    ("status", "admin_access"), registry=REGISTRY)


def claim_created(ok: bool, admin_access: bool) -> None:
    CLAIM_CREATES.labels("success" if ok else "failure", "true" if admin_access else "false").inc()
