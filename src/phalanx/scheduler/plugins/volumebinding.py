"""VolumeBinding: the scheduler's side of PersistentVolumeClaims (upstream `volumebinding`).

The scheduler registers `new(args, handle)`: the plugin reads PersistentVolumeClaims,
PersistentVolumes and StorageClasses from informers made on the Handle's shared factory (the
scheduler waits for them and turns their changes into queue events) and writes through the
Handle's client. By hand (unit tests): `VolumeBinding(claims, volumes, classes, client)` with
anything that answers `get(key)` / `list(namespace)` as informers do.

- **PreFilter** collects the pod's claims (`volumes[].persistentVolumeClaim`); a pod without any
  is skipped (no cost, and its batching signature is unchanged). A missing claim
  (`persistentvolumeclaim "x" not found`), one being deleted, or an unbound claim whose class binds
  `Immediate` (`pod has unbound immediate PersistentVolumeClaims`) is UnschedulableAndUnresolvable.
- **Filter**: a bound claim's PV must exist ("node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)") and its required node affinity admit the node ("node(s) had volume node
  affinity conflict"); an unbound `WaitForFirstConsumer` claim needs an Available PV that fits on
  the node or a class that provisions ("node(s) didn't find available persistent volumes to bind").
- **Reserve** / **Unreserve** keep the chosen node for the cycle.
- **PreBind** names the node on each unbound `WaitForFirstConsumer` claim (annotation
  `volume.kubernetes.io/selected-node`); the PV controller (here `controllers/volumeprovisioner.py`)
  then binds or provisions for it, and PreBind waits until every such claim is bound
  (`spec.volumeName` and `pv.kubernetes.io/bind-completed`), waking on claim updates and looking
  every second, for at most `bindTimeoutSeconds` (600): "binding volumes: context deadline
  exceeded"; a claim deleted meanwhile fails the binding at once. The pod is bound to its node
  after that, as upstream does.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Protocol, Sequence

from phalanx.client.clock import REAL_CLOCK, Clock
from phalanx.client.interface import MERGE_PATCH, Client
from phalanx.machinery.errors import StatusError
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.interface import (
    UNSIGNABLE, EnqueueExtensions, FilterPlugin, Handle, PreBindPlugin, PreFilterPlugin, PreFilterResult,
    ReservePlugin,
)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

NAME = "VolumeBinding"
STATE_KEY = NAME
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
DEFAULT_BIND_TIMEOUT_SECONDS = 600  # VolumeBindingArgs.bindTimeoutSeconds
NO_PROVISIONER = "kubernetes.io/no-provisioner"

ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


class Lister(Protocol):
    def get(self, key: str) -> Optional[Obj]: ...

    def list(self, namespace: Optional[str] = None) -> list[Obj]: ...


def claim_names(pod: Obj) -> list[str]:
    return [v["persistentVolumeClaim"].get("claimName", "") for v in (pod.get("spec") or {}).get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)]


def _requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = req.get("key", ""), req.get("operator"), req.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def volume_admits(pv: Obj, labels: Mapping[str, str]) -> bool:
    """The PV's required node affinity (terms ORed, expressions ANDed) against node labels."""
    terms = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    return any(all(_requirement_matches(r, labels) for r in t.get("matchExpressions") or ()) for t in terms)


def _qty(v: Any) -> Any:
    from phalanx.machinery.quantity import parse_quantity
    try:
        return parse_quantity(v)
    except (ValueError, TypeError):
        return 0


def volume_fits_claim(pv: Obj, pvc: Obj) -> bool:
    spec, cspec = pv.get("spec") or {}, pvc.get("spec") or {}
    if spec.get("claimRef") or (pv.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if (spec.get("storageClassName") or "") != (cspec.get("storageClassName") or ""):
        return False
    if not set(cspec.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return False
    want = ((cspec.get("resources") or {}).get("requests") or {}).get("storage")
    return bool(_qty((spec.get("capacity") or {}).get("storage")) >= _qty(want))


@dataclass
class _State:
    bound: list[Optional[Obj]] = field(default_factory=list)  # the PVs of bound claims (None: missing)
    delayed: list[Obj] = field(default_factory=list)  # unbound WaitForFirstConsumer claims
    node: str = ""

    def clone(self) -> "_State":
        return _State(list(self.bound), list(self.delayed), self.node)


class VolumeBinding(PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions):
    NAME = NAME
    SIGNATURE_FROM_SPEC = True

    def __init__(self, claims: Lister, volumes: Lister, classes: Lister, client: Optional[Client], *,
                 clock: Clock = REAL_CLOCK, bind_timeout: float = DEFAULT_BIND_TIMEOUT_SECONDS):
        self.claims = claims
        self.volumes = volumes
        self.classes = classes
        self.client = client
        self.clock = clock
        self.bind_timeout = bind_timeout
        self._claims_changed: Optional[asyncio.Event] = None  # set on claim updates while PreBind waits

    def claim_updated(self, old: Obj, new: Obj) -> None:
        """Claims informer handler: wakes PreBinds waiting for their claims to be bound."""
        if self._claims_changed is not None:
            self._claims_changed.set()

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: pods without claims all sign alike; pods with claims are unsignable
        (their answer depends on the claims' state)."""
        return UNSIGNABLE if claim_names(pod.pod) else ()

    # -- PreFilter ----------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        names = claim_names(pod.pod)
        if not names:
            return None, Status.new(Code.Skip)
        data = _State()
        for name in names:
            pvc = self.claims.get(f"{pod.namespace}/{name}")
            if pvc is None:
                return None, self._unresolvable(f'persistentvolumeclaim "{name}" not found')
            if (pvc.get("metadata") or {}).get("deletionTimestamp"):
                return None, self._unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
            volume_name = (pvc.get("spec") or {}).get("volumeName")
            if volume_name:
                data.bound.append(self.volumes.get(volume_name))
                continue
            sc = self.classes.get((pvc.get("spec") or {}).get("storageClassName") or "")
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                return None, self._unresolvable(ERR_UNBOUND_IMMEDIATE)
            data.delayed.append(pvc)
        state.write(STATE_KEY, data)
        return None, None

    def _unresolvable(self, msg: str) -> Status:
        return Status.new(Code.UnschedulableAndUnresolvable, msg).with_plugin(NAME)

    # -- Filter -------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        if data is None:
            return None
        for pv in data.bound:
            if pv is None:
                return self._unresolvable(ERR_PV_NOT_EXIST)
            if not volume_admits(pv, node_info.labels):
                return self._unresolvable(ERR_NODE_CONFLICT)
        for pvc in data.delayed:
            if not self._can_bind_on(pvc, node_info):
                return self._unresolvable(ERR_BIND_CONFLICT)
        return None

    def _can_bind_on(self, pvc: Obj, node_info: NodeInfo) -> bool:
        if any(volume_fits_claim(pv, pvc) and volume_admits(pv, node_info.labels) for pv in self.volumes.list(None)):
            return True
        sc = self.classes.get((pvc.get("spec") or {}).get("storageClassName") or "") or {}
        return bool(sc.get("provisioner")) and sc.get("provisioner") != NO_PROVISIONER

    # -- Reserve / PreBind --------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        if data is not None:
            data.node = node_name
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data: Optional[_State] = state.get(STATE_KEY)
        if data is not None:
            data.node = ""

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        return None if data is not None and data.delayed else Status.new(Code.Skip)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Optional[Status]:  # type: ignore[override]
        """Name the node on each delayed claim, then wait (up to `bindTimeoutSeconds`) until the
        PV controller has bound them all (upstream `BindPodVolumes`)."""
        data: Optional[_State] = state.get(STATE_KEY)
        if data is None or self.client is None:
            return None
        for pvc in data.delayed:
            md = pvc["metadata"]
            if ((md.get("annotations") or {}).get(SELECTED_NODE_ANNOTATION)) == node_name:
                continue
            body = {"metadata": {"annotations": {SELECTED_NODE_ANNOTATION: node_name}}}
            try:
                await self.client.patch("v1", "PersistentVolumeClaim", md.get("namespace"), md["name"], body,
                                        MERGE_PATCH)
            except StatusError as e:
                return Status.new(Code.Error, f"binding volumes: {e.message}").with_plugin(NAME)
        return await self._wait_bound([f"{pvc['metadata'].get('namespace')}/{pvc['metadata']['name']}"
                                       for pvc in data.delayed])

    def _binding_state(self, keys: list[str]) -> Optional[str]:
        """None when every claim is bound ("" while some are not yet), else why binding failed."""
        for key in keys:
            pvc = self.claims.get(key)
            if pvc is None or (pvc.get("metadata") or {}).get("deletionTimestamp"):
                return f'pvc "{key}" was deleted'
            md = pvc.get("metadata") or {}
            if not (pvc.get("spec") or {}).get("volumeName") or \
                    (md.get("annotations") or {}).get(BIND_COMPLETED_ANNOTATION) != "yes":
                return ""
        return None

    async def _wait_bound(self, keys: list[str]) -> Optional[Status]:
        deadline = self.clock.now() + self.bind_timeout
        while True:
            why = self._binding_state(keys)
            if why is None:
                return None
            if why:
                return Status.new(Code.Error, f"binding volumes: {why}").with_plugin(NAME)
            remaining = deadline - self.clock.now()
            if remaining <= 0:
                return Status.new(Code.Error, "binding volumes: context deadline exceeded").with_plugin(NAME)
            await self._claims_update_or(remaining)

    async def _claims_update_or(self, seconds: float) -> None:
        """Until some claim changes, or `seconds` pass on the scheduler's clock."""
        if self._claims_changed is None:
            self._claims_changed = asyncio.Event()
        self._claims_changed.clear()
        changed = asyncio.ensure_future(self._claims_changed.wait())
        timer = asyncio.ensure_future(self.clock.sleep(min(seconds, 1.0)))  # and look every second, as upstream
        try:
            await asyncio.wait([changed, timer], return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()
            timer.cancel()

    # -- requeueing ---------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        def queue(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
            return QueueingHint.Queue if claim_names(pod) else QueueingHint.QueueSkip
        add_update = ActionType.Add | ActionType.Update
        return [ClusterEventWithHint(ClusterEvent(EventResource.PersistentVolumeClaim, add_update), queue),
                ClusterEventWithHint(ClusterEvent(EventResource.PersistentVolume, add_update), queue),
                ClusterEventWithHint(ClusterEvent(EventResource.StorageClass, add_update), queue),
                ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                                     queue)]


# The kinds whose changes the scheduler turns into queue events for this plugin.
WATCHED = ((EventResource.PersistentVolumeClaim, "v1", "PersistentVolumeClaim"),
           (EventResource.PersistentVolume, "v1", "PersistentVolume"),
           (EventResource.StorageClass, "storage.k8s.io/v1", "StorageClass"))


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> VolumeBinding:
    factory = handle.shared_informer_factory()
    if factory is None:
        raise ValueError("VolumeBinding needs the scheduler's shared informer factory")
    claims, volumes, classes = (factory.informer(api_version, kind) for _, api_version, kind in WATCHED)
    timeout = (args or {}).get("bindTimeoutSeconds") or DEFAULT_BIND_TIMEOUT_SECONDS
    plugin = VolumeBinding(claims, volumes, classes, handle.client(), clock=handle.clock(), bind_timeout=float(timeout))
    claims.add_event_handler(on_update=plugin.claim_updated)
    return plugin
