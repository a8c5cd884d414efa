"""Shared pieces for controller tests: the real scheduler, with the cluster's feature gates, in
place of kube-scheduler (pods of workload controllers get nodes the way they would in a cluster)."""

from __future__ import annotations

from phalanx.scheduler.scheduler import Scheduler


def scheduler(env, factory, **kw) -> Scheduler:
    """A Scheduler on the test's API and clock, sharing the controllers' informer factory."""
    return Scheduler(env.client, factory, gates=env.api.gates, **kw)
