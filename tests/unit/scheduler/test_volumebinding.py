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
    def __init__(self):
        self.patches = []

    async def patch(self, api_version, kind, namespace, name, body, patch_type):
        self.patches.append((kind, namespace, name, body))
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
    client = Client()
    pl = plugin([claim("data")], client=client)
    state = CycleState()
    assert pl.pre_filter(state, pod("data"), [])[1] is None
    assert pl.filter(state, pod("data"), node("n1")) is None
    pl.reserve(state, pod("data"), "n1")
    assert pl.pre_bind_pre_flight(state, pod("data"), "n1") is None
    assert asyncio.run(pl.pre_bind(state, pod("data"), "n1")) is None
    assert client.patches == [("PersistentVolumeClaim", "ns", "data",
                               {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}})]
