"""rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding.

Validation from upstream `pkg/apis/rbac/validation` (policy rules, subjects, an immutable
`roleRef`), the v1 defaults (`apiGroup` of User/Group subjects and of `roleRef`) and the printer
columns of `kubectl get roles|clusterroles|rolebindings|clusterrolebindings` (`-o wide` adds the
subjects). A ClusterRole with an `aggregationRule` holds the union of the rules of the
ClusterRoles its selectors match, as upstream's clusterrole-aggregation controller keeps it:
`aggregated_rules` computes that union (the RBAC authorizer calls it on every evaluation, so a
newly labelled ClusterRole counts at once) and the strategy stores it on each create and update.

Registered at import as `roles`, `clusterroles`, `rolebindings` and `clusterrolebindings`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..machinery.errors import FieldError, invalid, not_supported, required
from ..machinery.names import dns1123_subdomain_errors
from ..machinery.selectors import label_selector_from_object
from .core import creation_age
from .common import _dict
from .labelselectors import validate_label_selector
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
CLUSTER_ROLES_KEY = f"{GROUP}/clusterroles"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")
CREATED_AT_COLUMN = Column("Created At", "date", "",
                           "CreationTimestamp is a timestamp representing the server time when this object was created.")
BINDING_COLUMNS = [
    NAME_COLUMN,
    Column("Role", "string", "", "RoleRef is the reference to the role this binding grants."),
    AGE_COLUMN,
    Column("Users", "string", "", "Users in the binding", 1),
    Column("Groups", "string", "", "Groups in the binding", 1),
    Column("ServiceAccounts", "string", "", "ServiceAccounts in the binding", 1),
]


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def validate_policy_rule(rule: Any, namespaced: bool, path: str) -> list[FieldError]:
    """Upstream `ValidatePolicyRule`: verbs always; resource rules or non-resource URLs, not both."""
    rule = _dict(rule)
    errs: list[FieldError] = []
    if not _list(rule.get("verbs")):
        errs.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = _list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            errs.append(invalid(f"{path}.nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(invalid(f"{path}.nonResourceURLs", urls,
                                "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not _list(rule.get("apiGroups")):
        errs.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not _list(rule.get("resources")):
        errs.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def _rbac_name_errors(name: str) -> list[str]:
    """Upstream `ValidateRBACName` is path-segment validation: any name but `.`, `..`, `/`, `%`."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return ["may not contain '/' or '%'"] if "/" in name or "%" in name else []


def validate_subject(subject: Any, namespaced: bool, path: str) -> list[FieldError]:
    """Upstream `ValidateRoleBindingSubject`."""
    s = _dict(subject)
    errs: list[FieldError] = []
    name, kind, group = s.get("name") or "", s.get("kind"), s.get("apiGroup") or ""
    if not name:
        errs.append(required(f"{path}.name", ""))
    if kind == "ServiceAccount":
        if name:
            errs += [invalid(f"{path}.name", name, m) for m in dns1123_subdomain_errors(name)]
        if group:
            errs.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not s.get("namespace"):
            errs.append(required(f"{path}.namespace", ""))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errs.append(not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        errs.append(not_supported(f"{path}.kind", kind, SUBJECT_KINDS))
    return errs


def validate_role_ref(ref: Any, kinds: tuple[str, ...]) -> list[FieldError]:
    ref = _dict(ref)
    errs: list[FieldError] = []
    if (ref.get("apiGroup") or "") != GROUP:
        errs.append(not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [GROUP]))
    if ref.get("kind") not in kinds:
        errs.append(not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        errs.append(required("roleRef.name", ""))
    else:
        errs += [invalid("roleRef.name", name, m) for m in _rbac_name_errors(name)]
    return errs


def default_binding(obj: Obj) -> None:
    """v1 defaults: User and Group subjects, and the roleRef, are in the rbac API group."""
    for s in _list(obj.get("subjects")):
        if isinstance(s, dict) and s.get("kind") in ("User", "Group") and not s.get("apiGroup"):
            s["apiGroup"] = GROUP
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP


def subjects_strings(subjects: Iterable[Any]) -> tuple[list[str], list[str], list[str]]:
    """(users, groups, service accounts as `namespace/name`), as upstream's `SubjectsStrings`."""
    users, groups, sas = [], [], []
    for s in subjects:
        s = _dict(s)
        if s.get("kind") == "User":
            users.append(s.get("name", ""))
        elif s.get("kind") == "Group":
            groups.append(s.get("name", ""))
        elif s.get("kind") == "ServiceAccount":
            sas.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
    return users, groups, sas


def aggregated_rules(role: Obj, cluster_roles: Callable[[], list[Obj]], _seen: frozenset[str] = frozenset()) -> list[Obj]:
    """The rules of a ClusterRole: its own, or for an aggregated one the union (first occurrence
    kept, in name order) of the rules of every other ClusterRole its selectors match."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return _list(role.get("rules"))
    name = _dict(role.get("metadata")).get("name", "")
    seen = _seen | {name}
    selectors = []
    for sel in _list(rule.get("clusterRoleSelectors")):
        try:
            selectors.append(label_selector_from_object(sel))
        except ValueError:
            continue
    out: list[Obj] = []
    for other in sorted(cluster_roles(), key=lambda r: _dict(r.get("metadata")).get("name", "")):
        other_name = _dict(other.get("metadata")).get("name", "")
        labels = _dict(other.get("metadata")).get("labels") or {}
        if other_name in seen or not any(s.matches(labels) for s in selectors):
            continue
        rules = aggregated_rules(other, cluster_roles, seen) if other.get("aggregationRule") else other.get("rules")
        for r in _list(rules):
            if r not in out:
                out.append(r)
    return out


class RoleStrategy(Strategy):
    columns = [NAME_COLUMN, CREATED_AT_COLUMN]
    name_validation = "path_segment"
    tracks_generation = False
    namespaced = True

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, rule in enumerate(_list(obj.get("rules"))):
            errs += validate_policy_rule(rule, self.namespaced, f"rules[{i}]")
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        md = _dict(obj.get("metadata"))
        return [md.get("name", ""), md.get("creationTimestamp")]


class ClusterRoleStrategy(RoleStrategy):
    namespaced = False

    def _aggregate(self, obj: Obj, ctx: StrategyContext) -> None:
        if isinstance(obj.get("aggregationRule"), dict):
            obj["rules"] = aggregated_rules(obj, lambda: ctx.list_objects(CLUSTER_ROLES_KEY, None))

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        self._aggregate(obj, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        self._aggregate(new, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = super().validate(obj, ctx)
        agg = obj.get("aggregationRule")
        if agg is not None:
            selectors = _list(_dict(agg).get("clusterRoleSelectors"))
            if not selectors:
                errs.append(required("aggregationRule.clusterRoleSelectors",
                                     "at least one clusterRoleSelector required if aggregationRule is non-nil"))
            for i, sel in enumerate(selectors):
                errs += validate_label_selector(sel, f"aggregationRule.clusterRoleSelectors[{i}]")
        return errs


class RoleBindingStrategy(Strategy):
    columns = BINDING_COLUMNS
    name_validation = "path_segment"
    tracks_generation = False
    namespaced = True
    role_kinds: tuple[str, ...] = ("Role", "ClusterRole")

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        default_binding(obj)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = validate_role_ref(obj.get("roleRef"), self.role_kinds)
        for i, s in enumerate(_list(obj.get("subjects"))):
            errs += validate_subject(s, self.namespaced, f"subjects[{i}]")
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        if _dict(new.get("roleRef")) != _dict(old.get("roleRef")):
            errs.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        ref = _dict(obj.get("roleRef"))
        users, groups, sas = subjects_strings(_list(obj.get("subjects")))
        return [_dict(obj.get("metadata")).get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
                creation_age(obj, ctx), ", ".join(users), ", ".join(groups), ", ".join(sas)]


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    namespaced = False
    role_kinds = ("ClusterRole",)


ROLE_STRATEGY = RoleStrategy()
CLUSTER_ROLE_STRATEGY = ClusterRoleStrategy()
ROLE_BINDING_STRATEGY = RoleBindingStrategy()
CLUSTER_ROLE_BINDING_STRATEGY = ClusterRoleBindingStrategy()

register(ResourceType(GROUP, "v1", "Role", "roles", True, ROLE_STRATEGY))
register(ResourceType(GROUP, "v1", "ClusterRole", "clusterroles", False, CLUSTER_ROLE_STRATEGY))
register(ResourceType(GROUP, "v1", "RoleBinding", "rolebindings", True, ROLE_BINDING_STRATEGY))
register(ResourceType(GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", False,
                      CLUSTER_ROLE_BINDING_STRATEGY))
