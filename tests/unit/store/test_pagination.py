"""Paginated lists are snapshots: every page reads the first page's resourceVersion.

Table-driven cases for the snapshot reads of the store, the 20,000-object list paged while another
thread creates and deletes, what happens when the snapshot leaves the history (410 with a token
that continues at the current state), and a hypothesis run of random writes between page reads.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.apiserver import build_api
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.errors import StatusError
from phalanx.store import MemoryStore, SQLiteStore, StoreGone, StoreNotFound, StoreTooNew

KEY = "core/configmaps"


def lister(store):
    """`list(namespace, **options)` through the API, as the HTTP server and clients call it."""
    api = build_api(store, FeatureGates())
    rt = api.resource("", "v1", "configmaps")

    def list_(namespace=None, **options):
        lst = api.list(rt, namespace, **options)
        return lst["items"], lst["metadata"]
    return list_


def cm(name: str, namespace: str = "default", v: int = 0) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": str(v)}}


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request, tmp_path):
    made = []

    def make(**kw):
        path = str(tmp_path / f"state-{len(made)}.db")
        s = MemoryStore(**kw) if request.param == "memory" else SQLiteStore(path, **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def keys(objs) -> list[tuple[str, str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"], o["data"]["v"]) for o in objs]


def read_all(store, namespace=None, limit=2):
    """Page through a list as a client does; returns (objects, every page's metadata)."""
    list_ = lister(store)
    items, metas, token = [], [], None
    while True:
        page, meta = list_(namespace, limit=limit, continue_token=token)
        items += page
        metas.append(meta)
        token = meta.get("continue")
        if not token:
            return items, metas


# -- the store's snapshot reads ------------------------------------------------------------------
WRITES = [  # what happens after the snapshot is taken
    ("update", "default", "b", 1),
    ("delete", "default", "c", 0),
    ("create", "default", "bb", 0),
    ("create", "a-ns", "z", 0),
    ("delete", "default", "a", 0),
    ("create", "default", "a", 5),  # deleted and created again: the snapshot still has the first
]


def apply(store, op, ns, name, v):
    if op == "create":
        store.create(KEY, ns, name, cm(name, ns, v))
    elif op == "update":
        store.update(KEY, ns, name, cm(name, ns, v))
    else:
        store.delete(KEY, ns, name)


@pytest.mark.parametrize("namespace,after,expected", [
    (None, None, [("default", "a", "0"), ("default", "b", "0"), ("default", "c", "0"), ("other", "d", "0")]),
    ("default", None, [("default", "a", "0"), ("default", "b", "0"), ("default", "c", "0")]),
    ("default", ("default", "a"), [("default", "b", "0"), ("default", "c", "0")]),
    ("default", ("a-ns", "zz"), [("default", "a", "0"), ("default", "b", "0"), ("default", "c", "0")]),
    ("default", ("default", "c"), []),
    ("other", ("default", "b"), [("other", "d", "0")]),
    ("default", ("other", "a"), []),
    (None, ("default", "bb"), [("default", "c", "0"), ("other", "d", "0")]),
])
def test_a_snapshot_reads_the_bucket_as_it_was(make_store, namespace, after, expected):
    s = make_store()
    for ns, name in [("default", "a"), ("default", "b"), ("default", "c"), ("other", "d")]:
        s.create(KEY, ns, name, cm(name, ns))
    rv = s.resource_version
    for w in WRITES:
        apply(s, *w)
    with s.snapshot(KEY, namespace, rv) as snap:
        assert snap.rv == rv
        assert keys(snap.items_after(after)) == expected
        assert snap.count_after(after) == len(expected)
    with s.snapshot(KEY, namespace) as now:
        assert now.rv == s.resource_version
        assert keys(now.items_after(after)) == keys(o for o in s.list(KEY, namespace)[0]
                                                    if after is None or (o["metadata"]["namespace"],
                                                                         o["metadata"]["name"]) > after)


def test_a_snapshot_outside_the_history_or_ahead_of_the_store_is_refused(make_store):
    s = make_store(history=3)
    for i in range(6):
        s.create(KEY, "default", f"c{i}", cm(f"c{i}"))
    with pytest.raises(StoreGone), s.snapshot(KEY, None, 2):
        pass
    with s.snapshot(KEY, None, 3) as snap:
        assert len(list(snap.items_after())) == 3
    with pytest.raises(StoreTooNew), s.snapshot(KEY, None, s.resource_version + 1):
        pass


# -- 20,000 objects paged while another thread writes --------------------------------------------
def test_paging_20000_objects_during_creates_and_deletes_returns_the_first_pages_snapshot(make_store):
    s = make_store()
    for i in range(20_000):
        s.create(KEY, "default", f"cm-{i:05d}", cm(f"cm-{i:05d}"))
    log: list[tuple[int, str, str]] = []  # (rv, op, name) of every write the other thread made
    first_page_read, stop = threading.Event(), threading.Event()

    def writer():
        rnd = random.Random(7)
        n = 0
        first_page_read.wait(10)
        while not stop.is_set() and len(log) < 10_000:
            if rnd.random() < 0.5:
                name = f"new-{n:05d}" if rnd.random() < 0.5 else f"cm-{n:05d}x"
                n += 1
                rv = s.create(KEY, "default", name, cm(name))["metadata"]["resourceVersion"]
                log.append((int(rv), "create", name))
            else:
                name = f"cm-{rnd.randrange(20_000):05d}"
                try:
                    rv = s.delete(KEY, "default", name)["metadata"]["resourceVersion"]
                except StoreNotFound:  # deleted already
                    continue
                log.append((int(rv), "delete", name))

    t = threading.Thread(target=writer)
    t.start()
    list_ = lister(s)
    items, metas, token = [], [], None
    try:
        while True:
            page, meta = list_(limit=500, continue_token=token)
            items += page
            metas.append(meta)
            first_page_read.set()
            token = meta.get("continue")
            if not token:
                break
            time.sleep(0.001)  # the client's round trip: the writer runs meanwhile
    finally:
        stop.set()
        t.join()
    first_rv = int(metas[0]["resourceVersion"])
    expected = {f"cm-{i:05d}" for i in range(20_000)}
    for rv, op, name in sorted(log):
        if rv <= first_rv:
            (expected.add if op == "create" else expected.discard)(name)
    names = [o["metadata"]["name"] for o in items]
    assert sum(rv > first_rv for rv, _, _ in log) > 100  # the writes did overlap the pages
    assert names == sorted(expected)
    assert {m["resourceVersion"] for m in metas} == {str(first_rv)}
    assert [m.get("remainingItemCount") for m in metas[:-1]] == \
        [len(expected) - 500 * (i + 1) for i in range(len(metas) - 1)]


def test_a_page_whose_snapshot_left_the_history_is_410_with_a_token_for_the_current_state(make_store):
    s = make_store(history=10)
    for i in range(6):
        s.create(KEY, "default", f"c{i}", cm(f"c{i}"))
    list_ = lister(s)
    page, meta = list_(limit=2)
    assert [o["metadata"]["name"] for o in page] == ["c0", "c1"]
    for i in range(12):  # more writes than the history keeps
        s.update(KEY, "default", "c5", cm("c5", v=i))
    s.create(KEY, "default", "c3a", cm("c3a"))
    with pytest.raises(StatusError) as err:
        list_(limit=2, continue_token=meta["continue"])
    status = err.value.status()
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old to display a consistent "
                                        "list result. You can start a new list without the continue parameter, "
                                        "or use the continue token in this response")
    rest, _ = read_all_from(s, status["metadata"]["continue"])
    assert keys(rest) == [("default", "c2", "0"), ("default", "c3", "0"), ("default", "c3a", "0"),
                          ("default", "c4", "0"), ("default", "c5", "11")]


def read_all_from(store, token):
    list_ = lister(store)
    items, metas = [], []
    while token:
        page, meta = list_(limit=2, continue_token=token)
        items += page
        metas.append(meta)
        token = meta.get("continue")
    return items, metas


@pytest.mark.parametrize("limit,rv,match,outcome", [
    (2, "{old}", "", "old"),  # a limit with a resourceVersion reads exactly it (upstream's legacy rule)
    (0, "{old}", "Exact", "old"),
    (0, "{old}", "NotOlderThan", "now"),
    (0, "{old}", "", "now"),
    (0, "0", "", "now"),
    (2, "0", "", "now"),
    (0, "{gone}", "Exact", 410),
    (0, "{ahead}", "NotOlderThan", 504),
    (0, "{ahead}", "", 504),
    (3, "{ahead}", "", 504),
    (0, "{ahead}", "Exact", 504),
])
def test_which_resource_version_a_list_reads(limit, rv, match, outcome):
    s = MemoryStore(history=4)
    for i in range(6):
        s.create(KEY, "default", f"c{i}", cm(f"c{i}"))
    old = s.resource_version - 1  # before c5
    values = {"old": old, "gone": 1, "ahead": s.resource_version + 5}
    list_ = lister(s)
    opts = dict(limit=limit, resource_version=rv.format(**values), resource_version_match=match)
    if isinstance(outcome, int):
        with pytest.raises(StatusError) as err:
            list_(**opts)
        assert err.value.code == outcome
        if outcome == 504:
            assert err.value.status()["details"] == {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1}
            assert err.value.message.startswith("Timeout: Too large resource version: ")
        else:
            assert err.value.message == "The resourceVersion for the provided list is too old."
        return
    items, meta = list_(**opts)
    names = [o["metadata"]["name"] for o in items]
    if outcome == "old":
        assert meta["resourceVersion"] == str(old) and "c5" not in names
    else:
        assert meta["resourceVersion"] == str(s.resource_version) and "c5" in names[:limit or None] + ["c5"]


# -- random writes between page reads --------------------------------------------------------------
NAMES = [f"{ns}/{n}" for ns in ("a", "b") for n in ("p", "q", "r", "s", "t")]
step = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES)),
    st.tuples(st.just("page"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("scope"), st.sampled_from([None, "a", "b"])),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=60), st.integers(min_value=4, max_value=60))
def test_random_writes_between_pages_never_change_a_lists_snapshot(steps, history):
    s = MemoryStore(history=history)
    list_ = lister(s)
    model: dict[tuple[str, str], str] = {}  # the current state: key -> resourceVersion
    listing_state = None  # (namespace, expected keys and versions, items so far, token, rv)
    namespace = None
    for kind, arg in steps:
        if kind == "scope" and listing_state is None:
            namespace = arg
        elif kind == "write":
            ns, name = arg.split("/")
            if (ns, name) not in model:
                model[(ns, name)] = s.create(KEY, ns, name, cm(name, ns))["metadata"]["resourceVersion"]
            elif len(model) % 2:
                model[(ns, name)] = s.update(KEY, ns, name, cm(name, ns, v=s.resource_version))[
                    "metadata"]["resourceVersion"]
            else:
                s.delete(KEY, ns, name)
                del model[(ns, name)]
        elif kind == "page":
            if listing_state is None:
                expected = sorted((k, v) for k, v in model.items() if namespace is None or k[0] == namespace)
                listing_state = (namespace, expected, [], None, None)
            ns, expected, got, token, rv = listing_state
            try:
                page, meta = list_(ns, limit=arg, continue_token=token)
            except StatusError as e:
                assert e.code == 410 and s.oldest_resource_version > int(rv)
                listing_state = None
                continue
            assert rv is None or meta["resourceVersion"] == rv
            got = got + [((o["metadata"]["namespace"], o["metadata"]["name"]), o["metadata"]["resourceVersion"])
                         for o in page]
            if meta.get("continue"):
                assert meta["remainingItemCount"] == len(expected) - len(got)
                listing_state = (ns, expected, got, meta["continue"], meta["resourceVersion"])
            else:
                assert got == expected
                listing_state = None
