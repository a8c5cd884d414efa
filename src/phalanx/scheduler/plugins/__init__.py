"""In-tree scheduler plugins, one module per plugin, with upstream names and messages.

`in_tree_factories()` maps each plugin name to its factory `new(args, handle)`; the framework's
`in_tree_registry()` wraps it. The plugins that need a running scheduler's services or state
(DefaultBinder, DynamicResources, GangScheduling, TopologyPlacementGenerator, PodGroupPodsCount)
are registered by the scheduler (`Scheduler._register_scheduler_plugins`); other packages register
theirs into a Registry the same way.
"""

from __future__ import annotations

from typing import Any, Callable


def in_tree_factories() -> dict[str, Callable[..., Any]]:
    from . import (
        defaultpreemption,
        interpodaffinity,
        names,
        nodeaffinity,
        nodename,
        nodeports,
        noderesources_balanced_allocation,
        noderesources_fit,
        nodeunschedulable,
        podtopologyspread,
        queuesort,
        schedulinggates,
        tainttoleration,
    )

    return {
        names.PrioritySort: queuesort.new,
        names.SchedulingGates: schedulinggates.new,
        names.NodeUnschedulable: nodeunschedulable.new,
        names.NodeName: nodename.new,
        names.TaintToleration: tainttoleration.new,
        names.NodeAffinity: nodeaffinity.new,
        names.NodePorts: nodeports.new,
        names.NodeResourcesFit: noderesources_fit.new,
        names.PodTopologySpread: podtopologyspread.new,
        names.InterPodAffinity: interpodaffinity.new,
        names.DefaultPreemption: defaultpreemption.new,
        names.NodeResourcesBalancedAllocation: noderesources_balanced_allocation.new,
    }
