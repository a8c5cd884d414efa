"""Validation of `CustomResourceDefinition` objects, with upstream's field paths and messages.

`validate_crd(crd)` checks the name (`<plural>.<group>`), group, scope, names, versions (exactly
one `storage`, unique DNS-1035 names), each version's structural schema (a type at the root and
for every specified field, metadata restricted to name and generateName, list-map keys, valid
defaults, compiling CEL rules), subresources and printer columns. `validate_crd_update` adds the
immutable scope and the stored versions that must stay in `spec.versions`.
"""

from __future__ import annotations

import re
from typing import Any

from ...machinery import errors
from ...machinery.errors import FieldError
from . import celrules, jsonpath
from . import schema as structural

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
_SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def _dns1035(value: Any, path: str, mixed_case: bool = False) -> list[FieldError]:
    text = value.lower() if mixed_case and isinstance(value, str) else value
    if isinstance(text, str) and _DNS1035.match(text) and len(text) <= 63:
        return []
    msg = ("may have mixed case, but should otherwise match: " if mixed_case else "") + _DNS1035_MSG
    return [errors.invalid(path, value, msg)]


def validate_crd(crd: dict) -> list[FieldError]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    errs: list[FieldError] = []
    group, plural = spec.get("group") or "", names.get("plural") or ""
    name = (crd.get("metadata") or {}).get("name")
    if name != f"{plural}.{group}":
        errs.append(errors.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(errors.required("spec.group"))
    elif "." not in group:
        errs.append(errors.invalid("spec.group", group, "should be a domain with at least one dot"))
    if spec.get("scope") not in ("Cluster", "Namespaced"):
        errs.append(errors.not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"]) if spec.get("scope")
                    else errors.required("spec.scope"))
    errs += _names_errors(names, "spec.names")
    errs += _versions_errors(spec)
    errs += _conversion_errors(spec)
    if spec.get("preserveUnknownFields") is True:
        errs.append(errors.invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                                   "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
    return errs


def _conversion_errors(spec: dict) -> list[FieldError]:
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy", "None")
    if strategy not in ("None", "Webhook"):
        return [errors.not_supported("spec.conversion.strategy", strategy, ["None", "Webhook"])]
    if strategy == "Webhook" and not isinstance(conversion.get("webhook"), dict):
        return [errors.required("spec.conversion.webhook", "required when strategy is set to Webhook")]
    if strategy == "None" and conversion.get("webhook") is not None:
        return [errors.forbidden("spec.conversion.webhook", "should not be set when strategy is not set to Webhook")]
    return []


def _names_errors(names: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for field in ("plural", "singular"):
        value = names.get(field)
        if value:
            errs += _dns1035(value, f"{path}.{field}")
        elif field == "plural":
            errs.append(errors.required(f"{path}.plural"))
    for i, short in enumerate(names.get("shortNames") or []):
        errs += _dns1035(short, f"{path}.shortNames[{i}]")
    for field in ("kind", "listKind"):
        value = names.get(field)
        if value:
            errs += _dns1035(value, f"{path}.{field}", mixed_case=True)
        elif field == "kind":
            errs.append(errors.required(f"{path}.kind"))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(errors.invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same"))
    for i, cat in enumerate(names.get("categories") or []):
        errs += _dns1035(cat, f"{path}.categories[{i}]")
    return errs


def _versions_errors(spec: dict) -> list[FieldError]:
    versions = spec.get("versions") or []
    if not versions:
        return [errors.required("spec.versions")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        path = f"spec.versions[{i}]"
        vname = v.get("name")
        if not vname:
            errs.append(errors.required(f"{path}.name"))
        else:
            errs += _dns1035(vname, f"{path}.name")
            if vname in seen:
                errs.append(errors.duplicate(f"{path}.name", vname))
            seen.add(vname)
        errs += _version_errors(v, path)
    storage = [v for v in versions if v.get("storage")]
    if len(storage) != 1:
        errs.append(errors.invalid("spec.versions", [v.get("name") for v in versions],
                                   "must have exactly one version marked as storage version"))
    if not any(v.get("served") for v in versions):
        errs.append(errors.invalid("spec.versions", [v.get("name") for v in versions],
                                   "must have at least one served version"))
    return errs


def _version_errors(v: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    schema = (v.get("schema") or {}).get("openAPIV3Schema")
    spath = f"{path}.schema.openAPIV3Schema"
    if not isinstance(schema, dict):
        errs.append(errors.required(spath, "schemas are required"))
    else:
        errs += structural_errors(schema, spath)
        if not errs:
            errs += celrules.compile_errors(schema, spath)
    subs = v.get("subresources") or {}
    scale = subs.get("scale")
    if isinstance(scale, dict):
        errs += _scale_errors(scale, f"{path}.subresources.scale")
    for i, col in enumerate(v.get("additionalPrinterColumns") or []):
        errs += _column_errors(col, f"{path}.additionalPrinterColumns[{i}]")
    return errs


def _scale_errors(scale: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for field, prefix in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value = scale.get(field)
        if not value:
            errs.append(errors.required(f"{path}.{field}"))
        elif not str(value).startswith(prefix):
            errs.append(errors.invalid(f"{path}.{field}", value, f"should be a json path under {prefix.rstrip('.')}"))
    return errs


def _column_errors(col: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not col.get("name"):
        errs.append(errors.required(f"{path}.name"))
    if not col.get("type"):
        errs.append(errors.required(f"{path}.type"))
    elif col["type"] not in _COLUMN_TYPES:
        errs.append(errors.not_supported(f"{path}.type", col["type"], _COLUMN_TYPES))
    json_path = col.get("jsonPath")
    if not json_path:
        errs.append(errors.required(f"{path}.jsonPath"))
    elif not _simple_json_path(str(json_path)):
        errs.append(errors.invalid(f"{path}.jsonPath", json_path, "must be a simple json path starting with ."))
    return errs


def _simple_json_path(path: str) -> bool:
    if not path.startswith("."):
        return False
    try:
        jsonpath.compile_path(path)
    except ValueError:
        return False
    return True


# -- structural schemas ---------------------------------------------------------------------------
def structural_errors(schema: dict, path: str) -> list[FieldError]:
    """Why `schema` is not a structural schema (upstream's words)."""
    errs: list[FieldError] = []
    t = schema.get("type")
    if not t and not schema.get("x-kubernetes-preserve-unknown-fields"):
        errs.append(errors.required(f"{path}.type", "must not be empty at the root"))
    elif t and t != "object":
        errs.append(errors.invalid(f"{path}.type", t, "must be object at the root"))
    meta = (schema.get("properties") or {}).get("metadata")
    if isinstance(meta, dict) and set(meta.get("properties") or {}) - {"name", "generateName"}:
        errs.append(errors.forbidden(f"{path}.properties[metadata]",
                                     "must not specify anything other than name and generateName, but metadata "
                                     "is implicitly specified"))
    errs += _node_errors(schema, path, root=True)
    return errs


def _node_errors(schema: dict, path: str, root: bool = False) -> list[FieldError]:
    return _value_rule_errors(schema, path, root) + _child_errors(schema, path)


def _value_rule_errors(schema: dict, path: str, root: bool) -> list[FieldError]:
    """The node's own keywords: type, preserve-unknown-fields, list-map keys, its default."""
    errs: list[FieldError] = []
    t = schema.get("type")
    if t and t not in _SCHEMA_TYPES:
        errs.append(errors.not_supported(f"{path}.type", t, _SCHEMA_TYPES))
    pres = schema.get("x-kubernetes-preserve-unknown-fields")
    if pres is not None and pres is not True:
        errs.append(errors.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", pres, "must be true or undefined"))
    if schema.get("x-kubernetes-list-type") == "map" and not schema.get("x-kubernetes-list-map-keys"):
        errs.append(errors.required(f"{path}.x-kubernetes-list-map-keys",
                                    "must not be empty if x-kubernetes-list-type is map"))
    if "default" in schema and not root:
        bad = structural.validate_value(schema["default"], schema, "default")
        if bad:
            errs.append(errors.invalid(f"{path}.default", schema["default"], bad[0].detail or bad[0].body()))
    return errs


def _typed_child(sub: dict, path: str, what: str) -> list[FieldError]:
    """A specified child needs a type (unless int-or-string or preserving), then its own checks."""
    errs: list[FieldError] = []
    if not sub.get("type") and not _typeless_ok(sub):
        errs.append(errors.required(f"{path}.type", f"must not be empty for specified {what}"))
    return errs + _node_errors(sub, path)


def _child_errors(schema: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            errs += _typed_child(sub, f"{path}.properties[{key}]", "object fields")
    items = schema.get("items")
    if isinstance(items, dict):
        errs += _typed_child(items, f"{path}.items", "array items")
    elif schema.get("type") == "array":
        errs.append(errors.required(f"{path}.items", "must be specified"))
    add = schema.get("additionalProperties")
    if isinstance(add, dict):
        if schema.get("properties"):
            errs.append(errors.forbidden(f"{path}.additionalProperties",
                                         "additionalProperties and properties are mutual exclusive"))
        errs += _typed_child(add, f"{path}.additionalProperties", "additionalProperties")
    return errs


def _typeless_ok(schema: dict) -> bool:
    return bool(schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields"))


def validate_crd_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_crd(new)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if ns.get("scope") != os_.get("scope"):
        errs.append(errors.immutable("spec.scope", ns.get("scope")))
    if ns.get("group") != os_.get("group"):
        errs.append(errors.immutable("spec.group", ns.get("group")))
    errs += stored_versions_errors(new)
    return errs


def stored_versions_errors(crd: dict) -> list[FieldError]:
    names = {v.get("name") for v in (crd.get("spec") or {}).get("versions") or []}
    out = []
    for i, sv in enumerate((crd.get("status") or {}).get("storedVersions") or []):
        if sv not in names:
            out.append(errors.invalid(f"status.storedVersions[{i}]", sv, "must appear in spec.versions"))
    return out
