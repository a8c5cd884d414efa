"""The device taint eviction controller: kube-controller-manager's `device-taint-eviction-controller`
(gate `DRADeviceTaints`), which deletes the pods whose allocated ResourceClaims use a device with a
NoExecute taint they do not tolerate.

    DeviceTaintEvictionController(client, factory, gates=gates, clock=clock).start()

What it does, as upstream 1.36/1.37 do:

- a claim's eviction time is the earliest, over its allocated devices' NoExecute taints (in the
  ResourceSlices, newest pool generation), of the taint's `timeAdded`, plus the smallest
  `tolerationSeconds` of the claim's NoExecute tolerations that tolerate it (the tolerations
  recorded in the allocation result); a NoExecute toleration without seconds makes the taint
  harmless. NoSchedule and None taints never evict;
- its consumers are the pods in `status.reservedFor` and, with `DRAWorkloadResourceClaims`, every
  pod of a PodGroup in `reservedFor` (pods are found by `spec.schedulingGroup.podGroupName`);
  a scheduled pod that is not being deleted, whose claim is allocated and reserved for it (or its
  PodGroup), is deleted at the earliest eviction time of its claims;
- before deleting: the condition `DisruptionTarget` (True, `DeletionByDeviceTaintManager`, "Device
  Taint manager: deleting due to NoExecute taint") and the event `DeviceTaintManagerEviction`
  "Marking for deletion"; an eviction called off gives "Cancelling deletion". The delete carries the
  pod's uid as a precondition. Events come from `device-taint-eviction-controller`.

Everything is read from informers, so a restarted controller finds the same eviction times. Once
the pods are gone, a claim reserved for pods is deallocated by the ResourceClaim controller and the
scheduler allocates another device; a claim reserved for a PodGroup keeps its allocation while the
PodGroup exists (upstream's rule), so its next pods land on the tainted device again.

DeviceTaintRules (resource.k8s.io, gate `DRADeviceTaintRules`, off by default) are not served, so
only the ResourceSlices' own taints count; see docs/failures.md.
"""

from __future__ import annotations

from typing import Any

from ..client.clock import to_datetime
from ..client.controller import Controller
from ..client.informer import InformerFactory, index_pod_by_pod_group, object_key
from ..client.interface import Client
from ..dra import claims as draclaims
from ..dra.devices import tolerates
from ..machinery.errors import StatusError
from ..machinery.featuregates import FeatureGates
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds
from .tainteviction import add_condition_and_delete

Obj = dict[str, Any]

RESOURCE_API = "resource.k8s.io/v1"
EVENT_COMPONENT = "device-taint-eviction-controller"
REASON = "DeviceTaintManagerEviction"
CONDITION_REASON = "DeletionByDeviceTaintManager"
CONDITION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"

POD_GROUP_INDEX = "spec.schedulingGroup.podGroupName"
CLAIM_DEVICE_INDEX = "devicetainteviction/allocated-device"
SLICE_POOL_INDEX = "devicetainteviction/pool"


def _device_key(driver: str, pool: str, device: str) -> str:
    return f"{driver}/{pool}/{device}"


def allocation_results(claim: Obj) -> list[Obj]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [r for r in (allocation.get("devices") or {}).get("results") or [] if isinstance(r, dict)]


def index_claim_by_device(claim: Obj) -> list[str]:
    return [_device_key(r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in allocation_results(claim)]


def index_slice_by_pool(slice_obj: Obj) -> list[str]:
    spec = slice_obj.get("spec") or {}
    return [f"{spec.get('driver', '')}/{(spec.get('pool') or {}).get('name', '')}"]


def no_execute_device_taints(slice_obj: Obj | None) -> dict[str, list[Obj]]:
    """Device name -> its NoExecute taints, for the devices of one slice that have any."""
    out: dict[str, list[Obj]] = {}
    for d in ((slice_obj or {}).get("spec") or {}).get("devices") or []:
        taints = [t for t in d.get("taints") or [] if t.get("effect") == "NoExecute"]
        if taints:
            out[d.get("name", "")] = taints
    return out


def taint_eviction_time(taint: Obj, tolerations: list[Obj], first_seen: float) -> float | None:
    """When a NoExecute device taint evicts a claim with `tolerations`; None when tolerated forever.
    Only tolerations of effect NoExecute count, as upstream's claimEvictionTime does."""
    added = rfc3339_seconds(taint.get("timeAdded"))
    when = added if added is not None else first_seen
    seconds: float | None = None
    for t in tolerations:
        if t.get("effect") != "NoExecute" or not tolerates(t, taint):
            continue
        if t.get("tolerationSeconds") is None:
            return None
        s = max(0.0, float(t["tolerationSeconds"]))
        seconds = s if seconds is None else min(seconds, s)
    return when + (seconds or 0.0)


class DeviceTaintEvictionController(Controller[str]):
    name = "device-taint-eviction-controller"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, gates: FeatureGates | None = None,
                 events: bool = True, **kw: Any):
        super().__init__(client, factory, **kw)
        gates = gates or FeatureGates()
        self.pod_group_claims = gates.enabled(draclaims.WORKLOAD_RESOURCE_CLAIMS_GATE)
        self.events = events
        self.pods = self.informer("v1", "Pod", indexers={POD_GROUP_INDEX: index_pod_by_pod_group})
        self.claims = self.informer(RESOURCE_API, "ResourceClaim", indexers={CLAIM_DEVICE_INDEX: index_claim_by_device})
        self.slices = self.informer(RESOURCE_API, "ResourceSlice", indexers={SLICE_POOL_INDEX: index_slice_by_pool})
        self.pods.add_event_handler(on_add=self._pod_added, on_update=self._pod_updated)
        self.claims.add_event_handler(on_add=self._claim_changed, on_update=self._claim_updated,
                                      on_delete=self._claim_changed)
        self.slices.add_event_handler(on_add=lambda s: self._slice_changed(None, s), on_update=self._slice_changed,
                                      on_delete=lambda s: self._slice_changed(s, None))
        self._scheduled: dict[str, float] = {}  # pod key -> eviction time announced
        self._first_seen: dict[tuple[str, str, str], float] = {}  # (device key, taint key, value) -> first seen

    # -- events --------------------------------------------------------------------------------
    def _pod_added(self, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("resourceClaims") and (pod.get("spec") or {}).get("nodeName"):
            self.queue.add(object_key(pod))

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("spec") or {}).get("nodeName") != (new.get("spec") or {}).get("nodeName") or \
                (old.get("status") or {}).get("resourceClaimStatuses") != (new.get("status") or {}).get(
                    "resourceClaimStatuses"):
            self._pod_added(new)

    def _claim_changed(self, claim: Obj) -> None:
        for key in self._consumer_keys(claim):
            self.queue.add(key)

    def _claim_updated(self, old: Obj, new: Obj) -> None:
        o, n = old.get("status") or {}, new.get("status") or {}
        if o.get("allocation") != n.get("allocation") or o.get("reservedFor") != n.get("reservedFor"):
            self._claim_changed(old)
            self._claim_changed(new)

    def _slice_changed(self, old: Obj | None, new: Obj | None) -> None:
        before, after = no_execute_device_taints(old), no_execute_device_taints(new)
        changed = {d for d in set(before) | set(after) if before.get(d) != after.get(d)}
        spec = (new or old or {}).get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        for device in changed:
            for claim in self.claims.by_index(CLAIM_DEVICE_INDEX, _device_key(driver, pool, device)):
                self._claim_changed(claim)

    def _consumer_keys(self, claim: Obj) -> list[str]:
        ns = claim["metadata"].get("namespace", "")
        keys = []
        for ref in draclaims.reserved_for(claim):
            if draclaims.is_pod_consumer(ref):
                keys.append(f"{ns}/{ref.get('name', '')}")
            elif self.pod_group_claims and draclaims.is_pod_group_consumer(ref):
                keys.extend(object_key(p) for p in self.pods.by_index(POD_GROUP_INDEX, f"{ns}/{ref.get('name', '')}"))
        return keys

    # -- sync ----------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        pod = self.pods.get(key)
        due = self.pod_eviction_time(pod) if pod is not None else None
        if due is None:
            await self._cancel(key, pod)
            return
        now = self.clock.now()
        if now < due:
            self._scheduled[key] = due
            self.enqueue_after(key, due - now)
            return
        self._scheduled.pop(key, None)
        assert pod is not None
        await self._event(pod, "Marking for deletion")
        await add_condition_and_delete(self.client, pod, CONDITION_REASON, CONDITION_MESSAGE,
                                       now_rfc3339(to_datetime(now)), uid_precondition=True)

    def pod_eviction_time(self, pod: Obj) -> float | None:
        """When the pod must go because of its claims' device taints; None when it may stay."""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if not spec.get("nodeName") or pod["metadata"].get("deletionTimestamp") or \
                status.get("phase") in ("Succeeded", "Failed"):
            return None
        times = []
        for pod_claim in spec.get("resourceClaims") or []:
            claim = self._pod_claim(pod, pod_claim)
            if claim is not None:
                when = self.claim_eviction_time(claim)
                if when is not None:
                    times.append(when)
        return min(times, default=None)

    def _pod_claim(self, pod: Obj, pod_claim: Obj) -> Obj | None:
        """The allocated claim the pod uses for this entry, when it is meant for the pod."""
        name, must_check_owner, err = draclaims.claim_name(pod, pod_claim)
        if err is not None or name is None:
            return None
        claim = self.claims.get(f"{pod['metadata'].get('namespace', '')}/{name}")
        if claim is None or not draclaims.is_allocated(claim):
            return None
        if must_check_owner and draclaims.is_for_pod(pod, claim, self.pod_group_claims) is not None:
            return None
        if not draclaims.is_reserved_for_pod(pod, claim, self.pod_group_claims):
            return None
        return claim

    def claim_eviction_time(self, claim: Obj) -> float | None:
        times = []
        for result in allocation_results(claim):
            device_key = _device_key(result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            for taint in self._device_taints(result):
                first = self._first_seen.setdefault((device_key, taint.get("key", ""), taint.get("value", "")),
                                                    self.clock.now())
                when = taint_eviction_time(taint, result.get("tolerations") or [], first)
                if when is not None:
                    times.append(when)
        return min(times, default=None)

    def _device_taints(self, result: Obj) -> list[Obj]:
        """The NoExecute taints of an allocated device in its pool's newest generation."""
        slices = self.slices.by_index(SLICE_POOL_INDEX, f"{result.get('driver', '')}/{result.get('pool', '')}")
        if not slices:
            return []
        newest = max(((s.get("spec") or {}).get("pool") or {}).get("generation") or 0 for s in slices)
        for s in slices:
            if (((s.get("spec") or {}).get("pool") or {}).get("generation") or 0) != newest:
                continue
            taints = no_execute_device_taints(s).get(result.get("device", ""))
            if taints:
                return taints
        return []

    async def _cancel(self, key: str, pod: Obj | None) -> None:
        if self._scheduled.pop(key, None) is not None and pod is not None:
            await self._event(pod, "Cancelling deletion")

    async def _event(self, pod: Obj, message: str) -> None:
        if not self.events:
            return
        md = pod["metadata"]
        ref = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": md["name"], "namespace": md.get("namespace", ""), "uid": md.get("uid", "")}}
        try:
            await self.client.create_event(ref, REASON, message, component=EVENT_COMPONENT)
        except StatusError as e:  # best effort, as upstream's recorder
            self.log.debug("event for %s: %s", object_key(pod), e)
