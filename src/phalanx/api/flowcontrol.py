"""flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration (API Priority and
Fairness), upstream's default objects, and the matching that classifies a request.

    DEFAULT_PRIORITY_LEVELS, DEFAULT_FLOW_SCHEMAS      # what bootstrap creates (upstream's names)
    match_flow_schema(schemas, request_info)           # the FlowSchema a request falls under
    precedence_order(schemas)                          # the order they are tried in (once per change)

A request is classified as upstream classifies it: the FlowSchemas in order of
`matchingPrecedence` (then name), the first whose rules match the request's user and its verb and
resource (or non-resource URL). The API server answers every request with the UIDs of that
FlowSchema and of its PriorityLevelConfiguration (`X-Kubernetes-PF-FlowSchema-UID`,
`X-Kubernetes-PF-PriorityLevel-UID`) and bounds the requests in flight per priority level; see
`apiserver/server.py`. Printer columns as upstream's (`kubectl get flowschemas,prioritylevelconfigurations`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from ..machinery.errors import FieldError, not_supported, required
from .common import _dict, _list, creation_age
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

Obj = dict[str, Any]
GROUP = "flowcontrol.apiserver.k8s.io"
API_VERSION = f"{GROUP}/v1"
ALL = "*"


@dataclass
class RequestInfo:
    """What classification reads of a request."""

    user: str
    groups: list[str] = field(default_factory=list)
    verb: str = "get"
    api_group: str = ""
    resource: str = ""
    namespace: str = ""
    path: str = ""
    resource_request: bool = True


# --- upstream's defaults -------------------------------------------------------------------------
def _limited(shares: int, lendable: int = 0, queued: bool = True) -> Obj:
    response: Obj = {"type": "Queue", "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}} \
        if queued else {"type": "Reject"}
    return {"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "lendablePercent": lendable,
                                           "limitResponse": response}}


DEFAULT_PRIORITY_LEVELS: dict[str, Obj] = {
    "exempt": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
    "catch-all": _limited(5, queued=False),
    "system": _limited(30, 33),
    "node-high": _limited(40, 25),
    "leader-election": _limited(10, 0),
    "workload-high": _limited(40, 50),
    "workload-low": _limited(100, 90),
    "global-default": _limited(20, 50),
}

_EVERYTHING = {"verbs": [ALL], "apiGroups": [ALL], "resources": [ALL], "clusterScope": True, "namespaces": [ALL]}
_ALL_URLS = {"verbs": [ALL], "nonResourceURLs": [ALL]}


def _group(name: str) -> Obj:
    return {"kind": "Group", "group": {"name": name}}


def _user(name: str) -> Obj:
    return {"kind": "User", "user": {"name": name}}


def _sa(namespace: str, name: str) -> Obj:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": name}}


def _schema(level: str, precedence: int, subjects: list[Obj], by_user: bool = True,
            resource_rules: Optional[list[Obj]] = None, url_rules: Optional[list[Obj]] = None) -> Obj:
    rule: Obj = {"subjects": subjects, "resourceRules": resource_rules if resource_rules is not None
                 else [_EVERYTHING]}
    if url_rules is not None:
        rule["nonResourceRules"] = url_rules
    if not rule["resourceRules"]:
        del rule["resourceRules"]
    spec: Obj = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence, "rules": [rule]}
    if by_user:
        spec["distinguisherMethod"] = {"type": "ByUser"}
    return spec


_KUBE_SYSTEM_SA = [_sa("kube-system", ALL)]
DEFAULT_FLOW_SCHEMAS: dict[str, Obj] = {
    "exempt": _schema("exempt", 1, [_group("system:masters")], by_user=False, url_rules=[_ALL_URLS]),
    "probes": _schema("exempt", 2, [_group("system:unauthenticated"), _group("system:authenticated")],
                      by_user=False, resource_rules=[],
                      url_rules=[{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]),
    "system-leader-election": _schema("leader-election", 100, [_user("system:kube-controller-manager"),
                                                               _user("system:kube-scheduler")],
                                      resource_rules=[{"verbs": ["get", "create", "update"],
                                                       "apiGroups": ["coordination.k8s.io"],
                                                       "resources": ["leases"], "namespaces": [ALL]}]),
    "endpoint-controller": _schema("workload-high", 150, [_user("system:kube-controller-manager")],
                                   resource_rules=[{"verbs": ["get", "create", "update"], "apiGroups": [""],
                                                    "resources": ["endpoints"], "namespaces": [ALL]}]),
    "workload-leader-election": _schema("leader-election", 200, _KUBE_SYSTEM_SA,
                                        resource_rules=[{"verbs": ["get", "create", "update"],
                                                         "apiGroups": ["coordination.k8s.io"],
                                                         "resources": ["leases"], "namespaces": [ALL]}]),
    "system-node-high": _schema("node-high", 400, [_group("system:nodes")],
                                resource_rules=[{"verbs": [ALL], "apiGroups": ["", "coordination.k8s.io"],
                                                 "resources": ["nodes", "nodes/status", "leases"],
                                                 "clusterScope": True, "namespaces": [ALL]}]),
    "system-nodes": _schema("system", 500, [_group("system:nodes")], url_rules=[_ALL_URLS]),
    "kube-controller-manager": _schema("workload-high", 800, [_user("system:kube-controller-manager")],
                                       url_rules=[_ALL_URLS]),
    "kube-scheduler": _schema("workload-high", 800, [_user("system:kube-scheduler")], url_rules=[_ALL_URLS]),
    "kube-system-service-accounts": _schema("workload-high", 900, _KUBE_SYSTEM_SA, url_rules=[_ALL_URLS]),
    "service-accounts": _schema("workload-low", 9000, [_group("system:serviceaccounts")], url_rules=[_ALL_URLS]),
    "global-default": _schema("global-default", 9900, [_group("system:unauthenticated"),
                                                        _group("system:authenticated")], url_rules=[_ALL_URLS]),
    "catch-all": _schema("catch-all", 10000, [_group("system:unauthenticated"), _group("system:authenticated")],
                         url_rules=[_ALL_URLS]),
}


def default_objects() -> list[tuple[str, Obj]]:
    """(plural, object) for every default priority level and flow schema, levels first."""
    out = []
    annotations = {"apf.kubernetes.io/autoupdate-spec": "true"}
    for name, spec in DEFAULT_PRIORITY_LEVELS.items():
        out.append(("prioritylevelconfigurations", {"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration",
                    "metadata": {"name": name, "annotations": dict(annotations)}, "spec": spec}))
    for name, spec in DEFAULT_FLOW_SCHEMAS.items():
        out.append(("flowschemas", {"apiVersion": API_VERSION, "kind": "FlowSchema",
                    "metadata": {"name": name, "annotations": dict(annotations)}, "spec": spec}))
    return out


# --- matching ------------------------------------------------------------------------------------
def _subject_matches(subject: Obj, info: RequestInfo) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = _dict(subject.get("user")).get("name")
        return name in (ALL, info.user)
    if kind == "Group":
        name = _dict(subject.get("group")).get("name")
        return name == ALL or name in info.groups
    if kind == "ServiceAccount":
        sa = _dict(subject.get("serviceAccount"))
        prefix = "system:serviceaccount:"
        if not info.user.startswith(prefix):
            return False
        namespace, _, name = info.user[len(prefix):].partition(":")
        return sa.get("namespace") == namespace and sa.get("name") in (ALL, name)
    return False


def _has(values: Any, value: str) -> bool:
    items = _list(values)
    return ALL in items or value in items


def _resource_rule_matches(rule: Obj, info: RequestInfo) -> bool:
    if not (_has(rule.get("verbs"), info.verb) and _has(rule.get("apiGroups"), info.api_group)
            and _has(rule.get("resources"), info.resource)):
        return False
    if not info.namespace:
        return bool(rule.get("clusterScope"))
    return _has(rule.get("namespaces"), info.namespace)


def _url_rule_matches(rule: Obj, info: RequestInfo) -> bool:
    if not _has(rule.get("verbs"), info.verb):
        return False
    for url in _list(rule.get("nonResourceURLs")):
        if url == ALL or url == info.path or (url.endswith("/*") and info.path.startswith(url[:-1])):
            return True
    return False


def _policy_matches(policy: Obj, info: RequestInfo) -> bool:
    if not any(_subject_matches(_dict(s), info) for s in _list(policy.get("subjects"))):
        return False
    if info.resource_request:
        return any(_resource_rule_matches(_dict(r), info) for r in _list(policy.get("resourceRules")))
    return any(_url_rule_matches(_dict(r), info) for r in _list(policy.get("nonResourceRules")))


def precedence_order(schemas: Iterable[Obj]) -> list[Obj]:
    """FlowSchemas in the order they are tried: lowest matchingPrecedence first, then by name."""
    return sorted(schemas, key=lambda s: (_dict(s.get("spec")).get("matchingPrecedence", 1000),
                                          s["metadata"]["name"]))


def match_flow_schema(schemas: Iterable[Obj], info: RequestInfo, *, ordered: bool = False) -> Optional[Obj]:
    """The FlowSchema that classifies the request: lowest matchingPrecedence first, then by name
    (`ordered=True`: `schemas` are in that order already, as `precedence_order` gives them)."""
    for schema in (schemas if ordered else precedence_order(schemas)):
        if any(_policy_matches(_dict(p), info) for p in _list(_dict(schema.get("spec")).get("rules"))):
            return schema
    return None


# --- strategies ----------------------------------------------------------------------------------
class FlowSchemaStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("PriorityLevel", "string", "", "The name of the priority level this flow schema refers to."),
        Column("MatchingPrecedence", "string", "", "The matching precedence of this flow schema."),
        Column("DistinguisherMethod", "string", "", "The distinguisher method of this flow schema."),
        AGE_COLUMN,
        Column("MissingPL", "string", "", "Whether the priority level referred to by this flow schema exists."),
    ]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
            spec["matchingPrecedence"] = 1000

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        if not _dict(spec.get("priorityLevelConfiguration")).get("name"):
            return [required("spec.priorityLevelConfiguration.name", "must reference a priority level")]
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        method = _dict(spec.get("distinguisherMethod")).get("type") or "<none>"
        missing = "Unknown"
        for c in _list(_dict(obj.get("status")).get("conditions")):
            if isinstance(c, dict) and c.get("type") == "Dangling":
                missing = c.get("status", "Unknown")
        return [obj["metadata"]["name"], _dict(spec.get("priorityLevelConfiguration")).get("name", ""),
                str(spec.get("matchingPrecedence", "")), method, creation_age(obj, ctx), missing]


class PriorityLevelStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Type", "string", "", "The type of the configuration (Exempt or Limited)."),
        Column("NominalConcurrencyShares", "string", "", "The nominal concurrency shares of this level."),
        Column("Queues", "string", "", "The number of queues of this priority level."),
        Column("HandSize", "string", "", "The hand size of this priority level."),
        Column("QueueLengthLimit", "string", "", "The queue length limit of this priority level."),
        AGE_COLUMN,
    ]
    status_is_subresource = True

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        kind = _dict(obj.get("spec")).get("type")
        if kind not in ("Exempt", "Limited"):
            return [not_supported("spec.type", kind or "", ("Exempt", "Limited"))]
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        limited = _dict(spec.get("limited"))
        queuing = _dict(_dict(limited.get("limitResponse")).get("queuing"))
        shares = limited.get("nominalConcurrencyShares") if limited else None  # `<none>` for Exempt, as upstream

        def cell(v: Any) -> str:
            return "<none>" if v is None else str(v)
        return [obj["metadata"]["name"], spec.get("type", ""), cell(shares), cell(queuing.get("queues")),
                cell(queuing.get("handSize")), cell(queuing.get("queueLengthLimit")), creation_age(obj, ctx)]


register(ResourceType(GROUP, "v1", "FlowSchema", "flowschemas", False, FlowSchemaStrategy(),
                      subresources=["status"]))
register(ResourceType(GROUP, "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", False,
                      PriorityLevelStrategy(), subresources=["status"]))
