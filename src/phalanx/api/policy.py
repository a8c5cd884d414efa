"""policy/v1 PodDisruptionBudget: validation, status handling and `kubectl get pdb` cells.

Rules from upstream `pkg/apis/policy/validation` and `pkg/registry/policy/poddisruptionbudget`.
Registered at import as `poddisruptionbudgets` (short name `pdb`, `/status` subresource).
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, invalid, not_supported
from .common import _dict, creation_age
from .fieldchecks import is_not_more_than_100_percent, validate_nonnegative, validate_positive_int_or_percent
from .labelselectors import validate_label_selector
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]

UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def int_or_string_cell(value: Any) -> str:
    """`intstr.IntOrString.String()`, or `N/A` when unset (printPodDisruptionBudget)."""
    if value is None:
        return "N/A"
    return str(value)


def set_disruption_allowed_condition(status: Obj, now: str) -> None:
    """`pdbhelper.UpdateDisruptionAllowedCondition`: DisruptionAllowed True (SufficientPods) while
    disruptions are allowed, else False (InsufficientPods); the transition time moves on a change."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    cond = {"type": "DisruptionAllowed", "status": "True" if allowed else "False",
            "observedGeneration": int(status.get("observedGeneration") or 0),
            "lastTransitionTime": now, "reason": "SufficientPods" if allowed else "InsufficientPods", "message": ""}
    set_condition(status, cond)


def set_condition(status: Obj, cond: Obj) -> None:
    """`meta.SetStatusCondition`: replace the condition of that type, keeping its transition time
    unless the status changed."""
    conds = status.setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond["status"]:
                cond = {**cond, "lastTransitionTime": c.get("lastTransitionTime", cond["lastTransitionTime"])}
            conds[i] = cond
            return
    conds.append(cond)


class PodDisruptionBudgetStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Min Available", "string", "", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable."),
        Column("Allowed Disruptions", "integer", "", "Calculated number of pods that may be disrupted at this time."),
        AGE_COLUMN,
    ]
    status_is_subresource = True

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        # PodDisruptionBudgetStatus' counters are not omitempty: an empty status prints them as 0.
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs: list[FieldError] = []
        mina, maxu = spec.get("minAvailable"), spec.get("maxUnavailable")
        if mina is not None and maxu is not None:
            errs.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
        for name, value in (("minAvailable", mina), ("maxUnavailable", maxu)):
            if value is not None:
                errs += validate_positive_int_or_percent(value, f"spec.{name}")
                errs += is_not_more_than_100_percent(value, f"spec.{name}")
        errs += validate_label_selector(spec.get("selector"), "spec.selector")
        upep = spec.get("unhealthyPodEvictionPolicy")
        if upep is not None and upep not in UNHEALTHY_POD_EVICTION_POLICIES:
            errs.append(not_supported("spec.unhealthyPodEvictionPolicy", upep, UNHEALTHY_POD_EVICTION_POLICIES))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        st = _dict(new.get("status"))
        errs: list[FieldError] = []
        for f in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            errs += validate_nonnegative(st.get(f, 0), f"status.{f}")
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        return [_dict(obj.get("metadata")).get("name", ""), int_or_string_cell(spec.get("minAvailable")),
                int_or_string_cell(spec.get("maxUnavailable")), int(status.get("disruptionsAllowed") or 0),
                creation_age(obj, ctx)]


PDB_STRATEGY = PodDisruptionBudgetStrategy()

register(ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, PDB_STRATEGY,
                      short_names=["pdb"], subresources=["status"]))
