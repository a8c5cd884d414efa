"""Serving custom resources: the API's custom types follow the CustomResourceDefinitions stored.

`CustomResourceTypes.attach(api)` (called by `build_api`) registers the types of every stored,
established CRD (what a restart finds in the store) and then listens to the store: each write of a
CRD re-registers its served versions (discovery, REST paths, OpenAPI v3 documents, Tables) and a
deleted CRD's types go. A terminating CRD stays served (its objects can be listed and deleted)
until the cleanup finalizer lets it go. A CRD of a resource phalanx builds in (JobSet's) leaves the
built-in kind serving.
"""

from __future__ import annotations

import logging
from typing import Any

from ..api import openapi
from ..api.apiextensions import crd as crds
from ..api.apiextensions.custom import CustomResourceStrategy, openapi_components, resource_types
from ..store.history import Event
from .rest import API

_OWNER_PREFIX = "crd:"
log = logging.getLogger("phalanx.apiserver.customresources")


class CustomResourceTypes:
    """Keeps `api`'s custom types equal to the established CRDs in its store."""

    def __init__(self, api: API):
        self.api = api
        self.served: dict[str, str] = {}  # CRD name -> storage key of its resource

    @classmethod
    def attach(cls, api: API) -> "CustomResourceTypes":
        self = cls(api)
        for crd in api.store.list(crds.KEY)[0]:
            self.sync(crd["metadata"]["name"], crd)
        api.store.listeners.append(self.on_event)
        return self

    def on_event(self, ev: Event) -> None:
        if ev.key != crds.KEY:
            return
        self.sync(ev.name, None if ev.type == "DELETED" else ev.object)

    def sync(self, name: str, crd: dict[str, Any] | None) -> None:
        """Serve what `crd` defines now (nothing when it is gone or not established)."""
        if crd is None or not crds.established(crd):
            self._unserve(name)
            return
        types = resource_types(crd)
        key = types[0].key if types else None
        if key is not None and self._built_in(key):
            # A CRD of a kind phalanx builds in (JobSet's, from its release manifests): the
            # built-in kind, with its controller, keeps serving.
            log.info("CRD %s names a resource phalanx serves itself; the built-in kind stays", name)
            self._unserve(name)
            return
        previous = self.served.get(name)
        if previous is not None and previous != key:
            self._unserve(name)
        if not types or key is None:
            self._unserve(name)
            return
        self.api.set_custom_types(key, types, storage_api_version=f"{crd['spec']['group']}/{crds.storage_version(crd)}")
        openapi.set_custom_schemas(_OWNER_PREFIX + name, openapi_components(crd))
        self.served[name] = key

    def _built_in(self, key: str) -> bool:
        return any(rt.key == key and not isinstance(rt.strategy, CustomResourceStrategy) for rt in self.api.types)

    def _unserve(self, name: str) -> None:
        key = self.served.pop(name, None)
        if key is not None:
            self.api.set_custom_types(key, [])
        openapi.set_custom_schemas(_OWNER_PREFIX + name, None)


def forget_custom_schemas() -> None:
    """Drop every custom resource's OpenAPI schemas (they are process-wide): for tests that build
    several APIs in one process."""
    for owner in openapi.custom_schema_owners():
        if owner.startswith(_OWNER_PREFIX):
            openapi.set_custom_schemas(owner, None)
