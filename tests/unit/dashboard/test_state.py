"""ClusterView: rows kept current object by object, and patches that carry only what changed —
the node cells a pod's binding touches, its PodGroup, its Job; a JobSet's Jobs and their groups; a
CompositePodGroup tree and the domain it landed in; devices and the claims that hold them."""

from __future__ import annotations

from phalanx.dashboard.state import ClusterView

RACK, ZONE = "example.com/rack", "topology.kubernetes.io/zone"


def node(name, rack, zone="z0"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {RACK: rack, ZONE: zone}},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name, node_name=None, group=None, job=None, cpu="1", claims=()):
    md = {"name": name, "namespace": "default"}
    if job:
        md["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": f"u-{job}",
                                  "controller": True}]
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    status = {"phase": "Running" if node_name else "Pending"}
    if claims:
        status["resourceClaimStatuses"] = [{"name": c, "resourceClaimName": c} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}


def pod_group(name, keys=(), parent=None, api="scheduling.k8s.io/v1beta1"):
    spec = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if keys:
        spec["schedulingConstraints"] = {"topology": [{"key": k} for k in keys]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {"apiVersion": api, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def cluster(racks=2, per_rack=2):
    view = ClusterView()
    for r in range(racks):
        for i in range(per_rack):
            view.upsert("Node", node(f"n{r}{i}", f"rack-{r}", zone=f"z{r // 2}"))
    view.flush()
    return view


def rows(patch, collection):
    return {r.get("uid") or (f"{r['namespace']}/{r['name']}" if "namespace" in r else r["name"]): r
            for r in patch["set"].get(collection, [])}


def test_a_bound_pod_patches_its_node_its_group_and_its_pending_entry_only():
    view = cluster()
    view.upsert("PodGroup", pod_group("g", keys=[RACK]))
    view.upsert("Pod", pod("p0", group="g"))
    first = view.flush()
    assert set(rows(first, "pendingPods")) == {"default/p0"}
    assert rows(first, "podGroups")["default/g"]["pending"] == 1
    assert "nodes" not in first["set"]

    view.upsert("Pod", pod("p0", "n10", group="g"))
    patch = view.flush()
    assert [n["name"] for n in patch["set"]["nodes"]] == ["n10"]  # one cell of four
    assert patch["set"]["nodes"][0]["cpuRequestedMilli"] == 1000
    assert patch["delete"]["pendingPods"] == ["default/p0"]
    group = rows(patch, "podGroups")["default/g"]
    assert (group["scheduled"], group["pending"], group["nodes"]) == (1, 0, ["n10"])
    assert group["domains"] == [{"key": RACK, "values": ["rack-1"]}]
    assert patch["generation"] == first["generation"] + 1


def test_nothing_the_page_shows_changed_means_no_patch():
    view = cluster()
    view.upsert("Pod", pod("p0", "n00"))
    assert view.flush() is not None
    same = pod("p0", "n00")
    same["metadata"]["resourceVersion"] = "99"  # a change the page does not draw
    view.upsert("Pod", same)
    assert view.flush() is None


def test_the_document_is_what_the_patches_built():
    view = cluster()
    view.upsert("Pod", pod("p0", "n00"))
    view.flush()
    doc = view.document()
    assert doc["levels"] == [RACK]  # both racks in zone z0: one zone is no level
    assert [n["name"] for n in doc["nodes"]] == ["n00", "n01", "n10", "n11"]
    assert doc["nodes"][0]["cpuRequestedMilli"] == 1000


def test_a_new_topology_level_sends_the_levels_and_every_node():
    view = cluster(racks=2)  # one zone: racks are the only level
    assert view.levels == [RACK]
    view.upsert("Node", node("n20", "rack-2", zone="z1"))
    patch = view.flush()
    assert patch["levels"] == [ZONE, RACK]
    assert len(patch["set"]["nodes"]) == 5  # every cell's path changed


def test_jobset_jobs_and_their_pod_groups():
    view = cluster()
    view.upsert("JobSet", {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                           "metadata": {"name": "train", "namespace": "default"},
                           "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2}]}})
    for i in range(2):
        view.upsert("Job", {"apiVersion": "batch/v1", "kind": "Job",
                            "metadata": {"name": f"train-workers-{i}", "namespace": "default",
                                         "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "workers"},
                                         "ownerReferences": [{"kind": "JobSet", "name": "train", "controller": True}]},
                            "spec": {"parallelism": 2, "template": {"spec": {"schedulingGroup": {"podGroupName": "g"}}}},
                            "status": {"active": 2}})
        view.upsert("Pod", pod(f"p{i}", f"n0{i}", group="g", job=f"train-workers-{i}", claims=["shared"]))
    view.upsert("PodGroup", pod_group("g"))
    view.flush()
    doc = view.document()
    (jobset,) = doc["jobSets"]
    assert jobset["jobs"] == ["default/train-workers-0", "default/train-workers-1"]
    assert jobset["replicatedJobs"] == [{"name": "workers", "replicas": 2}]
    job0 = doc["jobs"][0]
    assert (job0["jobSet"], job0["replicatedJob"], job0["podGroups"]) == ("train", "workers", ["default/g"])
    assert (job0["nodes"], job0["claims"], job0["active"]) == (["n00"], ["default/shared"], 2)
    assert doc["podGroups"][0]["claims"] == ["default/shared"]


def test_a_composite_tree_lists_its_children_and_the_domain_its_leaves_landed_in():
    view = cluster(racks=4)
    view.upsert("CompositePodGroup", {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                                      "metadata": {"name": "tree", "namespace": "default"},
                                      "spec": {"schedulingPolicy": {"gang": {"minGroupCount": 2}},
                                               "schedulingConstraints": {"topology": [{"key": ZONE}]}}})
    view.upsert("PodGroup", pod_group("leader", keys=[RACK], parent="tree"))
    view.upsert("PodGroup", pod_group("workers", keys=[RACK], parent="tree"))
    view.flush()
    (tree,) = view.document()["compositePodGroups"]
    assert [c["key"] for c in tree["children"]] == ["default/leader", "default/workers"]
    assert (tree["policy"], tree["minGroupCount"], tree["nodes"]) == ("Gang", 2, [])

    view.upsert("Pod", pod("l0", "n00", group="leader"))
    view.upsert("Pod", pod("w0", "n10", group="workers"))
    patch = view.flush()
    tree = rows(patch, "compositePodGroups")["default/tree"]  # a leaf's pod reaches the tree's row
    assert tree["nodes"] == ["n00", "n10"]
    assert tree["domains"] == [{"key": ZONE, "values": ["z0"]}]


def _slice(node_name, devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpu"},
            "spec": {"nodeName": node_name, "driver": "gpu.example.com", "pool": {"name": node_name},
                     "devices": [{"name": d} for d in devices]}}


def _claim(name, node_name=None, device=None):
    status = {}
    if device:
        status["allocation"] = {"devices": {"results": [{"driver": "gpu.example.com", "pool": node_name,
                                                         "device": device, "request": "gpu"}]}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "status": status}


def test_an_allocation_patches_the_claim_the_node_holding_the_device_and_the_driver_counts():
    view = cluster()
    view.upsert("ResourceSlice", _slice("n00", ["gpu-0", "gpu-1"]))
    view.upsert("ResourceSlice", _slice("n11", ["gpu-0"]))
    view.upsert("ResourceClaim", _claim("c"))
    first = view.flush()
    assert rows(first, "drivers")["gpu.example.com"] == {"name": "gpu.example.com", "pools": 2, "devices": 3,
                                                         "allocated": 0}
    view.upsert("ResourceClaim", _claim("c", "n00", "gpu-1"))
    patch = view.flush()
    assert [n["name"] for n in patch["set"]["nodes"]] == ["n00"]
    assert [(d["name"], d["claim"]) for d in patch["set"]["nodes"][0]["devices"]] == \
        [("gpu-0", None), ("gpu-1", "default/c")]
    assert rows(patch, "claims")["default/c"]["nodes"] == ["n00"]
    assert rows(patch, "drivers")["gpu.example.com"]["allocated"] == 1
    view.remove("ResourceSlice", _slice("n11", ["gpu-0"]))
    patch = view.flush()
    assert rows(patch, "drivers")["gpu.example.com"]["devices"] == 2


def test_events_become_timeline_entries_and_only_new_ones_travel():
    view = cluster()
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "p0.1", "namespace": "default", "uid": "e1"},
             "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p0"}, "reason": "Scheduled",
             "message": "Successfully assigned default/p0 to n01", "type": "Normal",
             "lastTimestamp": "2026-12-03T10:00:00Z", "count": 1}
    view.record_events([event])
    patch = view.flush()
    (entry,) = patch["set"]["timeline"]
    assert (entry["category"], entry["nodes"], entry["object"]["name"]) == ("binding", ["n01"], "p0")
    view.record_events([event])
    assert view.flush() is None
