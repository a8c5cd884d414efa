"""Small helpers on objects shared by the API server, clients and controllers: metadata, and reading
a field as a dict or list whatever the JSON holds (`dict_at`, `list_at`, `items_at`)."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import orjson

Obj = dict[str, Any]


def dict_at(d: Any, key: str) -> dict[str, Any]:
    """`d[key]` when `d` is a dict and that is a dict, else an empty dict (never raises)."""
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def list_at(d: Any, key: str) -> list[Any]:
    """`d[key]` when `d` is a dict and that is a list, else an empty list (never raises)."""
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, list) else []


def items_at(d: Any, key: str) -> list[dict[str, Any]]:
    """The list at `d[key]` with every item that is not a dict read as an empty one."""
    return [x if isinstance(x, dict) else {} for x in list_at(d, key)]


def new_uid() -> str:
    return str(uuid.uuid4())


def deep_copy(obj: Any) -> Any:
    """A full copy of a JSON-compatible value (an orjson round trip: ~7x faster than deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


def namespaced_name(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else md.get("name", "")


class OwnerReference(TypedDict):
    """A `metadata.ownerReferences` entry as the controllers write it."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


def owner_reference(owner: Obj, *, controller: bool = True, block_owner_deletion: bool = True) -> OwnerReference:
    md = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"], "uid": md["uid"],
            "controller": controller, "blockOwnerDeletion": block_owner_deletion}


def controller_of(obj: Obj) -> dict[str, Any] | None:
    ref: dict[str, Any]
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def get_condition(obj: Obj, cond_type: str) -> dict[str, Any] | None:
    c: dict[str, Any]
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == cond_type:
            return c
    return None
