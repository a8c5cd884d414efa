"""Structural schemas and CEL rules of custom resources, without an API server: defaulting,
pruning, value validations with upstream's messages, list types, and `x-kubernetes-validations`
(self, oldSelf, messageExpression, reason, fieldPath)."""

from __future__ import annotations

import pytest

from phalanx.api.apiextensions import celrules, jsonpath
from phalanx.api.apiextensions import schema as structural
from phalanx.api.apiextensions.crdvalidation import structural_errors


def obj(**spec: object) -> dict:
    return {"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "n"}, "spec": spec}


def messages(errs) -> list[str]:
    return [e.message() for e in errs]


def rules_schema(*rules: dict, **props: dict) -> dict:
    return {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": list(rules),
        "properties": props or {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}


@pytest.mark.parametrize("prop,value,message", [
    ({"type": "string", "maxLength": 3}, "abcd", "spec.v: Too long: may not be more than 3 bytes"),
    ({"type": "string", "minLength": 2}, "a", 'spec.v: Invalid value: "a": spec.v in body should be at least 2 chars long'),
    ({"type": "integer", "minimum": 2}, 1, "spec.v: Invalid value: 1: spec.v in body should be greater than or equal to 2"),
    ({"type": "integer", "minimum": 2, "exclusiveMinimum": True}, 2,
     "spec.v: Invalid value: 2: spec.v in body should be greater than 2"),
    ({"type": "integer", "multipleOf": 3}, 4, "spec.v: Invalid value: 4: spec.v in body should be a multiple of 3"),
    ({"type": "array", "maxItems": 1, "items": {"type": "string"}}, ["a", "b"],
     "spec.v: Too many: 2: must have at most 1 items"),
    ({"type": "array", "minItems": 2, "items": {"type": "string"}}, ["a"],
     "spec.v: Invalid value: 1: spec.v in body should have at least 2 items"),
    ({"type": "boolean"}, "yes", 'spec.v: Invalid value: "yes": spec.v in body must be of type boolean: "string"'),
    ({"x-kubernetes-int-or-string": True}, 1.5,
     "spec.v: Invalid value: 1.5: spec.v in body must be of type integer or string: \"number\""),
    ({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
      "items": {"type": "object", "properties": {"name": {"type": "string"}}}}, [{"name": "a"}, {"name": "a"}],
     'spec.v[1]: Duplicate value: map[string]interface {}{"name":"a"}'),
])
def test_value_validations(prop, value, message):
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"v": prop}}}}
    assert messages(structural.validate(obj(v=value), schema)) == [message]


def test_int_or_string_and_nullable_values_pass():
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": True}, "note": {"type": "string", "nullable": True}}}}}
    assert structural.validate(obj(port="http", note=None), schema) == []
    assert structural.validate(obj(port=8080), schema) == []


def test_defaults_fill_nested_objects_and_list_items():
    schema = {"type": "object", "properties": {"spec": {"type": "object", "default": {}, "properties": {
        "mode": {"type": "string", "default": "auto"},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "weight": {"type": "integer", "default": 1}}}}}}}}
    o = {"apiVersion": "x.io/v1", "kind": "X", "metadata": {}}
    structural.default(o, schema)
    assert o["spec"] == {"mode": "auto"}
    o = obj(items=[{}, {"weight": 5}])
    structural.default(o, schema)
    assert o["spec"]["items"] == [{"weight": 1}, {"weight": 5}]


def test_preserve_unknown_fields_keeps_everything_below():
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
              "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}
    o = obj(a="x", b=1)
    o["other"] = {"k": 1}
    assert structural.prune(o, schema) == ["spec.b"]
    assert o["other"] == {"k": 1}


def test_cel_rule_holds_or_reports_its_message():
    schema = rules_schema({"rule": "self.a <= self.b", "message": "a must not exceed b"})
    assert celrules.check(obj(a=1, b=2), schema) == []
    assert messages(celrules.check(obj(a=3, b=2), schema)) == ['spec: Invalid value: "object": a must not exceed b']


def test_cel_rule_without_message_and_with_message_expression():
    schema = rules_schema({"rule": "self.a > 0"},
                          {"rule": "self.b > 0", "messageExpression": "'b is ' + string(self.b)"})
    assert messages(celrules.check(obj(a=0, b=-1), schema)) == [
        'spec: Invalid value: "object": failed rule: self.a > 0', 'spec: Invalid value: "object": b is -1']


def test_cel_reason_and_field_path():
    schema = rules_schema({"rule": "has(self.a)", "reason": "FieldValueRequired", "fieldPath": ".a",
                           "message": "a is required here"})
    errs = celrules.check(obj(b=1), schema)
    assert [(e.type, e.field) for e in errs] == [("FieldValueRequired", "spec.a")]
    assert messages(errs) == ["spec.a: Required value: a is required here"]


def test_transition_rules_run_only_on_updates():
    schema = rules_schema({"rule": "self.a >= oldSelf.a", "message": "a may only grow"})
    assert celrules.check(obj(a=1), schema) == []  # a create: no oldSelf
    assert celrules.check(obj(a=2), schema, obj(a=1)) == []
    assert messages(celrules.check(obj(a=1), schema, obj(a=2))) == ['spec: Invalid value: "object": a may only grow']


def test_transition_rules_correlate_map_list_items_by_key():
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port",
                                                                  "message": "port is immutable"}],
                  "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}
    old = obj(ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}])
    new = obj(ports=[{"name": "b", "port": 2}, {"name": "a", "port": 3}, {"name": "c", "port": 4}])
    assert messages(celrules.check(new, schema, old)) == ['spec.ports[1]: Invalid value: "object": port is immutable']


def test_runtime_errors_name_the_rule():
    schema = rules_schema({"rule": "self.a == self.missing"})
    assert messages(celrules.check(obj(a=1), schema)) == [
        'spec: Invalid value: "object": no such key: missing evaluating rule: failed rule: self.a == self.missing']


def test_structural_schema_errors():
    schema = {"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        "spec": {"properties": {"x": {"type": "string"}}},
        "list": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
        "bad": {"type": "integer", "default": "one"}}}
    assert messages(structural_errors(schema, "s")) == [
        "s.properties[metadata]: Forbidden: must not specify anything other than name and generateName, "
        "but metadata is implicitly specified",
        "s.properties[spec].type: Required value: must not be empty for specified object fields",
        "s.properties[list].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type "
        "is map",
        's.properties[bad].default: Invalid value: "one": default in body must be of type integer: "string"']


@pytest.mark.parametrize("path,found", [
    (".spec.replicas", [3]),
    (".status.conditions[?(@.type==\"Ready\")].status", ["True"]),
    (".spec.items[*].name", ["a", "b"]),
    (".spec.items[-1].name", ["b"]),
    ("{.metadata.labels['app.kubernetes.io/name']}", ["web"]),
    (".spec.missing", []),
])
def test_printer_column_json_paths(path, found):
    o = {"metadata": {"labels": {"app.kubernetes.io/name": "web"}},
         "spec": {"replicas": 3, "items": [{"name": "a"}, {"name": "b"}]},
         "status": {"conditions": [{"type": "Scheduled", "status": "False"}, {"type": "Ready", "status": "True"}]}}
    assert jsonpath.find(o, path) == found


def test_rules_selecting_undeclared_fields_do_not_compile():
    schema = rules_schema({"rule": "self.a > 0 && self.nope == 1"})
    (err,) = celrules.compile_errors(schema, "s")
    assert err.field == "s.properties[spec].x-kubernetes-validations[0].rule"
    assert err.detail == ("compilation failed: ERROR: <input>:1:19: undefined field 'nope'\n"
                          " | self.a > 0 && self.nope == 1\n | ..................^")
    root = {"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('x')"}],
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                    "x-kubernetes-validations": [{"rule": "self.anything == 1"}]}}}
    assert celrules.compile_errors(root, "s") == []
