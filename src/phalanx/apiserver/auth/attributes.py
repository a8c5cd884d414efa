"""Request attributes: what an authorizer decides on, read from an HTTP request as upstream's
`RequestInfoFactory` reads it.

    attrs = request_attributes(user, "GET", "/api/v1/namespaces/default/pods", {"watch": "1"})
    attrs.verb, attrs.resource, attrs.namespace     # "watch", "pods", "default"

Resource requests are `/api/<version>/...` and `/apis/<group>/<version>/...` with at least a
resource: the verb comes from the method (`get`/`list`/`watch` for GET by name, collection and
`?watch`; `delete`/`deletecollection` for DELETE by name and collection); a list whose
`fieldSelector` requires `metadata.name=X` is a request for the name X. Everything else (`/api`,
`/apis/apps/v1`, `/healthz`, `/openapi/v3`, ...) is a non-resource request whose verb is the
lower-cased method. `forbidden_error` words a denial exactly as upstream does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...machinery import errors
from ...machinery.selectors import parse_field_selector
from .user import UserInfo

NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_TRUE = ("1", "t", "T", "TRUE", "true", "True")


@dataclass(frozen=True)
class Attributes:
    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _group_version_rest(path: str) -> tuple[str, str, list[str]] | None:
    """(group, version, the parts after them) of a resource path; None for a non-resource path."""
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        return "", parts[1], parts[2:]
    if len(parts) < 4:
        return None
    return parts[1], parts[2], parts[3:]


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    split = _group_version_rest(path)
    if split is None:
        return Attributes(user, method.lower(), False, path=path)
    group, version, rest = split
    if rest[0] == "watch" and len(rest) > 1:
        verb, rest = "watch", rest[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch") in _TRUE else "list"
        name = _name_from_field_selector(query.get("fieldSelector"))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, True, path=path, api_group=group, api_version=version, namespace=namespace,
                      resource=resource, subresource=subresource, name=name)


def _name_from_field_selector(selector: str | None) -> str:
    if not selector:
        return ""
    try:
        name = parse_field_selector(selector).requires_exact_match("metadata.name")
    except ValueError:
        return ""
    if not name or name in (".", "..") or "/" in name or "%" in name:
        return ""
    return name


def forbidden_message(attrs: Attributes) -> str:
    """Upstream's `forbiddenMessage`: who cannot do what, where."""
    who = f'User "{attrs.user.name}"'
    if not attrs.resource_request:
        return f'{who} cannot {attrs.verb} path "{attrs.path}"'
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'{who} cannot {attrs.verb} resource "{attrs.combined_resource}" in API group "{attrs.api_group}" {where}'


def forbidden_error(attrs: Attributes, reason: str = "") -> errors.StatusError:
    """The 403 a denied request gets: `pods "x" is forbidden: User "alice" cannot get ...`."""
    message = forbidden_message(attrs) + (f": {reason}" if reason else "")
    if not attrs.resource_request:
        return errors.StatusError(403, "Forbidden", f"forbidden: {message}", {})
    return errors.forbidden_error(attrs.resource, attrs.api_group, attrs.name, message)
