"""apps/v1 StatefulSet and ControllerRevision: defaults, validation, update rules and printer cells.

Rules from upstream `pkg/apis/apps/v1/defaults.go` (`SetDefaults_StatefulSet`),
`pkg/apis/apps/validation` (`ValidateStatefulSet{,Update,Status}`, `ValidateControllerRevision`)
and `pkg/registry/apps/{statefulset,controllerrevision}/strategy.go`. The pod template goes through
`phalanx.api.apps.validate_template_for_replica_set`'s rules (restartPolicy Always, labels match
the selector); each `volumeClaimTemplates` entry through the claim spec rules of
`phalanx.api.persistentvolumes`. `register_kinds()` is called by `phalanx.api.apps`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..machinery.errors import FieldError, forbidden, invalid, not_supported, required
from ..machinery.names import dns1123_label_errors
from .common import Obj, _col, _dict, _gate, _list, _name, creation_age
from .fieldchecks import (IMMUTABLE_MSG, int_or_percent_value, is_not_more_than_100_percent, validate_nonnegative,
                          validate_positive_int_or_percent)
from .labelselectors import label_selector_string, validate_label_selector
from .persistentvolumes import default_claim, validate_claim_spec
from .poddefaults import default_pod_template, drop_disabled_pod_spec_fields
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
UPDATE_STRATEGIES = ("OnDelete", "RollingUpdate")
RETENTION_POLICIES = ("Delete", "Retain")
MAX_UNAVAILABLE_GATE = "MaxUnavailableStatefulSet"
STATEFULSET_SPEC_UPDATE_MSG = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                               "'template', 'updateStrategy', 'revisionHistoryLimit', "
                               "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
              "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def default_statefulset_spec(spec: Obj, ctx: StrategyContext) -> None:
    spec.setdefault("podManagementPolicy", "OrderedReady")
    _default_update_strategy(spec, ctx)
    policy = spec.get("persistentVolumeClaimRetentionPolicy")
    if not isinstance(policy, dict):
        policy = spec["persistentVolumeClaimRetentionPolicy"] = {}
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    for t in _list(spec.get("volumeClaimTemplates")):
        if isinstance(t, dict):
            t.setdefault("status", {})
            default_claim(t)
    default_pod_template(spec.get("template"), ctx)


def _default_update_strategy(spec: Obj, ctx: StrategyContext) -> None:
    """An unset type is RollingUpdate with `rollingUpdate: {}`; a given `rollingUpdate` gets
    `partition: 0` and, with MaxUnavailableStatefulSet (beta, on since 1.35), `maxUnavailable: 1`."""
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if not isinstance(strategy.get("rollingUpdate"), dict):
            strategy["rollingUpdate"] = {}
    ru = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(ru, dict):
        ru.setdefault("partition", 0)
        if _gate(ctx, MAX_UNAVAILABLE_GATE):
            ru.setdefault("maxUnavailable", 1)


def _validate_max_unavailable(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return []
    errs = validate_positive_int_or_percent(value, path)
    if not errs and int_or_percent_value(value) == 0:
        errs.append(invalid(path, value, "cannot be 0"))
    return errs + is_not_more_than_100_percent(value, path)


def _validate_update_strategy(spec: Obj, path: str) -> list[FieldError]:
    strategy = _dict(spec.get("updateStrategy"))
    stype = strategy.get("type")
    sp = f"{path}.updateStrategy"
    if stype == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            return [invalid(f"{sp}.rollingUpdate", strategy.get("rollingUpdate"),
                            "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if stype == "RollingUpdate":
        ru = _dict(strategy.get("rollingUpdate"))
        return validate_nonnegative(ru.get("partition", 0), f"{sp}.rollingUpdate.partition") + \
            _validate_max_unavailable(ru.get("maxUnavailable"), f"{sp}.rollingUpdate.maxUnavailable")
    if not stype:
        return [required(f"{sp}", "")]
    return [not_supported(f"{sp}.type", stype, UPDATE_STRATEGIES)]


def _validate_retention(spec: Obj, path: str) -> list[FieldError]:
    policy = _dict(spec.get("persistentVolumeClaimRetentionPolicy"))
    errs: list[FieldError] = []
    for f in ("whenDeleted", "whenScaled"):
        value = policy.get(f)
        if value not in RETENTION_POLICIES:
            errs.append(not_supported(f"{path}.persistentVolumeClaimRetentionPolicy.{f}", value, RETENTION_POLICIES))
    return errs


def _validate_selector_and_template(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    from .apps import validate_template_for_replica_set  # apps registers this module's kinds
    sel = spec.get("selector")
    if sel is None:
        return [required(f"{path}.selector", "")]
    errs = validate_label_selector(sel, f"{path}.selector")
    if errs:
        return errs
    if not label_selector_string(sel):
        return [invalid(f"{path}.selector", sel, "empty selector is invalid for statefulset")]
    return validate_template_for_replica_set(_template_with_claims(spec), sel, f"{path}.template", ctx,
                                             "StatefulSet")


def _template_with_claims(spec: Obj) -> Any:
    """The template as its pods will be: each claim template is a volume the containers may mount
    (upstream checks the union of volumes and claims against the mounts)."""
    template = spec.get("template")
    claims = [_dict(_dict(t).get("metadata")).get("name") for t in _list(spec.get("volumeClaimTemplates"))]
    if not isinstance(template, dict) or not any(claims):
        return template
    tspec = dict(_dict(template.get("spec")))
    volumes = list(_list(tspec.get("volumes")))
    present = {_dict(v).get("name") for v in volumes}
    volumes += [{"name": n, "persistentVolumeClaim": {"claimName": n}} for n in claims if n and n not in present]
    tspec["volumes"] = volumes
    return {**template, "spec": tspec}


def _validate_claim_templates(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, t in enumerate(_list(spec.get("volumeClaimTemplates"))):
        tp = f"{path}.volumeClaimTemplates[{i}]"
        name = _dict(_dict(t).get("metadata")).get("name") or ""
        if not name:
            errs.append(required(f"{tp}.metadata.name", "name or generateName is required"))
        errs += validate_claim_spec(_dict(_dict(t).get("spec")), f"{tp}.spec")
    return errs


def validate_statefulset_spec(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if policy not in POD_MANAGEMENT_POLICIES:
        errs.append(not_supported(f"{path}.podManagementPolicy", policy, POD_MANAGEMENT_POLICIES))
    errs += _validate_update_strategy(spec, path)
    errs += _validate_retention(spec, path)
    errs += validate_nonnegative(spec.get("replicas", 0), f"{path}.replicas")
    errs += validate_nonnegative(spec.get("minReadySeconds", 0), f"{path}.minReadySeconds")
    if spec.get("ordinals") is not None:
        errs += validate_nonnegative(_dict(spec.get("ordinals")).get("start", 0), f"{path}.ordinals.start")
    if spec.get("serviceName"):
        errs += [invalid(f"{path}.serviceName", spec["serviceName"], m)
                 for m in dns1123_label_errors(str(spec["serviceName"]))]
    errs += _validate_selector_and_template(spec, path, ctx)
    errs += _validate_claim_templates(spec, path)
    return errs


_STATUS_COUNTS = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")


def validate_statefulset_status(status: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    for f in _STATUS_COUNTS + ("observedGeneration", "collisionCount"):
        errs += validate_nonnegative(status.get(f, 0), f"status.{f}")
    replicas = _int(status.get("replicas"))
    for f in _STATUS_COUNTS[1:]:
        if _int(status.get(f)) > replicas:
            errs.append(invalid(f"status.{f}", status.get(f), "cannot be greater than status.replicas"))
    if _int(status.get("availableReplicas")) > _int(status.get("readyReplicas")):
        errs.append(invalid("status.availableReplicas", status.get("availableReplicas"),
                            "cannot be greater than status.readyReplicas"))
    return errs


def _template_containers(spec: Obj) -> tuple[str, str]:
    from .batch import layout_container_cells
    return layout_container_cells(_list(_dict(_dict(spec.get("template")).get("spec")).get("containers")))


class StatefulSetStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Ready", "string", "", "Number of the pod with ready state"),
        AGE_COLUMN,
        Column("Containers", "string", "", "Names of each container in the template.", 1),
        Column("Images", "string", "", "Images referenced by each container in the template.", 1),
    ]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_statefulset_spec(spec, ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        drop_disabled_pod_spec_fields(_dict(_dict(_dict(obj.get("spec")).get("template")).get("spec")), None, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_statefulset_spec(_dict(obj.get("spec")), "spec", ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        nspec = {k: v for k, v in _dict(new.get("spec")).items() if k not in _UPDATABLE}
        ospec = {k: v for k, v in _dict(old.get("spec")).items() if k not in _UPDATABLE}
        if nspec != ospec:
            errs.append(forbidden("spec", STATEFULSET_SPEC_UPDATE_MSG))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = validate_statefulset_status(_dict(new.get("status")))
        occ = _dict(old.get("status")).get("collisionCount")
        if occ is not None and _int(_dict(new.get("status")).get("collisionCount")) < occ:
            errs.append(invalid("status.collisionCount", _dict(new.get("status")).get("collisionCount"),
                                "cannot be decremented"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        names, images = _template_containers(spec)
        return [_name(obj), f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
                creation_age(obj, ctx), names, images]


def _controller_cell(obj: Obj) -> str:
    for ref in _list(_dict(obj.get("metadata")).get("ownerReferences")):
        ref = _dict(ref)
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower()
            return f"{kind}.{group}/{ref.get('name', '')}" if group else f"{kind}/{ref.get('name', '')}"
    return "<none>"


class ControllerRevisionStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Controller", "Controller of the object"),
        _col("Revision", "Revision indicates the revision of the state represented by Data.", "integer"),
        AGE_COLUMN,
    ]
    tracks_generation = False

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        if obj.get("data") is None:
            errs.append(required("data", "data is mandatory"))
        errs += validate_nonnegative(obj.get("revision", 0), "revision")
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        if new.get("data") != old.get("data"):
            errs.append(invalid("data", "", IMMUTABLE_MSG))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), _controller_cell(obj), _int(obj.get("revision")), creation_age(obj, ctx)]


STATEFULSET_STRATEGY = StatefulSetStrategy()
CONTROLLERREVISION_STRATEGY = ControllerRevisionStrategy()


def register_kinds(reg: Callable[[ResourceType], ResourceType] = register) -> None:
    reg(ResourceType("apps", "v1", "StatefulSet", "statefulsets", True, STATEFULSET_STRATEGY, short_names=["sts"],
                     categories=["all"], subresources=["status", "scale"]))
    reg(ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", True, CONTROLLERREVISION_STRATEGY))
