"""API Priority and Fairness: classification by upstream's default FlowSchemas, and 429 when a
priority level is saturated."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.test_utils import make_mocked_request

from phalanx.api.flowcontrol import RequestInfo, default_objects, match_flow_schema
from phalanx.apiserver.apf import PriorityAndFairness, TooManyRequests
from phalanx.apiserver.auth.user import UserInfo


def _objects():
    out = {"flowschemas": [], "prioritylevelconfigurations": []}
    for plural, obj in default_objects():
        obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}-{plural}"
        out[plural].append(obj)
    return out


SCHEMAS = _objects()["flowschemas"]


@pytest.mark.parametrize("info,expected", [
    (RequestInfo("admin", ["system:masters", "system:authenticated"], "get", "", "pods", "default"), "exempt"),
    (RequestInfo("system:kube-scheduler", ["system:authenticated"], "update", "coordination.k8s.io", "leases",
                 "kube-system"), "system-leader-election"),
    (RequestInfo("system:kube-scheduler", ["system:authenticated"], "list", "", "pods"), "kube-scheduler"),
    (RequestInfo("system:serviceaccount:kube-system:coredns", ["system:serviceaccounts", "system:authenticated"],
                 "list", "", "services"), "kube-system-service-accounts"),
    (RequestInfo("system:serviceaccount:team:bot", ["system:serviceaccounts", "system:authenticated"],
                 "list", "", "pods", "team"), "service-accounts"),
    (RequestInfo("alice", ["system:authenticated"], "create", "apps", "deployments", "team"), "global-default"),
    (RequestInfo("system:anonymous", ["system:unauthenticated"], "get", path="/healthz", resource_request=False),
     "probes"),
])
def test_requests_are_classified_as_upstream_classifies_them(info, expected):
    assert match_flow_schema(SCHEMAS, info)["metadata"]["name"] == expected


class _API:
    def __init__(self):
        self.objects = _objects()

    def resource(self, group, version, plural):
        return plural

    def list(self, rt, namespace):
        return {"items": self.objects[rt]}


def test_a_saturated_level_answers_429_with_retry_after(monkeypatch):
    monkeypatch.setattr("phalanx.apiserver.apf.SERVER_CONCURRENCY", 1)
    apf = PriorityAndFairness(_API())
    alice = UserInfo("alice", groups=("system:authenticated",))
    request = make_mocked_request("GET", "/api/v1/namespaces/default/pods")

    async def run():
        async with apf.admit(request, alice, False) as headers:
            assert headers == {"X-Kubernetes-PF-FlowSchema-UID": "uid-global-default-flowschemas",
                               "X-Kubernetes-PF-PriorityLevel-UID": "uid-global-default-prioritylevelconfigurations"}
            with pytest.raises(TooManyRequests) as e:
                async with apf.admit(request, alice, False):
                    pass
            assert e.value.code == 429 and e.value.headers["Retry-After"] == "1"
            async with apf.admit(request, alice, True):  # a watch is not counted
                pass
        async with apf.admit(request, alice, False):  # the slot is free again
            pass
    asyncio.run(run())


def test_an_anonymous_probe_falls_under_probes():
    apf = PriorityAndFairness(_API())
    request = make_mocked_request("GET", "/readyz")

    async def run():
        async with apf.admit(request, None, False) as headers:
            assert headers["X-Kubernetes-PF-FlowSchema-UID"] == "uid-probes-flowschemas"
            assert headers["X-Kubernetes-PF-PriorityLevel-UID"] == "uid-exempt-prioritylevelconfigurations"
    asyncio.run(run())


def test_a_new_flow_schema_classifies_requests_once_the_schemas_are_read_again():
    api = _API()
    for plural, objs in api.objects.items():
        for i, obj in enumerate(objs):
            obj["metadata"]["resourceVersion"] = str(i + 1)
    apf = PriorityAndFairness(api)
    alice = UserInfo("alice", groups=("system:authenticated",))
    request = make_mocked_request("GET", "/api/v1/namespaces/default/pods")

    async def schema_uid() -> str:
        async with apf.admit(request, alice, False) as headers:
            return headers["X-Kubernetes-PF-FlowSchema-UID"]

    assert asyncio.run(schema_uid()) == "uid-global-default-flowschemas"
    api.objects["flowschemas"].append({
        "metadata": {"name": "alice-first", "uid": "uid-alice-first", "resourceVersion": "100"},
        "spec": {"matchingPrecedence": 10, "priorityLevelConfiguration": {"name": "workload-low"},
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                               "namespaces": ["*"]}]}]}})
    assert asyncio.run(schema_uid()) == "uid-global-default-flowschemas"  # read at most once a second
    apf._loaded_at = float("-inf")  # a second later
    assert asyncio.run(schema_uid()) == "uid-alice-first"
    bob = UserInfo("bob", groups=("system:authenticated",))

    async def bob_uid() -> str:
        async with apf.admit(request, bob, False) as headers:
            return headers["X-Kubernetes-PF-FlowSchema-UID"]
    assert asyncio.run(bob_uid()) == "uid-global-default-flowschemas"
