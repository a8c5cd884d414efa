"""Custom resources: the `ResourceType` + `Strategy` of each served version of a CRD.

    types = resource_types(crd)          # one ResourceType per served version, storage marked
    schemas = openapi_components(crd)    # OpenAPI v3 components of each served version

`CustomResourceStrategy` prunes unknown fields (unless preserved), applies the schema's defaults,
validates against the structural schema and its `x-kubernetes-validations` rules (with `oldSelf`
on updates), keeps `status` apart when the status subresource is on, prints the version's
`additionalPrinterColumns` (NAME, then the columns; AGE when there are none), serves its
`selectableFields` as field selectors, and reads and writes
the scale subresource at the CRD's replicas paths. Versions convert with strategy `None`: the
object is the same, only `apiVersion` changes (`rest.API.output`).
"""

from __future__ import annotations

from typing import Any, Callable

from ...machinery import errors
from ...machinery.errors import FieldError
from ...machinery.timestamps import parse_rfc3339
from ..registry import AGE_COLUMN, NAME_COLUMN, Column, Obj, ResourceType, Strategy, StrategyContext, age_since
from . import celrules, jsonpath
from . import crd as crds
from . import schema as structural

META_REF = {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
            "description": "Standard object's metadata. More info: "
                           "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}
LIST_META_REF = {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}],
                 "description": "Standard list metadata."}
_API_VERSION = {"type": "string", "description": "APIVersion defines the versioned schema of this representation "
                                                 "of an object."}
_KIND = {"type": "string", "description": "Kind is a string value representing the REST resource this object "
                                          "represents."}

def _version_schema(version: dict) -> dict:
    return (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object",
                                                                     "x-kubernetes-preserve-unknown-fields": True}

class CustomResourceStrategy(Strategy):
    """The strategy of one served version of a CRD."""

    def __init__(self, crd: Obj, version: dict):
        self.crd_name = crd["metadata"]["name"]
        self.kind = crds.accepted_names(crd).get("kind") or crd["spec"]["names"]["kind"]
        self.schema = _version_schema(version)
        subs = version.get("subresources") or {}
        self.status_is_subresource = "status" in subs
        self.scale_paths = subs.get("scale") if isinstance(subs.get("scale"), dict) else None
        self.field_selectors = {str(f["jsonPath"]).lstrip("."): _selectable(str(f["jsonPath"]))
                                for f in version.get("selectableFields") or [] if f.get("jsonPath")}
        self.printer_columns = list(version.get("additionalPrinterColumns") or [])
        self.columns = [NAME_COLUMN] + [
            Column(c["name"], c.get("type", "string"), c.get("format", ""), c.get("description", ""),
                   int(c.get("priority", 0) or 0)) for c in self.printer_columns] if self.printer_columns \
            else [NAME_COLUMN, AGE_COLUMN]

    # -- decoding --------------------------------------------------------------------------
    def unknown_fields(self, obj: Obj) -> list[str]:
        """Prune what the schema does not declare; the pruned paths (what strict decoding reports)."""
        return structural.prune(obj, self.schema)

    # -- create / update -------------------------------------------------------------------
    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        structural.prune(obj, self.schema)
        structural.default(obj, self.schema)

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        if operation != "CREATE":
            return
        crd = ctx.lookup(crds.KEY, "", self.crd_name)
        if crd is not None and crds.terminating(crd):
            raise errors.method_not_allowed("create not allowed while custom resource definition is terminating")

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        structural.prune(new, self.schema)
        structural.default(new, self.schema)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = structural.validate(obj, self.schema)
        return errs or celrules.check(obj, self.schema)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = structural.validate(new, self.schema)
        return errs or celrules.check(new, self.schema, old)

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self.validate_update(new, old, ctx)

    # -- printing --------------------------------------------------------------------------
    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        if not self.printer_columns:
            return [obj["metadata"]["name"], age_since(obj["metadata"].get("creationTimestamp"), ctx)]
        return [obj["metadata"]["name"]] + [_cell(obj, c, ctx) for c in self.printer_columns]

    # -- scale -----------------------------------------------------------------------------
    def scale_of(self, obj: Obj) -> dict:
        paths = self.scale_paths or {}
        md = obj["metadata"]
        status: dict[str, Any] = {"replicas": _first(obj, paths.get("statusReplicasPath"), 0)}
        selector = _first(obj, paths.get("labelSelectorPath"), None)
        if selector is not None:
            status["selector"] = selector
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": md["name"], "namespace": md.get("namespace"), "uid": md.get("uid"),
                             "resourceVersion": md.get("resourceVersion"),
                             "creationTimestamp": md.get("creationTimestamp")},
                "spec": {"replicas": _first(obj, paths.get("specReplicasPath"), 0)}, "status": status}

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        path = str((self.scale_paths or {}).get("specReplicasPath") or ".spec.replicas")
        keys = [k for k in path.split(".") if k]
        target = obj
        for k in keys[:-1]:
            target = target.setdefault(k, {})
        target[keys[-1]] = replicas

def _selectable(path: str) -> Callable[[Obj], str]:
    """A `selectableFields` entry as a field selector: the value's text, "" when unset."""
    def get(obj: Obj) -> str:
        value = _first(obj, path, "")
        return _text(value)
    return get


def _first(obj: Obj, path: str | None, fallback: Any) -> Any:
    if not path:
        return fallback
    found = jsonpath.find(obj, path)
    return found[0] if found else fallback

def _cell(obj: Obj, column: dict, ctx: StrategyContext) -> Any:
    """One printer-column cell as upstream's table convertor makes it: the path's first value,
    as the column's type (a `date` as an age), None when missing or of another type."""
    try:
        found = jsonpath.find(obj, column.get("jsonPath") or "")
    except ValueError:
        return None
    if not found or found[0] is None:
        return None
    value, ctype = found[0], column.get("type")
    if ctype == "string":
        return _text(value)
    if ctype == "date":
        if not isinstance(value, str):
            return None
        return age_since(value, ctx) if parse_rfc3339(value) is not None else "<invalid>"
    return _typed_cell(ctype, value)


def _typed_cell(ctype: Any, value: Any) -> Any:
    if isinstance(value, bool):
        return value if ctype == "boolean" else None
    if ctype == "integer" and isinstance(value, (int, float)):
        return int(value)
    if ctype == "number" and isinstance(value, (int, float)):
        return float(value)
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return errors.go_repr(value)


def resource_types(crd: Obj) -> list[ResourceType]:
    """One ResourceType per served version of an established CRD."""
    spec = crd["spec"]
    names = crds.accepted_names(crd)
    out = []
    for v in crds.served_versions(crd):
        subs = v.get("subresources") or {}
        rt = ResourceType(group=spec["group"], version=v["name"], kind=names["kind"], plural=names["plural"],
                          namespaced=spec.get("scope") == "Namespaced", strategy=CustomResourceStrategy(crd, v),
                          singular=names.get("singular") or names["kind"].lower(),
                          short_names=list(names.get("shortNames") or []),
                          categories=list(names.get("categories") or []),
                          subresources=[s for s in ("status", "scale") if s in subs],
                          storage_version=False)  # every version converts to the stored one (API._stored_as)
        out.append(rt)
    return out

def schema_name(group: str, version: str, kind: str) -> str:
    """Upstream's component name of a custom kind: the reversed group, version, kind."""
    return ".".join(list(reversed(group.split("."))) + [version, kind])

def openapi_components(crd: Obj) -> dict[str, dict]:
    """The OpenAPI v3 component schemas of every served version (kind and list)."""
    spec = crd["spec"]
    names = crds.accepted_names(crd)
    group, kind = spec["group"], names["kind"]
    out: dict[str, dict] = {}
    for v in crds.served_versions(crd):
        schema = dict(_version_schema(v))
        props = dict(schema.get("properties") or {})
        props.update({"apiVersion": _API_VERSION, "kind": _KIND, "metadata": META_REF})
        name = schema_name(group, v["name"], kind)
        gvk = {"group": group, "version": v["name"], "kind": kind}
        out[name] = {**schema, "type": "object", "properties": props, "x-kubernetes-group-version-kind": [gvk]}
        list_kind = names.get("listKind") or f"{kind}List"
        out[schema_name(group, v["name"], list_kind)] = {
            "description": f"{list_kind} is a list of {kind}", "type": "object", "required": ["items"],
            "properties": {"apiVersion": _API_VERSION, "kind": _KIND, "metadata": LIST_META_REF,
                           "items": {"type": "array", "items": {"$ref": f"#/components/schemas/{name}"},
                                     "description": f"List of {names['plural']}."}},
            "x-kubernetes-group-version-kind": [{**gvk, "kind": list_kind}]}
    return out
