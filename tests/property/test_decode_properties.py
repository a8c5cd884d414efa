"""Request bodies as the API server decodes them (`Server._decode`): any bytes under any content
type come back as a JSON value or a Status error (400 / 415), never another exception, at once."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from phalanx.apiserver.server import Server
from phalanx.machinery.errors import StatusError

from .strategies import json_values

CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "application/merge-patch+json",
                 "application/strategic-merge-patch+json", "application/json-patch+json",
                 "application/apply-patch+yaml", "application/yaml", "text/yaml", "",
                 "application/vnd.kubernetes.protobuf", "text/plain", "application/cbor"]
DECODER = Server  # decoding is a static method: it needs no API

bodies = st.one_of(
    st.binary(max_size=64),
    json_values(16).map(orjson.dumps),
    json_values(16).map(lambda v: orjson.dumps(v)[:-1]),  # truncated JSON
    st.text("{}[]:,\"' -&*!|>\n\tab01", max_size=40).map(str.encode),  # YAML-ish punctuation
    st.integers(min_value=1, max_value=2000).map(lambda depth: b"[" * depth + b"]" * depth),
)


def _decoded_or_status(raw: bytes, content_type: str):
    try:
        return DECODER._decode(raw, content_type, None)
    except StatusError as e:
        assert e.code in (400, 415)
        return None


@given(bodies, st.sampled_from(CONTENT_TYPES))
@example(b"\x0a\x03\x0a\x01\x76", "application/vnd.kubernetes.protobuf")
@example(b"a: &a [x]\nb: *a", "application/yaml")
def test_any_body_decodes_or_is_a_status_error(raw, content_type):
    value = _decoded_or_status(raw, content_type)
    assert value is None or isinstance(value, (dict, list, str, int, float, bool))


def test_an_impossible_yaml_timestamp_is_a_bad_request():
    with pytest.raises(StatusError) as info:
        DECODER._decode(b"a: 2001-13-45", "application/yaml", None)
    assert info.value.code == 400
