"""intern_tree: equal subtrees become one shared object; values never change."""

from __future__ import annotations

import copy

from hypothesis import given, strategies as st

from phalanx.machinery.interning import intern_tree

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30)


@given(json_values)
def test_an_interned_tree_equals_the_original(value):
    before = copy.deepcopy(value)
    assert intern_tree(value) == before
    assert value == before  # the argument is left as it was


def test_equal_subtrees_of_two_objects_are_one_object():
    a = intern_tree({"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}, ".": {}}}},
                     "f:status": {"f:podIP": {}}})
    b = intern_tree({"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}, ".": {}}}},
                     "f:status": {"f:hostIP": {}}})
    assert a["f:spec"] is b["f:spec"]
    assert a["f:status"] is not b["f:status"]
    assert a["f:status"]["f:podIP"] is b["f:status"]["f:hostIP"]  # the one empty leaf


def test_scalars_of_different_types_are_not_confused():
    assert intern_tree({"a": 1})["a"] is 1 and type(intern_tree({"a": True})["a"]) is bool
    assert intern_tree([1.0]) is not intern_tree([1])
    assert str(intern_tree([0.0])) == "[0.0]" and str(intern_tree([-0.0])) == "[-0.0]"
