"""Patch metadata for a field path, read from an OpenAPI v3 schema.

Strategic merge patch and server-side apply need to know, per field, how lists merge: the
`x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy` extensions (strategic merge patch)
and `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` (server-side apply). `PatchMeta` walks
a schema node by node, resolving `$ref` and single-element `allOf` through a `resolve(ref)`
callable, so the patch code never sees raw schema plumbing.

    meta = PatchMeta.for_schema(pod_schema, resolve)
    containers = meta.field("spec").field("containers")
    containers.merge_key        # "name"
    containers.strategies       # {"merge"}
    containers.items().field("env").merge_key   # "name"

A `PatchMeta` with no schema (`PatchMeta.empty()`) answers "no metadata" everywhere, which makes
strategic merge patch behave like JSON merge patch (lists replaced) — the behaviour upstream has
for fields it knows nothing about.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

Resolver = Callable[[str], Optional[dict[str, Any]]]


class PatchMeta:
    __slots__ = ("schema", "_resolve", "_fields", "_items")

    def __init__(self, schema: dict[str, Any] | None, resolve: Resolver | None = None):
        self._resolve = resolve or (lambda ref: None)
        self.schema = self._deref(schema) if schema else None
        self._fields: dict[str, PatchMeta] = {}  # navigation is memoized: metas are cached per kind
        self._items: PatchMeta | None = None

    @classmethod
    def empty(cls) -> "PatchMeta":
        return cls(None)

    @classmethod
    def for_schema(cls, schema: dict[str, Any] | None, resolve: Resolver | None = None) -> "PatchMeta":
        return cls(schema, resolve)

    def _deref(self, s: dict[str, Any] | None) -> dict[str, Any] | None:
        seen = 0
        while s is not None and seen < 32:
            seen += 1
            if "$ref" in s:
                target = self._resolve(s["$ref"])
                if target is None:
                    return None
                # Extensions written next to a $ref (OpenAPI v3 puts them in allOf wrappers) win.
                extra = {k: v for k, v in s.items() if k != "$ref"}
                s = {**target, **extra} if extra else target
                continue
            all_of = s.get("allOf")
            if all_of and len(all_of) == 1:
                extra = {k: v for k, v in s.items() if k != "allOf"}
                inner = self._deref(all_of[0]) or {}
                s = {**inner, **extra}
                continue
            return s
        return s

    def _child(self, s: dict[str, Any] | None) -> "PatchMeta":
        m = PatchMeta.__new__(PatchMeta)
        m._resolve = self._resolve
        m.schema = self._deref(s) if s else None
        m._fields = {}
        m._items = None
        return m

    # -- navigation ----------------------------------------------------------------------
    def field(self, name: str) -> "PatchMeta":
        m = self._fields.get(name)
        if m is not None:
            return m
        s = self.schema
        if not s:
            m = self._child(None)
        else:
            props = s.get("properties")
            if props and name in props:
                m = self._child(props[name])
            else:
                add = s.get("additionalProperties")
                m = self._child(add if isinstance(add, dict) else None)
        if len(self._fields) < 4096:  # map-valued fields (labels) must not grow the cache unboundedly
            self._fields[name] = m
        return m

    def items(self) -> "PatchMeta":
        m = self._items
        if m is None:
            s = self.schema
            m = self._items = self._child(s.get("items") if s else None)
        return m

    def has_field(self, name: str) -> bool:
        s = self.schema
        return bool(s and name in (s.get("properties") or {}))

    # -- facts ---------------------------------------------------------------------------
    @property
    def known(self) -> bool:
        return self.schema is not None

    @property
    def type(self) -> str | None:
        s = self.schema
        return s.get("type") if s else None

    @property
    def merge_key(self) -> str | None:
        s = self.schema
        return s.get("x-kubernetes-patch-merge-key") if s else None

    @property
    def strategies(self) -> set[str]:
        s = self.schema
        raw = s.get("x-kubernetes-patch-strategy") if s else None
        return set(raw.split(",")) if raw else set()

    @property
    def list_type(self) -> str | None:
        s = self.schema
        return s.get("x-kubernetes-list-type") if s else None

    @property
    def map_keys(self) -> list[str]:
        s = self.schema
        return list(s.get("x-kubernetes-list-map-keys") or []) if s else []

    @property
    def map_type(self) -> str | None:
        s = self.schema
        return s.get("x-kubernetes-map-type") if s else None

    @property
    def preserve_unknown(self) -> bool:
        s = self.schema
        return bool(s and s.get("x-kubernetes-preserve-unknown-fields"))

    def extension(self, name: str) -> Any:
        s = self.schema
        return s.get(name) if s else None
