"""The endpoints controller (kube-controller-manager's `endpoint`): core/v1 Endpoints for Services
with a selector.

For each Service with `spec.selector`, an Endpoints of the same name lists the selected pods that
have an IP: ready ones under `addresses`, the others under `notReadyAddresses` (all under
`addresses` with `publishNotReadyAddresses`). Each service port resolves its `targetPort` on the pod
(a number as is, a name through the pod's container ports; a pod without that port is left out of
that port's subset), and addresses with the same ports are packed into one subset, as upstream's
`RepackSubsets`. Terminating pods and finished pods are left out. Endpoints of a Service that has
gone or lost its selector are deleted; a Service without selector is left to its user. As upstream
(since 1.22), an Endpoints holds at most 1,000 addresses: past that it is truncated (ready
addresses first, each subset keeping its share) and annotated `endpoints.kubernetes.io/over-capacity:
truncated`; the annotation goes when the Service is back under capacity. EndpointSlices have no
such limit.

Also the pod/port helpers the EndpointSlice controller shares (`pods_for_service`, `endpoint_ports`,
`pod_is_ready`) and their base, `ServicePodsController`: a sync derives what it needs from each
selected pod through `derive_for_service`, which keeps every pod's result and looks again only at
the pods whose events came in since the last sync of that Service (all of them when the Service
object changed), so a sync of a Service of thousands of pods costs the pods that changed plus one
pass to list the results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..client.clock import Clock
from ..client.controller import Controller
from ..client.informer import Informer, InformerFactory, object_key
from ..client.interface import Client
from ..machinery.errors import StatusError
from .podcontrol import is_pod_ready

Obj = dict[str, Any]

MANAGED_BY_LABEL = "endpoints.kubernetes.io/managed-by"
OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"
TRUNCATED = "truncated"
MAX_CAPACITY = 1000  # addresses in one Endpoints object
MANAGED_BY = "endpoint-controller"
HEADLESS_LABEL = "service.kubernetes.io/headless"


def selector_matches(selector: dict, labels: dict | None) -> bool:
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


def service_selector(svc: Obj) -> dict | None:
    """The map selector of a Service that has one (a nil or empty selector manages nothing)."""
    sel = (svc.get("spec") or {}).get("selector")
    return sel if isinstance(sel, dict) and sel else None


def should_be_in_endpoints(pod: Obj, include_terminating: bool = False) -> bool:
    """`ShouldPodBeInEndpoints`: not finished, has an IP, not terminating (unless asked for)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not pod["metadata"].get("deletionTimestamp")


def pods_for_service(pods: Informer, svc: Obj, include_terminating: bool = False) -> list[Obj]:
    sel = service_selector(svc)
    if sel is None:
        return []
    ns = svc["metadata"].get("namespace")
    return sorted((p for p in pods.list(ns) if _selects(sel, p, include_terminating)),
                  key=lambda p: p["metadata"]["name"])


def _selects(sel: dict, pod: Obj, include_terminating: bool) -> bool:
    return selector_matches(sel, pod["metadata"].get("labels")) and should_be_in_endpoints(pod, include_terminating)


def find_port(pod: Obj, svc_port: Obj) -> int | None:
    """`podutil.FindPort`: the pod's port a service port's targetPort names."""
    target = svc_port.get("targetPort", svc_port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    protocol = svc_port.get("protocol", "TCP")
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target and p.get("protocol", "TCP") == protocol:
                port = p.get("containerPort")
                return port if isinstance(port, int) else None
    return None


def endpoint_ports(pod: Obj, svc: Obj) -> list[Obj]:
    """The EndpointPorts of `svc` this pod serves, in the service's order."""
    out = []
    for sp in (svc.get("spec") or {}).get("ports") or []:
        port = find_port(pod, sp)
        if port is None:
            continue
        ep: Obj = {"name": sp.get("name", ""), "port": port, "protocol": sp.get("protocol", "TCP")}
        if sp.get("appProtocol"):
            ep["appProtocol"] = sp["appProtocol"]
        out.append(ep)
    return out


def pod_is_ready(pod: Obj, svc: Obj) -> bool:
    return bool((svc.get("spec") or {}).get("publishNotReadyAddresses")) or is_pod_ready(pod)


def _address(pod: Obj, svc: Obj) -> Obj:
    md, spec = pod["metadata"], pod.get("spec") or {}
    addr: Obj = {"ip": (pod.get("status") or {}).get("podIP")}
    if spec.get("hostname") and spec.get("subdomain") == svc["metadata"]["name"]:
        addr["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        addr["nodeName"] = spec["nodeName"]
    addr["targetRef"] = {"kind": "Pod", "namespace": md.get("namespace", ""), "name": md["name"],
                         "uid": md.get("uid", "")}
    return addr


AddressEntry = tuple[tuple, list[Obj], bool, tuple[str, str], Obj]


def address_entry(pod: Obj, svc: Obj) -> AddressEntry | None:
    """What the Endpoints of `svc` take from one selected pod: (port key, ports, ready, order,
    address), `order` being the address's place in its subset (IP, then pod uid); None for a pod
    left out (it has none of the Service's ports)."""
    ports = endpoint_ports(pod, svc)
    if (svc.get("spec") or {}).get("ports") and not ports:
        return None
    key = tuple(sorted((p["name"], p["port"], p["protocol"], p.get("appProtocol", "")) for p in ports))
    address = _address(pod, svc)
    return key, ports, pod_is_ready(pod, svc), (address["ip"], address["targetRef"]["uid"]), address


def build_subsets(pods: Iterable[Obj], svc: Obj) -> list[Obj]:
    """Subsets packed by port set (`RepackSubsets`): addresses sorted by IP, ports by name."""
    return subsets_of([e for e in (address_entry(p, svc) for p in pods) if e is not None])


def subsets_of(entries: Iterable[AddressEntry]) -> list[Obj]:
    """`build_subsets` from the pods' `address_entry` results."""
    Placed = list[tuple[tuple[str, str], Obj]]
    groups: dict[tuple, tuple[list[Obj], Placed, Placed]] = {}
    for key, ports, ready, order, address in entries:
        group = groups.setdefault(key, (ports, [], []))
        (group[1] if ready else group[2]).append((order, address))
    subsets = []
    for key in sorted(groups):
        ports, ready_addresses, not_ready_addresses = groups[key]
        subset: Obj = {}
        for kind, addresses in (("addresses", ready_addresses), ("notReadyAddresses", not_ready_addresses)):
            if addresses:
                addresses.sort(key=_first)
                subset[kind] = [a for _, a in addresses]
        if ports:
            subset["ports"] = sorted(ports, key=lambda p: p["name"])
        subsets.append(subset)
    return subsets


def _first(pair: tuple[tuple[str, str], Obj]) -> tuple[str, str]:
    return pair[0]


def truncate_subsets(subsets: list[Obj], capacity: int | None = None) -> tuple[list[Obj], bool]:
    """Upstream's `truncateEndpoints`: at most `capacity` addresses over all subsets. Ready
    addresses come first: when they alone exceed the capacity the not-ready ones all go and each
    subset keeps a share of ready ones in proportion to its size (rounded up, the last subsets
    taking what is left); otherwise every ready address stays and the not-ready ones are shared
    out that way. A subset left without addresses is dropped. `capacity` defaults to MAX_CAPACITY.
    Returns (subsets, whether anything was cut); the input is not changed."""
    capacity = MAX_CAPACITY if capacity is None else capacity
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= capacity:
        return subsets, False
    cut_ready = ready > capacity
    cut = "addresses" if cut_ready else "notReadyAddresses"
    room = capacity if cut_ready else capacity - ready
    total = ready if cut_ready else not_ready
    left = room
    out = []
    for subset in subsets:
        subset = dict(subset)
        share = min(-(-len(subset.get(cut) or []) * room // total), left)  # ceil, then what is left
        kept = (subset.get(cut) or [])[:share]
        if kept:
            subset[cut] = kept
        else:
            subset.pop(cut, None)
        if cut_ready:
            subset.pop("notReadyAddresses", None)
        left -= len(kept)
        if subset.get("addresses") or subset.get("notReadyAddresses"):
            out.append(subset)  # a subset left with no address at all would not be valid
    return out, True


POD_BATCH_PERIOD = 0.1  # seconds: pod events of one Service within it make one sync


@dataclass
class _ServicePods:
    """What `derive_for_service` keeps for one Service object: for each pod it selects, (pod,
    dependency, derived value or None); the pod names in order; the names with events since."""
    svc: Obj
    entries: dict[str, tuple[Obj, Any, Any]] = field(default_factory=dict)
    order: list[str] | None = None  # sorted names; None once a name came or went
    dirty: set[str] = field(default_factory=set)


class ServicePodsController(Controller[str]):
    """Services and the pods they select: a Service's key is queued when it changes and when a pod
    it selects (before or after the change) does; pod events are batched per Service for
    `POD_BATCH_PERIOD` (upstream's `--endpoint-updates-batch-period`; longer for a Service whose
    syncs are costly, see `Controller.enqueue_coalesced`), so a rollout of many pods costs a few
    syncs rather than one per pod event."""

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.services = self.informer("v1", "Service")
        self.pods = self.informer("v1", "Pod")
        self.enqueue_on(self.services)
        self.pods.add_event_handler(on_add=self._pod_changed, on_update=self._pod_updated,
                                    on_delete=self._pod_changed)
        self._derived: dict[str, _ServicePods] = {}  # Service key -> what its last sync derived

    def derive_for_service(self, svc: Obj, include_terminating: bool, derive: Callable[[Obj, Obj], Any],
                           dependency: Callable[[Obj], Any] | None = None) -> list[Any]:
        """`derive(pod, svc)` of each pod `pods_for_service` selects, in pod name order, leaving
        out None results. Only the pods with events since the last sync of this Service are looked
        at again (every pod when `svc` is another object than then); a pod's result is reused
        while the pod and `dependency(pod)` are the same objects (informers never change an object
        in place). A change of a dependency alone goes unseen until `forget_derived`."""
        key = object_key(svc)
        sel = service_selector(svc)
        if sel is None:
            self._derived.pop(key, None)
            return []
        ns = svc["metadata"].get("namespace")
        state = self._derived.get(key)
        if state is None or state.svc is not svc:
            state = _ServicePods(svc, dirty={p["metadata"]["name"] for p in self.pods.list(ns)})
            self._derived[key] = state
        dirty, state.dirty = state.dirty, set()
        for name in dirty:
            pod = self.pods.get(f"{ns}/{name}" if ns else name)
            if pod is None or not _selects(sel, pod, include_terminating):
                if state.entries.pop(name, None) is not None:
                    state.order = None
                continue
            dep = dependency(pod) if dependency is not None else None
            hit = state.entries.get(name)
            if hit is not None and hit[0] is pod and hit[1] is dep:
                continue
            if hit is None:
                state.order = None
            state.entries[name] = (pod, dep, derive(pod, svc))
        if state.order is None:
            state.order = sorted(state.entries)
        entries = state.entries
        return [v for v in (entries[name][2] for name in state.order) if v is not None]

    def forget_service(self, key: str) -> None:
        self._derived.pop(key, None)

    def forget_derived(self) -> None:
        """Derive every pod again at the next sync of each Service (a dependency changed)."""
        self._derived.clear()

    def _pod_changed(self, pod: Obj) -> None:
        md = pod["metadata"]
        labels = md.get("labels")
        for svc in self.services.list(md.get("namespace")):
            sel = service_selector(svc)
            if sel is not None and selector_matches(sel, labels):
                key = object_key(svc)
                state = self._derived.get(key)
                if state is not None:
                    state.dirty.add(md["name"])
                self.enqueue_coalesced(key, POD_BATCH_PERIOD)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        self._pod_changed(new)
        if (old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {}):
            self._pod_changed(old)


class EndpointsController(ServicePodsController):
    name = "endpoint"
    workers = 5  # --concurrent-endpoint-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.endpoints = self.informer("v1", "Endpoints")
        # deleted Endpoints are recreated; managed ones left behind by a deleted Service (seen at
        # start) are deleted
        self.endpoints.add_event_handler(on_add=lambda ep: self.enqueue(object_key(ep)) if _managed(ep) else None,
                                         on_delete=lambda ep: self.enqueue(object_key(ep)))

    async def sync(self, key: str) -> None:
        ns, _, name = key.partition("/")
        svc = self.services.get(key)
        current = self.endpoints.get(key)
        if svc is None or service_selector(svc) is None:
            self.forget_service(key)
            if svc is None and current is not None:
                await self._delete(ns, name)
            return
        subsets, truncated = truncate_subsets(subsets_of(self.derive_for_service(svc, False, address_entry)))
        labels = dict(svc["metadata"].get("labels") or {})
        labels[MANAGED_BY_LABEL] = MANAGED_BY
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        if current is None:
            obj: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                        "metadata": {"name": name, "namespace": ns, "labels": labels}}
            if truncated:
                obj["metadata"]["annotations"] = {OVER_CAPACITY_ANNOTATION: TRUNCATED}
            if subsets:
                obj["subsets"] = subsets
            try:
                await self.client.create(obj)
            except StatusError as e:
                if e.code != 409:
                    raise
                self.enqueue_after(key, 0.1)
            return
        annotations = _with_capacity_annotation(current["metadata"].get("annotations") or {}, truncated)
        if (current.get("subsets") or []) == subsets and (current["metadata"].get("labels") or {}) == labels \
                and (current["metadata"].get("annotations") or {}) == annotations:
            return
        # handed over: a new top level and metadata over the cached object, which the API only reads
        new = dict(current)
        new["metadata"] = dict(current["metadata"], labels=labels, annotations=annotations)
        if not annotations:
            del new["metadata"]["annotations"]
        if subsets:
            new["subsets"] = subsets
        else:
            new.pop("subsets", None)
        await self.client.update(new, handover=True)

    async def _delete(self, ns: str, name: str) -> None:
        try:
            await self.client.delete("v1", "Endpoints", ns, name)
        except StatusError as e:
            if e.code != 404:
                raise


def _with_capacity_annotation(annotations: dict[str, str], truncated: bool) -> dict[str, str]:
    if truncated:
        return {**annotations, OVER_CAPACITY_ANNOTATION: TRUNCATED}
    return {k: v for k, v in annotations.items() if k != OVER_CAPACITY_ANNOTATION}


def _managed(ep: Obj) -> bool:
    return (ep["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


__all__ = ["EndpointsController", "ServicePodsController", "address_entry", "build_subsets", "endpoint_ports",
           "pods_for_service", "subsets_of", "truncate_subsets", "MAX_CAPACITY", "OVER_CAPACITY_ANNOTATION"]
