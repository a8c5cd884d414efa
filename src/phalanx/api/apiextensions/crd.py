"""The `CustomResourceDefinition` kind: defaults, the names it is given, its conditions.

Upstream's naming and establishing controllers decide, for every CRD, which names it may use
(`status.acceptedNames`) and whether it is served; phalanx decides the same when the CRD is
written, so the answer to `kubectl apply` already says `NamesAccepted` and `Established`:

- names that another CRD of the same group already accepted are refused (`NamesAccepted=False`,
  reason `PluralConflict`, `SingularConflict`, `ShortNamesConflict`, `KindConflict` or
  `ListKindConflict`); a CRD whose names are accepted is `Established`;
- `status.storedVersions` gains the storage version;
- a terminating CRD (`Terminating=True`) keeps its accepted names until its objects are gone
  (`controllers/customresourcecleanup.py` deletes them, then drops the
  `customresourcecleanup.apiextensions.k8s.io` finalizer set on create).

Helpers read a CRD for the API server: `established(crd)`, `served_versions(crd)`,
`storage_version(crd)`, `accepted_names(crd)`.
"""

from __future__ import annotations

from typing import Any

from ...machinery.errors import FieldError
from ...machinery.meta import deep_copy
from ...machinery.timestamps import now_rfc3339
from ..registry import Column, NAME_COLUMN, Obj, Strategy, StrategyContext
from . import crdvalidation

KEY = "apiextensions.k8s.io/customresourcedefinitions"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_NAME_FIELDS = (("plural", "PluralConflict"), ("singular", "SingularConflict"), ("kind", "KindConflict"),
                ("listKind", "ListKindConflict"))


def condition(crd: Obj, ctype: str) -> dict | None:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def established(crd: Obj) -> bool:
    c = condition(crd, "Established")
    return bool(c and c.get("status") == "True")


def terminating(crd: Obj) -> bool:
    return bool((crd.get("metadata") or {}).get("deletionTimestamp"))


def accepted_names(crd: Obj) -> dict:
    return (crd.get("status") or {}).get("acceptedNames") or crd["spec"]["names"]


def served_versions(crd: Obj) -> list[dict]:
    return [v for v in crd["spec"].get("versions") or [] if v.get("served")]


def storage_version(crd: Obj) -> str:
    for v in crd["spec"].get("versions") or []:
        if v.get("storage"):
            return str(v["name"])
    return str(crd["spec"]["versions"][0]["name"])


def _set_condition(status: dict, ctype: str, value: str, reason: str, message: str, now: str) -> None:
    conds = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != value:
                c["lastTransitionTime"] = now
            c.update({"status": value, "reason": reason, "message": message})
            return
    conds.append({"type": ctype, "status": value, "lastTransitionTime": now, "reason": reason, "message": message})


def _conflict(crd: Obj, ctx: StrategyContext) -> tuple[str, str] | None:
    """(reason, message) when a name of `crd` is taken by another CRD of its group."""
    spec = crd["spec"]
    for other in ctx.list_objects(KEY, None):
        if other["metadata"]["name"] == crd["metadata"]["name"] or (other.get("spec") or {}).get("group") != spec.get("group"):
            continue
        found = _taken(spec.get("names") or {}, accepted_names(other))
        if found is not None:
            return found
    return None


def _taken(names: dict, taken: dict) -> tuple[str, str] | None:
    """The first of `names` that `taken` (another CRD's accepted names) already uses."""
    taken_all = {taken.get("plural"), taken.get("singular")} | set(taken.get("shortNames") or [])
    for field, reason in _NAME_FIELDS:
        value = names.get(field)
        if value and (value == taken.get(field) or (field in ("plural", "singular") and value in taken_all)):
            return reason, f'"{value}" is already in use'
    for short in names.get("shortNames") or []:
        if short in taken_all:
            return "ShortNamesConflict", f'"{short}" is already in use'
    return None


def update_status(crd: Obj, ctx: StrategyContext) -> None:
    """What the naming and establishing controllers write: accepted names and conditions."""
    status = crd.setdefault("status", {})
    now = now_rfc3339(ctx.now())
    conflict = _conflict(crd, ctx)
    if conflict is None:
        status["acceptedNames"] = dict(crd["spec"]["names"])
        _set_condition(status, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
        if not established(crd):
            _set_condition(status, "Established", "True", "InitialNamesAccepted",
                           "the initial names have been accepted", now)
    else:
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        _set_condition(status, "NamesAccepted", "False", conflict[0], conflict[1], now)
        if not established(crd):
            _set_condition(status, "Established", "False", "NotAccepted", "not all names are accepted", now)
    stored = status.setdefault("storedVersions", [])
    sv = storage_version(crd)
    if sv not in stored:
        stored.append(sv)


class CRDStrategy(Strategy):
    columns = [NAME_COLUMN, Column("Created At", "date", "", "CreationTimestamp is a timestamp representing "
                                   "the server time when this object was created.")]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        names = spec.setdefault("names", {})
        kind = names.get("kind")
        if kind and not names.get("singular"):
            names["singular"] = str(kind).lower()
        if kind and not names.get("listKind"):
            names["listKind"] = f"{kind}List"
        spec.setdefault("conversion", {"strategy": "None"})

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj.pop("status", None)
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        if not crdvalidation.validate_crd(obj):
            update_status(obj, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_update(new, old, ctx)
        if not terminating(old) and not crdvalidation.validate_crd(new):
            if "status" in new:
                new["status"] = deep_copy(new["status"])  # the stored object's status is shared
            update_status(new, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return crdvalidation.validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return crdvalidation.validate_crd_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return crdvalidation.stored_versions_errors(new)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]
