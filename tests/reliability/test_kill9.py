"""kill -9 of the control plane while several clients write: after a restart every acknowledged
write is there, with the resourceVersion and data its acknowledgement carried."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from .conftest import Cluster, create_cluster, kill_9, python_client, restart

CLIENTS = 4
# Acknowledged writes to wait for before the kill (the clients keep writing while it lands).
WRITES_BEFORE_KILL = 80
WRITE_BOUND_SECONDS = 60


@dataclass
class Written:
    """What one client knows of one of its ConfigMaps."""
    acked_rv: str | None = None  # resourceVersion of the last acknowledged write
    acked_data: dict | None = None
    in_flight: dict | None = None  # data of a write sent but not acknowledged when the server died


@dataclass
class ClientLog:
    objects: dict[str, Written] = field(default_factory=dict)
    acked: int = 0
    error: BaseException | None = None


def _write_until_failure(c: Cluster, client_id: int, log: ClientLog, stop: threading.Event) -> None:
    """Create a ConfigMap, patch it, next one; stop at the first failed request (the server died)."""
    api = python_client(c)
    k = 0
    try:
        while not stop.is_set():
            name = f"c{client_id}-{k}"
            w = log.objects.setdefault(name, Written())
            for step, data in enumerate(({"v": "created"}, {"v": "patched"})):
                w.in_flight = data
                if step == 0:
                    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
                    got = api.create_namespaced_config_map("default", body, _request_timeout=10)
                else:
                    got = api.patch_namespaced_config_map(name, "default", {"data": data}, _request_timeout=10)
                w.acked_rv, w.acked_data, w.in_flight = got.metadata.resource_version, dict(got.data), None
                log.acked += 1
            k += 1
    except Exception as e:  # the kill: connection refused or reset
        log.error = e


@pytest.fixture
def killable(tmp_path):
    c = create_cluster(tmp_path, "killed")
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def _write_until_killed(c: Cluster) -> list[ClientLog]:
    """CLIENTS clients write until WRITES_BEFORE_KILL are acknowledged; then kill -9 under them."""
    logs = [ClientLog() for _ in range(CLIENTS)]
    stop = threading.Event()
    threads = [threading.Thread(target=_write_until_failure, args=(c, i, logs[i], stop), daemon=True)
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + WRITE_BOUND_SECONDS
    while sum(log.acked for log in logs) < WRITES_BEFORE_KILL:
        assert time.monotonic() < deadline, [log.error for log in logs]
        assert all(t.is_alive() for t in threads), [log.error for log in logs]
        time.sleep(0.02)
    kill_9(c)
    stop.set()
    for t in threads:
        t.join(WRITE_BOUND_SECONDS)
    assert all(log.error is not None for log in logs), "every client was writing when the server died"
    return logs


def _assert_kept(name: str, w: Written, stored: dict) -> None:
    """The stored object agrees with what its client was told (and with a write lost in flight)."""
    if w.acked_rv is None:  # its create never came back: it may or may not exist
        assert name not in stored or stored[name].data == w.in_flight, name
        return
    assert name in stored, f"acknowledged {name} (rv {w.acked_rv}) lost"
    got = stored[name]
    if w.in_flight is None:
        assert (got.metadata.resource_version, got.data) == (w.acked_rv, w.acked_data), name
        return
    # the patch in flight at the kill may have been committed before its answer was lost
    assert got.data in (w.acked_data, w.in_flight), name
    assert int(got.metadata.resource_version) >= int(w.acked_rv), name
    if got.data == w.acked_data:
        assert got.metadata.resource_version == w.acked_rv, name


def test_kill_9_during_concurrent_writes_loses_no_acknowledged_write(killable: Cluster):
    logs = _write_until_killed(killable)
    restart(killable)
    api = python_client(killable)
    stored = {cm.metadata.name: cm for cm in api.list_namespaced_config_map("default").items}
    written = {name: w for log in logs for name, w in log.objects.items()}
    assert set(stored) - {"kube-root-ca.crt"} <= set(written), "an object nobody wrote"
    for name, w in written.items():
        _assert_kept(name, w, stored)
    acked_rvs = [int(w.acked_rv) for w in written.values() if w.acked_rv]
    assert len(acked_rvs) >= WRITES_BEFORE_KILL // 2
    # and the restarted server takes writes again, after every one it acknowledged before
    after = api.create_namespaced_config_map(
        "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-restart"}})
    assert int(after.metadata.resource_version) > max(acked_rvs)
