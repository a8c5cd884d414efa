"""VirtualClock and WorkQueue: client-go's queue semantics on virtual time."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.client import VirtualClock, WorkQueue
from phalanx.client.workqueue import BucketRateLimiter, ItemExponentialFailureRateLimiter


async def test_virtual_clock_wakes_sleepers_in_deadline_order_without_waiting():
    clock = VirtualClock()
    start = clock.now()
    woke: list[tuple[str, float]] = []

    async def sleeper(name, s):
        await clock.sleep(s)
        woke.append((name, clock.now() - start))

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("late", 30), ("early", 2), ("mid", 10))]
    await clock.advance(5)
    assert woke == [("early", 2)]
    assert await clock.run_until(lambda: len(woke) == 3, within=100)
    assert woke == [("early", 2), ("mid", 10), ("late", 30)]
    await asyncio.gather(*tasks)


async def test_run_until_gives_up_after_the_virtual_limit():
    clock = VirtualClock()
    start = clock.now()
    assert await clock.run_until(lambda: False, within=50) is False
    assert clock.now() - start == 50


@pytest.mark.parametrize("failures, expected", [
    (1, 0.005), (2, 0.010), (3, 0.020), (4, 0.040), (11, 5.12), (19, 1000.0), (40, 1000.0),
])
def test_per_item_backoff_doubles_from_5ms_to_1000s(failures, expected):
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(failures)]
    assert delays[-1] == pytest.approx(expected)
    assert limiter.num_requeues("k") == failures
    assert limiter.when("other") == pytest.approx(0.005)  # per key
    limiter.forget("k")
    assert limiter.when("k") == pytest.approx(0.005)


def test_overall_bucket_allows_a_burst_of_100_then_10_per_second():
    clock = VirtualClock()
    bucket = BucketRateLimiter(10, 100, clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("a") == pytest.approx(0.1)
    assert bucket.when("b") == pytest.approx(0.2)


async def test_a_key_waiting_in_the_queue_is_held_once():
    q = WorkQueue(clock=VirtualClock())
    for k in ("a", "b", "a", "a", "b"):
        q.add(k)
    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["a", "b"]
    assert len(q) == 0


async def test_a_key_added_while_processing_comes_back_after_done_and_never_to_two_workers():
    q = WorkQueue(clock=VirtualClock())
    q.add("a")
    first = await q.get()
    q.add("a")  # changed again while a worker holds it
    assert len(q) == 0  # not handed to a second worker
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not second.done()
    q.done(first)
    assert await second == "a"


async def test_rate_limited_requeue_waits_the_keys_backoff_in_virtual_time():
    clock = VirtualClock()
    q = WorkQueue(clock=clock, rate_limiter=ItemExponentialFailureRateLimiter())
    start = clock.now()
    seen: list[float] = []

    async def worker():
        while len(seen) < 4:
            key = await q.get()
            seen.append(round(clock.now() - start, 6))
            q.add_rate_limited(key)  # fail every time
            q.done(key)

    q.add("k")
    task = asyncio.create_task(worker())
    assert await clock.run_until(lambda: len(seen) == 4, within=10)
    assert seen == [0.0, 0.005, 0.015, 0.035]  # 5 ms, then 10 ms, then 20 ms later
    assert q.num_requeues("k") == 4
    q.forget("k")
    assert q.num_requeues("k") == 0
    q.shutdown()
    await task


async def test_add_after_keeps_the_earliest_time_for_a_waiting_key():
    clock = VirtualClock()
    q = WorkQueue(clock=clock)
    q.add_after("k", 10)
    q.add_after("k", 3)
    q.add_after("k", 20)
    assert q.waiting() == 1
    await clock.advance(2.9)
    assert len(q) == 0
    await clock.advance(0.2)
    assert len(q) == 1 and await q.get() == "k"
    q.done("k")
    await clock.advance(30)
    assert len(q) == 0  # the later requests were folded into the first


async def test_a_burst_of_coalesced_adds_is_one_key_within_the_window():
    clock = VirtualClock()
    q = WorkQueue(clock=clock)
    for _ in range(1000):
        q.add_coalesced("rs", 0.1)
    assert len(q) == 0 and q.waiting() == 1
    await clock.advance(0.1)
    assert len(q) == 1 and await q.get() == "rs"
    q.add_coalesced("rs", 0.1)  # while the sync runs: one more sync after it, not one per event
    q.add_coalesced("rs", 0.1)
    await clock.advance(0.1)
    q.done("rs")
    assert len(q) == 1 and await q.get() == "rs"
    q.done("rs")
    q.add("other")
    q.add_coalesced("other", 0.1)  # already queued: nothing more
    await clock.advance(1)
    assert len(q) == 1 and q.waiting() == 0


async def test_shutdown_wakes_waiting_workers_with_none():
    q = WorkQueue(clock=VirtualClock())
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shutdown()
    assert await asyncio.gather(*getters) == [None, None, None]
    q.add("late")
    assert len(q) == 0
