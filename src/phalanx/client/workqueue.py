"""client-go's rate-limited work queue, on asyncio.

A controller's informer handlers `add(key)`; its workers loop

    key = await queue.get()          # None once the queue is shut down
    try:
        await sync(key)
        queue.forget(key)            # success: reset the key's backoff
    except Exception:
        queue.add_rate_limited(key)  # failure: retry after the key's backoff
    finally:
        queue.done(key)

Semantics carried over from client-go's `workqueue`:
- a key waiting in the queue is held once, however often it is added (deduplication);
- a key being processed is not handed to a second worker; adding it meanwhile queues it again
  for after `done(key)`;
- `add_after(key, delay)` adds later; a key already waiting keeps its earliest time;
- `add_rate_limited(key)` waits what the rate limiter says: by default client-go's
  `DefaultControllerRateLimiter`, the larger of a per-key exponential backoff
  (5 ms, doubling, capped at 1000 s) and an overall token bucket (10 per second, burst 100);
- `shutdown()` wakes every worker with None; `shutdown_with_drain()` first waits for keys
  being processed.

A named queue records client-go's metrics (`phalanx.metrics.workqueue`: `workqueue_depth`,
`workqueue_adds_total`, `workqueue_retries_total`, `workqueue_queue_duration_seconds`,
`workqueue_work_duration_seconds`, labelled with the name); an unnamed one records none.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Hashable

from ..metrics.workqueue import QueueMetrics
from .clock import REAL_CLOCK, Clock


class ItemExponentialFailureRateLimiter:
    """base * 2^failures per key, capped at max_delay (client-go's defaults: 5 ms, 1000 s)."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0):
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        if n > 62:  # avoid float overflow; the cap applies long before
            return self.max_delay
        return min(self.base_delay * (2 ** n), self.max_delay)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)


class BucketRateLimiter:
    """An overall token bucket (`golang.org/x/time/rate`): `qps` tokens a second, `burst` at most.
    `when` reserves a token and says how long until it is available."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock = REAL_CLOCK):
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._last = clock.now()

    def when(self, item: Hashable) -> float:
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        pass


class MaxOfRateLimiter:
    """The longest delay any of the limiters asks for."""

    def __init__(self, *limiters):
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(lim.when(item) for lim in self.limiters)

    def num_requeues(self, item: Hashable) -> int:
        return max(lim.num_requeues(item) for lim in self.limiters)

    def forget(self, item: Hashable) -> None:
        for lim in self.limiters:
            lim.forget(item)


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK) -> MaxOfRateLimiter:
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(10.0, 100, clock))


class WorkQueue:
    def __init__(self, name: str = "", *, clock: Clock = REAL_CLOCK, rate_limiter=None):
        self.name = name
        self.clock = clock
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(clock)
        self._queue: collections.deque = collections.deque()
        self._dirty: set = set()
        self._processing: set = set()
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._delayed: dict[Hashable, tuple[float, asyncio.Task]] = {}
        self._shutting_down = False
        self._drained: asyncio.Event | None = None
        self._metrics = QueueMetrics(self) if name else None
        self._added_at: dict[Hashable, float] = {}  # queued keys: when they were added (metrics)
        self._started_at: dict[Hashable, float] = {}  # keys being processed: since when (metrics)

    # -- basic queue -------------------------------------------------------------------------
    def add(self, item: Hashable) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        m = self._metrics
        if m is not None:
            m.adds.inc()
            self._added_at[item] = time.perf_counter()
        if item in self._processing:
            return
        self._queue.append(item)
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    async def get(self) -> Hashable | None:
        """The next key (now marked processing), or None once the queue is shut down."""
        while not self._queue:
            if self._shutting_down:
                return None
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled() and self._queue:
                    self._wake_one()  # pass the wake-up on to another worker
                raise
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        m = self._metrics
        if m is not None:
            now = time.perf_counter()
            m.queue_duration.observe(now - self._added_at.pop(item, now))
            self._started_at[item] = now
        return item

    def done(self, item: Hashable) -> None:
        self._processing.discard(item)
        m = self._metrics
        if m is not None:
            started = self._started_at.pop(item, None)
            if started is not None:
                m.work_duration.observe(time.perf_counter() - started)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        elif not self._processing and self._drained is not None:
            self._drained.set()

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def shutdown(self) -> None:
        self._shutting_down = True
        for _, task in self._delayed.values():
            task.cancel()
        self._delayed.clear()
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)

    async def shutdown_with_drain(self) -> None:
        """Stop taking keys and wait until the keys being processed are done."""
        self.shutdown()
        if self._processing:
            self._drained = asyncio.Event()
            await self._drained.wait()

    # -- delaying ----------------------------------------------------------------------------
    def add_after(self, item: Hashable, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self.clock.now() + delay
        waiting = self._delayed.get(item)
        if waiting is not None:
            if waiting[0] <= ready_at:
                return
            waiting[1].cancel()
        task = asyncio.get_running_loop().create_task(self._add_later(item, delay))
        self._delayed[item] = (ready_at, task)

    def add_coalesced(self, item: Hashable, window: float) -> None:
        """Add `item` within `window` seconds, collapsing every add in between into one: nothing
        happens while the item is queued or already scheduled. For events that only refresh what a
        sync reports (a status), so a burst of them costs one sync instead of one each."""
        if item in self._dirty or item in self._delayed:
            return
        self.add_after(item, window)

    async def _add_later(self, item: Hashable, delay: float) -> None:
        await self.clock.sleep(delay)
        entry = self._delayed.get(item)
        if entry is not None and entry[1] is asyncio.current_task():
            del self._delayed[item]
        self.add(item)

    def waiting(self) -> int:
        """Keys scheduled by add_after that are not in the queue yet."""
        return len(self._delayed)

    # -- rate limiting -----------------------------------------------------------------------
    def add_rate_limited(self, item: Hashable) -> None:
        if self._metrics is not None and not self._shutting_down:
            self._metrics.retries.inc()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)
