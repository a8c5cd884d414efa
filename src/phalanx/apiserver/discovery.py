"""API discovery documents: aggregated (apidiscovery.k8s.io/v2) and legacy.

kubectl asks `/api` and `/apis` for the aggregated form first; answering with the exact
`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` content type makes that
the whole of discovery. Legacy `APIVersions`/`APIGroupList`/`APIResourceList` documents are served
too, for older clients (and for the dispatcher kubectl 1.32, which offers v2beta1).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Iterable

from ..api.registry import ResourceType

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

_SUB_VERBS = {"status": ["get", "patch", "update"], "binding": ["create"], "log": ["get"],
              "scale": ["get", "patch", "update"], "finalize": ["update"], "eviction": ["create"],
              "approval": ["get", "patch", "update"]}


def _sub_kind(rt: ResourceType, sub: str) -> tuple[str, str, str]:
    if sub == "binding":
        return "", "v1", "Binding"
    if sub == "scale":
        return "autoscaling", "v1", "Scale"
    if sub == "eviction":
        return "policy", "v1", "Eviction"
    return rt.group, rt.version, rt.kind


def version_order(version: str) -> tuple:
    """Kubernetes version priority: GA > beta > alpha, higher numbers first."""
    import re
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {"": 2, None: 2, "beta": 1, "alpha": 0}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (-stage, -major, -minor, version)


def group_versions(types: Iterable[ResourceType]) -> "OrderedDict[str, list[str]]":
    """Group name -> served versions, preferred first. The core group ("") comes first."""
    groups: dict[str, set[str]] = {}
    for rt in types:
        groups.setdefault(rt.group, set()).add(rt.version)
    out: OrderedDict[str, list[str]] = OrderedDict()
    for g in sorted(groups, key=lambda g: (g != "", g)):
        out[g] = sorted(groups[g], key=version_order)
    return out


def _storage_hash(rt: ResourceType) -> str:
    return hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()[:8].hex()


def _resource_entry_v2(rt: ResourceType) -> dict:
    entry: dict[str, object] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = []
    for sub in rt.subresources:
        g, v, k = _sub_kind(rt, sub)
        subs.append({"subresource": sub, "responseKind": {"group": g, "version": v, "kind": k},
                     "verbs": _SUB_VERBS.get(sub, ["get"])})
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(types: list[ResourceType], core: bool) -> dict:
    """The APIGroupDiscoveryList for `/api` (core=True) or `/apis`."""
    items = []
    for group, versions in group_versions(types).items():
        if (group == "") != core:
            continue
        vitems = []
        for v in versions:
            resources = [_resource_entry_v2(rt) for rt in sorted(types, key=lambda r: r.plural)
                         if rt.group == group and rt.version == v]
            vitems.append({"version": v, "resources": resources, "freshness": "Current"})
        md = {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None}
        items.append({"metadata": md, "versions": vitems})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


def api_versions(server_address: str) -> dict:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group_entry(group: str, versions: list[str]) -> dict:
    vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(types: list[ResourceType]) -> dict:
    groups = [_group_entry(g, vs) for g, vs in group_versions(types).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(types: list[ResourceType], group: str) -> dict | None:
    gv = group_versions(types).get(group)
    if not gv:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, gv)}


def api_resource_list(types: list[ResourceType], group: str, version: str) -> dict | None:
    sel = sorted((rt for rt in types if rt.group == group and rt.version == version), key=lambda r: r.plural)
    if not sel:
        return None
    resources = []
    for rt in sel:
        r = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
             "verbs": list(rt.verbs), "storageVersionHash": _storage_hash(rt)}
        if rt.short_names:
            r["shortNames"] = list(rt.short_names)
        if rt.categories:
            r["categories"] = list(rt.categories)
        resources.append(r)
        for sub in rt.subresources:
            g, v, k = _sub_kind(rt, sub)
            s = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced, "kind": k,
                 "verbs": _SUB_VERBS.get(sub, ["get"])}
            if g != rt.group or v != rt.version:
                s["group"] = g
                s["version"] = v
            resources.append(s)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
