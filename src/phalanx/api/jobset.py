"""jobset.x-k8s.io/v1alpha2 JobSet: what the JobSet CRD and its webhooks do, built in.

Upstream JobSet is a CustomResourceDefinition plus a mutating and a validating webhook
(kubernetes-sigs/jobset `pkg/webhooks/jobset_webhook.go`). phalanx serves it natively and keeps
the three layers, each with its upstream error shape:

- `default`: the CRD's structural defaults (`replicas: 1`, `groupName: default`,
  `failurePolicy.restartStrategy: Recreate`) and the mutating webhook's (`successPolicy
  {operator: All}`, `startupPolicy {startupPolicyOrder: AnyOrder}`, Job `completionMode: Indexed`,
  pod `restartPolicy: OnFailure`, `network.enableDNSHostnames` / `publishNotReadyAddresses` true,
  failure-policy rule names `failurePolicyRule<i>`, volume retention `Delete`);
- `validate` / `validate_update`: the CRD schema and its CEL rules (required fields, enums,
  `Value is immutable`), reported as 422 Invalid like any CRD;
- `admit`: the validating webhook `vjobset.kb.io` (name lengths so generated Job and pod names
  fit, targets that exist, failure-policy rules, coordinator, immutable replicatedJobs), reported
  as upstream's apiserver reports a webhook denial: 403 Forbidden,
  `admission webhook "vjobset.kb.io" denied the request: ...`.

`spec.scheduling` (workload-aware scheduling, JobSet's gate `JobSetWorkloadAwareSchedulingAPI`,
Kubernetes 1.37) is defaulted and validated in `jobset_scheduling` / `jobset_scheduling_validation`
and joins the same three layers.

Pod templates inside a JobSet are not validated here, as upstream (the CRD schema only checks
their shape; a bad template surfaces when the Job controller creates the Job). Set
`VALIDATE_POD_TEMPLATES = True` to validate them with `phalanx.api.podspec` at admission instead.

The table has the CRD's additionalPrinterColumns: NAME TERMINALSTATE RESTARTS COMPLETED SUSPENDED
AGE (column names as declared; kubectl upper-cases them).
"""

from __future__ import annotations

import re
from typing import Any

from ..machinery import errors
from ..machinery.errors import FieldError, StatusError, go_repr
from ..machinery.meta import dict_at as _dict, items_at as _items, list_at as _list
from ..machinery.names import dns1123_subdomain_errors, label_value_errors
from . import jobset_scheduling, podspec
from .jobset_scheduling_validation import schema_errors as scheduling_schema_errors
from .jobset_scheduling_validation import update_errors as scheduling_update_errors
from .jobset_scheduling_validation import webhook_errors as scheduling_webhook_errors
from .registry import NAME_COLUMN, Column, Obj, ResourceType, Strategy, StrategyContext, age_cell, register

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
WEBHOOK_NAME = "vjobset.kb.io"

JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"

# Whether admission also validates each replicated job's pod template with phalanx.api.podspec.
# Upstream does not (JobSet is a CRD); off by default.
VALIDATE_POD_TEMPLATES = False

MAX_INT32 = 2 ** 31 - 1
MAX_MANAGED_BY_LENGTH = 63
MAX_VOLUME_CLAIM_LENGTH = 63
MAX_DEPENDS_ON = 5
MAX_VOLUME_CLAIM_POLICIES = 50
MIN_RULE_NAME_LENGTH = 1
MAX_RULE_NAME_LENGTH = 128
_RULE_NAME_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")

OPERATORS = ("All", "Any")
STARTUP_ORDERS = ("AnyOrder", "InOrder")
DEPENDS_ON_STATUSES = ("Ready", "Complete")
RESTART_STRATEGIES = ("Recreate", "BlockingRecreate", "InPlaceRestart")
FAILURE_ACTIONS = ("FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob",
                   "RestartJobAndIgnoreMaxRestarts")
RETENTION_POLICIES = ("Delete", "Retain")
VALID_JOB_FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes",
                             "MaxFailedIndexesExceeded", "PodFailurePolicy")

_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_LEN_MSG = "must be no more than 63 characters"
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                f"regex used for validation is '{_DNS1035_FMT}')")
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(f"^{_HTTP_PATH_FMT}$")

GROUP_NAME_TOO_LONG = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
JOB_NAME_TOO_LONG = "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
POD_NAME_TOO_LONG = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
SUBDOMAIN_TOO_LONG = ".spec.network.subdomain is too long, must be less than 63 characters"




def dns1035_label_errors(value: str) -> list[str]:
    msgs = []
    if len(value) > 63:
        msgs.append(_DNS1035_LEN_MSG)
    if not _DNS1035_RE.match(value):
        msgs.append(_DNS1035_MSG)
    return msgs


def job_name(jobset: str, replicated_job: str, job_index: int) -> str:
    """`placement.GenJobName`: `<jobset>-<replicatedJob>-<jobIndex>`."""
    return f"{jobset}-{replicated_job}-{job_index}"


def pod_name(jobset: str, replicated_job: str, job_index: Any, pod_index: Any) -> str:
    """`placement.GenPodName`: `<jobset>-<replicatedJob>-<jobIndex>-<podIndex>` (before the random suffix)."""
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}"


def subdomain(js: Obj) -> str:
    """The headless Service name: `spec.network.subdomain`, or the JobSet name."""
    return _dict(js.get("spec"), "network").get("subdomain") or (js.get("metadata") or {}).get("name", "")


def coordinator_endpoint(js: Obj) -> str:
    c = _dict(js.get("spec"), "coordinator")
    name = (js.get("metadata") or {}).get("name", "")
    return f"{name}-{c.get('replicatedJob', '')}-{c.get('jobIndex', 0)}-{c.get('podIndex', 0)}.{subdomain(js)}"


class _GoValue:
    """A value that field errors print verbatim (a Go `%#v` rendering)."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


def _schema_type(value: Any) -> str:
    """What a CRD CEL error shows as the bad value: the JSON type name."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


# -- CRD schema validation (422) -------------------------------------------------------------------

def _enum(errs: list[FieldError], path: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        errs.append(errors.not_supported(path, value, list(allowed)))


def _required(errs: list[FieldError], obj: dict, path: str, *fields: str) -> None:
    for f in fields:
        if f not in obj or obj[f] is None:
            errs.append(errors.required(f"{path}.{f}", ""))


def validate_schema(js: Obj, old: Obj | None = None) -> list[FieldError]:
    """The JobSet CRD's OpenAPI schema and x-kubernetes-validations rules."""
    spec = js.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    rjobs = _list(spec, "replicatedJobs")
    errs = _replicated_jobs_schema_errors(rjobs)
    errs += _policies_schema_errors(spec)
    ttl = spec.get("ttlSecondsAfterFinished")
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl < 0:
        errs.append(errors.invalid("spec.ttlSecondsAfterFinished", ttl,
                                   "spec.ttlSecondsAfterFinished in body should be greater than or equal to 0"))
    errs += _volume_claim_policies_schema_errors(spec)
    errs += scheduling_schema_errors(spec)
    # spec-level CEL rule
    st = spec.get("startupPolicy")
    if isinstance(st, dict) and st.get("startupPolicyOrder") == "InOrder" and \
            any(isinstance(rj, dict) and "dependsOn" in rj for rj in rjobs):
        errs.append(errors.invalid("spec", "object", "StartupPolicy and DependsOn APIs are mutually exclusive"))
    if old is not None:
        old_spec = old.get("spec")
        errs += _transition_rule_errors(spec, old_spec if isinstance(old_spec, dict) else {})
    return errs


def _replicated_jobs_schema_errors(rjobs: list) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set = set()
    for i, rj in enumerate(rjobs):
        p = f"spec.replicatedJobs[{i}]"
        if not isinstance(rj, dict):
            errs.append(errors.FieldError("FieldValueTypeInvalid", p, rj, "must be of type object"))
            continue
        _required(errs, rj, p, "name", "template")
        name = rj.get("name")
        if name in seen:
            errs.append(errors.duplicate(p, _GoValue(f'map[string]interface {{}}{{"name":{go_repr(name)}}}')))
        seen.add(name)
        errs += _pod_spec_schema_errors(_dict(_dict(_dict(rj.get("template"), "spec"), "template"), "spec"),
                                        f"{p}.template.spec.template.spec")
        deps = _list(rj, "dependsOn")
        if len(deps) > MAX_DEPENDS_ON:
            errs.append(errors.too_many(f"{p}.dependsOn", len(deps), MAX_DEPENDS_ON))
        for j, d in enumerate(_items(rj, "dependsOn")):
            _required(errs, d, f"{p}.dependsOn[{j}]", "name", "status")
            _enum(errs, f"{p}.dependsOn[{j}].status", d.get("status"), DEPENDS_ON_STATUSES)
    return errs


def _pod_spec_schema_errors(pod_spec: Obj, ppath: str) -> list[FieldError]:
    """What the CRD schema requires of a pod spec: containers, and a name on each container."""
    errs: list[FieldError] = []
    if pod_spec.get("containers") is None:
        errs.append(errors.required(f"{ppath}.containers", ""))
    for kind in ("initContainers", "containers"):
        for j, c in enumerate(_items(pod_spec, kind)):
            if not c.get("name") and "name" not in c:
                errs.append(errors.required(f"{ppath}.{kind}[{j}].name", ""))
    return errs


def _policies_schema_errors(spec: Obj) -> list[FieldError]:
    """successPolicy, startupPolicy, failurePolicy and coordinator: required fields and enums."""
    errs: list[FieldError] = []
    sp = spec.get("successPolicy")
    if isinstance(sp, dict):
        _required(errs, sp, "spec.successPolicy", "operator")
        _enum(errs, "spec.successPolicy.operator", sp.get("operator"), OPERATORS)
    st = spec.get("startupPolicy")
    if isinstance(st, dict):
        _required(errs, st, "spec.startupPolicy", "startupPolicyOrder")
        _enum(errs, "spec.startupPolicy.startupPolicyOrder", st.get("startupPolicyOrder"), STARTUP_ORDERS)
    fp = spec.get("failurePolicy")
    if isinstance(fp, dict):
        _enum(errs, "spec.failurePolicy.restartStrategy", fp.get("restartStrategy"), RESTART_STRATEGIES)
        for k, rule in enumerate(_items(fp, "rules")):
            rp = f"spec.failurePolicy.rules[{k}]"
            _required(errs, rule, rp, "name", "action")
            _enum(errs, f"{rp}.action", rule.get("action"), FAILURE_ACTIONS)
    coord = spec.get("coordinator")
    if isinstance(coord, dict):
        _required(errs, coord, "spec.coordinator", "replicatedJob")
    return errs


def _volume_claim_policies_schema_errors(spec: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    vcps = _list(spec, "volumeClaimPolicies")
    if len(vcps) > MAX_VOLUME_CLAIM_POLICIES:
        errs.append(errors.too_many("spec.volumeClaimPolicies", len(vcps), MAX_VOLUME_CLAIM_POLICIES))
    for i, vcp in enumerate(_items(spec, "volumeClaimPolicies")):
        p = f"spec.volumeClaimPolicies[{i}]"
        _enum(errs, f"{p}.retentionPolicy.whenDeleted", _dict(vcp, "retentionPolicy").get("whenDeleted"),
              RETENTION_POLICIES)
        if any(_dict(t, "metadata").get("namespace") for t in _items(vcp, "templates")):
            errs.append(errors.invalid(p, "object", "namespace cannot be set for VolumeClaimPolicies templates"))
    return errs


def _transition_rule_errors(spec: Obj, ospec: Obj) -> list[FieldError]:
    """The transition rules (`self == oldSelf`), evaluated only when both values exist."""
    errs: list[FieldError] = []
    for f in ("network", "successPolicy", "failurePolicy", "startupPolicy", "volumeClaimPolicies"):
        if spec.get(f) is not None and ospec.get(f) is not None and spec[f] != ospec[f]:
            errs.append(errors.invalid(f"spec.{f}", _schema_type(spec[f]), "Value is immutable"))
    old_rjobs = {rj.get("name"): rj for rj in _items(ospec, "replicatedJobs")}
    for i, rj in enumerate(_items(spec, "replicatedJobs")):
        orj = old_rjobs.get(rj.get("name"))
        if orj is not None and rj.get("dependsOn") is not None and orj.get("dependsOn") is not None and \
                rj["dependsOn"] != orj["dependsOn"]:
            errs.append(errors.invalid(f"spec.replicatedJobs[{i}].dependsOn", "array", "Value is immutable"))
    return errs


# -- the validating webhook (403) ------------------------------------------------------------------

def _domain_prefixed_path_errors(path: str, value: str) -> list[FieldError]:
    if not value:
        return [errors.required(path, "")]
    segs = value.split("/", 1)
    if len(segs) != 2 or not segs[0] or not segs[1]:
        return [errors.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [errors.invalid(path, segs[0], m) for m in dns1123_subdomain_errors(segs[0])]
    if not _HTTP_PATH_RE.match(segs[1]):
        errs.append(errors.invalid(path, segs[1], f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    return errs


def _failure_policy_errors(fp: dict, rjob_names: set) -> list[str]:
    out: list[str] = []
    by_name: dict[str, list[int]] = {}
    for idx, rule in enumerate(_items(fp, "rules")):
        name = rule.get("name") or ""
        if not (MIN_RULE_NAME_LENGTH <= len(name) <= MAX_RULE_NAME_LENGTH):
            out.append(f"invalid failure policy rule name of length {len(name)}, the rule name must be at least "
                       f"{MIN_RULE_NAME_LENGTH} characters long and at most {MAX_RULE_NAME_LENGTH} characters long")
        by_name.setdefault(name, []).append(idx)
        if not _RULE_NAME_RE.match(name):
            out.append(f"invalid failure policy rule name '{name}', a failure policy rule name must start with an "
                       f"alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', "
                       f"and must end with an alphanumeric character or '_'")
        for target in _list(rule, "targetReplicatedJobs"):
            if target not in rjob_names:
                out.append(f"invalid replicatedJob name '{target}' in failure policy does not appear in "
                           f".spec.ReplicatedJobs")
        for reason in _list(rule, "onJobFailureReasons"):
            if reason not in VALID_JOB_FAILURE_REASONS:
                out.append(f"invalid job failure reason '{reason}' in failure policy is not a recognized job "
                           f"failure reason")
    for name, indices in by_name.items():
        if len(indices) > 1:
            out.append(f"rule names are not unique, rules with indices [{' '.join(map(str, indices))}] all have "
                       f"the same name '{name}'")
    return out


def _coordinator_error(js: Obj) -> str | None:
    spec = js["spec"]
    c = _dict(spec, "coordinator")
    target = next((rj for rj in _items(spec, "replicatedJobs") if rj.get("name") == c.get("replicatedJob")), None)
    if target is None:
        return f"coordinator replicatedJob {c.get('replicatedJob', '')} does not exist"
    job_index, pod_index = c.get("jobIndex", 0) or 0, c.get("podIndex", 0) or 0
    replicas = target.get("replicas", 1)
    if job_index < 0 or job_index >= replicas:
        return f"coordinator job index {job_index} is invalid for replicatedJob {target.get('name')}"
    job_spec = _dict(target.get("template"), "spec")
    if job_spec.get("completionMode") != "Indexed" or job_spec.get("completions") is None:
        return "job for coordinator pod must be indexed completion mode, and completions number must be set"
    if pod_index < 0 or pod_index >= job_spec["completions"]:
        return (f"coordinator pod index {pod_index} is invalid for replicatedJob {c.get('replicatedJob')} job index "
                f"{job_index}")
    return None


def _volume_claim_policy_errors(js: Obj, ctx: StrategyContext) -> list[str]:
    spec = js["spec"]
    name = js["metadata"].get("name", "")
    ns = js["metadata"].get("namespace", "")
    out: list[str] = []
    claim_names: set = set()
    for pi, policy in enumerate(_items(spec, "volumeClaimPolicies")):
        ppath = f"spec.volumeClaimPolicies[{pi}]"
        for ti, tmpl in enumerate(_items(policy, "templates")):
            tpath = f"{ppath}.template[{ti}]"
            tname = _dict(tmpl, "metadata").get("name") or ""
            if tname in claim_names:
                out.append(errors.invalid(f"{tpath}.name", tname,
                                          "names must be unique for VolumeClaimPolicies template").message())
            out += [errors.invalid(f"{tpath}.name", tname, m).message() for m in dns1123_subdomain_errors(tname)]
            pvc_name = f"{tname}-{name}"
            if len(pvc_name) > MAX_VOLUME_CLAIM_LENGTH:
                out.append(errors.invalid(f"{tpath}.name", tname,
                                          "VolumeClaimPolicies template name is too long").message())
            has_mount = False
            for ri, rj in enumerate(_items(spec, "replicatedJobs")):
                pod_spec = _dict(_dict(_dict(rj.get("template"), "spec"), "template"), "spec")
                for vi, vol in enumerate(_items(pod_spec, "volumes")):
                    if vol.get("name") == tname:
                        out.append(errors.invalid(
                            f"spec.replicatedJobs[{ri}].template.spec.template.spec.volumes[{vi}].name", tname,
                            f"volume name conflicts with VolumeClaimPolicy template name: {tname}").message())
                for c in _items(pod_spec, "initContainers") + _items(pod_spec, "containers"):
                    if any(m.get("name") == tname for m in _items(c, "volumeMounts")):
                        has_mount = True
            if not has_mount:
                out.append(errors.invalid("spec.replicatedJobs", _list(spec, "replicatedJobs"),
                                          f"replicatedJob containers don't have a matching volumeMount: {tname} "
                                          f"from VolumeClaimPolicies").message())
            existing = ctx.lookup("core/persistentvolumeclaims", ns, pvc_name)
            if existing is not None:
                if existing.get("spec") != tmpl.get("spec"):
                    out.append(errors.invalid(f"{tpath}.spec", tmpl.get("spec"),
                                              f"spec does not match existing PVC {pvc_name} in namespace "
                                              f"{ns}").message())
                when = _dict(policy, "retentionPolicy").get("whenDeleted")
                if policy.get("retentionPolicy") is not None and when != "Retain":
                    out.append(errors.invalid(f"{ppath}.retentionPolicy.whenDeleted", when,
                                              "retentionPolicy must be retain when PVC exists").message())
            claim_names.add(tname)
    return out


def webhook_create_errors(js: Obj, ctx: StrategyContext) -> list[str]:
    """`jobSetWebhook.ValidateCreate`, in upstream's order; each entry one line of the denial."""
    spec = js["spec"]
    out: list[str] = []
    fp = spec.get("failurePolicy") if isinstance(spec.get("failurePolicy"), dict) else None
    if fp is not None and fp.get("restartStrategy") == "InPlaceRestart":
        out.append("InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled")
    rjobs = _items(spec, "replicatedJobs")
    if rjobs and rjobs[0].get("dependsOn") is not None:
        out.append("DependsOn can't be set for the first ReplicatedJob")
    out += _subdomain_errors(_dict(spec, "network").get("subdomain") or "")
    if spec.get("managedBy") is not None:
        out += _webhook_managed_by_errors(str(spec["managedBy"]))
    names: set = set()
    for i, rj in enumerate(rjobs):
        names.add(rj.get("name") or "")
        out += _replicated_job_webhook_errors(js["metadata"].get("name", ""), rj, f"spec.replicatedJobs[{i}]",
                                              names)
    for target in _list(_dict(spec, "successPolicy"), "targetReplicatedJobs"):
        if target not in names:
            out.append(f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs")
    if fp is not None:
        out += _failure_policy_errors(fp, names)
    if spec.get("coordinator") is not None:
        out += _coordinator_errors(js)
    if _list(spec, "volumeClaimPolicies"):
        out += _volume_claim_policy_errors(js, ctx)
    out += scheduling_webhook_errors(js, ctx.gates)
    if VALIDATE_POD_TEMPLATES:
        out += _pod_template_errors(js, ctx)
    return out


def _dns1035_messages(path: str, value: str, too_long_msg: str) -> list[str]:
    """DNS-1035 label errors on a name phalanx derives, the length error worded for that name."""
    return [errors.invalid(path, value, too_long_msg if _DNS1035_LEN_MSG in m else m).message()
            for m in dns1035_label_errors(value)]


def _subdomain_errors(sub: str) -> list[str]:
    if not sub:
        return []
    out = [errors.invalid("spec.network.subdomain", sub, m).message() for m in dns1123_subdomain_errors(sub)]
    return out + _dns1035_messages("spec.network.subdomain", sub, SUBDOMAIN_TOO_LONG)


def _webhook_managed_by_errors(manager: str) -> list[str]:
    out = [e.message() for e in _domain_prefixed_path_errors("spec.managedBy", manager)]
    if len(manager) > MAX_MANAGED_BY_LENGTH:
        out.append(FieldError("FieldValueTooLong", "spec.managedBy", manager,
                              f"may not be longer than {MAX_MANAGED_BY_LENGTH}", has_value=False).message())
    return out


def _replicated_job_webhook_errors(name: str, rj: Obj, p: str, names: set) -> list[str]:
    """One replicated job: sizes, the names of the Jobs and pods it makes, its dependencies (on the
    replicated jobs in `names`, those before it and itself)."""
    out: list[str] = []
    rname = rj.get("name") or ""
    job_spec = _dict(rj.get("template"), "spec")
    replicas = rj.get("replicas", 1)
    parallelism = job_spec.get("parallelism", 1)
    if isinstance(parallelism, int) and isinstance(replicas, int) and parallelism * replicas > MAX_INT32:
        out.append(f"the product of replicas and parallelism must not exceed {MAX_INT32} for replicatedJob "
                   f"'{rname}'")
    out += _dns1035_messages(f"{p}.groupName", rj.get("groupName") or "", GROUP_NAME_TOO_LONG)
    longest_job = job_name(name, rname, replicas - 1 if isinstance(replicas, int) else 0)
    out += _dns1035_messages(f"{p}.name", longest_job, JOB_NAME_TOO_LONG)
    if job_spec.get("completionMode") == "Indexed" and isinstance(job_spec.get("completions"), int):
        longest_pod = pod_name(name, rname, replicas - 1, job_spec["completions"] - 1) + "-abcde"
        # upstream reports the longest *job* name as the bad value here
        out += [errors.invalid(f"{p}.name", longest_job, POD_NAME_TOO_LONG if _DNS1035_LEN_MSG in m else m).message()
                for m in dns1035_label_errors(longest_pod)]
    for dep in _items(rj, "dependsOn"):
        if dep.get("name") not in names:
            out.append(f"replicatedJob: {rname} cannot depend on replicatedJob: {dep.get('name')}")
    return out


def _coordinator_errors(js: Obj) -> list[str]:
    out: list[str] = []
    err = _coordinator_error(js)
    if err:
        out.append(err)
    endpoint = coordinator_endpoint(js)
    label_errs = label_value_errors(endpoint)
    if label_errs:
        out.append(f"spec will lead to invalid label value {go_repr(endpoint)} for coordinator label "
                   f"{go_repr(COORDINATOR_KEY)} (long JobSet / ReplicatedJob / SubDomain name?): "
                   f"{', '.join(label_errs)}")
    return out


def _pod_template_errors(js: Obj, ctx: StrategyContext) -> list[str]:
    out: list[str] = []
    for i, rj in enumerate(_items(js["spec"], "replicatedJobs")):
        tmpl = _dict(_dict(rj.get("template"), "spec"), "template")
        path = f"spec.replicatedJobs[{i}].template.spec.template"
        out += [e.message() for e in podspec.validate_pod_template(tmpl, path, ctx)]
    return out


_SUSPEND_MUTABLE_METADATA = ("annotations", "labels")
_SUSPEND_MUTABLE_SPEC = ("nodeSelector", "tolerations", "schedulingGates")


def webhook_update_errors(new: Obj, old: Obj) -> list[FieldError]:
    """`jobSetWebhook.ValidateUpdate`: replicatedJobs and managedBy are immutable (pod scheduling
    directives may change while the JobSet is or becomes suspended)."""
    spec, ospec = new.get("spec") or {}, old.get("spec") or {}
    rjobs = [dict(rj) if isinstance(rj, dict) else rj for rj in _list(spec, "replicatedJobs")]
    old_rjobs = _list(ospec, "replicatedJobs")
    if ospec.get("suspend") is True or spec.get("suspend") is True:
        for i, rj in enumerate(rjobs):
            if i >= len(old_rjobs) or not isinstance(rj, dict):
                continue
            munged = _with_scheduling_fields_from(rj, old_rjobs[i])
            rjobs[i] = munged
    errs: list[FieldError] = []
    if rjobs != old_rjobs:
        errs.append(errors.immutable("spec.replicatedJobs", rjobs))
    if spec.get("managedBy") != ospec.get("managedBy"):
        errs.append(errors.immutable("spec.managedBy", spec.get("managedBy")))
    return errs + scheduling_update_errors(new, old)


def _with_scheduling_fields_from(rj: dict, old_rj: Any) -> dict:
    """A copy of `rj` whose pod template metadata/scheduling fields are the old ones."""
    import copy
    out = copy.deepcopy(rj)
    tmpl = out.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
    old_tmpl = _dict(_dict(_dict(old_rj, "template"), "spec"), "template")
    md = tmpl.setdefault("metadata", {})
    old_md = _dict(old_tmpl, "metadata")
    for f in _SUSPEND_MUTABLE_METADATA:
        md.pop(f, None)
        if f in old_md:
            md[f] = old_md[f]
    pod_spec = tmpl.setdefault("spec", {})
    old_pod_spec = _dict(old_tmpl, "spec")
    for f in _SUSPEND_MUTABLE_SPEC:
        pod_spec.pop(f, None)
        if f in old_pod_spec:
            pod_spec[f] = old_pod_spec[f]
    if not md and "metadata" not in old_tmpl:
        tmpl.pop("metadata", None)
    return out


def webhook_denied(message: str) -> StatusError:
    """How kube-apiserver reports a validating webhook's denial (controller-runtime `Denied`)."""
    return StatusError(403, "Forbidden", f'admission webhook "{WEBHOOK_NAME}" denied the request: {message}')


def _aggregate(errs: list[FieldError]) -> str:
    """`ErrorList.ToAggregate().Error()`: one message, or `[a, b]`."""
    msgs: list[str] = []
    for e in errs:
        if e.message() not in msgs:
            msgs.append(e.message())
    return msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"


class JobSetStrategy(Strategy):
    status_is_subresource = True
    columns = [
        NAME_COLUMN,
        Column("TerminalState", "string", "", "Final state of JobSet"),
        Column("Restarts", "string", "", "Number of restarts"),
        Column("Completed", "string", "", ""),
        Column("Suspended", "string", "", "JobSet suspended"),
        Column("Age", "date", "", "Time this JobSet was created"),
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        # CRD structural defaults
        for rj in _items(spec, "replicatedJobs"):
            rj.setdefault("groupName", "default")
            rj.setdefault("replicas", 1)
        if isinstance(spec.get("failurePolicy"), dict):
            spec["failurePolicy"].setdefault("restartStrategy", "Recreate")
        # the mutating webhook (mjobset.kb.io)
        if spec.get("successPolicy") is None:
            spec["successPolicy"] = {"operator": "All"}
        if spec.get("startupPolicy") is None:
            spec["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
        for rj in _items(spec, "replicatedJobs"):
            job_spec = rj.setdefault("template", {}).setdefault("spec", {})
            if not isinstance(job_spec, dict):
                continue
            if job_spec.get("completionMode") is None:
                job_spec["completionMode"] = "Indexed"
            pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
            if isinstance(pod_spec, dict) and not pod_spec.get("restartPolicy"):
                pod_spec["restartPolicy"] = "OnFailure"
        network = spec.get("network")
        if not isinstance(network, dict):
            network = spec["network"] = {}
        if network.get("enableDNSHostnames") is None:
            network["enableDNSHostnames"] = True
        if network.get("publishNotReadyAddresses") is None:
            network["publishNotReadyAddresses"] = True
        if isinstance(spec.get("failurePolicy"), dict):
            for i, rule in enumerate(_items(spec["failurePolicy"], "rules")):
                if not rule.get("name"):
                    rule["name"] = f"failurePolicyRule{i}"
        for vcp in _items(spec, "volumeClaimPolicies"):
            if vcp.get("retentionPolicy") is None:
                vcp["retentionPolicy"] = {"whenDeleted": "Delete"}
            elif isinstance(vcp["retentionPolicy"], dict):
                vcp["retentionPolicy"].setdefault("whenDeleted", "Delete")
        jobset_scheduling.default(spec, ctx.gates)

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        if operation not in ("CREATE", "UPDATE") or not isinstance(obj.get("spec"), dict):
            return
        # The webhook sees only objects the CRD schema accepted.
        if validate_schema(obj, old if operation == "UPDATE" else None):
            return
        if operation == "CREATE":
            msgs = webhook_create_errors(obj, ctx)
            if msgs:
                raise webhook_denied("\n".join(msgs))
        elif old is not None:
            errs = webhook_update_errors(obj, old)
            if errs:
                raise webhook_denied(_aggregate(errs))

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_schema(obj)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_schema(new, old)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        status = _dict(obj, "status")
        completed = next((c.get("status") for c in _items(status, "conditions") if c.get("type") == "Completed"),
                         None)
        suspend = _dict(obj, "spec").get("suspend")
        restarts = status.get("restarts")
        return [obj["metadata"]["name"],
                status.get("terminalState") or None,
                None if restarts is None else str(restarts),
                completed,
                None if suspend is None else ("true" if suspend else "false"),
                age_cell(obj, ctx)]


JOBSETS = register(ResourceType(
    group=GROUP, version=VERSION, kind="JobSet", plural="jobsets", namespaced=True,
    strategy=JobSetStrategy(), subresources=["status"]))
