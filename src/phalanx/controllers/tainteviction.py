"""The taint eviction controller: kube-controller-manager's `taint-eviction-controller` (the taint
manager), which deletes pods from nodes with NoExecute taints they do not tolerate.

    TaintEvictionController(client, factory, clock=clock).start()

What it does, as upstream does, for every pod bound to a node with NoExecute taints:

- a taint no toleration of the pod tolerates: the pod is deleted at once;
- every taint tolerated: the pod is deleted after the smallest `tolerationSeconds` of the
  tolerations used (none set: the pod stays, forever); a pod that is no longer affected (taint
  removed, toleration added) is not deleted;
- before deleting, the pod gets the condition `DisruptionTarget` (True, reason
  `DeletionByTaintManager`, "Taint manager: deleting due to NoExecute taint") and the event
  `TaintManagerEviction` "Marking for deletion Pod <ns>/<name>"; a scheduled deletion that is called
  off gives "Cancelling deletion of Pod <ns>/<name>". Events come from `taint-eviction-controller`.
  The deletion is an ordinary one (the pod's grace period): a pod on a node whose kubelet is down
  stays Terminating, as upstream.

Pods get `not-ready` and `unreachable` tolerations of 300 s from DefaultTolerationSeconds admission,
so a pod is evicted five minutes after its node was tainted unless it says otherwise.

When the time counts from: upstream starts it when the controller first sees the pod on the tainted
node and keeps it in memory. Here it is derived from the API, so it survives a restart: the
earliest `timeAdded` of the node's NoExecute taints, or the time the pod was scheduled if that is
later (a pod that arrived on an already tainted node gets its full toleration). A taint without
`timeAdded` (one added by hand) counts from when this controller first saw it.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..client.clock import to_datetime
from ..client.controller import Controller
from ..client.informer import InformerFactory, index_pod_by_node_name, object_key
from ..client.interface import Client
from ..client.retry import retry_on_conflict
from ..dra.devices import tolerates
from ..machinery.errors import StatusError, not_found_error
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds

Obj = dict[str, Any]

EVENT_COMPONENT = "taint-eviction-controller"
REASON = "TaintManagerEviction"
CONDITION_REASON = "DeletionByTaintManager"
CONDITION_MESSAGE = "Taint manager: deleting due to NoExecute taint"


def no_execute_taints(node: Obj | None) -> list[Obj]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]


def matching_tolerations(taints: Iterable[Obj], tolerations: Iterable[Obj]) -> tuple[bool, list[Obj]]:
    """(every taint tolerated, the tolerations that tolerate one): upstream's GetMatchingTolerations."""
    tolerations = list(tolerations)
    used: list[Obj] = []
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return False, []
        used.extend(t for t in matching if t not in used)
    return True, used


def min_toleration_seconds(used: list[Obj]) -> float | None:
    """The smallest `tolerationSeconds` (0 for none or a non-positive one); None: forever."""
    if not used:
        return 0.0
    seconds = [t["tolerationSeconds"] for t in used if isinstance(t.get("tolerationSeconds"), (int, float))]
    if not seconds:
        return None
    return max(0.0, float(min(seconds)))


def _scheduled_at(pod: Obj) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "True":
            return rfc3339_seconds(c.get("lastTransitionTime"))
    return None


def _event_ref(pod: Obj) -> Obj:
    """The pod as upstream's taint manager names it in events: kind, namespace and name only."""
    md = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": md["name"], "namespace": md.get("namespace", "")}}


def with_disruption_condition(pod: Obj, reason: str, message: str, now: str) -> Obj | None:
    """The pod's status with `DisruptionTarget` set; None when it already says so."""
    status = deep_copy(pod.get("status") or {})
    conditions = status.setdefault("conditions", [])
    new = {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message,
           "lastTransitionTime": now}
    for i, c in enumerate(conditions):
        if c.get("type") == "DisruptionTarget":
            if c.get("status") == "True" and c.get("reason") == reason and c.get("message") == message:
                return None
            if c.get("status") == "True":
                new["lastTransitionTime"] = c.get("lastTransitionTime") or now
            conditions[i] = {**c, **new}
            return status
    conditions.append(new)
    return status


async def add_condition_and_delete(client: Client, pod: Obj, reason: str, message: str, now: str, *,
                                   uid_precondition: bool) -> None:
    """Set `DisruptionTarget` on the pod's status, then delete it (gone meanwhile: nothing to do)."""
    md = pod["metadata"]
    ns, name = md.get("namespace", ""), md["name"]

    async def attempt(conflicted: bool) -> None:
        current = await client.get("v1", "Pod", ns, name) if conflicted else pod
        if current["metadata"].get("uid") != md.get("uid"):
            raise not_found_error("pods", "", name)  # replaced by another pod of that name
        status = with_disruption_condition(current, reason, message, now)
        if status is not None:
            await client.update_status({"apiVersion": "v1", "kind": "Pod", "metadata": dict(current["metadata"]),
                                        "spec": current["spec"], "status": status})

    try:
        await retry_on_conflict(attempt)
        await client.delete("v1", "Pod", ns, name,
                            preconditions={"uid": md.get("uid")} if uid_precondition else None)
    except StatusError as e:
        if e.code not in (404, 409):
            raise


class TaintEvictionController(Controller[str]):
    name = "taint-eviction-controller"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, events: bool = True, **kw: Any):
        super().__init__(client, factory, **kw)
        self.events = events
        self.nodes = self.informer("v1", "Node")
        self.pods = self.informer("v1", "Pod")
        self.pods.add_indexer("spec.nodeName", index_pod_by_node_name)
        self.nodes.add_event_handler(on_add=self._node_changed, on_update=self._node_updated,
                                     on_delete=self._node_changed)
        self.pods.add_event_handler(on_add=self._pod_added, on_update=self._pod_updated)
        self._scheduled: dict[str, float] = {}  # pod key -> eviction time this controller announced
        self._first_seen: dict[tuple[str, str, str], float] = {}  # (node, taint key, value) -> first seen

    # -- events --------------------------------------------------------------------------------
    def _node_changed(self, node: Obj) -> None:
        for pod in self.pods.by_index("spec.nodeName", node["metadata"]["name"]):
            self.queue.add(object_key(pod))

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self._node_changed(new)

    def _pod_added(self, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName") and no_execute_taints(self.nodes.get(pod["spec"]["nodeName"])):
            self.queue.add(object_key(pod))

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        o, n = old.get("spec") or {}, new.get("spec") or {}
        if o.get("nodeName") != n.get("nodeName") or o.get("tolerations") != n.get("tolerations"):
            self._pod_added(new)

    # -- sync ----------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        pod = self.pods.get(key)
        node_name = ((pod or {}).get("spec") or {}).get("nodeName")
        taints = no_execute_taints(self.nodes.get(node_name)) if node_name else []
        if pod is None or not taints or pod["metadata"].get("deletionTimestamp"):
            await self._cancel(key, pod)
            return
        all_tolerated, used = matching_tolerations(taints, pod["spec"].get("tolerations") or [])
        seconds = 0.0 if not all_tolerated else min_toleration_seconds(used)
        if seconds is None:
            await self._cancel(key, pod)  # tolerated forever
            return
        due = self._start_time(pod, node_name or "", taints) + seconds
        now = self.clock.now()
        if now < due:
            self._scheduled[key] = due
            self.enqueue_after(key, due - now)
            return
        self._scheduled.pop(key, None)
        await self._event(pod, f"Marking for deletion Pod {key}")
        await add_condition_and_delete(self.client, pod, CONDITION_REASON, CONDITION_MESSAGE,
                                       now_rfc3339(to_datetime(now)), uid_precondition=False)

    def _start_time(self, pod: Obj, node_name: str, taints: list[Obj]) -> float:
        added = []
        for t in taints:
            when = rfc3339_seconds(t.get("timeAdded"))
            if when is None:
                when = self._first_seen.setdefault((node_name, t.get("key", ""), t.get("value", "")), self.clock.now())
            added.append(when)
        start = min(added)
        scheduled = _scheduled_at(pod)
        return max(start, scheduled) if scheduled is not None else start

    async def _cancel(self, key: str, pod: Obj | None) -> None:
        if self._scheduled.pop(key, None) is not None and pod is not None:
            await self._event(pod, f"Cancelling deletion of Pod {key}")

    async def _event(self, pod: Obj, message: str) -> None:
        if not self.events:
            return
        try:
            await self.client.create_event(_event_ref(pod), REASON, message, component=EVENT_COMPONENT)
        except StatusError as e:  # best effort, as upstream's recorder
            self.log.debug("event for %s: %s", object_key(pod), e)
