"""Server-side apply and managedFields, checked against structured-merge-diff's behaviour."""

import copy

import orjson
import pytest

from phalanx.machinery.apply import LAST_APPLIED_ANNOTATION, _zero_object, server_side_apply, update_managed_fields
from phalanx.machinery.apply.fieldsets import fields_to_set, set_to_fields, to_field_set
from phalanx.machinery.apply.merge import compare, merge
from phalanx.machinery.apply.values import path_string
from phalanx.machinery.errors import StatusError
from phalanx.machinery.patchmeta import PatchMeta

T0, T1, T2 = "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"

STR = {"type": "string"}
INT = {"type": "integer"}
STR_MAP = {"type": "object", "additionalProperties": STR}

DEFS = {
    "Container": {"type": "object", "properties": {
        "name": STR, "image": STR,
        "args": {"type": "array", "items": STR},
        "env": {"type": "array", "items": {"type": "object", "properties": {"name": STR, "value": STR}},
                "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                  "items": {"type": "object", "properties": {"containerPort": INT,
                                                             "protocol": {"type": "string", "default": "TCP"}}}},
        "resources": {"type": "object", "properties": {"limits": STR_MAP, "requests": STR_MAP}},
    }},
}

SCHEMA = {"type": "object", "properties": {
    "apiVersion": STR, "kind": STR,
    "metadata": {"type": "object", "properties": {
        "name": STR, "namespace": STR, "uid": STR, "resourceVersion": STR, "generation": INT,
        "labels": STR_MAP, "annotations": STR_MAP,
        "finalizers": {"type": "array", "items": STR, "x-kubernetes-list-type": "set"},
        "managedFields": {"type": "array", "items": {"type": "object"}},
    }},
    "spec": {"type": "object", "required": ["containers"], "properties": {
        "replicas": INT,
        "paused": {"type": "boolean"},
        "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                       "items": {"$ref": "#/defs/Container"}},
        "tolerations": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "object"}},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                     "properties": {"matchLabels": STR_MAP}},
        "nodeSelector": STR_MAP,
        "template": {"type": "object", "properties": {"labels": STR_MAP, "note": STR}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }},
    "status": {"type": "object", "properties": {"phase": STR, "ready": INT}},
}}


def _resolve(ref):
    return DEFS[ref.rsplit("/", 1)[1]]


META = PatchMeta.for_schema(SCHEMA, _resolve)


def cfg(spec=None, labels=None, **meta):
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns", **meta}}
    if labels is not None:
        obj["metadata"]["labels"] = labels
    if spec is not None:
        obj["spec"] = spec
    return obj


def apply(live, body, manager="kubectl", force=False, now=T0, **kw):
    return server_side_apply(live, body, manager, META, force, now, **kw)


def entries(obj):
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def fields(obj, manager="kubectl", operation="Apply"):
    return entries(obj)[(manager, operation)]["fieldsV1"]


def created(obj, uid="uid-1"):
    """What the store would hold after persisting `obj`."""
    out = copy.deepcopy(obj)
    out["metadata"]["uid"] = uid
    out["metadata"]["resourceVersion"] = "1"
    return out


# -- apply: create, managedFields shape --------------------------------------------------------

def test_apply_creates_the_object_with_an_apply_entry():
    body = cfg({"replicas": 2, "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]},
               labels={"app": "web"})
    obj = apply(None, body)
    assert obj["apiVersion"] == "example.com/v1" and obj["kind"] == "Widget"
    assert obj["spec"] == {"replicas": 2, "containers": [{"name": "c", "image": "nginx",
                                                          "ports": [{"containerPort": 80}]}]}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "example.com/v1", "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {'k:{"name":"c"}': {
                    "f:image": {}, "f:name": {},
                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {"f:containerPort": {}, ".": {}}},
                    ".": {}}},
                "f:replicas": {},
            },
        },
    }]


def test_identity_and_server_fields_are_never_owned():
    body = cfg({"replicas": 1}, resourceVersion="7", uid="x", generation=3)
    assert fields(apply(None, body)) == {"f:spec": {"f:replicas": {}}}


def test_status_is_not_tracked_on_the_main_resource_but_is_on_status():
    body = cfg({"replicas": 1})
    body["status"] = {"phase": "Running"}
    assert fields(apply(None, body)) == {"f:spec": {"f:replicas": {}}}
    on_status = apply(None, body, subresource="status")
    assert entries(on_status)[("kubectl", "Apply")]["subresource"] == "status"
    assert entries(on_status)[("kubectl", "Apply")]["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_empty_manager_name_is_unknown():
    assert ("unknown", "Apply") in entries(apply(None, cfg({"replicas": 1}), manager=""))


def test_yaml_body_is_accepted():
    body = b"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  replicas: 4\n"
    assert apply(None, body)["spec"]["replicas"] == 4


@pytest.mark.parametrize("body,message", [
    ({**cfg({"replicas": 1}), "kind": "Gadget"}, "invalid object type: example.com/v1, Kind=Gadget"),
    (cfg({"replicas": 1}, managedFields=[]), "metadata.managedFields must be nil"),
    (b"- a\n- b\n", "error decoding YAML: the body is not a JSON/YAML object"),
])
def test_bodies_the_api_server_refuses(body, message):
    with pytest.raises(StatusError) as e:
        apply(None, body, api_version="example.com/v1", kind="Widget")
    assert (e.value.code, e.value.reason, e.value.message) == (400, "BadRequest", message)


def test_duplicate_keys_in_the_body_fail():
    body = cfg({"containers": [{"name": "c"}, {"name": "c"}]})
    with pytest.raises(StatusError) as e:
        apply(None, body)
    assert e.value.code == 500
    assert e.value.message == ('failed to create typed patch object (ns/w; example.com/v1, Kind=Widget): '
                               '.spec.containers: duplicate entries for key [name="c"]')


def test_list_item_missing_its_key_fails():
    with pytest.raises(StatusError) as e:
        apply(None, cfg({"containers": [{"image": "x"}]}))
    assert e.value.message.endswith('.spec.containers: element 0: associative list with keys has an element '
                                    'that omits key field "name" (and doesn\'t have default value)')


# -- apply: merge semantics ---------------------------------------------------------------------

def test_map_lists_merge_by_key_and_keep_other_items():
    live = created(apply(None, cfg({"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}),
                         manager="one"))
    obj = apply(live, cfg({"containers": [{"name": "b", "image": "3"}, {"name": "c", "image": "4"}]}),
                manager="two", force=True)
    assert obj["spec"]["containers"] == [{"name": "a", "image": "1"}, {"name": "b", "image": "3"},
                                         {"name": "c", "image": "4"}]


@pytest.mark.parametrize("live,applied,expected", [
    (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),  # live order kept around the applied order
    (["a", "b"], ["c"], ["a", "b", "c"]),
    (["a"], ["b", "a", "c"], ["b", "a", "c"]),
    ([], ["x", "y"], ["x", "y"]),
])
def test_map_list_merge_order(live, applied, expected):
    meta = PatchMeta.for_schema({"type": "object", "properties": {"l": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": STR}}}}})
    merged = merge({"l": [{"k": k} for k in live]}, {"l": [{"k": k} for k in applied]}, meta)
    assert [i["k"] for i in merged["l"]] == expected


def test_set_lists_union_atomic_lists_and_maps_are_replaced():
    live = created(apply(None, cfg({"tolerations": [{"key": "a"}, {"key": "b"}],
                                   "selector": {"matchLabels": {"a": "1", "b": "2"}}},
                                   finalizers=["x", "y"]), manager="one"))
    obj = apply(live, cfg({"tolerations": [{"key": "c"}], "selector": {"matchLabels": {"c": "3"}}},
                          finalizers=["z", "x"]), manager="two", force=True)
    assert obj["metadata"]["finalizers"] == ["z", "x", "y"]
    assert obj["spec"]["tolerations"] == [{"key": "c"}]
    assert obj["spec"]["selector"] == {"matchLabels": {"c": "3"}}
    f = fields(obj, "two")
    assert f["f:metadata"] == {"f:finalizers": {'v:"x"': {}, 'v:"z"': {}}}
    assert f["f:spec"] == {"f:selector": {}, "f:tolerations": {}}


def test_patch_strategy_merge_lists_merge_by_merge_key():
    live = created(apply(None, cfg({"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}),
                         manager="one"))
    obj = apply(live, cfg({"containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]}), manager="two")
    assert obj["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]


def test_unknown_fields_merge_as_maps_with_atomic_lists():
    live = created(apply(None, cfg({"extra": {"a": {"x": 1}, "l": [1, 2]}}), manager="one"))
    obj = apply(live, cfg({"extra": {"a": {"y": 2}, "l": [3]}}), manager="two", force=True)
    assert obj["spec"]["extra"] == {"a": {"x": 1, "y": 2}, "l": [3]}
    assert fields(obj, "two")["f:spec"]["f:extra"] == {
        "f:a": {"f:y": {}, ".": {}}, "f:l": {}}


# -- apply: ownership, pruning, conflicts --------------------------------------------------------

def test_fields_no_longer_applied_are_removed():
    live = created(apply(None, cfg({"replicas": 1, "containers": [{"name": "a"}, {"name": "b", "image": "x"}]},
                                   labels={"app": "web", "tier": "fe"})))
    obj = apply(live, cfg({"containers": [{"name": "a"}]}, labels={"app": "web"}), now=T1)
    assert obj["spec"] == {"containers": [{"name": "a"}]}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert fields(obj) == {"f:metadata": {"f:labels": {"f:app": {}}},
                           "f:spec": {"f:containers": {'k:{"name":"a"}': {"f:name": {}, ".": {}}}}}
    assert entries(obj)[("kubectl", "Apply")]["time"] == T1


def test_removing_a_struct_removes_its_fields():
    live = created(apply(None, cfg({"template": {"labels": {"a": "1"}, "note": "n"}, "replicas": 1})))
    obj = apply(live, cfg({"replicas": 1}), now=T1)
    assert "template" not in obj["spec"]


def test_fields_another_manager_owns_are_kept():
    live = created(apply(None, cfg({"replicas": 1}, labels={"app": "web", "tier": "fe"})))
    live = created(apply(live, cfg(labels={"tier": "fe"}), manager="other", now=T1))
    obj = apply(live, cfg({"replicas": 1}, labels={"app": "web"}), now=T2)
    assert obj["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert fields(obj, "other") == {"f:metadata": {"f:labels": {"f:tier": {}}}}


def test_fields_an_updater_owns_are_kept_when_the_applier_drops_them():
    live = created(apply(None, cfg({"replicas": 1, "paused": True})))
    edited = copy.deepcopy(live)
    edited["spec"]["paused"] = False
    live = created(update_managed_fields(live, edited, "kubectl-edit", meta=META, now=T1))
    obj = apply(live, cfg({"replicas": 1}), now=T2)
    assert obj["spec"]["paused"] is False


def test_conflict_with_an_updater():
    obj = cfg({"replicas": 3, "containers": [{"name": "c", "image": "nginx"}]})
    live = created(update_managed_fields(None, obj, "kubectl-client-side-apply", meta=META, now=T0))
    with pytest.raises(StatusError) as e:
        apply(live, cfg({"replicas": 5}), now=T1)
    err = e.value
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                           'using example.com/v1: .spec.replicas')
    assert err.details == {"causes": [{"reason": "FieldManagerConflict",
                                       "message": 'conflict with "kubectl-client-side-apply" using example.com/v1',
                                       "field": ".spec.replicas"}]}
    assert err.status()["details"]["causes"][0]["field"] == ".spec.replicas"


def test_several_conflicts_are_listed_per_manager():
    live = created(apply(None, cfg({"replicas": 1, "containers": [{"name": "c", "image": "a"}]}), manager="ci"))
    live = created(apply(live, cfg(labels={"x": "1"}), manager="bot", now=T1))
    with pytest.raises(StatusError) as e:
        apply(live, cfg({"replicas": 2, "containers": [{"name": "c", "image": "b"}]}, labels={"x": "2"}), now=T2)
    assert e.value.message == (
        'Apply failed with 3 conflicts: conflicts with "bot":\n- .metadata.labels.x\n'
        'conflicts with "ci":\n- .spec.replicas\n- .spec.containers[name="c"].image')
    assert [c["field"] for c in e.value.details["causes"]] == [
        ".metadata.labels.x", ".spec.replicas", '.spec.containers[name="c"].image']
    assert e.value.details["causes"][0]["message"] == 'conflict with "bot"'


def test_same_value_is_shared_not_a_conflict():
    live = created(apply(None, cfg({"replicas": 3}), manager="one"))
    obj = apply(live, cfg({"replicas": 3}), manager="two", now=T1)
    assert fields(obj, "one") == fields(obj, "two") == {"f:spec": {"f:replicas": {}}}


def test_force_takes_ownership():
    live = created(apply(None, cfg({"replicas": 3, "paused": True}), manager="one"))
    obj = apply(live, cfg({"replicas": 5}), manager="two", force=True, now=T1)
    assert obj["spec"] == {"replicas": 5, "paused": True}
    assert fields(obj, "one") == {"f:spec": {"f:paused": {}}}
    assert fields(obj, "two") == {"f:spec": {"f:replicas": {}}}


def test_a_manager_left_without_fields_disappears():
    live = created(apply(None, cfg({"replicas": 3}), manager="one"))
    obj = apply(live, cfg({"replicas": 5}), manager="two", force=True, now=T1)
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["two"]


def test_noop_apply_keeps_the_timestamp():
    live = created(apply(None, cfg({"replicas": 3})))
    obj = apply(live, cfg({"replicas": 3}), now=T1)
    assert entries(obj)[("kubectl", "Apply")]["time"] == T0
    assert obj["spec"] == {"replicas": 3}


def test_client_side_apply_upgrade_for_kubectl():
    obj = cfg({"replicas": 3})
    obj["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: orjson.dumps(cfg({"replicas": 3})).decode() + "\n"}
    live = created(update_managed_fields(None, obj, "kubectl-client-side-apply", meta=META, now=T0))
    # kubectl may take over what its own last-applied configuration set...
    out = apply(live, cfg({"replicas": 4}), manager="kubectl", now=T1)
    assert out["spec"]["replicas"] == 4
    assert orjson.loads(out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]) == cfg({"replicas": 4})
    assert out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].endswith("\n")
    # ...another field manager may not.
    with pytest.raises(StatusError):
        apply(live, cfg({"replicas": 4}), manager="my-tool", now=T1)


def test_first_apply_to_an_untracked_object_records_existing_fields():
    live = created(cfg({"replicas": 1, "paused": True}))  # created before field tracking
    obj = apply(live, cfg({"replicas": 1}), now=T1)
    assert fields(obj, "before-first-apply", "Update") == {"f:spec": {"f:paused": {}, "f:replicas": {}}}
    with pytest.raises(StatusError) as e:
        apply(live, cfg({"replicas": 2}), now=T1)
    assert '"before-first-apply" using example.com/v1' in e.value.message


# -- update_managed_fields -----------------------------------------------------------------------

def test_update_records_changed_fields_and_takes_them_from_others():
    live = created(apply(None, cfg({"replicas": 1, "paused": False}, labels={"app": "web"})))
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 5
    new["metadata"]["labels"]["extra"] = "1"
    out = update_managed_fields(live, new, "kubectl-scale", meta=META, now=T1)
    assert fields(out, "kubectl-scale", "Update") == {
        "f:metadata": {"f:labels": {"f:extra": {}}}, "f:spec": {"f:replicas": {}}}
    assert fields(out) == {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:paused": {}}}
    assert entries(out)[("kubectl-scale", "Update")]["time"] == T1
    assert [e["operation"] for e in out["metadata"]["managedFields"]] == ["Apply", "Update"]
    with pytest.raises(StatusError):
        apply(created(out), cfg({"replicas": 1, "paused": False}, labels={"app": "web"}), now=T2)


def test_update_of_an_unchanged_object_changes_nothing():
    live = created(update_managed_fields(None, cfg({"replicas": 1}), "creator", meta=META, now=T0))
    out = update_managed_fields(live, copy.deepcopy(live), "someone", meta=META, now=T1)
    assert out["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_update_accumulates_per_manager_and_removed_fields_are_forgotten():
    live = created(update_managed_fields(None, cfg({"replicas": 1, "paused": True}), "a", meta=META, now=T0))
    new = copy.deepcopy(live)
    del new["spec"]["paused"]
    new["spec"]["nodeSelector"] = {"zone": "z"}
    out = update_managed_fields(live, new, "a", meta=META, now=T1)
    assert fields(out, "a", "Update") == {"f:spec": {"f:nodeSelector": {"f:zone": {}, ".": {}}, "f:replicas": {}}}
    assert entries(out)[("a", "Update")]["time"] == T1


def test_existing_objects_without_managed_fields_are_not_tracked_until_applied():
    live = created(cfg({"replicas": 1}))
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 2
    assert "managedFields" not in update_managed_fields(live, new, "x", meta=META, now=T1)["metadata"]


def test_sending_an_empty_list_resets_managed_fields():
    live = created(apply(None, cfg({"replicas": 1})))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = []
    new["spec"]["replicas"] = 2
    # Upstream drops them all; the object is untracked again until its next apply.
    assert "managedFields" not in update_managed_fields(live, new, "editor", meta=META, now=T1)["metadata"]
    created_fresh = update_managed_fields(None, {**cfg({"replicas": 1}), "metadata": {"name": "w", "managedFields": []}},
                                          "creator", meta=META, now=T1)
    assert [e["manager"] for e in created_fresh["metadata"]["managedFields"]] == ["creator"]


def test_managed_fields_sent_with_an_update_are_used():
    live = created(apply(None, cfg({"replicas": 1})))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"][0]["manager"] = "renamed"
    out = update_managed_fields(live, new, "editor", meta=META, now=T1)
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["renamed"]


def test_update_entries_are_per_api_version_and_capped_at_ten():
    live = created(update_managed_fields(None, cfg({"replicas": 0}), "m0", meta=META, now=T0))
    for i in range(1, 13):
        new = copy.deepcopy(live)
        new["metadata"].setdefault("labels", {})[f"l{i}"] = "x"
        live = created(update_managed_fields(live, new, f"m{i}", meta=META, now=f"2025-01-01T00:00:{i:02d}Z"))
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert "ancient-changes" in managers and "m12" in managers and "m1" not in managers


# -- field sets and their encoding --------------------------------------------------------------

def test_fields_v1_round_trip_and_element_order():
    encoded = {
        "f:a": {},
        "f:l": {'k:{"name":"x","port":80}': {".": {}, "f:port": {}}, 'k:{"name":"a","port":1}': {}},
        "f:s": {'v:"b"': {}, "v:2": {}, "v:true": {}},
        "f:t": {"i:1": {}, "i:0": {}},
        "f:m": {".": {}, "f:z": {}},
    }
    paths = fields_to_set(encoded)
    assert (("f", "l"), ("k", (("name", ("s", "x")), ("port", ("n", 80))))) in paths
    assert (("f", "m"),) in paths and (("f", "l"),) not in paths
    assert set_to_fields(paths) == encoded
    assert list(set_to_fields(paths)) == ["f:a", "f:l", "f:m", "f:s", "f:t"]
    assert list(set_to_fields(paths)["f:l"]) == ['k:{"name":"a","port":1}', 'k:{"name":"x","port":80}']
    assert list(set_to_fields(paths)["f:s"]) == ["v:2", 'v:"b"', "v:true"]
    assert list(set_to_fields(paths)["f:m"]) == ["f:z", "."]


def test_field_set_of_an_object():
    obj = {"spec": {"replicas": 1, "nodeSelector": {"a": "b"}, "template": {}, "containers": [{"name": "c"}]}}
    assert set_to_fields(to_field_set(obj, META)) == {"f:spec": {
        "f:containers": {'k:{"name":"c"}': {".": {}, "f:name": {}}},
        "f:nodeSelector": {"f:a": {}}, "f:replicas": {}, "f:template": {}}}


def test_compare_and_path_strings():
    c = compare({"spec": {"replicas": 1, "paused": True}}, {"spec": {"replicas": 2, "containers": [{"name": "c"}]}},
                META)
    assert {path_string(p) for p in c.modified} == {".spec.replicas"}
    assert {path_string(p) for p in c.removed} == {".spec.paused"}
    assert {path_string(p) for p in c.added} == {".spec.containers", '.spec.containers[name="c"]',
                                                  '.spec.containers[name="c"].name'}


def test_update_managed_fields_writes_into_new_and_leaves_old_alone():
    old = created(apply(None, cfg({"replicas": 1})))
    snapshot = copy.deepcopy(old)
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 2
    returned = update_managed_fields(old, new, "scaler", meta=META, now=T1)
    assert returned is new and ("scaler", "Update") in entries(new)
    assert old == snapshot


def test_apply_leaves_the_live_object_alone():
    live = created(apply(None, cfg({"replicas": 1})))
    snapshot = copy.deepcopy(live)
    apply(live, cfg({"replicas": 2}), now=T1)
    assert live == snapshot


@pytest.mark.parametrize("obj", [
    {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1}},
    {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "b", "labels": {"x": "2", "y": "3"}}, "spec": {}},
    {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "c"}, "spec": {"replicas": "one"}},
    {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "d"}, "spec": {"replicas": None}},
    {"apiVersion": "v2", "kind": "Thing", "metadata": {"name": "e", "labels": {"x": "1"}}, "spec": {"replicas": 2}},
])
def test_creates_of_one_shape_share_entries_and_match_a_fresh_computation(obj):
    # The create path memoizes managedFields by the object's shape: a second object of the same
    # shape (other names, other values) gets what a full computation gives it, with its own time.
    first = update_managed_fields(None, copy.deepcopy(obj), "m", meta=META, now=T0)
    twin = copy.deepcopy(obj)
    twin["metadata"]["name"] += "-twin"
    for k in (twin["metadata"].get("labels") or {}):
        twin["metadata"]["labels"][k] += "0"
    memo = update_managed_fields(None, copy.deepcopy(twin), "m", meta=META, now=T1)
    fresh = update_managed_fields(None, copy.deepcopy(twin), "m", meta=META, now=T1,
                                  empty_object=_zero_object(META, None))
    assert memo["metadata"].get("managedFields") == fresh["metadata"].get("managedFields")
    if first["metadata"].get("managedFields"):
        assert memo["metadata"]["managedFields"][0]["time"] == T1
        assert first["metadata"]["managedFields"][0]["time"] == T0


def test_creates_that_differ_by_a_generated_list_name_share_an_entry_with_their_own_names():
    # Pods differ in the ServiceAccount admission's `kube-api-access-<5 random>` volume, a list key
    # that appears in the field set: each still gets exactly what a full computation gives it.
    def thing(name, generated):
        return {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": name},
                "spec": {"replicas": 1, "containers": [{"name": "app"}, {"name": generated}]}}
    first = update_managed_fields(None, thing("a", "kube-api-access-bcdfg"), "gen", meta=META, now=T0)
    assert 'k:{"name":"kube-api-access-bcdfg"}' in first["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"][
        "f:containers"]
    for name, generated in (("b", "kube-api-access-xz245"), ("c", "kube-api-access-bcdfg")):
        memo = update_managed_fields(None, thing(name, generated), "gen", meta=META, now=T1)
        fresh = update_managed_fields(None, thing(name, generated), "gen", meta=META, now=T1,
                                      empty_object=_zero_object(META, None))
        assert memo["metadata"]["managedFields"] == fresh["metadata"]["managedFields"]
        assert f'k:{{"name":"{generated}"}}' in memo["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"][
            "f:containers"]
