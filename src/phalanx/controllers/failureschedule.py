"""The failure schedule: the `failures:` of a phalanx cluster config, played against the cluster's
clock by writing the fault annotations of `phalanx.api.faults` at the scheduled times.

    FailureSchedule(client, factory, failures=spec.failures, clock=clock).start()

Each entry (validated by `phalanx.cluster.failureconfig`) fails its nodes (`node`, or every node
matching the label selector `nodes` at that time) — or only their `devices` — at `at` after the
cluster was created, and recovers them `recoverAfter` later when it says so. Upstream's controllers
then do the rest, exactly as for `phalanx fail`.

The cluster was created when its `kube-system` Namespace was (its `creationTimestamp`, kept in the
API), so the schedule is the same after a control-plane restart: at start every transition already
due is applied again in time order (writing only what differs, so the result is the state the
schedule gives for now), later ones at their time. A node failed or recovered by hand in between
may therefore be set back to what the schedule says when the control plane restarts.
"""

from __future__ import annotations

from typing import Any

from ..api.faults import annotations_with_device_faults, annotations_with_node_fault
from ..api.labelselectors import label_selector_matches
from ..client.controller import Controller
from ..client.informer import InformerFactory
from ..client.interface import Client
from ..client.retry import retry_on_conflict
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..machinery.timestamps import rfc3339_seconds

Obj = dict[str, Any]

TICK = "tick"
RESOURCE_API = "resource.k8s.io/v1"


def transitions(failures: list[dict]) -> list[tuple[float, int, bool]]:
    """(seconds after creation, entry index, fail) for every failure and recovery, in time order
    (at one time: entries in order, a recovery before a failure of a later entry)."""
    out = []
    for i, entry in enumerate(failures):
        out.append((float(entry["at"]), i, True))
        if entry.get("recoverAfter"):
            out.append((float(entry["at"]) + float(entry["recoverAfter"]), i, False))
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


class FailureSchedule(Controller[str]):
    name = "failure-schedule"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, failures: list[dict],
                 **kw: Any):
        super().__init__(client, factory, **kw)
        self.failures = failures
        self.plan = transitions(failures)
        self.nodes = self.informer("v1", "Node")
        self.slices = self.informer(RESOURCE_API, "ResourceSlice") if any(f.get("devices") for f in failures) else None
        self.created: float | None = None
        self.applied = 0  # transitions of `plan` done

    async def setup(self) -> None:
        if self.plan:
            self.queue.add(TICK)

    async def sync(self, key: str) -> None:
        if self.created is None:
            ns = await self.client.get("v1", "Namespace", None, "kube-system")
            self.created = rfc3339_seconds(ns["metadata"].get("creationTimestamp")) or self.clock.now()
        elapsed = self.clock.now() - self.created
        while self.applied < len(self.plan) and self.plan[self.applied][0] <= elapsed:
            _, index, fail = self.plan[self.applied]
            await self.apply(self.failures[index], fail, index)
            self.applied += 1
        if self.applied < len(self.plan):
            self.enqueue_after(TICK, self.plan[self.applied][0] - elapsed)

    def targets(self, entry: dict) -> list[str]:
        if entry.get("node"):
            return [entry["node"]]
        return sorted(n["metadata"]["name"] for n in self.nodes.list()
                      if label_selector_matches(entry.get("nodes"), n["metadata"].get("labels") or {}))

    async def apply(self, entry: dict, fail: bool, index: int) -> None:
        for name in self.targets(entry):
            self.log.info("%s node %s (failures[%d])", "failing" if fail else "recovering", name, index)
            try:
                await self._set(name, entry.get("devices"), fail)
            except StatusError as e:
                if e.code != 404:
                    raise
                self.log.warning("failures[%d]: node %s: %s", index, name, e.message)

    def _published_devices(self, node_name: str) -> list[str]:
        if self.slices is None:
            return []
        return [d.get("name", "") for s in self.slices.list() if (s.get("spec") or {}).get("nodeName") == node_name
                for d in (s.get("spec") or {}).get("devices") or []]

    async def _set(self, name: str, devices: list[str] | None, fail: bool) -> None:
        async def attempt(conflicted: bool) -> None:
            # read, not the cache: transitions replayed at start follow each other faster than it
            node = await self.client.get("v1", "Node", None, name)
            if devices:
                annotations = annotations_with_device_faults(node, devices, fail, self._published_devices(name))
            else:
                annotations = annotations_with_node_fault(node, fail)
            if annotations is None:
                return
            new = deep_copy(node)
            new["metadata"]["annotations"] = annotations
            await self.client.update(new)

        await retry_on_conflict(attempt)
