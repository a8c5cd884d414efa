"""apiregistration.k8s.io/v1 APIService: the group-versions the API server serves, as
kube-apiserver's aggregator lists them (`kubectl get apiservices`: NAME SERVICE AVAILABLE AGE).

phalanx aggregates no other server: every APIService is local (`spec.service` unset, shown as
`Local`), created at bootstrap for each served group-version (`local_api_services`), and
`Available` with reason `Local`. Names are `<version>.<group>` (`v1.` for the core group).

    local_api_services([("", "v1"), ("apps", "v1")])   # the objects bootstrap writes
"""

from __future__ import annotations

from typing import Any, Iterable

from ..machinery.errors import FieldError, invalid, required
from .common import _dict, _list, creation_age
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]
GROUP = "apiregistration.k8s.io"
# Upstream's group priorities (kube-apiserver's apiVersionPriorities: group minimum, version priority)
# for the groups phalanx serves; a group not listed gets upstream's default for unknown groups.
_PRIORITIES = {
    "": (18000, 1), "apps": (17800, 15), "events.k8s.io": (17750, 15), "authentication.k8s.io": (17700, 15),
    "authorization.k8s.io": (17600, 15), "autoscaling": (17500, 30), "batch": (17400, 15),
    "certificates.k8s.io": (17300, 15), "networking.k8s.io": (17200, 15), "policy": (17100, 15),
    "rbac.authorization.k8s.io": (17000, 15), "storage.k8s.io": (16800, 15), "apiextensions.k8s.io": (16700, 15),
    "admissionregistration.k8s.io": (16700, 15), "scheduling.k8s.io": (16600, 15),
    "coordination.k8s.io": (16500, 15), "node.k8s.io": (16300, 15), "discovery.k8s.io": (16200, 15),
    "flowcontrol.apiserver.k8s.io": (16100, 21), "apiregistration.k8s.io": (16100, 21),
    "resource.k8s.io": (15900, 15),
}
_DEFAULT_PRIORITY = (1000, 15)


def api_service_name(group: str, version: str) -> str:
    return f"{version}.{group}"


def local_api_services(served: Iterable[tuple[str, str]], now: str) -> list[Obj]:
    """One local, Available APIService per served group-version."""
    out = []
    for group, version in sorted(set(served)):
        group_min, version_prio = _PRIORITIES.get(group, _DEFAULT_PRIORITY)
        out.append({
            "apiVersion": f"{GROUP}/v1", "kind": "APIService",
            "metadata": {"name": api_service_name(group, version),
                         "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": group_min,
                     "versionPriority": version_prio},
            "status": {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": now,
                                       "reason": "Local", "message": "Local APIServices are always available"}]},
        })
    return out


def _available(obj: Obj) -> str:
    for c in _list(_dict(obj.get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == "Available":
            status = c.get("status", "Unknown")
            return status if status == "True" else f"{status} ({c.get('reason', '')})"
    return "Unknown"


class APIServiceStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Service", "string", "", "The reference to the service that hosts this API endpoint."),
        Column("Available", "string", "", "Whether this service is available."),
        AGE_COLUMN,
    ]
    status_is_subresource = True
    name_validation = "path_segment"  # `v1.` for the core group: not a DNS subdomain

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs: list[FieldError] = []
        if not spec.get("version"):
            errs.append(required("spec.version"))
        name = obj["metadata"].get("name", "")
        expected = api_service_name(spec.get("group", ""), spec.get("version", ""))
        if spec.get("version") and name != expected:
            errs.append(invalid("metadata.name", name, f"must be `spec.version+\".\"+spec.group`: {expected!r}"))
        for field in ("groupPriorityMinimum", "versionPriority"):
            value = spec.get(field)
            if not isinstance(value, int) or value <= 0:
                errs.append(invalid(f"spec.{field}", value, "must be positive and less than 1000000"
                                    if field == "groupPriorityMinimum" else "must be positive and less than 1000"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        service = _dict(_dict(obj.get("spec")).get("service"))
        shown = f"{service.get('namespace')}/{service.get('name')}" if service else "Local"
        return [obj["metadata"]["name"], shown, _available(obj), creation_age(obj, ctx)]


register(ResourceType(GROUP, "v1", "APIService", "apiservices", False, APIServiceStrategy(),
                      categories=["api-extensions"], subresources=["status"]))
