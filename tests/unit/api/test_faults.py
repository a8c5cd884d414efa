"""The fault annotations' helpers: what a node's annotations say, and how failing or recovering
nodes and devices changes them."""

from __future__ import annotations

import pytest

from phalanx.api.faults import (annotations_with_device_faults, annotations_with_node_fault, failed_devices,
                                node_is_down)


def node(**annotations):
    return {"metadata": {"name": "n", "annotations": {"keep": "me", **annotations}}}


def test_node_fault():
    assert not node_is_down(node()) and node_is_down(node(**{"fault.phalanx.dev/node": "down"}))
    assert annotations_with_node_fault(node(), True) == {"keep": "me", "fault.phalanx.dev/node": "down"}
    assert annotations_with_node_fault(node(**{"fault.phalanx.dev/node": "down"}), True) is None
    assert annotations_with_node_fault(node(**{"fault.phalanx.dev/node": "down"}), False) == {"keep": "me"}
    assert annotations_with_node_fault(node(), False) is None
    assert annotations_with_node_fault(node(**{"fault.phalanx.dev/node": "maybe"}), False) == {"keep": "me"}


D = "fault.phalanx.dev/devices"


@pytest.mark.parametrize("current, names, failed, expected", [
    (None, ["gpu-0"], True, "gpu-0"),
    ("gpu-0", ["gpu-3", "gpu-0"], True, "gpu-0,gpu-3"),
    ("gpu-0", ["*"], True, "*"),
    ("gpu-0,gpu-3", ["gpu-0"], False, "gpu-3"),
    ("gpu-0", ["gpu-0"], False, None),
    ("gpu-0,gpu-3", ["*"], False, None),
    ("*", ["gpu-1"], False, "gpu-0,gpu-2"),
])
def test_device_faults(current, names, failed, expected):
    n = node(**({D: current} if current else {}))
    new = annotations_with_device_faults(n, names, failed, published=["gpu-0", "gpu-1", "gpu-2"])
    assert new is not None and new.get(D) == expected and new["keep"] == "me"


def test_unchanged_device_faults_write_nothing():
    assert annotations_with_device_faults(node(**{D: "gpu-0"}), ["gpu-0"], True) is None
    assert annotations_with_device_faults(node(), ["gpu-0"], False) is None
    assert annotations_with_device_faults(node(**{D: "*"}), ["gpu-1"], True) is None
    assert failed_devices(node(**{D: " gpu-1 ,, gpu-1,*"})) == ["*"]
    assert failed_devices(node(**{D: " gpu-1 ,, gpu-2"})) == ["gpu-1", "gpu-2"]
