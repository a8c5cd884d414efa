"""The `paths` of an OpenAPI v3 document (`/openapi/v3/<group-version>`): for each served resource
its collection, item, all-namespaces and subresource endpoints, with operation ids, parameters,
request bodies and responses named as upstream names them.

    add_resource_paths(paths, group, version, rt, kind_name, list_name, roots)
    paths["/" + gv_path(group, version) + "/"] = api_resources_path_item(group, version)
"""

from __future__ import annotations

import re
from typing import Any, Optional

REF_PREFIX = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
# Groups whose kinds are custom resources upstream (no strategic merge patch).
CUSTOM_RESOURCE_GROUPS = frozenset({"jobset.x-k8s.io"})
_UNAUTHORIZED = {"description": "Unauthorized"}


def gv_path(group: str, version: str) -> str:
    """`api/v1` for the core group, `apis/<group>/<version>` otherwise (the index keys)."""
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _tag(group: str, version: str) -> str:
    return f"{group.split('.')[0] if group else 'core'}_{version}"


def _op_prefix(group: str, version: str) -> str:
    g = "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-]", group.replace(".k8s.io", ""))) if group else "Core"
    return f"{g}{version[:1].upper()}{version[1:]}"


def _json_response(schema_name: Optional[str], description: str = "OK") -> dict:
    schema = {"$ref": REF_PREFIX + schema_name} if schema_name else {"type": "object"}
    return {"description": description,
            "content": {ct: {"schema": schema} for ct in ("application/json", "application/yaml",
                                                           "application/vnd.kubernetes.protobuf")}}


def _query(name: str, description: str, schema: Optional[dict] = None) -> dict:
    return {"name": name, "in": "query", "description": description, "schema": schema or {"type": "string"}}


_P_PRETTY = _query("pretty", "If 'true', the output is pretty printed.")
_P_DRY_RUN = _query("dryRun", "When present, modifications are not persisted. The only valid value is All.")
_P_FIELD_MANAGER = _query("fieldManager", "Name of the actor making the change, for field management.")
_P_FIELD_VALIDATION = _query(
    "fieldValidation",
    "How the server treats unknown or duplicate fields in the request body: Ignore, Warn or Strict.")
_P_FORCE = _query("force", "Take ownership of conflicting fields on apply.", {"type": "boolean"})
_LIST_PARAMS = [
    _query("allowWatchBookmarks", "Ask for BOOKMARK events in a watch.", {"type": "boolean"}),
    _query("continue", "Token returned by a previous paginated list."),
    _query("fieldSelector", "Select objects by field values."),
    _query("labelSelector", "Select objects by label."),
    _query("limit", "Maximum number of items in one response.", {"type": "integer"}),
    _query("resourceVersion", "Resource version to list or watch from."),
    _query("resourceVersionMatch", "How resourceVersion is applied to the list."),
    _query("sendInitialEvents", "Start a watch with the current objects, ended by a bookmark.", {"type": "boolean"}),
    _query("timeoutSeconds", "Timeout of a list or watch call.", {"type": "integer"}),
    _query("watch", "Watch for changes instead of listing.", {"type": "boolean"}),
]
_PATCH_CONTENT_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
                        "application/merge-patch+json", "application/strategic-merge-patch+json")
_WRITE_PARAMS = [_P_DRY_RUN, _P_FIELD_MANAGER, _P_FIELD_VALIDATION]
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
_BINDING = "io.k8s.api.core.v1.Binding"
_EVICTION = "io.k8s.api.policy.v1.Eviction"


def api_resources_path_item(group: str, version: str) -> dict:
    """`/<group-version>/`: the resource list of the group version."""
    return {"get": {
        "operationId": f"get{_op_prefix(group, version)}APIResources",
        "description": "get available resources",
        "tags": [_tag(group, version)],
        "responses": {"200": _json_response(f"{META}.APIResourceList"), "401": _UNAUTHORIZED},
    }}


def _body(schema: dict) -> dict:
    return {"required": True, "content": {ct: {"schema": schema} for ct in
                                          ("application/json", "application/yaml",
                                           "application/vnd.kubernetes.protobuf")}}


class _ResourcePaths:
    """The operations of one resource; `allows(verb)` is true for every verb when it lists none."""

    def __init__(self, group: str, version: str, rt: Any, kind_name: Optional[str], list_name: Optional[str]):
        self.rt = rt
        self.kind_name, self.list_name = kind_name, list_name
        self.base = "/" + gv_path(group, version)
        self.gvk = {"group": group, "version": version, "kind": rt.kind}
        self.prefix = _op_prefix(group, version)
        self.tag = [_tag(group, version)]
        self.ns = "Namespaced" if rt.namespaced else ""
        self.verbs = set(getattr(rt, "verbs", None) or ())
        self.collection = f"{self.base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced \
            else f"{self.base}/{rt.plural}"
        self.item = f"{self.collection}/{{name}}"
        self.name_param = {"name": "name", "in": "path", "required": True, "description": f"name of the {rt.kind}",
                           "schema": {"type": "string", "uniqueItems": True}}
        ns_param = {"name": "namespace", "in": "path", "required": True,
                    "description": "object name and auth scope, such as for teams and projects",
                    "schema": {"type": "string", "uniqueItems": True}}
        self.common = ([ns_param] if rt.namespaced else []) + [_P_PRETTY]
        self.body_schema = {"$ref": REF_PREFIX + kind_name} if kind_name else {"type": "object"}
        self.custom = group in CUSTOM_RESOURCE_GROUPS

    def allows(self, verb: str) -> bool:
        return not self.verbs or verb in self.verbs

    def op(self, action: str, verb_word: str, description: str, **extra: Any) -> dict:
        o = {"operationId": f"{verb_word}{self.prefix}{self.ns}{self.rt.kind}{extra.pop('suffix', '')}",
             "description": description, "tags": self.tag,
             "x-kubernetes-action": action, "x-kubernetes-group-version-kind": dict(self.gvk)}
        o.update(extra)
        return o

    def patch_op(self, target_gvk: dict, schema_name: Optional[str], description: str, suffix: str = "") -> dict:
        types = [t for t in _PATCH_CONTENT_TYPES if not (self.custom and t.endswith("strategic-merge-patch+json"))]
        o = self.op("patch", "patch", description, suffix=suffix,
                    parameters=[_P_DRY_RUN, _P_FIELD_MANAGER, _P_FIELD_VALIDATION, _P_FORCE],
                    requestBody={"required": True,
                                 "content": {t: {"schema": {"$ref": REF_PREFIX + f"{META}.Patch"}} for t in types}},
                    responses={"200": _json_response(schema_name), "201": _json_response(schema_name, "Created"),
                               "401": _UNAUTHORIZED})
        o["x-kubernetes-group-version-kind"] = dict(target_gvk)
        return o

    def put_op(self, description: str, schema_name: Optional[str], body_schema: dict, suffix: str = "") -> dict:
        return self.op("put", "replace", description, suffix=suffix, parameters=list(_WRITE_PARAMS),
                       requestBody=_body(body_schema),
                       responses={"200": _json_response(schema_name), "201": _json_response(schema_name, "Created"),
                                  "401": _UNAUTHORIZED})

    def list_op(self, description: str) -> dict:
        return self.op("list", "list", description, suffix="", parameters=list(_LIST_PARAMS),
                       responses={"200": _json_response(self.list_name), "401": _UNAUTHORIZED})

    def collection_item(self) -> dict:
        rt, kind_name = self.rt, self.kind_name
        coll: dict = {"parameters": self.common}
        if self.allows("list"):
            coll["get"] = self.list_op(f"list or watch objects of kind {rt.kind}")
            coll["get"]["operationId"] = f"list{self.prefix}{self.ns}{rt.kind}"
        if self.allows("create"):
            coll["post"] = self.op("post", "create", f"create a {rt.kind}", parameters=list(_WRITE_PARAMS),
                                   requestBody=_body(self.body_schema),
                                   responses={"200": _json_response(kind_name),
                                              "201": _json_response(kind_name, "Created"),
                                              "202": _json_response(kind_name, "Accepted"), "401": _UNAUTHORIZED})
        if self.allows("deletecollection"):
            coll["delete"] = self.op("deletecollection", "deletecollection", f"delete collection of {rt.kind}",
                                     parameters=[_P_DRY_RUN] + list(_LIST_PARAMS),
                                     requestBody=_body({"$ref": REF_PREFIX + f"{META}.DeleteOptions"}),
                                     responses={"200": _json_response(f"{META}.Status"), "401": _UNAUTHORIZED})
            coll["delete"]["operationId"] = f"deletecollection{self.prefix}{self.ns}{rt.kind}"
        return coll

    def object_item(self) -> dict:
        rt, kind_name = self.rt, self.kind_name
        it: dict = {"parameters": [self.name_param] + self.common}
        if self.allows("get"):
            it["get"] = self.op("get", "read", f"read the specified {rt.kind}",
                                responses={"200": _json_response(kind_name), "401": _UNAUTHORIZED})
        if self.allows("update"):
            it["put"] = self.put_op(f"replace the specified {rt.kind}", kind_name, self.body_schema)
        if self.allows("patch"):
            it["patch"] = self.patch_op(self.gvk, kind_name, f"partially update the specified {rt.kind}")
        if self.allows("delete"):
            it["delete"] = self.op("delete", "delete", f"delete a {rt.kind}",
                                   parameters=[_P_DRY_RUN,
                                               _query("gracePeriodSeconds", "Seconds before the object is deleted.",
                                                      {"type": "integer"}),
                                               _query("propagationPolicy", "Orphan, Background or Foreground.")],
                                   requestBody=_body({"$ref": REF_PREFIX + f"{META}.DeleteOptions"}),
                                   responses={"200": _json_response(kind_name),
                                              "202": _json_response(kind_name, "Accepted"), "401": _UNAUTHORIZED})
        return it

    def all_namespaces_item(self) -> dict:
        all_ns = self.list_op(f"list or watch objects of kind {self.rt.kind} in all namespaces")
        all_ns["operationId"] = f"list{self.prefix}{self.rt.kind}ForAllNamespaces"
        return {"parameters": [_P_PRETTY], "get": all_ns}

    def status_ops(self, entry: dict, suffix: str) -> None:
        kind = self.rt.kind
        entry["get"] = self.op("get", "read", f"read status of the specified {kind}", suffix=suffix,
                               responses={"200": _json_response(self.kind_name), "401": _UNAUTHORIZED})
        entry["put"] = self.put_op(f"replace status of the specified {kind}", self.kind_name, self.body_schema,
                                   suffix)
        entry["patch"] = self.patch_op(self.gvk, self.kind_name, f"partially update status of the specified {kind}",
                                       suffix=suffix)

    def scale_ops(self, entry: dict, suffix: str) -> None:
        kind = self.rt.kind
        entry["get"] = self.op("get", "read", f"read scale of the specified {kind}", suffix=suffix,
                               responses={"200": _json_response(_SCALE), "401": _UNAUTHORIZED})
        entry["get"]["x-kubernetes-group-version-kind"] = _SCALE_GVK
        entry["put"] = self.put_op(f"replace scale of the specified {kind}", _SCALE, {"$ref": REF_PREFIX + _SCALE},
                                   suffix)
        entry["put"]["x-kubernetes-group-version-kind"] = _SCALE_GVK
        entry["patch"] = self.patch_op(_SCALE_GVK, _SCALE, f"partially update scale of the specified {kind}",
                                       suffix=suffix)

    def binding_ops(self, entry: dict, suffix: str) -> None:
        entry["post"] = self.op("post", "create", f"create binding of a {self.rt.kind}", suffix=suffix,
                                parameters=list(_WRITE_PARAMS), requestBody=_body({"$ref": REF_PREFIX + _BINDING}),
                                responses={"200": _json_response(_BINDING),
                                           "201": _json_response(_BINDING, "Created"), "401": _UNAUTHORIZED})
        entry["post"]["x-kubernetes-group-version-kind"] = {"group": "", "version": "v1", "kind": "Binding"}

    def eviction_ops(self, entry: dict, suffix: str) -> None:
        entry["post"] = self.op("post", "create", f"create eviction of a {self.rt.kind}", suffix=suffix,
                                parameters=list(_WRITE_PARAMS), requestBody=_body({"$ref": REF_PREFIX + _EVICTION}),
                                responses={"200": _json_response(_EVICTION),
                                           "201": _json_response(_EVICTION, "Created"), "401": _UNAUTHORIZED})
        entry["post"]["x-kubernetes-group-version-kind"] = {"group": "policy", "version": "v1", "kind": "Eviction"}

    def log_ops(self, entry: dict, suffix: str) -> None:
        entry["get"] = self.op("connect", "read", f"read log of the specified {self.rt.kind}", suffix=suffix,
                               parameters=[_query("container", "The container to stream logs of."),
                                           _query("follow", "Follow the log stream.", {"type": "boolean"}),
                                           _query("tailLines", "Lines from the end to show.", {"type": "integer"})],
                               responses={"200": {"description": "OK", "content": {"text/plain": {
                                   "schema": {"type": "string"}}}}, "401": _UNAUTHORIZED})


# The subresources with endpoints in the document, and the schemas their operations refer to.
_SUBRESOURCE_OPS = {"status": (_ResourcePaths.status_ops, None), "scale": (_ResourcePaths.scale_ops, _SCALE),
                    "binding": (_ResourcePaths.binding_ops, _BINDING), "log": (_ResourcePaths.log_ops, None),
                    "eviction": (_ResourcePaths.eviction_ops, _EVICTION)}


def add_resource_paths(paths: dict, group: str, version: str, rt: Any, kind_name: Optional[str],
                       list_name: Optional[str], roots: set[str]) -> None:
    """Add the endpoints of `rt` to `paths`, and to `roots` the schemas they refer to beyond the
    kind and its list."""
    r = _ResourcePaths(group, version, rt, kind_name, list_name)
    paths[r.collection] = r.collection_item()
    paths[r.item] = r.object_item()
    if rt.namespaced and r.allows("list"):
        paths[f"{r.base}/{rt.plural}"] = r.all_namespaces_item()
    for sub in rt.subresources:
        if sub not in _SUBRESOURCE_OPS:
            continue
        add_ops, schema = _SUBRESOURCE_OPS[sub]
        if schema is not None:
            roots.add(schema)
        entry: dict = {"parameters": [r.name_param] + r.common}
        add_ops(r, entry, sub[:1].upper() + sub[1:])
        paths[f"{r.item}/{sub}"] = entry
