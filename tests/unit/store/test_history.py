"""The watch history is bounded by bytes as well as by events; what leaves it is 410 Gone."""

from __future__ import annotations

import orjson
import pytest

from phalanx.store import MemoryStore, SQLiteStore, StoreGone
from phalanx.store.history import BYTES_ENV, DEFAULT_BYTES, DEFAULT_EVENTS, EVENTS_ENV, Event, WatchHistory


def configmap(name: str, size: int = 0, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", **meta},
            "data": {"blob": "x" * size}}


def event(rv: int, size: int) -> Event:
    return Event("MODIFIED", "core/configmaps", "default", "c", rv, {}, None, size)


@pytest.mark.parametrize("max_events,max_bytes,sizes,kept,oldest_rv", [
    # (bounds, sizes of events rv 1..n) -> rvs kept, oldest resumable rv
    (10, 1000, [100] * 5, [1, 2, 3, 4, 5], 0),
    (10, 250, [100] * 5, [4, 5], 3),  # the byte bound drops the oldest first
    (3, 10_000, [100] * 5, [3, 4, 5], 2),  # the event bound still holds
    (10, 250, [10, 10, 300], [3], 2),  # a single event over the bound stays, alone
    (10, 250, [300, 10, 10], [2, 3], 1),
])
def test_history_drops_the_oldest_events_until_both_bounds_hold(max_events, max_bytes, sizes, kept, oldest_rv):
    h = WatchHistory(max_events, max_bytes)
    for rv, size in enumerate(sizes, start=1):
        h.append(event(rv, size))
    assert [e.rv for e in h] == kept
    assert h.bytes == sum(sizes[rv - 1] for rv in kept) <= max(max_bytes, sizes[-1])
    assert h.oldest_rv == oldest_rv
    assert h.retains(oldest_rv) and not h.retains(oldest_rv - 1)


@pytest.mark.parametrize("env,events,bytes_", [
    ({}, DEFAULT_EVENTS, DEFAULT_BYTES),
    ({EVENTS_ENV: "7", BYTES_ENV: "4096"}, 7, 4096),
])
def test_history_bounds_come_from_the_environment_unless_given(monkeypatch, env, events, bytes_):
    for name in (EVENTS_ENV, BYTES_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    h = WatchHistory()
    assert (h.max_events, h.max_bytes) == (events, bytes_)
    assert (WatchHistory(3, 99).max_events, WatchHistory(3, 99).max_bytes) == (3, 99)


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_a_bad_history_bound_in_the_environment_is_refused(monkeypatch, value):
    monkeypatch.setenv(BYTES_ENV, value)
    with pytest.raises(ValueError, match=BYTES_ENV):
        WatchHistory()


@pytest.fixture(params=["memory", "sqlite"])
def store_factory(request, tmp_path):
    made = []

    def make(**kw):
        s = MemoryStore(**kw) if request.param == "memory" else SQLiteStore(str(tmp_path / "state.db"), **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def test_large_updates_keep_the_history_under_its_byte_bound(store_factory):
    """500 updates of a 100 KB object: the history holds ~10 of them, not 500 (1 MB bound)."""
    s = store_factory(history=400, history_bytes=1_000_000)
    first = s.create("core/configmaps", "default", "big", configmap("big", 100_000))
    for i in range(500):
        s.update("core/configmaps", "default", "big", configmap("big", 100_000, labels={"i": str(i)}))
    size = len(orjson.dumps(s.get("core/configmaps", "default", "big")))
    assert s._history.bytes <= 1_000_000
    assert 1_000_000 // size - 1 <= len(s._history) <= 1_000_000 // size
    with pytest.raises(StoreGone):
        s.watch("core/configmaps", None, from_rv=int(first["metadata"]["resourceVersion"]))
    s.delete("core/configmaps", "default", "big")
    # Once deleted, the big versions leave with the next writes: nothing holds them any more.
    for i in range(400):
        s.create("core/configmaps", "default", f"small-{i}", configmap(f"small-{i}"))
    assert all(len(orjson.dumps(e.object)) < 1000 for e in s._history)


def test_a_watch_resumes_from_any_retained_version_after_byte_eviction(store_factory):
    s = store_factory(history_bytes=20_000)
    rvs = [int(s.create("core/configmaps", "default", f"c{i}", configmap(f"c{i}", 1000))["metadata"]["resourceVersion"])
           for i in range(50)]
    oldest = s.oldest_resource_version
    assert rvs[0] < oldest < rvs[-1]
    w = s.watch("core/configmaps", None, from_rv=oldest)
    assert [e.rv for e in w.drain()] == [rv for rv in rvs if rv > oldest]
    w.close()
    with pytest.raises(StoreGone) as gone:
        s.watch("core/configmaps", None, from_rv=oldest - 1)
    assert gone.value.oldest == oldest + 1
