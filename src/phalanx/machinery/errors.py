"""API errors in upstream's shape: `Status` bodies and field errors.

A handler raises `StatusError`; the API server turns it into a `metav1.Status` JSON body with
the same `reason`, `code` and `details` kube-apiserver would send, so kubectl prints the words a
Kubernetes user already knows (`Error from server (NotFound): pods "x" not found`).

Validation code collects `FieldError`s (built with `required`, `invalid`, `forbidden`, ... below)
into a list and raises `invalid(kind_qualified, name, errors)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import orjson


def go_repr(value: Any) -> str:
    """Format a value the way upstream's field errors print it (`%q` for strings)."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (dict, list)):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return str(value)


@dataclass
class FieldError:
    """One validation failure at a field path (upstream `field.Error`)."""

    type: str  # FieldValueRequired, FieldValueInvalid, ...
    field: str
    value: Any = None
    detail: str = ""
    has_value: bool = True

    def body(self) -> str:
        t = self.type
        if t == "FieldValueRequired":
            s = "Required value"
        elif t == "FieldValueForbidden":
            s = "Forbidden"
        elif t in ("FieldValueInvalid", "FieldValueTypeInvalid"):
            s = "Invalid value"
            if self.has_value:
                s += ": " + go_repr(self.value)
        elif t == "FieldValueNotSupported":
            s = "Unsupported value"
            if self.has_value:
                s += ": " + go_repr(self.value)
        elif t == "FieldValueDuplicate":
            s = "Duplicate value"
            if self.has_value:
                s += ": " + go_repr(self.value)
        elif t == "FieldValueNotFound":
            s = "Not found"
            if self.has_value:
                s += ": " + go_repr(self.value)
        elif t == "FieldValueTooLong":
            s = "Too long"
        elif t == "FieldValueTooMany":
            s = "Too many"
            if self.has_value:
                s += ": " + go_repr(self.value)
        else:
            s = "Internal error"
        if self.detail:
            s += ": " + self.detail
        return s

    def message(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, Any]:
        return {"reason": self.type, "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, None, detail, has_value=False)


def invalid(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError("FieldValueInvalid", path, value, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, None, detail, has_value=False)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> FieldError:
    vals = ", ".join(go_repr(v) for v in supported)
    return FieldError("FieldValueNotSupported", path, value, f"supported values: {vals}" if vals else "")


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, value)


def not_found(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueNotFound", path, value)


def too_long(path: str, max_len: int) -> FieldError:
    return FieldError("FieldValueTooLong", path, None, f"may not be more than {max_len} bytes", has_value=False)


def too_many(path: str, actual: int, max_items: int) -> FieldError:
    return FieldError("FieldValueTooMany", path, actual, f"must have at most {max_items} items")


def immutable(path: str, value: Any) -> FieldError:
    return invalid(path, value, "field is immutable")


@dataclass
class StatusError(Exception):
    """An API error carrying a complete `metav1.Status`. `details` None leaves them out of the
    body; `{}` sends `"details":{}`, as upstream does for its generic server responses."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None

    def __str__(self) -> str:  # pragma: no cover - debugging aid
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        """The body, its fields in metav1.Status' order (kube-apiserver's encoding), empty ones left out."""
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        if self.message:
            body["message"] = self.message
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        if self.code:
            body["code"] = self.code
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    return d


def not_found_error(resource: str, group: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                       _details(name, group, resource))


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                       _details(name, group, resource))


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(409, "Conflict",
                       f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
                       _details(name, group, resource))


OBJECT_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def forbidden_error(resource: str, group: str, name: str, why: str) -> StatusError:
    q = _qualified(resource, group)
    msg = f'{q} "{name}" is forbidden: {why}' if name else f"{q} is forbidden: {why}"
    return StatusError(403, "Forbidden", msg, _details(name, group, resource))


def invalid_error(kind: str, group: str, name: str, errors: list[FieldError]) -> StatusError:
    """422 Invalid: `Pod "x" is invalid: [a: ..., b: ...]` as upstream's NewInvalid writes it."""
    qkind = f"{kind}.{group}" if group else kind
    msgs = [e.message() for e in errors]
    if len(msgs) == 1:
        agg = msgs[0]
    else:
        agg = "[" + ", ".join(msgs) + "]"
    details = _details(name, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return StatusError(422, "Invalid", f'{qkind} "{name}" is invalid: {agg}', details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message, {})


def requested_resource_not_found() -> StatusError:
    """404 for a path the server does not serve (an unknown group, version, resource or
    subresource): upstream's generic answer, with empty details."""
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def gone(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_large(message: str = "Request entity too large: limit is 3145728") -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf')


def internal_error(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)
