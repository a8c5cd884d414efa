"""Server-side printing: `meta.k8s.io/v1` Tables for `kubectl get`.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints what the server
sends. Columns and cells come from each kind's Strategy (`columns`, `row`); each row carries the
object's metadata as a `PartialObjectMetadata` (what `--show-labels`, `-L` and `-A` read), or the
whole object with `includeObject=Object`. In a watch, only the first event's Table has column
definitions.
"""

from __future__ import annotations

from typing import Any

from ..api.registry import ResourceType, StrategyContext

TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _row_object(obj: dict, include: str) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def _row(rt: ResourceType, obj: dict, ctx: StrategyContext, include: str) -> dict:
    row: dict[str, Any] = {"cells": rt.strategy.row(obj, ctx)}
    ro = _row_object(obj, include)
    if ro is not None:
        row["object"] = ro
    conds = _row_conditions(rt, obj)
    if conds:
        row["conditions"] = conds
    return row


def _row_conditions(rt: ResourceType, obj: dict) -> list | None:
    # Terminal pods carry a Completed condition (kubectl hides them with --show-all=false historically).
    if rt.key == "core/pods":
        phase = (obj.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return [{"type": "Completed", "status": "True", "reason": phase, "message": "The pod has completed"}]
    return None


def table(rt: ResourceType, objs: list[dict], ctx: StrategyContext, *, resource_version: str = "",
          continue_token: str | None = None, include: str = "Metadata", headers: bool = True) -> dict:
    md: dict[str, Any] = {}
    if resource_version:
        md["resourceVersion"] = resource_version
    if continue_token:
        md["continue"] = continue_token
    t: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": md}
    if headers:
        t["columnDefinitions"] = [c.definition() for c in rt.strategy.columns]
    t["rows"] = [_row(rt, o, ctx, include) for o in objs]
    return t
