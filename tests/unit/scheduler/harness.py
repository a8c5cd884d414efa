"""Helpers to run one plugin, or the whole default profile, over a small cluster in tests."""

from __future__ import annotations

from typing import Any, Optional

from phalanx.scheduler.framework import CycleState, Framework, PodInfo, Snapshot, Status
from phalanx.scheduler.framework.config import KubeSchedulerProfile, PluginRef, PluginSet, Plugins, set_profile_defaults


def snapshot(nodes: list[dict], pods: list[dict] = ()) -> Snapshot:  # type: ignore[assignment]
    return Snapshot.from_nodes_and_pods(nodes, list(pods))


def framework(nodes: list[dict], pods: list[dict] = (), *, plugins: Optional[Plugins] = None,  # type: ignore[assignment]
              plugin_config: Optional[list] = None, **kw: Any) -> Framework:
    """The default profile (or `plugins` merged into it) over a snapshot of `nodes` and `pods`."""
    prof = KubeSchedulerProfile(plugin_config=list(plugin_config or []))
    set_profile_defaults(prof, custom_plugins=plugins)
    return Framework(prof, snapshot=snapshot(nodes, pods), **kw)


def only(*names: str, weights: Optional[dict[str, int]] = None) -> Plugins:
    """A profile with just these plugins (plus PrioritySort, which every profile needs)."""
    refs = [PluginRef(n, (weights or {}).get(n, 0)) for n in names]
    if "PrioritySort" not in names:
        refs.insert(0, PluginRef("PrioritySort"))
    return Plugins(multi_point=PluginSet(enabled=refs, disabled=[PluginRef("*")]))


def filter_one(fw: Framework, pod: dict, node_name: str) -> Optional[Status]:
    """PreFilter then Filter of one node, as the framework runs them."""
    state = CycleState()
    pi = PodInfo(pod)
    snap = fw.snapshot_shared_lister()
    _, st, _ = fw.run_pre_filter_plugins(state, pi, snap.list())
    if st is not None and not st.is_success():
        return st
    return fw.run_filter_plugins(state, pi, snap.get(node_name))


def scores(fw: Framework, pod: dict, node_names: Optional[list[str]] = None) -> dict[str, int]:
    """Total (weighted, normalized) score per node for `pod` over the given (or all) nodes."""
    state = CycleState()
    pi = PodInfo(pod)
    snap = fw.snapshot_shared_lister()
    nodes = [snap.get(n) for n in node_names] if node_names else snap.list()
    fw.run_pre_filter_plugins(state, pi, snap.list())
    result = fw.prioritize_nodes(state, pi, nodes)
    return result.total_by_node()
