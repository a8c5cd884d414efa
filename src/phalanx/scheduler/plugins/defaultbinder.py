"""DefaultBinder (Bind): writes the Binding (`POST pods/<name>/binding`) through the client.

Binding is the one API call of a scheduling decision; it runs in the asynchronous binding cycle,
so `bind` here is a coroutine (the framework's `run_bind_plugins` awaits it). The client is the
Handle's.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from phalanx.machinery.errors import StatusError
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.client.interface import Client
from phalanx.scheduler.framework.interface import BindPlugin, Handle
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import PodInfo

from . import names


class DefaultBinder(BindPlugin):
    NAME = names.DefaultBinder

    def __init__(self, client: Optional[Client]):
        self.client = client

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:  # type: ignore[override]
        if self.client is None:
            return Status.new(Code.Error, "no API client to bind with")
        try:
            await self.client.bind(pod.namespace, pod.name, node_name, uid=pod.uid or None)
        except StatusError as e:
            return Status.new(Code.Error, e.message)
        return None


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle.client())
