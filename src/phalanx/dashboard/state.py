"""The dashboard's picture of a cluster, kept current object by object, and the patches it sends.

`ClusterView` is fed API objects (`upsert(kind, obj)`, `remove(kind, obj)`, `record_events(events)`)
— the server's informers call it, tests call it directly — and keeps one row per thing the page
draws, in collections:

    nodes  podGroups  claims  pendingPods  jobSets  jobs  compositePodGroups  workloads
    deviceClasses  drivers  timeline

A change marks only the rows it can alter (a pod: its node's cell, its PodGroup, its Job, its
pending entry), through indexes kept here (pods by node, by PodGroup and by Job; Jobs by JobSet;
slices by node; devices by node and by claim; the children of each CompositePodGroup).
`flush()` recomputes those rows and returns a patch — the rows set and the keys deleted, per
collection, plus the topology levels when they changed — or None when nothing the page shows
changed. `document()` is the whole picture, which a page gets once when it connects; after that
it applies patches. At 4,096 nodes and 50,000 pods a patch for a gang of 32 pods is a few tens of
kilobytes where the whole document is megabytes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from phalanx.api.scheduling import fields
from phalanx.client.informer import object_key

from . import model, workloads
from .model import Obj, natural_key
from .timeline import DEFAULT_CAPACITY, Timeline, event_entry

COLLECTIONS = ("nodes", "podGroups", "claims", "pendingPods", "jobSets", "jobs", "compositePodGroups",
               "workloads", "deviceClasses", "drivers", "timeline")
MAX_TREE_DEPTH = 5  # a CompositePodGroup tree is at most 4 levels deep; one more guards against cycles


class Index:
    """value -> the set of keys that carry it."""

    def __init__(self) -> None:
        self._sets: dict[str, set[Any]] = defaultdict(set)

    def add(self, value: str | None, member: Any) -> None:
        if value:
            self._sets[value].add(member)

    def discard(self, value: str | None, member: Any) -> None:
        if value and value in self._sets:
            members = self._sets[value]
            members.discard(member)
            if not members:
                del self._sets[value]

    def get(self, value: str) -> set[Any]:
        return self._sets.get(value, set())


def _ns_key(obj: Obj, name: str | None) -> str | None:
    return f"{model.namespace_of(obj)}/{name}" if name else None


def _group_key(pod: Obj) -> str | None:
    return _ns_key(pod, model.pod_group_name(pod))


def _job_key(pod: Obj) -> str | None:
    return _ns_key(pod, workloads.controller_of(pod, "Job"))


class ClusterView:
    """Rows per collection, kept current; see the module docstring."""

    def __init__(self, timeline_capacity: int = DEFAULT_CAPACITY):
        self.objects: dict[str, dict[str, Obj]] = defaultdict(dict)  # kind -> key -> object (shared, read-only)
        self.levels: list[str] = []
        self.rows: dict[str, dict[str, Obj]] = {c: {} for c in COLLECTIONS}
        self.generation = 0
        self.timeline = Timeline(timeline_capacity)
        self.timeline_held = False  # while the Events that existed at the start are still being read
        self._dirty: dict[str, set[str]] = {c: set() for c in COLLECTIONS}
        self._levels_dirty = False
        self._pod_requests: dict[str, tuple[int, int]] = {}  # pod key -> (CPU millis, memory bytes)
        self._pods_by_node, self._pods_by_group, self._pods_by_job = Index(), Index(), Index()
        self._jobs_by_jobset, self._slices_by_node = Index(), Index()
        self._children, self._groups_by_workload = Index(), Index()
        self._device_node: dict[str, str] = {}
        self._device_claim: dict[str, str] = {}
        self._driver_pools: dict[str, Counter[str]] = defaultdict(Counter)  # driver -> pool -> devices
        self._handlers: dict[str, Callable[[str, Obj | None, Obj | None], None]] = {
            "Node": self._node, "Pod": self._pod, "PodGroup": self._pod_group, "ResourceSlice": self._slice,
            "ResourceClaim": self._claim, "Job": self._job, "JobSet": self._jobset,
            "CompositePodGroup": self._composite, "Workload": self._workload, "DeviceClass": self._device_class,
        }

    # -- feeding ----------------------------------------------------------------------------------
    def upsert(self, kind: str, obj: Obj) -> None:
        key = object_key(obj)
        old = self.objects[kind].get(key)
        self.objects[kind][key] = obj
        self._handlers[kind](key, old, obj)

    def remove(self, kind: str, obj: Obj) -> None:
        key = object_key(obj)
        old = self.objects[kind].pop(key, None)
        if old is not None:
            self._handlers[kind](key, old, None)

    def record_events(self, events: Iterable[Obj]) -> None:
        nodes = self.objects["Node"]
        for ev in events:
            entry = event_entry(ev, nodes)
            if entry is not None:
                self.timeline.record(entry)
        self._dirty["timeline"].add("*")

    def _mark(self, collection: str, *keys: str | None) -> None:
        self._dirty[collection].update(k for k in keys if k)

    # -- what each kind's change can alter ------------------------------------------------------------
    def _node(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("nodes", key)
        if old is None or new is None or model.labels(old) != model.labels(new):
            self._levels_dirty = True

    def _pod(self, key: str, old: Obj | None, new: Obj | None) -> None:
        for pod, index in ((old, self._unindex_pod), (new, self._index_pod)):
            if pod is not None:
                index(key, pod)
                self._mark("nodes", model.node_name_of(pod))
                self._mark("podGroups", _group_key(pod))
                self._mark("jobs", _job_key(pod))
        self._mark("pendingPods", key)
        if new is None:
            self._pod_requests.pop(key, None)
        else:
            self._pod_requests[key] = (model.pod_cpu_request_milli(new), model.pod_memory_request_bytes(new))

    def _index_pod(self, key: str, pod: Obj) -> None:
        self._pods_by_node.add(model.node_name_of(pod), key)
        self._pods_by_group.add(_group_key(pod), key)
        self._pods_by_job.add(_job_key(pod), key)

    def _unindex_pod(self, key: str, pod: Obj) -> None:
        self._pods_by_node.discard(model.node_name_of(pod), key)
        self._pods_by_group.discard(_group_key(pod), key)
        self._pods_by_job.discard(_job_key(pod), key)

    def _parented(self, kind: str, key: str, old: Obj | None, new: Obj | None) -> None:
        """A PodGroup or CompositePodGroup: the child of its parent CompositePodGroup."""
        for obj, change in ((old, self._children.discard), (new, self._children.add)):
            if obj is not None:
                parent = _ns_key(obj, fields.parent_composite(obj))
                change(parent, (kind, key))
                self._mark("compositePodGroups", parent)

    def _pod_group(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("podGroups", key)
        self._parented("PodGroup", key, old, new)
        for obj, change in ((old, self._groups_by_workload.discard), (new, self._groups_by_workload.add)):
            if obj is not None:
                workload = _ns_key(obj, fields.workload_name(obj))
                change(workload, key)
                self._mark("workloads", workload)

    def _composite(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("compositePodGroups", key)
        self._parented("CompositePodGroup", key, old, new)

    def _slice(self, key: str, old: Obj | None, new: Obj | None) -> None:
        if old is not None:
            node, devices = model.slice_devices(old)
            self._slices_by_node.discard(node, key)
            self._mark("nodes", node)
            for driver, pool, name in devices:
                dkey = model.device_key(driver, pool, name)
                if self._device_node.get(dkey) == node:
                    del self._device_node[dkey]
                self._driver_pools[driver][pool] -= 1
                self._mark("claims", self._device_claim.get(dkey))
        if new is not None:
            node, devices = model.slice_devices(new)
            self._slices_by_node.add(node, key)
            self._mark("nodes", node)
            for driver, pool, name in devices:
                dkey = model.device_key(driver, pool, name)
                if node:
                    self._device_node[dkey] = node
                self._driver_pools[driver][pool] += 1
                self._mark("claims", self._device_claim.get(dkey))
        self._dirty["drivers"].add("*")

    def _claim(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("claims", key)
        for dkey in model.claim_device_keys(old) if old is not None else ():
            if self._device_claim.get(dkey) == key:
                del self._device_claim[dkey]
            self._mark("nodes", self._device_node.get(dkey))
        for dkey in model.claim_device_keys(new) if new is not None else ():
            self._device_claim[dkey] = key
            self._mark("nodes", self._device_node.get(dkey))
        self._dirty["drivers"].add("*")

    def _job(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("jobs", key)
        for obj, change in ((old, self._jobs_by_jobset.discard), (new, self._jobs_by_jobset.add)):
            if obj is not None:
                jobset = _ns_key(obj, workloads.controller_of(obj, "JobSet"))
                change(jobset, key)
                self._mark("jobSets", jobset)

    def _jobset(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("jobSets", key)

    def _workload(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("workloads", key)

    def _device_class(self, key: str, old: Obj | None, new: Obj | None) -> None:
        self._mark("deviceClasses", key)

    # -- rows -----------------------------------------------------------------------------------------
    def labels_of(self, node: str) -> dict[str, str]:
        obj = self.objects["Node"].get(node)
        return model.labels(obj) if obj is not None else {}

    def _pods(self, keys: Iterable[str]) -> list[Obj]:
        pods = self.objects["Pod"]
        return [pods[k] for k in keys if k in pods]

    def _node_row(self, name: str) -> Obj | None:
        node = self.objects["Node"].get(name)
        if node is None:
            return None
        pods = self.objects["Pod"]
        cpu = memory = 0
        for k in self._pods_by_node.get(name):
            if k in pods and model.is_live(pods[k]):
                pod_cpu, pod_memory = self._pod_requests.get(k, (0, 0))
                cpu, memory = cpu + pod_cpu, memory + pod_memory
        devices = []
        for slice_key in self._slices_by_node.get(name):
            _, devs = model.slice_devices(self.objects["ResourceSlice"][slice_key])
            devices += [{"name": d, "driver": driver, "pool": pool,
                         "claim": self._device_claim.get(model.device_key(driver, pool, d))} for driver, pool, d in devs]
        return model.node_cell(node, self.levels, cpu, devices, memory)

    def _pod_group_row(self, key: str) -> Obj | None:
        pg = self.objects["PodGroup"].get(key)
        if pg is None:
            return None
        return model.pod_group_row(pg, self._pods(self._pods_by_group.get(key)), self.labels_of)

    def _claim_row(self, key: str) -> Obj | None:
        claim = self.objects["ResourceClaim"].get(key)
        return model.claim_row(claim, self._device_node) if claim is not None else None

    def _pending_row(self, key: str) -> Obj | None:
        pod = self.objects["Pod"].get(key)
        return model.pending_pod_row(pod) if pod is not None else None

    def _job_row(self, key: str) -> Obj | None:
        job = self.objects["Job"].get(key)
        return workloads.job_row(job, self._pods(self._pods_by_job.get(key))) if job is not None else None

    def _jobset_row(self, key: str) -> Obj | None:
        jobset = self.objects["JobSet"].get(key)
        return workloads.jobset_row(jobset, self._jobs_by_jobset.get(key)) if jobset is not None else None

    def _composite_row(self, key: str) -> Obj | None:
        cpg = self.objects["CompositePodGroup"].get(key)
        if cpg is None:
            return None
        return workloads.composite_row(cpg, self._children.get(key), self._tree_nodes(key), self.labels_of)

    def _tree_nodes(self, key: str, depth: int = 0) -> set[str]:
        """The nodes of every PodGroup below the CompositePodGroup `key`."""
        nodes: set[str] = set()
        if depth >= MAX_TREE_DEPTH:
            return nodes
        for kind, child in self._children.get(key):
            if kind == "PodGroup":
                nodes.update((self.rows["podGroups"].get(child) or {}).get("nodes") or ())
            else:
                nodes |= self._tree_nodes(child, depth + 1)
        return nodes

    def _workload_row(self, key: str) -> Obj | None:
        wl = self.objects["Workload"].get(key)
        return workloads.workload_row(wl, self._groups_by_workload.get(key)) if wl is not None else None

    def _device_class_row(self, key: str) -> Obj | None:
        dc = self.objects["DeviceClass"].get(key)
        return model.device_class_row(dc) if dc is not None else None

    def _driver_rows(self) -> dict[str, Obj]:
        allocated: Counter[str] = Counter(dkey.split("/", 1)[0] for dkey in self._device_claim)
        return {driver: {"name": driver, "pools": sum(1 for n in pools.values() if n > 0),
                         "devices": sum(pools.values()), "allocated": allocated.get(driver, 0)}
                for driver, pools in self._driver_pools.items() if sum(pools.values()) > 0}

    # -- patches ----------------------------------------------------------------------------------------
    def _row_functions(self) -> list[tuple[str, Callable[[str], Obj | None]]]:
        # PodGroups before CompositePodGroups: a tree's nodes are its PodGroups' rows.
        return [("nodes", self._node_row), ("podGroups", self._pod_group_row), ("claims", self._claim_row),
                ("pendingPods", self._pending_row), ("jobs", self._job_row), ("jobSets", self._jobset_row),
                ("compositePodGroups", self._composite_row), ("workloads", self._workload_row),
                ("deviceClasses", self._device_class_row)]

    def _refresh_levels(self) -> bool:
        if not self._levels_dirty:
            return False
        self._levels_dirty = False
        levels = model.topology_levels(self.objects["Node"].values())
        if levels == self.levels:
            return False
        self.levels = levels
        self._dirty["nodes"].update(self.objects["Node"])
        return True

    def _mark_ancestors(self) -> None:
        """A PodGroup's change reaches every CompositePodGroup above it (their trees' nodes)."""
        for key in list(self._dirty["podGroups"]) + list(self._dirty["compositePodGroups"]):
            obj = self.objects["PodGroup"].get(key) or self.objects["CompositePodGroup"].get(key)
            for _ in range(MAX_TREE_DEPTH):
                parent = _ns_key(obj, fields.parent_composite(obj)) if obj is not None else None
                if parent is None:
                    break
                self._dirty["compositePodGroups"].add(parent)
                obj = self.objects["CompositePodGroup"].get(parent)

    def flush(self) -> Obj | None:
        """Recompute the rows changes marked; the patch (None: the page would see no difference)."""
        levels_changed = self._refresh_levels()
        self._mark_ancestors()
        put: dict[str, list[Obj]] = {}
        gone: dict[str, list[str]] = {}
        for collection, row_of in self._row_functions():
            keys, self._dirty[collection] = self._dirty[collection], set()
            rows = self.rows[collection]
            for key in keys:
                row = row_of(key)
                if row is None:
                    if rows.pop(key, None) is not None:
                        gone.setdefault(collection, []).append(key)
                elif rows.get(key) != row:
                    rows[key] = row
                    put.setdefault(collection, []).append(row)
        self._flush_drivers(put, gone)
        self._flush_timeline(put, gone)
        if not (put or gone or levels_changed):
            return None
        self.generation += 1
        patch: Obj = {"generation": self.generation, "set": put, "delete": gone}
        if levels_changed:
            patch["levels"] = self.levels
        return patch

    def _flush_drivers(self, put: dict[str, list[Obj]], gone: dict[str, list[str]]) -> None:
        if not self._dirty["drivers"]:
            return
        self._dirty["drivers"] = set()
        rows, old = self._driver_rows(), self.rows["drivers"]
        changed = [row for name, row in rows.items() if old.get(name) != row]
        removed = [name for name in old if name not in rows]
        self.rows["drivers"] = rows
        if changed:
            put["drivers"] = changed
        if removed:
            gone["drivers"] = removed

    def _flush_timeline(self, put: dict[str, list[Obj]], gone: dict[str, list[str]]) -> None:
        if not self._dirty["timeline"] or self.timeline_held:
            return
        self._dirty["timeline"] = set()
        changed, removed = self.timeline.take_changes()
        if changed:
            put["timeline"] = sorted(changed.values(), key=lambda e: (e["at"], e["seq"]))
        if removed:
            gone["timeline"] = sorted(removed)

    def document(self) -> Obj:
        """The whole picture: the levels and every collection's rows, in the page's order."""
        doc: Obj = {"generation": self.generation, "levels": self.levels}
        for collection in COLLECTIONS:
            rows = self.rows[collection].values()
            if collection == "nodes":
                doc[collection] = sorted(rows, key=lambda c: ([natural_key(p) for p in c["path"]], natural_key(c["name"])))
            elif collection == "timeline":
                doc[collection] = self.timeline.ordered()
            else:
                doc[collection] = [rows_by_key[1] for rows_by_key in
                                   sorted(self.rows[collection].items(), key=lambda kv: natural_key(kv[0]))]
        return doc
