"""The `Dangling` condition of FlowSchemas (what kube-apiserver's APF configuration controller
maintains), through `Client`.

    FlowSchemaStatusController(client, factory).start()

A FlowSchema whose `spec.priorityLevelConfiguration.name` names an existing
PriorityLevelConfiguration has `Dangling=False` (reason `Found`), otherwise `Dangling=True`
(reason `NotFound`); `kubectl get flowschemas` shows it as MISSINGPL. The condition is rewritten
only when its status, reason or message changes.
"""

from __future__ import annotations

from typing import Any

from ..client.controller import Controller
from ..client.informer import InformerFactory
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339

Obj = dict[str, Any]
API_VERSION = "flowcontrol.apiserver.k8s.io/v1"


def dangling_condition(schema: Obj, levels: set[str]) -> Obj:
    level = ((schema.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name", "")
    if level in levels:
        return {"type": "Dangling", "status": "False", "reason": "Found",
                "message": f"This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" "
                           "and it exists"}
    return {"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": f"This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" "
                       "but there is no such object"}


class FlowSchemaStatusController(Controller[str]):
    name = "flowschema-status"

    def __init__(self, client: Client, factory: InformerFactory | None = None, **kwargs: Any):
        super().__init__(client, factory, **kwargs)
        self.schemas = self.informer(API_VERSION, "FlowSchema")
        self.levels = self.informer(API_VERSION, "PriorityLevelConfiguration")
        self.enqueue_on(self.schemas)
        self.levels.add_event_handler(on_add=lambda _: self._all(), on_delete=lambda _: self._all())

    def _all(self) -> None:
        for schema in self.schemas.list():
            self.enqueue(schema["metadata"]["name"])

    async def sync(self, key: str) -> None:
        schema = self.schemas.get(key)
        if schema is None:
            return
        wanted = dangling_condition(schema, {pl["metadata"]["name"] for pl in self.levels.list()})
        conditions = list((schema.get("status") or {}).get("conditions") or [])
        current = next((c for c in conditions if c.get("type") == "Dangling"), None)
        if current is not None and all(current.get(k) == wanted[k] for k in ("status", "reason", "message")):
            return
        wanted["lastTransitionTime"] = now_rfc3339()
        new = deep_copy(schema)
        new["status"] = {**(new.get("status") or {}),
                         "conditions": [c for c in conditions if c.get("type") != "Dangling"] + [wanted]}
        try:
            await self.client.update_status(new)
        except StatusError as e:
            if e.code not in (404, 409):
                raise
            if e.code == 409:
                self.enqueue(key)


__all__ = ["FlowSchemaStatusController", "dangling_condition"]
