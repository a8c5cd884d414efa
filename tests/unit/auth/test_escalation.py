"""Escalation prevention: a Role or binding may grant only what its writer holds, unless the
writer may `escalate` / `bind`; the admin may grant anything."""

from __future__ import annotations

import pytest

from phalanx.apiserver.auth.escalation import check_rbac_write, compact_string
from phalanx.apiserver.auth.user import UserInfo
from phalanx.machinery.errors import StatusError

from .builders import G, Policy, binding, cluster_role, role, rule

ALICE = UserInfo("alice", groups=("dev", "system:authenticated"))
ROOT = UserInfo("root", groups=("system:masters",))


def policy(*alice_rules, namespace="team-a") -> Policy:
    """alice holds `alice_rules` in `namespace`; ClusterRoles "reader" and "writer" exist."""
    p = Policy()
    p.add(cluster_role("alice-rules", *alice_rules))
    p.add(binding("alice", "ClusterRole", "alice-rules", "user:alice", namespace=namespace))
    p.add(cluster_role("reader", rule(["get", "list"], resources=["pods"])))
    p.add(cluster_role("writer", rule(["create"], resources=["pods"])))
    return p


# (what alice holds in team-a, resource, object written in team-a, allowed?)
TABLE = [
    ("role within held rules", [rule(["get", "list", "create"], resources=["pods"])], "roles",
     role("team-a", "r", rule(["get"], resources=["pods"])), True),
    ("role beyond held rules", [rule(["get"], resources=["pods"])], "roles",
     role("team-a", "r", rule(["get", "delete"], resources=["pods"])), False),
    ("wildcard needs wildcard", [rule(["get", "list"], resources=["pods"])], "roles",
     role("team-a", "r", rule(["*"], resources=["pods"])), False),
    ("wildcard covers", [rule(["*"], groups=["*"], resources=["*"])], "roles",
     role("team-a", "r", rule(["delete"], groups=["apps"], resources=["deployments/scale"])), True),
    ("named rule within an unnamed grant", [rule(["get"], resources=["secrets"])], "roles",
     role("team-a", "r", rule(["get"], resources=["secrets"], names=["token"])), True),
    ("unnamed rule beyond a named grant", [rule(["get"], resources=["secrets"], names=["token"])], "roles",
     role("team-a", "r", rule(["get"], resources=["secrets"])), False),
    ("escalate verb", [rule(["escalate"], groups=[G], resources=["roles"])], "roles",
     role("team-a", "r", rule(["*"], resources=["*"])), True),
    ("binding of a held role", [rule(["get", "list"], resources=["pods"])], "rolebindings",
     binding("b", "ClusterRole", "reader", "user:bob", namespace="team-a"), True),
    ("binding of a role not held", [rule(["get", "list"], resources=["pods"])], "rolebindings",
     binding("b", "ClusterRole", "writer", "user:bob", namespace="team-a"), False),
    ("bind verb on that role", [rule(["bind"], groups=[G], resources=["clusterroles"], names=["writer"])],
     "rolebindings", binding("b", "ClusterRole", "writer", "user:bob", namespace="team-a"), True),
    ("bind verb on another role", [rule(["bind"], groups=[G], resources=["clusterroles"], names=["reader"])],
     "rolebindings", binding("b", "ClusterRole", "writer", "user:bob", namespace="team-a"), False),
]


@pytest.mark.parametrize("case,held,resource,obj,allowed", TABLE, ids=[c[0] for c in TABLE])
def test_escalation_table(case, held, resource, obj, allowed):
    authz = policy(*held).authorizer()
    if allowed:
        check_rbac_write(authz, ALICE, resource, "team-a", obj)
    else:
        with pytest.raises(StatusError) as e:
            check_rbac_write(authz, ALICE, resource, "team-a", obj)
        assert e.value.code == 403
    check_rbac_write(authz, ROOT, resource, "team-a", obj)  # the admin may grant anything


def test_denial_names_the_missing_rules_as_upstream():
    authz = policy(rule(["get"], resources=["pods"])).authorizer()
    obj = role("team-a", "r", rule(["get", "delete", "create"], resources=["pods"]), rule(["get"], urls=["/x"]))
    with pytest.raises(StatusError) as e:
        check_rbac_write(authz, ALICE, "roles", "team-a", obj)
    assert e.value.message == (
        'roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) '
        'is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "create"]}\n'
        '{NonResourceURLs:["/x"], Verbs:["get"]}')


def test_aggregation_rule_needs_escalate():
    authz = policy(rule(["create", "update"], groups=[G], resources=["clusterroles"]), namespace="").authorizer()
    obj = cluster_role("agg", aggregate={"x": "true"})
    with pytest.raises(StatusError) as e:
        check_rbac_write(authz, ALICE, "clusterroles", "", obj)
    assert e.value.message.endswith("must have cluster-admin privileges to use the aggregationRule")


def test_compact_string():
    assert compact_string(rule(["get", "list"], resources=["pods"], names=["a"])) == \
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}'
