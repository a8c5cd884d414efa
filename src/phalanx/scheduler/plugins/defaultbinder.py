"""DefaultBinder (Bind): writes the Binding (`POST pods/<name>/binding`) through the client.

Binding is the one API call of a scheduling decision; it runs in the asynchronous binding cycle,
so `bind` here is a coroutine (the scheduler awaits it; see `scheduler.Scheduler._bind`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from phalanx.machinery.errors import StatusError
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import BindPlugin
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import PodInfo

from . import names


class DefaultBinder(BindPlugin):
    NAME = names.DefaultBinder

    def __init__(self, client: Any):
        self.client = client

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:  # type: ignore[override]
        try:
            await self.client.bind(pod.namespace, pod.name, node_name, uid=pod.uid or None)
        except StatusError as e:
            return Status.new(Code.Error, e.message)
        return None


def factory(client: Any):
    def new(args: Optional[Mapping[str, Any]], handle: Any) -> DefaultBinder:
        return DefaultBinder(client)
    return new
