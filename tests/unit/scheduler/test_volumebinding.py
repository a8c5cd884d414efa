"""VolumeBinding by hand: claims, volumes and classes from plain dict listers; what PreFilter,
Filter and PreBind decide for a pod's PersistentVolumeClaims."""

from __future__ import annotations

import asyncio

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import UNSIGNABLE
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import NodeInfo, PodInfo
from phalanx.scheduler.plugins.volumebinding import (ERR_NODE_CONFLICT, ERR_PV_NOT_EXIST, ERR_UNBOUND_IMMEDIATE,
                                                     VolumeBinding)


class Lister:
    def __init__(self, objs, namespaced=True):
        self.objs = {(f"{o['metadata'].get('namespace')}/" if namespaced else "") + o["metadata"]["name"]: o
                     for o in objs}

    def get(self, key):
        return self.objs.get(key)

    def list(self, namespace=None):
        return list(self.objs.values())


class Client:
    """Records patches; `then(namespace, name)` plays the PV controller binding the claim."""

    def __init__(self, then=None):
        self.patches = []
        self.then = then

    async def patch(self, api_version, kind, namespace, name, body, patch_type):
        self.patches.append((kind, namespace, name, body))
        if self.then is not None:
            self.then(namespace, name)
        return {}


def pod(*claims):
    return PodInfo({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                    "spec": {"containers": [{"name": "c"}],
                             "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]}})


def node(name):
    return NodeInfo({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": {},
                     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})


def claim(name, cls="standard", volume=None):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": cls}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def volume(name, on_node):
    return {"metadata": {"name": name}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
        "claimRef": {"name": "x", "namespace": "ns"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [on_node]}]}]}}}}


CLASSES = [{"metadata": {"name": "standard"}, "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer"},
           {"metadata": {"name": "fast"}, "provisioner": "example.com/fast", "volumeBindingMode": "Immediate"}]


def plugin(claims=(), volumes=(), client=None):
    return VolumeBinding(Lister(claims), Lister(volumes, namespaced=False), Lister(CLASSES, namespaced=False), client)


def test_pod_without_claims_is_skipped_and_signs_like_any_other():
    pl = plugin()
    _, st = pl.pre_filter(CycleState(), pod(), [node("n1")])
    assert st.code == Code.Skip
    assert pl.sign_pod(pod()) == ()
    assert pl.sign_pod(pod("data")) is UNSIGNABLE


def test_missing_claim_and_unbound_immediate_claim_are_unresolvable():
    _, st = plugin().pre_filter(CycleState(), pod("data"), [])
    assert (st.code, st.message()) == (Code.UnschedulableAndUnresolvable, 'persistentvolumeclaim "data" not found')
    _, st = plugin([claim("data", cls="fast")]).pre_filter(CycleState(), pod("data"), [])
    assert st.message() == ERR_UNBOUND_IMMEDIATE


def test_bound_volume_pins_the_pod_to_its_node():
    pl = plugin([claim("data", volume="pv1")], [volume("pv1", "n2")])
    state = CycleState()
    assert pl.pre_filter(state, pod("data"), [])[1] is None
    assert pl.filter(state, pod("data"), node("n1")).message() == ERR_NODE_CONFLICT
    assert pl.filter(state, pod("data"), node("n2")) is None
    pl = plugin([claim("data", volume="gone")])
    state = CycleState()
    pl.pre_filter(state, pod("data"), [])
    assert pl.filter(state, pod("data"), node("n1")).message() == ERR_PV_NOT_EXIST


def test_wait_for_first_consumer_claim_gets_the_chosen_node_at_prebind():
    claims = [claim("data")]

    def bind(namespace, name):
        claims[0]["spec"]["volumeName"] = "pv1"
        claims[0]["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    client = Client(then=bind)
    pl = plugin(claims, client=client)
    state = CycleState()
    assert pl.pre_filter(state, pod("data"), [])[1] is None
    assert pl.filter(state, pod("data"), node("n1")) is None
    pl.reserve(state, pod("data"), "n1")
    assert pl.pre_bind_pre_flight(state, pod("data"), "n1") is None
    assert asyncio.run(pl.pre_bind(state, pod("data"), "n1")) is None
    assert client.patches == [("PersistentVolumeClaim", "ns", "data",
                               {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}})]


def test_prebind_gives_up_when_the_claim_is_never_bound():
    from phalanx.client import VirtualClock
    clock = VirtualClock()
    pl = VolumeBinding(Lister([claim("data")]), Lister([], namespaced=False), Lister(CLASSES, namespaced=False),
                       Client(), clock=clock, bind_timeout=30)
    state = CycleState()
    pl.pre_filter(state, pod("data"), [])

    async def run():
        task = asyncio.ensure_future(pl.pre_bind(state, pod("data"), "n1"))
        assert await clock.run_until(task.done, within=60)
        return task.result()
    st = asyncio.run(run())
    assert (st.code, st.message()) == (Code.Error, "binding volumes: context deadline exceeded")


# -- VolumeRestrictions and VolumeZone -------------------------------------------------------------
def test_read_write_once_pod_claim_in_use_elsewhere_rejects_every_node():
    from phalanx.scheduler.framework.snapshot import Snapshot
    from phalanx.scheduler.plugins.volumerestrictions import ERR_RWOP_CONFLICT, VolumeRestrictions
    rwop = claim("data")
    rwop["spec"]["accessModes"] = ["ReadWriteOncePod"]
    user = {"metadata": {"name": "user", "namespace": "ns", "uid": "u0"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}
    n1 = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}
    snap = Snapshot.from_nodes_and_pods([n1], [user])
    pl = VolumeRestrictions(Lister([rwop]), snapshot=lambda: snap)
    state = CycleState()
    assert pl.pre_filter(state, pod("data"), [])[1] is None
    st = pl.filter(state, pod("data"), snap.get("n1"))
    assert (st.code, st.message()) == (Code.Unschedulable, ERR_RWOP_CONFLICT)
    pl.remove_pod(state, pod("data"), PodInfo(user), snap.get("n1"))  # as preemption would
    assert pl.filter(state, pod("data"), snap.get("n1")) is None
    shared = VolumeRestrictions(Lister([claim("data")]), snapshot=lambda: snap)
    assert shared.pre_filter(CycleState(), pod("data"), [])[1].code == Code.Skip


def test_volume_zone_labels_restrict_the_nodes():
    from phalanx.scheduler.plugins.volumezone import ERR_CONFLICT, VolumeZone
    pv = volume("pv1", "n1")
    pv["metadata"]["labels"] = {"topology.kubernetes.io/zone": "a__b"}
    pl = VolumeZone(Lister([claim("data", volume="pv1")]), Lister([pv], namespaced=False))
    state = CycleState()
    assert pl.pre_filter(state, pod("data"), [])[1] is None

    def zoned(name, zone):
        ni = node(name)
        ni.labels = {**ni.labels, "topology.kubernetes.io/zone": zone} if zone else ni.labels
        return ni
    assert pl.filter(state, pod("data"), zoned("n1", "b")) is None
    assert pl.filter(state, pod("data"), zoned("n2", "c")).message() == ERR_CONFLICT
    assert pl.filter(state, pod("data"), zoned("n3", None)) is None  # a node without topology labels
