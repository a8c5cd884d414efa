"""ObjectMeta rules every kind shares, as upstream's ValidateObjectMeta / ValidateObjectMetaUpdate
and the generic registry apply them: the name (by the kind's `Strategy.name_validation`), the
namespace for the kind's scope, labels and annotations, owner references, finalizers, and the
names that never change. Also Go's `omitempty` on what is stored.

    errs = validate_object_meta(rt, obj, old=None)   # [] or FieldErrors for a 422 Invalid
"""

from __future__ import annotations

import re
from typing import Any

from ..api.registry import ResourceType
from ..machinery import errors
from ..machinery.errors import FieldError
from ..machinery.names import qualified_name_errors, validate_annotations, validate_labels, validate_name

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"
_STANDARD_FINALIZERS = (FINALIZER_ORPHAN, FINALIZER_FOREGROUND, "kubernetes", "customresourcecleanup.apiextensions.k8s.io")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
_OMIT_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences", "managedFields")


def drop_empty_metadata(md: dict[str, Any]) -> None:
    """Go's `omitempty` on ObjectMeta: an empty map or list is not stored (`finalizers: []`)."""
    for f in _OMIT_WHEN_EMPTY:
        v = md.get(f, 0)
        if v is None or v == [] or v == {}:
            del md[f]


def validate_object_meta(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The metadata errors of `obj` (a create when `old` is None, else an update of `old`)."""
    md = obj.get("metadata") or {}
    errs: list[FieldError] = []
    if old is None:
        errs += _name_errors(getattr(rt.strategy, "name_validation", "subdomain"), md.get("name"))
    if rt.namespaced and not md.get("namespace"):
        errs.append(errors.required("metadata.namespace", ""))
    if not rt.namespaced and md.get("namespace"):
        errs.append(errors.forbidden("metadata.namespace", "not allowed on this type"))
    # Each check only when its field is set: most objects carry labels at most (hot path).
    labels, annotations = md.get("labels"), md.get("annotations")
    if labels:
        errs += validate_labels(labels, "metadata.labels")
    if annotations:
        errs += validate_annotations(annotations, "metadata.annotations")
    refs, finalizers = md.get("ownerReferences"), md.get("finalizers")
    if refs:
        errs += _owner_reference_errors(refs)
    if finalizers:
        errs += _finalizer_errors(finalizers)
    if old is not None:
        omd = old["metadata"]
        if md.get("name") != omd.get("name"):
            errs.append(errors.immutable("metadata.name", md.get("name")))
        if md.get("namespace", "") != omd.get("namespace", ""):
            errs.append(errors.immutable("metadata.namespace", md.get("namespace")))
    return errs


def _name_errors(how: str, name: Any) -> list[FieldError]:
    """`how`: subdomain (most kinds), label (Namespace), label1035 (Service), path_segment (Node, ...)."""
    if how == "label":
        return validate_name(name, "metadata.name", label=True)
    if how not in ("label1035", "path_segment"):
        return validate_name(name, "metadata.name")
    if not name:
        return [errors.required("metadata.name", "name or generateName is required")]
    if how == "label1035":
        if len(name) > 63 or not _DNS1035_LABEL.match(name):
            return [errors.invalid("metadata.name", name, _DNS1035_MESSAGE)]
    elif name in (".", "..") or "/" in name or "%" in name:
        return [errors.invalid("metadata.name", name, "may not contain '/' or '%'")]
    return []


def _owner_reference_errors(refs: list[dict[str, Any]]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ref in enumerate(refs):
        p = f"metadata.ownerReferences[{i}]"
        for key, what in (("apiVersion", "version"), ("kind", "kind"), ("name", "name"), ("uid", "uid")):
            if not ref.get(key):
                errs.append(errors.invalid(f"{p}.{key}", ref.get(key, ""), f"{what} must not be empty"))
    if sum(1 for ref in refs if ref.get("controller")) > 1:
        errs.append(errors.invalid("metadata.ownerReferences", refs,
                                   "Only one reference can have Controller set to true"))
    return errs


def _finalizer_errors(finalizers: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, f in enumerate(finalizers):
        p = f"metadata.finalizers[{i}]"
        if not isinstance(f, str):
            errs.append(errors.invalid(p, f, "must be a string"))
            continue
        if "/" not in f and f not in _STANDARD_FINALIZERS:
            errs.append(errors.forbidden(p, "name is neither a standard finalizer name nor is it fully qualified"))
        errs += [errors.invalid(p, f, m) for m in qualified_name_errors(f)]
    if FINALIZER_ORPHAN in finalizers and FINALIZER_FOREGROUND in finalizers:
        errs.append(errors.invalid("metadata.finalizers", finalizers,
                                   "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs
