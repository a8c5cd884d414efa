"""Small builders for RBAC tests: an in-memory policy store and rules, roles and bindings."""

from __future__ import annotations

from phalanx.apiserver.auth.rbac import RBACAuthorizer

G = "rbac.authorization.k8s.io"


class Policy:
    """A tiny in-memory RBAC store with the readers the authorizer takes."""

    def __init__(self):
        self.objects: dict[tuple[str, str, str], dict] = {}

    def add(self, obj: dict) -> "Policy":
        plural = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
                  "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
        md = obj["metadata"]
        self.objects[(f"{G}/{plural}", md.get("namespace", ""), md["name"])] = obj
        return self

    def lookup(self, key, namespace, name):
        return self.objects.get((key, namespace, name))

    def list_objects(self, key, namespace):
        return [o for (k, ns, _), o in sorted(self.objects.items()) if k == key and (namespace is None or ns == namespace)]

    def authorizer(self) -> RBACAuthorizer:
        return RBACAuthorizer(self.lookup, self.list_objects)


def rule(verbs, groups=("",), resources=(), names=(), urls=()):
    r = {"verbs": list(verbs)}
    if urls:
        r["nonResourceURLs"] = list(urls)
    else:
        r["apiGroups"], r["resources"] = list(groups), list(resources)
    if names:
        r["resourceNames"] = list(names)
    return r


def cluster_role(name, *rules, labels=None, aggregate=None):
    obj = {"kind": "ClusterRole", "metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}
    if aggregate:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
    return obj


def role(namespace, name, *rules):
    return {"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": list(rules)}


def subject(spec: str) -> dict:
    kind, _, name = spec.partition(":")
    if kind == "sa":
        ns, _, sa = name.partition("/")
        return {"kind": "ServiceAccount", "name": sa, **({"namespace": ns} if ns else {})}
    return {"kind": {"user": "User", "group": "Group"}[kind], "name": name, "apiGroup": G}


def binding(name, role_kind, role_name, *subjects, namespace=None):
    obj = {"kind": "RoleBinding" if namespace else "ClusterRoleBinding",
           "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
           "roleRef": {"apiGroup": G, "kind": role_kind, "name": role_name},
           "subjects": [subject(s) for s in subjects]}
    return obj
