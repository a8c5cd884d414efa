"""The store: resourceVersions, optimistic concurrency, watch resume and 410, SQLite durability."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from phalanx.store import MemoryStore, SQLiteStore, StoreAlreadyExists, StoreConflict, StoreGone, StoreNotFound


def pod(name, **extra):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **extra}


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    if request.param == "memory":
        s = MemoryStore()
    else:
        s = SQLiteStore(str(tmp_path / "state.db"))
    yield s
    s.close()


def test_resource_versions_increase_across_kinds(store):
    a = store.create("core/pods", "default", "a", pod("a"))
    b = store.create("core/configmaps", "default", "b", {"metadata": {"name": "b"}})
    a2 = store.update("core/pods", "default", "a", pod("a", spec={"x": 1}))
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, b, a2)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_create_twice_and_missing_objects(store):
    store.create("core/pods", "default", "a", pod("a"))
    with pytest.raises(StoreAlreadyExists):
        store.create("core/pods", "default", "a", pod("a"))
    with pytest.raises(StoreNotFound):
        store.update("core/pods", "default", "zz", pod("zz"))
    with pytest.raises(StoreNotFound):
        store.delete("core/pods", "default", "zz")


def test_stale_resource_version_conflicts(store):
    a = store.create("core/pods", "default", "a", pod("a"))
    rv = a["metadata"]["resourceVersion"]
    store.update("core/pods", "default", "a", pod("a", spec={"v": 1}), expected_rv=rv)
    with pytest.raises(StoreConflict):
        store.update("core/pods", "default", "a", pod("a", spec={"v": 2}), expected_rv=rv)


def test_list_is_sorted_and_namespaced(store):
    for ns, name in [("b", "x"), ("a", "y"), ("a", "x")]:
        store.create("core/pods", ns, name, {"metadata": {"name": name, "namespace": ns}})
    items, rv = store.list("core/pods")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items] == [("a", "x"), ("a", "y"), ("b", "x")]
    assert [o["metadata"]["name"] for o in store.list("core/pods", "a")[0]] == ["x", "y"]
    assert rv == store.resource_version


def test_watch_resumes_from_a_resource_version(store):
    a = store.create("core/pods", "default", "a", pod("a"))
    store.update("core/pods", "default", "a", pod("a", spec={"v": 1}))
    store.delete("core/pods", "default", "a")
    w = store.watch("core/pods", None, from_rv=int(a["metadata"]["resourceVersion"]))
    assert [e.type for e in w.drain()] == ["MODIFIED", "DELETED"]
    store.create("core/pods", "default", "b", pod("b"))
    assert [(e.type, e.name) for e in w.drain()] == [("ADDED", "b")]
    w.close()


def test_watch_initial_events_and_namespace_filter(store):
    store.create("core/pods", "default", "a", pod("a"))
    store.create("core/pods", "other", "b", {"metadata": {"name": "b", "namespace": "other"}})
    w = store.watch("core/pods", "default", initial=True)
    assert [(e.type, e.name) for e in w.drain()] == [("ADDED", "a")]
    store.create("core/pods", "other", "c", {"metadata": {"name": "c", "namespace": "other"}})
    assert w.drain() == []
    w.close()


def test_watch_from_compacted_version_is_gone():
    s = MemoryStore(history=3)
    for i in range(10):
        s.create("core/pods", "default", f"p{i}", pod(f"p{i}"))
    with pytest.raises(StoreGone):
        s.watch("core/pods", None, from_rv=2)
    s.watch("core/pods", None, from_rv=8).close()


def test_watcher_wakes_an_awaiting_consumer():
    s = MemoryStore()

    async def scenario():
        w = s.watch("core/pods", None, from_rv=s.resource_version)
        waiter = asyncio.ensure_future(w.wait(5))
        await asyncio.sleep(0)
        s.create("core/pods", "default", "a", pod("a"))
        assert await waiter is True
        assert [e.name for e in w.drain()] == ["a"]
        assert await w.wait(0.01) is False
        w.close()

    asyncio.run(scenario())


def test_sqlite_restart_keeps_objects_and_resource_versions(tmp_path):
    path = str(tmp_path / "state.db")
    s = SQLiteStore(path)
    s.create("core/pods", "default", "a", pod("a"))
    b = s.create("core/pods", "default", "b", pod("b"))
    s.delete("core/pods", "default", "a")
    last = s.resource_version
    s.close()
    s2 = SQLiteStore(path)
    assert s2.get("core/pods", "default", "a") is None
    assert s2.get("core/pods", "default", "b")["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"]
    assert s2.resource_version == last
    c = s2.create("core/pods", "default", "c", pod("c"))
    assert int(c["metadata"]["resourceVersion"]) == last + 1
    # History does not survive a restart: an old watch must relist.
    with pytest.raises(StoreGone):
        s2.watch("core/pods", None, from_rv=1)
    s2.close()


def test_sqlite_kill_9_loses_no_acknowledged_write(tmp_path):
    """A writer process is SIGKILLed mid-stream; every write it acknowledged is on disk."""
    path = str(tmp_path / "state.db")
    script = textwrap.dedent(f"""
        import sys
        from phalanx.store import SQLiteStore
        s = SQLiteStore({path!r})
        i = 0
        while True:
            s.create("core/pods", "default", f"p{{i}}", {{"metadata": {{"name": f"p{{i}}"}}}})
            print(i, flush=True)  # acknowledged
            i += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    acked = -1
    for line in proc.stdout:
        acked = int(line)
        if acked >= 300:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    s = SQLiteStore(path)
    names = {o["metadata"]["name"] for o in s.list("core/pods")[0]}
    assert {f"p{i}" for i in range(acked + 1)} <= names
    s.close()


def test_store_checks_catch_a_shared_object_changed_in_place(monkeypatch):
    # Informers hold the store's own objects: changing one in place would change the store
    # behind its back. Under PHALANX_STORE_CHECKS the next write of that object says so.
    from phalanx.store.base import SharedObjectModified
    from phalanx.store.memory import MemoryStore
    monkeypatch.setenv("PHALANX_STORE_CHECKS", "1")
    s = MemoryStore()
    shared = s.create("pods", "ns", "p", {"metadata": {"name": "p"}, "spec": {"nodeName": ""}})
    shared["spec"]["nodeName"] = "n1"  # a careless consumer
    with pytest.raises(SharedObjectModified, match="pods ns/p was modified in place"):
        s.update("pods", "ns", "p", {"metadata": {"name": "p"}, "spec": {"nodeName": "n2"}})
    fresh = s.create("pods", "ns", "q", {"metadata": {"name": "q"}})
    with pytest.raises(SharedObjectModified, match="must store a new object"):
        s.update("pods", "ns", "q", fresh)


def test_sqlite_writes_on_a_running_loop_commit_together_before_flushed_returns(tmp_path):
    path = str(tmp_path / "state.db")

    async def scenario():
        s = SQLiteStore(path)
        commits = s.commits
        for i in range(50):
            s.create("core/pods", "default", f"p{i}", pod(f"p{i}"))
        s.delete("core/pods", "default", "p0")
        assert s.get("core/pods", "default", "p1") is not None  # seen in memory at once
        await s.flushed()
        assert s.commits == commits + 1  # one transaction for the whole pass
        other = SQLiteStore(path)  # what a restart would read
        names = {o["metadata"]["name"] for o in other.list("core/pods")[0]}
        assert names == {f"p{i}" for i in range(1, 50)}
        assert other.resource_version == s.resource_version
        other.close()
        s.close()

    asyncio.run(scenario())


def test_sqlite_kill_9_loses_no_write_acknowledged_after_flushed(tmp_path):
    """The control plane's way: writes on a running loop, acknowledged once `flushed()` returns."""
    path = str(tmp_path / "state.db")
    script = textwrap.dedent(f"""
        import asyncio
        from phalanx.store import SQLiteStore

        async def main():
            s = SQLiteStore({path!r})
            i = 0
            while True:
                for _ in range(7):
                    s.create("core/pods", "default", f"p{{i}}", {{"metadata": {{"name": f"p{{i}}"}}}})
                    i += 1
                await s.flushed()
                print(i - 1, flush=True)  # acknowledged

        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    acked = -1
    for line in proc.stdout:
        acked = int(line)
        if acked >= 300:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    s = SQLiteStore(path)
    names = {o["metadata"]["name"] for o in s.list("core/pods")[0]}
    assert {f"p{i}" for i in range(acked + 1)} <= names
    s.close()
