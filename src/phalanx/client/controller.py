"""The shape every phalanx controller shares: informers -> keyed work queue -> `sync(key)` workers
(client-go's sample-controller pattern; the Job controller and the simulated kubelet alike build on it).

A controller subclasses `Controller`, asks for the informers it needs in `__init__` and says what
to enqueue, then writes `sync(key)` to read the current state and converge it:

    class MyController(Controller):
        name = "my-controller"

        def __init__(self, client, factory=None, **kw):
            super().__init__(client, factory, **kw)
            self.things = self.informer("v1", "ConfigMap")
            self.enqueue_on(self.things)            # every add/update/delete enqueues ns/name

        async def sync(self, key: str) -> None:
            obj = self.things.get(key)
            ...

    ctrl = MyController(client, factory, clock=clock)
    ctrl.start()          # or: await ctrl.run() (returns after stop())
    ...
    await ctrl.stop()

`run()` calls `setup()` (for work that needs the API, e.g. discovery), starts the factory's
informers, waits until this controller's informers have synced, then runs `workers` workers. A
`sync` that raises is retried with the queue's rate limit (5 ms doubling to 1000 s per key); one
that returns normally resets the key's backoff. `enqueue_after(key, s)` asks for a later look
(polling for something that has no event). Level-triggered: a controller keeps no state the
API does not hold, so a new instance converges from the informers' first lists.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Generic, Hashable, TypeVar, cast

from ..machinery.errors import StatusError
from .clock import REAL_CLOCK, Clock
from .informer import Informer, InformerFactory, object_key
from .workqueue import WorkQueue
from .interface import Client

Obj = dict[str, Any]


# enqueue_coalesced: a key whose syncs take at least COSTLY_SYNC seconds waits COALESCE_FACTOR times
# its last sync (at most COALESCE_MAX seconds) between coalesced syncs.
COSTLY_SYNC = 0.002
COALESCE_FACTOR = 10.0
COALESCE_MAX = 2.0
COSTLY_KEYS_KEPT = 10_000

# A controller's work-queue key: "namespace/name" for most, anything hashable for some (the
# garbage collector queues (operation, uid) pairs).
KeyT = TypeVar("KeyT", bound=Hashable)


class Controller(Generic[KeyT]):
    name: str = "controller"
    workers: int = 1

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        self.client = client
        self.clock = clock or (factory.clock if factory is not None else REAL_CLOCK)
        self._own_factory = factory is None
        self.factory = factory if factory is not None else InformerFactory(client, clock=self.clock)
        if workers is not None:
            self.workers = workers
        self.queue = WorkQueue(self.name, clock=self.clock)
        self.log = logging.getLogger(f"phalanx.controllers.{self.name}")
        self._informers: list[Informer] = []
        self._task: asyncio.Task | None = None
        self._worker_tasks: list[asyncio.Task] = []
        self._stop_event: asyncio.Event | None = None
        self.synced = False
        self._sync_cost: dict[KeyT, float] = {}  # seconds of the last sync, for keys whose syncs are costly

    # -- wiring ------------------------------------------------------------------------------
    def informer(self, api_version: str, kind: str, **kwargs) -> Informer:
        """A shared informer from the factory that this controller waits for before working."""
        inf = self.factory.informer(api_version, kind, **kwargs)
        if inf not in self._informers:
            self._informers.append(inf)
        return inf

    def enqueue_on(self, informer: Informer, key_of: Callable[[Obj], str | None] = object_key) -> None:
        """Enqueue `key_of(obj)` on every add, update and delete the informer sees."""
        def add(obj: Obj) -> None:
            key = key_of(obj)
            if key is not None:
                self.queue.add(key)

        informer.add_event_handler(on_add=add, on_update=lambda old, new: add(new), on_delete=add)

    def enqueue(self, key: KeyT) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: KeyT, delay: float) -> None:
        self.queue.add_after(key, delay)

    def enqueue_coalesced(self, key: KeyT, window: float) -> None:
        """Sync `key` within `window` seconds, once for every such event in between (see
        `WorkQueue.add_coalesced`): for events that change only what the sync reports. A key whose
        last sync took long waits longer (COALESCE_FACTOR times that sync, at most COALESCE_MAX
        seconds), so the syncs of a large object (a Service of thousands of pods, a JobSet of
        hundreds of Jobs) take a bounded share of the loop however fast its events come."""
        cost = self._sync_cost.get(key)
        if cost is not None:
            window = max(window, min(COALESCE_MAX, COALESCE_FACTOR * cost))
        self.queue.add_coalesced(key, window)

    def _note_cost(self, key: KeyT, seconds: float) -> None:
        if seconds >= COSTLY_SYNC:
            if len(self._sync_cost) >= COSTLY_KEYS_KEPT and key not in self._sync_cost:
                self._sync_cost.clear()  # keys of objects long gone: start over
            self._sync_cost[key] = seconds
        else:
            self._sync_cost.pop(key, None)

    # -- behaviour ---------------------------------------------------------------------------
    async def setup(self) -> None:
        """Runs once at the start of `run()`, before informers start. Override as needed."""

    async def sync(self, key: KeyT) -> None:
        raise NotImplementedError

    # -- lifecycle ---------------------------------------------------------------------------
    async def run(self) -> None:
        self._stop_event = asyncio.Event()
        await self.setup()
        self.factory.start()
        await self.factory.wait_for_sync(self._informers)
        self.synced = True
        self.log.debug("caches synced; starting %d workers", self.workers)
        self._worker_tasks = [asyncio.get_running_loop().create_task(self._worker(), name=f"{self.name} worker {i}")
                              for i in range(self.workers)]
        try:
            await self._stop_event.wait()
        finally:
            for t in self._worker_tasks:
                t.cancel()
            for t in self._worker_tasks:
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
            self._worker_tasks = []

    def start(self) -> asyncio.Task:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name=self.name)
        return self._task

    async def stop(self) -> None:
        self.queue.shutdown()
        if self._stop_event is not None:
            self._stop_event.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self._own_factory:
            await self.factory.stop()

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            if key is None:
                return
            started = time.perf_counter()
            try:
                await self.sync(cast(KeyT, key))  # the queue holds only keys this controller added
                self.queue.forget(key)
                self._note_cost(cast(KeyT, key), time.perf_counter() - started)
            except asyncio.CancelledError:
                raise
            except StatusError as e:
                level = logging.DEBUG if e.code in (404, 409) else logging.WARNING
                self.log.log(level, "error syncing %r: %s %s: %s; requeuing", key, e.code, e.reason, e.message)
                self.queue.add_rate_limited(key)
            except Exception:
                self.log.exception("error syncing %r; requeuing", key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)
            await asyncio.sleep(0)  # let informers and other workers run between keys
