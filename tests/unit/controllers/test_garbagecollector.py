"""The garbage collector against the real API: background, foreground (blockOwnerDeletion), orphan,
namespace rules, and a restart that converges from the lists alone."""

from __future__ import annotations

from phalanx.controllers.garbagecollector import GarbageCollector

from .harness import shared_factory

KEYS = {"ConfigMap": "core/configmaps", "Secret": "core/secrets", "Node": "core/nodes"}


def obj(kind, name, namespace="default", owners=(), finalizers=None):
    md = {"name": name}
    if kind != "Node":
        md["namespace"] = namespace
    if owners:
        md["ownerReferences"] = list(owners)
    if finalizers:
        md["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": kind, "metadata": md}


def ref(owner, block=None):
    r = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
         "uid": owner["metadata"]["uid"]}
    if block is not None:
        r["blockOwnerDeletion"] = block
    return r


def stored(env, kind, name, namespace="default"):
    return env.store.get(KEYS[kind], "" if kind == "Node" else namespace, name)


def gone(env, kind, name, namespace="default"):
    return stored(env, kind, name, namespace) is None


async def start_gc(env):
    gc = GarbageCollector(env.client, shared_factory(env), clock=env.clock)
    gc.start()
    assert await env.run_until(lambda: gc.synced)
    return gc


async def test_background_deletes_dependents_of_a_deleted_owner(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    owner = await c.create(obj("ConfigMap", "owner"))
    await c.create(obj("Secret", "s1", owners=[ref(owner)]))
    await c.create(obj("ConfigMap", "c1", owners=[ref(owner)]))
    await c.create(obj("ConfigMap", "unrelated"))
    await env.clock.advance(5)
    assert not gone(env, "Secret", "s1")  # a live owner keeps its dependents
    await c.delete("v1", "ConfigMap", "default", "owner")
    assert await env.run_until(lambda: gone(env, "Secret", "s1") and gone(env, "ConfigMap", "c1"))
    assert not gone(env, "ConfigMap", "unrelated")
    await gc.stop()


async def test_a_dependent_with_a_live_owner_only_loses_the_dead_reference(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    a = await c.create(obj("ConfigMap", "a"))
    b = await c.create(obj("ConfigMap", "b"))
    await c.create(obj("Secret", "shared", owners=[ref(a), ref(b)]))
    await c.delete("v1", "ConfigMap", "default", "a")
    assert await env.run_until(lambda: len(stored(env, "Secret", "shared")["metadata"]["ownerReferences"]) == 1)
    assert stored(env, "Secret", "shared")["metadata"]["ownerReferences"] == [ref(b)]
    await gc.stop()


async def test_an_owner_reference_whose_uid_does_not_match_is_dangling(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    owner = await c.create(obj("ConfigMap", "owner"))
    stale = dict(ref(owner), uid="00000000-0000-0000-0000-000000000000")  # a previous "owner"
    await c.create(obj("Secret", "orphaned", owners=[stale]))
    await c.create(obj("Secret", "owned", owners=[ref(owner)]))
    assert await env.run_until(lambda: gone(env, "Secret", "orphaned"))
    await env.clock.advance(60)
    assert not gone(env, "Secret", "owned")
    await gc.stop()


async def test_foreground_waits_for_blocking_dependents(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    owner = await c.create(obj("ConfigMap", "owner"))
    await c.create(obj("Secret", "blocker", owners=[ref(owner, block=True)], finalizers=["example.com/hold"]))
    await c.create(obj("Secret", "free", owners=[ref(owner, block=False)]))
    await c.delete("v1", "ConfigMap", "default", "owner", propagation="Foreground")
    assert await env.run_until(lambda: gone(env, "Secret", "free"))
    await env.clock.advance(300)
    held = stored(env, "ConfigMap", "owner")
    assert held is not None and held["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert stored(env, "Secret", "blocker")["metadata"].get("deletionTimestamp")  # deleted, held by its finalizer
    blocker = await c.get("v1", "Secret", "default", "blocker")
    blocker["metadata"]["finalizers"] = []
    await c.update(blocker)
    assert await env.run_until(lambda: gone(env, "ConfigMap", "owner") and gone(env, "Secret", "blocker"))
    await gc.stop()


async def test_foreground_cascades_through_dependents_that_own_things(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    top = await c.create(obj("ConfigMap", "top"))
    middle = await c.create(obj("ConfigMap", "middle", owners=[ref(top, block=True)]))
    await c.create(obj("Secret", "leaf", owners=[ref(middle, block=True)], finalizers=["example.com/hold"]))
    await c.delete("v1", "ConfigMap", "default", "top", propagation="Foreground")
    assert await env.run_until(lambda: (stored(env, "Secret", "leaf") or {}).get("metadata", {}).get("deletionTimestamp"))
    mid = stored(env, "ConfigMap", "middle")
    assert mid["metadata"].get("deletionTimestamp") and "foregroundDeletion" in mid["metadata"]["finalizers"]
    assert not gone(env, "ConfigMap", "top")
    leaf = await c.get("v1", "Secret", "default", "leaf")
    leaf["metadata"]["finalizers"] = []
    await c.update(leaf)
    assert await env.run_until(lambda: all(gone(env, k, n) for k, n in
                                           (("Secret", "leaf"), ("ConfigMap", "middle"), ("ConfigMap", "top"))))
    await gc.stop()


async def test_orphan_removes_the_reference_and_keeps_the_dependents(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    owner = await c.create(obj("ConfigMap", "owner"))
    other = await c.create(obj("ConfigMap", "other-owner"))
    await c.create(obj("Secret", "d1", owners=[ref(owner)]))
    await c.create(obj("Secret", "d2", owners=[ref(owner), ref(other)]))
    await c.delete("v1", "ConfigMap", "default", "owner", propagation="Orphan")
    assert await env.run_until(lambda: gone(env, "ConfigMap", "owner"))
    await env.clock.advance(60)
    assert "ownerReferences" not in stored(env, "Secret", "d1")["metadata"]
    assert stored(env, "Secret", "d2")["metadata"]["ownerReferences"] == [ref(other)]
    await gc.stop()


async def test_a_namespaced_owner_in_another_namespace_does_not_count(env):
    for n in ("default", "a", "b"):
        await env.namespace(n)
    c = env.client
    gc = await start_gc(env)
    owner = await c.create(obj("ConfigMap", "owner", namespace="a"))
    await c.create(obj("Secret", "same-ns", namespace="a", owners=[ref(owner)]))
    await c.create(obj("Secret", "cross-ns", namespace="b", owners=[ref(owner)]))
    assert await env.run_until(lambda: gone(env, "Secret", "cross-ns", "b"))
    await env.clock.advance(60)
    assert not gone(env, "Secret", "same-ns", "a") and not gone(env, "ConfigMap", "owner", "a")
    events, _ = await c.list("v1", "Event", "b")
    assert [(e["type"], e["reason"], e["involvedObject"]["name"]) for e in events] == \
        [("Warning", "OwnerRefInvalidNamespace", "cross-ns")]
    assert events[0]["message"] == (f"ownerRef [v1/ConfigMap, namespace: b, name: owner, "
                                    f"uid: {owner['metadata']['uid']}] does not exist in namespace \"b\"")
    assert events[0]["source"]["component"] == "garbage-collector-controller"
    await gc.stop()


async def test_cluster_scoped_owner_and_cluster_scoped_dependent_rules(env):
    await env.namespace("default")
    c = env.client
    gc = await start_gc(env)
    node = await c.create(obj("Node", "n1"))
    cm_owner = await c.create(obj("ConfigMap", "cm-owner"))
    await c.create(obj("ConfigMap", "on-node", owners=[ref(node)]))
    await c.create(obj("Node", "invalid", owners=[ref(cm_owner)]))  # cluster-scoped, namespaced owner
    await c.delete("v1", "ConfigMap", "default", "cm-owner")
    await c.delete("v1", "Node", None, "n1")
    assert await env.run_until(lambda: gone(env, "ConfigMap", "on-node"))
    await env.clock.advance(600)
    assert not gone(env, "Node", "invalid")  # never collected
    events, _ = await c.list("v1", "Event", "default")
    assert ("OwnerRefInvalidNamespace", "invalid") in {(e["reason"], e["involvedObject"]["name"]) for e in events}
    await gc.stop()


async def test_a_new_collector_finishes_what_happened_while_none_ran(env):
    await env.namespace("default")
    c = env.client
    first = await start_gc(env)
    bg = await c.create(obj("ConfigMap", "bg-owner"))
    fg = await c.create(obj("ConfigMap", "fg-owner"))
    orph = await c.create(obj("ConfigMap", "orphan-owner"))
    await c.create(obj("Secret", "bg-dep", owners=[ref(bg)]))
    await c.create(obj("Secret", "fg-dep", owners=[ref(fg, block=True)]))
    await c.create(obj("Secret", "orphan-dep", owners=[ref(orph)]))
    await env.clock.advance(5)
    await first.stop()

    await c.delete("v1", "ConfigMap", "default", "bg-owner")
    await c.delete("v1", "ConfigMap", "default", "fg-owner", propagation="Foreground")
    await c.delete("v1", "ConfigMap", "default", "orphan-owner", propagation="Orphan")
    await env.clock.advance(60)
    assert not gone(env, "Secret", "bg-dep") and not gone(env, "ConfigMap", "fg-owner")

    second = await start_gc(env)  # fresh informers, fresh graph: everything from lists
    assert await env.run_until(lambda: gone(env, "Secret", "bg-dep") and gone(env, "Secret", "fg-dep")
                               and gone(env, "ConfigMap", "fg-owner") and gone(env, "ConfigMap", "orphan-owner"))
    assert "ownerReferences" not in stored(env, "Secret", "orphan-dep")["metadata"]
    await second.stop()


async def test_collects_every_deletable_kind_but_events(env):
    await env.namespace("default")
    gc = await start_gc(env)
    watched = {(r.group, r.plural) for r in gc.monitored}
    assert {("", "pods"), ("", "configmaps"), ("", "nodes")} <= watched
    assert ("", "events") not in watched and ("events.k8s.io", "events") not in watched
    await gc.stop()
