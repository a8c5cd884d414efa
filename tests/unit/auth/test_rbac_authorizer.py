"""The RBAC authorizer on allow/deny tables: verbs, API groups, resources and subresources,
resourceNames, non-resource URLs, binding subjects and scopes, aggregated ClusterRoles, and the
reason an allow gives."""

from __future__ import annotations

import pytest

from phalanx.apiserver.auth.attributes import Attributes
from phalanx.apiserver.auth.user import UserInfo, service_account_user

from .builders import Policy, binding, cluster_role, role, rule


ALICE = UserInfo("alice", groups=("dev", "system:authenticated"))


def res(verb, resource, namespace="", name="", group="", sub="", user=ALICE):
    return Attributes(user, verb, True, api_group=group, api_version="v1", namespace=namespace,
                      resource=resource, subresource=sub, name=name)


def url(verb, path, user=ALICE):
    return Attributes(user, verb, False, path=path)


# One rule granted cluster-wide to alice; (request, allowed?).
RULE_TABLE = [
    ("verb listed", rule(["get", "list"], resources=["pods"]), res("list", "pods", "ns"), True),
    ("verb not listed", rule(["get", "list"], resources=["pods"]), res("create", "pods", "ns"), False),
    ("verb star", rule(["*"], resources=["pods"]), res("deletecollection", "pods"), True),
    ("other group", rule(["get"], groups=["apps"], resources=["pods"]), res("get", "pods", "ns", "p"), False),
    ("group star", rule(["get"], groups=["*"], resources=["deployments"]),
     res("get", "deployments", "ns", "d", group="apps"), True),
    ("resource star", rule(["get"], groups=["apps"], resources=["*"]),
     res("get", "deployments", "ns", "d", group="apps", sub="scale"), True),
    ("subresource needs its own entry", rule(["get"], resources=["pods"]), res("get", "pods", "ns", "p", sub="log"),
     False),
    ("subresource entry", rule(["get"], resources=["pods/log"]), res("get", "pods", "ns", "p", sub="log"), True),
    ("star slash subresource", rule(["get"], groups=["*"], resources=["*/scale"]),
     res("get", "deployments", "ns", "d", group="apps", sub="scale"), True),
    ("star slash subresource is not the main resource", rule(["get"], groups=["*"], resources=["*/scale"]),
     res("get", "deployments", "ns", "d", group="apps"), False),
    ("resourceNames: named", rule(["get"], resources=["configmaps"], names=["a"]), res("get", "configmaps", "ns", "a"),
     True),
    ("resourceNames: other name", rule(["get"], resources=["configmaps"], names=["a"]),
     res("get", "configmaps", "ns", "b"), False),
    ("resourceNames: a list has no name", rule(["list"], resources=["configmaps"], names=["a"]),
     res("list", "configmaps", "ns"), False),
    ("url exact", rule(["get"], urls=["/healthz"]), url("get", "/healthz"), True),
    ("url other verb", rule(["get"], urls=["/healthz"]), url("post", "/healthz"), False),
    ("url prefix star", rule(["get"], urls=["/apis/*"]), url("get", "/apis/apps/v1"), True),
    ("url prefix star needs the prefix", rule(["get"], urls=["/apis/*"]), url("get", "/apis"), False),
    ("url star", rule(["get"], urls=["*"]), url("get", "/anything"), True),
    ("url rule does not grant resources", rule(["*"], urls=["*"]), res("get", "pods", "ns", "p"), False),
    ("resource rule does not grant urls", rule(["*"], groups=["*"], resources=["*"]), url("get", "/healthz"), False),
]


@pytest.mark.parametrize("case,granted,attrs,allowed", RULE_TABLE, ids=[c[0] for c in RULE_TABLE])
def test_rule_matching(case, granted, attrs, allowed):
    p = Policy().add(cluster_role("r", granted)).add(binding("b", "ClusterRole", "r", "user:alice"))
    assert p.authorizer().authorize(attrs).allowed is allowed


SA = service_account_user("team-a", "builder")
BOB = UserInfo("bob", groups=("system:authenticated",))

# (bindings, request, allowed?) with ClusterRole "reader" (get pods) and Role team-a/"writer" (create pods).
SCOPE_TABLE = [
    ("cluster binding: any namespace", [binding("b", "ClusterRole", "reader", "user:alice")],
     res("get", "pods", "elsewhere", "p"), True),
    ("cluster binding: cluster scope", [binding("b", "ClusterRole", "reader", "user:alice")],
     res("get", "pods", "", "p"), True),
    ("rolebinding of a ClusterRole: its namespace", [binding("b", "ClusterRole", "reader", "user:alice",
                                                             namespace="team-a")],
     res("get", "pods", "team-a", "p"), True),
    ("rolebinding of a ClusterRole: other namespace", [binding("b", "ClusterRole", "reader", "user:alice",
                                                               namespace="team-a")],
     res("get", "pods", "team-b", "p"), False),
    ("rolebinding of a ClusterRole: not cluster-wide", [binding("b", "ClusterRole", "reader", "user:alice",
                                                                namespace="team-a")],
     res("list", "pods"), False),
    ("rolebinding of a Role", [binding("b", "Role", "writer", "user:alice", namespace="team-a")],
     res("create", "pods", "team-a"), True),
    ("rolebinding of a missing Role", [binding("b", "Role", "missing", "user:alice", namespace="team-a")],
     res("create", "pods", "team-a"), False),
    ("group subject", [binding("b", "ClusterRole", "reader", "group:dev")], res("get", "pods", "x", "p"), True),
    ("group subject, not a member", [binding("b", "ClusterRole", "reader", "group:ops")], res("get", "pods", "x", "p"),
     False),
    ("other user", [binding("b", "ClusterRole", "reader", "user:alice")], res("get", "pods", "x", "p", user=BOB),
     False),
    ("service account subject", [binding("b", "ClusterRole", "reader", "sa:team-a/builder")],
     res("get", "pods", "x", "p", user=SA), True),
    ("service account subject defaults to the binding's namespace",
     [binding("b", "ClusterRole", "reader", "sa:/builder", namespace="team-a")],
     res("get", "pods", "team-a", "p", user=SA), True),
    ("service account of another namespace",
     [binding("b", "ClusterRole", "reader", "sa:/builder", namespace="team-b")],
     res("get", "pods", "team-b", "p", user=SA), False),
    ("service account groups", [binding("b", "ClusterRole", "reader", "group:system:serviceaccounts:team-a")],
     res("get", "pods", "x", "p", user=SA), True),
    ("system:masters needs no binding", [], res("delete", "nodes", "", "n",
                                               user=UserInfo("root", groups=("system:masters",))), True),
]


@pytest.mark.parametrize("case,bindings,attrs,allowed", SCOPE_TABLE, ids=[c[0] for c in SCOPE_TABLE])
def test_bindings_and_scopes(case, bindings, attrs, allowed):
    p = Policy().add(cluster_role("reader", rule(["get", "list"], resources=["pods"])))
    p.add(role("team-a", "writer", rule(["create"], resources=["pods"])))
    for b in bindings:
        p.add(b)
    assert p.authorizer().authorize(attrs).allowed is allowed


def aggregated_policy() -> Policy:
    p = Policy()
    p.add(cluster_role("view", aggregate={"agg/view": "true"}, labels={"agg/edit": "true"}))
    p.add(cluster_role("edit", aggregate={"agg/edit": "true"}))
    p.add(cluster_role("pods-view", rule(["get"], resources=["pods"]), labels={"agg/view": "true"}))
    p.add(cluster_role("cm-edit", rule(["create"], resources=["configmaps"]), labels={"agg/edit": "true"}))
    p.add(cluster_role("unlabelled", rule(["delete"], resources=["pods"])))
    return p


AGGREGATION_TABLE = [
    ("view has its component's rules", "view", res("get", "pods", "ns", "p"), True),
    ("view lacks edit's rules", "view", res("create", "configmaps", "ns"), False),
    ("edit has its own component's rules", "edit", res("create", "configmaps", "ns"), True),
    ("edit includes view (nested aggregation)", "edit", res("get", "pods", "ns", "p"), True),
    ("unlabelled roles are not aggregated", "edit", res("delete", "pods", "ns", "p"), False),
]


@pytest.mark.parametrize("case,bound,attrs,allowed", AGGREGATION_TABLE, ids=[c[0] for c in AGGREGATION_TABLE])
def test_aggregated_cluster_roles(case, bound, attrs, allowed):
    p = aggregated_policy().add(binding("b", "ClusterRole", bound, "user:alice", namespace="ns"))
    assert p.authorizer().authorize(attrs).allowed is allowed


def test_a_newly_labelled_role_counts_at_once():
    p = aggregated_policy().add(binding("b", "ClusterRole", "view", "user:alice"))
    authz = p.authorizer()
    assert not authz.authorize(res("list", "secrets", "ns")).allowed
    p.add(cluster_role("secrets-view", rule(["list"], resources=["secrets"]), labels={"agg/view": "true"}))
    assert authz.authorize(res("list", "secrets", "ns")).allowed


def test_allow_reasons_name_the_binding_as_upstream():
    p = Policy().add(cluster_role("reader", rule(["get"], resources=["pods"])))
    p.add(binding("crb", "ClusterRole", "reader", "group:dev"))
    p.add(binding("rb", "ClusterRole", "reader", "sa:/builder", namespace="team-a"))
    authz = p.authorizer()
    assert authz.authorize(res("get", "pods", "x", "p")).reason == \
        'RBAC: allowed by ClusterRoleBinding "crb" of ClusterRole "reader" to Group "dev"'
    assert authz.authorize(res("get", "pods", "team-a", "p", user=SA)).reason == \
        'RBAC: allowed by RoleBinding "rb/team-a" of ClusterRole "reader" to ServiceAccount "builder/team-a"'
    assert authz.authorize(res("create", "pods", "x")).reason == ""


def test_rules_for_lists_cluster_and_namespace_grants():
    p = Policy().add(cluster_role("reader", rule(["get"], resources=["pods"])))
    p.add(role("team-a", "writer", rule(["create"], resources=["pods"])))
    p.add(binding("crb", "ClusterRole", "reader", "user:alice"))
    p.add(binding("rb", "Role", "writer", "user:alice", namespace="team-a"))
    authz = p.authorizer()
    assert [r["verbs"] for r in authz.rules_for(ALICE, "team-a")] == [["get"], ["create"]]
    assert [r["verbs"] for r in authz.rules_for(ALICE, "team-b")] == [["get"]]
    assert authz.rules_for(BOB, "team-a") == []
