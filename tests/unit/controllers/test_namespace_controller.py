"""The namespace controller: a deleted namespace is emptied, waits for content held by finalizers,
reports it in its conditions, then is finalized and goes."""

from __future__ import annotations

import pytest

from phalanx.controllers.garbagecollector import GarbageCollector
from phalanx.controllers.namespace import NamespaceController

from .harness import shared_factory


def item(kind, name, namespace="team", **md):
    o = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace, **md}}
    if kind == "Pod":
        o["spec"] = {"containers": [{"name": "c", "image": "busybox"}]}
    return o


def conditions(env, name):
    ns = env.store.get("core/namespaces", "", name)
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in (ns.get("status") or {}).get("conditions", [])}


def count(env, key, namespace):
    return len(env.store.list(key, namespace)[0])


async def start(env, *controllers):
    factory = shared_factory(env)
    started = [cls(env.client, factory, clock=env.clock) for cls in controllers]
    for ctrl in started:
        ctrl.start()
    assert await env.run_until(lambda: all(c.synced for c in started))
    return started


async def test_deleting_a_namespace_deletes_its_content_then_the_namespace(env):
    c = env.client
    for n in ("team", "other"):
        await env.namespace(n)
    for i in range(3):
        await c.create(item("ConfigMap", f"cm-{i}"))
    await c.create(item("Secret", "s"))
    await c.create(item("Pod", "p"))
    await c.create(item("ConfigMap", "elsewhere", namespace="other"))
    (ctrl,) = await start(env, NamespaceController)

    await c.delete("v1", "Namespace", None, "team")
    assert env.store.get("core/namespaces", "", "team")["status"]["phase"] == "Terminating"
    assert await env.run_until(lambda: env.store.get("core/namespaces", "", "team") is None)
    for key in ("core/configmaps", "core/secrets", "core/pods"):
        assert count(env, key, "team") == 0
    assert count(env, "core/configmaps", "other") == 1
    assert env.store.get("core/namespaces", "", "other")["status"]["phase"] == "Active"
    await ctrl.stop()


async def test_content_held_by_a_finalizer_keeps_the_namespace_terminating(env):
    c = env.client
    await env.namespace("team")
    await c.create(item("ConfigMap", "held", finalizers=["example.com/hold"]))
    await c.create(item("ConfigMap", "free"))
    (ctrl,) = await start(env, NamespaceController)
    await c.delete("v1", "Namespace", None, "team")

    assert await env.run_until(lambda: count(env, "core/configmaps", "team") == 1
                               and "NamespaceContentRemaining" in conditions(env, "team"))
    await env.clock.advance(120)
    ns = env.store.get("core/namespaces", "", "team")
    assert ns is not None and ns["spec"]["finalizers"] == ["kubernetes"]
    conds = conditions(env, "team")
    assert conds["NamespaceContentRemaining"] == (
        "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances")
    assert conds["NamespaceFinalizersRemaining"] == (
        "True", "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
    assert conds["NamespaceDeletionDiscoveryFailure"] == (
        "False", "ResourcesDiscovered", "All resources successfully discovered")
    assert conds["NamespaceDeletionContentFailure"] == (
        "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization")

    held = await c.get("v1", "ConfigMap", "team", "held")
    held["metadata"]["finalizers"] = []
    await c.update(held)
    assert await env.run_until(lambda: env.store.get("core/namespaces", "", "team") is None, within=60)
    await ctrl.stop()


async def test_owned_content_goes_with_the_garbage_collector_running_alongside(env):
    c = env.client
    await env.namespace("team")
    owner = await c.create(item("ConfigMap", "owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
           "blockOwnerDeletion": True}
    await c.create(item("Secret", "dependent", ownerReferences=[ref]))
    ctrls = await start(env, NamespaceController, GarbageCollector)
    await c.delete("v1", "Namespace", None, "team")
    assert await env.run_until(lambda: env.store.get("core/namespaces", "", "team") is None)
    assert count(env, "core/secrets", "team") == 0
    for ctrl in ctrls:
        await ctrl.stop()


async def test_a_new_controller_finishes_a_deletion_started_before_it(env):
    c = env.client
    await env.namespace("team")
    await c.create(item("ConfigMap", "x"))
    await c.delete("v1", "Namespace", None, "team")  # nobody is running yet
    await env.clock.advance(60)
    assert env.store.get("core/namespaces", "", "team") is not None
    (ctrl,) = await start(env, NamespaceController)
    assert await env.run_until(lambda: env.store.get("core/namespaces", "", "team") is None)
    await ctrl.stop()


async def test_a_live_namespace_is_left_alone(env):
    c = env.client
    await env.namespace("team")
    await c.create(item("ConfigMap", "x"))
    (ctrl,) = await start(env, NamespaceController)
    await env.clock.advance(600)
    assert count(env, "core/configmaps", "team") == 1
    assert "conditions" not in env.store.get("core/namespaces", "", "team")["status"]
    await ctrl.stop()
