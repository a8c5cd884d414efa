"""The controller that publishes simulated DRA drivers' DeviceClasses and ResourceSlices.

    drivers = SimulatedDRADrivers(client, factory, drivers=spec.dra_drivers, clock=clock)
    drivers.start()
    ...
    await drivers.stop()

One controller serves every node and driver; queue keys are pools (`node/<driver>/<node>`,
`network/<driver>`) and classes (`class/<driver>/<class>`). The package docstring says what gets
published and when.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import orjson

from ...api.faults import DEVICE_FAULT_ANNOTATION, failed_devices
from ...client.controller import Controller
from ...client.informer import InformerFactory
from ...client.interface import Client
from ...machinery.errors import StatusError
from .config import DriverEntry, resolve_drivers
from .model import RESOURCE_API, SLICE_INDEX, DeviceClassSpec, DRADriverSpec, Obj
from .render import (DROPPABLE, PoolPlan, comparable_spec, decode_index, generate_name, index_length,
                     network_pool_plans, published_failure_times, render_node_devices, render_node_pool, serves,
                     slice_contents, slice_index_key, with_failure_taints)

def _fingerprint(spec: Mapping[str, Any]) -> bytes:
    return orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _controller_uid(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


class _WriteCache:
    """Slices this controller wrote or deleted that the informer may not show yet (client-go's
    MutationCache): a sync reads the informer's view corrected by these."""

    MAX_DELETED = 100_000

    def __init__(self) -> None:
        self.written: dict[str, Obj] = {}
        self.deleted: dict[str, None] = {}

    def stored(self, obj: Obj) -> None:
        self.written[obj["metadata"]["name"]] = obj
        self.deleted.pop(obj["metadata"]["name"], None)

    def removed(self, name: str) -> None:
        self.written.pop(name, None)
        self.deleted[name] = None
        while len(self.deleted) > self.MAX_DELETED:
            self.deleted.pop(next(iter(self.deleted)))

    def observed(self, obj: Obj) -> None:
        name: str = (obj.get("metadata") or {}).get("name", "")
        mine = self.written.get(name)
        if mine is not None and _rv(obj) >= _rv(mine):
            del self.written[name]

    def observed_delete(self, obj: Obj) -> None:
        name: str = (obj.get("metadata") or {}).get("name", "")
        self.written.pop(name, None)
        self.deleted.pop(name, None)

    def view(self, informer_objs: Iterable[Obj], index_key: str) -> list[Obj]:
        out = {o["metadata"]["name"]: o for o in informer_objs if o["metadata"]["name"] not in self.deleted}
        for name, mine in self.written.items():
            if index_key in slice_index_key(mine):
                cur = out.get(name)
                if cur is None or _rv(mine) > _rv(cur):
                    out[name] = mine
        return [out[k] for k in sorted(out)]


# ---------------------------------------------------------------------------------------------
# the controller


def _pool_of(slice_obj: Obj) -> dict:
    return (slice_obj.get("spec") or {}).get("pool") or {}


def _match_slices(plan: PoolPlan, existing: list[Obj], generation: int, owner_uid: str | None
                  ) -> tuple[dict[int, Obj], list[Obj]]:
    """Existing slices by the index in their name, and the ones to delete: another pool, an older
    generation, an index out of range or taken, another owner."""
    count = len(plan.slices)
    length = index_length(count)
    matched: dict[int, Obj] = {}
    obsolete: list[Obj] = []
    for s in existing:
        pool = _pool_of(s)
        index = decode_index(s["metadata"]["name"], length)
        if (pool.get("name") != plan.name or (pool.get("generation") or 0) < generation or index is None
                or index >= count or index in matched or _controller_uid(s) != owner_uid):
            obsolete.append(s)
        else:
            matched[index] = s
    return matched, obsolete


def _new_slice_metadata(index: int, count: int, driver: str, plan: PoolPlan, owner_uid: str | None) -> dict[str, Any]:
    md: dict[str, Any] = {"generateName": generate_name(index, count, driver, plan.owner_name)}
    if plan.owner is not None:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": plan.owner_name,
                                  "uid": owner_uid, "controller": True}]
    return md


class SimulatedDRADrivers(Controller[str]):
    """Publishes DeviceClasses and ResourceSlices for simulated DRA drivers (see the package doc)."""

    name = "dra-drivers"
    workers = 4
    RENDER_CACHE_SIZE = 8192

    def __init__(self, client: Client, factory: InformerFactory | None = None,
                 drivers: Iterable[DriverEntry] | None = None, **kw: Any):
        super().__init__(client, factory, **kw)
        self.drivers = resolve_drivers(drivers)
        self.by_name = {d.name: d for d in self.drivers}
        self._writes = _WriteCache()
        self._rendered: dict[tuple[str, str], list[dict]] = {}
        self._dropped: set[str] = set()
        self._accepted: dict[str, tuple[bytes, bytes]] = {}  # slice name -> (desired, stored) the API kept
        self.created = self.updated = self.deleted = 0  # observability, tests
        if not self.drivers:
            return
        self.nodes = self.informer("v1", "Node")
        self.slices = self.informer(RESOURCE_API, "ResourceSlice", indexers={SLICE_INDEX: slice_index_key})
        self.nodes.add_event_handler(on_add=self._node_event, on_update=self._node_updated,
                                     on_delete=self._node_event)
        self.slices.add_event_handler(on_add=self._slice_event, on_update=self._slice_updated,
                                      on_delete=self._slice_deleted)

    # -- events --------------------------------------------------------------------------------
    def _node_event(self, node: Obj) -> None:
        name = (node.get("metadata") or {}).get("name")
        for d in self.drivers:
            if d.node_local:
                self.queue.add(f"node/{d.name}/{name}")
            if d.pools:
                self.queue.add(f"network/{d.name}")

    def _node_updated(self, old: Obj, new: Obj) -> None:
        def inputs(n: Obj) -> tuple:
            md = n.get("metadata") or {}
            spec = n.get("spec") or {}
            return (md.get("uid"), md.get("labels"), spec.get("providerID"), spec.get("taints"),
                    (md.get("annotations") or {}).get(DEVICE_FAULT_ANNOTATION))
        if inputs(old) != inputs(new):
            self._node_event(new)

    def _slice_key(self, obj: Obj) -> str | None:
        spec = obj.get("spec") or {}
        driver = self.by_name.get(spec.get("driver", ""))
        if driver is None:
            return None
        node = spec.get("nodeName")
        return f"node/{driver.name}/{node}" if node else f"network/{driver.name}"

    def _slice_event(self, obj: Obj) -> None:
        self._writes.observed(obj)
        key = self._slice_key(obj)
        if key:
            self.queue.add(key)

    def _slice_updated(self, old: Obj, new: Obj) -> None:
        self._slice_event(new)

    def _slice_deleted(self, obj: Obj) -> None:
        self._writes.observed_delete(obj)
        key = self._slice_key(obj)
        if key:
            self.queue.add(key)

    async def setup(self) -> None:
        for d in self.drivers:
            for c in d.device_classes:
                self.queue.add(f"class/{d.name}/{c.name}")

    # -- sync ----------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        kind, _, rest = key.partition("/")
        if kind == "class":
            driver_name, _, class_name = rest.partition("/")
            driver = self.by_name.get(driver_name)
            cls = next((c for c in driver.device_classes if c.name == class_name), None) if driver else None
            if cls is not None:
                await self._ensure_class(cls)
        elif kind == "node":
            driver_name, _, node_name = rest.partition("/")
            driver = self.by_name.get(driver_name)
            if driver is not None:
                await self._sync_node_pool(driver, node_name)
        elif kind == "network":
            driver = self.by_name.get(rest)
            if driver is not None:
                await self._sync_network_pools(driver)

    async def _ensure_class(self, cls: DeviceClassSpec) -> None:
        try:
            await self.client.get(RESOURCE_API, "DeviceClass", None, cls.name)
            return  # present: a user's changes are theirs
        except StatusError as e:
            if e.code != 404:
                raise
        try:
            await self.client.create(cls.object())
            self.log.info("created DeviceClass %s", cls.name)
        except StatusError as e:
            if e.code != 409:
                raise

    def _current(self, index_key: str) -> list[Obj]:
        return self._writes.view(self.slices.by_index(SLICE_INDEX, index_key), index_key)

    async def _sync_node_pool(self, driver: DRADriverSpec, node_name: str) -> None:
        existing = self._current(f"{driver.name}|node|{node_name}")
        node = self.nodes.get(node_name)
        plan = None
        if node is not None and serves(driver, node) and driver.node_local:
            failed = failed_devices(node)
            content = self._node_pool_content(driver, node_name) if not failed else \
                self._failed_pool_content(driver, node_name, failed, existing)
            plan = PoolPlan(driver.name, node_name, {"nodeName": node_name}, content, owner=node)
        else:
            self._rendered.pop((driver.name, node_name), None)
        await self._reconcile_pool(driver.name, plan, existing)

    def _node_pool_content(self, driver: DRADriverSpec, node_name: str) -> list[dict]:
        """`render_node_pool`, remembered for the pools rendered last: the sync that follows our own
        write (the informer's event for it) compares without rendering again. Read-only."""
        key = (driver.name, node_name)
        content = self._rendered.pop(key, None)
        if content is None:
            content = render_node_pool(driver, node_name)
        self._rendered[key] = content
        while len(self._rendered) > self.RENDER_CACHE_SIZE:
            self._rendered.pop(next(iter(self._rendered)))
        return content

    @staticmethod
    def _failed_pool_content(driver: DRADriverSpec, node_name: str, failed: list[str],
                             existing: list[Obj]) -> list[dict]:
        """The pool's slices with its failed devices tainted (`fault.phalanx.dev/devices`)."""
        devices, counter_sets = render_node_devices(driver, node_name)
        kept = published_failure_times(driver.name, existing)
        return slice_contents(with_failure_taints(devices, driver.name, failed, kept), counter_sets)

    async def _sync_network_pools(self, driver: DRADriverSpec) -> None:
        plans = network_pool_plans(driver, self.nodes.list())
        by_pool: dict[str, list[Obj]] = {}
        for s in self._current(f"{driver.name}|network"):
            by_pool.setdefault(((s.get("spec") or {}).get("pool") or {}).get("name", ""), []).append(s)
        for name in sorted(set(plans) | set(by_pool)):
            await self._reconcile_pool(driver.name, plans.get(name), by_pool.get(name, []))

    async def _reconcile_pool(self, driver: str, plan: PoolPlan | None, existing: list[Obj]) -> None:
        """Make the pool's slices what `plan` says (none when `plan` is None), the way the helper
        library does: match slices to desired ones by the index in their name, delete the rest,
        bump the generation when the content changes."""
        if plan is None:
            for s in existing:
                await self._delete(s)
            return
        count = len(plan.slices)
        owner_uid = plan.owner["metadata"].get("uid") if plan.owner else None
        same_pool = [s for s in existing if _pool_of(s).get("name") == plan.name]
        generation = max((_pool_of(s).get("generation") or 0 for s in same_pool), default=0)
        matched, obsolete = _match_slices(plan, existing, generation, owner_uid)
        dropped = frozenset(self._dropped)

        def desired(i: int, gen: int) -> dict:
            return {"driver": driver, "pool": {"name": plan.name, "generation": gen, "resourceSliceCount": count},
                    **plan.placement, **plan.slices[i]}

        changed = {i for i, s in matched.items() if not self._same(s, desired(i, generation), dropped)}
        if not same_pool:
            generation = 1
        elif changed or obsolete or len(matched) < count:
            generation += 1

        for s in obsolete:
            await self._delete(s)
        for i, s in sorted(matched.items()):
            if i in changed or _pool_of(s).get("generation") != generation:
                new = {"apiVersion": RESOURCE_API, "kind": "ResourceSlice", "metadata": dict(s["metadata"]),
                       "spec": self._strip(desired(i, generation))}
                await self._write(new, desired(i, generation), update=True)
        for i in range(count):
            if i not in matched:
                obj = {"apiVersion": RESOURCE_API, "kind": "ResourceSlice",
                       "metadata": _new_slice_metadata(i, count, driver, plan, owner_uid),
                       "spec": self._strip(desired(i, generation))}
                await self._write(obj, desired(i, generation), update=False)

    def _strip(self, spec: dict) -> dict:
        """The desired spec without the field families the API server was found to drop."""
        if not self._dropped:
            return spec
        spec = dict(spec)
        if "counters" in self._dropped:
            spec.pop("sharedCounters", None)
        if spec.get("devices"):
            devs = []
            for d in spec["devices"]:
                d = dict(d)
                if "taints" in self._dropped:
                    d.pop("taints", None)
                if "counters" in self._dropped:
                    d.pop("consumesCounters", None)
                devs.append(d)
            spec["devices"] = devs
        return spec

    def _same(self, actual: Obj, desired_spec: dict, dropped: frozenset[str]) -> bool:
        a = _fingerprint(comparable_spec(actual.get("spec") or {}, dropped))
        d = _fingerprint(comparable_spec(desired_spec, dropped))
        if a == d:
            return True
        return self._accepted.get(actual["metadata"]["name"]) == (d, a)

    async def _write(self, obj: Obj, desired_spec: dict, *, update: bool) -> None:
        # A conflict or a vanished slice raises: the sync is retried, and the informer's event for
        # the newer state requeues the pool anyway.
        stored = await (self.client.update(obj) if update else self.client.create(obj))
        if update:
            self.updated += 1
        else:
            self.created += 1
        self._writes.stored(stored)
        self._learn_dropped(desired_spec, stored)

    def _learn_dropped(self, desired_spec: dict, stored: Obj) -> None:
        got = stored.get("spec") or {}
        dropped = frozenset(self._dropped)
        want = comparable_spec(desired_spec, dropped)
        have = comparable_spec(got, dropped)
        if want == have:
            return
        newly = set()
        if any(d.get("taints") for d in desired_spec.get("devices") or []) and \
                not any(d.get("taints") for d in got.get("devices") or []):
            newly.add("taints")
        if (desired_spec.get("sharedCounters") and not got.get("sharedCounters")) or (
                any(d.get("consumesCounters") for d in desired_spec.get("devices") or []) and
                not any(d.get("consumesCounters") for d in got.get("devices") or [])):
            newly.add("counters")
        if newly - self._dropped:
            self._dropped |= newly
            self.log.warning("some fields were dropped by the apiserver, probably because these features are "
                             "disabled: %s; no longer publishing them",
                             " ".join(sorted(DROPPABLE[f] for f in newly)))
        dropped = frozenset(self._dropped)
        want, have = comparable_spec(desired_spec, dropped), comparable_spec(got, dropped)
        if want != have:  # something else the server changed: accept it rather than fight it
            self._accepted[stored["metadata"]["name"]] = (_fingerprint(want), _fingerprint(have))

    async def _delete(self, s: Obj) -> None:
        md = s["metadata"]
        try:
            await self.client.delete(RESOURCE_API, "ResourceSlice", None, md["name"],
                                     preconditions={"uid": md.get("uid")})
            self.deleted += 1
        except StatusError as e:
            if e.code not in (404, 409):
                raise
        self._writes.removed(md["name"])
        self._accepted.pop(md["name"], None)
