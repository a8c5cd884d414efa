"""PrioritySort (QueueSort): higher `spec.priority` first, then the pod queued earlier."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from phalanx.scheduler.framework.interface import Handle, QueueSortPlugin
from phalanx.scheduler.framework.types import QueuedPodInfo

from . import names


class PrioritySort(QueueSortPlugin):
    NAME = names.PrioritySort

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = a.pod_info.priority, b.pod_info.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> PrioritySort:
    return PrioritySort()
