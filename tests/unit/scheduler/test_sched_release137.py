"""The scheduler on a Kubernetes 1.37 cluster (was-1.37.md section 2): v1beta1 PodGroups,
`PodGroupInitiallyScheduled`, and the 1.37 rules of gang scheduling and preemption."""

from __future__ import annotations

from .cluster137 import Cluster137, condition, nodes, pod, podgroup

INITIALLY = "PodGroupInitiallyScheduled"


async def test_gang_binds_together_and_is_initially_scheduled():
    c = await Cluster137().start(nodes(2))
    await c.client.create(podgroup("g", 3))
    for i in range(3):
        await c.client.create(pod(f"p{i}", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 3)
    cond = condition(c.podgroup("g"), INITIALLY)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Scheduled")
    assert condition(c.podgroup("g"), "PodGroupScheduled") is None
    await c.stop()
