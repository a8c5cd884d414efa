"""The EndpointSlice controller (kube-controller-manager's `endpointslice`): discovery.k8s.io/v1
EndpointSlices for Services with a selector.

A Service's selected pods with an IP (terminating ones included, as upstream) become endpoints
`{addresses, conditions: {ready, serving, terminating}, nodeName, targetRef, zone}` in slices of at
most 100, one group of slices per set of resolved ports. Slices are named `<service>-<random>`,
labelled `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io` (plus the Service's labels), and owned by the Service, so the
garbage collector removes them with it. A Service that selects nothing keeps one placeholder slice
without ports or endpoints. Slices are created, updated in place and deleted to match; a Service
without selector is left to its user.

As upstream's reconciler, an endpoint stays in the slice that holds it while its pod is selected:
a sync updates it there, drops the endpoints of pods that went, and puts new endpoints first into
the slices it changes anyway, then into other slices with room, then into new slices. A slice left
empty is deleted. So a pod that comes or goes rewrites one slice, not every slice after it.
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock
from ..client.informer import InformerFactory
from ..client.interface import Client
from ..machinery.errors import StatusError
from .endpoints import HEADLESS_LABEL, ServicePodsController, endpoint_ports, service_selector
from .podcontrol import is_pod_ready

Obj = dict[str, Any]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100
ZONE_LABEL = "topology.kubernetes.io/zone"


def _port_key(ports: list[Obj]) -> tuple:
    return tuple(sorted((p.get("name", ""), p.get("port"), p.get("protocol", "TCP"), p.get("appProtocol", ""))
                        for p in ports))


def _place(slices: list[Obj], ports: list[Obj], wanted: dict[str, Obj]) -> list[tuple[Obj | None, list[Obj], list[Obj]]]:
    """The slices of one port set: `wanted` (pod name -> endpoint, in pod name order) placed over
    the slices of that port set now, each endpoint kept where it is, the new ones filling the
    changed slices first, then the others with room, then new slices; empty slices left out."""
    placed: set[str] = set()
    kept: list[tuple[Obj, list[Obj]]] = []
    for s in slices:
        eps = []
        for ep in s.get("endpoints") or []:
            name = (ep.get("targetRef") or {}).get("name")
            if name in wanted and name not in placed:
                eps.append(wanted[name])
                placed.add(name)
        kept.append((s, eps))
    new = [ep for name, ep in wanted.items() if name not in placed]
    changed = [eps for s, eps in kept if eps != (s.get("endpoints") or [])]
    unchanged = [eps for s, eps in kept if eps == (s.get("endpoints") or [])]
    for eps in changed + unchanged:
        if not new:
            break
        room = MAX_ENDPOINTS_PER_SLICE - len(eps)
        if room > 0:
            eps.extend(new[:room])
            new = new[room:]
    out: list[tuple[Obj | None, list[Obj], list[Obj]]] = [(s, ports, eps) for s, eps in kept if eps]
    for i in range(0, len(new), MAX_ENDPOINTS_PER_SLICE):
        out.append((None, ports, new[i:i + MAX_ENDPOINTS_PER_SLICE]))
    return out


def _zone(node: Obj | None) -> str | None:
    return ((node or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL)


def address_type(svc: Obj) -> str:
    families = (svc.get("spec") or {}).get("ipFamilies") or ["IPv4"]
    return "IPv6" if families[0] == "IPv6" else "IPv4"


class EndpointSliceController(ServicePodsController):
    name = "endpointslice"
    workers = 5  # --concurrent-service-endpoint-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.slices = self.informer("discovery.k8s.io/v1", "EndpointSlice")
        self.nodes = self.informer("v1", "Node")
        self.slices.add_event_handler(on_add=self._slice_changed, on_update=lambda o, n: self._slice_changed(n),
                                      on_delete=self._slice_deleted)
        # an endpoint's zone comes from its node: a node that comes, goes or changes zone makes
        # every endpoint be derived again (its frequent status updates do not)
        self.nodes.add_event_handler(on_add=lambda n: self.forget_derived(), on_delete=lambda n: self.forget_derived(),
                                     on_update=self._node_updated)
        # slices created but not yet in the informer, per Service (upstream's slice tracker): a
        # sync waits for them instead of creating them twice
        self._created: dict[str, set[str]] = {}
        # slice name -> resourceVersion this controller wrote: the informer's event for its own
        # write is no reason to sync again (upstream's tracker ignores the generations it wrote)
        self._wrote: dict[str, str] = {}

    def _slice_changed(self, eps: Obj) -> None:
        md = eps["metadata"]
        labels = md.get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SERVICE_NAME_LABEL):
            if self._wrote.get(md["name"]) == md.get("resourceVersion") and not md.get("deletionTimestamp"):
                del self._wrote[md["name"]]
                return
            self.enqueue(f"{md.get('namespace')}/{labels[SERVICE_NAME_LABEL]}")

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if _zone(old) != _zone(new):
            self.forget_derived()

    def _slice_deleted(self, eps: Obj) -> None:
        self._wrote.pop(eps["metadata"]["name"], None)
        self._slice_changed(eps)

    def _owned_slices(self, ns: str, name: str) -> list[Obj]:
        return sorted((s for s in self.slices.list(ns)
                       if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == name
                       and (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
                       and not s["metadata"].get("deletionTimestamp")),
                      key=lambda s: s["metadata"]["name"])

    def _endpoint(self, pod: Obj, svc: Obj) -> Obj:
        md, spec = pod["metadata"], pod.get("spec") or {}
        terminating = bool(md.get("deletionTimestamp"))
        publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        serving = publish or is_pod_ready(pod)
        ep: Obj = {"addresses": [(pod.get("status") or {}).get("podIP")],
                   "conditions": {"ready": serving and (publish or not terminating), "serving": serving,
                                  "terminating": terminating}}
        if spec.get("hostname") and spec.get("subdomain") == svc["metadata"]["name"]:
            ep["hostname"] = spec["hostname"]
        if spec.get("nodeName"):
            ep["nodeName"] = spec["nodeName"]
            zone = _zone(self.nodes.get(spec["nodeName"]))
            if zone:
                ep["zone"] = zone
        ep["targetRef"] = {"kind": "Pod", "namespace": md.get("namespace", ""), "name": md["name"],
                           "uid": md.get("uid", "")}
        return ep

    def _slice_entry(self, pod: Obj, svc: Obj) -> tuple[tuple, list[Obj], Obj] | None:
        """(port key, ports, endpoint) of a selected pod; None when it has none of the ports."""
        ports = endpoint_ports(pod, svc)
        if (svc.get("spec") or {}).get("ports") and not ports:
            return None
        return _port_key(ports), ports, self._endpoint(pod, svc)

    def plan(self, svc: Obj, existing: list[Obj]) -> list[tuple[Obj | None, list[Obj], list[Obj]]]:
        """(slice to update, or None for a new one; ports; endpoints) of every slice the Service
        should have, from its slices now (`existing`, in name order); a slice now that is not in
        the plan is to be deleted."""
        groups: dict[tuple, tuple[list[Obj], dict[str, Obj]]] = {}
        for key, ports, ep in self.derive_for_service(svc, True, self._slice_entry):
            groups.setdefault(key, (ports, {}))[1][ep["targetRef"]["name"]] = ep
        by_ports: dict[tuple, list[Obj]] = {}
        for s in existing:
            by_ports.setdefault(_port_key(s.get("ports") or []), []).append(s)
        out: list[tuple[Obj | None, list[Obj], list[Obj]]] = []
        for key in sorted(groups):
            ports, wanted = groups[key]
            out.extend(_place(by_ports.get(key) or [], ports, wanted))
        if not out:  # the placeholder: no ports, no endpoints
            out.append((existing[0] if existing else None, [], []))
        return out

    async def sync(self, key: str) -> None:
        ns, _, name = key.partition("/")
        svc = self.services.get(key)
        if svc is None or service_selector(svc) is None:
            self.forget_service(key)
            return  # the garbage collector removes the slices of a deleted Service
        existing = self._owned_slices(ns, name)
        waiting = self._created.get(key, set()) - {s["metadata"]["name"] for s in existing}
        if waiting:
            self._created[key] = waiting
            self.enqueue_after(key, 0.05)
            return
        self._created.pop(key, None)
        plan = self.plan(svc, existing)
        for current, ports, eps in plan:
            created = await self._write(svc, current, ports, eps)
            if created:
                self._created.setdefault(key, set()).add(created)
        kept = {id(current) for current, _, _ in plan if current is not None}
        for leftover in (s for s in existing if id(s) not in kept):
            try:
                await self.client.delete("discovery.k8s.io/v1", "EndpointSlice", ns, leftover["metadata"]["name"])
            except StatusError as e:
                if e.code != 404:
                    raise

    def _labels(self, svc: Obj) -> dict[str, str]:
        labels = {k: v for k, v in (svc["metadata"].get("labels") or {}).items()}
        labels[SERVICE_NAME_LABEL] = svc["metadata"]["name"]
        labels[MANAGED_BY_LABEL] = MANAGED_BY
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        return labels

    async def _write(self, svc: Obj, current: Obj | None, ports: list[Obj], eps: list[Obj]) -> str | None:
        """Creates or updates one slice; returns the name of a created one."""
        md = svc["metadata"]
        labels = self._labels(svc)
        if current is None:
            obj: Obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {"generateName": f"{md['name']}-", "namespace": md.get("namespace", ""),
                                     "labels": labels,
                                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": md["name"],
                                                          "uid": md.get("uid", ""), "controller": True,
                                                          "blockOwnerDeletion": True}]},
                        "addressType": address_type(svc), "endpoints": eps, "ports": ports}
            made = await self.client.create(obj)
            self._wrote[made["metadata"]["name"]] = made["metadata"].get("resourceVersion")
            return str(made["metadata"]["name"])
        if ((current.get("endpoints") or []) == eps and (current.get("ports") or []) == ports
                and (current["metadata"].get("labels") or {}) == labels):
            return None
        # handed over: a new top level and metadata over the cached slice, which the API only reads
        new = dict(current)
        new["metadata"] = dict(current["metadata"], labels=labels)
        new["endpoints"] = eps
        new["ports"] = ports
        stored = await self.client.update(new, handover=True)
        self._wrote[stored["metadata"]["name"]] = stored["metadata"].get("resourceVersion")
        return None


__all__ = ["EndpointSliceController", "MANAGED_BY", "SERVICE_NAME_LABEL"]
