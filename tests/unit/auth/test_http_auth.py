"""The HTTP API's authentication, impersonation and authorization, and the review and
TokenRequest endpoints, against the real aiohttp app on a loopback port."""

from __future__ import annotations

import contextlib

import aiohttp
import pytest
from aiohttp import web

from phalanx.apiserver.auth.authenticator import user_token_claims
from phalanx.apiserver.auth.filters import RequestAuth
from phalanx.apiserver.auth.policy import ensure_bootstrap_policy
from phalanx.apiserver.server import Server

ADMIN_TOKEN = "admin-secret"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class Served:
    def __init__(self, env, port: int, auth: RequestAuth):
        self.env, self.port, self.auth = env, port, auth
        self.base = f"http://127.0.0.1:{port}"

    def token_for(self, user: str, *groups: str) -> str:
        return self.auth.authenticator.key.sign(user_token_claims(user, groups, 600, self.auth.authenticator.now()))

    async def call(self, method: str, path: str, token: str | None = ADMIN_TOKEN, body=None,
                   headers: dict | list | None = None):
        hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        if token:
            hdrs.append(("Authorization", f"Bearer {token}"))
        async with aiohttp.ClientSession() as s:
            async with s.request(method, self.base + path, json=body, headers=hdrs) as r:
                try:
                    return r.status, await r.json(content_type=None)
                except ValueError:
                    return r.status, await r.text()

    async def create(self, path: str, obj: dict):
        status, body = await self.call("POST", path, body=obj)
        assert status == 201, body
        return body


@contextlib.asynccontextmanager
async def serving(env):
    env.bootstrap()
    ensure_bootstrap_policy(env.api)
    auth = RequestAuth.for_cluster(env.api, ADMIN_TOKEN)
    runner = web.AppRunner(Server(env.api, ADMIN_TOKEN, auth=auth).app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield Served(env, runner.addresses[0][1], auth)
    finally:
        env.api.store.close()
        await runner.cleanup()


def rolebinding(name, namespace, cluster_role, user):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}


def ssar(verb, resource, namespace=""):
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}}}


async def test_credentials_are_required_except_for_health(env):
    async with serving(env) as srv:
        assert (await srv.call("GET", "/api/v1/namespaces", token=None))[0] == 401
        assert (await srv.call("GET", "/api/v1/namespaces", token="forged"))[0] == 401
        assert await srv.call("GET", "/readyz", token=None) == (200, "ok")
        alice = srv.token_for("alice")
        assert (await srv.call("GET", "/version", token=alice))[0] == 200
        assert (await srv.call("GET", "/apis", token=alice))[0] == 200
        status, body = await srv.call("GET", "/metrics", token=alice)
        assert (status, body["message"]) == (403, 'forbidden: User "alice" cannot get path "/metrics"')


async def test_a_view_binding_in_one_namespace(env):
    async with serving(env) as srv:
        await srv.create(RBAC + "/namespaces/default/rolebindings", rolebinding("v", "default", "view", "alice"))
        alice = srv.token_for("alice", "dev")
        assert (await srv.call("GET", "/api/v1/namespaces/default/pods", token=alice))[0] == 200
        status, body = await srv.call("POST", "/api/v1/namespaces/default/configmaps", token=alice,
                                      body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        assert status == 403
        assert body["message"] == ('configmaps is forbidden: User "alice" cannot create resource "configmaps" '
                                   'in API group "" in the namespace "default"')
        assert body["details"] == {"kind": "configmaps"}
        status, body = await srv.call("GET", "/api/v1/namespaces/kube-system/pods", token=alice)
        assert status == 403


# (case, headers, resources alice may impersonate beforehand, the 403 message)
IMPERSONATION = [
    ("user", [("Impersonate-User", "bob")], [], 'users "bob" is forbidden: User "alice" cannot impersonate '
     'resource "users" in API group "" at the cluster scope'),
    ("group", [("Impersonate-User", "bob"), ("Impersonate-Group", "ops")], ["users"],
     'groups "ops" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster '
     'scope'),
    ("uid", [("Impersonate-User", "bob"), ("Impersonate-Uid", "1234")], ["users"],
     'uids.authentication.k8s.io "1234" is forbidden: User "alice" cannot impersonate resource "uids" in API group '
     '"authentication.k8s.io" at the cluster scope'),
    ("service account", [("Impersonate-User", "system:serviceaccount:default:robot")], ["users", "groups"],
     'serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API '
     'group "" in the namespace "default"'),
]


async def grant_impersonation(srv: Served, name: str, resources: list[str]) -> None:
    await srv.create(RBAC + "/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": ["", "authentication.k8s.io"], "resources": resources, "verbs": ["impersonate"]}]})
    await srv.create(RBAC + "/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]})


@pytest.mark.parametrize("case,headers,granted,message", IMPERSONATION, ids=[c[0] for c in IMPERSONATION])
async def test_impersonation_is_authorized_per_header(env, case, headers, granted, message):
    async with serving(env) as srv:
        alice = srv.token_for("alice")
        if granted:
            await grant_impersonation(srv, "partly", granted)
        status, body = await srv.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=alice,
                                      headers=headers, body={})
        assert (status, body["message"]) == (403, message)
        await grant_impersonation(srv, "fully", ["users", "groups", "serviceaccounts", "uids"])
        status, body = await srv.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=alice,
                                      headers=headers, body={})
        assert status == 201
        info = body["status"]["userInfo"]
        assert info["username"] == dict(headers)["Impersonate-User"]
        assert info["groups"][-1] == "system:authenticated"
        if case == "service account":
            assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default",
                                      "system:authenticated"]


async def test_access_reviews(env):
    async with serving(env) as srv:
        await srv.create(RBAC + "/namespaces/default/rolebindings", rolebinding("v", "default", "view", "alice"))
        alice = srv.token_for("alice")
        status, body = await srv.call("POST", SSAR, token=alice, body=ssar("list", "pods", "default"))
        assert status == 201
        assert body["status"] == {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "v/default" of '
                                                             'ClusterRole "view" to User "alice"'}
        _, body = await srv.call("POST", SSAR, token=alice, body=ssar("delete", "pods", "default"))
        assert body["status"] == {"allowed": False}
        _, body = await srv.call("POST", SSAR, body=ssar("delete", "nodes"))
        assert body["status"] == {"allowed": True}

        status, body = await srv.call("POST", SSAR, token=alice, body={"kind": "SelfSubjectAccessReview", "spec": {}})
        assert (status, body["reason"]) == (422, "Invalid")
        assert body["message"] == ('SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                                   'spec.resourceAttributes: Invalid value: null: exactly one of '
                                   'nonResourceAttributes or resourceAttributes must be specified')
        assert (await srv.call("GET", SSAR, token=alice))[0] == 403  # may not list reviews
        assert (await srv.call("GET", SSAR))[0] == 405

        sar = {"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
               "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods",
                                                                 "namespace": "default"}}}
        assert (await srv.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", token=alice,
                               body=sar))[0] == 403
        _, body = await srv.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=sar)
        assert body["status"]["allowed"] is True

        _, body = await srv.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", token=alice,
                                 body={"spec": {"namespace": "default"}})
        rules = body["status"]["resourceRules"]
        assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]} in rules
        assert not any("secrets" in r["resources"] for r in rules)
        assert body["status"]["incomplete"] is False


async def test_token_request(env):
    async with serving(env) as srv:
        await srv.create("/api/v1/namespaces/default/serviceaccounts",
                         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}})
        path = "/api/v1/namespaces/default/serviceaccounts/robot/token"
        status, body = await srv.call("POST", path, body={"apiVersion": "authentication.k8s.io/v1",
                                                          "kind": "TokenRequest", "spec": {}})
        assert status == 201 and body["kind"] == "TokenRequest"
        assert body["spec"]["expirationSeconds"] == 3600
        token = body["status"]["token"]
        _, who = await srv.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token, body={})
        assert who["status"]["userInfo"]["username"] == "system:serviceaccount:default:robot"

        status, body = await srv.call("POST", path, body={"spec": {"expirationSeconds": 60}})
        assert (status, body["message"]) == (422, 'TokenRequest.authentication.k8s.io "robot" is invalid: '
                                                  'spec.expirationSeconds: Invalid value: 60: may not specify a '
                                                  'duration less than 10 minutes')
        status, body = await srv.call("POST", "/api/v1/namespaces/default/serviceaccounts/ghost/token", body={})
        assert (status, body["message"]) == (404, 'serviceaccounts "ghost" not found')
        alice = srv.token_for("alice")
        status, body = await srv.call("POST", path, token=alice, body={})
        assert (status, body["message"]) == (403, 'serviceaccounts "robot" is forbidden: User "alice" cannot create '
                                                  'resource "serviceaccounts/token" in API group "" in the '
                                                  'namespace "default"')


async def test_bootstrap_policy_is_idempotent_and_fills_aggregated_roles(env):
    env.bootstrap()
    ensure_bootstrap_policy(env.api)
    rv = env.store.get("rbac.authorization.k8s.io/clusterroles", "", "view")["metadata"]["resourceVersion"]
    ensure_bootstrap_policy(env.api)
    view = env.store.get("rbac.authorization.k8s.io/clusterroles", "", "view")
    assert view["metadata"]["resourceVersion"] == rv
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]} in view["rules"]
    admin = env.store.get("rbac.authorization.k8s.io/clusterroles", "", "admin")
    assert any("rolebindings" in r.get("resources", []) for r in admin["rules"])
    assert any(r.get("verbs") == ["impersonate"] for r in admin["rules"])  # from edit, aggregated into admin


async def test_namespace_admin_cannot_escalate(env):
    async with serving(env) as srv:
        await srv.create(RBAC + "/namespaces/default/rolebindings", rolebinding("a", "default", "admin", "alice"))
        alice = srv.token_for("alice")
        bindings = RBAC + "/namespaces/default/rolebindings"
        status, body = await srv.call("POST", bindings, token=alice,
                                      body=rolebinding("root", "default", "cluster-admin", "bob"))
        assert status == 403
        assert body["message"].startswith('rolebindings.rbac.authorization.k8s.io "root" is forbidden: user "alice" '
                                          '(groups=["system:authenticated"]) is attempting to grant RBAC permissions '
                                          'not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}')
        assert (await srv.call("POST", bindings, token=alice, body=rolebinding("v", "default", "view", "bob")))[0] == 201

        roles = RBAC + "/namespaces/default/roles"
        small = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "small"},
                 "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
        assert (await srv.call("POST", roles, token=alice, body=small))[0] == 201
        grow = {"rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["delete"]}]}
        status, body = await srv.call("PATCH", roles + "/small", token=alice, body=grow,
                                      headers={"Content-Type": "application/merge-patch+json"})
        assert status == 403 and 'Resources:["nodes"], Verbs:["delete"]' in body["message"]
        status, body = await srv.call("PATCH", roles + "/small", body=grow,
                                      headers={"Content-Type": "application/merge-patch+json"})
        assert status == 200 and body["rules"] == grow["rules"]
