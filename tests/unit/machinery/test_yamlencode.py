"""dump_yaml writes what a YAML reader reads back as the same data, in kubectl's block style."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.machinery.yamlencode import dump_yaml

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(),
                    st.sampled_from(["yes", "No", "on", "OFF", "y", "~", "null", "1_000", "0o17", "0x1F", "1:20",
                                     "2001-12-14", ".inf", "-.5", "+1", "1e3", "a: b", "a #b", "- x", "key:", "#c",
                                     "*ref", "&a", "!tag", "|", ">", "%x", "@x", "`x", "[a]", "{a}", "a,b", "'q'",
                                     '"q"', " lead", "trail ", "multi\nline", "tab\there", "10.244.1.0/24",
                                     "https://127.0.0.1:6443", "kubernetes.io/hostname", "<none>", "=", ""]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=8) | SCALARS.filter(
                                                         lambda s: isinstance(s, str)), inner, max_size=4)),
                    max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_round_trips_through_a_yaml_reader(value):
    assert yaml.safe_load(dump_yaml(value)) == value


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), 1e100, -2.5e-300])
def test_floats_stay_floats(value):
    assert yaml.safe_load(dump_yaml({"f": value})) == {"f": value}
    assert math.isnan(yaml.safe_load(dump_yaml(float("nan"))))


def test_block_style_as_kubectl_prints_it():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c", "args": ["sleep", "3600"], "ports": []}], "nodeName": "w1"},
           "status": {"phase": "Running", "podIP": "10.244.1.7", "message": "kubelet says: ok"}}
    assert dump_yaml(pod) == (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  labels:\n    app: web\nspec:\n  containers:\n"
        "  - name: c\n    args:\n    - sleep\n    - \"3600\"\n    ports: []\n  nodeName: w1\nstatus:\n"
        "  phase: Running\n  podIP: \"10.244.1.7\"\n  message: \"kubelet says: ok\"\n")
