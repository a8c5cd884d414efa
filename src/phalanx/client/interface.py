"""The `Client` protocol: how every phalanx component reads and writes the API.

Two implementations share it: `InProcessClient(api)` (direct calls, for one process and tests) and
`HTTPClient.from_kubeconfig()` (any Kubernetes API server). A resource is named by its apiVersion
and either its Kind or its plural resource name:

    pod = await client.get("v1", "Pod", "default", "p")
    items, rv = await client.list("scheduling.k8s.io/v1alpha2", "podgroups", namespace="ns")
    created = await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {...}})
    async for type_, obj in client.watch("v1", "Pod", resource_version=rv): ...
    await client.delete("v1", "Pod", "default", "p", propagation="Foreground")
    await client.create_event(pod, "Scheduled", "Successfully assigned ...", component="default-scheduler")

Objects handed in and out are plain JSON dicts owned by the caller. Failures raise
`phalanx.machinery.errors.StatusError` with the code, reason and message of the server's Status.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..machinery.errors import StatusError

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class ResourceInfo:
    """One served resource, as discovery describes it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...] = ()
    subresources: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def supports(self, *verbs: str) -> bool:
        return all(v in self.verbs for v in verbs)


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def no_kind_match(api_version: str, kind: str) -> StatusError:
    """What a client says when the server does not serve the kind (client-go's NoKindMatchError)."""
    group, version = split_api_version(api_version)
    if kind[:1].isupper():
        msg = f'no matches for kind "{kind}" in version "{api_version}"'
    else:
        msg = f'the server doesn\'t have a resource type "{kind}" in "{api_version}"'
    return StatusError(404, "NotFound", msg, {"group": group, "kind": kind})


def is_no_kind_match(err: StatusError) -> bool:
    return err.code == 404 and not (err.details or {}).get("name") and (
        err.message.startswith("no matches for kind") or "doesn't have a resource type" in err.message
        or err.message == "the server could not find the requested resource")


def find_resource(resources: list[ResourceInfo], api_version: str, kind_or_plural: str) -> ResourceInfo | None:
    group, version = split_api_version(api_version)
    by_kind = kind_or_plural[:1].isupper()
    for r in resources:
        if r.group == group and r.version == version and \
                (r.kind == kind_or_plural if by_kind else r.plural == kind_or_plural):
            return r
    return None


class WatchIterator(Protocol):
    """`async for type_, obj in watch`; type_ is ADDED, MODIFIED, DELETED or BOOKMARK.
    An ERROR from the server (e.g. 410 Expired) raises StatusError; the end of the stream
    (server timeout) ends the iteration."""

    def __aiter__(self) -> "WatchIterator": ...

    async def __anext__(self) -> tuple[str, Obj]: ...

    async def aclose(self) -> None: ...


class Client(Protocol):
    field_manager: str

    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj: ...

    async def list(self, api_version: str, kind: str, namespace: str | None = None, *,
                   label_selector: str | None = None,
                   field_selector: str | None = None) -> tuple[list[Obj], str]: ...

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              resource_version: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, allow_bookmarks: bool = True,
              timeout_seconds: int | None = None) -> WatchIterator: ...

    async def create(self, obj: Obj, *, namespace: str | None = None, handover: bool = False) -> Obj:
        """Create `obj`. With `handover` the caller gives up `obj` (a fresh dict it never touches
        again) and treats the result as read-only: an in-process client then copies neither."""
        ...

    async def update(self, obj: Obj, *, handover: bool = False) -> Obj:
        """Replace the object. `handover` as for `create`: `obj` is given up, the result read-only."""
        ...

    async def update_status(self, obj: Obj, *, handover: bool = False) -> Obj: ...

    async def patch(self, api_version: str, kind: str, namespace: str | None, name: str, body: Any,
                    patch_type: str = MERGE_PATCH, subresource: str | None = None, *,
                    force: bool = False) -> Obj: ...

    async def delete(self, api_version: str, kind: str, namespace: str | None, name: str, *,
                     propagation: str | None = None, grace_period: int | None = None,
                     preconditions: dict | None = None) -> Obj: ...

    async def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> None: ...

    async def finalize(self, namespace: Obj) -> Obj: ...

    async def served_resources(self, *, refresh: bool = False) -> builtins.list[ResourceInfo]: ...

    async def resource_info(self, api_version: str, kind: str) -> ResourceInfo: ...

    async def create_event(self, regarding: Obj, reason: str, message: str, *, type: str = "Normal",
                           component: str | None = None, host: str | None = None,
                           field_path: str | None = None, annotations: dict | None = None) -> Obj | None: ...

    async def close(self) -> None: ...
