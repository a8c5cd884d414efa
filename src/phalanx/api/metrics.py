"""metrics.k8s.io/v1beta1: NodeMetrics and PodMetrics, the resource usage `kubectl top` reads.

Upstream serves this group from metrics-server, an aggregated API fed by the kubelets' summaries.
phalanx's nodes are simulated, so the usage is simulated too, and the group is built in (served by
`apiserver/metricsapi.py`, read-only: `get` and `list`):

- a container of a Running pod uses what it requests (`resources.requests` cpu and memory; 0
  when it requests nothing);
- the pod annotations `phalanx.dev/usage-cpu` and `phalanx.dev/usage-memory` (quantities, such as
  `250m` and `300Mi`) set the usage of every container of that pod instead;
- a node uses what its Running pods use, unless the node carries the same annotations (its total).

Pods that are not Running (pending, finished) have no metrics, as with metrics-server. Usage is
written as metrics-server writes it: cpu in nanocores (`123000000n`), memory in KiB (`1024Ki`),
with a `timestamp` (now) and a `window` (`10s`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

from ..machinery.quantity import parse_quantity
from .registry import NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
USAGE_CPU_ANNOTATION = "phalanx.dev/usage-cpu"
USAGE_MEMORY_ANNOTATION = "phalanx.dev/usage-memory"
WINDOW = "10s"
RESOURCES = (("cpu", USAGE_CPU_ANNOTATION), ("memory", USAGE_MEMORY_ANNOTATION))


def _quantity(value: Any) -> Fraction:
    try:
        return parse_quantity(value) if value not in (None, "") else Fraction(0)
    except (ValueError, TypeError):
        return Fraction(0)


def format_usage(cpu: Fraction, memory: Fraction) -> dict[str, str]:
    """cpu in nanocores, memory in KiB (rounded up), as metrics-server reports them."""
    nano = -((-cpu * 1_000_000_000) // 1)
    kib = -((-memory / 1024) // 1)
    return {"cpu": f"{int(nano)}n", "memory": f"{int(kib)}Ki"}


def _annotated(obj: Obj) -> dict[str, Fraction] | None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if not any(a in annotations for _, a in RESOURCES):
        return None
    return {name: _quantity(annotations.get(a)) for name, a in RESOURCES}


def container_usage(pod: Obj) -> list[tuple[str, dict[str, Fraction]]]:
    """(container name, {cpu, memory}) for each container of a pod."""
    override = _annotated(pod)
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        requests = (c.get("resources") or {}).get("requests") or {}
        usage = override if override is not None else {name: _quantity(requests.get(name)) for name, _ in RESOURCES}
        out.append((c.get("name", ""), dict(usage)))
    return out


def has_metrics(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and bool((pod.get("spec") or {}).get("nodeName"))


def _metadata(obj: Obj, now: str) -> Obj:
    md = obj.get("metadata") or {}
    out: Obj = {"name": md.get("name", ""), "creationTimestamp": now}
    if md.get("namespace"):
        out["namespace"] = md["namespace"]
    if md.get("labels"):
        out["labels"] = dict(md["labels"])
    return out


def pod_metrics(pod: Obj, now: str) -> Obj:
    return {"kind": "PodMetrics", "apiVersion": API_VERSION, "metadata": _metadata(pod, now),
            "timestamp": now, "window": WINDOW,
            "containers": [{"name": name, "usage": format_usage(u["cpu"], u["memory"])}
                           for name, u in container_usage(pod)]}


def node_metrics(node: Obj, pods: Iterable[Obj], now: str) -> Obj:
    """A node's usage: its annotations, else the sum over its Running pods."""
    total = _annotated(node)
    if total is None:
        total = {"cpu": Fraction(0), "memory": Fraction(0)}
        for pod in pods:
            for _, usage in container_usage(pod):
                total["cpu"] += usage["cpu"]
                total["memory"] += usage["memory"]
    return {"kind": "NodeMetrics", "apiVersion": API_VERSION, "metadata": _metadata(node, now),
            "timestamp": now, "window": WINDOW, "usage": format_usage(total["cpu"], total["memory"])}


class NodeMetricsStrategy(Strategy):
    columns = [NAME_COLUMN, Column("CPU", "string", "", "CPU usage"),
               Column("Memory", "string", "", "Memory usage"), Column("Window", "string", "", "Window")]

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        usage = obj.get("usage") or {}
        return [obj["metadata"]["name"], usage.get("cpu", ""), usage.get("memory", ""), obj.get("window", "")]


class PodMetricsStrategy(Strategy):
    columns = NodeMetricsStrategy.columns

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        cpu, memory = Fraction(0), Fraction(0)
        for c in obj.get("containers") or []:
            cpu += _quantity((c.get("usage") or {}).get("cpu"))
            memory += _quantity((c.get("usage") or {}).get("memory"))
        usage = format_usage(cpu, memory)
        return [obj["metadata"]["name"], usage["cpu"], usage["memory"], obj.get("window", "")]


READ_ONLY = ["get", "list"]
NODE_METRICS = register(ResourceType(GROUP, VERSION, "NodeMetrics", "nodes", False, NodeMetricsStrategy(),
                                     verbs=list(READ_ONLY), beta=True))
POD_METRICS = register(ResourceType(GROUP, VERSION, "PodMetrics", "pods", True, PodMetricsStrategy(),
                                    verbs=list(READ_ONLY), beta=True))
