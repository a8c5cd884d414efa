"""How a control plane's components run, apart from what the cluster config says: on which clock,
with which seed, recording Events or not.

    cp = ControlPlane(spec, store=MemoryStore(), runtime=RuntimeOptions(clock=VirtualClock(), seed=7))

The defaults are a real cluster's (wall-clock time, Events recorded); `phalanx simulate` runs every
component on a `VirtualClock` with a seeded scheduler and no Events.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..client.clock import REAL_CLOCK, Clock


@dataclass
class RuntimeOptions:
    """`clock`: what every component, client and API timestamp reads. `seed`: the scheduler's random
    tie-breaks (equal scores, preemption's start offset). `record_events`: False drops every Event
    the components would write (nothing decides on them; a long simulation need not store
    millions). `lease_period`: seconds between the simulated kubelets' node Lease renewals (None:
    their own period). `managed_fields`: False records no managedFields on creates, updates and
    non-apply patches (`API.track_managed_fields`). `disabled_controllers`: components not to run, by
    kube-controller-manager's `--controllers` names (`endpoints-controller`, ...; `scheduler`,
    `kubelet`, `dra-driver` for the rest: `cluster.components`)."""

    clock: Clock = REAL_CLOCK
    seed: int = 0
    record_events: bool = True
    lease_period: float | None = None
    managed_fields: bool = True
    disabled_controllers: frozenset[str] = frozenset()
