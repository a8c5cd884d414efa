"""What the scheduling.k8s.io strategies of every release share.

The workload API (Workload, PodGroup, CompositePodGroup) is validated declaratively upstream, so
these helpers speak the declarative validators' words: `must specify exactly one of: ...` for a
union, `field is immutable`, the `k8s-short-name` / `k8s-long-name` format messages, `Duplicate`
for a repeated list-map key. Also here: metav1 condition validation, the Priority admission
plugin's class lookup, and the sub-structures 1.36 and 1.37 spell alike (topology constraints,
resource claims, a controller reference, priority).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ...machinery import errors
from ...machinery.errors import FieldError
from ...machinery.meta import dict_at, list_at  # noqa: F401  (the scheduling modules read fields through these)
from ...machinery.names import regex_error, SUBDOMAIN_MSG, qualified_name_errors
from ..registry import Obj, StrategyContext

GROUP = "scheduling.k8s.io"
WORKLOADS_KEY = f"{GROUP}/workloads"
PRIORITY_CLASSES_KEY = f"{GROUP}/priorityclasses"

MAX_POD_GROUP_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1
PRIORITY_MIN = -2147483648
PRIORITY_MAX = 1_000_000_000
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
POD_GROUP_PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"


# -- reading loosely typed objects -------------------------------------------------------------------

def enabled(ctx: StrategyContext, gate: str, default: bool = False) -> bool:
    try:
        return bool(ctx.enabled(gate))
    except Exception:  # a gate the release does not know: its upstream default
        return default


def is_set(d: Any, key: str) -> bool:
    return isinstance(d, dict) and d.get(key) is not None




# -- formats -------------------------------------------------------------------------------------------

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# Anchored with `\Z` (end of text, as Go's `$`): Python's `$` would also accept a final newline.
_LABEL_RE = re.compile(rf"{_LABEL_FMT}\Z")
_SUBDOMAIN_RE = re.compile(rf"{_LABEL_FMT}(\.{_LABEL_FMT})*\Z")
_LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " \
             "and must start and end with an alphanumeric character"


def short_name_errors(value: str) -> list[str]:
    """Declarative `k8s-short-name` (DNS-1123 label) in the words of apimachinery's validate/content."""
    msgs = []
    if len(value) > 63:
        msgs.append("must be no more than 63 bytes")
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            msgs.append("must not contain dots")
        else:
            msgs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return msgs


def long_name_errors(value: str) -> list[str]:
    """Declarative `k8s-long-name` (DNS-1123 subdomain) in the words of validate/content."""
    msgs = []
    if len(value) > 253:
        msgs.append("must be no more than 253 bytes")
    if not _SUBDOMAIN_RE.match(value):
        msgs.append(SUBDOMAIN_MSG)
    return msgs


def path_segment_errors(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def required_name(value: Any, path: str, check: Callable[[str], list[str]]) -> list[FieldError]:
    """A required string field in format `check` (`short_name_errors`, `long_name_errors`)."""
    value = value or ""
    if not value:
        return [errors.required(path, "")]
    return [errors.invalid(path, value, m) for m in check(value)]


# -- declarative rules -----------------------------------------------------------------------------------

def union(path: str, obj: dict, members: tuple[str, ...],
          member_set: Callable[[Any, str], bool] = is_set) -> list[FieldError]:
    """Declarative `+k8s:unionMember` check: exactly one member set."""
    set_fields = [m for m in members if member_set(obj, m)]
    all_fields = ", ".join(f"`{m}`" for m in members)
    if len(set_fields) > 1:
        return [errors.invalid(path, "{" + ", ".join(set_fields) + "}", f"must specify exactly one of: {all_fields}")]
    if not set_fields:
        return [errors.invalid(path, "", f"must specify one of: {all_fields}")]
    return []


def immutable(path: str) -> FieldError:
    """Declarative `+k8s:immutable`: the value is not echoed."""
    return errors.invalid(path, None, "field is immutable")


def duplicates(path: str, items: list, key: str) -> list[FieldError]:
    """Declarative `validate.Unique` for a list map: one Duplicate per later repeat of a key."""
    seen: set = set()
    errs = []
    for i, item in enumerate(items):
        k = item.get(key) if isinstance(item, dict) else None
        if k in seen:
            errs.append(errors.duplicate(f"{path}[{i}]", item))
        else:
            seen.add(k)
    return errs


def set_once(value: Any, old: Any, updating: bool, path: str,
             validate: Callable[[Any, str], list[FieldError]]) -> list[FieldError]:
    """A field set at creation: validated on create, immutable on update (unchanged is fine)."""
    if updating and value == old:
        return []
    if updating:
        return [immutable(path)]
    return validate(value, path)


# -- metav1.Condition validation (apimachinery meta/v1/validation) ----------------------------------

_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON_RE = re.compile(rf"{_CONDITION_REASON_FMT}\Z")
_CONDITION_REASON_MSG = regex_error(
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'",
    _CONDITION_REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")


def _condition_errors(c: dict, p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ctype = c.get("type") or ""
    for m in qualified_name_errors(ctype):
        errs.append(errors.invalid(f"{p}.type", ctype, m))
    status = c.get("status") or ""
    if status not in ("True", "False", "Unknown"):
        errs.append(errors.not_supported(f"{p}.status", status, ["False", "True", "Unknown"]))
    og = c.get("observedGeneration")
    if isinstance(og, int) and og < 0:
        errs.append(errors.invalid(f"{p}.observedGeneration", og, "must be greater than or equal to zero"))
    if not c.get("lastTransitionTime"):
        errs.append(errors.required(f"{p}.lastTransitionTime", "must be set"))
    reason = c.get("reason") or ""
    if not reason:
        errs.append(errors.required(f"{p}.reason", "must be set"))
    else:
        if not _CONDITION_REASON_RE.match(reason):
            errs.append(errors.invalid(f"{p}.reason", reason, _CONDITION_REASON_MSG))
        if len(reason) > 1024:
            errs.append(errors.too_long(f"{p}.reason", 1024))
    if len(c.get("message") or "") > 32 * 1024:
        errs.append(errors.too_long(f"{p}.message", 32 * 1024))
    return errs


def validate_conditions(conditions: Any, path: str) -> list[FieldError]:
    """`metav1validation.ValidateConditions`: unique types and each condition well formed."""
    errs: list[FieldError] = []
    first: dict[str, int] = {}
    for i, c in enumerate(conditions or []):
        if not isinstance(c, dict):
            continue
        p = f"{path}[{i}]"
        ctype = c.get("type") or ""
        if ctype in first:
            errs.append(errors.duplicate(f"{p}.type", ctype))
        else:
            first[ctype] = i
        errs += _condition_errors(c, p)
    return errs


# -- structures both releases spell alike -----------------------------------------------------------------

def validate_scheduling_constraints(sc: Any, path: str) -> list[FieldError]:
    topology = list_at(sc, "topology")
    if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
        return [errors.too_many(f"{path}.topology", len(topology), MAX_TOPOLOGY_CONSTRAINTS)]
    errs: list[FieldError] = []
    for i, tc in enumerate(topology):
        p = f"{path}.topology[{i}].key"
        key = (tc or {}).get("key") or ""
        if not key:
            errs.append(errors.required(p, ""))
        else:
            errs += [errors.invalid(p, key, m) for m in qualified_name_errors(key)]
    return errs


def validate_resource_claim(claim: Any, path: str) -> list[FieldError]:
    claim = claim if isinstance(claim, dict) else {}
    errs = union(path, claim, ("resourceClaimName", "resourceClaimTemplateName"))
    errs += required_name(claim.get("name"), f"{path}.name", short_name_errors)
    for f in ("resourceClaimName", "resourceClaimTemplateName"):
        v = claim.get(f)
        if v is not None:
            errs += [errors.invalid(f"{path}.{f}", v, m) for m in long_name_errors(v)]
    return errs


def validate_resource_claims(claims: Any, path: str) -> list[FieldError]:
    claims = claims if isinstance(claims, list) else []
    if len(claims) > MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [errors.too_many(path, len(claims), MAX_POD_GROUP_RESOURCE_CLAIMS)]
    errs = duplicates(path, claims, "name")
    for i, c in enumerate(claims):
        errs += validate_resource_claim(c, f"{path}[{i}]")
    return errs


def validate_resource_claim_statuses(status: Any, old_status: Any) -> list[FieldError]:
    """Declarative rules on a PodGroup's `status.resourceClaimStatuses`: at most 4, unique names,
    valid claim names. Unchanged statuses are not re-validated."""
    status = status if isinstance(status, dict) else {}
    rcs = list_at(status, "resourceClaimStatuses")
    if old_status is not None and rcs == list_at(old_status, "resourceClaimStatuses"):
        return []
    path = "status.resourceClaimStatuses"
    if len(rcs) > MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [errors.too_many(path, len(rcs), MAX_POD_GROUP_RESOURCE_CLAIMS)]
    errs = duplicates(path, rcs, "name")
    for i, s in enumerate(rcs):
        v = (s or {}).get("resourceClaimName")
        if v is not None:
            errs += [errors.invalid(f"{path}[{i}].resourceClaimName", v, m) for m in long_name_errors(v)]
    return errs


def claim_statuses_match_spec(new: Obj) -> list[FieldError]:
    """Each `status.resourceClaimStatuses[].name` names an entry of `spec.resourceClaims`."""
    spec_claims = {c.get("name") for c in list_at(new.get("spec"), "resourceClaims") if isinstance(c, dict)}
    errs = []
    for i, s in enumerate(list_at(new.get("status"), "resourceClaimStatuses")):
        sname = (s or {}).get("name") or ""
        if sname not in spec_claims:
            errs.append(errors.invalid(f"status.resourceClaimStatuses[{i}].name", sname,
                                       "must match the name of an entry in `spec.resourceClaims`"))
    return errs


def validate_controller_ref(ref: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    api_group = ref.get("apiGroup") or ""
    if api_group:
        errs += [errors.invalid(f"{path}.apiGroup", api_group, m) for m in long_name_errors(api_group)]
    for f in ("kind", "name"):
        errs += required_name(ref.get(f), f"{path}.{f}", path_segment_errors)
    return errs


def priority_class_name_errors(v: Any, p: str) -> list[FieldError]:
    return [errors.invalid(p, v, m) for m in long_name_errors(v)]


def priority_errors(v: Any, p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if isinstance(v, int):
        if v > PRIORITY_MAX:
            errs.append(errors.invalid(p, v, f"must be less than or equal to {PRIORITY_MAX}"))
        if v < PRIORITY_MIN:
            errs.append(errors.invalid(p, v, f"must be greater than or equal to {PRIORITY_MIN}"))
    return errs


# -- the Priority admission plugin ---------------------------------------------------------------------------

def default_priority_class(pcs: list[Obj]) -> Obj | None:
    """The global default class; with several (a race), the one with the lowest value, as upstream."""
    best = None
    for pc in pcs:
        if pc.get("globalDefault") and (best is None or best.get("value", 0) > pc.get("value", 0)):
            best = pc
    return best


def resolve_priority_class(resource: str, name: str, class_name: str, ctx: StrategyContext) -> Obj | None:
    """The PriorityClass a group's `priorityClassName` names (the global default when empty; None
    when there is none). An unknown name is refused (403) as the Priority plugin refuses it."""
    if not class_name:
        return default_priority_class(ctx.list_objects(PRIORITY_CLASSES_KEY, None) or [])
    pc = ctx.lookup(PRIORITY_CLASSES_KEY, "", class_name)
    if pc is None:
        raise errors.forbidden_error(resource, GROUP, name, f"no PriorityClass with name {class_name} was found")
    return pc


def admit_priority(resource: str, name: str, spec: dict, ctx: StrategyContext) -> Obj | None:
    """The Priority plugin on a group's spec: `priority` (and `priorityClassName` when a default
    class applies) from the class; a preset priority that differs is refused. Returns the class."""
    pc = resolve_priority_class(resource, name, spec.get("priorityClassName") or "", ctx)
    priority = pc.get("value", 0) if pc else 0
    preset = spec.get("priority")
    if preset is not None and preset != priority:
        raise errors.forbidden_error(
            resource, GROUP, name,
            f"the integer value of priority ({preset}) must not be provided in pod group spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name")
    if pc:
        spec["priorityClassName"] = pc["metadata"]["name"]
    spec["priority"] = priority
    return pc
