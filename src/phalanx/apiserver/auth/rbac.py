"""The RBAC authorizer: allow a request when some binding that names the user grants a rule that
covers it, as upstream's `plugin/pkg/auth/authorizer/rbac` decides.

    authz = RBACAuthorizer(lookup, list_objects)        # the StrategyContext readers of rest.API
    decision = authz.authorize(attrs)                    # Decision(allowed, reason)
    rules = authz.rules_for(user, "team-a")              # what SelfSubjectRulesReview reports

Members of `system:masters` are allowed everything before RBAC is consulted (upstream's
privileged-group authorizer). Otherwise ClusterRoleBindings apply everywhere and RoleBindings in
their own namespace; a binding's subjects match the user by name (User), by group (Group) or as
`system:serviceaccount:<ns>:<name>` (ServiceAccount, namespace defaulting to the binding's). A
rule covers a resource request when verb, API group, resource (`pods`, `pods/log`, `*`,
`*/scale`) and resourceNames match, and a non-resource request when verb and URL (exact or a
trailing `*` prefix) match. Aggregated ClusterRoles are resolved at evaluation time
(`phalanx.api.rbac.aggregated_rules`). An allow says which binding allowed it, in upstream's
words (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "view" to User "alice"`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ...api.rbac import GROUP, aggregated_rules
from .attributes import Attributes
from .user import SYSTEM_MASTERS, UserInfo, service_account_username

Obj = dict[str, Any]
Lookup = Callable[[str, str, str], Any]
ListObjects = Callable[[str, Any], list]

ROLES = f"{GROUP}/roles"
CLUSTER_ROLES = f"{GROUP}/clusterroles"
ROLE_BINDINGS = f"{GROUP}/rolebindings"
CLUSTER_ROLE_BINDINGS = f"{GROUP}/clusterrolebindings"
ALL = "*"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def verb_matches(rule: Obj, verb: str) -> bool:
    verbs = rule.get("verbs") or ()
    return ALL in verbs or verb in verbs


def api_group_matches(rule: Obj, group: str) -> bool:
    groups = rule.get("apiGroups") or ()
    return ALL in groups or group in groups


def resource_matches(rule: Obj, combined: str, subresource: str) -> bool:
    for resource in rule.get("resources") or ():
        if resource == ALL or resource == combined:
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Obj, name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def non_resource_url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url == ALL or url == path or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Obj) -> bool:
    if not verb_matches(rule, attrs.verb):
        return False
    if not attrs.resource_request:
        return non_resource_url_matches(rule, attrs.path)
    return (api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, attrs.combined_resource, attrs.subresource)
            and resource_name_matches(rule, attrs.name))


def subject_applies(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        return user.name == service_account_username(subject.get("namespace") or binding_namespace, name)
    return False


def describe_subject(subject: Obj, binding_namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{subject.get("name", "")}/{subject.get("namespace") or binding_namespace}"'
    return f'{subject.get("kind", "")} "{subject.get("name", "")}"'


def describe_binding(binding: Obj, subject: Obj) -> str:
    md, ref = binding.get("metadata") or {}, binding.get("roleRef") or {}
    namespace = md.get("namespace", "")
    if binding.get("kind") == "ClusterRoleBinding" or not namespace:
        kind, name = "ClusterRoleBinding", md.get("name", "")
    else:
        kind, name = "RoleBinding", f'{md.get("name", "")}/{namespace}'
    return (f'{kind} "{name}" of {ref.get("kind", "")} "{ref.get("name", "")}" to '
            f'{describe_subject(subject, namespace)}')


class RBACAuthorizer:
    def __init__(self, lookup: Lookup, list_objects: ListObjects, *,
                 privileged_groups: tuple[str, ...] = (SYSTEM_MASTERS,)):
        self.lookup = lookup
        self.list_objects = list_objects
        self.privileged_groups = privileged_groups

    def authorize(self, attrs: Attributes) -> Decision:
        if any(g in attrs.user.groups for g in self.privileged_groups):
            return Decision(True)
        for binding, subject, rules in self._grants(attrs.user, attrs.namespace):
            if any(rule_allows(attrs, r) for r in rules):
                return Decision(True, f"RBAC: allowed by {describe_binding(binding, subject)}")
        return Decision(False)

    def rules_for(self, user: UserInfo, namespace: str) -> list[Obj]:
        """Every rule granted to `user` in `namespace` (cluster-wide ones included), in binding order."""
        out: list[Obj] = []
        for _, _, rules in self._grants(user, namespace):
            out.extend(r for r in rules if isinstance(r, dict))
        return out

    # -- resolution --------------------------------------------------------------------------
    def _grants(self, user: UserInfo, namespace: str) -> Iterator[tuple[Obj, Obj, list[Obj]]]:
        """(binding, the subject that named the user, the rules of its role) for every binding
        that applies: ClusterRoleBindings first, then the RoleBindings of `namespace`."""
        bindings = list(self.list_objects(CLUSTER_ROLE_BINDINGS, None))
        if namespace:
            bindings += self.list_objects(ROLE_BINDINGS, namespace)
        for binding in bindings:
            binding_namespace = (binding.get("metadata") or {}).get("namespace", "")
            subject = next((s for s in binding.get("subjects") or () if isinstance(s, dict)
                            and subject_applies(s, user, binding_namespace)), None)
            if subject is not None:
                yield binding, subject, self.role_rules(binding.get("roleRef") or {}, binding_namespace)

    def role_rules(self, ref: Obj, binding_namespace: str) -> list[Obj]:
        """The rules of the Role (in `binding_namespace`) or ClusterRole a roleRef names."""
        if ref.get("kind") == "Role":
            role = self.lookup(ROLES, binding_namespace, ref.get("name", "")) if binding_namespace else None
            return list((role or {}).get("rules") or ())
        role = self.lookup(CLUSTER_ROLES, "", ref.get("name", ""))
        if role is None:
            return []
        return aggregated_rules(role, lambda: self.list_objects(CLUSTER_ROLES, None))
