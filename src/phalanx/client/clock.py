"""The one clock every component reads: wall-clock time in a cluster, virtual time in tests.

    clock.now()            -> seconds since the epoch (float)
    await clock.sleep(s)   -> wait `s` seconds of this clock's time

`RealClock` is `time.time` + `asyncio.sleep`. `VirtualClock` never waits for real time: a sleeper
is parked until the test moves time on, and `run_until(predicate)` moves it on by itself, jumping
straight to the next sleeper's deadline whenever the event loop has nothing else to do:

    clock = VirtualClock()
    ...start informers and controllers with `clock=clock`...
    assert await clock.run_until(lambda: gc_done(), within=60)

`phalanx.sim` builds its simulation environment on the same `Clock` protocol.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import datetime, timezone
from typing import Callable, Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


def to_datetime(t: float) -> datetime:
    """A clock reading as an aware UTC datetime (what `API(now=...)` and timestamps want)."""
    return datetime.fromtimestamp(t, timezone.utc)


class RealClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


REAL_CLOCK = RealClock()


async def settle(max_rounds: int = 10_000) -> None:
    """Let every runnable asyncio task run until the loop has nothing ready but I/O and timers."""
    loop = asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)  # CPython's BaseEventLoop run queue
    if ready is None:  # another loop implementation: yield generously instead
        for _ in range(200):
            await asyncio.sleep(0)
        return
    for _ in range(max_rounds):
        await asyncio.sleep(0)
        if not ready:
            return


class VirtualClock:
    """Time that moves only when told to (`advance`, `run_until`)."""

    def __init__(self, start: float = 1_767_225_600.0):  # 2026-01-01T00:00:00Z
        self._now = float(start)
        self._sleepers: list[tuple[float, int, asyncio.Future]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def datetime(self) -> datetime:
        return to_datetime(self._now)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    def next_deadline(self) -> float | None:
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)

    def _wake_due(self) -> None:
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)

    async def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, waking sleepers in deadline order and letting each
        woken task run (and sleep again) before time moves past the next deadline."""
        target = self._now + seconds
        await settle()
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > target:
                break
            self._now = max(self._now, deadline)
            self._wake_due()
            await settle()
        self._now = max(self._now, target)
        self._wake_due()
        await settle()

    async def run_until(self, predicate: Callable[[], bool], within: float = 3600.0) -> bool:
        """Run the loop, jumping time to the next sleeper whenever it is idle, until `predicate()`
        holds (True) or `within` virtual seconds pass with it still false (False)."""
        limit = self._now + within
        while True:
            await settle()
            if predicate():
                return True
            deadline = self.next_deadline()
            if deadline is None or deadline > limit:
                self._now = max(self._now, limit)
                self._wake_due()
                await settle()
                return predicate()
            self._now = max(self._now, deadline)
            self._wake_due()
