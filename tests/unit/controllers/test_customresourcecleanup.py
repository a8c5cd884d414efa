"""The CRD finalizer against the real API on virtual time: deleting a CRD marks it Terminating,
deletes its custom objects (waiting for their own finalizers), then lets the CRD go."""

from __future__ import annotations

import copy

import pytest

from phalanx.apiserver.customresources import forget_custom_schemas
from phalanx.controllers.customresourcecleanup import CustomResourceCleanupController

from .harness import shared_factory

NS = "default"
CRD_API = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
CRD = {"apiVersion": CRD_API[0], "kind": CRD_API[1], "metadata": {"name": "widgets.example.org"},
       "spec": {"group": "example.org", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture(autouse=True)
def _forget_schemas():
    yield
    forget_custom_schemas()  # custom kinds' OpenAPI schemas are process-wide


def widget(name: str, finalizers: list[str] | None = None) -> dict:
    md: dict = {"name": name, "namespace": NS}
    if finalizers:
        md["finalizers"] = finalizers
    return {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": md, "spec": {"size": 1}}


async def test_deleting_a_crd_deletes_its_objects_then_the_crd(env):
    await env.namespace(NS)
    factory = shared_factory(env)
    ctrl = CustomResourceCleanupController(env.client, factory, clock=env.clock)
    await env.client.create(copy.deepcopy(CRD))
    await env.client.create(widget("a"))
    await env.client.create(widget("held", finalizers=["example.org/hold"]))
    ctrl.start()
    try:
        assert await env.run_until(lambda: ctrl.synced, within=10)
        await env.client.delete(*CRD_API, None, "widgets.example.org")

        def terminating() -> bool:
            crd = env.store.get("apiextensions.k8s.io/customresourcedefinitions", "", "widgets.example.org")
            conds = {c["type"]: c["reason"] for c in (crd or {}).get("status", {}).get("conditions", [])}
            return conds.get("Terminating") == "InstanceDeletionInProgress"
        assert await env.run_until(terminating, within=30)
        assert await env.run_until(lambda: env.store.get("example.org/widgets", NS, "a") is None, within=30)
        # The object with a finalizer of its own holds the CRD until its finalizer goes.
        held = await env.client.get("example.org/v1", "Widget", NS, "held")
        assert held["metadata"].get("deletionTimestamp")
        assert env.store.get("apiextensions.k8s.io/customresourcedefinitions", "", "widgets.example.org") is not None
        held["metadata"]["finalizers"] = []
        await env.client.update(held)
        assert await env.run_until(lambda: env.store.get("apiextensions.k8s.io/customresourcedefinitions", "",
                                                         "widgets.example.org") is None, within=30)
        assert all(rt.group != "example.org" for rt in env.api.types)
    finally:
        await ctrl.stop()
        await factory.stop()


async def test_refused_names_are_accepted_once_the_other_crd_is_gone(env):
    from phalanx.controllers.crdnaming import CRDNamingController
    factory = shared_factory(env)
    ctrl = CustomResourceCleanupController(env.client, factory, clock=env.clock)
    naming = CRDNamingController(env.client, factory, clock=env.clock)
    await env.client.create(copy.deepcopy(CRD))
    rival = copy.deepcopy(CRD)
    rival["metadata"]["name"] = "gadgets.example.org"
    rival["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget", "shortNames": ["widgets"]}
    created = await env.client.create(rival)
    assert {c["type"]: c["status"] for c in created["status"]["conditions"]} == {
        "NamesAccepted": "False", "Established": "False"}
    ctrl.start()
    naming.start()
    try:
        assert await env.run_until(lambda: ctrl.synced and naming.synced, within=10)
        await env.client.delete(*CRD_API, None, "widgets.example.org")

        def established() -> bool:
            crd = env.store.get("apiextensions.k8s.io/customresourcedefinitions", "", "gadgets.example.org")
            return any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"]["conditions"])
        assert await env.run_until(established, within=30)
        assert any(rt.plural == "gadgets" for rt in env.api.types)
    finally:
        await naming.stop()
        await ctrl.stop()
        await factory.stop()
