"""The scheduler's API writes about pods, and the runner that takes API calls off the cycle.

    calls = BackgroundCalls()
    calls.spawn(write_pod_unschedulable(client, clock, pod, "Unschedulable", message))
    await calls.wait_idle()                          # tests and benchmarks

Every write tolerates a pod that is already gone (404), as upstream's status updates do.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Coroutine, Any

from phalanx.client.clock import Clock, to_datetime
from phalanx.client.interface import Client
from phalanx.machinery.errors import StatusError
from phalanx.machinery.timestamps import now_rfc3339

from .framework.constants import Obj

log = logging.getLogger("phalanx.scheduler")

STRATEGIC_MERGE = "application/strategic-merge-patch+json"


class BackgroundCalls:
    """Tasks the scheduler does not wait for in the cycle: binding cycles and API writes."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task] = set()

    def spawn(self, call: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(call)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def wait_idle(self) -> None:
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    def cancel_all(self) -> None:
        for t in list(self.tasks):
            t.cancel()


def timestamp(clock: Clock) -> str:
    """Now on the scheduler's clock, as an RFC 3339 time for conditions."""
    return now_rfc3339(to_datetime(clock.now()))


async def patch_pod_status(client: Client, pod: Obj, patch: dict) -> None:
    md = pod["metadata"]
    try:
        await client.patch("v1", "Pod", md.get("namespace", ""), md["name"], patch,
                           patch_type=STRATEGIC_MERGE, subresource="status")
    except StatusError as e:
        if e.code != 404:
            log.warning("updating status of pod %s/%s: %s", md.get("namespace"), md["name"], e.message)


async def write_pod_unschedulable(client: Client, clock: Clock, pod: Obj, reason: str, message: str,
                                  nominated: str = "") -> None:
    """PodScheduled=False with `reason` (and `status.nominatedNodeName`), unless the pod says so already."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == reason \
                and c.get("message") == message and not nominated:
            return
    patch: dict = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": reason,
                                              "message": message, "lastProbeTime": None,
                                              "lastTransitionTime": timestamp(clock)}]}}
    if nominated:
        patch["status"]["nominatedNodeName"] = nominated
    await patch_pod_status(client, pod, patch)


def conditions_with(obj: Obj, cond: dict) -> list[dict]:
    """`obj`'s conditions with `cond` in place of the one of its type: the whole list, so a status
    patch keeps the others even where the API knows no merge key for `conditions`."""
    others = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") != cond["type"]]
    return others + [cond]


async def evict_pod(client: Client, clock: Clock, victim: Obj, message: str, preemptor_type: str = "pod") -> None:
    """Preemption's eviction: DisruptionTarget=True (PreemptionByScheduler), delete with the
    victim's uid as precondition, and a `Preempted` event on the victim. `preemptor_type` is
    upstream's word for the preemptor: `pod`, or `podgroup` for workload-aware preemption."""
    md = victim["metadata"]
    cond = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": f"default-scheduler: preempting to accommodate a higher priority {preemptor_type}",
            "lastTransitionTime": timestamp(clock)}
    await patch_pod_status(client, victim, {"status": {"conditions": [cond]}})
    try:
        await client.delete("v1", "Pod", md.get("namespace", ""), md["name"], preconditions={"uid": md.get("uid")})
    except StatusError as e:
        if e.code not in (404, 409):
            raise
    await client.create_event(victim, "Preempted", message, type="Normal", component="default-scheduler")
