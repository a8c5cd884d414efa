"""NodeResourcesBalancedAllocation (Score): prefers nodes whose cpu and memory use stay balanced."""

from __future__ import annotations

import pytest

from .builders import make_node, make_pod
from .harness import framework, only, scores


EMPTY = make_node("empty").capacity(cpu="4", memory="10000").obj()
BUSY = make_node("busy").capacity(cpu="4", memory="10000").obj()
BUSY_POD = make_pod("e").req(cpu="2", memory="5000").node("busy").obj()
POD = make_pod("p").req(cpu="1", memory="2000").obj()


@pytest.mark.parametrize("existing, want", [
    # fractions .25/.2 -> std .025 -> 97 (truncated)
    ([], 97),
    # cpu (2+1)/4=.75, mem (1000+2000)/10000=.3 -> std .225 -> 77
    ([make_pod("e").req(cpu="2", memory="1000").node("busy").obj()], 77),
])
def test_balanced_allocation(existing, want):
    fw = framework([BUSY], existing, plugins=only("NodeResourcesBalancedAllocation",
                                                  weights={"NodeResourcesBalancedAllocation": 1}))
    assert scores(fw, POD) == {"busy": want}


def test_balanced_allocation_skips_best_effort_pods():
    fw = framework([EMPTY, BUSY], [BUSY_POD], plugins=only("NodeResourcesBalancedAllocation",
                                                           weights={"NodeResourcesBalancedAllocation": 1}))
    assert scores(fw, make_pod().container().obj()) == {"empty": 0, "busy": 0}
