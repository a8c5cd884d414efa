"""Strategic merge patch: upstream's behaviour on a small hand-built schema, plus kubectl's body."""

from __future__ import annotations

import time

import orjson
import pytest
import yaml

from phalanx.machinery.errors import StatusError
from phalanx.machinery.patch import REJECTED_MESSAGE, apply_patch
from phalanx.machinery.patchmeta import PatchMeta
from phalanx.machinery.strategic import MAX_PATCH_DEPTH, strategic_merge_patch

# A "Widget": every way a field can be patched, on OpenAPI v3 schema nodes.
MERGE_BY_NAME = {"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"}
DEFINITIONS = {
    "#/components/schemas/Part": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "value": {"type": "string"},
            "other": {"type": "string"},
            "parts": {"type": "array", **MERGE_BY_NAME,
                      "items": {"$ref": "#/components/schemas/Part"}},
            "ports": {"type": "array", "x-kubernetes-patch-strategy": "merge",
                      "items": {"type": "integer"}},
            "plain": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
}
WIDGET = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "value": {"type": "string"},
        "other": {"type": "string"},
        "parts": {"type": "array", **MERGE_BY_NAME, "items": {"$ref": "#/components/schemas/Part"}},
        "ports": {"type": "array", "x-kubernetes-patch-strategy": "merge", "items": {"type": "integer"}},
        "plain": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
        "plainInts": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "spec": {"allOf": [{"$ref": "#/components/schemas/Part"}]},
        "strategy": {"allOf": [{"$ref": "#/components/schemas/Part"}],
                     "x-kubernetes-patch-strategy": "retainKeys"},
        "retainedParts": {"type": "array", "x-kubernetes-patch-strategy": "merge,retainKeys",
                          "x-kubernetes-patch-merge-key": "name",
                          "items": {"$ref": "#/components/schemas/Part"}},
        "template": {"allOf": [{"$ref": "#/components/schemas/Part"}],
                     "x-kubernetes-patch-strategy": "replace"},
        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "badStrategy": {"type": "object", "x-kubernetes-patch-strategy": "merge,replace"},
    },
}
META = PatchMeta.for_schema(WIDGET, DEFINITIONS.get)


def load(text: str):
    return yaml.safe_load(text)


# description, original, patch, expected -- the behaviours of upstream's strategicpatch tests,
# in this file's own data.
CASES = load("""
- desc: add a field
  original: {name: a}
  patch: {value: b}
  expected: {name: a, value: b}
- desc: null deletes a field, missing fields are ignored
  original: {name: a, value: b}
  patch: {value: null, other: null}
  expected: {name: a}
- desc: nested maps merge
  original: {labels: {a: "1", b: "1"}}
  patch: {labels: {b: null, c: "3"}}
  expected: {labels: {a: "1", c: "3"}}
- desc: empty patch changes nothing
  original: {name: a, parts: [{name: x}]}
  patch: {}
  expected: {name: a, parts: [{name: x}]}
- desc: a list without merge strategy is replaced
  original: {plainInts: [1, 2], plain: [{name: x, value: "1"}, {name: y}]}
  patch: {plainInts: [2, 3], plain: [{name: x}]}
  expected: {plainInts: [2, 3], plain: [{name: x}]}
- desc: merge list of primitives is a union
  original: {ports: [1, 2]}
  patch: {ports: [2, 3]}
  expected: {ports: [1, 2, 3]}
- desc: merge list of primitives keeps the patch order for the values it names
  original: {ports: [1, 2, 3]}
  patch: {ports: [3, 1]}
  expected: {ports: [2, 3, 1]}
- desc: merge list of maps merges the element with the same key
  original: {parts: [{name: x, value: "1"}, {name: y, value: "2"}]}
  patch: {parts: [{name: y, value: "3", other: o}]}
  expected: {parts: [{name: x, value: "1"}, {name: y, value: "3", other: o}]}
- desc: new elements come before live-only elements (upstream prepends)
  original: {parts: [{name: x}, {name: y}]}
  patch: {parts: [{name: z, value: "1"}]}
  expected: {parts: [{name: z, value: "1"}, {name: x}, {name: y}]}
- desc: patch order wins, live-only elements stay ahead of what follows them
  original: {parts: [{name: "1"}, {name: "2", value: b}, {name: "3"}]}
  patch: {parts: [{name: "3", value: c}, {name: "1", value: a}]}
  expected: {parts: [{name: "2", value: b}, {name: "3", value: c}, {name: "1", value: a}]}
- desc: null inside a merge element deletes that field
  original: {parts: [{name: x, value: "1", other: o}]}
  patch: {parts: [{name: x, value: null}]}
  expected: {parts: [{name: x, other: o}]}
- desc: delete directive removes the element
  original: {parts: [{name: x}, {name: y, value: "2"}]}
  patch: {parts: [{name: x, $patch: delete}]}
  expected: {parts: [{name: y, value: "2"}]}
- desc: delete directive for an absent element is a no-op
  original: {parts: [{name: y}]}
  patch: {parts: [{name: x, $patch: delete}]}
  expected: {parts: [{name: y}]}
- desc: delete directive removes every duplicate
  original: {parts: [{name: "1"}, {name: "1"}, {name: "2", value: a}, {name: "3"}, {name: "3"}]}
  patch: {parts: [{name: "1", $patch: delete}, {name: "3", $patch: delete}]}
  expected: {parts: [{name: "2", value: a}]}
- desc: a patch element merges into the first of duplicate elements only
  original: {parts: [{name: x, value: "1"}, {name: x, value: "2"}]}
  patch: {parts: [{name: x, other: o}]}
  expected: {parts: [{name: x, value: "1", other: o}, {name: x, value: "2"}]}
- desc: replace directive as a list element replaces the list
  original: {parts: [{name: x, value: "1"}, {name: y}]}
  patch: {parts: [{name: z}, {$patch: replace}, {name: x}]}
  expected: {parts: [{name: z}, {name: x}]}
- desc: replace directive alone empties the list
  original: {parts: [{name: x}, {name: y}]}
  patch: {parts: [{$patch: replace}]}
  expected: {parts: []}
- desc: replace directive on a map replaces the map
  original: {spec: {name: x, value: "1"}}
  patch: {spec: {$patch: replace, other: o}}
  expected: {spec: {other: o}}
- desc: delete directive on a map leaves it empty
  original: {labels: {a: "1"}, name: n}
  patch: {labels: {$patch: delete}}
  expected: {labels: {}, name: n}
- desc: replace directive at the top replaces the object
  original: {name: a, value: b}
  patch: {$patch: replace, other: c}
  expected: {other: c}
- desc: deleteFromPrimitiveList removes values, all copies
  original: {ports: [1, 2, 3, 3, 4]}
  patch: {$deleteFromPrimitiveList/ports: [3]}
  expected: {ports: [1, 2, 4]}
- desc: deleteFromPrimitiveList on an absent list is a no-op
  original: {name: a}
  patch: {$deleteFromPrimitiveList/ports: [3]}
  expected: {name: a}
- desc: setElementOrder adds an element where the order says
  original: {parts: [{name: "1", other: a}, {name: "2", value: "2"}]}
  patch:
    $setElementOrder/parts: [{name: "3"}, {name: "1"}, {name: "2"}]
    parts: [{name: "3", value: "3"}]
  expected: {parts: [{name: "3", value: "3"}, {name: "1", other: a}, {name: "2", value: "2"}]}
- desc: setElementOrder with several new elements
  original: {parts: [{name: "1"}, {name: "2"}]}
  patch:
    $setElementOrder/parts: [{name: "4"}, {name: "1"}, {name: "2"}, {name: "3"}]
    parts: [{name: "4", value: "4"}, {name: "3", value: "3"}]
  expected: {parts: [{name: "4", value: "4"}, {name: "1"}, {name: "2"}, {name: "3", value: "3"}]}
- desc: setElementOrder alone reorders, live-only elements keep their live neighbours
  original: {parts: [{name: "1", other: a}, {name: "2"}, {name: "9"}, {name: "3"}, {name: "4"}]}
  patch:
    $setElementOrder/parts: [{name: "2"}, {name: "1"}, {name: "4"}, {name: "3"}]
  expected: {parts: [{name: "2"}, {name: "1", other: a}, {name: "9"}, {name: "4"}, {name: "3"}]}
- desc: setElementOrder with live-only elements at the end
  original: {parts: [{name: "1"}, {name: "3"}, {name: "4"}, {name: "2"}, {name: "9"}]}
  patch:
    $setElementOrder/parts: [{name: "4"}, {name: "2"}, {name: "3"}, {name: "1"}]
  expected: {parts: [{name: "4"}, {name: "2"}, {name: "3"}, {name: "1"}, {name: "9"}]}
- desc: setElementOrder with a deletion and an addition
  original: {parts: [{name: "1"}, {name: "2", other: b}, {name: "4", other: c}]}
  patch:
    $setElementOrder/parts: [{name: "2"}, {name: "3"}]
    parts: [{name: "3"}, {name: "1", $patch: delete}]
  expected: {parts: [{name: "2", other: b}, {name: "4", other: c}, {name: "3"}]}
- desc: setElementOrder with a deletion, an addition and an unknown live element
  original: {parts: [{name: "1", other: a}, {name: "4", other: c}]}
  patch:
    $setElementOrder/parts: [{name: "2"}, {name: "3"}]
    parts: [{name: "2"}, {name: "3"}, {name: "1", $patch: delete}]
  expected: {parts: [{name: "4", other: c}, {name: "2"}, {name: "3"}]}
- desc: setElementOrder keeps duplicates together at their first position
  original: {parts: [{name: "1"}, {name: "2", value: d1}, {name: "3"}, {name: "2", value: d2}, {name: "4"}]}
  patch:
    $setElementOrder/parts: [{name: "2"}, {name: "1"}, {name: "4"}, {name: "3"}, {name: "2"}]
  expected: {parts: [{name: "2", value: d1}, {name: "2", value: d2}, {name: "1"}, {name: "4"}, {name: "3"}]}
- desc: setElementOrder on primitives, with an addition
  original: {ports: [1, 4, 2]}
  patch:
    $setElementOrder/ports: [3, 1, 2]
    ports: [3]
  expected: {ports: [3, 1, 4, 2]}
- desc: setElementOrder on primitives, with additions and a deletion
  original: {ports: [1, 2, 3]}
  patch:
    $setElementOrder/ports: [4, 2, 1]
    ports: [4]
    $deleteFromPrimitiveList/ports: [3]
  expected: {ports: [4, 2, 1]}
- desc: setElementOrder on primitives with live-only values
  original: {ports: [1, 2, 7, 9, 8, 3, 4]}
  patch:
    $setElementOrder/ports: [2, 1, 4, 3]
  expected: {ports: [2, 1, 7, 9, 8, 4, 3]}
- desc: setElementOrder for a list the live object lacks
  original: {name: a}
  patch:
    $setElementOrder/parts: [{name: y}, {name: x}]
    parts: [{name: y}, {name: x}]
  expected: {name: a, parts: [{name: y}, {name: x}]}
- desc: nested merge list inside a merge list element
  original:
    parts:
      - {name: "1", other: a, parts: [{name: "1"}, {name: "2", value: "2", other: d}]}
      - {name: "2", other: b}
  patch:
    $setElementOrder/parts: [{name: "1"}, {name: "2"}]
    parts:
      - name: "1"
        $setElementOrder/parts: [{name: "2"}, {name: "1"}]
        parts: [{name: "1", value: "1"}]
  expected:
    parts:
      - {name: "1", other: a, parts: [{name: "2", value: "2", other: d}, {name: "1", value: "1"}]}
      - {name: "2", other: b}
- desc: one list deleted from and reordered, another only reordered
  original:
    parts: [{name: a, value: a}, {name: b, value: b}]
    plain: [{name: c}]
  patch:
    $setElementOrder/parts: [{name: b}]
    parts: [{$patch: delete, name: a}]
  expected:
    parts: [{name: b, value: b}]
    plain: [{name: c}]
- desc: retainKeys clears the keys it does not list
  original: {strategy: {name: type1, value: foo, other: x}}
  patch: {strategy: {$retainKeys: [name, other], name: type2, other: bar}}
  expected: {strategy: {name: type2, other: bar}}
- desc: retainKeys allows deleting with null
  original: {strategy: {name: foo, value: bar, other: a}}
  patch: {strategy: {$retainKeys: [name], value: null}}
  expected: {strategy: {name: foo}}
- desc: retainKeys with a nested merge list
  original: {strategy: {name: foo, ports: [1, 2, 3]}}
  patch:
    strategy:
      $setElementOrder/ports: [1, 2, 4]
      $retainKeys: [ports, name]
      ports: [4]
  expected: {strategy: {name: foo, ports: [1, 2, 4, 3]}}
- desc: without retainKeys a retainKeys field merges normally
  original: {strategy: {name: foo, value: a}}
  patch: {strategy: {value: b}}
  expected: {strategy: {name: foo, value: b}}
- desc: retainKeys inside a merge list element
  original: {retainedParts: [{name: bar}, {name: foo, value: old, other: x}]}
  patch:
    $setElementOrder/retainedParts: [{name: bar}, {name: foo}]
    retainedParts: [{$retainKeys: [name, value], name: foo, value: new}]
  expected: {retainedParts: [{name: bar}, {name: foo, value: new}]}
- desc: a field with replace strategy is replaced, not merged
  original: {template: {name: a, value: b}}
  patch: {template: {other: c}}
  expected: {template: {other: c}}
- desc: added values lose their nulls and directives
  original: {name: a}
  patch:
    spec:
      name: s
      value: null
      labels: {a: "1", b: null}
      parts: [{name: p, other: null}, {name: q, $patch: delete}]
      $setElementOrder/parts: [{name: p}]
  expected: {name: a, spec: {name: s, labels: {a: "1"}, parts: [{name: p}]}}
- desc: a new merge list element loses its nulls
  original: {parts: [{name: x}]}
  patch: {parts: [{name: y, value: null, other: o}]}
  expected: {parts: [{name: y, other: o}, {name: x}]}
- desc: a value of another type replaces the old one
  original: {spec: {name: a}, value: "1"}
  patch: {spec: [1], value: {a: b}}
  expected: {spec: [1], value: {a: b}}
- desc: unknown fields merge maps and replace lists
  original: {extra: {a: [1, 2], b: {c: d}}}
  patch: {extra: {a: [3], b: {e: f}}}
  expected: {extra: {a: [3], b: {c: d, e: f}}}
- desc: preserve-unknown-fields subtree is a plain JSON merge patch
  original: {config: {list: [{name: a, x: 1}], keep: 1, drop: 2}}
  patch: {config: {list: [{name: b}], drop: null, $patch: delete}}
  expected: {config: {list: [{name: b}], keep: 1, $patch: delete}}
- desc: empty merge lists stay empty
  original: {parts: []}
  patch: {parts: []}
  expected: {parts: []}
""")


@pytest.mark.parametrize("case", CASES, ids=[c["desc"] for c in CASES])
def test_strategic_merge_patch(case):
    assert strategic_merge_patch(case["original"], case["patch"], META) == case["expected"]


def test_list_order_is_part_of_the_result():
    got = strategic_merge_patch({"parts": [{"name": "x"}, {"name": "y"}]},
                                {"parts": [{"name": "z"}]}, META)
    assert [p["name"] for p in got["parts"]] == ["z", "x", "y"]


def test_empty_meta_replaces_lists_and_keeps_directives_working():
    original = {"parts": [{"name": "x", "value": "1"}], "labels": {"a": "1"}, "spec": {"k": "v"}}
    patch = {"parts": [{"name": "y"}], "labels": {"a": None, "b": "2"}, "spec": {"$patch": "replace", "n": 1}}
    assert strategic_merge_patch(original, patch, PatchMeta.empty()) == {
        "parts": [{"name": "y"}], "labels": {"b": "2"}, "spec": {"n": 1}}


def test_null_patch_changes_nothing():
    original = {"name": "a"}
    result = strategic_merge_patch(original, None, META)
    assert result == original and result is not original


def test_inputs_are_not_mutated_and_untouched_subtrees_are_shared():
    original = {
        "labels": {"a": "1"},
        "parts": [{"name": "x", "value": "1", "labels": {"k": "v"}}, {"name": "y"}],
        "spec": {"name": "s", "labels": {"deep": "1"}},
    }
    patch = {
        "$setElementOrder/parts": [{"name": "y"}, {"name": "x"}],
        "parts": [{"name": "y", "value": "2"}, {"name": "x", "value": None}],
        "labels": {"a": None},
    }
    before = orjson.dumps(original), orjson.dumps(patch)
    result = strategic_merge_patch(original, patch, META)
    assert (orjson.dumps(original), orjson.dumps(patch)) == before
    assert result["parts"] == [{"name": "y", "value": "2"}, {"name": "x", "labels": {"k": "v"}}]
    assert result["spec"] is original["spec"]
    assert result["parts"][1]["labels"] is original["parts"][0]["labels"]


# kubectl 1.36 apply of a Pod whose containers were reordered, an env var dropped and a label
# removed: the exact body kubectl sends (from reference/kubectl-protocol.md), annotations filled in.
POD_DEFINITIONS = {
    "#/components/schemas/io.k8s.api.core.v1.Container": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "env": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.EnvVar"}]},
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
        },
    },
    "#/components/schemas/io.k8s.api.core.v1.EnvVar": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
    },
    "#/components/schemas/io.k8s.api.core.v1.PodSpec": {
        "type": "object",
        "properties": {
            "containers": {"type": "array",
                           "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}]},
                           "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
                           "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            "restartPolicy": {"type": "string"},
        },
    },
    "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"},
                           "x-kubernetes-patch-strategy": "merge"},
        },
    },
}
POD = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
        "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]},
        "status": {"type": "object"},
    },
}
POD_META = PatchMeta.for_schema(POD, POD_DEFINITIONS.get)

LAST_APPLIED = ('{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"labels":{"tier":"x"},'
                '"name":"p","namespace":"default"},"spec":{"containers":[{"image":"busybox:2","name":"d"},'
                '{"env":[{"name":"B","value":"2"}],"image":"busybox:1","name":"c"}]}}\n')
KUBECTL_BODY = (
    '{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":'
    + orjson.dumps(LAST_APPLIED).decode()
    + '},"labels":{"app":null,"tier":"x"}},"spec":{"$setElementOrder/containers":[{"name":"d"},{"name":"c"}],'
    '"containers":[{"image":"busybox:2","name":"d"},{"$setElementOrder/env":[{"name":"B"}],'
    '"env":[{"name":"B","value":"2"},{"$patch":"delete","name":"A"}],"name":"c"}]}}'
).encode()

LIVE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                 "labels": {"app": "demo"},
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {
        "restartPolicy": "Always",
        "containers": [
            {"name": "c", "image": "busybox:1", "terminationMessagePath": "/dev/termination-log",
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}]},
            {"name": "d", "image": "busybox:1", "imagePullPolicy": "IfNotPresent"},
        ],
    },
    "status": {"phase": "Pending"},
}


def test_real_kubectl_apply_body():
    result = apply_patch(LIVE_POD, "application/strategic-merge-patch+json", KUBECTL_BODY, POD_META)
    assert result["metadata"] == {
        "name": "p", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
        "labels": {"tier": "x"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": LAST_APPLIED},
    }
    assert result["spec"] == {
        "restartPolicy": "Always",
        "containers": [
            {"name": "d", "image": "busybox:2", "imagePullPolicy": "IfNotPresent"},
            {"name": "c", "image": "busybox:1", "terminationMessagePath": "/dev/termination-log",
             "env": [{"name": "B", "value": "2"}]},
        ],
    }
    assert result["status"] is LIVE_POD["status"]
    assert LIVE_POD["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}]


def test_kubectl_patch_adding_a_finalizer_and_a_container_puts_them_first():
    patch = {"metadata": {"finalizers": ["example.com/x"]},
             "spec": {"containers": [{"name": "e", "image": "nginx"}]}}
    live = {**LIVE_POD, "metadata": {**LIVE_POD["metadata"], "finalizers": ["example.com/a"]}}
    result = strategic_merge_patch(live, patch, POD_META)
    assert result["metadata"]["finalizers"] == ["example.com/x", "example.com/a"]
    assert [c["name"] for c in result["spec"]["containers"]] == ["e", "c", "d"]


# -- errors --------------------------------------------------------------------------------

def _error(original, patch, meta=META) -> StatusError:
    with pytest.raises(StatusError) as info:
        strategic_merge_patch(original, patch, meta)
    return info.value


@pytest.mark.parametrize("original, patch, message", [
    pytest.param({"parts": [{"name": "x"}]}, {"parts": [{"value": "b"}]},
                 "map: map[value:b] does not contain declared merge key: name", id="missing merge key"),
    pytest.param({"parts": [{"name": "x"}]}, {"parts": [{"$patch": "delete", "value": 1}]},
                 "map: map[$patch:delete value:1] does not contain declared merge key: name",
                 id="delete directive without merge key"),
    pytest.param({"spec": {"name": "a"}}, {"spec": {"$patch": "bogus", "name": "b"}},
                 "unknown patch type: bogus in map: map[$patch:bogus name:b]", id="unknown map directive"),
    pytest.param({"name": "a"}, {"$patch": "garbage"},
                 "unknown patch type: garbage in map: map[$patch:garbage]", id="unknown directive at the top"),
    pytest.param({"spec": {"name": "a"}}, {"spec": {"$patch": "merge"}},
                 "unknown patch type: merge in map: map[$patch:merge]", id="merge directive in a map"),
    pytest.param({"parts": [{"name": "x"}]}, {"parts": [{"$patch": "merge"}]},
                 "merging lists cannot yet be specified in the patch", id="merge directive in a list"),
    pytest.param({"parts": [{"name": "x"}]}, {"parts": [{"$patch": "frob", "name": "x"}]},
                 "unknown patch type: frob in map: map[$patch:frob name:x]", id="unknown list directive"),
    pytest.param({"parts": [{"name": "1"}, {"name": "3"}, {"name": "2"}]},
                 {"$setElementOrder/parts": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
                  "parts": [{"name": "3", "value": "3"}, {"name": "1", "value": "1"}]},
                 "the order in patch list:\n[map[name:3 value:3] map[name:1 value:1]]\n doesn't match "
                 "$setElementOrder list:\n[map[name:1] map[name:2] map[name:3]]", id="order mismatch"),
    pytest.param({"ports": [1, 3, 2]}, {"$setElementOrder/ports": [1, 2, 3], "ports": [3, 1]},
                 "the order in patch list:\n[3 1]\n doesn't match $setElementOrder list:\n[1 2 3]",
                 id="primitive order mismatch"),
    pytest.param({"ports": [1, 2]}, {"ports": ["a"]},
                 "list element types are not identical: [[1 2] [a]]", id="mixed element types"),
    pytest.param({"ports": [1]}, {"$setElementOrder/ports": "x"},
                 "expected a []interface {}, but received a string", id="order list not a list"),
    pytest.param({"badStrategy": {"a": 1}}, {"badStrategy": {"a": 2}},
                 "unexpected patch strategy: [merge replace]", id="two strategies"),
])
def test_server_errors(original, patch, message):
    err = _error(original, patch)
    assert (err.code, err.reason, err.message) == (500, "", message)


@pytest.mark.parametrize("patch, message", [
    pytest.param({"strategy": {"$retainKeys": ["name"], "value": "v"}},
                 "invalid patch format of retainKeys", id="patch sets a key retainKeys does not list"),
    pytest.param({"strategy": {"$retainKeys": "name"}},
                 "invalid patch format of retainKeys", id="retainKeys not a list"),
    pytest.param({"$setElementOrder": []},
                 "invalid patch format of setElementOrder list", id="setElementOrder without field"),
    pytest.param({"$setElementOrderX/parts": []},
                 "invalid patch format of setElementOrder list", id="setElementOrder misspelt"),
    pytest.param({"$deleteFromPrimitiveList": [1]},
                 "invalid patch format of primitive list", id="deleteFromPrimitiveList without field"),
])
def test_bad_request_errors(patch, message):
    err = _error({"strategy": {"name": "n"}, "parts": [{"name": "x"}]}, patch)
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


def test_list_of_lists_is_unprocessable():
    err = _error({"ports": [[1]]}, {"ports": [[2]]})
    assert (err.code, err.reason, err.message) == (422, "Invalid", REJECTED_MESSAGE)


@pytest.mark.parametrize("patch, word", [([1], "array"), ("x", "string"), (3, "number")])
def test_patch_must_be_an_object(patch, word):
    err = _error({"name": "a"}, patch)
    assert (err.code, err.message) == (
        400, f"json: cannot unmarshal {word} into Go value of type map[string]interface {{}}")


# -- bounded work ------------------------------------------------------------------------------

# "Does not hang" bound for patches that take a few milliseconds; slack for a loaded machine.
PATCH_BOUND_SECONDS = 1.0


def _nested(depth: int, leaf, container: str = "map"):
    """`depth` containers nested inside one another around `leaf`."""
    value = leaf
    for _ in range(depth):
        value = {"a": value} if container == "map" else [value]
    return value


@pytest.mark.parametrize("depth, container, outcome", [
    pytest.param(MAX_PATCH_DEPTH, "map", "ok", id="deepest map patch accepted"),
    pytest.param(MAX_PATCH_DEPTH + 1, "map", "invalid character '{' exceeded max depth", id="one map deeper"),
    pytest.param(MAX_PATCH_DEPTH + 1, "list", "invalid character '[' exceeded max depth", id="one list deeper"),
    pytest.param(5000, "map", "invalid character '{' exceeded max depth", id="far deeper than recursion allows"),
])
def test_patch_depth_is_bounded_with_a_bad_request(depth, container, outcome):
    patch = {"spec": _nested(depth - 1, 1, container)}
    original = {"spec": _nested(depth - 1, 0, container)}
    try:
        strategic_merge_patch(original, patch, META)
        got = "ok"
    except StatusError as e:
        assert (e.code, e.reason) == (400, "BadRequest")
        got = e.message
    assert got == outcome


@pytest.mark.parametrize("live, deleted", [
    pytest.param(20000, 20000, id="every element deleted, one directive each"),
    pytest.param(40000, 1, id="forty thousand duplicates of one key, one directive"),
])
def test_delete_directives_take_linear_time(live, deleted):
    distinct = deleted > 1
    original = {"parts": [{"name": str(i) if distinct else "dup"} for i in range(live)]}
    patch = {"parts": [{"$patch": "delete", "name": str(i) if distinct else "dup"} for i in range(deleted)]}
    started = time.perf_counter()
    assert strategic_merge_patch(original, patch, META) == {"parts": []}
    assert time.perf_counter() - started < PATCH_BOUND_SECONDS
