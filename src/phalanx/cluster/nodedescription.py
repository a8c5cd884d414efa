"""A node described in text, in the sections `kubectl describe node` prints, for `phalanx export logs`.

    text = describe_node(node, pods, events, slices)
    # pods: every pod (those bound to the node are picked); events: every core/v1 Event
    # (those whose involvedObject is the node are picked); slices: every ResourceSlice

The sections are upstream's (Name, Roles, Labels, Annotations, CreationTimestamp, Taints,
Unschedulable, Conditions, Addresses, Capacity, Allocatable, System Info, PodCIDR, ProviderID,
Non-terminated Pods, Allocated resources, Events), with times as RFC 3339 timestamps rather than
ages, since the text is read later, and one section of phalanx's: the node's DRA devices, from the
ResourceSlices its simulated driver publishes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

from phalanx.machinery.quantity import BINARY_SI, DECIMAL_SI, format_quantity, parse_quantity
from phalanx.scheduler.framework.resources import pod_requests

Obj = dict[str, Any]
ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
TERMINAL_PHASES = ("Succeeded", "Failed")
DEVICES_SHOWN = 8


def describe_node(node: Obj, pods: Iterable[Obj], events: Iterable[Obj], slices: Iterable[Obj]) -> str:
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    name = (node.get("metadata") or {}).get("name", "")
    on_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == name
               and (p.get("status") or {}).get("phase") not in TERMINAL_PHASES]
    lines = _header(node)
    lines += _conditions(status.get("conditions") or [])
    lines += _resources("Addresses", {a.get("type", ""): a.get("address", "") for a in status.get("addresses") or []},
                        ordered=False)
    lines += _resources("Capacity", status.get("capacity") or {})
    lines += _resources("Allocatable", status.get("allocatable") or {})
    lines += _system_info(status.get("nodeInfo") or {})
    lines.append(_field("PodCIDR", spec.get("podCIDR", "")))
    lines.append(_field("ProviderID", spec.get("providerID", "")))
    lines += _pods(on_node)
    lines += _allocated(on_node, status.get("allocatable") or {})
    lines += _devices(name, slices)
    lines += _events(name, events)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# sections


def _header(node: Obj) -> list[str]:
    md = node.get("metadata") or {}
    spec = node.get("spec") or {}
    lines = [_field("Name", md.get("name", "")), _field("Roles", _roles(md.get("labels") or {}))]
    lines += _mapping("Labels", md.get("labels") or {})
    lines += _mapping("Annotations", md.get("annotations") or {})
    lines.append(_field("CreationTimestamp", md.get("creationTimestamp", "")))
    lines += _list("Taints", [_taint(t) for t in spec.get("taints") or []])
    lines.append(_field("Unschedulable", str(bool(spec.get("unschedulable"))).lower()))
    return lines


def _field(title: str, value: str) -> str:
    return f"{title + ':':<20}{value or '<none>'}"


def _mapping(title: str, values: dict) -> list[str]:
    return _list(title, [f"{k}={v}" for k, v in sorted(values.items())])


def _list(title: str, items: list[str]) -> list[str]:
    if not items:
        return [_field(title, "<none>")]
    return [_field(title, items[0])] + [" " * 20 + item for item in items[1:]]


def _roles(labels: dict) -> str:
    roles = sorted(k[len(ROLE_LABEL_PREFIX):] for k in labels if k.startswith(ROLE_LABEL_PREFIX))
    return ",".join(r for r in roles if r) or "<none>"


def _taint(taint: Obj) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [f"{str(cell):<{widths[i]}}" for i, cell in enumerate(row)]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _underlined(header: list[str], rows: list[list[str]]) -> list[str]:
    return _table([header, ["-" * len(h) for h in header], *rows])


def _conditions(conditions: list[Obj]) -> list[str]:
    if not conditions:
        return ["Conditions:          <none>"]
    header = ["Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"]
    rows = [[c.get("type", ""), c.get("status", ""), c.get("lastHeartbeatTime", ""),
             c.get("lastTransitionTime", ""), c.get("reason", ""), c.get("message", "")] for c in conditions]
    return ["Conditions:"] + _underlined(header, rows)


def _resources(title: str, resources: dict, ordered: bool = True) -> list[str]:
    width = max((len(k) for k in resources), default=0) + 2
    items = sorted(resources.items()) if ordered else list(resources.items())
    return [f"{title}:"] + [f"  {k + ':':<{width}}{v}" for k, v in items]


def _system_info(info: dict) -> list[str]:
    titles = (("machineID", "Machine ID"), ("systemUUID", "System UUID"), ("bootID", "Boot ID"),
              ("kernelVersion", "Kernel Version"), ("osImage", "OS Image"), ("operatingSystem", "Operating System"),
              ("architecture", "Architecture"), ("containerRuntimeVersion", "Container Runtime Version"),
              ("kubeletVersion", "Kubelet Version"), ("kubeProxyVersion", "Kube-Proxy Version"))
    return ["System Info:"] + [f"  {title + ':':<27}{info.get(key, '')}" for key, title in titles if info.get(key)]


def _pods(pods: list[Obj]) -> list[str]:
    lines = [f"Non-terminated Pods:  ({len(pods)} in total)"]
    if not pods:
        return lines
    header = ["Namespace", "Name", "CPU Requests", "CPU Limits", "Memory Requests", "Memory Limits", "Created"]
    rows = []
    for pod in sorted(pods, key=lambda p: ((p.get("metadata") or {}).get("namespace", ""),
                                           (p.get("metadata") or {}).get("name", ""))):
        md = pod.get("metadata") or {}
        requests, limits = pod_requests(pod), _pod_limits(pod)
        rows.append([md.get("namespace", ""), md.get("name", ""),
                     _amount("cpu", requests.get("cpu")), _amount("cpu", limits.get("cpu")),
                     _amount("memory", requests.get("memory")), _amount("memory", limits.get("memory")),
                     md.get("creationTimestamp", "")])
    return lines + _underlined(header, rows)


def _allocated(pods: list[Obj], allocatable: dict) -> list[str]:
    requested: dict[str, Fraction] = {}
    limited: dict[str, Fraction] = {}
    for pod in pods:
        for totals, amounts in ((requested, pod_requests(pod)), (limited, _pod_limits(pod))):
            for k, v in amounts.items():
                totals[k] = totals.get(k, Fraction(0)) + v
    names = ["cpu", "memory"] + sorted((set(requested) | set(limited)) - {"cpu", "memory", "pods"})
    rows = [[k, _with_share(k, requested.get(k, Fraction(0)), allocatable.get(k)),
             _with_share(k, limited.get(k, Fraction(0)), allocatable.get(k))] for k in names]
    return (["Allocated resources:", "  (Total limits may be over 100 percent, i.e., overcommitted.)"]
            + _underlined(["Resource", "Requests", "Limits"], rows))


def _devices(node_name: str, slices: Iterable[Obj]) -> list[str]:
    mine = [s for s in slices if (s.get("spec") or {}).get("nodeName") == node_name]
    if not mine:
        return ["DRA devices:         <none>"]
    lines = ["DRA devices (ResourceSlices):"]
    for s in sorted(mine, key=lambda s: (s.get("metadata") or {}).get("name", "")):
        spec = s.get("spec") or {}
        devices = [d.get("name", "") for d in spec.get("devices") or []]
        shown = ", ".join(devices[:DEVICES_SHOWN]) + (", ..." if len(devices) > DEVICES_SHOWN else "")
        lines.append(f"  {(s.get('metadata') or {}).get('name', '')}: driver {spec.get('driver', '')}, pool "
                     f"{(spec.get('pool') or {}).get('name', '')}, {len(devices)} devices ({shown})")
    return lines


def _events(node_name: str, events: Iterable[Obj]) -> list[str]:
    mine = [e for e in events if (e.get("involvedObject") or {}).get("kind") == "Node"
            and (e.get("involvedObject") or {}).get("name") == node_name]
    if not mine:
        return ["Events:              <none>"]
    mine.sort(key=_event_time)
    rows = [[e.get("type", ""), e.get("reason", ""), _event_time(e), (e.get("source") or {}).get("component", "")
             or e.get("reportingComponent", ""), (e.get("message") or "").strip()] for e in mine]
    return ["Events:"] + _underlined(["Type", "Reason", "Last Seen", "From", "Message"], rows)


# ---------------------------------------------------------------------------------------------
# amounts


def _pod_limits(pod: Obj) -> dict[str, Fraction]:
    """Sum of the app containers' limits, maxed with each init container's (upstream's rule)."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("limits") or {}).items():
            total[k] = total.get(k, Fraction(0)) + _parse(v)
    for c in spec.get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("limits") or {}).items():
            total[k] = max(total.get(k, Fraction(0)), _parse(v))
    return total


def _parse(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return Fraction(0)


def _amount(resource: str, value: Fraction | None) -> str:
    if not value:
        return "0"
    return format_quantity(value, BINARY_SI if resource in ("memory", "ephemeral-storage") else DECIMAL_SI)


def _with_share(resource: str, value: Fraction, allocatable: Any) -> str:
    total = _parse(allocatable) if allocatable is not None else Fraction(0)
    share = f" ({int(value * 100 / total)}%)" if total else ""
    return _amount(resource, value) + share


def _event_time(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
               or (event.get("metadata") or {}).get("creationTimestamp") or "")
