"""coordination.k8s.io/v1 Lease: the leader-election and node-heartbeat object.

Validation from upstream `pkg/apis/coordination/validation`; `kubectl get leases` shows
NAME HOLDER AGE. Registered at import as `leases`.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, forbidden, invalid
from .common import _dict, creation_age
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]


class LeaseStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Holder", "string", "", "holderIdentity contains the identity of the holder of a current lease."),
        AGE_COLUMN,
    ]
    tracks_generation = False

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs: list[FieldError] = []
        lds = spec.get("leaseDurationSeconds")
        if lds is not None and lds <= 0:
            errs.append(invalid("spec.leaseDurationSeconds", lds, "must be greater than 0"))
        lt = spec.get("leaseTransitions")
        if lt is not None and lt < 0:
            errs.append(invalid("spec.leaseTransitions", lt, "must be greater than or equal to 0"))
        if spec.get("preferredHolder") and not spec.get("strategy"):
            errs.append(forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_dict(obj.get("metadata")).get("name", ""), _dict(obj.get("spec")).get("holderIdentity") or "",
                creation_age(obj, ctx)]


LEASE_STRATEGY = LeaseStrategy()

register(ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True, LEASE_STRATEGY))
