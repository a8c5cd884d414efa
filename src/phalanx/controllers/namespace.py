"""The namespace controller: empties a namespace being deleted, then lets it go.

    NamespaceController(client, factory, clock=clock).start()

`kubectl delete namespace x` leaves the namespace Terminating (`deletionTimestamp`, phase
Terminating) with the `kubernetes` entry in `spec.finalizers`. For such a namespace this
controller, as upstream's:

1. deletes every object of every served namespaced resource in it (propagation Background);
2. checks what remains and records it in the namespace's conditions
   (`NamespaceDeletionDiscoveryFailure`, `NamespaceDeletionGroupVersionParsingFailure`,
   `NamespaceDeletionContentFailure`, `NamespaceContentRemaining`,
   `NamespaceFinalizersRemaining`, with upstream's reasons and messages);
3. while content remains, looks again later: after half the estimated time plus one second,
   where the estimate is the longest grace period of a pod still terminating, or 15 s when
   objects wait on finalizers;
4. once nothing remains, removes `kubernetes` from `spec.finalizers` through the namespace's
   `finalize` subresource; the API server then deletes the namespace.

A namespace's deletion is first looked at 5 s after it is observed (upstream's
`namespaceDeletionGracePeriod`, so late creations are caught); errors retry with a 5 ms to 60 s
backoff.
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock, to_datetime
from ..client.informer import InformerFactory
from ..client.interface import Client, ResourceInfo
from ..client.workqueue import ItemExponentialFailureRateLimiter
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds
from ..client.controller import Controller
from ..client.retry import retry_on_conflict

Obj = dict[str, Any]

FINALIZER_KUBERNETES = "kubernetes"
DELETION_GRACE_PERIOD = 5.0
FINALIZER_ESTIMATE_SECONDS = 15

CONDITION_TYPES = ("NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
                   "NamespaceDeletionContentFailure", "NamespaceContentRemaining", "NamespaceFinalizersRemaining")
OK_REASONS = {
    "NamespaceDeletionDiscoveryFailure": "ResourcesDiscovered",
    "NamespaceDeletionGroupVersionParsingFailure": "ParsedGroupVersions",
    "NamespaceDeletionContentFailure": "ContentDeleted",
    "NamespaceContentRemaining": "ContentRemoved",
    "NamespaceFinalizersRemaining": "ContentHasNoFinalizers",
}
OK_MESSAGES = {
    "NamespaceDeletionDiscoveryFailure": "All resources successfully discovered",
    "NamespaceDeletionGroupVersionParsingFailure": "All legacy kube types successfully parsed",
    "NamespaceDeletionContentFailure": "All content successfully deleted, may be waiting on finalization",
    "NamespaceContentRemaining": "All content successfully removed",
    "NamespaceFinalizersRemaining": "All content-preserving finalizers finished",
}


class NamespaceController(Controller[str]):
    name = "namespace"
    workers = 10  # upstream's --concurrent-namespace-syncs default

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None, workers: int | None = None,
                 deletion_grace_period: float = DELETION_GRACE_PERIOD):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.queue.rate_limiter = ItemExponentialFailureRateLimiter(0.005, 60.0)
        self.deletion_grace_period = deletion_grace_period
        self.namespaces = self.informer("v1", "Namespace")
        self.namespaces.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new))

    def _enqueue(self, ns: Obj) -> None:
        md = ns.get("metadata") or {}
        if md.get("deletionTimestamp"):
            self.queue.add_after(md["name"], self.deletion_grace_period)

    async def sync(self, name: str) -> None:
        ns: Obj | None
        try:
            ns = await self.client.get("v1", "Namespace", None, name)
        except StatusError as e:
            if e.code == 404:
                return
            raise
        md = ns["metadata"]
        if not md.get("deletionTimestamp"):
            return
        if (ns.get("status") or {}).get("phase") != "Terminating":
            ns.setdefault("status", {})["phase"] = "Terminating"
            ns = await self._update_status(ns)
            if ns is None:
                return
        if FINALIZER_KUBERNETES not in ((ns.get("spec") or {}).get("finalizers") or []):
            return  # finalized already; other finalizers are someone else's
        estimate, conditions, errors = await self._delete_all_content(ns)
        ns = await self._set_conditions(ns, conditions)
        if ns is None:
            return
        if errors:
            raise StatusError(500, "InternalError", "; ".join(sorted(errors)))
        if estimate > 0:
            self.log.debug("namespace %s: content remains, looking again in %ds", name, estimate // 2 + 1)
            self.enqueue_after(name, estimate // 2 + 1)
            return
        await self._finalize(ns)

    # -- content -----------------------------------------------------------------------------
    async def _delete_all_content(self, ns: Obj) -> tuple[int, list[dict], list[str]]:
        name = ns["metadata"]["name"]
        now = self.clock.now()
        conditions: list[dict] = []
        try:
            resources = [r for r in await self.client.served_resources(refresh=True)
                         if r.namespaced and r.supports("delete", "list")]
        except StatusError as e:
            conditions.append(self._condition("NamespaceDeletionDiscoveryFailure", "True", "DiscoveryFailed",
                                              e.message, now))
            return 0, conditions, [e.message]
        estimate = 0
        errors: list[str] = []
        remaining: dict[str, int] = {}
        finalizers_remaining: dict[str, int] = {}
        deleted_at = rfc3339_seconds(ns["metadata"].get("deletionTimestamp")) or now
        for info in resources:
            try:
                est = await self._delete_resource(info, name, deleted_at, now)
                items, _ = await self.client.list(info.api_version, info.kind, name)
            except StatusError as e:
                errors.append(f'{info.plural}.{info.group}: {e.message}')
                continue
            if items:
                remaining[f"{info.plural}.{info.group}"] = len(items)
                has_finalizers = False
                for it in items:
                    for f in (it.get("metadata") or {}).get("finalizers") or []:
                        finalizers_remaining[f] = finalizers_remaining.get(f, 0) + 1
                        has_finalizers = True
                if est == 0:
                    if has_finalizers:
                        est = FINALIZER_ESTIMATE_SECONDS
                    else:
                        errors.append(f"unexpected items still remain in namespace: {name} for gvr: "
                                      f"{info.group}/{info.version}, Resource={info.plural}")
            estimate = max(estimate, est)
        if remaining:
            msg = ", ".join(sorted(f"{gr} has {n} resource instances" for gr, n in remaining.items()))
            conditions.append(self._condition("NamespaceContentRemaining", "True", "SomeResourcesRemain",
                                              f"Some resources are remaining: {msg}", now))
        if finalizers_remaining:
            msg = ", ".join(sorted(f"{f} in {n} resource instances" for f, n in finalizers_remaining.items()))
            conditions.append(self._condition("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                                              f"Some content in the namespace has finalizers remaining: {msg}", now))
        if errors:
            conditions.append(self._condition(
                "NamespaceDeletionContentFailure", "True", "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(errors)} remaining: {', '.join(sorted(errors))}", now))
        return estimate, conditions, errors

    async def _delete_resource(self, info: ResourceInfo, namespace: str, deleted_at: float, now: float) -> int:
        """Delete every object of one resource in the namespace; returns the grace estimate."""
        items, _ = await self.client.list(info.api_version, info.kind, namespace)
        estimate = 0
        if info.group == "" and info.plural == "pods":
            for pod in items:
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
                if grace is not None and grace > estimate:
                    estimate = int(grace)
            if now - deleted_at >= estimate:
                estimate = 0
        for it in items:
            md = it.get("metadata") or {}
            if md.get("deletionTimestamp"):
                continue
            try:
                await self.client.delete(info.api_version, info.kind, namespace, md.get("name", ""),
                                         propagation="Background")
            except StatusError as e:
                if e.code not in (404, 405):
                    raise
        return estimate

    # -- status ------------------------------------------------------------------------------
    @staticmethod
    def _condition(type_: str, status: str, reason: str, message: str, now: float) -> dict:
        return {"type": type_, "status": status, "lastTransitionTime": now_rfc3339(to_datetime(now)),
                "reason": reason, "message": message}

    async def _set_conditions(self, ns: Obj, new_conditions: list[dict]) -> Obj | None:
        now = self.clock.now()
        updated = deep_copy(ns)
        current = updated.setdefault("status", {}).setdefault("conditions", [])
        changed = False
        for t in CONDITION_TYPES:
            want = next((c for c in new_conditions if c["type"] == t), None) or \
                self._condition(t, "False", OK_REASONS[t], OK_MESSAGES[t], now)
            have = next((c for c in current if c.get("type") == t), None)
            if have is None:
                current.append(want)
                changed = True
            elif (have.get("status"), have.get("reason"), have.get("message")) != \
                    (want["status"], want["reason"], want["message"]):
                if have.get("status") != want["status"]:
                    have["lastTransitionTime"] = want["lastTransitionTime"]
                have.update(status=want["status"], reason=want["reason"], message=want["message"])
                changed = True
        if not changed:
            return ns
        return await self._update_status(updated)

    async def _update_status(self, ns: Obj) -> Obj | None:
        """Write the status; None when the namespace is gone."""
        try:
            return await self.client.update_status(ns)
        except StatusError as e:
            if e.code == 404:
                return None
            raise  # a conflict retries the whole sync with fresh state

    async def _finalize(self, ns: Obj) -> None:
        async def attempt(conflicted: bool) -> None:
            try:
                latest = await self.client.get("v1", "Namespace", None, ns["metadata"]["name"]) if conflicted else ns
                fins = [f for f in (latest.get("spec") or {}).get("finalizers") or [] if f != FINALIZER_KUBERNETES]
                body = deep_copy(latest)
                body.setdefault("spec", {})["finalizers"] = sorted(set(fins))
                await self.client.finalize(body)
            except StatusError as e:
                if e.code != 404:
                    raise

        await retry_on_conflict(attempt, steps=10)
