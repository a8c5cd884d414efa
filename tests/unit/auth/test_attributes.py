"""Request attributes read from method, path and query as upstream's RequestInfoFactory reads
them, and the 403 words a denial carries."""

from __future__ import annotations

import pytest

from phalanx.apiserver.auth.attributes import Attributes, forbidden_error, request_attributes
from phalanx.apiserver.auth.user import UserInfo

ALICE = UserInfo("alice")

# (method, path, query) -> (resource request?, verb, group, namespace, resource, subresource, name)
TABLE = [
    ("GET", "/api/v1/namespaces/default/pods", {}, (True, "list", "", "default", "pods", "", "")),
    ("GET", "/api/v1/namespaces/default/pods", {"watch": "true"}, (True, "watch", "", "default", "pods", "", "")),
    ("GET", "/api/v1/pods", {"watch": "1"}, (True, "watch", "", "", "pods", "", "")),
    ("GET", "/api/v1/namespaces/default/pods", {"fieldSelector": "metadata.name=web"},
     (True, "list", "", "default", "pods", "", "web")),
    ("GET", "/api/v1/namespaces/default/pods/web", {}, (True, "get", "", "default", "pods", "", "web")),
    ("GET", "/api/v1/namespaces/default/pods/web/log", {}, (True, "get", "", "default", "pods", "log", "web")),
    ("POST", "/api/v1/namespaces/default/pods", {}, (True, "create", "", "default", "pods", "", "")),
    ("PUT", "/api/v1/namespaces/default/pods/web/status", {}, (True, "update", "", "default", "pods", "status", "web")),
    ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", {},
     (True, "patch", "apps", "ns", "deployments", "scale", "d")),
    ("DELETE", "/api/v1/namespaces/default/pods/web", {}, (True, "delete", "", "default", "pods", "", "web")),
    ("DELETE", "/api/v1/namespaces/default/pods", {}, (True, "deletecollection", "", "default", "pods", "", "")),
    ("GET", "/api/v1/namespaces/team-a", {}, (True, "get", "", "team-a", "namespaces", "", "team-a")),
    ("PUT", "/api/v1/namespaces/team-a/finalize", {}, (True, "update", "", "team-a", "namespaces", "finalize",
                                                       "team-a")),
    ("GET", "/api/v1/nodes", {}, (True, "list", "", "", "nodes", "", "")),
    ("POST", "/api/v1/namespaces/ns/serviceaccounts/default/token", {},
     (True, "create", "", "ns", "serviceaccounts", "token", "default")),
    ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {},
     (True, "create", "authorization.k8s.io", "", "selfsubjectaccessreviews", "", "")),
    ("GET", "/api", {}, (False, "get", "", "", "", "", "")),
    ("GET", "/api/v1", {}, (False, "get", "", "", "", "", "")),
    ("GET", "/apis/apps", {}, (False, "get", "", "", "", "", "")),
    ("GET", "/apis/apps/v1", {}, (False, "get", "", "", "", "", "")),
    ("GET", "/openapi/v3/api/v1", {}, (False, "get", "", "", "", "", "")),
    ("POST", "/healthz", {}, (False, "post", "", "", "", "", "")),
]


@pytest.mark.parametrize("method,path,query,want", TABLE, ids=[f"{m} {p} {q}" for m, p, q, _ in TABLE])
def test_request_attributes(method, path, query, want):
    a = request_attributes(ALICE, method, path, query)
    assert (a.resource_request, a.verb, a.api_group, a.namespace, a.resource, a.subresource, a.name) == want
    if not a.resource_request:
        assert a.path == path


FORBIDDEN = [
    (Attributes(ALICE, "create", True, namespace="default", resource="pods"), 403,
     'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "default"',
     {"kind": "pods"}),
    (Attributes(ALICE, "list", True, api_group="apps", resource="deployments"), 403,
     'deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" '
     'at the cluster scope', {"group": "apps", "kind": "deployments"}),
    (Attributes(ALICE, "get", True, namespace="ns", resource="pods", subresource="log", name="web"), 403,
     'pods "web" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "ns"',
     {"name": "web", "kind": "pods"}),
    (Attributes(ALICE, "impersonate", True, resource="users", name="someone"), 403,
     'users "someone" is forbidden: User "alice" cannot impersonate resource "users" in API group "" '
     'at the cluster scope', {"name": "someone", "kind": "users"}),
    (Attributes(ALICE, "get", False, path="/metrics"), 403,
     'forbidden: User "alice" cannot get path "/metrics"', {}),
]


@pytest.mark.parametrize("attrs,code,message,details", FORBIDDEN, ids=[m for _, _, m, _ in FORBIDDEN])
def test_forbidden_wording(attrs, code, message, details):
    err = forbidden_error(attrs)
    status = err.status()
    assert (err.code, status["reason"], status["message"]) == (code, "Forbidden", message)
    assert status.get("details", {}) == details
