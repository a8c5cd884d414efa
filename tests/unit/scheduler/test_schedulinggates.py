"""SchedulingGates (PreEnqueue): a gated pod waits outside the active queue; removing its gates
queues it again (and only it)."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code, PodInfo
from phalanx.scheduler.framework.events import QueueingHint
from phalanx.scheduler.plugins.schedulinggates import SchedulingGates

from .builders import make_pod
from .harness import queueing_hint


@pytest.mark.parametrize("gates, want", [
    ((), None),
    (("example.com/quota",), "waiting for scheduling gates: [example.com/quota]"),
    (("a", "b"), "waiting for scheduling gates: [a b]"),
])
def test_pre_enqueue(gates, want):
    st = SchedulingGates().pre_enqueue(PodInfo(make_pod("p").scheduling_gates(*gates).obj()))
    if want is None:
        assert st is None
    else:
        assert st.code == Code.UnschedulableAndUnresolvable and st.message() == want


@pytest.mark.parametrize("updated, want", [("p", QueueingHint.Queue), ("other", QueueingHint.QueueSkip)])
def test_gates_removed_queues_that_pod_only(updated, want):
    (registration,) = SchedulingGates().events_to_register()
    pod = make_pod("p").uid("uid-p").scheduling_gates("g").obj()
    new = make_pod(updated).uid(f"uid-{updated}").obj()
    assert registration.queueing_hint_fn(pod, pod, new) == want


def test_the_default_profile_registers_the_gates_hint():
    assert queueing_hint("SchedulingGates", make_pod("p").scheduling_gates("g").obj(),
                         make_pod("p").scheduling_gates("g").obj(), make_pod("p").obj(), "Pod") == QueueingHint.Queue
