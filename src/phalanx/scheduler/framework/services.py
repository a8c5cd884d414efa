"""What the scheduler lends every profile's Framework to hand on to plugins through the Handle
(upstream's frameworkImpl options WithClientSet, WithInformerFactory, WithEventRecorder,
WithSharedDRAManager, ...):

    services = HandleServices(client=client, informer_factory=factory, dra_manager=manager,
                              pod_groups=pod_group_manager, clock=clock, spawn_api_call=spawn)
    fw = Framework(profile, services=services)
    fw.client(); fw.event_recorder(); fw.shared_dra_manager(); fw.spawn_api_call(coro)

A Framework built without services (unit tests, dry runs) gets a client-less set: no client,
a private informer factory is never made, the real clock, and API calls run as plain tasks.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Mapping, Optional, Protocol

from phalanx.client.clock import REAL_CLOCK, Clock

from .constants import Obj

if TYPE_CHECKING:
    from phalanx.client.informer import InformerFactory
    from phalanx.client.interface import Client

    from .dra_manager import DRAManager

log = logging.getLogger("phalanx.scheduler.framework")

ApiCall = Coroutine[Any, Any, None]


class PodGroupLister(Protocol):
    """PodGroups by `namespace/name` as the scheduler's informers see them, with their pods
    (`podgroups.PodGroupManager` implements it)."""

    def get(self, key: str) -> Optional[Obj]: ...

    def all_pods_count(self, key: str) -> int:
        """The group's pods that exist and are not terminal."""
        ...

    def scheduler_names(self, key: str) -> set[str]: ...

    def scheduled_count(self, key: str) -> int:
        """The group's pods assumed or bound."""
        ...

    def tree_wait_reason(self, key: str) -> Optional[str]:
        """Why pods of a PodGroup in a CompositePodGroup tree wait before a cycle (1.37), or None."""
        ...

    def same_tree(self, key: str, other_key: str) -> bool:
        """Whether two PodGroups are leaves of one CompositePodGroup tree."""
        ...


def run_detached(call: ApiCall) -> None:
    """Run an API call as a task of the running loop; without a loop (a synchronous unit test)
    there is nothing to write with, and the call is dropped."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        call.close()
        return
    loop.create_task(call)


class EventRecorder:
    """Writes Events as the profile (`component` is its schedulerName), as upstream's recorder."""

    def __init__(self, client: Optional["Client"], component: str):
        self.client = client
        self.component = component

    async def eventf(self, regarding: Obj, reason: str, message: str, *, type: str = "Normal",
                     annotations: Optional[Mapping[str, str]] = None) -> None:
        if self.client is None:
            return
        await self.client.create_event(regarding, reason, message, type=type, component=self.component,
                                       annotations=dict(annotations) if annotations is not None else None)


@dataclass
class HandleServices:
    """The shared parts of a scheduler that plugins may use; every field is optional."""

    client: Optional["Client"] = None
    informer_factory: Optional["InformerFactory"] = None
    dra_manager: Optional["DRAManager"] = None
    pod_groups: Optional[PodGroupLister] = None
    clock: Clock = REAL_CLOCK
    spawn_api_call: Callable[[ApiCall], None] = field(default=run_detached)
