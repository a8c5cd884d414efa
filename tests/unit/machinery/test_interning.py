"""Shared copies of equal JSON trees: equal values become one object, values never change."""

from __future__ import annotations

import copy
from fractions import Fraction

import orjson
from hypothesis import given, strategies as st

from phalanx.machinery.interning import EMPTY_FIELDS, json_to_keep, share_json, shared_fields, trimmed

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30)


@given(json_values)
def test_a_shared_value_equals_the_original(value):
    before = copy.deepcopy(value)
    assert share_json(value) == before
    assert value == before  # the argument is left as it was


def test_equal_parts_of_two_pods_are_one_object():
    a = share_json([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}])
    b = share_json([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}])
    c = share_json([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 30}])
    assert a is b and a is not c


def test_scalars_of_different_types_are_not_confused():
    assert share_json([1.0]) is not share_json([1]) and share_json([True]) is not share_json([1])
    assert str(share_json([0.0])) == "[0.0]" and str(share_json([-0.0])) == "[-0.0]"


def test_a_value_that_is_not_json_is_left_as_it_is():
    value = {"cpu": Fraction(1, 3)}
    assert share_json(value) is value


def test_fields_nodes_with_the_same_children_are_one_node():
    a = shared_fields({"f:image": EMPTY_FIELDS, ".": EMPTY_FIELDS})
    b = shared_fields({"f:image": EMPTY_FIELDS, ".": EMPTY_FIELDS})
    assert a is b and shared_fields({"f:name": EMPTY_FIELDS}) is not a


def test_kept_json_is_the_same_bytes():
    value = {"kind": "Pod", "metadata": {"name": "p"}}
    assert json_to_keep(value) == orjson.dumps(value) == trimmed(orjson.dumps(value))
    assert json_to_keep(value, option=orjson.OPT_SORT_KEYS) == b'{"kind":"Pod","metadata":{"name":"p"}}'
