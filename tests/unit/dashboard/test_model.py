"""The dashboard's document from plain objects: topology levels detected from node labels, CPU and
GPU allocation per node, PodGroups of both releases, claim states — what the page draws."""

from __future__ import annotations

from phalanx.dashboard.model import snapshot, topology_levels

ZONE, BLOCK, RACK = "topology.kubernetes.io/zone", "example.com/block", "example.com/rack"


def node(name, labels=None, cpu="4", ready=True, unschedulable=False):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"unschedulable": unschedulable} if unschedulable else {},
            "status": {"allocatable": {"cpu": cpu},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name, node_name=None, cpu="500m", group=None, phase="Running"):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": spec, "status": {"phase": phase if node_name else "Pending"}}


def grid(zones=2, blocks=2, racks=2, per_rack=2):
    out = []
    for z in range(zones):
        for b in range(blocks):
            for r in range(racks):
                for i in range(per_rack):
                    out.append(node(f"n-{z}-{b}-{r}-{i}", {
                        ZONE: f"z{z}", BLOCK: f"z{z}-b{b}", RACK: f"z{z}-b{b}-r{r}",
                        "kubernetes.io/hostname": f"n-{z}-{b}-{r}-{i}",
                        "node.kubernetes.io/instance-type": "gpu-large" if i else "gpu-small"}))
    return out


def test_levels_are_the_nesting_topology_keys_outermost_first():
    assert topology_levels(grid()) == [ZONE, BLOCK, RACK]


def test_a_key_whose_values_cross_the_outer_level_is_not_a_level():
    nodes = grid()
    for i, n in enumerate(nodes):  # a "rack" numbering that repeats in every block does not nest
        n["metadata"]["labels"][RACK] = f"r{i % 2}"
    assert topology_levels(nodes) == [ZONE, BLOCK]


def test_nodes_without_topology_labels_have_no_levels():
    assert topology_levels([node("a"), node("b", {"kubernetes.io/hostname": "b"})]) == []


def test_node_cells_carry_cpu_fraction_path_and_state():
    nodes = grid(zones=1, blocks=1, racks=2, per_rack=2)
    nodes[1]["spec"]["unschedulable"] = True
    pods = [pod("a", "n-0-0-0-0", cpu="1"), pod("b", "n-0-0-0-0", cpu="1"),
            pod("done", "n-0-0-0-0", cpu="2", phase="Succeeded"), pod("waiting")]
    doc = snapshot(nodes, pods, [], [], [])
    assert doc["levels"] == [RACK]  # one zone and one block: no grouping there
    first, second = doc["nodes"][:2]
    assert (first["name"], first["path"], first["cpuRequestedMilli"], first["cpuFraction"]) == \
        ("n-0-0-0-0", ["z0-b0-r0"], 2000, 0.5)
    assert second["unschedulable"] and second["cpuFraction"] == 0.0
    assert doc["pendingPods"] == [{"namespace": "default", "name": "waiting", "podGroup": None}]


def _slice(node_name, devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpu"},
            "spec": {"nodeName": node_name, "driver": "gpu.example.com", "pool": {"name": node_name},
                     "devices": [{"name": d} for d in devices]}}


def _claim(name, node_name=None, device=None, reserved=None):
    status = {}
    if device:
        status["allocation"] = {"devices": {"results": [{"driver": "gpu.example.com", "pool": node_name,
                                                         "device": device, "request": "gpu"}]}}
    if reserved:
        status["reservedFor"] = [{"resource": "podgroups", "name": reserved, "uid": "u"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "status": status}


def test_gpus_are_sub_cells_with_the_claim_that_holds_them():
    doc = snapshot([node("w1"), node("w2")], [], [], [_slice("w1", ["gpu-1", "gpu-0"]), _slice("w2", ["gpu-0"])],
                   [_claim("shared", "w1", "gpu-1", reserved="training"), _claim("waiting")])
    w1 = doc["nodes"][0]
    assert [(d["name"], d["claim"]) for d in w1["devices"]] == [("gpu-0", None), ("gpu-1", "default/shared")]
    claims = {c["name"]: c for c in doc["claims"]}
    assert claims["shared"]["state"] == "allocated,reserved"
    assert claims["shared"]["nodes"] == ["w1"]
    assert claims["shared"]["reservedFor"] == [{"resource": "podgroups", "name": "training"}]
    assert claims["waiting"]["state"] == "pending" and claims["waiting"]["nodes"] == []


def _pod_group(api_version, condition_type, min_count=3):
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": {"name": "gang", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
            "status": {"conditions": [{"type": condition_type, "status": "False", "reason": "Unschedulable"}]}}


def test_pod_groups_of_either_release_show_counts_nodes_and_their_scheduled_condition():
    pods = [pod("g0", "w1", group="gang"), pod("g1", "w2", group="gang"), pod("g2", group="gang"), pod("other", "w1")]
    for api, cond in (("scheduling.k8s.io/v1alpha2", "PodGroupScheduled"),
                      ("scheduling.k8s.io/v1beta1", "PodGroupInitiallyScheduled")):
        (row,) = snapshot([node("w1"), node("w2")], pods, [_pod_group(api, cond)], [], [])["podGroups"]
        assert (row["policy"], row["minCount"], row["pods"], row["scheduled"], row["pending"]) == ("Gang", 3, 3, 2, 1)
        assert row["nodes"] == ["w1", "w2"]
        assert row["condition"]["type"] == cond and row["condition"]["reason"] == "Unschedulable"


def test_a_basic_pod_group_has_no_min_count_and_no_condition_yet():
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "basic", "namespace": "default"}, "spec": {"schedulingPolicy": {"basic": {}}}}
    (row,) = snapshot([], [], [pg], [], [])["podGroups"]
    assert (row["policy"], row["minCount"], row["condition"], row["nodes"]) == ("Basic", None, None, [])


def test_memory_requested_is_counted_like_cpu():
    n = node("w1")
    n["status"]["allocatable"]["memory"] = "4Gi"
    p = pod("a", "w1")
    p["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gi"
    init = {"name": "init", "resources": {"requests": {"memory": "2Gi"}}}  # more than the containers: it counts
    q = pod("b", "w1")
    q["spec"]["initContainers"] = [init]
    (cell,) = snapshot([n], [p, q], [], [], [])["nodes"]
    assert cell["memoryFraction"] == 0.75
