"""JSON merge patch (RFC 7386), JSON patch (RFC 6902) and content-type dispatch."""

from __future__ import annotations

import orjson
import pytest

from phalanx.machinery.errors import StatusError
from phalanx.machinery.patch import (
    REJECTED_MESSAGE,
    PatchApplyError,
    apply_patch,
    json_merge_patch,
    json_patch,
)
from phalanx.machinery.patchmeta import PatchMeta

# -- JSON merge patch ----------------------------------------------------------------------

MERGE_CASES = [
    ("replace a member", {"a": "b"}, {"a": "c"}, {"a": "c"}),
    ("add a member", {"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ("null deletes", {"a": "b"}, {"a": None}, {}),
    ("null deletes one of two", {"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ("array replaces", {"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ("scalar replaces array", {"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ("nested merge", {"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ("arrays are not merged", {"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ("added object loses its nulls", {"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ("deep null pruning on add", {}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ("null-valued member is merged into as absent", {"a": None}, {"a": {"b": None, "c": 1}}, {"a": {"c": 1}}),
    ("objects inside added arrays lose nulls, array nulls stay", {},
     {"a": [{"x": None, "y": 1}, None]}, {"a": [{"y": 1}, None]}),
    ("empty patch", {"a": 1}, {}, {"a": 1}),
    ("labels like kubectl label", {"metadata": {"labels": {"app": "demo", "tier": "web"}}},
     {"metadata": {"labels": {"app": None, "tier": "db"}}}, {"metadata": {"labels": {"tier": "db"}}}),
]


@pytest.mark.parametrize("original, patch, expected", [c[1:] for c in MERGE_CASES],
                         ids=[c[0] for c in MERGE_CASES])
def test_json_merge_patch(original, patch, expected):
    assert json_merge_patch(original, patch) == expected


def test_json_merge_patch_does_not_mutate_and_shares_untouched_subtrees():
    original = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}]}}
    patch = {"metadata": {"labels": {"a": None, "b": {"x": None}}}}
    before = orjson.dumps(original), orjson.dumps(patch)
    result = json_merge_patch(original, patch)
    assert result == {"metadata": {"labels": {"b": {}}}, "spec": {"containers": [{"name": "c"}]}}
    assert (orjson.dumps(original), orjson.dumps(patch)) == before
    assert result["spec"] is original["spec"]


@pytest.mark.parametrize("patch, message", [
    (None, "Invalid JSON Patch"),
    (["a"], "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"),
    ("x", "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}"),
])
def test_json_merge_patch_that_is_not_an_object(patch, message):
    with pytest.raises(StatusError) as info:
        json_merge_patch({"a": 1}, patch)
    assert (info.value.code, info.value.reason, info.value.message) == (400, "BadRequest", message)


# -- JSON patch ----------------------------------------------------------------------------

JSON_PATCH_CASES = [
    ("add an object member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
     {"foo": "bar", "baz": "qux"}),
    ("add an array element", {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
     {"foo": ["bar", "qux", "baz"]}),
    ("append with -", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
     {"foo": ["bar", ["abc", "def"]]}),
    ("add at the end index", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/1", "value": "x"}],
     {"foo": ["bar", "x"]}),
    ("add replaces an existing member", {"foo": 1}, [{"op": "add", "path": "/foo", "value": 2}], {"foo": 2}),
    ("add a nested member", {"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ("remove an object member", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ("remove an array element", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}],
     {"foo": ["bar", "baz"]}),
    ("negative index counts from the end", {"foo": [1, 2, 3]}, [{"op": "remove", "path": "/foo/-1"}],
     {"foo": [1, 2]}),
    ("replace a value", {"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
     {"baz": "boo", "foo": "bar"}),
    ("replace an array element", {"a": [1, 2]}, [{"op": "replace", "path": "/a/0", "value": 9}], {"a": [9, 2]}),
    ("move a value", {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ("move an array element", {"foo": ["all", "grass", "cows", "eat"]},
     [{"op": "move", "from": "/foo/1", "path": "/foo/3"}], {"foo": ["all", "cows", "eat", "grass"]}),
    ("copy a value", {"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}}),
    ("test then replace", {"metadata": {"resourceVersion": "7", "labels": {"a": "b"}}},
     [{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
      {"op": "replace", "path": "/metadata/labels/a", "value": "c"}],
     {"metadata": {"resourceVersion": "7", "labels": {"a": "c"}}}),
    ("test a structure, key order irrelevant", {"a": {"x": [1, {"y": True}], "z": None}},
     [{"op": "test", "path": "/a", "value": {"z": None, "x": [1, {"y": True}]}}],
     {"a": {"x": [1, {"y": True}], "z": None}}),
    ("test null matches an absent member", {"a": 1}, [{"op": "test", "path": "/b", "value": None}], {"a": 1}),
    ("~1 escapes a slash", {"metadata": {"annotations": {"example.com/x": "1"}}},
     [{"op": "replace", "path": "/metadata/annotations/example.com~1x", "value": "2"}],
     {"metadata": {"annotations": {"example.com/x": "2"}}}),
    ("~0 escapes a tilde, decoded after ~1", {"~1": 1}, [{"op": "remove", "path": "/~01"}], {}),
    ("several operations on one container", {"spec": {"a": 1}},
     [{"op": "add", "path": "/spec/b", "value": 2}, {"op": "add", "path": "/spec/c", "value": 3},
      {"op": "remove", "path": "/spec/a"}], {"spec": {"b": 2, "c": 3}}),
    ("add without value adds null", {}, [{"op": "add", "path": "/a"}], {"a": None}),
    ("null patch does nothing", {"a": 1}, None, {"a": 1}),
]


@pytest.mark.parametrize("original, operations, expected", [c[1:] for c in JSON_PATCH_CASES],
                         ids=[c[0] for c in JSON_PATCH_CASES])
def test_json_patch(original, operations, expected):
    assert json_patch(original, operations) == expected


def test_json_patch_does_not_mutate_inputs_and_copies_do_not_alias():
    original = {"a": {"b": [1, 2]}, "untouched": {"x": 1}}
    ops = [{"op": "copy", "from": "/a", "path": "/c"},
           {"op": "add", "path": "/c/b/-", "value": 3},
           {"op": "add", "path": "/a/b/0", "value": 0}]
    before = orjson.dumps(original), orjson.dumps(ops)
    result = json_patch(original, ops)
    assert result == {"a": {"b": [0, 1, 2]}, "c": {"b": [1, 2, 3]}, "untouched": {"x": 1}}
    assert (orjson.dumps(original), orjson.dumps(ops)) == before
    assert result["untouched"] is original["untouched"]


def _rejected(original, operations) -> StatusError:
    with pytest.raises(StatusError) as info:
        json_patch(original, operations)
    err = info.value
    assert (err.code, err.reason, err.message, err.details) == (422, "Invalid", REJECTED_MESSAGE, {})
    assert isinstance(err.__cause__, PatchApplyError)
    return err


@pytest.mark.parametrize("original, operations, reason", [
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "testing value /baz failed: test failed"),
    ({"baz": 1}, [{"op": "test", "path": "/baz", "value": "1"}], "testing value /baz failed: test failed"),
    ({"baz": 1}, [{"op": "test", "path": "/baz", "value": True}], "testing value /baz failed: test failed"),
    ({}, [{"op": "test", "path": "/baz", "value": 1}], "testing value /baz failed: test failed"),
    ({"a": 1}, [{"op": "remove", "path": "/b"}],
     "error in remove for path: '/b': Unable to remove nonexistent key: b: missing value"),
    ({"a": 1}, [{"op": "replace", "path": "/b", "value": 1}],
     "replace operation does not apply: doc is missing key: /b: missing value"),
    ({"a": 1}, [{"op": "add", "path": "/x/y", "value": 1}],
     'add operation does not apply: doc is missing path: "/x/y": missing value'),
    ({"a": [1]}, [{"op": "add", "path": "/a/5", "value": 1}],
     "error in add for path: '/a/5': Unable to access invalid index: 5: invalid index referenced"),
    ({"a": [1]}, [{"op": "remove", "path": "/a/1"}],
     "error in remove for path: '/a/1': Unable to access invalid index: 1: invalid index referenced"),
    ({"a": [1]}, [{"op": "add", "path": "/a/x", "value": 1}],
     "error in add for path: '/a/x': value was not a proper array index: 'x': "
     'strconv.Atoi: parsing "x": invalid syntax'),
    ({"a": 1}, [{"op": "move", "from": "/b", "path": "/c"}],
     "error in move for path: 'b': unable to get nonexistent key: b: missing value"),
    ({"a": 1}, [{"op": "copy", "from": "/b", "path": "/c"}],
     "error in copy for from: '/b': unable to get nonexistent key: b: missing value"),
    ({"a": 1}, [{"op": "frobnicate", "path": "/a"}], "Unexpected kind: frobnicate"),
    ({"a": 1}, [{"path": "/a"}], "Unexpected kind: unknown"),
    ({"a": 1}, [{"op": "add", "path": "", "value": {}}],
     'add operation does not apply: doc is missing path: "": missing value'),
])
def test_json_patch_that_cannot_apply_is_422(original, operations, reason):
    err = _rejected(original, operations)
    assert str(err.__cause__) == reason


def test_json_patch_is_all_or_nothing():
    original = {"a": 1}
    _rejected(original, [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/zzz"}])
    assert original == {"a": 1}


@pytest.mark.parametrize("operations, message", [
    ({"op": "add"}, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"),
    (["add"], "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp"),
    ([{"op": 1, "path": "/a"}],
     "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"),
    ([{"op": "add", "path": ["a"]}],
     "error decoding patch: json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string"),
])
def test_malformed_json_patch_is_400(operations, message):
    with pytest.raises(StatusError) as info:
        json_patch({"a": 1}, operations)
    assert (info.value.code, info.value.reason, info.value.message) == (400, "BadRequest", message)


def test_too_many_operations_is_413():
    ops = [{"op": "test", "path": "/a", "value": 1}] * 10001
    with pytest.raises(StatusError) as info:
        json_patch({"a": 1}, ops)
    assert info.value.code == 413
    assert info.value.message == ("Request entity too large: The allowed maximum operations in a "
                                  "JSON patch is 10000, got 10001")
    assert json_patch({"a": 1}, ops[:10000]) == {"a": 1}


# -- dispatch ------------------------------------------------------------------------------

POD = {"metadata": {"name": "p", "labels": {"app": "a"}},
       "spec": {"containers": [{"name": "c", "image": "i1"}]}}
POD_META = PatchMeta.for_schema({"properties": {"spec": {"properties": {"containers": {
    "type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
    "items": {"type": "object"}}}}}})


@pytest.mark.parametrize("content_type, body, expected_containers", [
    ("application/merge-patch+json", b'{"spec":{"containers":[{"name":"d"}]}}', [{"name": "d"}]),
    ("application/strategic-merge-patch+json", b'{"spec":{"containers":[{"name":"c","image":"i2"}]}}',
     [{"name": "c", "image": "i2"}]),
    ("application/strategic-merge-patch+json; charset=utf-8", {"spec": {"containers": [{"name": "d"}]}},
     [{"name": "d"}, {"name": "c", "image": "i1"}]),
    ("application/json-patch+json", b'[{"op":"replace","path":"/spec/containers/0/image","value":"i3"}]',
     [{"name": "c", "image": "i3"}]),
])
def test_apply_patch_dispatches_on_content_type(content_type, body, expected_containers):
    assert apply_patch(POD, content_type, body, POD_META)["spec"]["containers"] == expected_containers


@pytest.mark.parametrize("content_type", ["application/apply-patch+yaml", "application/json", "text/plain"])
def test_apply_patch_rejects_other_content_types(content_type):
    with pytest.raises(StatusError) as info:
        apply_patch(POD, content_type, b"{}", POD_META)
    assert (info.value.code, info.value.reason) == (415, "UnsupportedMediaType")


@pytest.mark.parametrize("content_type, prefix", [
    ("application/merge-patch+json", "error decoding patch: "),
    ("application/json-patch+json", "error decoding patch: "),
    ("application/strategic-merge-patch+json", ""),
])
def test_apply_patch_with_invalid_json_is_400(content_type, prefix):
    with pytest.raises(StatusError) as info:
        apply_patch(POD, content_type, b"{not json", POD_META)
    assert info.value.code == 400 and info.value.message.startswith(prefix)


def test_apply_patch_strategic_null_body_changes_nothing():
    assert apply_patch(POD, "application/strategic-merge-patch+json", b"null", POD_META) == POD
