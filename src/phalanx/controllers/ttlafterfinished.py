"""The TTL-after-finished controller (kube-controller-manager's `ttl-after-finished`), through
`Client`: it deletes (Foreground) finished Jobs whose `ttlSecondsAfterFinished` has passed since
their Complete/Failed condition.

    TTLAfterFinishedController(client, factory, clock=clock).start()
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock
from ..client.informer import InformerFactory, object_key, split_key
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..client.controller import Controller
from .job.conditions import finish_time, is_job_finished

Obj = dict[str, Any]


class TTLAfterFinishedController(Controller[str]):
    """Deletes finished Jobs `ttlSecondsAfterFinished` after their Complete/Failed condition."""

    name = "ttl-after-finished"
    workers = 5  # --concurrent-ttl-after-finished-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.jobs = self.informer("batch/v1", "Job")
        self.jobs.add_event_handler(on_add=self._maybe_enqueue, on_update=lambda o, n: self._maybe_enqueue(n))

    @staticmethod
    def _needs_cleanup(job: Obj) -> bool:
        return (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and is_job_finished(job) \
            and not job["metadata"].get("deletionTimestamp")

    def _maybe_enqueue(self, job: Obj) -> None:
        if self._needs_cleanup(job):
            self.enqueue(object_key(job))

    def _time_left(self, job: Obj) -> float | None:
        done = finish_time(job)
        if done is None:
            return None
        return done + job["spec"]["ttlSecondsAfterFinished"] - self.clock.now()

    async def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or not self._needs_cleanup(job):
            return
        left = self._time_left(job)
        if left is None:
            return
        if left > 0:
            self.enqueue_after(key, left)
            return
        ns, name = split_key(key)
        try:
            fresh = await self.client.get("batch/v1", "Job", ns, name)
        except StatusError as e:
            if e.code == 404:
                return
            raise
        if not self._needs_cleanup(fresh):
            return
        left = self._time_left(fresh)
        if left is None:
            return
        if left > 0:
            self.enqueue_after(key, left)
            return
        try:
            await self.client.delete("batch/v1", "Job", ns, name, propagation="Foreground",
                                     preconditions={"resourceVersion": fresh["metadata"].get("resourceVersion")})
        except StatusError as e:
            if e.code != 404:
                raise
