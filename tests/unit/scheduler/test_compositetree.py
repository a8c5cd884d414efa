"""CompositePodGroup trees: resolving a leaf's root, what makes a tree invalid or not ready yet, and
the top-down, greedy, all-or-nothing search, on a toy cluster of nodes with slots."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from phalanx.scheduler.compositetree import (HierarchyError, LeafPlacer, WorkloadForest, domains_of, is_ready,
                                             place_tree, tree_error)

NS = "ns"


def cpg(name, parent=None, min_groups=None, topology=None, created="2026-12-03T00:00:00Z", workload="wl"):
    spec = {"workloadRef": {"workloadName": workload, "templateName": name},
            "schedulingPolicy": {"gang": {"minGroupCount": min_groups}} if min_groups else {"basic": {}}}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"kind": "CompositePodGroup", "metadata": {"namespace": NS, "name": name, "creationTimestamp": created},
            "spec": spec}


def pg(name, parent=None, min_count=None, topology=None, created="2026-12-03T00:00:00Z", workload="wl"):
    obj = cpg(name, parent, None, topology, created, workload)
    obj["kind"] = "PodGroup"
    obj["spec"]["schedulingPolicy"] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return obj


def forest(*objs):
    f = WorkloadForest()
    for o in objs:
        (f.set_composite if o["kind"] == "CompositePodGroup" else f.set_pod_group)(o)
    return f


# -- resolving the root -------------------------------------------------------------------------------

def test_a_leaf_resolves_to_its_root_and_a_parentless_group_to_itself():
    f = forest(cpg("root"), cpg("mid", "root"), pg("leaf", "mid", 2), pg("alone", None, 2))
    assert f.root_of("ns/leaf") == ("ns/root", None)
    assert f.root_of("ns/alone") == ("ns/alone", None)
    assert f.root_key("ns/leaf") == "ns/root"


def test_a_missing_parent_and_a_cycle_leave_the_pods_waiting_with_upstreams_words():
    f = forest(cpg("cpg1", "cpg-root"), pg("pg1", "cpg1"))
    assert f.root_of("ns/pg1") == (None, HierarchyError("cpg-root not found in workload forest", waiting=True))
    assert f.root_key("ns/pg1") == "ns/pg1"
    f.set_composite(cpg("cpg-root"))
    assert f.root_of("ns/pg1") == ("ns/cpg-root", None)

    f = forest(cpg("cpg1", "cpg2"), cpg("cpg2", "cpg1"), pg("pg1", "cpg1"))
    assert f.root_of("ns/pg1") == (None, HierarchyError("cycle detected in hierarchy", waiting=True))
    f.remove_composite(cpg("cpg2", "cpg1"))
    f.set_composite(cpg("cpg2"))
    assert f.root_of("ns/pg1") == ("ns/cpg2", None)


def test_depth_beyond_four_and_two_workloads_are_errors_of_the_cycle():
    f = forest(cpg("cpg-root"), cpg("cpg1", "cpg-root"), cpg("cpg2", "cpg1"), cpg("cpg3", "cpg2"), pg("pg1", "cpg3"))
    tree = f.tree("ns/cpg-root")
    assert tree is not None and tree.depth() == 5
    assert tree_error(tree) == "hierarchy depth 5 exceeds maximum allowed depth 4"
    f.remove_composite(cpg("cpg3", "cpg2"))
    f.remove_pod_group(pg("pg1", "cpg3"))
    f.set_pod_group(pg("pg1", "cpg2"))
    assert tree_error(f.tree("ns/cpg-root")) is None

    f = forest(cpg("root"), pg("a", "root"), pg("b", "root", workload="other"))
    assert tree_error(f.tree("ns/root")) == "pod group hierarchy references more than one Workload: other, wl"


def test_children_come_in_creation_order():
    f = forest(cpg("root"), pg("late", "root", created="2026-12-03T00:00:09Z"),
               pg("early", "root", created="2026-12-03T00:00:01Z"))
    assert [c.name for c in f.tree("ns/root").children] == ["early", "late"]


def test_quorum_counts_ready_leaves_up_to_the_root():
    f = forest(cpg("root", min_groups=2), pg("a", "root", 2), pg("b", "root", 3), pg("c", "root", 1))
    tree = f.tree("ns/root")
    pods = {"ns/a": 2, "ns/b": 2, "ns/c": 0}
    assert not is_ready(tree, lambda k: pods.get(k, 0))
    pods["ns/c"] = 1
    assert is_ready(tree, lambda k: pods.get(k, 0))


# -- the search ---------------------------------------------------------------------------------------

@dataclass
class Node:
    name: str
    labels: dict
    slots: int
    used: list = field(default_factory=list)


@dataclass
class Toy:
    """Leaves of `size[leaf]` one-slot pods; a leaf fits when all of them fit (gang of its size)."""

    size: dict
    log: list = field(default_factory=list)

    def place(self, leaf, nodes, domain):
        """A leaf's own topology is its search's business, as in the scheduler: first rack that fits."""
        if leaf.topology_key:
            for _, rack in domains_of(leaf.topology_key, nodes, lambda n: n.labels):
                result = self.fill(leaf, rack)
                if result is not None:
                    return result
            return None
        return self.fill(leaf, nodes)

    def fill(self, leaf, nodes):
        want = self.size[leaf.name]
        taken = []
        for n in nodes:
            while want and n.slots - len(n.used) > 0:
                n.used.append(leaf.name)
                taken.append(n)
                want -= 1
        if want:
            for n in taken:
                n.used.remove(leaf.name)
            return None
        self.log.append((leaf.name, sorted({n.name for n in taken})))
        return (leaf.name, taken)

    def undo(self, result):
        name, taken = result
        for n in taken:
            n.used.remove(name)

    def placer(self):
        return LeafPlacer(self.place, self.undo, lambda n: n.labels)


def cluster():
    """Two zones, two racks each, two nodes per rack, 2 slots per node."""
    return [Node(f"n{z}{r}{i}", {"zone": f"z{z}", "rack": f"z{z}-r{r}"}, 2) for z in range(2) for r in range(2)
            for i in range(2)]


def test_a_tree_lands_in_one_zone_with_each_leaf_in_one_rack():
    nodes = cluster()
    nodes[0].used = ["other"] * 2  # zone z0 keeps 5 free slots: 2 in rack r0, 3 in rack r1
    nodes[2].used = ["other"]
    f = forest(cpg("root", min_groups=2, topology="zone"),
               pg("leader", "root", 1, topology="rack", created="2026-12-03T00:00:01Z"),
               pg("workers", "root", 4, topology="rack", created="2026-12-03T00:00:02Z"))
    toy = Toy({"leader": 1, "workers": 4})
    placed = place_tree(f.tree("ns/root"), nodes, toy.placer())
    assert placed is not None
    assert placed.domains["ns/root"] == "zone=z1"  # z0 cannot give workers 4 slots in one rack next to the leader
    assert set(placed.domains) == {"ns/root"}  # leaves pick their racks in their own search
    assert {n.labels["zone"] for n in nodes if "leader" in n.used or "workers" in n.used} == {"z1"}
    racks = {n.labels["rack"] for n in nodes if "workers" in n.used}
    assert len(racks) == 1


def test_an_infeasible_leaf_blocks_its_siblings_and_nothing_stays_placed():
    nodes = cluster()
    f = forest(cpg("root", min_groups=2, topology="zone"), pg("head", "root", 1),
               pg("huge", "root", 9, topology="rack"))
    toy = Toy({"head": 1, "huge": 9})
    assert place_tree(f.tree("ns/root"), nodes, toy.placer()) is None
    assert all(not n.used for n in nodes)
    assert ("head", ["n000"]) in toy.log  # the head was placed, then undone with the tree


def test_min_group_count_lets_a_tree_through_without_every_child():
    nodes = cluster()
    f = forest(cpg("root", min_groups=1), pg("fits", "root", 2), pg("never", "root", 99))
    placed = place_tree(f.tree("ns/root"), nodes, Toy({"fits": 2, "never": 99}).placer())
    assert placed is not None and [leaf.name for leaf, _ in placed.leaves] == ["fits"]


def test_siblings_are_greedy_in_creation_order_without_backtracking():
    """An unconstrained sibling created first takes room a constrained sibling needed: the tree
    fails although another arrangement would fit (upstream's documented limit)."""
    nodes = [Node("a0", {"rack": "a"}, 2), Node("b0", {"rack": "b"}, 1)]
    f = forest(cpg("root", min_groups=2), pg("loose", "root", 1, created="2026-12-03T00:00:01Z"),
               pg("tight", "root", 2, topology="rack", created="2026-12-03T00:00:02Z"))
    assert place_tree(f.tree("ns/root"), nodes, Toy({"loose": 1, "tight": 2}).placer()) is None


def test_domains_in_natural_order_and_unlabelled_nodes_left_out():
    nodes = [Node("x", {"rack": "r10"}, 1), Node("y", {"rack": "r2"}, 1), Node("z", {}, 1)]
    assert [(d, [n.name for n in ns]) for d, ns in domains_of("rack", nodes, lambda n: n.labels)] == \
        [("rack=r2", ["y"]), ("rack=r10", ["x"])]


@pytest.mark.parametrize("remove_first", [True, False])
def test_a_changed_or_removed_group_leaves_no_stale_child(remove_first):
    f = forest(cpg("root"), pg("a", "root"))
    if remove_first:
        f.remove_pod_group(pg("a", "root"))
    else:
        f.set_pod_group(pg("a", None))
    assert f.tree("ns/root").children == []
