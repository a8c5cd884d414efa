"""core/v1 Service: defaulting by type, validation and the table columns (external IPs, ports).

Cluster IPs and node ports are allocated by the API server (`apiserver/serviceip.py`, a per-kind
hook that `apiserver.build_api` wires after `prepare_for_create`/`prepare_for_update`); the strategy
alone keeps whatever the client sent."""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from ..machinery.names import dns1123_label_errors, dns1123_subdomain_errors, validate_labels
from .common import Obj, _col, _dict, _keep_status_from, _list, _name, creation_age
from .containers import PORT_PROTOCOLS, PORT_RANGE_MSG, valid_port_num, validate_port_num_or_name
from .labelselectors import format_labels
from .registry import AGE_COLUMN, NAME_COLUMN, Strategy, StrategyContext

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10800


def _externally_accessible(spec: Obj) -> bool:
    t = spec.get("type")
    return t in ("LoadBalancer", "NodePort") or (t == "ClusterIP" and bool(_list(spec.get("externalIPs"))))


def service_external_ip(svc: Obj, wide: bool = True) -> str:
    spec, status = _dict(svc.get("spec")), _dict(svc.get("status"))
    t = spec.get("type")
    ext = [str(x) for x in _list(spec.get("externalIPs"))]
    if t in ("ClusterIP", "NodePort"):
        return ",".join(ext) if ext else "<none>"
    if t == "LoadBalancer":
        lb = sorted({address for i in _list(_dict(status.get("loadBalancer")).get("ingress"))
                     if (address := _dict(i).get("ip") or _dict(i).get("hostname"))})
        lbs = ",".join(lb)
        if not wide and len(lbs) > 16:
            lbs = lbs[:13] + "..."
        if ext:
            return ",".join(([*lbs.split(",")] if lbs else []) + ext)
        return lbs or "<pending>"
    if t == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def service_ports_cell(svc: Obj) -> str:
    pieces = []
    for p in _list(_dict(svc.get("spec")).get("ports")):
        p = _dict(p)
        if p.get("nodePort"):
            pieces.append(f"{p.get('port', 0)}:{p['nodePort']}/{p.get('protocol', '')}")
        else:
            pieces.append(f"{p.get('port', 0)}/{p.get('protocol', '')}")
    return ",".join(pieces) or "<none>"


def _drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """Upstream `dropTypeDependentFields`: when a Service changes `type`, values that no longer
    apply and that the user did not change themselves are cleared (and later released)."""
    ns, os_ = new["spec"], _dict(old.get("spec"))
    if os_.get("type") != "ExternalName" and ns.get("type") == "ExternalName":
        _drop_cluster_ips(ns, os_)
    node_port_types = ("NodePort", "LoadBalancer")
    if os_.get("type") in node_port_types and ns.get("type") not in node_port_types:
        _drop_node_ports(ns, os_)
    if os_.get("type") == "LoadBalancer" and ns.get("type") != "LoadBalancer":
        _drop_load_balancer_fields(ns, os_)
    if _externally_accessible(os_) and not _externally_accessible(ns) and \
            ns.get("externalTrafficPolicy") == os_.get("externalTrafficPolicy"):
        ns.pop("externalTrafficPolicy", None)
    if ns.get("type") != "LoadBalancer" and isinstance(new.get("status"), dict):
        new["status"] = dict(new["status"], loadBalancer={})


def _drop_cluster_ips(ns: Obj, os_: Obj) -> None:
    if ns.get("clusterIP") == os_.get("clusterIP") and ns.get("clusterIPs") == os_.get("clusterIPs"):
        ns.pop("clusterIP", None)
        ns.pop("clusterIPs", None)
    for f in ("ipFamilies", "ipFamilyPolicy"):
        if ns.get(f) == os_.get(f):
            ns.pop(f, None)


def _drop_node_ports(ns: Obj, os_: Obj) -> None:
    old_ports = {_dict(p).get("nodePort") for p in _list(os_.get("ports")) if _dict(p).get("nodePort")}
    new_ports = {_dict(p).get("nodePort") for p in _list(ns.get("ports")) if _dict(p).get("nodePort")}
    if new_ports <= old_ports:
        for p in _list(ns.get("ports")):
            if isinstance(p, dict):
                p.pop("nodePort", None)


def _drop_load_balancer_fields(ns: Obj, os_: Obj) -> None:
    if ns.get("healthCheckNodePort") == os_.get("healthCheckNodePort"):
        ns.pop("healthCheckNodePort", None)
    if ns.get("allocateLoadBalancerNodePorts") is not None and \
            ns.get("allocateLoadBalancerNodePorts") == os_.get("allocateLoadBalancerNodePorts"):
        ns.pop("allocateLoadBalancerNodePorts", None)
    if ns.get("loadBalancerClass") == os_.get("loadBalancerClass"):
        ns.pop("loadBalancerClass", None)


def _keep_allocated_values(ns: Obj, os_: Obj) -> None:
    """Upstream patchAllocatedValues: a client that omits allocated values keeps them."""
    if ns.get("type") != "ExternalName" and os_.get("type") != "ExternalName":
        if not ns.get("clusterIP") and os_.get("clusterIP"):
            ns["clusterIP"] = os_["clusterIP"]
        if not ns.get("clusterIPs") and os_.get("clusterIPs") and ns.get("clusterIP") == os_.get("clusterIP"):
            ns["clusterIPs"] = os_["clusterIPs"]
        for f in ("ipFamilies", "ipFamilyPolicy"):
            if not ns.get(f) and os_.get(f):
                ns[f] = os_[f]
    if ns.get("type") in ("NodePort", "LoadBalancer") and os_.get("type") in ("NodePort", "LoadBalancer"):
        old_np = {(_dict(p).get("port"), _dict(p).get("protocol")): _dict(p).get("nodePort")
                  for p in _list(os_.get("ports"))}
        for p in _list(ns.get("ports")):
            if isinstance(p, dict) and not p.get("nodePort"):
                np_ = old_np.get((p.get("port"), p.get("protocol")))
                if np_:
                    p["nodePort"] = np_


def _service_port_errors(ports: list, stype: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, p in enumerate(ports):
        pp = f"spec.ports[{i}]"
        p = _dict(p)
        pname = p.get("name") or ""
        if len(ports) > 1 and not pname:
            errs.append(required(f"{pp}.name"))
        elif pname:
            errs += [invalid(f"{pp}.name", pname, m) for m in dns1123_label_errors(pname)]
            if pname in names:
                errs.append(duplicate(f"{pp}.name", pname))
            names.add(pname)
        port = p.get("port")
        if not valid_port_num(port):
            errs.append(invalid(f"{pp}.port", port, PORT_RANGE_MSG))
        proto = p.get("protocol") or ""
        if not proto:
            errs.append(required(f"{pp}.protocol"))
        elif proto not in PORT_PROTOCOLS:
            errs.append(not_supported(f"{pp}.protocol", proto, PORT_PROTOCOLS))
        errs += validate_port_num_or_name(p.get("targetPort"), f"{pp}.targetPort")
        if stype == "ClusterIP" and p.get("nodePort"):
            errs.append(forbidden(f"{pp}.nodePort", "may not be used when `type` is 'ClusterIP'"))
    return errs


def _external_name_errors(spec: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.get("clusterIP") not in (None, ""):
        errs.append(forbidden("spec.clusterIP", "may not be set for ExternalName services"))
    ename = spec.get("externalName") or ""
    if not ename:
        errs.append(required("spec.externalName"))
    else:
        errs += [invalid("spec.externalName", ename, m)
                 for m in dns1123_subdomain_errors(ename[:-1] if ename.endswith(".") else ename)]
    return errs


class ServiceStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Type", "type determines how the Service is exposed. Defaults to ClusterIP."),
        _col("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
        _col("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also "
                            "accept traffic for this service."),
        _col("Port(s)", "The list of ports that are exposed by this service."),
        AGE_COLUMN,
        _col("Selector", "Route service traffic to pods with label keys and values matching this selector.",
             priority=1),
    ]
    status_is_subresource = True
    tracks_generation = False
    name_validation = "label1035"
    field_selectors = {
        "spec.clusterIP": lambda o: _dict(o.get("spec")).get("clusterIP", ""),
        "spec.type": lambda o: _dict(o.get("spec")).get("type", ""),
    }
    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if not spec.get("sessionAffinity"):
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            cip = _dict(_dict(spec.get("sessionAffinityConfig")).get("clientIP"))
            if cip.get("timeoutSeconds") is None:
                spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_AFFINITY_SECONDS}}
        if not spec.get("type"):
            spec["type"] = "ClusterIP"
        for p in _list(spec.get("ports")):
            if not isinstance(p, dict):
                continue
            if not p.get("protocol"):
                p["protocol"] = "TCP"
            if p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p.get("port")
        if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
            spec["internalTrafficPolicy"] = "Cluster"
        if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"loadBalancer": {}}

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        _keep_status_from(new, old)
        ns, os_ = new.get("spec"), _dict(old.get("spec"))
        if isinstance(ns, dict):
            _keep_allocated_values(ns, os_)
            _drop_type_dependent_fields(new, old)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs: list[FieldError] = []
        stype = spec.get("type", "")
        if stype not in SERVICE_TYPES:
            errs.append(not_supported("spec.type", stype, SERVICE_TYPES))
        headless = spec.get("clusterIP") == "None"
        ports = _list(spec.get("ports"))
        if not ports and not headless and stype != "ExternalName":
            errs.append(required("spec.ports"))
        errs += _service_port_errors(ports, stype)
        if stype == "ExternalName":
            errs += _external_name_errors(spec)
        sa = spec.get("sessionAffinity", "")
        if sa not in SESSION_AFFINITIES:
            errs.append(not_supported("spec.sessionAffinity", sa, SESSION_AFFINITIES))
        errs += validate_labels(spec.get("selector"), "spec.selector")
        etp = spec.get("externalTrafficPolicy")
        if etp and not _externally_accessible(spec):
            errs.append(invalid("spec.externalTrafficPolicy", etp, "may only be set for externally-accessible services"))
        elif etp and etp not in ("Cluster", "Local"):
            errs.append(not_supported("spec.externalTrafficPolicy", etp, ("Cluster", "Local")))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        ns, os_ = _dict(new.get("spec")), _dict(old.get("spec"))
        if os_.get("type") != "ExternalName" and ns.get("type") != "ExternalName":
            oips, nips = _list(os_.get("clusterIPs")), _list(ns.get("clusterIPs"))
            if oips and nips and oips[0] != nips[0]:
                errs.append(invalid("spec.clusterIPs[0]", nips, "may not change once set"))
            elif os_.get("clusterIP") and ns.get("clusterIP") and os_["clusterIP"] != ns["clusterIP"] and not oips:
                errs.append(invalid("spec.clusterIPs[0]", [ns["clusterIP"]], "may not change once set"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        ips = _list(spec.get("clusterIPs"))
        cluster_ip = ips[0] if ips else (spec.get("clusterIP") or "<none>")
        return [_name(obj), spec.get("type", ""), cluster_ip, service_external_ip(obj), service_ports_cell(obj),
                creation_age(obj, ctx), format_labels(spec.get("selector"))]



SERVICE_STRATEGY = ServiceStrategy()
