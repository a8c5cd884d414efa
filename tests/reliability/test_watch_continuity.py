"""Watch continuity: a watch from a resourceVersion delivers every event after it, once each and in
order, whether replayed from the history or delivered live; after a kill -9 and a restart, a watch
resumed from the last resourceVersion it saw either continues with everything after it or is told
410 Expired (the history starts again at the restart), and never silently skips a write.

What phalanx does after a restart: the watch history starts empty at the newest resourceVersion
in the store (H). A resume from H or later continues; a resume from before H is 410 Expired with
"too old resource version: R (H+1)", and the client relists (as every client-go reflector does).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time

import pytest

from .conftest import Cluster, create_cluster, kill_9, open_watch, python_client, restart

OBJECTS = 100  # each is created and patched, every other one deleted: 250 writes
WATCH_TIMEOUT_SECONDS = 60
SENTINEL = "done"


def _configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": "0"}}


def _read_events(c: Cluster, path: str, until: str | None, events: list[dict]) -> None:
    """Append the watch's events to `events` until an ADDED of `until` (or the stream ends)."""
    status, resp = open_watch(c, path)
    assert status == 200, resp.read()
    with resp:
        try:
            for line in resp:
                event = json.loads(line)
                events.append(event)
                if event["type"] == "ADDED" and event["object"]["metadata"]["name"] == until:
                    return
        except (http.client.HTTPException, OSError):  # the server died under the stream
            return


def _triples(events: list[dict], names: set[str]) -> list[tuple[str, str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
            for e in events if e["object"]["metadata"]["name"] in names]


def _assert_in_order_once(events: list[dict]) -> None:
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events if e["type"] != "BOOKMARK"]
    assert rvs == sorted(set(rvs)), "resourceVersions not strictly increasing: a duplicate or a reordering"


def test_watch_from_a_resource_version_delivers_every_event_once_in_order(cluster: Cluster, ns: str):
    api = python_client(cluster)
    rv0 = api.list_namespaced_config_map(ns).metadata.resource_version
    path = f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv0}&timeoutSeconds={WATCH_TIMEOUT_SECONDS}"
    live: list[dict] = []
    reader = threading.Thread(target=_read_events, args=(cluster, path, SENTINEL, live), daemon=True)
    reader.start()

    expected: list[tuple[str, str, str | None]] = []  # (type, name, rv); a delete's rv is checked by order
    for i in range(OBJECTS):
        name = f"cm-{i}"
        created = api.create_namespaced_config_map(ns, _configmap(name))
        expected.append(("ADDED", name, created.metadata.resource_version))
        patched = api.patch_namespaced_config_map(name, ns, {"data": {"v": "1"}})
        expected.append(("MODIFIED", name, patched.metadata.resource_version))
        if i % 2 == 0:
            api.delete_namespaced_config_map(name, ns)
            expected.append(("DELETED", name, None))
    done = api.create_namespaced_config_map(ns, _configmap(SENTINEL))
    expected.append(("ADDED", SENTINEL, done.metadata.resource_version))
    reader.join(WATCH_TIMEOUT_SECONDS)
    assert not reader.is_alive(), f"the live watch stopped after {len(live)} events"

    names = {name for _, name, _ in expected}
    replayed: list[dict] = []
    _read_events(cluster, path, SENTINEL, replayed)  # after the writes: all from the history
    middle = expected[len(expected) // 2]
    assert middle[2] is not None
    from_middle: list[dict] = []
    _read_events(cluster, path.replace(f"resourceVersion={rv0}", f"resourceVersion={middle[2]}"), SENTINEL,
                 from_middle)

    for events, want in ((live, expected), (replayed, expected),
                         (from_middle, expected[len(expected) // 2 + 1:])):
        _assert_in_order_once(events)
        got = _triples(events, names)
        assert [(t, n) for t, n, _ in got] == [(t, n) for t, n, _ in want]
        assert [rv for (_, _, rv), (_, _, w) in zip(got, want) if w is not None] == \
               [w for _, _, w in want if w is not None]


@pytest.fixture
def restartable(tmp_path):
    c = create_cluster(tmp_path, "watched")
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def _write_until_failure(c: Cluster, acked: dict[str, str], stop: threading.Event) -> None:
    api = python_client(c)
    i = 0
    try:
        while not stop.is_set():
            got = api.create_namespaced_config_map("default", _configmap(f"pre-{i}"), _request_timeout=10)
            acked[got.metadata.name] = got.metadata.resource_version
            i += 1
    except Exception:  # the kill
        return


def test_watch_resumed_after_kill_9_continues_or_is_expired_and_skips_nothing(restartable: Cluster):
    c = restartable
    api = python_client(c)
    rv0 = api.list_namespaced_config_map("default").metadata.resource_version
    acked: dict[str, str] = {}
    seen: list[dict] = []
    stop = threading.Event()
    watch_path = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=60&resourceVersion="
    watcher = threading.Thread(target=_read_events, args=(c, watch_path + rv0, None, seen), daemon=True)
    writer = threading.Thread(target=_write_until_failure, args=(c, acked, stop), daemon=True)
    watcher.start()
    writer.start()
    deadline = time.monotonic() + 30
    while len(acked) < 40:
        assert time.monotonic() < deadline and writer.is_alive()
        time.sleep(0.02)
    kill_9(c)  # while the writer writes and the watcher reads
    stop.set()
    writer.join(30)
    watcher.join(30)
    assert not writer.is_alive() and not watcher.is_alive()
    _assert_in_order_once(seen)
    last_seen = seen[-1]["object"]["metadata"]["resourceVersion"]

    restart(c)
    for i in range(10):
        got = api.create_namespaced_config_map("default", _configmap(f"post-{i}"))
        acked[got.metadata.name] = got.metadata.resource_version
    status, resp = open_watch(c, watch_path.replace("timeoutSeconds=60", "timeoutSeconds=10") + last_seen)
    if status == 200:  # continues: everything after last_seen, the writes before the kill included
        resumed: list[dict] = []
        with resp:
            for line in resp:
                resumed.append(json.loads(line))
                if resumed[-1]["object"]["metadata"]["name"] == "post-9":
                    break
        _assert_in_order_once(seen + resumed)
        delivered = {e["object"]["metadata"]["name"]: e["object"]["metadata"]["resourceVersion"]
                     for e in seen + resumed if e["type"] == "ADDED"}
        assert {n: delivered.get(n) for n in acked} == acked
    else:  # expired: the restart's history starts after last_seen; the relist has every write
        body = json.loads(resp.read())
        assert (status, body["kind"], body["reason"]) == (410, "Status", "Expired"), body
        m = re.fullmatch(r"too old resource version: (\d+) \((\d+)\)", body["message"])
        assert m and m.group(1) == last_seen and int(m.group(2)) > int(last_seen) + 1, body["message"]
        listed = {cm.metadata.name: cm.metadata.resource_version
                  for cm in api.list_namespaced_config_map("default").items}
        assert {n: listed.get(n) for n in acked} == acked
    # A resume from the list's resourceVersion after the restart always continues.
    head = api.list_namespaced_config_map("default").metadata.resource_version
    api.create_namespaced_config_map("default", _configmap(SENTINEL))
    after: list[dict] = []
    _read_events(c, watch_path + head, SENTINEL, after)
    assert [e["object"]["metadata"]["name"] for e in after] == [SENTINEL]
