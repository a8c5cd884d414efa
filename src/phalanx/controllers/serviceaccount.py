"""The service account controller: every active namespace has a `default` ServiceAccount.

    ServiceAccountsController(client, factory, clock=clock).start()

As upstream's `serviceaccount-controller`: when a namespace appears (or changes) and is Active,
or when a namespace's `default` ServiceAccount is deleted, the namespace is synced and the
ServiceAccount created if it is missing. Terminating namespaces are left alone (the API would
refuse the create anyway).
"""

from __future__ import annotations

from typing import Any

from ..client.informer import InformerFactory
from ..machinery.errors import StatusError
from ..client.clock import Clock
from ..client.controller import Controller
from ..client.interface import Client

Obj = dict[str, Any]

DEFAULT_SERVICE_ACCOUNT = "default"


class ServiceAccountsController(Controller[str]):
    name = "serviceaccount"
    workers = 1  # upstream's --concurrent-serviceaccount-syncs default

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None, workers: int | None = None,
                 service_accounts: tuple[str, ...] = (DEFAULT_SERVICE_ACCOUNT,)):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.service_account_names = service_accounts
        self.namespaces = self.informer("v1", "Namespace")
        self.service_accounts = self.informer("v1", "ServiceAccount")
        self.namespaces.add_event_handler(on_add=self._namespace_changed,
                                          on_update=lambda old, new: self._namespace_changed(new))
        self.service_accounts.add_event_handler(on_delete=self._service_account_deleted)

    def _namespace_changed(self, ns: Obj) -> None:
        self.queue.add(ns["metadata"]["name"])

    def _service_account_deleted(self, sa: Obj) -> None:
        md = sa.get("metadata") or {}
        if md.get("name") in self.service_account_names and md.get("namespace"):
            self.queue.add(md["namespace"])

    async def sync(self, namespace: str) -> None:
        ns = self.namespaces.get(namespace)
        if ns is None:
            return
        if (ns.get("metadata") or {}).get("deletionTimestamp") or \
                (ns.get("status") or {}).get("phase", "Active") != "Active":
            return
        for name in self.service_account_names:
            if self.service_accounts.get(f"{namespace}/{name}") is not None:
                continue
            try:
                await self.client.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                          "metadata": {"name": name, "namespace": namespace}})
            except StatusError as e:
                if e.code == 409 and e.reason == "AlreadyExists":
                    continue
                if e.code == 403 or e.code == 404:  # namespace terminating or gone meanwhile
                    continue
                raise
