"""APIServices for the group-versions CustomResourceDefinitions serve (kube-apiserver's
`crdRegistrationController`), through `Client`.

    CRDRegistrationController(client, factory).start()

Every served version of every CRD has a local APIService `<version>.<group>`, labelled
`kube-aggregator.kubernetes.io/automanaged: "true"`, with upstream's priorities for CRDs (group
minimum 1000, version priority 100) and `Available` (reason `Local`); when no CRD serves a
group-version any more, its APIService goes. The built-in group-versions' APIServices (labelled
`onstart`) are bootstrap's and are never touched here. One sync reconciles all of them.
"""

from __future__ import annotations

from typing import Any

from ..client.controller import Controller
from ..client.informer import InformerFactory
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.timestamps import now_rfc3339

Obj = dict[str, Any]
API_VERSION = "apiregistration.k8s.io/v1"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
KEY = "all"


def served_group_versions(crds: list[Obj]) -> set[tuple[str, str]]:
    out = set()
    for crd in crds:
        spec = crd.get("spec") or {}
        for version in spec.get("versions") or []:
            if isinstance(version, dict) and version.get("served") and spec.get("group"):
                out.add((spec["group"], version.get("name", "")))
    return out


def api_service(group: str, version: str) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "APIService",
            "metadata": {"name": f"{version}.{group}", "labels": {AUTOMANAGED: "true"}},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 1000, "versionPriority": 100}}


class CRDRegistrationController(Controller[str]):
    name = "crd-autoregister"

    def __init__(self, client: Client, factory: InformerFactory | None = None, **kwargs: Any):
        super().__init__(client, factory, **kwargs)
        self.crds = self.informer("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        self.services = self.informer(API_VERSION, "APIService")
        for informer in (self.crds, self.services):
            informer.add_event_handler(on_add=lambda _: self.enqueue(KEY),
                                       on_update=lambda _old, _new: self.enqueue(KEY),
                                       on_delete=lambda _: self.enqueue(KEY))

    async def sync(self, key: str) -> None:
        wanted = served_group_versions(self.crds.list())
        have = {s["metadata"]["name"]: s for s in self.services.list()}
        for group, version in sorted(wanted):
            if f"{version}.{group}" not in have:
                await self._create(group, version)
        names = {f"{v}.{g}" for g, v in wanted}
        for name, svc in have.items():
            if (svc["metadata"].get("labels") or {}).get(AUTOMANAGED) == "true" and name not in names:
                try:
                    await self.client.delete(API_VERSION, "APIService", None, name)
                except StatusError as e:
                    if e.code != 404:
                        raise

    async def _create(self, group: str, version: str) -> None:
        try:
            created = await self.client.create(api_service(group, version))
        except StatusError as e:
            if e.code == 409:
                return
            raise
        now = now_rfc3339()
        created = {**created, "status": {"conditions": [
            {"type": "Available", "status": "True", "lastTransitionTime": now, "reason": "Local",
             "message": "Local APIServices are always available"}]}}
        await self.client.update_status(created)


__all__ = ["CRDRegistrationController"]
