"""Helpers to run one plugin, or the whole default profile, over a small cluster in tests."""

from __future__ import annotations

from typing import Any, Optional

from phalanx.scheduler.framework import CycleState, Framework, PodInfo, Snapshot, Status
from phalanx.scheduler.framework.events import QueueingHint
from phalanx.scheduler.framework.config import KubeSchedulerProfile, PluginRef, PluginSet, Plugins, set_profile_defaults

from .builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


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


def queueing_hint(plugin: str, pod: dict, old: Optional[dict], new: Optional[dict], resource: str) -> QueueingHint:
    """What `plugin`'s queueing hint for `resource` events answers for `pod` (default profile)."""
    fw = framework([make_node("n").obj()])
    for ev in fw.plugin(plugin).events_to_register():
        if ev.event.resource == resource and ev.queueing_hint_fn is not None:
            return ev.queueing_hint_fn(pod, old, new)
    raise AssertionError("no hint")


def check(plugin: str, node: dict, pod: dict, want, pods_on_node=(), plugin_config=None):
    """Filter `pod` on `node` with only `plugin`: fits (want None) or (code, *reasons) from that plugin."""
    fw = framework([node], list(pods_on_node), plugins=only(plugin), plugin_config=plugin_config)
    status = filter_one(fw, pod, node["metadata"]["name"])
    if want is None:
        assert status is None or status.is_success(), status
    else:
        code, *reasons = want
        assert status is not None and (status.code, status.reasons()) == (code, reasons)
        assert status.plugin == plugin


def zone_nodes(*zones: str) -> list[dict]:
    nodes = []
    for i, z in enumerate(zones):
        b = make_node(f"n{i}").capacity(cpu="8")
        if z:
            b.label(ZONE, z)
        nodes.append(b.obj())
    return nodes


def app(name: str, node: str, label: str = "x", ns: str = "default") -> dict:
    return make_pod(name).namespace(ns).label("app", label).node(node).obj()


def verdicts(plugin: str, nodes: list[dict], pods: list[dict], pod: dict) -> dict[str, object]:
    """Per node: None (fits) or (code, message) of `plugin` alone."""
    fw = framework(nodes, pods, plugins=only(plugin))
    out = {}
    for n in nodes:
        st = filter_one(fw, pod, n["metadata"]["name"])
        out[n["metadata"]["name"]] = None if st is None else (st.code, st.message())
    return out
