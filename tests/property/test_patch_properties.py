"""The three PATCH formats and server-side apply, on arbitrary objects and bodies: the answer is
the patched object or a Status error (`StatusError`), never another exception, and at once."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from phalanx.api import openapi
from phalanx.machinery.apply import server_side_apply
from phalanx.machinery.errors import StatusError
from phalanx.machinery.patch import json_merge_patch, json_patch
from phalanx.machinery.patchmeta import PatchMeta
from phalanx.machinery.strategic import strategic_merge_patch

from .strategies import SPECIAL_KEYS, json_objects, json_values, keys, pods

POD_META = openapi.patch_meta("", "v1", "Pod")
NOW = "2026-01-01T00:00:00Z"

pointer_tokens = st.one_of(st.sampled_from(SPECIAL_KEYS + ["0", "1", "-", "~0", "~1", "", "01", "-1"]),
                           st.text(max_size=4))
pointers = st.one_of(st.lists(pointer_tokens, max_size=4).map(lambda ts: "".join("/" + t for t in ts)),
                     st.text(max_size=6))
operations = st.one_of(
    st.fixed_dictionaries(
        {"op": st.one_of(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]), st.text(max_size=4))},
        optional={"path": st.one_of(pointers, json_values(3)), "from": st.one_of(pointers, json_values(3)),
                  "value": json_values(8)}),
    json_values(4),
)


def _patched_or_status(apply, *args):
    """Run one patch; only a StatusError may escape, and a result must be JSON-encodable."""
    try:
        result = apply(*args)
    except StatusError as e:
        assert 400 <= e.code < 600
        return None
    orjson.dumps(result)
    return result


@given(pods | json_objects, st.one_of(st.lists(operations, max_size=6), json_values(6)))
@example({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}, {"op": "move", "from": "/a", "path": "/a/0"}])
def test_json_patch(original, ops):
    _patched_or_status(json_patch, original, ops)


@given(pods | json_objects, json_values(20))
def test_json_merge_patch(original, patch):
    result = _patched_or_status(json_merge_patch, original, patch)
    if result is not None and isinstance(patch, dict):
        for key, value in patch.items():  # RFC 7386: null deletes, scalars and lists replace
            if value is None:
                assert key not in result
            elif not isinstance(value, dict):
                assert key in result


@given(pods | json_objects, pods | json_objects | json_values(10), st.sampled_from(["pod", "none"]))
@example({"name": "a"}, {"$patch": "garbage"}, "none")
@example({"spec": {"containers": [{"name": "a"}] * 3}},
         {"spec": {"containers": [{"$patch": "delete", "name": "a"}], "$setElementOrder/containers": [{"name": "b"}]}},
         "pod")
def test_strategic_merge_patch(original, patch, schema):
    meta = POD_META if schema == "pod" else PatchMeta.empty()
    _patched_or_status(strategic_merge_patch, original, patch, meta)


@given(st.one_of(st.none(), pods), st.one_of(pods, json_objects, st.text(max_size=30), st.binary(max_size=30)),
       st.booleans())
@example(None, "a: &x [1]\nb: *x\n", False)
def test_server_side_apply(live, body, force):
    # As the API server hands bodies over: apiVersion and kind already checked against the endpoint.
    if isinstance(body, dict):
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        body = {**body, "apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "name": "p"}}
    if live is not None:
        live = {**live, "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    _patched_or_status(lambda: server_side_apply(live, body, "fuzzer", POD_META, force, NOW,
                                                 api_version="v1", kind="Pod"))


def test_server_side_apply_with_an_impossible_yaml_timestamp_is_a_bad_request():
    with pytest.raises(StatusError) as info:
        server_side_apply(None, "a: 2001-13-45", "fuzzer", POD_META, False, NOW)
    assert info.value.code == 400
