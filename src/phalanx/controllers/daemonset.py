"""The DaemonSet controller (kube-controller-manager's `daemonset`): one pod per eligible node.

As upstream's `DaemonSetsController`:

- a node is eligible when the template's `nodeName` (if any), `nodeSelector` and required node
  affinity admit it and every NoSchedule/NoExecute taint is tolerated, counting the tolerations
  every daemon pod gets (`node.kubernetes.io/not-ready` and `unreachable` NoExecute;
  `disk-pressure`, `memory-pressure`, `pid-pressure`, `unschedulable` NoSchedule; and
  `network-unavailable` for host-network pods). A pod on a node with an untolerated NoExecute
  taint is removed; one whose node only turned NoSchedule stays (misscheduled);
- pods are created from the template (generateName `<ds>-`, the DaemonSet as controller, labels
  `controller-revision-hash` and `pod-template-generation`) with a required node affinity on
  `metadata.name` for their node, and the scheduler binds them; a node with more than one pod
  keeps the oldest, failed pods are replaced, pods of nodes that are gone are deleted;
- the template's revisions are apps/v1 ControllerRevisions `<ds>-<hash>` (data: the template as
  a replace patch, `revision` counting up, rolled forward when an old template comes back, history
  beyond `revisionHistoryLimit` deleted once no pod uses it);
- `RollingUpdate` replaces old pods node by node within `maxUnavailable`, or with `maxSurge`
  starts the new pod first and deletes the old one once the new one is available; `OnDelete`
  replaces only pods someone deleted;
- pod events that only refresh the status are batched per DaemonSet for 100 ms (the last pod of a
  batch of creations, and deletions, sync at once);
- status: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`, `numberReady`,
  `updatedNumberScheduled`, `numberAvailable`, `numberUnavailable`, `observedGeneration`, which
  `kubectl rollout status ds/<name>` reads.
"""

from __future__ import annotations

import math
from typing import Any

from ..client.clock import Clock
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..machinery.selectors import node_selector_matches
from .deployment import compute_hash
from .podcontrol import (BatchError, ControllerExpectations, PodControl, claim_objects, is_pod_available,
                         is_pod_ready, selector_of, slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE)

Obj = dict[str, Any]

COMPONENT = "daemonset-controller"
HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
BURST_REPLICAS = 250
POD_BATCH_PERIOD = 0.1  # seconds: status-only pod events of one DaemonSet within it make one sync

DAEMON_TOLERATIONS = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
]
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


# -- pods for nodes ---------------------------------------------------------------------------------
def add_daemon_tolerations(spec: Obj) -> None:
    """`AddOrUpdateDaemonPodTolerations`: the tolerations every daemon pod has (Exists)."""
    wanted = list(DAEMON_TOLERATIONS) + ([NETWORK_UNAVAILABLE] if spec.get("hostNetwork") else [])
    tols = list(spec.get("tolerations") or [])
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        tols = [t for t in tols if not (t.get("key") == key and t.get("effect") == effect)]
        tols.append(tol)
    spec["tolerations"] = tols


def set_node_name_affinity(spec: Obj, node_name: str) -> None:
    """`ReplaceDaemonSetPodNodeNameNodeAffinity`: each required term's matchFields become
    `metadata.name In [node]` (one term with only that when there were none)."""
    field = [{"key": "metadata.name", "operator": "In", "values": [node_name]}]
    affinity = spec.setdefault("affinity", {})
    node_aff = affinity.setdefault("nodeAffinity", {})
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [{"matchFields": field}]}
        return
    for term in terms:
        term["matchFields"] = deep_copy(field)
    node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}


def target_node(pod: Obj) -> str | None:
    """`GetTargetNodeName`: the pod's node, or the one its metadata.name affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1:
                return str(f["values"][0])
    return None


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" or (op == "Equal" and (t.get("value") or "") == (taint.get("value") or "")):
            return True
    return False


def daemon_pod_spec(ds: Obj) -> Obj:
    """The template's pod spec with the daemon tolerations: what `should_run` judges nodes by."""
    spec = deep_copy(((ds.get("spec") or {}).get("template") or {}).get("spec") or {})
    add_daemon_tolerations(spec)
    return spec


def should_run(ds: Obj, node: Obj, spec: Obj | None = None) -> tuple[bool, bool]:
    """`NodeShouldRunDaemonPod`: (should run a pod there, may keep a running one). `spec` is
    `daemon_pod_spec(ds)`, computed once for many nodes."""
    if spec is None:
        spec = daemon_pod_spec(ds)
    name = node["metadata"]["name"]
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False, False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None and not node_selector_matches(required, node):
        return False, False
    tolerations = spec["tolerations"]
    untolerated = [t for t in (node.get("spec") or {}).get("taints") or []
                   if t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(t, tolerations)]
    if untolerated:
        return False, not any(t.get("effect") == "NoExecute" for t in untolerated)
    return True, True


def _created_key(pod: Obj) -> tuple:
    """podByCreationTimestampAndPhase: older first, then not-Pending first, then name."""
    md = pod["metadata"]
    return (md.get("creationTimestamp") or "", (pod.get("status") or {}).get("phase") == "Pending", md["name"])


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value or 0)


def rolling_limits(ds: Obj, desired: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) scaled on the desired count; both 0 means one unavailable."""
    ru = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    surge, unavailable = _scaled(ru.get("maxSurge"), desired), _scaled(ru.get("maxUnavailable"), desired)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def revision_data(ds: Obj) -> Obj:
    """`getPatch`: the template as a replace patch, what a ControllerRevision stores."""
    template = deep_copy((ds.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


class DaemonSetsController(Controller[str]):
    name = "daemonset"
    workers = 2  # --concurrent-daemonset-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None, burst_replicas: int = BURST_REPLICAS):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.burst_replicas = burst_replicas
        self.pod_control = PodControl(client, COMPONENT)
        self.expectations = ControllerExpectations(self.clock)
        self.daemonsets = self.informer("apps/v1", "DaemonSet")
        self.pods = self.informer("v1", "Pod")
        self.nodes = self.informer("v1", "Node")
        self.revisions = self.informer("apps/v1", "ControllerRevision")
        self.enqueue_on(self.daemonsets)
        self.daemonsets.add_event_handler(on_delete=lambda ds: self.expectations.delete(object_key(ds)))
        self.pods.add_event_handler(on_add=self._pod_added, on_update=self._pod_updated,
                                    on_delete=self._pod_deleted)
        self.nodes.add_event_handler(on_add=lambda n: self._all(), on_update=self._node_updated,
                                     on_delete=lambda n: self._all())

    # -- event handlers --------------------------------------------------------------------------
    def _all(self) -> None:
        for ds in self.daemonsets.list():
            self.enqueue(object_key(ds))

    def _node_updated(self, old: Obj, new: Obj) -> None:
        def facts(n: Obj) -> tuple:
            return ((n["metadata"].get("labels") or {}), (n.get("spec") or {}).get("taints"),
                    (n.get("spec") or {}).get("unschedulable"))
        if facts(old) != facts(new):
            self._all()

    def _owner_key(self, pod: Obj) -> str | None:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "DaemonSet":
            return None
        key = f"{pod['metadata'].get('namespace')}/{ref.get('name')}"
        ds = self.daemonsets.get(key)
        return key if ds is not None and ds["metadata"].get("uid") == ref.get("uid") else None

    def _pod_added(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            if self.expectations.satisfied(key):
                self.enqueue(key)  # the last pod of a batch: sync at once
            else:
                self.queue.add_after(key, POD_BATCH_PERIOD)  # the earliest pending add wins

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        key = self._owner_key(new)
        if key is None:
            return
        if new["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)  # a graceful deletion counts as observed once it starts, as upstream
            return
        self.queue.add_after(key, POD_BATCH_PERIOD)  # the earliest pending add wins
        ds = self.daemonsets.get(key)
        mrs = int(((ds or {}).get("spec") or {}).get("minReadySeconds") or 0)
        if mrs > 0 and not is_pod_ready(old) and is_pod_ready(new):
            self.enqueue_after(key, mrs + 1)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, pod["metadata"].get("uid", ""))
            self.enqueue(key)

    # -- sync --------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.daemonsets.get(key)
        if shared is None:
            self.expectations.delete(key)
            return
        ds = deep_copy(shared)
        selector = selector_of(ds)
        if selector.is_nothing or selector.empty:
            return
        ns = ds["metadata"].get("namespace", "")
        candidates = [p for p in self.pods.list(ns) if not controller_of(p) or
                      (controller_of(p) or {}).get("uid") == ds["metadata"].get("uid")]
        pods = await claim_objects(self.client, ds, selector, candidates, api_version="v1", kind="Pod")
        if ds["metadata"].get("deletionTimestamp"):
            return
        current_hash, old_revisions = await self._construct_history(ds)
        by_node = self._pods_by_node(pods)
        if self.expectations.satisfied(key):
            await self._manage(key, ds, by_node, current_hash)
            strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
            if strategy == "RollingUpdate" and self.expectations.satisfied(key):
                await self._rolling_update(key, ds, by_node, current_hash)
            await self._cleanup_history(ds, pods, old_revisions)
        await self._update_status(ds, by_node, current_hash)

    def _pods_by_node(self, pods: list[Obj]) -> dict[str, list[Obj]]:
        out: dict[str, list[Obj]] = {}
        for pod in pods:
            node = target_node(pod)
            if node is not None:
                out.setdefault(node, []).append(pod)
        return out

    # -- manage: which nodes need a pod and which pods must go --------------------------------------
    async def _manage(self, key: str, ds: Obj, by_node: dict[str, list[Obj]], current_hash: str) -> None:
        need: list[str] = []
        delete: list[Obj] = []
        nodes = {n["metadata"]["name"]: n for n in self.nodes.list()}
        surge = rolling_limits(ds, 1)[0] > 0 and self._is_rolling(ds)
        spec = daemon_pod_spec(ds)
        for name, node in nodes.items():
            run, keep = should_run(ds, node, spec)
            pods = by_node.get(name, [])
            if run and not pods:
                need.append(name)
            elif run:
                delete += self._excess_pods(ds, pods, current_hash, surge)
            elif not keep:
                delete += [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        for name, pods in by_node.items():
            if name not in nodes:
                delete += [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        await self._sync_nodes(key, ds, delete, need, current_hash)

    @staticmethod
    def _is_rolling(ds: Obj) -> bool:
        return ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type") == "RollingUpdate"

    def _excess_pods(self, ds: Obj, pods: list[Obj], current_hash: str, surge: bool) -> list[Obj]:
        """`podsShouldBeOnNode` for a node that should run one: failed pods go; of the running
        ones the oldest stays (with surge: the oldest new one, and the oldest old one while it is
        ready and the new one not yet available)."""
        delete: list[Obj] = []
        running: list[Obj] = []
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase") == "Failed":
                delete.append(pod)
            else:
                running.append(pod)
        running.sort(key=_created_key)
        if not surge:
            return delete + running[1:]
        newest: Obj | None = None
        oldest_old: Obj | None = None
        for pod in running:
            is_new = (pod["metadata"].get("labels") or {}).get(HASH_LABEL) == current_hash
            if is_new and newest is None:
                newest = pod
            elif not is_new and oldest_old is None:
                oldest_old = pod
            else:
                delete.append(pod)
        if newest is not None and oldest_old is not None:
            mrs = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(oldest_old) or is_pod_available(newest, mrs, self.clock.now()):
                delete.append(oldest_old)
        return delete

    async def _sync_nodes(self, key: str, ds: Obj, delete: list[Obj], create: list[str], current_hash: str) -> None:
        create = create[:self.burst_replicas]
        delete = delete[:self.burst_replicas]
        if not create and not delete:
            return
        self.expectations.expect_creations(key, len(create))
        self.expectations.expect_deletions(key, [p["metadata"].get("uid", "") for p in delete])
        ns = ds["metadata"].get("namespace", "")
        generation = ds["metadata"].get("generation")

        async def create_one(i: int) -> None:
            template = deep_copy((ds.get("spec") or {}).get("template") or {})
            labels = template.setdefault("metadata", {}).setdefault("labels", {})
            labels[HASH_LABEL] = current_hash
            if generation is not None:
                labels[GENERATION_LABEL] = str(generation)
            spec = template.setdefault("spec", {})
            add_daemon_tolerations(spec)
            set_node_name_affinity(spec, create[i])
            try:
                await self.pod_control.create_pod(ns, template, ds)
            except StatusError:
                self.expectations.creation_observed(key)
                raise

        first_error: BaseException | None = None
        try:
            await slow_start_batch(len(create), SLOW_START_INITIAL_BATCH_SIZE, create_one)
        except BatchError as e:
            for _ in range(e.skipped):
                self.expectations.creation_observed(key)
            first_error = e.first
        for pod in delete:
            try:
                await self.pod_control.delete_pod(ns, pod["metadata"]["name"], ds)
            except StatusError as e:
                self.expectations.deletion_observed(key, pod["metadata"].get("uid", ""))
                if e.code != 404:
                    first_error = first_error or e
        if first_error is not None:
            raise first_error

    # -- rolling update ------------------------------------------------------------------------------
    def _split(self, pods: list[Obj], current_hash: str) -> tuple[Obj | None, Obj | None, bool]:
        """`findUpdatedPodsOnNode`: (new pod, old pod, at most one of each)."""
        new = old = None
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if (pod["metadata"].get("labels") or {}).get(HASH_LABEL) == current_hash:
                if new is not None:
                    return None, None, False
                new = pod
            else:
                if old is not None:
                    return None, None, False
                old = pod
        return new, old, True

    async def _rolling_update(self, key: str, ds: Obj, by_node: dict[str, list[Obj]], current_hash: str) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.nodes.list()}
        spec = daemon_pod_spec(ds)
        eligible = {name for name, n in nodes.items() if should_run(ds, n, spec)[0]}
        desired = len(eligible)
        surge, unavailable = rolling_limits(ds, desired)
        mrs = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        if surge == 0:
            await self._sync_nodes(key, ds, self._unavailable_replacements(by_node, current_hash, unavailable,
                                                                           mrs, now), [], current_hash)
            return
        count = 0
        allowed: list[str] = []
        candidates: list[str] = []
        old_to_delete: list[Obj] = []
        for name, pods in by_node.items():
            if name not in eligible:
                continue
            new, old, ok = self._split(pods, current_hash)
            if not ok:
                count += 1
            elif old is None:
                continue
            elif new is None:
                if not is_pod_available(old, mrs, now):
                    allowed.append(name)
                elif count < surge:
                    candidates.append(name)
            elif not is_pod_available(new, mrs, now):
                count += 1
            else:
                old_to_delete.append(old)
        room = max(min(surge - count, len(candidates)), 0)
        await self._sync_nodes(key, ds, old_to_delete, allowed + candidates[:room], current_hash)

    def _unavailable_replacements(self, by_node: dict[str, list[Obj]], current_hash: str, max_unavailable: int,
                                  mrs: int, now: float) -> list[Obj]:
        """The maxSurge 0 branch: old pods to delete, unavailable ones always, then available ones
        while the unavailable count stays within maxUnavailable."""
        unavailable = 0
        replace: list[Obj] = []
        candidates: list[Obj] = []
        for name in sorted(by_node):
            new, old, ok = self._split(by_node[name], current_hash)
            if not ok or (new is None and old is None) or (new is not None and old is not None):
                unavailable += 1
            elif new is not None:
                if not is_pod_available(new, mrs, now):
                    unavailable += 1
            elif old is not None and not is_pod_available(old, mrs, now):
                replace.append(old)
            elif old is not None and unavailable < max_unavailable:
                candidates.append(old)
        room = max(min(max_unavailable - unavailable, len(candidates)), 0)
        return replace + candidates[:room]

    # -- history ----------------------------------------------------------------------------------------
    def _owned_revisions(self, ds: Obj) -> list[Obj]:
        uid = ds["metadata"].get("uid")
        return [r for r in self.revisions.list(ds["metadata"].get("namespace"))
                if (controller_of(r) or {}).get("uid") == uid]

    async def _construct_history(self, ds: Obj) -> tuple[str, list[Obj]]:
        """The current revision's hash (creating or rolling forward its ControllerRevision) and the
        old revisions."""
        revisions = self._owned_revisions(ds)
        data = revision_data(ds)
        matching = sorted((r for r in revisions if r.get("data") == data), key=lambda r: int(r.get("revision") or 0))
        max_rev = max((int(r.get("revision") or 0) for r in revisions), default=0)
        ns = ds["metadata"].get("namespace", "")
        for dup in matching[:-1]:
            await self._delete_revision(ns, dup["metadata"]["name"])
        if matching:
            current = matching[-1]
            if int(current.get("revision") or 0) < max_rev:
                current = deep_copy(current)
                current["revision"] = max_rev + 1
                await self.client.update(current)
        else:
            current = await self._create_revision(ds, data, max_rev + 1)
        current_hash = (current["metadata"].get("labels") or {}).get(HASH_LABEL, "")
        olds = [r for r in revisions if r["metadata"].get("name") != current["metadata"]["name"]
                and r not in matching[:-1]]
        return current_hash, olds

    async def _create_revision(self, ds: Obj, data: Obj, number: int) -> Obj:
        collisions = (ds.get("status") or {}).get("collisionCount")
        template = (ds.get("spec") or {}).get("template") or {}
        md = ds["metadata"]
        for _ in range(5):
            h = compute_hash(template, collisions)
            labels = dict(((template.get("metadata") or {}).get("labels") or {}))
            labels[HASH_LABEL] = h
            name = f"{md['name'][:223]}-{h}"
            rev: Obj = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                   "metadata": {"name": name, "namespace": md.get("namespace", ""),
                                "labels": labels,
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": md["name"],
                                                     "uid": md.get("uid", ""), "controller": True,
                                                     "blockOwnerDeletion": True}]},
                   "data": data, "revision": number}
            try:
                return await self.client.create(rev)
            except StatusError as e:
                if e.code != 409:
                    raise
                existing = await self.client.get("apps/v1", "ControllerRevision", md.get("namespace"), name)
                if (controller_of(existing) or {}).get("uid") == md.get("uid") and existing.get("data") == data:
                    return existing
                collisions = (collisions or 0) + 1
                ds.setdefault("status", {})["collisionCount"] = collisions
        raise StatusError(409, "AlreadyExists", f"could not name a revision for daemon set {md['name']}")

    async def _delete_revision(self, ns: str, name: str) -> None:
        try:
            await self.client.delete("apps/v1", "ControllerRevision", ns, name)
        except StatusError as e:
            if e.code != 404:
                raise

    async def _cleanup_history(self, ds: Obj, pods: list[Obj], olds: list[Obj]) -> None:
        limit = int((ds.get("spec") or {}).get("revisionHistoryLimit") or 0)
        live = {(p["metadata"].get("labels") or {}).get(HASH_LABEL) for p in pods}
        unused = sorted((r for r in olds if (r["metadata"].get("labels") or {}).get(HASH_LABEL) not in live),
                        key=lambda r: int(r.get("revision") or 0))
        for rev in unused[:max(len(olds) - limit, 0)]:
            await self._delete_revision(ds["metadata"].get("namespace", ""), rev["metadata"]["name"])

    # -- status --------------------------------------------------------------------------------------
    async def _update_status(self, ds: Obj, by_node: dict[str, list[Obj]], current_hash: str) -> None:
        desired = current = misscheduled = ready = available = updated = 0
        mrs = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        generation = str(ds["metadata"].get("generation"))
        spec = daemon_pod_spec(ds)
        for node in self.nodes.list():
            run, _ = should_run(ds, node, spec)
            pods = [p for p in by_node.get(node["metadata"]["name"], [])]
            if not run:
                misscheduled += 1 if pods else 0
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            pod = sorted(pods, key=_created_key)[0]
            if is_pod_ready(pod):
                ready += 1
                available += 1 if is_pod_available(pod, mrs, now) else 0
            labels = pod["metadata"].get("labels") or {}
            if labels.get(HASH_LABEL) == current_hash or (HASH_LABEL not in labels
                                                          and labels.get(GENERATION_LABEL) == generation):
                updated += 1
        status = deep_copy(ds.get("status") or {})
        status.update({"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                       "desiredNumberScheduled": desired, "numberReady": ready,
                       "observedGeneration": ds["metadata"].get("generation", 0),
                       "updatedNumberScheduled": updated, "numberAvailable": available,
                       "numberUnavailable": desired - available})
        for f in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
            if not status[f]:
                status.pop(f)
        if status != (ds.get("status") or {}):
            ds["status"] = status
            await self.client.update_status(ds)
        if mrs > 0 and ready != available:
            self.enqueue_after(object_key(ds), mrs)


__all__ = ["DaemonSetsController", "add_daemon_tolerations", "should_run", "target_node"]
