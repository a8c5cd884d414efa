"""batch/v1 Job: defaults, generated selector, validation, update rules and `kubectl get jobs` cells.

Upstream sources of the rules: `pkg/apis/batch/v1/defaults.go` (`SetDefaults_Job`),
`pkg/registry/batch/job/strategy.go` (selector generation, status handling) and
`pkg/apis/batch/validation` (`ValidateJob`, `ValidateJobUpdate`). The pod template is defaulted and
validated by `phalanx.api.podspec`. Registered at import as `jobs` (category `all`, `/status`).

On Kubernetes 1.37 with `WorkloadWithJob`, `spec.scheduling` is served and validated by
`phalanx.api.batchscheduling` (1.36 Jobs never reach it).

The Job controller itself is elsewhere (`phalanx.controllers.job`); helpers it may share with this
module: `job_condition_true`, `job_status_cell`.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, invalid, not_supported, required, too_long
from ..machinery.names import dns1123_label_errors, qualified_name_errors
from . import batchscheduling, podspec
from .common import _dict, _list, creation_age, to_json
from ..machinery.timestamps import parse_rfc3339
from .fieldchecks import IMMUTABLE_MSG, validate_nonnegative
from .labelselectors import format_label_selector, label_selector_matches, validate_label_selector
from .poddefaults import default_pod_template, drop_disabled_pod_spec_fields
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, human_duration, register

Obj = dict[str, Any]

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
MAX_INT32 = 2**31 - 1
MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_MANAGED_BY_LENGTH = 63
POD_FAILURE_POLICY_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
POD_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
COMPLETION_MODES = ("NonIndexed", "Indexed")


def job_condition_true(job: Obj, ctype: str) -> bool:
    for c in _list(_dict(job.get("status")).get("conditions")):
        if _dict(c).get("type") == ctype:
            return c.get("status") == "True"
    return False


def job_status_cell(job: Obj) -> str:
    """The STATUS column of `kubectl get jobs` (printJob)."""
    if job_condition_true(job, "Complete"):
        return "Complete"
    if job_condition_true(job, "Failed"):
        return "Failed"
    if _dict(job.get("metadata")).get("deletionTimestamp"):
        return "Terminating"
    if job_condition_true(job, "Suspended"):
        return "Suspended"
    if job_condition_true(job, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def layout_container_cells(containers: list) -> tuple[str, str]:
    names = ",".join(_dict(c).get("name", "") for c in containers)
    images = ",".join(_dict(c).get("image", "") for c in containers)
    return names, images


def generate_selector(job: Obj) -> None:
    """The strategy's `generateSelector`: pod template labels naming the Job and its UID, and a
    selector on `batch.kubernetes.io/controller-uid`. Labels the user already set are kept (a
    conflicting value is then rejected by validation)."""
    md = _dict(job.get("metadata"))
    spec = job.setdefault("spec", {})
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    tmd = template.get("metadata")
    if not isinstance(tmd, dict):
        tmd = template["metadata"] = {}
    labels = tmd.get("labels")
    if not isinstance(labels, dict):
        labels = tmd["labels"] = {}
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, md.get("name", ""))
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, md.get("uid", ""))
    sel = spec.get("selector")
    if not isinstance(sel, dict):
        sel = spec["selector"] = {}
    ml = sel.get("matchLabels")
    if not isinstance(ml, dict):
        ml = sel["matchLabels"] = {}
    ml.setdefault(CONTROLLER_UID_LABEL, md.get("uid", ""))


def _has_label(meta: Obj, path: str, key: str, expected: str) -> list[FieldError]:
    labels = _dict(meta.get("labels"))
    if key not in labels:
        return [required(f"{path}.labels[{key}]", f"must be '{expected}'")]
    if labels[key] != expected:
        return [invalid(f"{path}.labels[{key}]", labels, f"must be '{expected}'")]
    return []


def validate_generated_selector(job: Obj, require_prefixed_labels: bool = True) -> list[FieldError]:
    spec = _dict(job.get("spec"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    md = _dict(job.get("metadata"))
    uid, name = md.get("uid", ""), md.get("name", "")
    errs: list[FieldError] = []
    if not uid:
        errs.append(required("metadata.uid"))
    tmd = _dict(_dict(spec.get("template")).get("metadata"))
    path = "spec.template.metadata"
    errs += _has_label(tmd, path, LEGACY_CONTROLLER_UID_LABEL, uid)
    errs += _has_label(tmd, path, LEGACY_JOB_NAME_LABEL, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed_labels:
        errs += _has_label(tmd, path, CONTROLLER_UID_LABEL, uid)
        errs += _has_label(tmd, path, JOB_NAME_LABEL, name)
        expected.update({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name})
    sel = spec.get("selector")
    if not validate_label_selector(sel, "spec.selector") and not label_selector_matches(sel, expected):
        errs.append(invalid("spec.selector", sel, "`selector` not auto-generated"))
    return errs


def _validate_pod_failure_policy(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    pfp = _dict(spec.get("podFailurePolicy"))
    rules = _list(pfp.get("rules"))
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(FieldError("FieldValueTooMany", f"{path}.rules", len(rules),
                               f"must have at most {MAX_POD_FAILURE_POLICY_RULES} items"))
    tspec = _dict(_dict(spec.get("template")).get("spec"))
    names = {_dict(c).get("name") for c in _list(tspec.get("containers")) + _list(tspec.get("initContainers"))}
    for i, rule in enumerate(rules):
        errs += _pod_failure_rule_errors(_dict(rule), f"{path}.rules[{i}]", spec, names)
    return errs


def _pod_failure_rule_errors(rule: Obj, rp: str, spec: Obj, names: set) -> list[FieldError]:
    errs = _pod_failure_action_errors(rule.get("action") or "", f"{rp}.action", spec)
    oec = rule.get("onExitCodes")
    opc = _list(rule.get("onPodConditions"))
    if isinstance(oec, dict):
        errs += _on_exit_codes_errors(oec, f"{rp}.onExitCodes", names)
    for j, pat in enumerate(opc):
        pat = _dict(pat)
        ctype = pat.get("type") or ""
        errs += [invalid(f"{rp}.onPodConditions[{j}].type", ctype, m) for m in qualified_name_errors(ctype)]
        st = pat.get("status") or ""
        if st not in ("False", "True", "Unknown"):
            errs.append(not_supported(f"{rp}.onPodConditions[{j}].status", st, ("False", "True", "Unknown")))
    if isinstance(oec, dict) and opc:
        errs.append(FieldError("FieldValueInvalid", rp, None,
                               "specifying both OnExitCodes and OnPodConditions is not supported", has_value=False))
    if not isinstance(oec, dict) and not opc:
        errs.append(FieldError("FieldValueInvalid", rp, None,
                               "specifying one of OnExitCodes and OnPodConditions is required", has_value=False))
    return errs


def _pod_failure_action_errors(action: str, path: str, spec: Obj) -> list[FieldError]:
    if not action:
        valid = to_json(sorted(POD_FAILURE_POLICY_ACTIONS)).replace(",", " ")
        return [required(path, f"valid values: {valid}")]
    if action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            return [invalid(path, action, "requires the backoffLimitPerIndex to be set")]
        return []
    if action not in POD_FAILURE_POLICY_ACTIONS:
        return [not_supported(path, action, POD_FAILURE_POLICY_ACTIONS)]
    return []


def _on_exit_codes_errors(oec: Obj, path: str, names: set) -> list[FieldError]:
    errs: list[FieldError] = []
    op = oec.get("operator") or ""
    if not op:
        errs.append(required(f"{path}.operator", 'valid values: ["In" "NotIn"]'))
    elif op not in ("In", "NotIn"):
        errs.append(not_supported(f"{path}.operator", op, ("In", "NotIn")))
    cn = oec.get("containerName")
    if cn is not None and cn not in names:
        errs.append(invalid(f"{path}.containerName", cn,
                            "must be one of the container or initContainer names in the pod template"))
    values = _list(oec.get("values"))
    if not values:
        errs.append(invalid(f"{path}.values", values, "at least one value is required"))
    seen: set[int] = set()
    for j, v in enumerate(values):
        if op == "In" and v == 0:
            errs.append(invalid(f"{path}.values[{j}]", v, "must not be 0 for the In operator"))
        if v in seen:
            errs.append(FieldError("FieldValueDuplicate", f"{path}.values[{j}]", v))
        seen.add(v)
    if values != sorted(values):
        errs.append(invalid(f"{path}.values", values, "must be ordered"))
    return errs


def _validate_job_spec(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    """Upstream `validateJobSpec` (everything but the selector)."""
    errs = _job_count_errors(spec, path)
    errs += _managed_by_errors(spec.get("managedBy"), f"{path}.managedBy")
    errs += _completion_mode_errors(spec, path)
    if spec.get("podFailurePolicy") is not None:
        errs += _validate_pod_failure_policy(spec, f"{path}.podFailurePolicy")
    if spec.get("successPolicy") is not None:
        errs += _success_policy_errors(spec, f"{path}.successPolicy")
    if spec.get("podReplacementPolicy") is not None:
        errs += _pod_replacement_policy_errors(spec, f"{path}.podReplacementPolicy")
    errs += podspec.validate_pod_template(spec.get("template"), f"{path}.template", ctx)
    errs += _job_restart_policy_errors(spec, f"{path}.template.spec.restartPolicy")
    return errs


def _job_count_errors(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
              "backoffLimitPerIndex"):
        if spec.get(f) is not None:
            errs += validate_nonnegative(spec[f], f"{path}.{f}")
    if spec.get("maxFailedIndexes") is not None:
        errs += validate_nonnegative(spec["maxFailedIndexes"], f"{path}.maxFailedIndexes")
        if spec.get("backoffLimitPerIndex") is None:
            errs.append(required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    return errs


def _managed_by_errors(mb: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if mb is not None:
        if "/" not in str(mb):
            errs.append(invalid(path, mb, "must be a domain-prefixed path (such as \"acme.io/foo\")"))
        if len(str(mb)) > MAX_MANAGED_BY_LENGTH:
            errs.append(too_long(path, MAX_MANAGED_BY_LENGTH))
    return errs


def _completion_mode_errors(spec: Obj, path: str) -> list[FieldError]:
    """completionMode and what it allows: the Indexed limits, and no per-index backoff otherwise."""
    errs: list[FieldError] = []
    mode = spec.get("completionMode")
    mfi, blpi = spec.get("maxFailedIndexes"), spec.get("backoffLimitPerIndex")
    if mode is not None and mode not in COMPLETION_MODES:
        errs.append(not_supported(f"{path}.completionMode", mode, COMPLETION_MODES))
    if mode == "Indexed":
        errs += _indexed_job_errors(spec, path)
    if mode in (None, "NonIndexed"):
        if blpi is not None:
            errs.append(invalid(f"{path}.backoffLimitPerIndex", blpi, "requires indexed completion mode"))
        if mfi is not None:
            errs.append(invalid(f"{path}.maxFailedIndexes", mfi, "requires indexed completion mode"))
    return errs


def _indexed_job_errors(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    mfi, blpi = spec.get("maxFailedIndexes"), spec.get("backoffLimitPerIndex")
    if completions is None:
        errs.append(required(f"{path}.completions", "when completion mode is Indexed"))
    if parallelism is not None and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
        errs.append(invalid(f"{path}.parallelism", parallelism,
                            f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion "
                            "mode is Indexed"))
    if completions is not None and mfi is not None and mfi > completions:
        errs.append(invalid(f"{path}.maxFailedIndexes", mfi, "must be less than or equal to completions"))
    if mfi is not None and mfi > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
        errs.append(invalid(f"{path}.maxFailedIndexes", mfi,
                            f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"))
    if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and blpi is not None:
        if mfi is None:
            errs.append(required(f"{path}.maxFailedIndexes",
                                 f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"))
        if parallelism is not None and parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
            errs.append(invalid(f"{path}.parallelism", parallelism,
                                f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} when "
                                f"completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit "
                                "per index"))
    return errs


def _success_policy_errors(spec: Obj, path: str) -> list[FieldError]:
    if spec.get("completionMode") != "Indexed":
        return [invalid(path, spec["successPolicy"], "requires indexed completion mode")]
    if not _list(_dict(spec["successPolicy"]).get("rules")):
        return [required(f"{path}.rules", "at least one rules must be specified when the successPolicy is specified")]
    return []


def _pod_replacement_policy_errors(spec: Obj, path: str) -> list[FieldError]:
    prp = spec["podReplacementPolicy"]
    if spec.get("podFailurePolicy") is not None:
        return [not_supported(path, prp, ("Failed",))] if prp != "Failed" else []
    if prp not in POD_REPLACEMENT_POLICIES:
        return [not_supported(path, prp, POD_REPLACEMENT_POLICIES)]
    return []


def _job_restart_policy_errors(spec: Obj, rpath: str) -> list[FieldError]:
    rp = _dict(_dict(spec.get("template")).get("spec")).get("restartPolicy") or ""
    if rp in ("Always", ""):
        return [required(rpath, 'valid values: "OnFailure", "Never"')]
    if rp not in ("OnFailure", "Never"):
        return [not_supported(rpath, rp, ("OnFailure", "Never"))]
    if spec.get("podFailurePolicy") is not None and rp != "Never":
        return [invalid(rpath, rp, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def validate_job_spec(spec: Obj, path: str, ctx: Any) -> list[FieldError]:
    """Upstream `ValidateJobSpec`: the spec rules plus a required selector matching the template."""
    errs = _validate_job_spec(spec, path, ctx)
    sel = spec.get("selector")
    if sel is None:
        errs.append(required(f"{path}.selector"))
    else:
        errs += validate_label_selector(sel, f"{path}.selector")
    if sel is not None and not validate_label_selector(sel, f"{path}.selector"):
        tlabels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
        if not label_selector_matches(sel, tlabels):
            errs.append(invalid(f"{path}.template.metadata.labels", tlabels,
                                "`selector` does not match template `labels`"))
    return errs


def _immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    return [] if new == old else [invalid(path, new, IMMUTABLE_MSG)]


class JobStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Status", "string", "", "Status of the job."),
        Column("Completions", "string", "", "The number of pods which reached phase Succeeded."),
        Column("Duration", "string", "", "Time required to complete the job."),
        AGE_COLUMN,
        Column("Containers", "string", "", "Names of each container in the template.", 1),
        Column("Images", "string", "", "Images referenced by each container in the template.", 1),
        Column("Selector", "string", "", "A label query over pods that should match the pod count.", 1),
    ]
    status_is_subresource = True
    field_selectors = {"status.successful": lambda o: str(int(_dict(o.get("status")).get("succeeded") or 0))}

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
            spec["parallelism"] = 1
        if spec.get("parallelism") is None:
            spec["parallelism"] = 1
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
        tlabels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
        md = obj.setdefault("metadata", {})
        if isinstance(tlabels, dict) and not md.get("labels"):
            md["labels"] = dict(tlabels)
        if spec.get("completionMode") is None:
            spec["completionMode"] = "NonIndexed"
        if spec.get("suspend") is None:
            spec["suspend"] = False
        for rule in _list(_dict(spec.get("podFailurePolicy")).get("rules")):
            for pat in _list(_dict(rule).get("onPodConditions")):
                if isinstance(pat, dict) and not pat.get("status"):
                    pat["status"] = "True"
        if spec.get("podReplacementPolicy") is None:
            has_pfp = spec.get("podFailurePolicy") is not None
            spec["podReplacementPolicy"] = "Failed" if has_pfp else "TerminatingOrFailed"
        if spec.get("manualSelector") is None:
            spec["manualSelector"] = False
        default_pod_template(spec.get("template"), ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not spec.get("manualSelector"):
            generate_selector(obj)
        # Upstream's SetDefaults_Job runs again on the stored object, after the selector labels were
        # added to the template: a Job without labels of its own shows its template's labels.
        md = obj.setdefault("metadata", {})
        tmpl_labels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
        if not md.get("labels") and tmpl_labels:
            md["labels"] = dict(tmpl_labels)
        obj["status"] = {}
        drop_disabled_pod_spec_fields(_dict(_dict(spec.get("template")).get("spec")), None, ctx)
        batchscheduling.drop_disabled(spec, None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_update(new, old, ctx)
        drop_disabled_pod_spec_fields(_dict(_dict(_dict(new.get("spec")).get("template")).get("spec")),
                                              _dict(_dict(_dict(old.get("spec")).get("template")).get("spec")), ctx)
        batchscheduling.drop_disabled(new.get("spec"), old.get("spec"), ctx)

    def _validate(self, obj: Obj, ctx: StrategyContext, require_prefixed: bool) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = validate_generated_selector(obj, require_prefixed)
        errs += validate_job_spec(spec, "spec", ctx)
        if batchscheduling.served(ctx):
            errs += batchscheduling.validate(spec)
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
            name = _dict(obj.get("metadata")).get("name", "")
            host = f"{name}-{completions - 1}"
            if dns1123_label_errors(host):
                errs.append(invalid("metadata.name", name,
                                    f"will not able to create pod with invalid DNS label: {host}"))
        return errs

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate(obj, ctx, True)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        olabels = _dict(_dict(_dict(_dict(old.get("spec")).get("template")).get("metadata")).get("labels"))
        require_prefixed = JOB_NAME_LABEL in olabels and CONTROLLER_UID_LABEL in olabels
        errs = self._validate(new, ctx, require_prefixed)
        ns, os_ = _dict(new.get("spec")), _dict(old.get("spec"))
        errs += validate_job_spec(ns, "spec", ctx)
        # completions: immutable, except for Indexed Jobs changing it together with parallelism.
        if ns.get("completions") != os_.get("completions"):
            if ns.get("completionMode") != "Indexed":
                errs += _immutable(ns.get("completions"), os_.get("completions"), "spec.completions")
            elif ns.get("completions") is not None and ns.get("completions") != ns.get("parallelism"):
                errs.append(invalid("spec.completions", ns.get("completions"),
                                    "can only be modified in tandem with spec.parallelism"))
        errs += _immutable(ns.get("selector"), os_.get("selector"), "spec.selector")
        template, old_template = ns.get("template"), os_.get("template")
        suspended_never_started = os_.get("suspend") is True and not _dict(old.get("status")).get("startTime")
        if suspended_never_started and isinstance(template, dict) and isinstance(old_template, dict):
            old_template = _mutable_scheduling_directives(template, old_template)
        errs += _immutable(template, old_template, "spec.template")
        for f in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
            errs += _immutable(ns.get(f), os_.get(f), f"spec.{f}")
        if batchscheduling.served(ctx):
            errs += batchscheduling.validate_update(ns, os_)
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        st = _dict(new.get("status"))
        errs: list[FieldError] = []
        for f in ("active", "succeeded", "failed", "ready", "terminating"):
            if st.get(f) is not None:
                errs += validate_nonnegative(st[f], f"status.{f}")
        ost = _dict(old.get("status"))
        for ctype in ("Failed", "Complete", "FailureTarget"):
            if job_condition_true(old, ctype) and not job_condition_true(new, ctype):
                errs.append(FieldError("FieldValueInvalid", "status.conditions", None,
                                       f"cannot disable the terminal {ctype}=True condition", has_value=False))
        if job_condition_true(new, "Complete") and job_condition_true(new, "Failed"):
            errs.append(FieldError("FieldValueInvalid", "status.conditions", None,
                                   "cannot set Complete=True and Failed=true conditions", has_value=False))
        if ost.get("completionTime") and st.get("completionTime") and st["completionTime"] != ost["completionTime"]:
            errs.append(invalid("status.completionTime", st["completionTime"], "completionTime cannot be mutated"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        succeeded = int(status.get("succeeded") or 0)
        if spec.get("completions") is not None:
            completions = f"{succeeded}/{spec['completions']}"
        else:
            par = spec.get("parallelism") or 0
            completions = f"{succeeded}/1 of {par}" if par > 1 else f"{succeeded}/1"
        start, end = parse_rfc3339(status.get("startTime")), parse_rfc3339(status.get("completionTime"))
        if start is None:
            duration = ""
        elif end is None:
            duration = human_duration((ctx.now() - start).total_seconds())
        else:
            duration = human_duration((end - start).total_seconds())
        names, images = layout_container_cells(_list(_dict(_dict(spec.get("template")).get("spec")).get("containers")))
        return [_dict(obj.get("metadata")).get("name", ""), job_status_cell(obj), completions, duration,
                creation_age(obj, ctx), names, images, format_label_selector(spec.get("selector"))]


def _mutable_scheduling_directives(template: Obj, old_template: Obj) -> Obj:
    """For a suspended Job that never started: node affinity, node selector, tolerations, labels,
    annotations and scheduling gates of the template may change (upstream
    `AllowMutableSchedulingDirectives`). Returns the old template with those taken from the new."""
    import copy
    old = copy.deepcopy(old_template)
    ospec, nspec = old.setdefault("spec", {}), _dict(template.get("spec"))
    naff, oaff = nspec.get("affinity"), ospec.get("affinity")
    if naff is None and isinstance(oaff, dict):
        oaff.pop("nodeAffinity", None)
        if not oaff:
            ospec.pop("affinity", None)
    elif isinstance(naff, dict) and oaff is None:
        ospec["affinity"] = {"nodeAffinity": naff["nodeAffinity"]} if "nodeAffinity" in naff else {}
    elif isinstance(naff, dict) and isinstance(oaff, dict):
        if "nodeAffinity" in naff:
            oaff["nodeAffinity"] = naff["nodeAffinity"]
        else:
            oaff.pop("nodeAffinity", None)
    for f in ("nodeSelector", "tolerations", "schedulingGates"):
        if f in nspec:
            ospec[f] = nspec[f]
        else:
            ospec.pop(f, None)
    omd, nmd = old.setdefault("metadata", {}), _dict(template.get("metadata"))
    for f in ("annotations", "labels"):
        if f in nmd:
            omd[f] = nmd[f]
        else:
            omd.pop(f, None)
    return old


JOB_STRATEGY = JobStrategy()

register(ResourceType("batch", "v1", "Job", "jobs", True, JOB_STRATEGY, categories=["all"], subresources=["status"]))
batchscheduling.register_schemas()


# -- CronJob ---------------------------------------------------------------------------------------
# Rules from upstream `SetDefaults_CronJob`, `ValidateCronJob*` and `pkg/registry/batch/cronjob`.

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
CRONJOB_MAX_NAME_LENGTH = 52
CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def _validate_schedule(spec: Obj, path: str, creating: bool) -> list[FieldError]:
    from ..machinery import cronschedule
    schedule = spec.get("schedule")
    if not schedule:
        return [required(f"{path}.schedule", "")]
    errs: list[FieldError] = []
    try:
        cronschedule.check(str(schedule))
    except cronschedule.ScheduleError as e:
        errs.append(invalid(f"{path}.schedule", schedule, str(e)))
    tz = spec.get("timeZone")
    if cronschedule.has_tz_prefix(str(schedule)):
        if tz is not None:
            errs.append(invalid(f"{path}.schedule", schedule,
                                "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
        elif creating:
            errs.append(invalid(f"{path}.schedule", schedule,
                                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    if tz is not None:
        try:
            if not tz:
                raise cronschedule.ScheduleError("")
            cronschedule.load_zone(str(tz))
        except cronschedule.ScheduleError:
            errs.append(invalid(f"{path}.timeZone", tz, "unknown time zone " + str(tz)))
    return errs


def validate_cronjob(obj: Obj, ctx: Any, creating: bool) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    name = _dict(obj.get("metadata")).get("name", "")
    errs: list[FieldError] = []
    if len(name) > CRONJOB_MAX_NAME_LENGTH:
        errs.append(invalid("metadata.name", name, f"must be no more than {CRONJOB_MAX_NAME_LENGTH} characters"))
    errs += _validate_schedule(spec, "spec", creating)
    cp = spec.get("concurrencyPolicy")
    if cp not in CONCURRENCY_POLICIES:
        errs.append(not_supported("spec.concurrencyPolicy", cp, CONCURRENCY_POLICIES))
    for f in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        if spec.get(f) is not None:
            errs += validate_nonnegative(spec[f], f"spec.{f}")
    jt = _dict(spec.get("jobTemplate"))
    jspec = jt.get("spec")
    if not isinstance(jspec, dict):
        errs.append(required("spec.jobTemplate.spec", ""))
    else:
        errs += _validate_job_spec(jspec, "spec.jobTemplate.spec", ctx)
    return errs


class CronJobStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Schedule", "string", "", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
        Column("Timezone", "string", "", "The time zone name for the given schedule."),
        Column("Suspend", "boolean", "", "This flag tells the controller to suspend subsequent executions."),
        Column("Active", "integer", "", "A list of pointers to currently running jobs."),
        Column("Last Schedule", "string", "", "Information when was the last time the job was successfully "
                                              "scheduled."),
        AGE_COLUMN,
        Column("Containers", "string", "", "Names of each container in the template.", 1),
        Column("Images", "string", "", "Images referenced by each container in the template.", 1),
        Column("Selector", "string", "", "A label query over pods that should match the pod count.", 1),
    ]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("concurrencyPolicy", "Allow")
        if spec.get("suspend") is None:
            spec["suspend"] = False
        if spec.get("successfulJobsHistoryLimit") is None:
            spec["successfulJobsHistoryLimit"] = 3
        if spec.get("failedJobsHistoryLimit") is None:
            spec["failedJobsHistoryLimit"] = 1
        jspec = _dict(spec.get("jobTemplate")).get("spec")
        if isinstance(jspec, dict):
            JOB_STRATEGY.default({"metadata": {"labels": {"_": ""}}, "spec": jspec}, ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        jspec = _dict(_dict(_dict(obj.get("spec")).get("jobTemplate")).get("spec"))
        drop_disabled_pod_spec_fields(_dict(_dict(jspec.get("template")).get("spec")), None, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_cronjob(obj, ctx, creating=True)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_cronjob(new, ctx, creating=False)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        jspec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
        names, images = layout_container_cells(_list(_dict(_dict(jspec.get("template")).get("spec")).get("containers")))
        last = status.get("lastScheduleTime")
        last_cell = "<none>"
        if last and parse_rfc3339(last) is not None:
            last_cell = human_duration((ctx.now() - parse_rfc3339(last)).total_seconds())  # type: ignore[operator]
        return [_dict(obj.get("metadata")).get("name", ""), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
                bool(spec.get("suspend")), len(_list(status.get("active"))), last_cell, creation_age(obj, ctx),
                names, images, format_label_selector(jspec.get("selector"))]


CRONJOB_STRATEGY = CronJobStrategy()

register(ResourceType("batch", "v1", "CronJob", "cronjobs", True, CRONJOB_STRATEGY, short_names=["cj"],
                      categories=["all"], subresources=["status"]))
