"""networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy: stored, defaulted and validated as
upstream does (`pkg/apis/networking/validation`), printed with upstream's columns
(`kubectl get ingress,ingressclass,netpol`).

Nothing enforces them: phalanx's pods and Services are simulated, with no data path, so an Ingress
routes nothing and a NetworkPolicy blocks nothing. They are here for the tools and charts that
create and read them. Registered at import as `ingresses` (`ing`, with `/status`), `ingressclasses`
and `networkpolicies` (`netpol`).
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, invalid, not_supported, required, too_long
from .common import _dict, _list, creation_age
from .labelselectors import format_label_selector, validate_label_selector
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]
GROUP = "networking.k8s.io"
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
POLICY_TYPES = ("Egress", "Ingress")


# --- Ingress ------------------------------------------------------------------------------------
def _backend_errors(backend: Any, path: str) -> list[FieldError]:
    backend = _dict(backend)
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if service is None and resource is None:
        return [invalid(path, "", "resource or service backend is required")]
    if service is None:
        return []
    errs: list[FieldError] = []
    if not _dict(service).get("name"):
        errs.append(required(f"{path}.service.name"))
    port = _dict(_dict(service).get("port"))
    if port.get("name") and port.get("number"):
        errs.append(invalid(f"{path}.service.port", port, "cannot set both port name & port number"))
    elif not port.get("name") and not port.get("number"):
        errs.append(required(f"{path}.service.port", "port name or number is required"))
    return errs


def _path_errors(p: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    path_type = p.get("pathType")
    if not path_type:
        errs.append(required(f"{path}.pathType", "pathType must be specified"))
    elif path_type not in PATH_TYPES:
        errs.append(not_supported(f"{path}.pathType", path_type, PATH_TYPES))
    value = p.get("path", "")
    if path_type in ("Exact", "Prefix") and not str(value).startswith("/"):
        errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
    return errs + _backend_errors(p.get("backend"), f"{path}.backend")


def _rule_errors(rule: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    http = rule.get("http")
    if http is None:
        return errs
    paths = _list(_dict(http).get("paths"))
    if not paths:
        errs.append(required(f"{path}.http.paths"))
    for i, p in enumerate(paths):
        errs += _path_errors(_dict(p), f"{path}.http.paths[{i}]")
    return errs


def _ingress_hosts(spec: Obj) -> str:
    hosts = [str(r["host"]) for r in _list(spec.get("rules")) if isinstance(r, dict) and r.get("host")]
    return ",".join(hosts) if hosts else "*"


def _addresses(status: Obj) -> str:
    entries = _list(_dict(_dict(status).get("loadBalancer")).get("ingress"))
    return ",".join(e.get("ip") or e.get("hostname") or "" for e in entries if isinstance(e, dict))


class IngressStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Class", "string", "", "The name of the IngressClass cluster resource."),
        Column("Hosts", "string", "", "Hosts that incoming requests are matched against before the "
                                       "IngressRule is applied"),
        Column("Address", "string", "", "Address is a list containing ingress points for the load-balancer"),
        Column("Ports", "string", "", "Ports of TLS configurations that open"),
        AGE_COLUMN,
    ]
    status_is_subresource = True

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs: list[FieldError] = []
        if spec.get("defaultBackend") is None and not _list(spec.get("rules")):
            errs.append(invalid("spec", spec, "either `defaultBackend` or `rules` must be specified"))
        if spec.get("defaultBackend") is not None:
            errs += _backend_errors(spec["defaultBackend"], "spec.defaultBackend")
        for i, rule in enumerate(_list(spec.get("rules"))):
            errs += _rule_errors(_dict(rule), f"spec.rules[{i}]")
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        ports = "80, 443" if _list(spec.get("tls")) else "80"
        return [obj["metadata"]["name"], spec.get("ingressClassName") or "<none>", _ingress_hosts(spec),
                _addresses(_dict(obj.get("status"))), ports, creation_age(obj, ctx)]


class IngressClassStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Controller", "string", "", "Controller that is responsible for handling this class"),
        Column("Parameters", "string", "", "A reference to a resource with additional parameters"),
        AGE_COLUMN,
    ]

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        controller = _dict(obj.get("spec")).get("controller")
        if not controller:
            return [required("spec.controller")]
        if len(controller) > 250:
            return [too_long("spec.controller", 250)]
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        params = _dict(spec.get("parameters"))
        shown = f"{params.get('apiGroup') or ''}/{params.get('kind')}/{params.get('name')}".lstrip("/") \
            if params else "<none>"
        return [obj["metadata"]["name"], spec.get("controller", ""), shown, creation_age(obj, ctx)]


# --- NetworkPolicy ------------------------------------------------------------------------------
class NetworkPolicyStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Pod-Selector", "string", "", "Selects the pods to which this NetworkPolicy object applies."),
        AGE_COLUMN,
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("policyTypes"):
            return
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = validate_label_selector(spec.get("podSelector") or {}, "spec.podSelector")
        for i, t in enumerate(_list(spec.get("policyTypes"))):
            if t not in POLICY_TYPES:
                errs.append(not_supported(f"spec.policyTypes[{i}]", t, POLICY_TYPES))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        selector = format_label_selector(_dict(obj.get("spec")).get("podSelector") or {})
        return [obj["metadata"]["name"], selector or "<none>", creation_age(obj, ctx)]


register(ResourceType(GROUP, "v1", "Ingress", "ingresses", True, IngressStrategy(), short_names=["ing"],
                      subresources=["status"]))
register(ResourceType(GROUP, "v1", "IngressClass", "ingressclasses", False, IngressClassStrategy()))
register(ResourceType(GROUP, "v1", "NetworkPolicy", "networkpolicies", True, NetworkPolicyStrategy(),
                      short_names=["netpol"]))
