"""The Deployment controller (kube-controller-manager's `deployment` controller), through `Client`.

    DeploymentController(client, factory, clock=clock).start()

Runs each apps/v1 Deployment through ReplicaSets as upstream does, so `kubectl rollout status`,
`kubectl scale` and `kubectl rollout history` see what they expect:

- the ReplicaSet for the current template is `<deployment>-<pod-template-hash>`; the hash is upstream's
  recipe (32-bit FNV-1a, then the collision count as 8 little-endian bytes, rendered in decimal through
  `rand.SafeEncodeString`) applied to the template's canonical JSON (upstream feeds Go's spew dump of
  the struct, so the value differs from a real cluster's; it is as stable). The label
  `pod-template-hash` goes on the ReplicaSet, its selector and its pod template. A name collision with
  a ReplicaSet of another template bumps `status.collisionCount`;
- RollingUpdate (maxSurge rounded up, maxUnavailable rounded down, both from percentages of
  `replicas`) and Recreate (old pods gone before new ones start); proportional scaling of all active
  ReplicaSets on `kubectl scale` in the middle of a rollout (annotations
  `deployment.kubernetes.io/desired-replicas` / `max-replicas`); `paused`;
- revisions: `deployment.kubernetes.io/revision` on ReplicaSets and the Deployment (and
  `revision-history` when an old template comes back), `revisionHistoryLimit` old ReplicaSets kept;
- status `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas`, `unavailableReplicas`,
  `observedGeneration`, `collisionCount`, conditions Available (MinimumReplicasAvailable /
  MinimumReplicasUnavailable) and Progressing (NewReplicaSetCreated, FoundNewReplicaSet,
  ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused /
  DeploymentResumed) with upstream's messages; events ScalingReplicaSet
  `Scaled up replica set <rs> from <a> to <b>`.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Sequence, overload

import orjson

from ..client.informer import InformerFactory, object_key
from ..client.interface import Client, MERGE_PATCH
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..machinery.timestamps import rfc3339_seconds
from ..client.clock import Clock
from ..client.controller import Controller
from .podcontrol import (INDEX_CONTROLLER_UID, add_workload_indexers, candidates_for, claim_objects, controller_ref,
                         fnv32a, rfc3339, safe_encode_string, selector_of)

Obj = dict[str, Any]

COMPONENT = "deployment-controller"
POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SKIPPED_ANNOTATIONS = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO}

AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _replicas(obj: Obj | None) -> int:
    return _int(((obj or {}).get("spec") or {}).get("replicas"), 0) if obj else 0


def _status_int(obj: Obj | None, f: str) -> int:
    return _int(((obj or {}).get("status") or {}).get(f)) if obj else 0


# -- pod-template-hash -------------------------------------------------------------------------------
def compute_hash(template: Obj, collision_count: int | None) -> str:
    """controller.ComputeHash: FNV-1a 32 over the template (here its canonical JSON), then the
    collision count as 8 little-endian bytes, the decimal sum safe-encoded."""
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00" * 4, h)
    return safe_encode_string(str(h))


def _template_without_hash(template: Obj) -> Obj:
    t = deep_copy(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH, None)
    return t


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    return _template_without_hash(a) == _template_without_hash(b)


# -- int-or-percent ------------------------------------------------------------------------------------
def scaled_value(v: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if v is None:
        return 0
    if isinstance(v, int):
        return v
    s = str(v)
    if s.endswith("%"):
        pct = int(s[:-1])
        value = pct * total / 100
        return math.ceil(value) if round_up else math.floor(value)
    return int(s)


def is_rolling(d: Obj) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def resolve_fenceposts(d: Obj) -> tuple[int, int]:
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = _replicas(d)
    surge = scaled_value(ru.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(ru.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Obj) -> int:
    return resolve_fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: Obj) -> int:
    if not is_rolling(d) or _replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], _replicas(d))


# -- ReplicaSet lists ------------------------------------------------------------------------------------
def _created(rs: Obj) -> tuple[float, str]:
    md = rs["metadata"]
    return (rfc3339_seconds(md.get("creationTimestamp")) or 0.0, md.get("name", ""))


def by_creation(rss: list[Obj]) -> list[Obj]:
    return sorted(rss, key=_created)


def revision(rs: Obj) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def active_rss(rss: Sequence[Obj | None]) -> list[Obj]:
    return [rs for rs in rss if rs is not None and _replicas(rs) > 0]


def replica_count(rss: Sequence[Obj | None]) -> int:
    return sum(_replicas(rs) for rs in rss if rs is not None)


def actual_count(rss: Sequence[Obj | None]) -> int:
    return sum(_status_int(rs, "replicas") for rs in rss if rs is not None)


def ready_count(rss: Sequence[Obj | None]) -> int:
    return sum(_status_int(rs, "readyReplicas") for rs in rss if rs is not None)


def available_count(rss: Sequence[Obj | None]) -> int:
    return sum(_status_int(rs, "availableReplicas") for rs in rss if rs is not None)


# -- conditions --------------------------------------------------------------------------------------------
def get_condition(status: Obj, ctype: str) -> dict | None:
    for c in status.get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def new_condition(clock: Clock, ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    now = rfc3339(clock)
    return {"type": ctype, "status": status, "lastUpdateTime": now, "lastTransitionTime": now, "reason": reason,
            "message": message}


def set_condition(status: Obj, cond: dict) -> None:
    """SetDeploymentCondition: no-op for the same status and reason; keeps lastTransitionTime when
    only the reason changes; the condition moves to the end of the list."""
    cur = get_condition(status, cond["type"])
    if cur is not None and cur.get("status") == cond["status"] and cur.get("reason") == cond["reason"]:
        return
    if cur is not None and cur.get("status") == cond["status"]:
        cond = dict(cond, lastTransitionTime=cur.get("lastTransitionTime"))
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != cond["type"]] + [cond]


def remove_condition(status: Obj, ctype: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != ctype]


def deployment_complete(d: Obj, status: Obj) -> bool:
    r = _replicas(d)
    return (_int(status.get("updatedReplicas")) == r and _int(status.get("replicas")) == r
            and _int(status.get("availableReplicas")) == r
            and _int(status.get("observedGeneration")) >= _int(d["metadata"].get("generation")))


def deployment_progressing(d: Obj, new: Obj) -> bool:
    old = d.get("status") or {}
    old_old = _int(old.get("replicas")) - _int(old.get("updatedReplicas"))
    new_old = _int(new.get("replicas")) - _int(new.get("updatedReplicas"))
    return (_int(new.get("updatedReplicas")) > _int(old.get("updatedReplicas"))
            or _int(new.get("readyReplicas")) > _int(old.get("readyReplicas"))
            or _int(new.get("availableReplicas")) > _int(old.get("availableReplicas"))
            or old_old > new_old)


def has_progress_deadline(d: Obj) -> bool:
    pds = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return pds is not None and pds != 2**31 - 1


class DeploymentController(Controller[str]):
    name = "deployment"
    workers = 5  # --concurrent-deployment-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None, workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.deployments = self.informer("apps/v1", "Deployment")
        self.replica_sets = self.informer("apps/v1", "ReplicaSet")
        self.pods = self.informer("v1", "Pod")
        add_workload_indexers(self.replica_sets)
        add_workload_indexers(self.pods)
        self.enqueue_on(self.deployments)
        self.replica_sets.add_event_handler(on_add=self._rs_changed, on_update=self._rs_updated,
                                            on_delete=self._rs_changed)
        self.pods.add_event_handler(on_delete=self._pod_deleted)

    # -- event handlers ---------------------------------------------------------------------------
    def _owner(self, obj: Obj) -> Obj | None:
        ref = controller_of(obj)
        if not ref or ref.get("kind") != "Deployment":
            return None
        d = self.deployments.get(f"{obj['metadata'].get('namespace', '')}/{ref.get('name')}")
        return d if d is not None and d["metadata"].get("uid") == ref.get("uid") else None

    def _rs_changed(self, rs: Obj) -> None:
        d = self._owner(rs)
        if d is not None:
            self.enqueue(object_key(d))
            return
        if controller_of(rs) is None:
            labels = rs["metadata"].get("labels") or {}
            for d in self.deployments.list(rs["metadata"].get("namespace")):
                sel = selector_of(d)
                if not sel.empty and sel.matches(labels):
                    self.enqueue(object_key(d))

    def _rs_updated(self, old: Obj, cur: Obj) -> None:
        if cur["metadata"].get("resourceVersion") == old["metadata"].get("resourceVersion"):
            return
        old_ref, cur_ref = controller_of(old), controller_of(cur)
        if old_ref != cur_ref and old_ref is not None:
            d = self._owner(old)
            if d is not None:
                self.enqueue(object_key(d))
        self._rs_changed(cur)

    def _pod_deleted(self, pod: Obj) -> None:
        """Recreate waits for old pods to go: wake the Deployment when its last old pod does."""
        rs_ref = controller_of(pod)
        if not rs_ref or rs_ref.get("kind") != "ReplicaSet":
            return
        rs = self.replica_sets.get(f"{pod['metadata'].get('namespace', '')}/{rs_ref.get('name')}")
        if rs is None:
            return
        d = self._owner(rs)
        if d is not None and not is_rolling(d):
            self.enqueue(object_key(d))

    # -- sync --------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.deployments.get(key)
        if shared is None:
            return
        d = deep_copy(shared)
        d.setdefault("status", {})
        selector = selector_of(d)
        if selector.empty:
            await self.client.create_event(d, "SelectingAll", "This deployment is selecting all pods. A non-empty "
                                                              "selector is required.", type="Warning",
                                           component=COMPONENT)
            if _int(d["status"].get("observedGeneration")) < _int(d["metadata"].get("generation")):
                d["status"]["observedGeneration"] = d["metadata"].get("generation")
                await self.client.update_status(d)
            return
        rs_list = await self._replica_sets_for(d, selector)
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old_rss = await self._all_replica_sets(d, rs_list, False)
            await self._sync_status(old_rss + ([new_rs] if new_rs else []), new_rs, d)
            return
        await self._check_paused_conditions(d)
        if d["spec"].get("paused"):
            await self._sync_scale(d, rs_list)
            return
        if await self._is_scaling_event(d, rs_list):
            await self._sync_scale(d, rs_list)
            return
        if is_rolling(d):
            await self._rollout_rolling(d, rs_list)
        else:
            await self._rollout_recreate(d, rs_list)

    async def _replica_sets_for(self, d: Obj, selector: Any) -> list[Obj]:
        return await claim_objects(self.client, d, selector, candidates_for(self.replica_sets, d),
                                   api_version="apps/v1", kind="ReplicaSet")

    async def _check_paused_conditions(self, d: Obj) -> None:
        if not has_progress_deadline(d):
            return
        cond = get_condition(d["status"], PROGRESSING)
        if cond is not None and cond.get("reason") == TIMED_OUT:
            return
        paused_cond = cond is not None and cond.get("reason") == PAUSED
        if d["spec"].get("paused") and not paused_cond:
            set_condition(d["status"], new_condition(self.clock, PROGRESSING, "Unknown", PAUSED,
                                                     "Deployment is paused"))
        elif not d["spec"].get("paused") and paused_cond:
            set_condition(d["status"], new_condition(self.clock, PROGRESSING, "Unknown", RESUMED,
                                                     "Deployment is resumed"))
        else:
            return
        await self._write_status(d)

    async def _is_scaling_event(self, d: Obj, rs_list: list[Obj]) -> bool:
        new_rs, old_rss = await self._all_replica_sets(d, rs_list, False)
        for rs in active_rss(old_rss + [new_rs]):
            desired = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
            try:
                if desired is not None and int(desired) != _replicas(d):
                    return True
            except ValueError:
                continue
        return False

    # -- finding and creating ReplicaSets ----------------------------------------------------------------
    @overload
    async def _all_replica_sets(self, d: Obj, rs_list: list[Obj], create: Literal[True]) -> tuple[Obj, list[Obj]]: ...
    @overload
    async def _all_replica_sets(self, d: Obj, rs_list: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]: ...
    async def _all_replica_sets(self, d: Obj, rs_list: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """(the new ReplicaSet, the old ones); with `create` the new one is made when missing."""
        new_rs = self._find_new(d, rs_list)
        old_rss = [rs for rs in rs_list if new_rs is None or rs["metadata"]["uid"] != new_rs["metadata"]["uid"]]
        new_rs = await self._new_replica_set(d, rs_list, old_rss, new_rs, create)
        return new_rs, old_rss

    @staticmethod
    def _find_new(d: Obj, rs_list: list[Obj]) -> Obj | None:
        template = d["spec"].get("template") or {}
        for rs in by_creation(rs_list):
            if equal_ignore_hash(rs["spec"].get("template") or {}, template):
                return rs
        return None

    async def _new_replica_set(self, d: Obj, rs_list: list[Obj], old_rss: list[Obj], existing: Obj | None,
                               create: bool) -> Obj | None:
        """The Deployment's new ReplicaSet: the existing one brought up to date, or (when `create`) a
        new one from the template (upstream's getNewReplicaSet)."""
        new_revision = str(max((revision(rs) for rs in old_rss), default=0) + 1)
        if existing is not None:
            return await self._update_new_replica_set(d, existing, new_revision)
        if not create:
            return None
        new_rs = self._replica_set_for(d)
        replicas = self._new_rs_new_replicas(d, old_rss + [new_rs], new_rs)
        new_rs["spec"]["replicas"] = replicas
        self._set_new_rs_annotations(d, new_rs, new_revision, False)
        try:
            created = await self.client.create(new_rs)
        except StatusError as e:
            return await self._create_failed(d, new_rs, e)
        if replicas > 0:
            await self._event(d, "ScalingReplicaSet",
                              f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}")
        await self._set_deployment_revision(d, new_revision)
        if has_progress_deadline(d):
            set_condition(d["status"], new_condition(self.clock, PROGRESSING, "True", NEW_RS_CREATED,
                                                     f'Created new replica set "{created["metadata"]["name"]}"'))
            await self._write_status(d)
        return created

    async def _update_new_replica_set(self, d: Obj, existing: Obj, new_revision: str) -> Obj:
        rs = deep_copy(existing)
        annotations_updated = self._set_new_rs_annotations(d, rs, new_revision, True)
        min_ready = d["spec"].get("minReadySeconds", 0) or 0
        if annotations_updated or (rs["spec"].get("minReadySeconds", 0) or 0) != min_ready:
            rs["spec"]["minReadySeconds"] = min_ready
            return await self.client.update(rs)
        rev = (rs["metadata"].get("annotations") or {}).get(REVISION, "")
        await self._set_deployment_revision(d, rev)
        if has_progress_deadline(d) and get_condition(d["status"], PROGRESSING) is None:
            set_condition(d["status"], new_condition(self.clock, PROGRESSING, "True", FOUND_NEW_RS,
                                                     f'Found new replica set "{rs["metadata"]["name"]}"'))
            await self._write_status(d)
        return rs

    @staticmethod
    def _replica_set_for(d: Obj) -> Obj:
        """A ReplicaSet `<deployment>-<pod-template-hash>` for the template, with no replicas yet."""
        template = deep_copy(d["spec"].get("template") or {})
        pth = compute_hash(d["spec"].get("template") or {}, d["status"].get("collisionCount"))
        template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = pth
        selector = deep_copy(d["spec"].get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = pth
        md = d["metadata"]
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": f"{md['name']}-{pth}", "namespace": md.get("namespace", ""),
                             "ownerReferences": [controller_ref(d)], "labels": dict(template["metadata"]["labels"])},
                "spec": {"replicas": 0, "minReadySeconds": d["spec"].get("minReadySeconds", 0) or 0,
                         "selector": selector, "template": template}}

    async def _create_failed(self, d: Obj, new_rs: Obj, e: StatusError) -> Obj:
        """A ReplicaSet of that name already ours with this template is the new one; another is a hash
        collision (collisionCount bumped, the sync retried); any other error is FailedRSCreate."""
        md = d["metadata"]
        collision = d["status"].get("collisionCount")
        if not (e.code == 409 and e.reason == "AlreadyExists"):
            msg = f'Failed to create new replica set "{new_rs["metadata"]["name"]}": {e.message}'
            set_condition(d["status"], new_condition(self.clock, PROGRESSING, "False", "FailedRSCreate", msg))
            await self._write_status(d)
            raise e
        found = await self.client.get("apps/v1", "ReplicaSet", md.get("namespace", ""), new_rs["metadata"]["name"])
        ref = controller_of(found)
        if ref and ref.get("uid") == md.get("uid") and equal_ignore_hash(found["spec"].get("template") or {},
                                                                           d["spec"].get("template") or {}):
            return found
        d["status"]["collisionCount"] = _int(collision) + 1
        await self._write_status(d)
        raise RuntimeError(f'Found a hash collision for deployment "{md["name"]}" - bumping collisionCount '
                           f"({_int(collision)}->{_int(collision) + 1}) to resolve it") from None

    def _set_new_rs_annotations(self, d: Obj, rs: Obj, new_revision: str, exists: bool) -> bool:
        ann = rs["metadata"].setdefault("annotations", {})
        changed = False
        for k, v in (d["metadata"].get("annotations") or {}).items():
            if k in SKIPPED_ANNOTATIONS or ann.get(k) == v:
                continue
            ann[k] = v
            changed = True
        old = ann.get(REVISION, "")
        try:
            old_int = int(old) if old else 0
        except ValueError:
            return changed
        if old_int < int(new_revision):
            ann[REVISION] = new_revision
            changed = True
            if old:
                history = ann.get(REVISION_HISTORY, "")
                ann[REVISION_HISTORY] = f"{history},{old}" if history else old
        if not exists and self._set_replicas_annotations(rs, _replicas(d), _replicas(d) + max_surge(d)):
            changed = True
        return changed

    @staticmethod
    def _set_replicas_annotations(rs: Obj, desired: int, max_replicas: int) -> bool:
        ann = rs["metadata"].setdefault("annotations", {})
        changed = False
        for k, v in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(max_replicas))):
            if ann.get(k) != v:
                ann[k] = v
                changed = True
        return changed

    async def _set_deployment_revision(self, d: Obj, rev: str) -> None:
        """The revision annotation on the Deployment (a metadata patch: /status keeps metadata)."""
        if not rev or (d["metadata"].get("annotations") or {}).get(REVISION) == rev:
            return
        md = d["metadata"]
        updated = await self.client.patch("apps/v1", "Deployment", md.get("namespace", ""), md["name"],
                                          {"metadata": {"annotations": {REVISION: rev}}}, MERGE_PATCH)
        d["metadata"] = updated["metadata"]

    def _new_rs_new_replicas(self, d: Obj, all_rss: list[Obj], new_rs: Obj) -> int:
        if not is_rolling(d):
            return _replicas(d)
        surge = max_surge(d)
        current = replica_count(all_rss)
        max_total = _replicas(d) + surge
        if current >= max_total:
            return _replicas(new_rs)
        scale_up = min(max_total - current, _replicas(d) - _replicas(new_rs))
        return _replicas(new_rs) + scale_up

    # -- scaling ----------------------------------------------------------------------------------------
    async def _scale_rs(self, rs: Obj, new_scale: int, d: Obj, operation: str) -> Obj:
        size_changed = _replicas(rs) != new_scale
        copy = deep_copy(rs)
        annotations_changed = self._set_replicas_annotations(copy, _replicas(d), _replicas(d) + max_surge(d))
        if not size_changed and not annotations_changed:
            return rs
        old_scale = _replicas(rs)
        copy["spec"]["replicas"] = new_scale
        updated = await self.client.update(copy)
        if size_changed:
            name = rs["metadata"]["name"]
            await self._event(d, "ScalingReplicaSet",
                              f"Scaled {operation} replica set {name} from {old_scale} to {new_scale}")
        return updated

    async def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        if _replicas(rs) == new_scale:
            return False, rs
        op = "up" if _replicas(rs) < new_scale else "down"
        return True, await self._scale_rs(rs, new_scale, d, op)

    async def _scale(self, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> dict[str, Obj]:
        """Bring the active ReplicaSets to the Deployment's size (proportionally in mid-rollout).
        Returns the ReplicaSets it updated, by uid."""
        updated: dict[str, Obj] = {}

        async def scale_to(rs: Obj, size: int, operation: str | None = None) -> None:
            if operation is None:
                _, out = await self._scale_and_record(rs, size, d)
            else:
                out = await self._scale_rs(rs, size, d, operation)
            updated[rs["metadata"]["uid"]] = out

        active = active_rss(old_rss + [new_rs])
        if len(active) <= 1:
            # the one active ReplicaSet (or, with none, the newest) takes the whole size
            target = active[0] if active else (new_rs or (by_creation(old_rss)[-1] if old_rss else None))
            if target is not None and _replicas(target) != _replicas(d):
                await scale_to(target, _replicas(d))
            return updated
        if new_rs is not None and self._saturated(d, new_rs):
            for old in active_rss(old_rss):
                await scale_to(old, 0)
            return updated
        if not is_rolling(d):
            return updated
        total = replica_count(active)
        allowed = _replicas(d) + max_surge(d) if _replicas(d) > 0 else 0
        to_add = allowed - total
        operation = ""
        if to_add > 0:  # largest first, newer first among equals
            active.sort(key=lambda rs: (-_replicas(rs), -_created(rs)[0], _created(rs)[1]))
            operation = "up"
        elif to_add < 0:  # largest first, older first among equals
            active.sort(key=lambda rs: (-_replicas(rs), _created(rs)))
            operation = "down"
        sizes: dict[str, int] = {}
        added = 0
        for rs in active:
            proportion = self._proportion(rs, d, to_add, added) if to_add != 0 else 0
            sizes[rs["metadata"]["uid"]] = _replicas(rs) + proportion
            added += proportion
        for i, rs in enumerate(active):
            uid = rs["metadata"]["uid"]
            if i == 0 and to_add != 0:  # leftovers go to the largest
                sizes[uid] = max(0, sizes[uid] + to_add - added)
            await scale_to(rs, sizes[uid], operation)
        return updated

    @staticmethod
    def _saturated(d: Obj, rs: Obj) -> bool:
        """IsSaturated: the new ReplicaSet alone runs the full, available size."""
        desired = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
        return _replicas(rs) == _replicas(d) and desired == str(_replicas(d)) and \
            _status_int(rs, "availableReplicas") == _replicas(d)

    @staticmethod
    def _proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
        if to_add == 0 or to_add == added:
            return 0
        fraction = DeploymentController._fraction(rs, d)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    @staticmethod
    def _fraction(rs: Obj, d: Obj) -> int:
        if _replicas(d) == 0:
            return -_replicas(rs)
        deployment_replicas = _replicas(d) + max_surge(d)
        try:
            annotated = int((rs["metadata"].get("annotations") or {}).get(MAX_REPLICAS, ""))
        except ValueError:
            annotated = _status_int(d, "replicas")
        if annotated <= 0:
            annotated = _status_int(d, "replicas") or deployment_replicas
        size = _replicas(rs) * deployment_replicas / annotated
        return int(math.floor(size + 0.5)) - _replicas(rs)

    async def _sync_scale(self, d: Obj, rs_list: list[Obj]) -> None:
        """`sync`: scaling events and paused Deployments (no rollout)."""
        new_rs, old_rss = await self._all_replica_sets(d, rs_list, False)
        updated = await self._scale(d, new_rs, old_rss)
        if new_rs is not None:
            new_rs = updated.get(new_rs["metadata"]["uid"], new_rs)
        old_rss = [updated.get(rs["metadata"]["uid"], rs) for rs in old_rss]
        if d["spec"].get("paused"):
            await self._cleanup(old_rss, d)
        await self._sync_status(old_rss + ([new_rs] if new_rs else []), new_rs, d)

    # -- rollouts ---------------------------------------------------------------------------------------
    async def _rollout_rolling(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old_rss = await self._all_replica_sets(d, rs_list, True)
        all_rss = old_rss + [new_rs]
        scaled, new_rs = await self._reconcile_new_rs(all_rss, new_rs, d)
        all_rss = old_rss + [new_rs]
        if scaled:
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        scaled_down, old_rss = await self._reconcile_old_rss(all_rss, active_rss(old_rss), old_rss, new_rs, d)
        all_rss = old_rss + [new_rs]
        if scaled_down:
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if deployment_complete(d, d["status"]):
            await self._cleanup(old_rss, d)
        await self._sync_rollout_status(all_rss, new_rs, d)

    async def _reconcile_new_rs(self, all_rss: list[Obj], new_rs: Obj, d: Obj) -> tuple[bool, Obj]:
        if _replicas(new_rs) == _replicas(d):
            return False, new_rs
        if _replicas(new_rs) > _replicas(d):
            return await self._scale_and_record(new_rs, _replicas(d), d)
        return await self._scale_and_record(new_rs, self._new_rs_new_replicas(d, all_rss, new_rs), d)

    async def _reconcile_old_rss(self, all_rss: list[Obj], active_old: list[Obj], old_rss: list[Obj], new_rs: Obj,
                                 d: Obj) -> tuple[bool, list[Obj]]:
        if replica_count(active_old) == 0:
            return False, old_rss
        all_pods = replica_count(all_rss)
        min_available = _replicas(d) - max_unavailable(d)
        new_unavailable = _replicas(new_rs) - _status_int(new_rs, "availableReplicas")
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False, old_rss
        updated: dict[str, Obj] = {}
        cleaned = 0
        for rs in by_creation(active_old):
            if cleaned >= max_scaled_down:
                break
            # unhealthy pods first; a ReplicaSet still reporting more available pods than it wants
            # (its status lags a scale-down) has none
            down = min(max_scaled_down - cleaned, _replicas(rs) - _status_int(rs, "availableReplicas"))
            if _replicas(rs) == 0 or down <= 0:
                continue
            _, rs2 = await self._scale_and_record(rs, _replicas(rs) - down, d)
            updated[rs["metadata"]["uid"]] = rs2
            cleaned += down
        active_old = [updated.get(rs["metadata"]["uid"], rs) for rs in active_old]
        all_now = active_old + [new_rs]
        available = available_count(all_now)
        scaled = 0
        if available > min_available:
            total = available - min_available
            for rs in by_creation(active_old):
                if scaled >= total:
                    break
                if _replicas(rs) == 0:
                    continue
                down = min(_replicas(rs), total - scaled)
                _, rs2 = await self._scale_and_record(rs, _replicas(rs) - down, d)
                updated[rs["metadata"]["uid"]] = rs2
                scaled += down
        old_rss = [updated.get(rs["metadata"]["uid"], rs) for rs in old_rss]
        return cleaned + scaled > 0, old_rss

    async def _rollout_recreate(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old_rss = await self._all_replica_sets(d, rs_list, False)
        active_old = active_rss(old_rss)
        scaled = False
        updated: dict[str, Obj] = {}
        for rs in active_old:
            did, rs2 = await self._scale_and_record(rs, 0, d)
            updated[rs["metadata"]["uid"]] = rs2
            scaled = scaled or did
        old_rss = [updated.get(rs["metadata"]["uid"], rs) for rs in old_rss]
        all_rss = old_rss + ([new_rs] if new_rs else [])
        if scaled:
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if self._old_pods_running(new_rs, old_rss):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if new_rs is None:
            new_rs, old_rss = await self._all_replica_sets(d, rs_list, True)
            all_rss = old_rss + [new_rs]
        _, new_rs = await self._scale_and_record(new_rs, _replicas(d), d)
        all_rss = old_rss + [new_rs]
        if deployment_complete(d, d["status"]):
            await self._cleanup(old_rss, d)
        await self._sync_rollout_status(all_rss, new_rs, d)

    def _old_pods_running(self, new_rs: Obj | None, old_rss: list[Obj]) -> bool:
        if actual_count(old_rss) > 0:
            return True
        for rs in old_rss:
            for pod in self.pods.by_index(INDEX_CONTROLLER_UID, rs["metadata"].get("uid", "")):
                if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                    return True
        return False

    async def _cleanup(self, old_rss: list[Obj], d: Obj) -> None:
        """Keep at most revisionHistoryLimit old ReplicaSets (only ones scaled to zero go)."""
        limit = d["spec"].get("revisionHistoryLimit")
        if limit is None:
            return
        cleanable = [rs for rs in old_rss if not rs["metadata"].get("deletionTimestamp")]
        diff = len(cleanable) - limit
        if diff <= 0:
            return
        cleanable.sort(key=lambda rs: (revision(rs), _created(rs)))
        for rs in cleanable[:diff]:
            if _status_int(rs, "replicas") != 0 or _replicas(rs) != 0 or \
                    _int(rs["metadata"].get("generation")) > _status_int(rs, "observedGeneration"):
                continue
            try:
                await self.client.delete("apps/v1", "ReplicaSet", rs["metadata"].get("namespace", ""),
                                         rs["metadata"]["name"])
            except StatusError as e:
                if e.code != 404:
                    raise

    # -- status ---------------------------------------------------------------------------------------
    def _calculate_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj) -> Obj:
        available = available_count(all_rss)
        unavailable = max(0, replica_count(all_rss) - available)
        status: Obj = {"observedGeneration": d["metadata"].get("generation", 0), "replicas": actual_count(all_rss),
                       "updatedReplicas": actual_count([new_rs]), "readyReplicas": ready_count(all_rss),
                       "availableReplicas": available, "unavailableReplicas": unavailable}
        if d["status"].get("collisionCount") is not None:
            status["collisionCount"] = d["status"]["collisionCount"]
        status["conditions"] = deep_copy(d["status"].get("conditions") or [])
        if available >= _replicas(d) - max_unavailable(d):
            set_condition(status, new_condition(self.clock, AVAILABLE, "True", MIN_AVAILABLE,
                                                "Deployment has minimum availability."))
        else:
            set_condition(status, new_condition(self.clock, AVAILABLE, "False", MIN_UNAVAILABLE,
                                                "Deployment does not have minimum availability."))
        return status

    async def _sync_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj) -> None:
        status = self._calculate_status(all_rss, new_rs, d)
        if _status_for_write(status) == _status_for_write(d["status"]):
            return
        d["status"] = status
        await self._write_status(d)

    async def _sync_rollout_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj) -> None:
        """The status with the Progressing and ReplicaFailure conditions (upstream's syncRolloutStatus)."""
        status = self._calculate_status(all_rss, new_rs, d)
        if not has_progress_deadline(d):
            remove_condition(status, PROGRESSING)
        cur = get_condition(d["status"], PROGRESSING)
        complete = status["replicas"] == status["updatedReplicas"] and cur is not None and \
            cur.get("reason") == NEW_RS_AVAILABLE
        if has_progress_deadline(d) and not complete:
            self._set_progressing(d, status, cur, (new_rs or {}).get("metadata", {}).get("name"))
        _surface_replica_failure(status, all_rss)
        if _status_for_write(status) != _status_for_write(d["status"]):
            d["status"] = status
            await self._write_status(d)
        self._requeue_stuck(d, status)

    def _set_progressing(self, d: Obj, status: Obj, cur: dict | None, rs_name: str | None) -> None:
        """Progressing: NewReplicaSetAvailable, ReplicaSetUpdated (keeping a True condition's
        transition time) or ProgressDeadlineExceeded."""
        subject = f'ReplicaSet "{rs_name}"' if rs_name else f'Deployment "{d["metadata"]["name"]}"'
        if deployment_complete(d, status):
            set_condition(status, new_condition(self.clock, PROGRESSING, "True", NEW_RS_AVAILABLE,
                                                f"{subject} has successfully progressed."))
        elif deployment_progressing(d, status):
            cond = new_condition(self.clock, PROGRESSING, "True", RS_UPDATED, f"{subject} is progressing.")
            if cur is not None:
                if cur.get("status") == "True":
                    cond["lastTransitionTime"] = cur.get("lastTransitionTime")
                remove_condition(status, PROGRESSING)
            set_condition(status, cond)
        elif self._timed_out(d, status):
            set_condition(status, new_condition(self.clock, PROGRESSING, "False", TIMED_OUT,
                                                f"{subject} has timed out progressing."))

    def _timed_out(self, d: Obj, status: Obj) -> bool:
        if not has_progress_deadline(d):
            return False
        cond = get_condition(status, PROGRESSING)
        if cond is None:
            return False
        if cond.get("reason") == NEW_RS_AVAILABLE:
            return False
        if cond.get("reason") == TIMED_OUT:
            return True
        updated = rfc3339_seconds(cond.get("lastUpdateTime"))
        return updated is not None and updated + d["spec"]["progressDeadlineSeconds"] < self.clock.now()

    def _requeue_stuck(self, d: Obj, status: Obj) -> None:
        """Look again when the progress deadline would pass, to report ProgressDeadlineExceeded."""
        cond = get_condition(status, PROGRESSING)
        if cond is None or not has_progress_deadline(d) or deployment_complete(d, status) or \
                cond.get("reason") == TIMED_OUT:
            return
        updated = rfc3339_seconds(cond.get("lastUpdateTime"))
        if updated is None:
            return
        after = updated + d["spec"]["progressDeadlineSeconds"] - self.clock.now()
        self.enqueue_after(object_key(d), max(1.0, after + 1))

    async def _write_status(self, d: Obj) -> None:
        out = deep_copy(d)
        out["status"] = _status_for_write(d["status"])
        updated = await self.client.update_status(out)
        d["metadata"] = updated["metadata"]

    async def _event(self, d: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        await self.client.create_event(d, reason, message, type=type_, component=COMPONENT)


# DeploymentStatus in serialization order; zero counters are omitempty.
_STATUS_ORDER = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                 "unavailableReplicas", "terminatingReplicas", "conditions", "collisionCount")


def _surface_replica_failure(status: Obj, all_rss: Sequence[Obj | None]) -> None:
    """The ReplicaSets' ReplicaFailure condition, as the Deployment's."""
    failure = next((c for rs in all_rss if rs for c in (rs.get("status") or {}).get("conditions") or []
                    if c.get("type") == REPLICA_FAILURE), None)
    if failure is None:
        remove_condition(status, REPLICA_FAILURE)
        return
    set_condition(status, {"type": REPLICA_FAILURE, "status": failure.get("status"),
                           "lastUpdateTime": failure.get("lastTransitionTime"),
                           "lastTransitionTime": failure.get("lastTransitionTime"),
                           "reason": failure.get("reason"), "message": failure.get("message")})


def _status_for_write(status: Obj) -> Obj:
    out = {k: status[k] for k in _STATUS_ORDER if k in status}
    out.update({k: v for k, v in status.items() if k not in out})
    for f in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
              "unavailableReplicas"):
        if not out.get(f):
            out.pop(f, None)
    if not out.get("conditions"):
        out.pop("conditions", None)
    return out


__all__ = ["DeploymentController", "compute_hash"]
