"""apps/v1 Deployment and ReplicaSet: defaults, validation, update rules and printer cells.

Rules from upstream `pkg/apis/apps/v1/defaults.go`, `pkg/apis/apps/validation` and
`pkg/registry/apps/{deployment,replicaset}/strategy.go`; the pod template goes through
`phalanx.api.podspec`. Both kinds have `/status` and `/scale` subresources and are in category `all`.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, forbidden, invalid, not_supported, required
from . import podspec
from .batch import layout_container_cells
from .common import _dict, _list, creation_age
from .fieldchecks import (
    IMMUTABLE_MSG,
    int_or_percent_value,
    is_not_more_than_100_percent,
    validate_nonnegative,
    validate_positive_int_or_percent,
)
from .labelselectors import (
    format_label_selector,
    label_selector_matches,
    label_selector_string,
    validate_label_selector,
)
from .poddefaults import default_pod_template, drop_disabled_pod_spec_fields
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]

CONTAINERS_COLUMN = Column("Containers", "string", "", "Names of each container in the template.", 1)
IMAGES_COLUMN = Column("Images", "string", "", "Images referenced by each container in the template.", 1)


def _template_spec(obj: Obj) -> Obj:
    return _dict(_dict(_dict(obj.get("spec")).get("template")).get("spec"))


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def validate_template_for_replica_set(template: Any, selector: Any, path: str, ctx: Any, kind: str) -> list[FieldError]:
    """`ValidatePodTemplateSpecForReplicaSet`: labels match the selector, pods restart Always."""
    if not isinstance(template, dict):
        return [required(path)]
    errs: list[FieldError] = []
    if label_selector_string(selector):
        labels = _dict(template.get("metadata")).get("labels")
        if not label_selector_matches(selector, labels):
            errs.append(invalid(f"{path}.metadata.labels", labels, "`selector` does not match template `labels`"))
    errs += podspec.validate_pod_template(template, path, ctx)
    tspec = _dict(template.get("spec"))
    if tspec.get("restartPolicy") != "Always":
        errs.append(not_supported(f"{path}.spec.restartPolicy", tspec.get("restartPolicy", ""), ("Always",)))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(f"{path}.spec.activeDeadlineSeconds",
                              f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def _validate_selector(spec: Obj, path: str) -> tuple[list[FieldError], bool]:
    """Required, valid and non-empty; returns (errors, usable-for-matching)."""
    sel = spec.get("selector")
    if sel is None:
        return [required(f"{path}.selector")], False
    errs = validate_label_selector(sel, f"{path}.selector")
    usable = not errs
    if isinstance(sel, dict) and not _dict(sel.get("matchLabels")) and not _list(sel.get("matchExpressions")):
        errs.append(invalid(f"{path}.selector", sel, "empty selector is invalid for deployment"))
    return errs, usable


def validate_deployment_spec(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("replicas", 0), f"{path}.replicas")
    sel_errs, usable = _validate_selector(spec, path)
    errs += sel_errs
    if usable:
        errs += validate_template_for_replica_set(spec.get("template"), spec.get("selector"), f"{path}.template", ctx,
                                                  "ReplicaSet")
    elif spec.get("selector") is not None:
        errs.append(invalid(f"{path}.selector", spec.get("selector"), "invalid label selector"))
    strategy = _dict(spec.get("strategy"))
    stype = strategy.get("type")
    sp = f"{path}.strategy"
    if stype == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            errs.append(forbidden(f"{sp}.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"))
    elif stype == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if ru is None:
            errs.append(required(f"{sp}.rollingUpdate", "this should be defaulted and never be nil"))
        else:
            ru = _dict(ru)
            rp = f"{sp}.rollingUpdate"
            mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
            errs += validate_positive_int_or_percent(mu, f"{rp}.maxUnavailable")
            errs += validate_positive_int_or_percent(ms, f"{rp}.maxSurge")
            if int_or_percent_value(mu) == 0 and int_or_percent_value(ms) == 0:
                errs.append(invalid(f"{rp}.maxUnavailable", mu, "may not be 0 when `maxSurge` is 0"))
            errs += is_not_more_than_100_percent(mu, f"{rp}.maxUnavailable")
    else:
        errs.append(not_supported(sp, strategy, ("Recreate", "RollingUpdate")))
    mrs = spec.get("minReadySeconds", 0)
    errs += validate_nonnegative(mrs, f"{path}.minReadySeconds")
    if spec.get("revisionHistoryLimit") is not None:
        errs += validate_nonnegative(spec["revisionHistoryLimit"], f"{path}.revisionHistoryLimit")
    pds = spec.get("progressDeadlineSeconds")
    if pds is not None:
        errs += validate_nonnegative(pds, f"{path}.progressDeadlineSeconds")
        if isinstance(pds, int) and pds <= _int(mrs):
            errs.append(invalid(f"{path}.progressDeadlineSeconds", pds, "must be greater than minReadySeconds"))
    return errs


def _validate_replica_counts(status: Obj, fields: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    for f in fields:
        errs += validate_nonnegative(status.get(f, 0), f"status.{f}")
    msg = "cannot be greater than status.replicas"
    replicas = _int(status.get("replicas"))
    for f in fields:
        if f in ("replicas", "observedGeneration", "unavailableReplicas", "collisionCount", "terminatingReplicas"):
            continue
        if _int(status.get(f)) > replicas:
            errs.append(invalid(f"status.{f}", status.get(f), msg))
    if _int(status.get("availableReplicas")) > _int(status.get("readyReplicas")):
        errs.append(invalid("status.availableReplicas", status.get("availableReplicas"),
                            "cannot be greater than readyReplicas"))
    return errs


class DeploymentStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Ready", "string", "", "Number of the pod with ready state"),
        Column("Up-to-date", "string", "", "Total number of non-terminated pods targeted by this deployment that "
                                           "have the desired template spec."),
        Column("Available", "string", "", "Total number of available pods (ready for at least minReadySeconds) "
                                          "targeted by this deployment."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", "", "Label selector for pods. Existing ReplicaSets whose pods are selected by "
                                         "this will be the ones affected by this deployment.", 1),
    ]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        strategy = spec.get("strategy")
        if not isinstance(strategy, dict):
            strategy = spec["strategy"] = {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if not isinstance(ru, dict):
                ru = strategy["rollingUpdate"] = {}
            ru.setdefault("maxUnavailable", "25%")
            ru.setdefault("maxSurge", "25%")
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = 10
        if spec.get("progressDeadlineSeconds") is None:
            spec["progressDeadlineSeconds"] = 600
        default_pod_template(spec.get("template"), ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        drop_disabled_pod_spec_fields(_template_spec(obj), None, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_deployment_spec(_dict(obj.get("spec")), "spec", ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        nsel, osel = _dict(new.get("spec")).get("selector"), _dict(old.get("spec")).get("selector")
        if nsel != osel:
            errs.append(invalid("spec.selector", nsel, IMMUTABLE_MSG))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        st = _dict(new.get("status"))
        errs = _validate_replica_counts(st, ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                                             "availableReplicas", "unavailableReplicas"))
        if st.get("collisionCount") is not None:
            errs += validate_nonnegative(st["collisionCount"], "status.collisionCount")
        occ = _dict(old.get("status")).get("collisionCount")
        if occ is not None and _int(st.get("collisionCount")) < occ:
            errs.append(invalid("status.collisionCount", _int(st.get("collisionCount")), "cannot be decremented"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        names, images = layout_container_cells(_list(_dict(_dict(spec.get("template")).get("spec")).get("containers")))
        sel = spec.get("selector")
        sel_str = "<invalid>" if validate_label_selector(sel, "s") else label_selector_string(sel)
        return [
            _dict(obj.get("metadata")).get("name", ""),
            f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
            _int(status.get("updatedReplicas")), _int(status.get("availableReplicas")), creation_age(obj, ctx),
            names, images, sel_str,
        ]


def validate_replica_set_spec(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("replicas", 0), f"{path}.replicas")
    errs += validate_nonnegative(spec.get("minReadySeconds", 0), f"{path}.minReadySeconds")
    sel_errs, usable = _validate_selector(spec, path)
    errs += sel_errs
    if usable:
        errs += validate_template_for_replica_set(spec.get("template"), spec.get("selector"), f"{path}.template", ctx,
                                                  "ReplicaSet")
    elif spec.get("selector") is not None:
        errs.append(invalid(f"{path}.selector", spec.get("selector"), "invalid label selector"))
    return errs


class ReplicaSetStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Desired", "integer", "", "Replicas is the number of desired replicas."),
        Column("Current", "integer", "", "Replicas is the most recently observed number of replicas."),
        Column("Ready", "integer", "", "The number of ready replicas for this replica set."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", "", "Selector is a label query over pods that should match the replica "
                                         "count.", 1),
    ]
    status_is_subresource = True
    field_selectors = {"status.replicas": lambda o: str(_int(_dict(o.get("status")).get("replicas")))}

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        default_pod_template(spec.get("template"), ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"replicas": 0}
        drop_disabled_pod_spec_fields(_template_spec(obj), None, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_replica_set_spec(_dict(obj.get("spec")), "spec", ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        nsel, osel = _dict(new.get("spec")).get("selector"), _dict(old.get("spec")).get("selector")
        if nsel != osel:
            errs.append(invalid("spec.selector", nsel, IMMUTABLE_MSG))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _validate_replica_counts(_dict(new.get("status")), ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                                                   "availableReplicas", "observedGeneration"))

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        names, images = layout_container_cells(_list(_dict(_dict(spec.get("template")).get("spec")).get("containers")))
        return [_dict(obj.get("metadata")).get("name", ""), _int(spec.get("replicas")), _int(status.get("replicas")),
                _int(status.get("readyReplicas")), creation_age(obj, ctx), names, images,
                format_label_selector(spec.get("selector"))]


DEPLOYMENT_STRATEGY = DeploymentStrategy()
REPLICASET_STRATEGY = ReplicaSetStrategy()

register(ResourceType("apps", "v1", "Deployment", "deployments", True, DEPLOYMENT_STRATEGY, short_names=["deploy"],
                      categories=["all"], subresources=["status", "scale"]))
register(ResourceType("apps", "v1", "ReplicaSet", "replicasets", True, REPLICASET_STRATEGY, short_names=["rs"],
                      categories=["all"], subresources=["status", "scale"]))


# -- DaemonSet --------------------------------------------------------------------------------
# Rules from upstream `pkg/apis/apps/v1/defaults.go` (SetDefaults_DaemonSet), `ValidateDaemonSet*`
# and `pkg/registry/apps/daemonset/strategy.go`. ControllerRevision is in `statefulsets.py`.

DAEMONSET_UPDATE_STRATEGIES = ("OnDelete", "RollingUpdate")


def _validate_daemonset_update_strategy(strategy: Any, path: str) -> list[FieldError]:
    strategy = _dict(strategy)
    stype = strategy.get("type")
    if stype not in DAEMONSET_UPDATE_STRATEGIES:
        return [not_supported(f"{path}.type", stype, DAEMONSET_UPDATE_STRATEGIES)]
    if stype != "RollingUpdate":
        return []
    ru = strategy.get("rollingUpdate")
    if ru is None:
        return [required(f"{path}.rollingUpdate")]
    ru, rp = _dict(ru), f"{path}.rollingUpdate"
    mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
    errs = validate_positive_int_or_percent(mu, f"{rp}.maxUnavailable") + is_not_more_than_100_percent(
        mu, f"{rp}.maxUnavailable")
    if ms is not None:
        errs += validate_positive_int_or_percent(ms, f"{rp}.maxSurge") + is_not_more_than_100_percent(
            ms, f"{rp}.maxSurge")
    if int_or_percent_value(mu) == 0 and int_or_percent_value(ms) == 0:
        errs.append(invalid(f"{rp}.maxUnavailable", mu, "may not be 0 when `maxSurge` is 0"))
    return errs


def validate_daemonset_spec(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    sel_errs, usable = _validate_selector(spec, path)
    errs = [e for e in sel_errs if "deployment" not in e.detail]
    sel = spec.get("selector")
    if isinstance(sel, dict) and not _dict(sel.get("matchLabels")) and not _list(sel.get("matchExpressions")):
        errs.append(invalid(f"{path}.selector", sel, "empty selector is invalid for daemonset"))
    if usable:
        errs += validate_template_for_replica_set(spec.get("template"), sel, f"{path}.template", ctx, "DaemonSet")
    errs += validate_nonnegative(spec.get("minReadySeconds", 0), f"{path}.minReadySeconds")
    if spec.get("revisionHistoryLimit") is not None:
        errs += validate_nonnegative(spec["revisionHistoryLimit"], f"{path}.revisionHistoryLimit")
    errs += _validate_daemonset_update_strategy(spec.get("updateStrategy"), f"{path}.updateStrategy")
    return errs


class DaemonSetStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Desired", "integer", "", "The total number of nodes that should be running the daemon pod."),
        Column("Current", "integer", "", "The number of nodes that are running at least 1 daemon pod and are "
                                         "supposed to run the daemon pod."),
        Column("Ready", "integer", "", "The number of nodes that should be running the daemon pod and have one or "
                                       "more of the daemon pod running and ready."),
        Column("Up-to-date", "integer", "", "The total number of nodes that are running updated daemon pod"),
        Column("Available", "integer", "", "The number of nodes that should be running the daemon pod and have one "
                                           "or more of the daemon pod running and available."),
        Column("Node Selector", "string", "", "NodeSelector is a selector which must be true for the pod to fit on "
                                              "a node."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", "", "A label query over pods that are managed by the daemon set.", 1),
    ]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        strategy = spec.get("updateStrategy")
        if not isinstance(strategy, dict):
            strategy = spec["updateStrategy"] = {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if not isinstance(ru, dict):
                ru = strategy["rollingUpdate"] = {}
            ru.setdefault("maxUnavailable", 1)
            ru.setdefault("maxSurge", 0)
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = 10
        default_pod_template(spec.get("template"), ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                         "numberReady": 0}
        drop_disabled_pod_spec_fields(_template_spec(obj), None, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_daemonset_spec(_dict(obj.get("spec")), "spec", ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        nsel, osel = _dict(new.get("spec")).get("selector"), _dict(old.get("spec")).get("selector")
        if nsel != osel:
            errs.append(invalid("spec.selector", nsel, IMMUTABLE_MSG))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        st = _dict(new.get("status"))
        errs: list[FieldError] = []
        for f in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                  "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
            errs += validate_nonnegative(st.get(f, 0), f"status.{f}")
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        tspec = _dict(_dict(spec.get("template")).get("spec"))
        names, images = layout_container_cells(_list(tspec.get("containers")))
        node_selector = ",".join(f"{k}={v}" for k, v in sorted(_dict(tspec.get("nodeSelector")).items())) or "<none>"
        return [_dict(obj.get("metadata")).get("name", ""), _int(status.get("desiredNumberScheduled")),
                _int(status.get("currentNumberScheduled")), _int(status.get("numberReady")),
                _int(status.get("updatedNumberScheduled")), _int(status.get("numberAvailable")), node_selector,
                creation_age(obj, ctx), names, images, format_label_selector(spec.get("selector"))]


DAEMONSET_STRATEGY = DaemonSetStrategy()

register(ResourceType("apps", "v1", "DaemonSet", "daemonsets", True, DAEMONSET_STRATEGY, short_names=["ds"],
                      categories=["all"], subresources=["status"]))

from .statefulsets import register_kinds as register_statefulset_kinds  # noqa: E402  (it imports this module)

register_statefulset_kinds()
