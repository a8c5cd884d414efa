"""The CRD naming controller's second look (apiextensions-apiserver's `naming_controller`),
through `Client`: a CustomResourceDefinition whose names were refused (`NamesAccepted=False`)
is looked at again whenever another CRD of its group changes or goes, so it is accepted and
established once the names it wants are free.

The API server decides a CRD's names when the CRD is written (`api/apiextensions/crd.py`); this
controller writes the CRD back unchanged, which makes the server decide again.

    CRDNamingController(client, factory).start()
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy

Obj = dict[str, Any]
CRD_API = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"


def names_refused(crd: Obj) -> bool:
    conds = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "NamesAccepted" and c.get("status") == "False" for c in conds) \
        and not crd["metadata"].get("deletionTimestamp")


class CRDNamingController(Controller[str]):
    """Re-decides the names of refused CRDs when another CRD of their group changes."""

    name = "crd-naming"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None):
        super().__init__(client, factory, clock=clock)
        self.crds = self.informer(CRD_API, CRD_KIND)
        self.crds.add_event_handler(on_add=self._group_changed, on_update=lambda o, n: self._group_changed(n),
                                    on_delete=self._group_changed)

    def _group_changed(self, crd: Obj) -> None:
        group = (crd.get("spec") or {}).get("group")
        for other in self.crds.list():
            if (other.get("spec") or {}).get("group") == group and names_refused(other) \
                    and other["metadata"]["name"] != crd["metadata"]["name"]:
                self.enqueue(object_key(other))

    async def sync(self, key: str) -> None:
        crd = self.crds.get(key)
        if crd is None or not names_refused(crd):
            return
        try:
            await self.client.update(deep_copy(crd))
        except StatusError as e:
            if e.code not in (404, 409):
                raise
            if e.code == 409:
                self.enqueue(key)
