"""CustomResourceDefinitions through the resource API: validation of the CRD, its conditions,
serving its versions, and custom objects (pruning, defaulting, schema and CEL validation,
status, printer columns, several versions, list-map apply, unserving)."""

from __future__ import annotations

import copy

import orjson
import pytest

from phalanx.api.apiextensions import schema as structural
from phalanx.apiserver import build_api
from phalanx.apiserver import tables
from phalanx.apiserver.customresources import forget_custom_schemas
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

CRD_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["cronSpec"],
            "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas",
                                          "message": "replicas must not exceed maxReplicas"}],
            "properties": {
                "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
                "image": {"type": "string", "default": "busybox"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "maxReplicas": {"type": "integer", "default": 5},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            },
        },
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                    "phase": {"type": "string"}}},
    },
}


def make_crd(name: str = "crontabs.stable.example.com", versions: list | None = None, **spec: object) -> dict:
    plural, _, group = name.partition(".")
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
                 "versions": versions or [{
                     "name": "v1", "served": True, "storage": True,
                     "schema": {"openAPIV3Schema": copy.deepcopy(CRD_SCHEMA)},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                              "statusReplicasPath": ".status.replicas"}},
                     "additionalPrinterColumns": [
                         {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                         {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                         {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                 }],
                 **spec},
    }


def crontab(name: str = "c1", **spec: object) -> dict:
    return {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name},
            "spec": {"cronSpec": "* * * * */5", **spec}}


@pytest.fixture(autouse=True)
def _forget_schemas():
    yield
    forget_custom_schemas()  # custom kinds' OpenAPI schemas are process-wide


@pytest.fixture
def api():
    a = build_api(MemoryStore(), FeatureGates())
    ns = a.resource("", "v1", "namespaces")
    a.create(ns, "", {"metadata": {"name": "default"}})
    return a


def crd_rt(api):
    return api.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def invalid_messages(excinfo) -> list[str]:
    st = excinfo.value.status()
    return [f"{c['field']}: {c['message']}" for c in st["details"]["causes"]]


def test_crd_is_established_and_its_resource_served(api):
    created = api.create(crd_rt(api), "", make_crd())
    conds = {c["type"]: (c["status"], c["reason"]) for c in created["status"]["conditions"]}
    assert conds == {"NamesAccepted": ("True", "NoConflicts"), "Established": ("True", "InitialNamesAccepted")}
    assert created["status"]["acceptedNames"]["listKind"] == "CronTabList"
    assert created["status"]["storedVersions"] == ["v1"]
    assert "customresourcecleanup.apiextensions.k8s.io" in created["metadata"]["finalizers"]
    rt = api.resource("stable.example.com", "v1", "crontabs")
    assert (rt.kind, rt.namespaced, rt.short_names, rt.subresources) == ("CronTab", True, ["ct"], ["status", "scale"])


def test_crd_validation_messages(api):
    bad = make_crd()
    bad["spec"]["versions"][0]["storage"] = False
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].pop("type")
    with pytest.raises(StatusError) as e:
        api.create(crd_rt(api), "", bad)
    msgs = invalid_messages(e)
    assert "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty " \
           "for specified object fields" in msgs
    assert any(m.startswith("spec.versions: Invalid value:") and
               m.endswith("must have exactly one version marked as storage version") for m in msgs)


def test_crd_name_must_be_plural_dot_group(api):
    bad = make_crd()
    bad["metadata"]["name"] = "wrong.stable.example.com"
    with pytest.raises(StatusError) as e:
        api.create(crd_rt(api), "", bad)
    assert invalid_messages(e) == ['metadata.name: Invalid value: "wrong.stable.example.com": '
                                   'must be spec.names.plural+"."+spec.group']


def test_crd_with_rule_that_does_not_compile_is_refused(api):
    bad = make_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas <="}]
    with pytest.raises(StatusError) as e:
        api.create(crd_rt(api), "", bad)
    (msg,) = invalid_messages(e)
    assert msg.startswith("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule:"
                          ' Invalid value: "self.replicas <=": compilation failed: ERROR: <input>:1:')


def test_conflicting_names_are_not_accepted(api):
    api.create(crd_rt(api), "", make_crd())
    other = make_crd("crontabs2.stable.example.com")
    other["spec"]["names"] = {"plural": "crontabs2", "kind": "CronTab2", "shortNames": ["ct"]}
    created = api.create(crd_rt(api), "", other)
    conds = {c["type"]: (c["status"], c["reason"]) for c in created["status"]["conditions"]}
    assert conds == {"NamesAccepted": ("False", "ShortNamesConflict"), "Established": ("False", "NotAccepted")}
    with pytest.raises(StatusError):
        api.resource("stable.example.com", "v1", "crontabs2")


def test_custom_object_defaults_prunes_and_validates(api):
    api.create(crd_rt(api), "", make_crd())
    rt = api.resource("stable.example.com", "v1", "crontabs")
    warnings: list[str] = []
    obj = api.create(rt, "default", crontab(unknown=1, free={"anything": {"goes": 1}}),
                     field_validation="Warn", warnings=warnings)
    assert warnings == ['unknown field "spec.unknown"']
    assert obj["spec"] == {"cronSpec": "* * * * */5", "image": "busybox", "replicas": 1, "maxReplicas": 5,
                           "free": {"anything": {"goes": 1}}}
    with pytest.raises(StatusError) as e:
        api.create(rt, "default", crontab("c2", unknown=1), field_validation="Strict")
    assert e.value.code == 400
    assert e.value.status()["message"] == ('CronTab in version "v1" cannot be handled as a CronTab: '
                                           'strict decoding error: unknown field "spec.unknown"')


def test_custom_object_schema_errors(api):
    api.create(crd_rt(api), "", make_crd())
    rt = api.resource("stable.example.com", "v1", "crontabs")
    bad = crontab(replicas="many", mode="medium")
    del bad["spec"]["cronSpec"]
    with pytest.raises(StatusError) as e:
        api.create(rt, "default", bad)
    assert e.value.code == 422
    assert invalid_messages(e) == [
        "spec.cronSpec: Required value",
        'spec.replicas: Invalid value: "many": spec.replicas in body must be of type integer: "string"',
        'spec.mode: Unsupported value: "medium": supported values: "fast", "slow"']
    assert e.value.status()["message"].startswith('CronTab.stable.example.com "c1" is invalid: ')
    with pytest.raises(StatusError) as e:
        api.create(rt, "default", crontab(replicas=11, cronSpec="bad"))
    assert invalid_messages(e) == [
        'spec.cronSpec: Invalid value: "bad": spec.cronSpec in body should match '
        "'^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"]


def test_cel_rule_with_self_and_old_self(api):
    crd = make_crd()
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["image"]["x-kubernetes-validations"] = [
        {"rule": "self == oldSelf", "message": "image is immutable"}]
    api.create(crd_rt(api), "", crd)
    rt = api.resource("stable.example.com", "v1", "crontabs")
    with pytest.raises(StatusError) as e:
        api.create(rt, "default", crontab(replicas=7, maxReplicas=6))
    assert invalid_messages(e) == ['spec: Invalid value: "object": replicas must not exceed maxReplicas']
    obj = api.create(rt, "default", crontab(image="nginx"))
    changed = copy.deepcopy(obj)
    changed["spec"]["image"] = "redis"
    with pytest.raises(StatusError) as e:
        api.update(rt, "default", "c1", changed)
    assert invalid_messages(e) == ['spec.image: Invalid value: "string": image is immutable']


def test_status_subresource_and_printer_columns(api):
    api.create(crd_rt(api), "", make_crd())
    rt = api.resource("stable.example.com", "v1", "crontabs")
    obj = api.create(rt, "default", {**crontab(replicas=3), "status": {"replicas": 9}})
    assert "status" not in obj
    new = copy.deepcopy(obj)
    new["status"] = {"replicas": 2, "phase": "Running"}
    new["spec"]["replicas"] = 5
    updated = api.update(rt, "default", "c1", new, subresource="status")
    assert updated["status"] == {"replicas": 2, "phase": "Running"} and updated["spec"]["replicas"] == 3
    t = tables.table(rt, [updated], api.ctx)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Spec", "Replicas", "Age"]
    assert t["rows"][0]["cells"][:3] == ["c1", "* * * * */5", 3]
    assert rt.strategy.scale_of(updated)["spec"]["replicas"] == 3
    assert rt.strategy.scale_of(updated)["status"]["replicas"] == 2


def test_server_side_apply_merges_list_map_entries(api):
    api.create(crd_rt(api), "", make_crd())
    rt = api.resource("stable.example.com", "v1", "crontabs")
    first = crontab(ports=[{"name": "http", "port": 80}])
    api.patch(rt, "default", "c1", "application/apply-patch+yaml", orjson.dumps(first), field_manager="a")
    second = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c1"},
              "spec": {"ports": [{"name": "metrics", "port": 9090}]}}
    obj, _ = api.patch(rt, "default", "c1", "application/apply-patch+yaml", orjson.dumps(second),
                       field_manager="b")
    assert obj["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]


def test_several_versions_convert_by_api_version(api):
    versions = [{"name": "v1beta1", "served": True, "storage": False,
                 "schema": {"openAPIV3Schema": copy.deepcopy(CRD_SCHEMA)}},
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": copy.deepcopy(CRD_SCHEMA)}},
                {"name": "v1alpha1", "served": False, "storage": False,
                 "schema": {"openAPIV3Schema": copy.deepcopy(CRD_SCHEMA)}}]
    api.create(crd_rt(api), "", make_crd(versions=versions))
    beta = api.resource("stable.example.com", "v1beta1", "crontabs")
    v1 = api.resource("stable.example.com", "v1", "crontabs")
    with pytest.raises(StatusError):
        api.resource("stable.example.com", "v1alpha1", "crontabs")
    created = api.create(beta, "default", {**crontab(), "apiVersion": "stable.example.com/v1beta1"})
    assert created["apiVersion"] == "stable.example.com/v1beta1"
    assert api.store.get(v1.key, "default", "c1")["apiVersion"] == "stable.example.com/v1"
    assert api.get(v1, "default", "c1")["apiVersion"] == "stable.example.com/v1"
    assert [o["apiVersion"] for o in api.list(beta, "default")["items"]] == ["stable.example.com/v1beta1"]


def test_deleted_crd_unserves_and_restart_reserves(api):
    created = api.create(crd_rt(api), "", make_crd())
    rt = api.resource("stable.example.com", "v1", "crontabs")
    api.create(rt, "default", crontab())
    # A restart: a new API over the same store serves the stored CRD's resource again.
    again = build_api(api.store, FeatureGates())
    assert again.get(again.resource("stable.example.com", "v1", "crontabs"), "default", "c1")["spec"]["replicas"] == 1
    # Without the cleanup controller, drop the finalizer by hand: the CRD goes, its resource with it.
    api.delete(crd_rt(api), "", created["metadata"]["name"])
    with pytest.raises(StatusError) as e:
        api.create(rt, "default", crontab("c2"))
    assert e.value.code == 405
    current = api.get(crd_rt(api), "", created["metadata"]["name"])
    current = copy.deepcopy(current)
    current["metadata"]["finalizers"] = []
    api.update(crd_rt(api), "", current["metadata"]["name"], current)
    with pytest.raises(StatusError):
        api.resource("stable.example.com", "v1", "crontabs")


def test_prune_default_and_validate_helpers():
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string", "default": "x"},
            "emb": {"type": "object", "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "n": {"type": "number", "maxLength": 2}}}}}
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
           "spec": {"b": 1, "a": None, "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "other": 1},
                    "tags": ["a", "a"], "n": 1.5}, "extra": True}
    assert structural.prune(obj, schema) == ["spec.b", "spec.emb.other", "extra"]
    structural.default(obj, schema)
    assert obj["spec"]["a"] == "x"
    assert obj["spec"]["emb"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {}}
    assert [e.message() for e in structural.validate(obj, schema)] == ['spec.tags[1]: Duplicate value: "a"']


def test_selectable_fields_are_field_selectors(api):
    crd = make_crd()
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.image"}]
    api.create(crd_rt(api), "", crd)
    rt = api.resource("stable.example.com", "v1", "crontabs")
    api.create(rt, "default", crontab("a", image="nginx"))
    api.create(rt, "default", crontab("b"))
    found = api.list(rt, "default", field_selector="spec.image=nginx")["items"]
    assert [o["metadata"]["name"] for o in found] == ["a"]
    with pytest.raises(StatusError) as e:
        api.list(rt, "default", field_selector="spec.cronSpec=x")
    assert e.value.status()["message"] == "field label not supported: spec.cronSpec"


def test_printer_cells_follow_column_types(api):
    crd = make_crd()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "Image", "type": "integer", "jsonPath": ".spec.image"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1}]
    api.create(crd_rt(api), "", crd)
    rt = api.resource("stable.example.com", "v1", "crontabs")
    obj = api.create(rt, "default", crontab(replicas=2))
    t = tables.table(rt, [obj], api.ctx)
    assert [(c["name"], c["type"], c["priority"]) for c in t["columnDefinitions"]] == [
        ("Name", "string", 0), ("Replicas", "integer", 0), ("Mode", "string", 0), ("Image", "integer", 0),
        ("Phase", "string", 1)]
    # A missing value and a value of another type than the column's are empty cells.
    assert t["rows"][0]["cells"] == ["c1", 2, None, None, None]


def test_crd_update_serves_its_new_names_and_schema(api):
    created = api.create(crd_rt(api), "", make_crd())
    changed = copy.deepcopy(created)
    changed["spec"]["names"]["shortNames"] = ["ct", "cts"]
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = {
        "type": "string"}
    updated = api.update(crd_rt(api), "", created["metadata"]["name"], changed)
    assert updated["status"]["acceptedNames"]["shortNames"] == ["ct", "cts"]
    assert created["status"]["acceptedNames"]["shortNames"] == ["ct"]  # the old object is left as it was
    rt = api.resource("stable.example.com", "v1", "crontabs")
    assert rt.short_names == ["ct", "cts"]
    assert api.create(rt, "default", crontab(extra="kept"))["spec"]["extra"] == "kept"
    scope = copy.deepcopy(updated)
    scope["spec"]["scope"] = "Cluster"
    with pytest.raises(StatusError) as e:
        api.update(crd_rt(api), "", created["metadata"]["name"], scope)
    assert invalid_messages(e) == ['spec.scope: Invalid value: "Cluster": field is immutable']


def test_printer_columns_are_validated(api):
    crd = make_crd()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Bad", "type": "string", "jsonPath": "spec.x"}, {"name": "Odd", "type": "object", "jsonPath": ".a"}]
    with pytest.raises(StatusError) as e:
        api.create(crd_rt(api), "", crd)
    assert invalid_messages(e) == [
        'spec.versions[0].additionalPrinterColumns[0].jsonPath: Invalid value: "spec.x": must be a simple json path '
        'starting with .',
        'spec.versions[0].additionalPrinterColumns[1].type: Unsupported value: "object": supported values: '
        '"integer", "number", "string", "boolean", "date"']


def test_conversion_and_preserve_unknown_fields_are_validated(api):
    crd = make_crd(conversion={"strategy": "Webhook"}, preserveUnknownFields=True)
    with pytest.raises(StatusError) as e:
        api.create(crd_rt(api), "", crd)
    assert invalid_messages(e) == [
        "spec.conversion.webhook: Required value: required when strategy is set to Webhook",
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
        "to true in spec.versions[*].schema instead"]


def test_a_crd_of_a_built_in_kind_leaves_the_built_in_serving(api):
    jobset = make_crd("jobsets.jobset.x-k8s.io")
    jobset["spec"]["names"] = {"plural": "jobsets", "kind": "JobSet"}
    jobset["spec"]["versions"][0]["name"] = "v1alpha2"
    created = api.create(crd_rt(api), "", jobset)
    assert any(c["type"] == "Established" and c["status"] == "True" for c in created["status"]["conditions"])
    rt = api.resource("jobset.x-k8s.io", "v1alpha2", "jobsets")
    assert type(rt.strategy).__name__ != "CustomResourceStrategy"
