"""Label and field selectors: any query text parses or fails with upstream's ValueError, at once;
a parsed selector's canonical string parses back to the same selector; matching never fails."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from phalanx.machinery.selectors import (
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
)

WORDS = ["in", "notin", "a", "b", "k", "app", "x.io/k", "1", "-1", "9223372036854775808", "v_1", ""]
label_selector_texts = st.one_of(
    st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(["=", "==", "!=", "!", ",", "(", ")", " ", ">", "<"])),
             max_size=14).map("".join),
    st.text("ak.=!(),<> in-_/09", max_size=30),
    st.text(max_size=20),
)
field_selector_texts = st.one_of(
    st.lists(st.sampled_from(["metadata.name", "spec.nodeName", "a", "=", "==", "!=", ",", "\\", "\\,", "\\=", "x"]),
             max_size=10).map("".join),
    st.text(max_size=20),
)
labels = st.dictionaries(st.sampled_from(["a", "b", "k", "app", "x.io/k"]),
                         st.sampled_from(["", "1", "-1", "a", "b", "v_1", "10"]), max_size=4)


@given(label_selector_texts, labels)
def test_label_selector_text_round_trips_or_fails_with_a_value_error(text, object_labels):
    try:
        selector = parse_label_selector(text)
    except ValueError:
        return
    canonical = str(selector)
    again = parse_label_selector(canonical)
    assert again == selector
    assert again.matches(object_labels) == selector.matches(object_labels)


@given(field_selector_texts, st.dictionaries(st.sampled_from(["metadata.name", "spec.nodeName", "a"]),
                                             st.text(max_size=3), max_size=3))
def test_field_selector_text_round_trips_or_fails_with_a_value_error(text, fields):
    try:
        selector = parse_field_selector(text)
    except ValueError:
        return
    again = parse_field_selector(str(selector))

    def normalised(s):  # "==" and "=" are one operator upstream
        return [(f, "!=" if op == "!=" else "=", v) for f, op, v in s.requirements]

    assert normalised(again) == normalised(selector)
    assert again.matches(fields.get) == selector.matches(fields.get)


selector_objects = st.fixed_dictionaries({}, optional={
    "matchLabels": st.dictionaries(st.sampled_from(WORDS), st.sampled_from(WORDS), max_size=3),
    "matchExpressions": st.lists(st.fixed_dictionaries(
        {"key": st.sampled_from(WORDS), "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", ""])},
        optional={"values": st.one_of(st.none(), st.lists(st.sampled_from(WORDS), max_size=3))}), max_size=3),
})


@given(selector_objects, labels)
def test_label_selector_objects_convert_or_fail_with_a_value_error(selector, object_labels):
    try:
        converted = label_selector_from_object(selector)
    except ValueError:
        return
    again = parse_label_selector(str(converted))
    assert again.matches(object_labels) == converted.matches(object_labels)

    def value_sets(s):  # an object's list may repeat a value; the query syntax reads a set (as upstream)
        return [(r.key, r.operator, sorted(set(r.values))) for r in s.requirements]

    assert value_sets(again) == value_sets(converted)
