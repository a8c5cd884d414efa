"""rbac.authorization.k8s.io/v1 kinds through the API: upstream's validation messages, defaults,
the immutable roleRef, stored aggregation and printer columns."""

from __future__ import annotations

import pytest

from phalanx.machinery.errors import StatusError

V1 = "rbac.authorization.k8s.io/v1"
G = "rbac.authorization.k8s.io"


def role(*rules, kind="Role", name="r"):
    md = {"name": name, **({"namespace": "default"} if kind == "Role" else {})}
    return {"apiVersion": V1, "kind": kind, "metadata": md, "rules": list(rules)}


def binding(*subjects, kind="RoleBinding", ref_kind="ClusterRole", ref="view", name="b"):
    md = {"name": name, **({"namespace": "default"} if kind == "RoleBinding" else {})}
    return {"apiVersion": V1, "kind": kind, "metadata": md,
            "roleRef": {"apiGroup": G, "kind": ref_kind, "name": ref}, "subjects": list(subjects)}


INVALID = [
    ("rule without verbs", role({"apiGroups": [""], "resources": ["pods"]}),
     'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least '
     'one value'),
    ("resource rule without groups", role({"verbs": ["get"], "resources": ["pods"]}),
     'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].apiGroups: Required value: resource rules must '
     'supply at least one api group'),
    ("namespaced url rule", role({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}),
     'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: ["/healthz"]: '
     'namespaced rules cannot apply to non-resource URLs'),
    ("url and resources", role({"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]},
                               kind="ClusterRole"),
     'ClusterRole.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: ["/x"]: '
     'rules cannot apply to both regular resources and non-resource URLs'),
    ("empty aggregation rule", {**role(kind="ClusterRole"), "aggregationRule": {"clusterRoleSelectors": []}},
     'ClusterRole.rbac.authorization.k8s.io "r" is invalid: aggregationRule.clusterRoleSelectors: Required value: '
     'at least one clusterRoleSelector required if aggregationRule is non-nil'),
    ("subject kind", binding({"kind": "Robot", "name": "x"}),
     'RoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].kind: Unsupported value: "Robot": '
     'supported values: "ServiceAccount", "User", "Group"'),
    ("cluster binding of a Role", binding({"kind": "User", "name": "x"}, kind="ClusterRoleBinding", ref_kind="Role"),
     'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.kind: Unsupported value: "Role": '
     'supported values: "ClusterRole"'),
    ("cluster binding of a service account without namespace",
     binding({"kind": "ServiceAccount", "name": "x"}, kind="ClusterRoleBinding"),
     'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].namespace: Required value'),
]


@pytest.mark.parametrize("case,obj,message", INVALID, ids=[c[0] for c in INVALID])
async def test_invalid_objects(env, case, obj, message):
    env.bootstrap()
    with pytest.raises(StatusError) as e:
        await env.client.create(obj)
    assert (e.value.code, e.value.message) == (422, message)


async def test_subject_and_role_ref_api_group_defaults(env):
    env.bootstrap()
    b = binding({"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"})
    del b["roleRef"]["apiGroup"]
    created = await env.client.create(b)
    assert created["subjects"] == [{"kind": "User", "name": "alice", "apiGroup": G},
                                   {"kind": "ServiceAccount", "name": "sa"}]
    assert created["roleRef"]["apiGroup"] == G


async def test_role_ref_is_immutable(env):
    env.bootstrap()
    created = await env.client.create(binding({"kind": "User", "name": "alice"}))
    created["roleRef"]["name"] = "edit"
    with pytest.raises(StatusError) as e:
        await env.client.update(created)
    assert e.value.code == 422
    assert "roleRef: Invalid value" in e.value.message and "cannot change roleRef" in e.value.message
    created["roleRef"]["name"] = "view"
    created["subjects"].append({"kind": "Group", "name": "dev", "apiGroup": G})
    assert len((await env.client.update(created))["subjects"]) == 2


async def test_aggregated_cluster_role_stores_matching_rules(env):
    env.bootstrap()
    part = role({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, kind="ClusterRole", name="part")
    part["metadata"]["labels"] = {"example.com/aggregate": "true"}
    await env.client.create(part)
    agg = role(kind="ClusterRole", name="agg")
    agg["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate": "true"}}]}
    created = await env.client.create(agg)
    assert created["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]


def test_binding_printer_columns(env):
    from phalanx.api import rbac
    b = binding({"kind": "User", "name": "alice", "apiGroup": G}, {"kind": "Group", "name": "dev", "apiGroup": G},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"})
    b["metadata"]["creationTimestamp"] = None
    strategy = rbac.ROLE_BINDING_STRATEGY
    assert [c.name for c in strategy.columns] == ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    assert strategy.row(b, env.api.ctx) == ["b", "ClusterRole/view", "<unknown>", "alice", "dev", "ns/sa"]


@pytest.mark.parametrize("autoupdate,restored", [("true", True), ("false", False)])
def test_bootstrap_policy_restores_missing_rules_unless_told_not_to(env, autoupdate, restored):
    from phalanx.apiserver.auth.policy import AUTOUPDATE, ensure_bootstrap_policy
    from phalanx.machinery.meta import deep_copy
    env.bootstrap()
    ensure_bootstrap_policy(env.api)
    rt = env.api.resource(G, "v1", "clusterroles")
    basic = deep_copy(env.store.get(rt.key, "", "system:basic-user"))
    full = basic["rules"]
    basic["rules"] = full[:1]
    basic["metadata"]["annotations"][AUTOUPDATE] = autoupdate
    env.api.update(rt, "", "system:basic-user", basic)
    ensure_bootstrap_policy(env.api)
    rules = env.store.get(rt.key, "", "system:basic-user")["rules"]
    assert rules == (full if restored else full[:1])
