"""PrioritySort (QueueSort): higher priority first, then the earlier arrival."""

from __future__ import annotations

from phalanx.scheduler.framework import PodInfo, QueuedPodInfo
from phalanx.scheduler.plugins.queuesort import PrioritySort

from .builders import make_pod


def test_priority_sort():
    less = PrioritySort().less
    hi = QueuedPodInfo(PodInfo(make_pod("hi").priority(10).obj()), timestamp=5)
    lo_old = QueuedPodInfo(PodInfo(make_pod("lo1").obj()), timestamp=1)
    lo_new = QueuedPodInfo(PodInfo(make_pod("lo2").obj()), timestamp=2)
    assert sorted([lo_new, hi, lo_old], key=__import__("functools").cmp_to_key(
        lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))) == [hi, lo_old, lo_new]
