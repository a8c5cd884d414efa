"""The OpenAPI v2 document (`GET /openapi/v2`), derived from the OpenAPI v3 components that
`api/openapi.py` serves, in JSON or in the protobuf form kubectl asks for.

kubectl reads `/openapi/v2` only as a fallback: when it cannot tell from the v3 documents whether
the server validates fields itself (a kind of a group-version no v3 document describes), it
downloads this document, validates the object against it on the client side, and skips a kind the
document does not define. So an unknown kind passes validation and reaches kubectl's REST mapping,
which prints upstream's `no matches for kind "X" in version "Y"`. With no document at all
(404) kubectl stops earlier, with "error validating data: the server could not find the requested
resource".

    doc = openapi_v2_document(["io.k8s.api.core.v1.Pod", ...], release="1.36")   # swagger 2.0 dict
    body = openapi_v2_bytes(roots, release, protobuf=True)    # gnostic's openapi_v2.Document

The document holds `definitions` only (what kubectl's client-side validation reads, with each kind's
`x-kubernetes-group-version-kind`); it has no `paths`, so kubectl's v2 check for the
`fieldValidation` parameter says "unsupported" and it validates on the client, never asking for
CRDs. The conversion from v3: `#/components/schemas/X` refs become `#/definitions/X`, a
single-element `allOf` wrapper becomes a `$ref` with its description beside it (upstream's v2 form),
and the `oneOf` of Quantity and IntOrString becomes `type: string` (upstream's v2 declares them so).

The protobuf encoding (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) follows
gnostic's `openapiv2/OpenAPIv2.proto` (Document, Info, Definitions, NamedSchema, Schema, TypeItem,
ItemsItem, Properties, AdditionalPropertiesItem, NamedAny, Any): no protobuf runtime is needed for
these eleven messages, so they are written here with the wire format's three encodings.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, Iterable

import orjson

from . import openapi

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"   # what clients ask for
# What upstream answers with: Go's mime parser refuses the `@` of the requested form.
PROTOBUF_V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V3_PREFIX = "#/components/schemas/"
_V2_PREFIX = "#/definitions/"
_SCALARS = ("format", "title", "description", "pattern", "readOnly", "maxLength", "minLength", "maxItems",
            "minItems", "maximum", "minimum", "uniqueItems")


# ---------------------------------------------------------------------------------------------
# v3 -> v2 (JSON)
# ---------------------------------------------------------------------------------------------
def _normalize(node: dict) -> dict:
    """A single-element `allOf` around a `$ref` becomes the `$ref`; a `oneOf` becomes `type: string`."""
    node = dict(node)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        del node["allOf"]
        node["$ref"] = all_of[0]["$ref"]
    if node.pop("oneOf", None) is not None and "type" not in node:
        node["type"] = "string"
    node.pop("nullable", None)
    return node


def _convert_entry(key: str, value: Any) -> Any:
    if key == "$ref" and isinstance(value, str) and value.startswith(_V3_PREFIX):
        return _V2_PREFIX + value[len(_V3_PREFIX):]
    if key == "properties" and isinstance(value, dict):
        return {name: _convert(prop) for name, prop in value.items()}
    if key in ("items", "additionalProperties"):
        return _convert(value)
    return value


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    return {key: _convert_entry(key, value) for key, value in _normalize(node).items()}


def openapi_v2_document(roots: Iterable[str], release: str = openapi.DEFAULT_RELEASE) -> dict:
    """A swagger 2.0 document with the definitions reachable from `roots` (schema names)."""
    schemas = openapi.reachable_schemas(roots, release)
    return {"swagger": "2.0",
            "info": {"title": "Kubernetes", "version": openapi.info_version(release)},
            "paths": {},
            "definitions": {name: _convert(schemas[name]) for name in sorted(schemas)}}


@lru_cache(maxsize=16)
def _cached(roots: tuple[str, ...], release: str, digest: str, protobuf: bool) -> bytes:
    doc = openapi_v2_document(roots, release)
    return encode_document(doc) if protobuf else orjson.dumps(doc)


def openapi_v2_bytes(roots: Iterable[str], release: str = openapi.DEFAULT_RELEASE,
                     protobuf: bool = False) -> bytes:
    """The document encoded once per set of roots and release: JSON, or gnostic's protobuf."""
    return _cached(tuple(sorted(set(roots))), release, openapi.components_digest(release), protobuf)


# ---------------------------------------------------------------------------------------------
# The protobuf wire format
# ---------------------------------------------------------------------------------------------
def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _str(number: int, text: str) -> bytes:
    return _bytes_field(number, text.encode()) if text else b""


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(int(value)) if value else b""


def _bool(number: int, value: bool) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML (2); JSON is YAML, as upstream's decoder reads it."""
    return _str(2, orjson.dumps(value).decode())


def _named_any(number: int, name: str, value: Any) -> bytes:
    return _bytes_field(number, _str(1, name) + _bytes_field(2, _any(value)))


def _named_schema(number: int, name: str, schema: dict) -> bytes:
    return _bytes_field(number, _str(1, name) + _bytes_field(2, encode_schema(schema)))


# Schema field numbers of the scalars above (OpenAPIv2.proto).
_SCALAR_FIELDS = {"format": 2, "title": 3, "description": 4, "maximum": 7, "minimum": 9, "maxLength": 11,
                  "minLength": 12, "pattern": 13, "maxItems": 14, "minItems": 15, "uniqueItems": 16,
                  "readOnly": 27}


def _scalar(key: str, value: Any) -> bytes:
    number = _SCALAR_FIELDS[key]
    if key in ("maximum", "minimum"):
        return _double(number, value)
    if isinstance(value, bool):
        return _bool(number, value)
    if isinstance(value, int):
        return _int(number, value)
    return _str(number, str(value))


def _additional(value: Any) -> bytes:
    if isinstance(value, bool):
        return _bytes_field(21, _varint(2 << 3) + _varint(int(value)))
    return _bytes_field(21, _bytes_field(1, encode_schema(value)))


def _type_item(value: Any) -> bytes:
    types = value if isinstance(value, list) else [value]
    return _bytes_field(22, b"".join(_str(1, t) for t in types))


def encode_schema(schema: dict) -> bytes:
    """One gnostic `Schema` message (parsers accept fields in any order)."""
    out = [_str(1, schema.get("$ref", ""))]
    out += [_scalar(k, schema[k]) for k in _SCALARS if k in schema]
    if "default" in schema:
        out.append(_bytes_field(5, _any(schema["default"])))
    out += [_str(19, name) for name in schema.get("required", ())]
    out += [_bytes_field(20, _any(v)) for v in schema.get("enum", ())]
    if "additionalProperties" in schema:
        out.append(_additional(schema["additionalProperties"]))
    if "type" in schema:
        out.append(_type_item(schema["type"]))
    if "items" in schema:
        items = schema["items"] if isinstance(schema["items"], list) else [schema["items"]]
        out.append(_bytes_field(23, b"".join(_bytes_field(1, encode_schema(i)) for i in items)))
    if "properties" in schema:
        props = b"".join(_named_schema(1, name, p) for name, p in schema["properties"].items())
        out.append(_bytes_field(25, props))
    out += [_named_any(31, k, v) for k, v in schema.items() if k.startswith("x-")]
    return b"".join(out)


def encode_document(doc: dict) -> bytes:
    """gnostic's `openapi_v2.Document`: swagger (1), info (2), definitions (9)."""
    info = doc.get("info", {})
    definitions = b"".join(_named_schema(1, name, s) for name, s in doc.get("definitions", {}).items())
    return (_str(1, doc.get("swagger", "2.0"))
            + _bytes_field(2, _str(1, info.get("title", "")) + _str(2, info.get("version", "")))
            + _bytes_field(9, definitions))
