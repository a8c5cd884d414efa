"""CompositePodGroup trees (Kubernetes 1.37, KEP-6012): the workload forest, its validation, and the
top-down search that places a whole tree.

A tree is a root CompositePodGroup, CompositePodGroups below it, and PodGroups as leaves: each
child names its parent in `spec.parentCompositePodGroupName`; pods belong to leaves only. The
scheduler keeps every PodGroup and CompositePodGroup it watches in a `WorkloadForest`, and treats
the root as one queue entity holding the pods of every leaf.

What this module decides, as upstream's scheduler does:

- **The root of a leaf**, walking up the parents: a parent that does not exist yet
  (`"<name> not found in workload forest"`) or a cycle (`"cycle detected in hierarchy"`) leaves the
  pods waiting (they are retried when the forest changes); a tree deeper than 4 levels, root
  included (`"hierarchy depth 5 exceeds maximum allowed depth 4"`), or one whose groups name
  different Workloads, is an error of the scheduling cycle.
- **Quorum**, before a tree is worth a cycle: a leaf is ready with at least `minCount` pods (1 for
  a basic policy), a CompositePodGroup with at least `minGroupCount` ready children (1 for basic);
  until the root is ready the pods wait (`waiting for composite pod group "<root>" tree to meet
  quorum`).
- **The search** (`place_tree`): top-down. A group with a topology constraint tries the domains
  (values of its `topology[0].key`) of the nodes its parent was given, in natural order; its
  children only ever see the nodes of the domain being tried. Children are tried in creation
  order and greedily — what an earlier sibling took stays taken, no sibling is retried in another
  arrangement — and a CompositePodGroup is satisfied when `minGroupCount` children are (a basic
  one when one is). Anything short of a satisfied root is undone: the tree binds all or nothing.

The search knows nothing of pods or plugins: the caller places a leaf on a set of nodes and undoes
it (`LeafPlacer`), so the same search serves the scheduler and its unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, Sequence, TypeVar

from phalanx.api.scheduling.fields import parent_composite, workload_name
from phalanx.client.informer import object_key

from .plugins.topologyaware import natural_key, required_topology_key

Obj = dict[str, Any]

MAX_TREE_DEPTH = 4  # WorkloadMaxTreeDepth
POD_GROUP = "PodGroup"
COMPOSITE_POD_GROUP = "CompositePodGroup"


def _parent_key(obj: Obj) -> Optional[str]:
    parent = parent_composite(obj)
    if parent is None:
        return None
    return f"{(obj.get('metadata') or {}).get('namespace', '')}/{parent}"


def required_count(obj: Obj) -> int:
    """What makes a group ready: `minCount` pods of a gang PodGroup, `minGroupCount` children of a
    gang CompositePodGroup, 1 for a basic policy."""
    policy = ((obj.get("spec") or {}).get("schedulingPolicy") or {})
    gang = policy.get("gang")
    if not isinstance(gang, dict):
        return 1
    value = gang.get("minGroupCount", gang.get("minCount"))
    return value if isinstance(value, int) and value > 0 else 1


@dataclass
class HierarchyError:
    """Why a leaf's tree cannot be scheduled. `waiting`: the pods wait for the forest to change
    (missing parent, cycle); otherwise the scheduling cycle fails with SchedulerError."""

    message: str
    waiting: bool


@dataclass
class TreeNode:
    """One group of a tree: a CompositePodGroup with children, or a leaf PodGroup."""

    key: str
    kind: str
    obj: Obj
    children: list["TreeNode"] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    @property
    def required(self) -> int:
        return required_count(self.obj)

    @property
    def topology_key(self) -> Optional[str]:
        return required_topology_key(self.obj)

    def leaves(self) -> list["TreeNode"]:
        if self.kind == POD_GROUP:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]

    def depth(self) -> int:
        """Levels from this group down to its deepest leaf, itself included."""
        return 1 + max((c.depth() for c in self.children), default=0)


def _creation_order(obj: Obj) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("creationTimestamp") or "", md.get("name") or ""


class WorkloadForest:
    """Every PodGroup and CompositePodGroup the scheduler knows, with the children of each parent
    (a parent may be named before it exists)."""

    def __init__(self) -> None:
        self.pod_groups: dict[str, Obj] = {}
        self.composites: dict[str, Obj] = {}
        self._children: dict[str, set[str]] = {}

    # -- the informers' feed ------------------------------------------------------------------
    def set_pod_group(self, pg: Obj) -> None:
        self._set(self.pod_groups, pg)

    def remove_pod_group(self, pg: Obj) -> None:
        self._remove(self.pod_groups, pg)

    def set_composite(self, cpg: Obj) -> None:
        self._set(self.composites, cpg)

    def remove_composite(self, cpg: Obj) -> None:
        self._remove(self.composites, cpg)

    def _set(self, into: dict[str, Obj], obj: Obj) -> None:
        key = object_key(obj)
        old = into.get(key)
        if old is not None:
            self._unlink(key, old)
        into[key] = obj
        parent = _parent_key(obj)
        if parent is not None:
            self._children.setdefault(parent, set()).add(key)

    def _remove(self, into: dict[str, Obj], obj: Obj) -> None:
        key = object_key(obj)
        old = into.pop(key, None)
        if old is not None:
            self._unlink(key, old)

    def _unlink(self, key: str, obj: Obj) -> None:
        parent = _parent_key(obj)
        siblings = self._children.get(parent or "")
        if siblings is not None:
            siblings.discard(key)
            if not siblings:
                del self._children[parent or ""]

    # -- questions ------------------------------------------------------------------------------
    def has_parent(self, pod_group_key: str) -> bool:
        pg = self.pod_groups.get(pod_group_key)
        return pg is not None and _parent_key(pg) is not None

    def root_of(self, pod_group_key: str) -> tuple[Optional[str], Optional[HierarchyError]]:
        """The key of the root CompositePodGroup above a leaf PodGroup (the leaf's own key when it
        has no parent), or why there is none yet."""
        pg = self.pod_groups.get(pod_group_key)
        if pg is None:
            return None, None
        seen = {pod_group_key}
        key, parent = pod_group_key, _parent_key(pg)
        while parent is not None:
            if parent in seen:
                return None, HierarchyError("cycle detected in hierarchy", waiting=True)
            seen.add(parent)
            cpg = self.composites.get(parent)
            if cpg is None:
                return None, HierarchyError(f"{parent.split('/', 1)[1]} not found in workload forest", waiting=True)
            key, parent = parent, _parent_key(cpg)
        return key, None

    def root_key(self, pod_group_key: str) -> str:
        """The queue entity a leaf's pods join: its root, or the leaf itself while unresolved."""
        root, _ = self.root_of(pod_group_key)
        return root or pod_group_key

    def tree(self, root_key: str) -> Optional[TreeNode]:
        """The tree under a root CompositePodGroup, children in creation order; None if it is gone."""
        root = self.composites.get(root_key)
        return self._node(root_key, COMPOSITE_POD_GROUP, root, set()) if root is not None else None

    def _node(self, key: str, kind: str, obj: Obj, path: set[str]) -> TreeNode:
        node = TreeNode(key, kind, obj)
        if kind == POD_GROUP or key in path:
            return node
        kids: list[tuple[tuple[str, str], TreeNode]] = []
        for child in self._children.get(key, ()):
            if child in self.composites:
                kids.append((_creation_order(self.composites[child]),
                             self._node(child, COMPOSITE_POD_GROUP, self.composites[child], path | {key})))
            elif child in self.pod_groups:
                kids.append((_creation_order(self.pod_groups[child]), TreeNode(child, POD_GROUP, self.pod_groups[child])))
        node.children = [n for _, n in sorted(kids, key=lambda kv: kv[0])]
        return node


def tree_error(tree: TreeNode) -> Optional[str]:
    """What makes a resolved tree unschedulable whatever the cluster holds: too deep, or groups of
    more than one Workload."""
    depth = tree.depth()
    if depth > MAX_TREE_DEPTH:
        return f"hierarchy depth {depth} exceeds maximum allowed depth {MAX_TREE_DEPTH}"
    names = sorted({n for n in _workload_names(tree) if n})
    if len(names) > 1:
        return f"pod group hierarchy references more than one Workload: {', '.join(names)}"
    return None


def _workload_names(node: TreeNode) -> list[Optional[str]]:
    return [workload_name(node.obj)] + [n for c in node.children for n in _workload_names(c)]


def is_ready(node: TreeNode, pods_count: Callable[[str], int]) -> bool:
    """Quorum: a leaf with its required pods, a CompositePodGroup with its required ready children."""
    if node.kind == POD_GROUP:
        return pods_count(node.key) >= node.required
    return sum(1 for c in node.children if is_ready(c, pods_count)) >= node.required


# -- the top-down search --------------------------------------------------------------------------

N = TypeVar("N")  # a node of the cluster (the scheduler's NodeInfo)
L = TypeVar("L")  # what placing a leaf produced (the scheduler's placement outcome)


@dataclass
class LeafPlacer(Generic[N, L]):
    """The caller's half of the search: place a leaf on some nodes (None when it does not fit
    there, its assumptions already undone), and undo a placed leaf. `place` also gets the name of
    the domain those nodes are (`key=value` of the nearest constrained ancestor; "" for all)."""

    place: Callable[[TreeNode, Sequence[N], str], Optional[L]]
    undo: Callable[[L], None]
    labels: Callable[[N], dict[str, str]]


@dataclass
class TreePlacement(Generic[L]):
    """A satisfied tree: the leaves placed, with what placing each produced, and the domain each
    constrained group got."""

    leaves: list[tuple[TreeNode, L]] = field(default_factory=list)
    domains: dict[str, str] = field(default_factory=dict)  # group key -> "key=value"


def domains_of(key: str, nodes: Sequence[N], labels: Callable[[N], dict[str, str]]) -> list[tuple[str, list[N]]]:
    """The nodes split by their value of label `key`, values in natural order; nodes without the
    label belong to no domain."""
    by_value: dict[str, list[N]] = {}
    for node in nodes:
        value = labels(node).get(key)
        if value is not None:
            by_value.setdefault(value, []).append(node)
    return [(f"{key}={v}", by_value[v]) for v in sorted(by_value, key=natural_key)]


def place_tree(root: TreeNode, nodes: Sequence[N], placer: LeafPlacer[N, L]) -> Optional[TreePlacement[L]]:
    """Place the whole tree under `root` on `nodes`, or nothing (every assumption undone)."""
    return _place_group(root, nodes, placer, "")


def _place_group(node: TreeNode, nodes: Sequence[N], placer: LeafPlacer[N, L],
                 within: str) -> Optional[TreePlacement[L]]:
    key = node.topology_key
    if node.kind == POD_GROUP:  # a leaf's own constraint is its search's business (PlacementGenerate)
        key = None
    candidates = domains_of(key, nodes, placer.labels) if key else [(within, list(nodes))]
    for domain, domain_nodes in candidates:
        placed = _place_in(node, domain_nodes, placer, domain)
        if placed is not None:
            if key:
                placed.domains[node.key] = domain
            return placed
    return None


def _place_in(node: TreeNode, nodes: Sequence[N], placer: LeafPlacer[N, L],
              domain: str) -> Optional[TreePlacement[L]]:
    if node.kind == POD_GROUP:
        result = placer.place(node, nodes, domain)
        return TreePlacement([(node, result)]) if result is not None else None
    placed: TreePlacement[L] = TreePlacement()
    satisfied = 0
    for child in node.children:  # greedy, in creation order: no sibling is tried again
        child_placed = _place_group(child, nodes, placer, domain)
        if child_placed is not None:
            satisfied += 1
            placed.leaves += child_placed.leaves
            placed.domains.update(child_placed.domains)
    if satisfied >= node.required:
        return placed
    undo_all(placed, placer)
    return None


def undo_all(placed: TreePlacement[L], placer: LeafPlacer[Any, L]) -> None:
    for _, result in reversed(placed.leaves):
        placer.undo(result)
