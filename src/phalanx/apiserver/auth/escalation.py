"""RBAC's escalation prevention: nobody grants permissions they do not hold, as upstream's
`pkg/registry/rbac` storage enforces on every Role, ClusterRole and binding write.

    check_rbac_write(authorizer, user, "rolebindings", "team-a", binding)   # raises 403 or returns

- A Role or ClusterRole may be written by a user who holds every rule it grants (in its namespace;
  cluster-wide for a ClusterRole) or who may `escalate` roles/clusterroles. An `aggregationRule`
  needs `escalate` (upstream: "must have cluster-admin privileges to use the aggregationRule").
- A binding may be written by a user who may `bind` the role it references, or who holds every
  rule of that role in the binding's namespace.
- `system:masters` (the admin) may do all of it; in-process components never reach this.

A denial is upstream's 403: `rolebindings.rbac.authorization.k8s.io "x" is forbidden: user "alice"
(groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently
held:` followed by the missing rules, one compact rule per line.
"""

from __future__ import annotations

from typing import Any, Iterator

from ...api.rbac import GROUP
from ...machinery import errors
from .attributes import Attributes
from .rbac import RBACAuthorizer, rule_allows
from .user import UserInfo

Obj = dict[str, Any]
ROLE_RESOURCES = ("roles", "clusterroles")
BINDING_RESOURCES = ("rolebindings", "clusterrolebindings")
RBAC_WRITE_VERBS = ("create", "update", "patch")


def guards(attrs: Attributes) -> bool:
    """Is this request a write that escalation prevention must look at?"""
    return (attrs.resource_request and attrs.api_group == GROUP and not attrs.subresource
            and attrs.verb in RBAC_WRITE_VERBS and attrs.resource in ROLE_RESOURCES + BINDING_RESOURCES)


def _atomic(rule: Obj) -> Iterator[Obj]:
    """A rule broken into one-verb, one-group, one-resource (one-name, one-URL) rules."""
    verbs = rule.get("verbs") or []
    urls = rule.get("nonResourceURLs") or []
    for verb in verbs:
        for url in urls:
            yield {"verbs": [verb], "nonResourceURLs": [url]}
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for name in rule.get("resourceNames") or [""]:
                    atom: Obj = {"verbs": [verb], "apiGroups": [group], "resources": [resource]}
                    if name:
                        atom["resourceNames"] = [name]
                    yield atom


def _as_attributes(user: UserInfo, atom: Obj) -> Attributes:
    if "nonResourceURLs" in atom:
        return Attributes(user, atom["verbs"][0], False, path=atom["nonResourceURLs"][0])
    resource, _, sub = atom["resources"][0].partition("/")
    return Attributes(user, atom["verbs"][0], True, api_group=atom["apiGroups"][0], resource=resource,
                      subresource=sub, name=(atom.get("resourceNames") or [""])[0])


def missing_rules(owner_rules: list[Obj], rules: list[Obj], user: UserInfo) -> list[Obj]:
    """The atomic rules of `rules` that no rule of `owner_rules` covers (wildcards cover only
    themselves: granting `*` needs `*`)."""
    return [atom for r in rules for atom in _atomic(r)
            if not any(rule_allows(_as_attributes(user, atom), owner) for owner in owner_rules)]


def _quoted(values: list[str]) -> str:
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """Upstream's `CompactString`: `{APIGroups:[""], Resources:["pods"], Verbs:["create"]}`."""
    parts = [f"{label}:{_quoted(rule[key])}" for label, key in
             (("APIGroups", "apiGroups"), ("Resources", "resources"), ("NonResourceURLs", "nonResourceURLs"),
              ("ResourceNames", "resourceNames"), ("Verbs", "verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def _compacted(atoms: list[Obj]) -> list[str]:
    """Missing atomic rules with their verbs merged per (group, resource, name / URL), sorted."""
    merged: dict[tuple, Obj] = {}
    for atom in atoms:
        key = tuple((k, tuple(v)) for k, v in sorted(atom.items()) if k != "verbs")
        entry = merged.setdefault(key, {**atom, "verbs": []})
        entry["verbs"] += [v for v in atom["verbs"] if v not in entry["verbs"]]
    return sorted(compact_string(r) for r in merged.values())


def _forbidden(resource: str, name: str, message: str) -> errors.StatusError:
    return errors.forbidden_error(resource, GROUP, name, message)


def check_rbac_write(authorizer: RBACAuthorizer, user: UserInfo, resource: str, namespace: str, obj: Obj) -> None:
    """Raise 403 Forbidden when writing `obj` would grant `user` more than it holds."""
    if any(g in user.groups for g in authorizer.privileged_groups):
        return
    name = (obj.get("metadata") or {}).get("name", "")
    if resource in ROLE_RESOURCES:
        if authorizer.authorize(Attributes(user, "escalate", True, api_group=GROUP, namespace=namespace,
                                           resource=resource, name=name)).allowed:
            return
        if obj.get("aggregationRule") is not None:
            raise _forbidden(resource, name, "must have cluster-admin privileges to use the aggregationRule")
        rules = [r for r in obj.get("rules") or [] if isinstance(r, dict)]
    else:
        ref = obj.get("roleRef") or {}
        role_resource = "roles" if ref.get("kind") == "Role" else "clusterroles"
        if authorizer.authorize(Attributes(user, "bind", True, api_group=GROUP, namespace=namespace,
                                           resource=role_resource, name=ref.get("name", ""))).allowed:
            return
        rules = authorizer.role_rules(ref, namespace)
    missing = missing_rules(authorizer.rules_for(user, namespace), rules, user)
    if missing:
        raise _forbidden(resource, name, f"user \"{user.name}\" (groups={_quoted(list(user.groups))}) is attempting "
                                         f"to grant RBAC permissions not currently held:\n"
                                         + "\n".join(_compacted(missing)))
