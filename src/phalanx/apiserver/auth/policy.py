"""Upstream's default RBAC policy, written at every control-plane start (`ensure_bootstrap_policy`).

ClusterRoles, labelled `kubernetes.io/bootstrapping: rbac-defaults` and annotated
`rbac.authorization.kubernetes.io/autoupdate: "true"` as upstream's are:

- `cluster-admin` (everything), bound to the group `system:masters`;
- `admin`, `edit`, `view`: aggregated from every ClusterRole labelled
  `rbac.authorization.k8s.io/aggregate-to-{admin,edit,view}: "true"`, starting with
  `system:aggregate-to-{admin,edit,view}`; `view` aggregates into `edit` and `edit` into `admin`;
- `system:discovery`, `system:basic-user` (the self reviews `kubectl auth` makes) and
  `system:public-info-viewer` (health and version), bound to `system:authenticated` (the last also
  to `system:unauthenticated`);
- `system:kube-scheduler`, bound to the user `system:kube-scheduler`, for a scheduler run with a
  kubeconfig of that user (`phalanx create kubeconfig --user system:kube-scheduler`);
- `system:monitoring` (`get` on `/metrics`, `/metrics/slis` and the health checks), bound to the
  group `system:monitoring`, as upstream;
- `system:aggregated-metrics-reader`, which metrics-server's manifest installs: read access to
  `metrics.k8s.io` pods and nodes, aggregated into view, edit and admin (phalanx serves that API
  itself, `apiserver/metricsapi.py`).

The aggregate-to rules are upstream's for the kinds upstream names; phalanx adds its own served
kinds (Workloads and PodGroups, ResourceClaims and templates, JobSets) to view and edit, as
upstream adds each new built-in kind. The in-process components call `rest.API` directly and
need no bindings. A role that exists is reconciled like upstream's `autoupdate`: missing rules are
added, nothing is removed; with the annotation set to "false" it is left alone.
"""

from __future__ import annotations

import logging
from typing import Any

from ...api.rbac import GROUP as RBAC_GROUP
from ...machinery import errors
from ...machinery.meta import deep_copy
from ..rest import API
from .user import ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, SYSTEM_MASTERS

Obj = dict[str, Any]
log = logging.getLogger("phalanx.apiserver.auth")

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
PUBLIC_INFO_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
MONITORING_URLS = ["/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*",
                   "/healthz/*"]
MONITORING_GROUP = "system:monitoring"
DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
                  "/readyz", "/version", "/version/"]


def rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Obj:
    out: Obj = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def url_rule(verbs: list[str], urls: list[str]) -> Obj:
    return {"verbs": list(verbs), "nonResourceURLs": list(urls)}


VIEW_RULES = [
    rule(READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                      "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                      "services/status"]),
    rule(READ, [""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                      "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"]),
    rule(READ, [""], ["namespaces"]),
    rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    rule(READ, ["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                          "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
                          "statefulsets", "statefulsets/scale", "statefulsets/status"]),
    rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
    rule(READ, ["resource.k8s.io"], ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"]),
    rule(READ, ["scheduling.k8s.io"], ["podgroups", "podgroups/status", "workloads"]),
    rule(READ, ["jobset.x-k8s.io"], ["jobsets", "jobsets/status"]),
]

EDIT_RULES = [
    rule(READ, [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"]),
    rule(["impersonate"], [""], ["serviceaccounts"]),
    rule(WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    rule(["create"], [""], ["pods/eviction"]),
    rule(WRITE, [""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                       "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"]),
    rule(["create"], [""], ["serviceaccounts/token"]),
    rule(WRITE, ["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                           "replicasets/scale", "statefulsets", "statefulsets/scale"]),
    rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
    rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
    rule(WRITE, ["resource.k8s.io"], ["resourceclaims", "resourceclaimtemplates"]),
    rule(WRITE, ["scheduling.k8s.io"], ["podgroups", "workloads"]),
    rule(WRITE, ["jobset.x-k8s.io"], ["jobsets"]),
]

ADMIN_RULES = [
    rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    rule(READ_WRITE, [RBAC_GROUP], ["rolebindings", "roles"]),
]

SCHEDULER_RULES = [
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    rule(["create"], ["coordination.k8s.io"], ["leases"]),
    rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
    rule(["create", "patch", "update"], ["", "events.k8s.io"], ["events"]),
    rule(READ, [""], ["namespaces", "nodes", "persistentvolumeclaims", "persistentvolumes", "replicationcontrollers",
                      "services"]),
    rule(["delete", "get", "list", "watch"], [""], ["pods"]),
    rule(["create"], [""], ["bindings", "pods/binding"]),
    rule(["patch", "update"], [""], ["pods/status"]),
    rule(READ, ["apps"], ["replicasets", "statefulsets"]),
    rule(READ, ["policy"], ["poddisruptionbudgets"]),
    rule(READ, ["storage.k8s.io"], ["csidrivers", "csinodes", "csistoragecapacities", "storageclasses"]),
    rule(READ, ["resource.k8s.io"], ["deviceclasses", "resourceclaims", "resourceslices"]),
    rule(["patch", "update"], ["resource.k8s.io"], ["resourceclaims/status"]),
    rule(READ, ["scheduling.k8s.io"], ["podgroups", "priorityclasses", "workloads"]),
    rule(["patch", "update"], ["scheduling.k8s.io"], ["podgroups/status"]),
]


def cluster_role(name: str, rules: list[Obj], *, aggregate_to: str | None = None,
                 aggregate_from: str | None = None) -> Obj:
    labels = dict(BOOTSTRAP_LABELS)
    if aggregate_to:
        labels[AGGREGATE_TO + aggregate_to] = "true"
    obj: Obj = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels, "annotations": {AUTOUPDATE: "true"}},
                "rules": rules}
    if aggregate_from:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]}
        obj["rules"] = []
    return obj


def cluster_role_binding(name: str, role: str, subjects: list[tuple[str, str]]) -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABELS), "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": kind, "name": who} for kind, who in subjects]}


def bootstrap_cluster_roles() -> list[Obj]:
    """In creation order: the aggregated roles after the roles they aggregate."""
    return [
        cluster_role("cluster-admin", [rule(["*"], ["*"], ["*"]), url_rule(["*"], ["*"])]),
        cluster_role("system:discovery", [url_rule(["get"], DISCOVERY_URLS)]),
        cluster_role("system:public-info-viewer", [url_rule(["get"], PUBLIC_INFO_URLS)]),
        cluster_role("system:basic-user", [
            rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"])]),
        cluster_role("system:aggregate-to-view", VIEW_RULES, aggregate_to="view"),
        cluster_role("system:aggregate-to-edit", EDIT_RULES, aggregate_to="edit"),
        cluster_role("system:aggregate-to-admin", ADMIN_RULES, aggregate_to="admin"),
        cluster_role("view", [], aggregate_to="edit", aggregate_from="view"),
        cluster_role("edit", [], aggregate_to="admin", aggregate_from="edit"),
        cluster_role("admin", [], aggregate_from="admin"),
        cluster_role("system:kube-scheduler", SCHEDULER_RULES),
        cluster_role("system:monitoring", [url_rule(["get"], MONITORING_URLS)]),
        metrics_reader_role(),
    ]


def metrics_reader_role() -> Obj:
    """metrics-server's `system:aggregated-metrics-reader`: labelled into view, edit and admin."""
    role = cluster_role("system:aggregated-metrics-reader", [rule(READ, ["metrics.k8s.io"], ["pods", "nodes"])],
                        aggregate_to="view")
    for to in ("edit", "admin"):
        role["metadata"]["labels"][AGGREGATE_TO + to] = "true"
    return role


def bootstrap_cluster_role_bindings() -> list[Obj]:
    return [
        cluster_role_binding("cluster-admin", "cluster-admin", [("Group", SYSTEM_MASTERS)]),
        cluster_role_binding("system:discovery", "system:discovery", [("Group", ALL_AUTHENTICATED)]),
        cluster_role_binding("system:basic-user", "system:basic-user", [("Group", ALL_AUTHENTICATED)]),
        cluster_role_binding("system:public-info-viewer", "system:public-info-viewer",
                             [("Group", ALL_AUTHENTICATED), ("Group", ALL_UNAUTHENTICATED)]),
        cluster_role_binding("system:kube-scheduler", "system:kube-scheduler", [("User", "system:kube-scheduler")]),
        cluster_role_binding("system:monitoring", "system:monitoring", [("Group", MONITORING_GROUP)]),
    ]


def ensure_bootstrap_policy(api: API) -> None:
    """Create the default ClusterRoles and ClusterRoleBindings, or add what they miss."""
    try:
        roles = api.resource(RBAC_GROUP, "v1", "clusterroles")
        bindings = api.resource(RBAC_GROUP, "v1", "clusterrolebindings")
    except errors.StatusError:
        log.warning("bootstrap: %s/v1 is not served; no RBAC policy written", RBAC_GROUP)
        return
    for rt, objects, field in ((roles, bootstrap_cluster_roles(), "rules"),
                               (bindings, bootstrap_cluster_role_bindings(), "subjects")):
        for obj in objects:
            existing = api.store.get(rt.key, "", obj["metadata"]["name"])
            if existing is None:
                api.create(rt, "", obj)
                continue
            annotations = existing["metadata"].get("annotations") or {}
            missing = [x for x in obj[field] if x not in (existing.get(field) or [])]
            if missing and annotations.get(AUTOUPDATE) != "false" and "aggregationRule" not in obj:
                updated = deep_copy(existing)
                updated[field] = [*(existing.get(field) or []), *missing]
                api.update(rt, "", obj["metadata"]["name"], updated)
