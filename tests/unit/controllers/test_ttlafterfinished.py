"""The TTL-after-finished controller on virtual time against the real API: a finished Job is
deleted (Foreground) `ttlSecondsAfterFinished` after its Complete/Failed condition, and no other Job is."""

from __future__ import annotations

import pytest

from phalanx.client import InformerFactory
from phalanx.controllers.podcontrol import rfc3339
from phalanx.controllers.ttlafterfinished import TTLAfterFinishedController

from .harness import shared_factory


def job(name: str, ttl: int | None) -> dict:
    spec = {"template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "main", "image": "busybox"}]}}}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def finished_status(clock, ctype: str | None, status: str = "True") -> dict:
    now = rfc3339(clock)
    out: dict = {"startTime": now}
    if ctype is None:
        return out
    interim = "SuccessCriteriaMet" if ctype == "Complete" else "FailureTarget"
    out["conditions"] = [{"type": interim, "status": status, "lastTransitionTime": now, "lastProbeTime": now,
                          "reason": "Test", "message": "test"},
                         {"type": ctype, "status": status, "lastTransitionTime": now, "lastProbeTime": now,
                          "reason": "Test", "message": "test"}]
    if ctype == "Complete" and status == "True":
        out["completionTime"] = now
    return out


class Cluster:
    def __init__(self, env):
        env.bootstrap([])
        self.env = env
        self.factory: InformerFactory = shared_factory(env)
        self.ttl = TTLAfterFinishedController(env.client, self.factory, clock=env.clock)

    async def __aenter__(self):
        self.ttl.start()
        assert await self.env.run_until(lambda: self.ttl.synced, within=10)
        return self

    async def __aexit__(self, *exc):
        await self.ttl.stop()
        await self.factory.stop()

    async def finished_job(self, name: str, ttl: int | None, ctype: str | None, status: str = "True") -> None:
        created = await self.env.client.create(job(name, ttl))
        created["status"] = finished_status(self.env.clock, ctype, status)
        await self.env.client.update_status(created)

    def deleting(self, name: str) -> bool:
        """The Job is gone or being deleted in the foreground."""
        current = self.ttl.jobs.get(f"default/{name}")
        return current is None or bool(current["metadata"].get("deletionTimestamp"))


@pytest.mark.parametrize("ttl,ctype,status,deleted_after", [
    (60, "Complete", "True", 60),
    (0, "Failed", "True", 0),
    (30, "Failed", "True", 30),
    (None, "Complete", "True", None),   # no TTL: kept
    (10, None, None, None),             # not finished: kept
    (10, "Complete", "False", None),    # a False condition is not finished
])
async def test_finished_jobs_are_deleted_once_their_ttl_passed(env, ttl, ctype, status, deleted_after):
    async with Cluster(env) as cl:
        await cl.finished_job("j", ttl, ctype, status or "True")
        if deleted_after is None:
            assert not await env.run_until(lambda: cl.deleting("j"), within=600)
            return
        if deleted_after > 0:
            assert not await env.run_until(lambda: cl.deleting("j"), within=deleted_after - 1)
        assert await env.run_until(lambda: cl.deleting("j"), within=5)


async def test_the_deletion_is_foreground(env):
    async with Cluster(env) as cl:
        await cl.finished_job("fg", 0, "Complete")
        assert await env.run_until(lambda: cl.deleting("fg"), within=5)
        current = cl.ttl.jobs.get("default/fg")
        assert current is not None and "foregroundDeletion" in current["metadata"].get("finalizers", [])
