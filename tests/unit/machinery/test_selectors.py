"""Label selectors, field selectors and node selector terms, as kube-apiserver parses them."""

import time

import pytest

from phalanx.machinery.selectors import (
    LabelSelector,
    compile_node_selector_term,
    escape_field_value,
    label_selector_from_object,
    node_selector_matches,
    node_selector_term_matches,
    parse_field_selector,
    parse_label_selector,
)

KEY_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
           "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
           "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
             "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize("text,canonical", [
    ("x=a,y=b,z=c", "x=a,y=b,z=c"),
    ("z=c,x=a", "x=a,z=c"),  # requirements sorted by key
    ("x==a", "x==a"),
    ("x!=a,y=b", "x!=a,y=b"),
    ("x=,z= ", "x=,z="),
    ("x= ,z= ", "x=,z="),
    ("  x  =  a  ", "x=a"),
    ("!x", "!x"),
    ("x", "x"),
    ("x>1", "x>1"),
    ("x<1", "x<1"),
    ("x in (b,a)", "x in (a,b)"),
    ("x notin (a)", "x notin (a)"),
    ("x in ()", "x in ()"),
    ("x in (a,)", "x in (,a)"),
    ("x in (,a)", "x in (,a)"),
    ("x in (a,,b)", "x in (,a,b)"),
    ("x in (a,a)", "x in (a)"),
    ("in in (in),notin notin (notin)", "in in (in),notin notin (notin)"),
    ("example.com/app=web,!example.com/canary", "example.com/app=web,!example.com/canary"),
    ("", ""),
    ("x=a\x00,garbage(", "x=a"),  # upstream's lexer stops at NUL
])
def test_parse_and_canonical_string(text, canonical):
    assert str(parse_label_selector(text)) == canonical


@pytest.mark.parametrize("text,message", [
    ("x=a||y=b", f"unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_MSG}"),
    ("x==a==b", "found '==', expected: ',' or 'end of string'"),
    ("x=a b", "found 'b', expected: ',' or 'end of string'"),
    ("!x=a", "found '=', expected: ',' or 'end of string'"),
    ("a=b,", "found '', expected: identifier after ','"),
    ("x,,y", "found ',', expected: identifier after ','"),
    ("(", "found '(', expected: !, identifier, or 'end of string'"),
    ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
    ("x in a", "unable to parse requirement: found 'a' expected: '('"),
    ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
    ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
    ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
    ("x=(", "unable to parse requirement: found '(', expected: identifier"),
    ("!!x", "unable to parse requirement: found '!', expected: identifier"),
    ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": "
            "for 'Gt', 'Lt' operators, the value must be an integer"),
    ("-x", f"unable to parse requirement: : Invalid value: \"-x\": {KEY_MSG}"),
    ("x=-a", f"unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE_MSG}"),
    ("x in (-a,-b)", f"unable to parse requirement: [values[0][x]: Invalid value: \"-a\": {VALUE_MSG}, "
                     f"values[1][x]: Invalid value: \"-b\": {VALUE_MSG}]"),
    ("x=" + "a" * 64, f"unable to parse requirement: values[0][x]: Invalid value: \"{'a' * 64}\": "
                      "must be no more than 63 characters"),
])
def test_parse_errors_carry_upstream_messages(text, message):
    with pytest.raises(ValueError) as e:
        parse_label_selector(text)
    assert str(e.value) == message


LABELS = {"app": "web", "tier": "frontend", "gen": "3", "empty": ""}


@pytest.mark.parametrize("text,matches", [
    ("", True),
    ("app=web", True), ("app==web", True), ("app=db", False), ("missing=x", False),
    ("app!=db", True), ("app!=web", False), ("missing!=x", True),
    ("tier in (frontend,backend)", True), ("tier in (backend)", False), ("missing in (x)", False),
    ("tier notin (backend)", True), ("tier notin (frontend)", False), ("missing notin (x)", True),
    ("app", True), ("missing", False), ("!missing", True), ("!app", False),
    ("gen>2", True), ("gen>3", False), ("gen<4", True), ("gen<3", False), ("app>1", False), ("missing>1", False),
    ("empty=", True), ("empty in ()", True), ("app=web,tier=frontend", True), ("app=web,tier=backend", False),
])
def test_matches(text, matches):
    assert parse_label_selector(text).matches(LABELS) is matches


def test_empty_and_nothing():
    assert parse_label_selector("").empty
    assert parse_label_selector("").matches(None)
    assert not parse_label_selector("a=b").empty
    nothing = LabelSelector.nothing()
    assert not nothing.empty and not nothing.matches({}) and str(nothing) == ""


@pytest.mark.parametrize("text,equality", [
    ("", {}), ("a=b", {"a": "b"}), ("a=b,c==d", {"a": "b", "c": "d"}), ("a in (b)", {"a": "b"}),
    ("a in (b,c)", None), ("a!=b", None), ("a", None), ("!a", None), ("a=b,c", None), ("a=b,a=c", None),
])
def test_equality_requirements_for_indexing(text, equality):
    assert parse_label_selector(text).equality_requirements() == equality


def test_requires_exact_match():
    sel = parse_label_selector("a=b,c in (d,e),f in (g)")
    assert sel.requires_exact_match("a") == "b"
    assert sel.requires_exact_match("c") is None
    assert sel.requires_exact_match("f") == "g"
    assert sel.requires_exact_match("z") is None


def test_parsed_selectors_are_shared_and_comparable():
    assert parse_label_selector("b=1,a=2") == parse_label_selector("a=2,b=1")
    assert parse_label_selector("a=1") is parse_label_selector("a=1")


@pytest.mark.parametrize("obj,canonical", [
    ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
    ({"matchExpressions": [{"key": "x", "operator": "In", "values": ["b", "a"]}]}, "x in (a,b)"),
    ({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["a"]}]}, "x notin (a)"),
    ({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, "x"),
    ({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, "!x"),
    ({"matchLabels": {"z": "1"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]}, "a,z=1"),
])
def test_label_selector_from_object(obj, canonical):
    assert str(label_selector_from_object(obj)) == canonical


def test_label_selector_object_nil_selects_nothing_empty_selects_everything():
    assert not label_selector_from_object(None).matches({"a": "b"})
    assert label_selector_from_object({}).matches({"a": "b"})
    assert label_selector_from_object({"matchLabels": {}, "matchExpressions": []}).empty


@pytest.mark.parametrize("obj,message", [
    ({"matchExpressions": [{"key": "x", "operator": "Seriously"}]},
     '"Seriously" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "x", "operator": "In", "values": []}]},
     "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["a"]}]},
     'values: Invalid value: []string{"a"}: values set must be empty for exists and does not exist'),
    ({"matchLabels": {"-a": "b"}}, f'key: Invalid value: "-a": {KEY_MSG}'),
    ({"matchLabels": {"a": "-b"}}, f'values[0][a]: Invalid value: "-b": {VALUE_MSG}'),
])
def test_label_selector_object_errors(obj, message):
    with pytest.raises(ValueError) as e:
        label_selector_from_object(obj)
    assert str(e.value) == message


def _node(name="n1", **labels):
    return {"metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize("term,node,matches", [
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}, _node(zone="a"), True),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}, _node(zone="a"), False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}]}, _node(), True),
    ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, _node(gpu="x"), True),
    ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, _node(gpu="x"), False),
    ({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}, _node(cores="16"), True),
    ({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["8"]}]}, _node(cores="16"), False),
    ({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}, _node(cores="many"), False),
    ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, _node("n1"), True),
    ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}, _node("n1"), False),
    ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}, _node("n1"), True),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
      "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}, _node("n1", zone="a"), False),
    ({}, _node(), False),  # an empty term selects no node
    ({"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}, _node(zone="a"), False),
    ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}, _node("n1"), False),
    ({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8", "9"]}]}, _node(cores="16"), False),
])
def test_node_selector_terms(term, node, matches):
    assert node_selector_term_matches(term, node) is matches


def test_node_selector_term_errors_are_reported():
    term = compile_node_selector_term({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]})
    assert term.errors == ['matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"']
    term = compile_node_selector_term({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]})
    assert term.errors == ['matchFields[0].values: Invalid value: []string{"a", "b"}: must have one element']


def test_node_selector_ors_its_terms():
    selector = {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
    ]}
    assert node_selector_matches(selector, _node(zone="a"))
    assert not node_selector_matches(selector, _node(zone="c"))
    assert node_selector_matches(None, _node())


@pytest.mark.parametrize("text,requirements,canonical", [
    ("metadata.name=p", [("metadata.name", "=", "p")], "metadata.name=p"),
    ("metadata.name==p", [("metadata.name", "==", "p")], "metadata.name=p"),
    ("status.phase!=Running", [("status.phase", "!=", "Running")], "status.phase!=Running"),
    ("b=2,a=1", [("a", "=", "1"), ("b", "=", "2")], "a=1,b=2"),
    ("involvedObject.uid=u,involvedObject.name=p,involvedObject.namespace=default",
     [("involvedObject.name", "=", "p"), ("involvedObject.namespace", "=", "default"), ("involvedObject.uid", "=", "u")],
     "involvedObject.name=p,involvedObject.namespace=default,involvedObject.uid=u"),
    ("a=x\\,y", [("a", "=", "x,y")], "a=x\\,y"),
    ("a=x\\=y", [("a", "=", "x=y")], "a=x\\=y"),
    ("a=x\\\\y", [("a", "=", "x\\y")], "a=x\\\\y"),
    ("a=", [("a", "=", "")], "a="),
    ("", [], ""),
    (",a=b,", [("a", "=", "b")], "a=b"),
])
def test_parse_field_selector(text, requirements, canonical):
    sel = parse_field_selector(text)
    assert sel.requirements == requirements
    assert str(sel) == canonical


@pytest.mark.parametrize("text,message", [
    ("a", "invalid selector: 'a'; can't understand 'a'"),
    ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
    ("a=b=c", "invalid field selector: unescaped character in value: 61"),
    ("a=b\\x", "invalid field selector: invalid escape sequence: \\x"),
    ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
])
def test_field_selector_errors(text, message):
    with pytest.raises(ValueError) as e:
        parse_field_selector(text)
    assert str(e.value) == message


def test_field_selector_matching():
    pod = {"metadata.name": "p", "status.phase": "Running", "spec.nodeName": ""}
    assert parse_field_selector("metadata.name=p").matches(pod.get)
    assert not parse_field_selector("metadata.name=q").matches(pod.get)
    assert parse_field_selector("status.phase!=Pending,metadata.name=p").matches(pod.get)
    assert not parse_field_selector("status.phase!=Running").matches(pod.get)
    assert parse_field_selector("spec.nodeName=").matches(pod.get)
    assert parse_field_selector("spec.unknown=").matches(pod.get)  # absent fields read as ""
    assert parse_field_selector("").matches(pod.get) and parse_field_selector("").empty


def test_field_selector_exact_match_and_escaping():
    assert parse_field_selector("a!=1,metadata.name=p").requires_exact_match("metadata.name") == "p"
    assert parse_field_selector("a!=1").requires_exact_match("a") is None
    assert escape_field_value("x,y=z\\") == "x\\,y\\=z\\\\"
    value = "a,b=c\\d"
    assert parse_field_selector("f=" + escape_field_value(value)).requirements == [("f", "=", value)]


# -- bounded work ------------------------------------------------------------------------------

MANY = 20000
# "Does not hang" bound for selectors a request body or query string can carry (each parse here
# takes tens of milliseconds); slack for a loaded machine.
SELECTOR_BOUND_SECONDS = 2.0


def _bad_values(n: int) -> list[str]:
    return [f"-{i}" for i in range(n)]


@pytest.mark.parametrize("parse, expected_prefix", [
    pytest.param(lambda: label_selector_from_object(
        {"matchExpressions": [{"key": "k", "operator": "In", "values": _bad_values(MANY)}]}),
        "[values[0][k]: Invalid value: \"-0\"", id="twenty thousand invalid values in an object"),
    pytest.param(lambda: parse_label_selector("k in (" + ",".join(_bad_values(MANY)) + ")"),
        "unable to parse requirement: [values[0][k]", id="twenty thousand invalid values in a query"),
    pytest.param(lambda: parse_field_selector("a" * (MANY * 10)),
        "invalid selector: 'aaaa", id="a long field term without an operator"),
])
def test_selectors_with_many_errors_fail_in_bounded_time(parse, expected_prefix):
    started = time.perf_counter()
    with pytest.raises(ValueError) as info:
        parse()
    assert str(info.value).startswith(expected_prefix)
    assert time.perf_counter() - started < SELECTOR_BOUND_SECONDS


def test_node_selector_term_with_many_errors_is_compiled_in_bounded_time():
    started = time.perf_counter()
    term = compile_node_selector_term(
        {"matchExpressions": [{"key": "k", "operator": "In", "values": _bad_values(MANY)}]})
    assert len(term.errors) == 1 and term.errors[0].count("Invalid value") == MANY
    assert not term.matches({"metadata": {"labels": {"k": "-1"}}})
    assert time.perf_counter() - started < SELECTOR_BOUND_SECONDS


@pytest.mark.parametrize("text, requirements", [
    ("a!=b", [("a", "!=", "b")]),
    ("a==b", [("a", "==", "b")]),
    ("a==", [("a", "==", "")]),
    ("a!=\\=b", [("a", "!=", "=b")]),
])
def test_field_term_splits_at_the_leftmost_operator(text, requirements):
    assert parse_field_selector(text).requirements == requirements
