"""Strict config reading: duplicate keys and malformed YAML name the place, every problem is reported."""

from __future__ import annotations

import pytest

from phalanx.machinery.strictyaml import ConfigFileError, DocumentReader, key_path, load_strict_yaml


@pytest.mark.parametrize("text, message", [
    ("a: 1\na: 2\n", 'c.yaml: line 2, column 1: invalid YAML: found duplicate key "a"'),
    ("a: [1\n", "c.yaml: line 2, column 1: invalid YAML: "),  # the wording is libyaml's or PyYAML's
    ("nodes:\n- role: x\n  role: y\n", 'c.yaml: line 3, column 3: invalid YAML: found duplicate key "role"'),
])
def test_malformed_yaml_names_line_and_column(text, message):
    with pytest.raises(ConfigFileError) as info:
        load_strict_yaml(text, "c.yaml")
    assert str(info.value).startswith(message)
    assert len(info.value.problems) == 1


def test_merge_keys_and_equal_values_under_different_keys_are_fine():
    assert load_strict_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "c.yaml") == \
        {"base": {"x": 1}, "other": {"x": 1, "y": 2}}


@pytest.mark.parametrize("parent, key, path", [
    ("", "name", "name"), ("featureGates", "GangScheduling", "featureGates.GangScheduling"),
    ("labels", "example.com/rack", "labels[example.com/rack]"), ("a", "b.c", "a[b.c]"),
])
def test_key_path(parent, key, path):
    assert key_path(parent, key) == path


def test_reader_reports_every_problem_at_once():
    reader = DocumentReader("c.yaml")
    doc = {"nodez": 1, "count": "3", "labels": {"bad key!": "v", "ok": "not valid!"}, "flags": [True, "no"]}
    reader.fields(doc, "", ("count", "labels", "flags"))
    assert not reader.expect(doc["count"], "count", "integer")
    assert reader.labels(doc["labels"], "labels") == {"bad key!": "v", "ok": "not valid!"}
    assert not reader.list_of(doc["flags"], "flags", "boolean")
    with pytest.raises(ConfigFileError) as info:
        reader.raise_problems()
    lines = str(info.value).splitlines()
    assert lines[0] == "c.yaml: nodez: unknown field; allowed: count, labels, flags"
    assert lines[1] == 'c.yaml: count: expected an integer, got string "3"'
    assert lines[2].startswith("c.yaml: labels[bad key!]: invalid label key: ")
    assert lines[3].startswith('c.yaml: labels.ok: invalid label value "not valid!": ')
    assert lines[4] == 'c.yaml: flags[1]: expected a boolean, got string "no"'
    assert len(lines) == 5


def test_a_reader_without_problems_does_not_raise():
    reader = DocumentReader("c.yaml")
    assert reader.string_map({"cpu": 8, "memory": "32Gi"}, "capacity") == {"cpu": "8", "memory": "32Gi"}
    reader.ignore("networking.podSubnet")
    reader.ignore("networking.podSubnet")
    reader.raise_problems()
    assert reader.ignored == ["networking.podSubnet"]
