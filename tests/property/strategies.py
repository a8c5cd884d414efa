"""Hypothesis strategies shared by the property tests: JSON values shaped like Kubernetes objects
and patches (with the keys and directives the patch code treats specially), quantity texts,
selector texts."""

from __future__ import annotations

from hypothesis import strategies as st

# Keys that mean something to one of the patch formats or to the Pod schema, plus arbitrary ones.
SPECIAL_KEYS = ["$patch", "$retainKeys", "$setElementOrder/containers", "$setElementOrder/ports",
                "$deleteFromPrimitiveList/finalizers", "$deleteFromPrimitiveList/x", "$setElementOrder",
                "name", "containerPort", "protocol", "containers", "ports", "spec", "metadata", "labels",
                "finalizers", "image", "env", "value", "status", "apiVersion", "kind", "resources",
                "requests", "cpu", "op", "path", "from"]
DIRECTIVE_VALUES = ["replace", "delete", "merge", "garbage", ""]

keys = st.one_of(st.sampled_from(SPECIAL_KEYS), st.text(max_size=6))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.sampled_from(DIRECTIVE_VALUES),
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy:
    """Any JSON value, nested a few levels, biased to the keys above."""
    return st.recursive(
        scalars,
        lambda children: st.one_of(st.lists(children, max_size=4),
                                   st.dictionaries(keys, children, max_size=5)),
        max_leaves=max_leaves,
    )


json_objects = st.dictionaries(keys, json_values(), max_size=6)

container_names = st.sampled_from(["a", "b", "c", ""])
ports = st.fixed_dictionaries(
    {"containerPort": st.one_of(st.integers(min_value=0, max_value=70000), st.text(max_size=3))},
    optional={"protocol": st.sampled_from(["TCP", "UDP", "SCTP", "x"]), "$patch": st.sampled_from(DIRECTIVE_VALUES),
              "name": st.text(max_size=4)})
containers = st.fixed_dictionaries(
    {"name": container_names},
    optional={"image": st.text(max_size=6), "ports": st.lists(ports, max_size=3),
              "$patch": st.sampled_from(DIRECTIVE_VALUES), "env": json_values(6),
              "resources": st.fixed_dictionaries({}, optional={"requests": st.dictionaries(
                  st.sampled_from(["cpu", "memory"]), st.text("0123456789.eEmKiG+-", max_size=8), max_size=2)}),
              "$setElementOrder/ports": st.lists(ports, max_size=2)})
pod_specs = st.fixed_dictionaries(
    {}, optional={"containers": st.lists(containers, max_size=3), "$setElementOrder/containers":
                  st.lists(st.fixed_dictionaries({"name": container_names}), max_size=3),
                  "$patch": st.sampled_from(DIRECTIVE_VALUES), "$retainKeys": st.lists(keys, max_size=3),
                  "nodeName": st.text(max_size=4), "extra": json_values(8)})
pods = st.fixed_dictionaries(
    {}, optional={"apiVersion": st.sampled_from(["v1", "apps/v1", ""]), "kind": st.sampled_from(["Pod", "x"]),
                  "metadata": st.fixed_dictionaries({}, optional={
                      "name": st.sampled_from(["p", "q", "Bad Name", ""]),
                      "labels": st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), st.none()), max_size=3),
                      "finalizers": st.lists(st.text(max_size=4), max_size=3),
                      "$deleteFromPrimitiveList/finalizers": st.lists(st.text(max_size=4), max_size=2)}),
                  "spec": pod_specs, "status": json_values(6)})
