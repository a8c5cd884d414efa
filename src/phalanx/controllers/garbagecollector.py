"""The garbage collector: kube-controller-manager's `garbagecollector` controller, through `Client`.

    gc = GarbageCollector(client, factory, clock=clock)
    gc.start()

It watches every served resource that supports list, watch and delete (except Events, which
upstream ignores too), builds the owner -> dependents graph from `metadata.ownerReferences` by
uid, and acts as upstream does:

- **Background**: when an owner is gone (deleted, or its uid no longer matches the reference),
  a dependent whose owners are all gone is deleted (with the propagation its own finalizers ask
  for, Background by default). A dependent that still has a live owner only loses the references
  to the dead ones.
- **Foreground**: an owner being deleted with the `foregroundDeletion` finalizer has its
  dependents deleted first (a dependent that has dependents of its own is deleted in Foreground
  too); once no dependent with `blockOwnerDeletion: true` remains, the finalizer is removed and
  the owner goes.
- **Orphan**: an owner being deleted with the `orphan` finalizer has its reference removed from
  every dependent, then the finalizer removed.
- A namespaced dependent's namespaced owner must be in the dependent's namespace: an owner of
  that uid elsewhere does not count (the reference is dangling) and a Warning event
  `OwnerRefInvalidNamespace` is recorded. A cluster-scoped dependent naming a namespaced kind as
  owner is never collected (same event).

Owner existence is always checked with a live GET (the graph can lag); a confirmed-absent owner
uid is remembered. The graph holds nothing the API does not, so a new instance rebuilds it from
its informers' lists and converges (level-triggered). Served resources are rediscovered every
`resync_period` seconds so new kinds (CRDs) are collected too.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field
from typing import Any

from ..client.informer import Informer, InformerFactory
from ..client.interface import Client, ResourceInfo
from ..machinery.errors import StatusError
from ..client.clock import Clock
from ..client.controller import Controller
from ..client.retry import retry_on_conflict

Obj = dict[str, Any]

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"
EVENT_COMPONENT = "garbage-collector-controller"
IGNORED_RESOURCES = frozenset({("", "events"), ("events.k8s.io", "events")})
ABSENT_OWNER_CACHE_SIZE = 500
DELETE = "delete"
ORPHAN = "orphan"


@dataclass
class _Node:
    """One observed object in the graph."""

    info: ResourceInfo
    namespace: str
    name: str
    uid: str
    owners: list[dict] = field(default_factory=list)
    being_deleted: bool = False
    deleting_dependents: bool = False  # deletionTimestamp + foregroundDeletion
    orphaning: bool = False  # deletionTimestamp + orphan


def _node_of(info: ResourceInfo, obj: Obj) -> _Node:
    md = obj.get("metadata") or {}
    finalizers = md.get("finalizers") or []
    deleting = bool(md.get("deletionTimestamp"))
    return _Node(info, md.get("namespace") or "", md.get("name", ""), md.get("uid", ""),
                 [dict(r) for r in md.get("ownerReferences") or [] if r.get("uid")],
                 deleting, deleting and FINALIZER_FOREGROUND in finalizers, deleting and FINALIZER_ORPHAN in finalizers)


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class _InvalidOwnerScope(Exception):
    """A cluster-scoped dependent names a namespaced owner: never resolvable, do not retry."""


class GarbageCollector(Controller[tuple[str, str]]):
    name = "garbagecollector"
    workers = 20  # upstream's --concurrent-gc-syncs default

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None, workers: int | None = None,
                 ignored_resources: frozenset = IGNORED_RESOURCES, resync_period: float = 30.0):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.ignored_resources = ignored_resources
        self.resync_period = resync_period
        self._monitored: dict[tuple[str, str], ResourceInfo] = {}
        self._nodes: dict[str, _Node] = {}
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids
        self._absent: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()

    # -- monitors ----------------------------------------------------------------------------
    async def setup(self) -> None:
        await self.sync_monitors()

    async def sync_monitors(self) -> list[ResourceInfo]:
        """Watch every deletable resource not watched yet; returns the newly watched ones."""
        added = []
        for info in await self.client.served_resources(refresh=True):
            gr = (info.group, info.plural)
            if gr in self.ignored_resources or gr in self._monitored or not info.supports("delete", "list", "watch"):
                continue
            self._monitored[gr] = info
            self._feed_graph(self.informer(info.api_version, info.kind), info)
            added.append(info)
        return added

    async def run(self) -> None:
        resync = asyncio.get_running_loop().create_task(self._resync_monitors())
        try:
            await super().run()
        finally:
            resync.cancel()

    async def _resync_monitors(self) -> None:
        while True:
            await self.clock.sleep(self.resync_period)
            try:
                if await self.sync_monitors():
                    self.factory.start()
            except StatusError as e:
                self.log.warning("resource discovery failed: %s", e.message)

    @property
    def monitored(self) -> list[ResourceInfo]:
        return list(self._monitored.values())

    # -- graph -------------------------------------------------------------------------------
    def _valid_edge(self, owner: _Node, dependent: _Node) -> bool:
        """A namespaced owner only owns dependents in its own namespace."""
        return not owner.info.namespaced or owner.namespace == dependent.namespace

    def _owner_in_graph(self, dependent: _Node, ref: dict) -> bool:
        """True when the graph holds an object matching the reference where it may live."""
        owner = self._nodes.get(ref["uid"])
        return (owner is not None and owner.name == ref.get("name") and owner.info.kind == ref.get("kind")
                and owner.info.group == _group_of(ref.get("apiVersion", "")) and self._valid_edge(owner, dependent)
                and not owner.deleting_dependents)

    def _feed_graph(self, inf: Informer, info: ResourceInfo) -> None:
        """Observe every add, update and delete of one monitored resource."""
        def on_add(obj: Obj) -> None:
            self._observe(info, obj, None)

        def on_update(old: Obj, new: Obj) -> None:
            self._observe(info, new, old)

        def on_delete(obj: Obj) -> None:
            self._forget(info, obj)

        inf.add_event_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)

    def _observe(self, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        node = _node_of(info, obj)
        if not node.uid:
            return
        prev = self._nodes.get(node.uid)
        self._nodes[node.uid] = node
        prev_owners = {r["uid"]: r for r in prev.owners} if prev is not None else {}
        new_owners = {r["uid"]: r for r in node.owners}
        self._relink(node.uid, prev_owners, new_owners)
        # A dependent whose owners are not all live in the graph: check it against the API.
        changed_refs = prev is None or prev.owners != node.owners
        if node.owners and changed_refs and not node.being_deleted:
            if not all(self._owner_in_graph(node, r) for r in node.owners):
                self.queue.add((DELETE, node.uid))
        if prev is not None and prev.owners != node.owners:
            self._recheck_waiting_owners(prev_owners, new_owners)
        self._enqueue_transitions(node, prev)

    def _relink(self, uid: str, prev_owners: dict[str, dict], new_owners: dict[str, dict]) -> None:
        """The dependents index after the object's owner references changed."""
        for owner_uid in prev_owners.keys() - new_owners.keys():
            deps = self._dependents.get(owner_uid)
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    del self._dependents[owner_uid]
        for owner_uid in new_owners.keys() - prev_owners.keys():
            self._dependents.setdefault(owner_uid, set()).add(uid)

    def _recheck_waiting_owners(self, prev_owners: dict[str, dict], new_owners: dict[str, dict]) -> None:
        """Owners deleting their dependents may wait on this object no more: a reference dropped or
        unblocked."""
        for uid in prev_owners:
            owner = self._nodes.get(uid)
            if owner is not None and owner.deleting_dependents and \
                    (uid not in new_owners or not new_owners[uid].get("blockOwnerDeletion")):
                self.queue.add((DELETE, uid))

    def _enqueue_transitions(self, node: _Node, prev: _Node | None) -> None:
        """Transitions to "deleting dependents" (foreground) and "orphaning"."""
        if node.deleting_dependents and (prev is None or not prev.deleting_dependents):
            for dep in self._dependents.get(node.uid, ()):
                self.queue.add((DELETE, dep))
            self.queue.add((DELETE, node.uid))
        if node.orphaning and (prev is None or not prev.orphaning):
            self.queue.add((ORPHAN, node.uid))

    def _forget(self, info: ResourceInfo, obj: Obj) -> None:
        uid = (obj.get("metadata") or {}).get("uid", "")
        node = self._nodes.pop(uid, None)
        if node is None:
            return
        for ref in node.owners:
            deps = self._dependents.get(ref["uid"])
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    del self._dependents[ref["uid"]]
            owner = self._nodes.get(ref["uid"])
            if owner is not None and owner.deleting_dependents:
                self.queue.add((DELETE, owner.uid))
        deps = self._dependents.get(uid)
        if deps:
            self._remember_absent(uid, node.namespace if node.info.namespaced else "")
            for dep in deps:
                self.queue.add((DELETE, dep))

    def dependents_of(self, uid: str) -> list[_Node]:
        """Observed dependents of the observed object `uid` that it may own (namespace rule)."""
        owner = self._nodes.get(uid)
        out = []
        for dep_uid in self._dependents.get(uid, ()):
            dep = self._nodes.get(dep_uid)
            if dep is not None and (owner is None or self._valid_edge(owner, dep)):
                out.append(dep)
        return out

    def _remember_absent(self, uid: str, namespace: str) -> None:
        self._absent[(uid, namespace)] = None
        self._absent.move_to_end((uid, namespace))
        while len(self._absent) > ABSENT_OWNER_CACHE_SIZE:
            self._absent.popitem(last=False)

    # -- work --------------------------------------------------------------------------------
    async def sync(self, key: tuple[str, str]) -> None:
        op, uid = key
        node = self._nodes.get(uid)
        if node is None:
            return  # gone (or never observed): its dependents were enqueued when it went
        if op == ORPHAN:
            await self._orphan_dependents(node)
            return
        try:
            await self._attempt_to_delete(node)
        except _InvalidOwnerScope:
            return

    async def _get(self, node: _Node) -> Obj | None:
        try:
            obj = await self.client.get(node.info.api_version, node.info.kind, node.namespace or None, node.name)
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        return obj if (obj.get("metadata") or {}).get("uid") == node.uid else None

    async def _attempt_to_delete(self, node: _Node) -> None:
        if node.being_deleted and not node.deleting_dependents:
            return  # on its way out; its dependents are handled when it is gone
        if not node.being_deleted and node.owners and all(self._owner_in_graph(node, r) for r in node.owners):
            # Queued when an owner had not been observed yet (a restart lists pods before their
            # ReplicaSets): every owner is in the graph now, so nothing dangles and no API call is due.
            return
        latest = await self._get(node)
        if latest is None:
            return
        md = latest["metadata"]
        finalizers = md.get("finalizers") or []
        if md.get("deletionTimestamp"):
            if FINALIZER_FOREGROUND in finalizers:
                await self._process_deleting_dependents(node)
            return
        refs = [r for r in md.get("ownerReferences") or [] if r.get("uid")]
        if not refs:
            return
        solid, dangling, waiting = await self._classify(node, latest, refs)
        if solid:
            if dangling or waiting:
                gone = {r["uid"] for r in dangling + waiting}
                self.log.debug("removing references to %s from %s/%s", sorted(gone), node.namespace, node.name)
                await self._mutate(node, lambda o: _drop_owner_refs(o, gone))
            return
        if waiting and self.dependents_of(node.uid):
            if any(dep.deleting_dependents for dep in self.dependents_of(node.uid)):
                # Break a possible cycle: stop blocking our owners, then go in foreground ourselves.
                await self._mutate(node, _unblock_owner_refs)
            await self._delete(node, "Foreground")
            return
        await self._delete(node, _propagation_for(finalizers))

    async def _classify(self, node: _Node, latest: Obj, refs: list[dict]):
        solid: list[dict] = []
        dangling: list[dict] = []
        waiting: list[dict] = []
        for ref in refs:
            owner_info = await self.client.resource_info(ref.get("apiVersion", ""), ref.get("kind", ""))
            if owner_info.namespaced and not node.namespace:
                await self._report_invalid_namespace(latest, ref, node.namespace)
                raise _InvalidOwnerScope()
            ns = node.namespace if owner_info.namespaced else ""
            if (ref["uid"], ns) in self._absent:
                dangling.append(ref)
                continue
            try:
                owner = await self.client.get(owner_info.api_version, owner_info.kind, ns or None, ref.get("name", ""))
            except StatusError as e:
                if e.code != 404:
                    raise
                owner = None
            if owner is None or (owner.get("metadata") or {}).get("uid") != ref["uid"]:
                self._remember_absent(ref["uid"], ns)
                elsewhere = self._nodes.get(ref["uid"])
                if owner_info.namespaced and elsewhere is not None and elsewhere.namespace != node.namespace:
                    await self._report_invalid_namespace(latest, ref, node.namespace)
                dangling.append(ref)
                continue
            omd = owner.get("metadata") or {}
            if omd.get("deletionTimestamp") and FINALIZER_FOREGROUND in (omd.get("finalizers") or []):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def _report_invalid_namespace(self, dependent: Obj, ref: dict, namespace: str) -> None:
        message = (f"ownerRef [{ref.get('apiVersion', '')}/{ref.get('kind', '')}, namespace: {namespace}, "
                   f"name: {ref.get('name', '')}, uid: {ref.get('uid', '')}] does not exist in namespace \"{namespace}\"")
        await self.client.create_event(dependent, "OwnerRefInvalidNamespace", message, type="Warning",
                                       component=EVENT_COMPONENT)

    async def _process_deleting_dependents(self, node: _Node) -> None:
        blocking = [dep for dep in self.dependents_of(node.uid)
                    if any(r["uid"] == node.uid and r.get("blockOwnerDeletion") for r in dep.owners)]
        if not blocking:
            await self._mutate(node, lambda o: _drop_finalizer(o, FINALIZER_FOREGROUND))
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self.queue.add((DELETE, dep.uid))

    async def _orphan_dependents(self, owner: _Node) -> None:
        latest = await self._get(owner)
        if latest is None:
            return
        md = latest["metadata"]
        if not md.get("deletionTimestamp") or FINALIZER_ORPHAN not in (md.get("finalizers") or []):
            return
        for dep in self.dependents_of(owner.uid):
            await self._mutate(dep, lambda o: _drop_owner_refs(o, {owner.uid}))
        await self._mutate(owner, lambda o: _drop_finalizer(o, FINALIZER_ORPHAN))

    async def _delete(self, node: _Node, policy: str) -> None:
        self.log.debug("deleting %s %s/%s (propagation %s)", node.info.kind, node.namespace, node.name, policy)
        try:
            await self.client.delete(node.info.api_version, node.info.kind, node.namespace or None, node.name,
                                     propagation=policy, preconditions={"uid": node.uid})
        except StatusError as e:
            if e.code == 404:
                return
            if e.code == 409 and "Precondition failed" in e.message:
                return  # a different object of that name now: ours is gone
            raise

    async def _mutate(self, node: _Node, change) -> None:
        """Read-modify-write of one object, retried on conflict; `change(obj)` returns False when
        there is nothing to change. A vanished object is not an error."""
        async def attempt(conflicted: bool) -> None:
            obj = await self._get(node)
            if obj is None or not change(obj):
                return
            try:
                await self.client.update(obj)
            except StatusError as e:
                if e.code != 404:
                    raise

        await retry_on_conflict(attempt, steps=10)


def _propagation_for(finalizers: list[str]) -> str:
    """The propagation policy the object's finalizers ask for: Orphan, Foreground or Background."""
    if FINALIZER_ORPHAN in finalizers:
        return "Orphan"
    if FINALIZER_FOREGROUND in finalizers:
        return "Foreground"
    return "Background"


def _drop_owner_refs(obj: Obj, uids: set[str]) -> bool:
    md = obj["metadata"]
    refs = md.get("ownerReferences") or []
    kept = [r for r in refs if r.get("uid") not in uids]
    if len(kept) == len(refs):
        return False
    if kept:
        md["ownerReferences"] = kept
    else:
        md.pop("ownerReferences", None)
    return True


def _unblock_owner_refs(obj: Obj) -> bool:
    changed = False
    for r in obj["metadata"].get("ownerReferences") or []:
        if r.get("blockOwnerDeletion"):
            r["blockOwnerDeletion"] = False
            changed = True
    return changed


def _drop_finalizer(obj: Obj, finalizer: str) -> bool:
    md = obj["metadata"]
    fins = md.get("finalizers") or []
    if finalizer not in fins:
        return False
    kept = [f for f in fins if f != finalizer]
    if kept:
        md["finalizers"] = kept
    else:
        md.pop("finalizers", None)
    return True
