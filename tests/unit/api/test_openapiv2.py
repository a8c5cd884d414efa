"""The /openapi/v2 document: definitions converted from the v3 components, and gnostic's protobuf."""

from __future__ import annotations

from phalanx.api import openapiv2

POD = "io.k8s.api.core.v1.Pod"


def _fields(buf: bytes) -> list[tuple[int, object]]:
    """(number, value) of each field of one protobuf message: varints as int, length-delimited as bytes."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        else:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        out.append((number, value))
    return out


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def test_definitions_are_v2_refs_with_descriptions_beside_them():
    doc = openapiv2.openapi_v2_document([POD])
    assert doc["swagger"] == "2.0" and doc["info"]["version"] == "v1.36.0"
    pod = doc["definitions"][POD]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    spec = pod["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec" and "allOf" not in spec
    assert spec["description"]
    assert doc["definitions"]["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    assert "io.k8s.api.apps.v1.Deployment" not in doc["definitions"]


def test_protobuf_is_gnostics_document():
    top = dict(_fields(openapiv2.openapi_v2_bytes([POD], protobuf=True)))
    assert top[1] == b"2.0"
    assert dict(_fields(top[2])) == {1: b"Kubernetes", 2: b"v1.36.0"}
    named = {dict(_fields(ns))[1].decode(): dict(_fields(ns))[2] for _, ns in _fields(top[9])}
    pod = _fields(named[POD])
    extensions = [dict(_fields(v)) for n, v in pod if n == 31]
    assert extensions[0][1] == b"x-kubernetes-group-version-kind"
    assert b'"kind":"Pod"' in dict(_fields(extensions[0][2]))[2]
    assert [dict(_fields(v))[1] for n, v in pod if n == 22] == [b"object"]
    props = {dict(_fields(p))[1].decode(): dict(_fields(p))[2] for n, v in pod if n == 25 for _, p in _fields(v)}
    assert dict(_fields(props["spec"]))[1] == b"#/definitions/io.k8s.api.core.v1.PodSpec"
