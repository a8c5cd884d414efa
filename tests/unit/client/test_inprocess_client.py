"""InProcessClient: the Client contract over the real API (copies, errors, watch, subresources)."""

from __future__ import annotations

import pytest

from phalanx.machinery.errors import StatusError


def configmap(name, namespace="default", data=None, **md):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, **md},
            "data": data or {}}


def pod(name, namespace="default"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_objects_are_copied_in_and_out(env):
    c = env.client
    await env.namespace("default")
    mine = configmap("a", data={"k": "v"})
    created = await c.create(mine)
    mine["data"]["k"] = "changed after create"
    created["data"]["k"] = "changed the returned copy"
    got = await c.get("v1", "ConfigMap", "default", "a")
    assert got["data"] == {"k": "v"}
    got["data"]["k"] = "changed a read copy"
    items, _ = await c.list("v1", "ConfigMap", "default")
    assert items[0]["data"] == {"k": "v"}


@pytest.mark.parametrize("kind", ["ConfigMap", "configmaps"])
async def test_resources_are_named_by_kind_or_plural(env, kind):
    await env.namespace("default")
    await env.client.create(configmap("a"))
    assert (await env.client.get("v1", kind, "default", "a"))["metadata"]["name"] == "a"
    items, rv = await env.client.list("v1", kind)
    assert [i["metadata"]["name"] for i in items] == ["a"] and int(rv) > 0


@pytest.mark.parametrize("call, code, reason, message", [
    (lambda c: c.get("v1", "ConfigMap", "default", "missing"), 404, "NotFound", 'configmaps "missing" not found'),
    (lambda c: c.get("v1", "Widget", "default", "x"), 404, "NotFound", 'no matches for kind "Widget" in version "v1"'),
    (lambda c: c.create(configmap("a")), 409, "AlreadyExists", 'configmaps "a" already exists'),
    (lambda c: c.update_status(configmap("a")), 404, "NotFound", "the server could not find the requested resource"),
    (lambda c: c.update({**configmap("a"), "metadata": {"name": "a", "namespace": "default", "resourceVersion": "1"}}),
     409, "Conflict", 'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
                      'please apply your changes to the latest version and try again'),
])
async def test_errors_are_status_errors(env, call, code, reason, message):
    await env.namespace("default")
    await env.client.create(configmap("a"))
    with pytest.raises(StatusError) as e:
        await call(env.client)
    assert (e.value.code, e.value.reason, e.value.message) == (code, reason, message)


async def test_watch_from_a_resource_version_then_410_once_history_is_gone(make_env):
    env = make_env(history=4)
    c = env.client
    await env.namespace("default")
    _, rv = await c.list("v1", "ConfigMap", "default")
    await c.create(configmap("a"))
    await c.update(configmap("a", data={"x": "1"}))
    await c.delete("v1", "ConfigMap", "default", "a")
    seen = []
    stream = c.watch("v1", "ConfigMap", "default", resource_version=rv)
    async for type_, obj in stream:
        seen.append((type_, obj["metadata"]["name"], obj.get("data")))
        if len(seen) == 3:
            break
    await stream.aclose()
    assert seen == [("ADDED", "a", {}), ("MODIFIED", "a", {"x": "1"}), ("DELETED", "a", {"x": "1"})]
    for i in range(6):
        await c.create(configmap(f"more-{i}"))
    stale = c.watch("v1", "ConfigMap", "default", resource_version=rv)
    with pytest.raises(StatusError) as e:
        await stale.__anext__()
    assert (e.value.code, e.value.reason) == (410, "Expired")
    assert e.value.message.startswith("too old resource version")


async def test_bind_sets_the_node_and_a_second_bind_conflicts(env):
    await env.namespace("default")
    created = await env.client.create(pod("p"))
    await env.client.bind("default", "p", "node-1", uid=created["metadata"]["uid"])
    bound = await env.client.get("v1", "Pod", "default", "p")
    assert bound["spec"]["nodeName"] == "node-1"
    with pytest.raises(StatusError) as e:
        await env.client.bind("default", "p", "node-2")
    assert e.value.code == 409


async def test_finalize_lets_a_terminating_namespace_go(env):
    c = env.client
    await env.namespace("doomed")
    await c.delete("v1", "Namespace", None, "doomed")
    ns = await c.get("v1", "Namespace", None, "doomed")
    assert ns["status"]["phase"] == "Terminating" and ns["spec"]["finalizers"] == ["kubernetes"]
    ns["spec"]["finalizers"] = []
    await c.finalize(ns)
    with pytest.raises(StatusError) as e:
        await c.get("v1", "Namespace", None, "doomed")
    assert e.value.code == 404


async def test_finalize_of_a_live_namespace_only_changes_spec_finalizers(env):
    c = env.client
    ns = await env.namespace("alive")
    ns["spec"]["finalizers"] = []
    out = await c.finalize(ns)
    assert out["spec"]["finalizers"] == [] and out["status"]["phase"] == "Active"
    stale = dict(ns, metadata=dict(ns["metadata"]))  # the resourceVersion it carries is now old
    with pytest.raises(StatusError) as e:
        await c.finalize(stale)
    assert e.value.code == 409


async def test_served_resources_come_from_discovery(env):
    resources = {(r.group, r.plural): r for r in await env.client.served_resources()}
    pods = resources[("", "pods")]
    assert pods.kind == "Pod" and pods.namespaced and pods.supports("list", "watch", "delete")
    assert "binding" in pods.subresources
    assert not resources[("", "namespaces")].namespaced
    info = await env.client.resource_info("v1", "pods")
    assert info.kind == "Pod"


@pytest.mark.parametrize("patch_type, body", [
    ("application/merge-patch+json", {"data": {"b": "2", "a": None}}),
    ("application/strategic-merge-patch+json", {"data": {"b": "2", "a": None}}),
    ("application/json-patch+json", [{"op": "remove", "path": "/data/a"}, {"op": "add", "path": "/data/b", "value": "2"}]),
])
async def test_patch(env, patch_type, body):
    await env.namespace("default")
    await env.client.create(configmap("p", data={"a": "1"}))
    out = await env.client.patch("v1", "ConfigMap", "default", "p", body, patch_type=patch_type)
    assert out["data"] == {"b": "2"}
    assert (await env.client.get("v1", "ConfigMap", "default", "p"))["data"] == {"b": "2"}


async def test_status_patch_changes_only_status(env):
    await env.namespace("default")
    await env.client.create(pod("p"))
    out = await env.client.patch("v1", "Pod", "default", "p",
                                 {"status": {"phase": "Running"}, "spec": {"nodeName": "sneaky"}},
                                 subresource="status")
    assert out["status"]["phase"] == "Running" and "nodeName" not in out["spec"]
