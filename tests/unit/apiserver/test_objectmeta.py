"""ObjectMeta rules shared by every kind: one case per rule, the messages as upstream words them."""

from __future__ import annotations

import pytest

from phalanx.api import load_all, registry
from phalanx.apiserver.objectmeta import drop_empty_metadata, validate_object_meta

load_all()


def rt(group: str, plural: str):
    return next(t for t in registry.all_types() if t.group == group and t.plural == plural)


def messages(group: str, plural: str, md: dict, old_md: dict | None = None) -> list[str]:
    old = {"metadata": old_md} if old_md is not None else None
    return [e.message() for e in validate_object_meta(rt(group, plural), {"metadata": md}, old)]


REF = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}


@pytest.mark.parametrize("group, plural, md, expected", [
    ("", "configmaps", {"name": "ok", "namespace": "d"}, []),
    ("", "configmaps", {"name": "Not_OK", "namespace": "d"}, [
        'metadata.name: Invalid value: "Not_OK": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')"]),
    ("", "services", {"name": "9web", "namespace": "d"}, [
        'metadata.name: Invalid value: "9web": a DNS-1035 label must consist of lower case alphanumeric '
        "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ("", "services", {"namespace": "d"}, ["metadata.name: Required value: name or generateName is required"]),
    ("", "events", {"name": "a/b", "namespace": "d"},
     ["metadata.name: Invalid value: \"a/b\": may not contain '/' or '%'"]),
    ("", "events", {"name": "Pod_1.17c3", "namespace": "d"}, []),
    ("", "configmaps", {"name": "x"}, ["metadata.namespace: Required value"]),
    ("", "nodes", {"name": "n", "namespace": "d"}, ["metadata.namespace: Forbidden: not allowed on this type"]),
    ("", "configmaps", {"name": "x", "namespace": "d", "ownerReferences": [{**REF, "uid": ""}]},
     ['metadata.ownerReferences[0].uid: Invalid value: "": uid must not be empty']),
    ("", "configmaps", {"name": "x", "namespace": "d",
                        "ownerReferences": [{**REF, "controller": True}, {**REF, "name": "q", "controller": True}]},
     ["metadata.ownerReferences: Invalid value: " + (
         '[{"apiVersion":"v1","controller":true,"kind":"Pod","name":"p","uid":"u"},'
         '{"apiVersion":"v1","controller":true,"kind":"Pod","name":"q","uid":"u"}]')
      + ": Only one reference can have Controller set to true"]),
    ("", "configmaps", {"name": "x", "namespace": "d", "finalizers": ["custom"]},
     ["metadata.finalizers[0]: Forbidden: name is neither a standard finalizer name nor is it fully qualified"]),
    ("", "configmaps", {"name": "x", "namespace": "d", "finalizers": ["orphan", "foregroundDeletion"]},
     ['metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: '
      "finalizer orphan and foregroundDeletion cannot be both set"]),
    ("", "configmaps", {"name": "x", "namespace": "d", "finalizers": ["example.com/keep", "kubernetes"]}, []),
])
def test_create(group, plural, md, expected):
    assert messages(group, plural, md) == expected


@pytest.mark.parametrize("md, old_md, expected", [
    ({"name": "x", "namespace": "d"}, {"name": "x", "namespace": "d"}, []),
    ({"name": "y", "namespace": "d"}, {"name": "x", "namespace": "d"},
     ['metadata.name: Invalid value: "y": field is immutable']),
    ({"name": "x", "namespace": "e"}, {"name": "x", "namespace": "d"},
     ['metadata.namespace: Invalid value: "e": field is immutable']),
])
def test_update(md, old_md, expected):
    assert messages("", "configmaps", md, old_md) == expected


def test_empty_maps_and_lists_are_not_stored():
    md = {"name": "x", "labels": {}, "annotations": None, "finalizers": [], "ownerReferences": [{"uid": "u"}]}
    drop_empty_metadata(md)
    assert md == {"name": "x", "ownerReferences": [{"uid": "u"}]}
