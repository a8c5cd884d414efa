"""`rest.API`, the generic registry: create / update / patch / delete / finalize semantics every kind
shares, as a caller sees them (results and Status errors)."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from phalanx.apiserver import build_api
from phalanx.apiserver.rest import API
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.errors import StatusError
from phalanx.store import MemoryStore


def new_api() -> API:
    api = build_api(MemoryStore(), FeatureGates.from_config({}))
    for ns in ("default", "other"):
        api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": ns}})
    return api


def cm(name: str = "cm", **md: Any) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **md}, "data": {"k": "v"}}


def cms(api: API):
    return api.resource("", "v1", "configmaps")


def namespaces(api: API):
    return api.resource("", "v1", "namespaces")


def error_of(call: Callable[[], Any]) -> tuple[int, str, str]:
    with pytest.raises(StatusError) as e:
        call()
    return e.value.code, e.value.reason, e.value.message


# -- create -------------------------------------------------------------------------------------

@pytest.mark.parametrize("namespace, body, expected", [
    ("default", cm(namespace="other"), (400, "BadRequest",
     "the namespace of the provided object does not match the namespace sent on the request")),
    ("default", cm(resourceVersion="5"), (400, "BadRequest",
     "resourceVersion should not be set on objects to be created")),
    ("missing", cm(), (404, "NotFound", 'namespaces "missing" not found')),
    ("default", {**cm(), "kind": "Secret"}, (400, "BadRequest",
     "the kind in the data (Secret) does not match the expected kind (ConfigMap)")),
    ("default", {**cm(), "apiVersion": "v2"}, (400, "BadRequest",
     "the API version in the data (v2) does not match the expected API version (v1)")),
    ("default", {"metadata": {"generateName": "Bad_"}}, (422, "Invalid", None)),
])
def test_create_is_refused(namespace, body, expected):
    api = new_api()
    code, reason, message = error_of(lambda: api.create(cms(api), namespace, body))
    assert (code, reason) == expected[:2] and (expected[2] is None or message == expected[2])


@pytest.mark.parametrize("metadata, name_check", [
    ({"generateName": "gen-"}, lambda n: n.startswith("gen-") and len(n) == len("gen-") + 5),
    ({"name": "fixed"}, lambda n: n == "fixed"),
])
def test_create_names_the_object(metadata, name_check):
    api = new_api()
    created = api.create(cms(api), "default", {"metadata": dict(metadata)})
    md = created["metadata"]
    assert name_check(md["name"]) and md["namespace"] == "default" and md["uid"] and md["resourceVersion"]


def test_create_replaces_server_owned_metadata():
    api = new_api()
    created = api.create(cms(api), "default", cm(uid="mine", creationTimestamp="2000-01-01T00:00:00Z",
                                                 deletionTimestamp="2000-01-01T00:00:00Z"))
    md = created["metadata"]
    assert md["uid"] != "mine" and md["creationTimestamp"] != "2000-01-01T00:00:00Z" and "deletionTimestamp" not in md


def test_dry_run_create_stores_nothing():
    api = new_api()
    api.create(cms(api), "default", cm(), dry_run=True)
    assert error_of(lambda: api.get(cms(api), "default", "cm"))[0] == 404


# -- update -------------------------------------------------------------------------------------

def stored(api: API, **md: Any) -> dict:
    return api.create(cms(api), "default", cm(**md))


@pytest.mark.parametrize("change, expected", [
    (lambda o: o["metadata"].update(resourceVersion="1"), (409, "Conflict",
     'Operation cannot be fulfilled on configmaps "cm": the object has been modified; '
     'please apply your changes to the latest version and try again')),
    (lambda o: o["metadata"].update(name="other"), (400, "BadRequest",
     "the name of the object (other) does not match the name on the URL (cm)")),
    (lambda o: o["metadata"].update(namespace="other"), (400, "BadRequest",
     "the namespace of the provided object does not match the namespace sent on the request")),
])
def test_update_is_refused(change, expected):
    api = new_api()
    old = stored(api)
    obj = {**old, "metadata": dict(old["metadata"])}
    change(obj)
    assert error_of(lambda: api.update(cms(api), "default", "cm", obj)) == expected


def test_an_update_that_changes_nothing_keeps_the_resource_version():
    api = new_api()
    old = stored(api)
    same = api.update(cms(api), "default", "cm", {**old, "metadata": dict(old["metadata"])})
    assert same["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"]
    changed = api.update(cms(api), "default", "cm", {**old, "metadata": dict(old["metadata"]), "data": {"k": "w"}})
    assert int(changed["metadata"]["resourceVersion"]) > int(old["metadata"]["resourceVersion"])


# -- patch --------------------------------------------------------------------------------------

@pytest.mark.parametrize("patch_type, body, data", [
    ("application/merge-patch+json", b'{"data":{"k":null,"n":"1"}}', {"n": "1"}),
    ("application/json-patch+json", b'[{"op":"add","path":"/data/n","value":"1"}]', {"k": "v", "n": "1"}),
    ("application/strategic-merge-patch+json", b'{"data":{"n":"1"}}', {"k": "v", "n": "1"}),
])
def test_patch_types(patch_type, body, data):
    api = new_api()
    stored(api)
    patched, created = api.patch(cms(api), "default", "cm", patch_type, body)
    assert patched["data"] == data and not created


@pytest.mark.parametrize("patch_type, body, expected", [
    ("application/merge-patch+json", b"{", (400, "BadRequest")),
    ("application/merge-patch+json", b"[1]", (400, "BadRequest")),
    ("application/merge-patch+json", b'{"metadata":{"resourceVersion":"1"}}', (409, "Conflict")),
    ("application/apply-patch+yaml", b"apiVersion: v1\nkind: ConfigMap\n", (400, "BadRequest")),  # no manager
])
def test_patch_is_refused(patch_type, body, expected):
    api = new_api()
    stored(api)
    assert error_of(lambda: api.patch(cms(api), "default", "cm", patch_type, body))[:2] == expected


def test_patching_a_missing_object_is_not_found_but_apply_creates_it():
    api = new_api()
    assert error_of(lambda: api.patch(cms(api), "default", "cm", "application/merge-patch+json", b"{}"))[0] == 404
    _, created = api.patch(cms(api), "default", "cm", "application/apply-patch+yaml",
                           b"apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n", field_manager="me")
    assert created and api.get(cms(api), "default", "cm")["data"] == {"k": "v"}


# -- delete -------------------------------------------------------------------------------------

@pytest.mark.parametrize("finalizers, propagation, gone, kept_finalizers", [
    ([], None, True, None),
    (["example.com/hold"], None, False, ["example.com/hold"]),
    ([], "Orphan", False, ["orphan"]),
    ([], "Foreground", False, ["foregroundDeletion"]),
])
def test_delete(finalizers, propagation, gone, kept_finalizers):
    api = new_api()
    stored(api, finalizers=finalizers) if finalizers else stored(api)
    obj, deleted_now = api.delete(cms(api), "default", "cm", propagation=propagation)
    assert deleted_now == gone
    if gone:
        assert error_of(lambda: api.get(cms(api), "default", "cm"))[0] == 404
    else:
        live = api.get(cms(api), "default", "cm")
        assert live["metadata"]["deletionTimestamp"] and live["metadata"]["finalizers"] == kept_finalizers


@pytest.mark.parametrize("preconditions, message", [
    ({"uid": "nope"}, "Precondition failed: UID in precondition: nope"),
    ({"resourceVersion": "1"}, "Precondition failed: ResourceVersion in precondition: 1"),
])
def test_delete_preconditions(preconditions, message):
    api = new_api()
    stored(api)
    code, reason, text = error_of(lambda: api.delete(cms(api), "default", "cm", preconditions=preconditions))
    assert (code, reason) == (409, "Conflict") and message in text


def test_system_namespaces_may_not_be_deleted():
    api = new_api()
    assert error_of(lambda: api.delete(namespaces(api), "", "default")) == (
        403, "Forbidden", 'namespaces "default" is forbidden: this namespace may not be deleted')


# -- namespaces/finalize ------------------------------------------------------------------------

def terminating_namespace(api: API, name: str = "doomed") -> dict:
    api.create(namespaces(api), "", {"metadata": {"name": name}})
    api.delete(namespaces(api), "", name)
    return api.get(namespaces(api), "", name)


def with_finalizers(ns: dict, finalizers: list[str], **md: Any) -> dict:
    return {**ns, "metadata": {**ns["metadata"], **md}, "spec": {"finalizers": finalizers}}


def test_finalize_without_finalizers_removes_a_terminating_namespace():
    api = new_api()
    ns = terminating_namespace(api)
    assert ns["status"]["phase"] == "Terminating"
    api.finalize(namespaces(api), "doomed", with_finalizers(ns, []))
    assert error_of(lambda: api.get(namespaces(api), "", "doomed"))[0] == 404


@pytest.mark.parametrize("md, expected", [
    ({"resourceVersion": "1"}, (409, "Conflict")),
    ({"name": "someone-else"}, (400, "BadRequest")),
])
def test_finalize_is_refused(md, expected):
    api = new_api()
    ns = terminating_namespace(api)
    assert error_of(lambda: api.finalize(namespaces(api), "doomed", with_finalizers(ns, [], **md)))[:2] == expected


def test_finalize_changes_only_spec_finalizers():
    api = new_api()
    api.create(namespaces(api), "", {"metadata": {"name": "alive"}})
    ns = api.get(namespaces(api), "", "alive")
    body = with_finalizers(ns, ["example.com/x"], uid="forged")
    body["status"] = {"phase": "Terminating"}
    out = api.finalize(namespaces(api), "alive", body)
    assert out["spec"]["finalizers"] == ["example.com/x"]
    assert out["status"]["phase"] == "Active" and out["metadata"]["uid"] == ns["metadata"]["uid"]


def test_finalize_is_only_served_for_namespaces():
    api = new_api()
    stored(api)
    assert error_of(lambda: api.finalize(cms(api), "cm", cm()))[:2] == (405, "MethodNotAllowed")


def test_an_explicit_name_wins_over_generate_name():
    api = new_api()
    body = {"metadata": {"name": "gn-fixed", "generateName": "gn-"}}
    assert api.create(cms(api), "default", {"metadata": dict(body["metadata"])})["metadata"]["name"] == "gn-fixed"
    assert error_of(lambda: api.create(cms(api), "default", {"metadata": dict(body["metadata"])})) == (
        409, "AlreadyExists", 'configmaps "gn-fixed" already exists')
