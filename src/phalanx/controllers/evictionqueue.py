"""The node lifecycle controller's rate limiting of NoExecute taints: a token bucket and
upstream's `RateLimitedTimedQueue` (one per zone).

    queue = RateLimitedTimedQueue(qps=0.1, now=clock.now())
    queue.add("node-1", uid)                     # False when already queued
    await queue.try_process(now, taint_node)     # taint_node(name, uid) -> (done, retry_after)
    queue.swap_limiter(0.01)                     # a zone in partial disruption
    queue.next_attempt(now)                      # seconds until the head could be processed

As upstream: items leave in the order of their `process_at` (the time they were added, or a retry
time after a failure); each attempt takes a token first (so a queue whose head is not due yet still
spends it, as `Try` does); a QPS of 0 never gives a token. Burst is 1 (`EvictionRateLimiterBurst`).
A processed value stays a member (upstream's UniqueQueue keeps it in its set): adding it again does
nothing until it is `remove`d.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable

EVICTION_RATE_LIMITER_BURST = 1
_EPSILON = 1e-9  # tokens summed from float time steps fall short of 1 by rounding only


class TokenBucket:
    """client-go's token bucket rate limiter (`TryAccept` only); QPS <= 0 never accepts."""

    def __init__(self, qps: float, burst: int, now: float):
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def _refill(self, now: float) -> None:
        if self.qps > 0 and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = max(self.last, now)

    def try_accept(self, now: float) -> bool:
        if self.qps <= 0:
            return False
        self._refill(now)
        if self.tokens >= 1 - _EPSILON:
            self.tokens = max(0.0, self.tokens - 1)
            return True
        return False

    def wait_for_token(self, now: float) -> float | None:
        """Seconds until a token is there; None when none ever will be."""
        if self.qps <= 0:
            return None
        self._refill(now)
        return 0.0 if self.tokens >= 1 - _EPSILON else (1 - self.tokens) / self.qps


@dataclass
class TimedValue:
    value: str
    uid: str
    added_at: float
    process_at: float


Action = Callable[[str, str], Awaitable[tuple[bool, float]]]


class RateLimitedTimedQueue:
    def __init__(self, qps: float, now: float):
        self.limiter = TokenBucket(qps, EVICTION_RATE_LIMITER_BURST, now)
        self.items: dict[str, TimedValue] = {}  # waiting to be processed
        self.members: set[str] = set()  # added and not removed (processed ones included)

    def add(self, value: str, uid: str, now: float) -> bool:
        if value in self.members:
            return False
        self.members.add(value)
        self.items[value] = TimedValue(value, uid, now, now)
        return True

    def remove(self, value: str) -> bool:
        self.items.pop(value, None)
        if value in self.members:
            self.members.discard(value)
            return True
        return False

    def __len__(self) -> int:
        return len(self.items)

    def _head(self) -> TimedValue | None:
        return min(self.items.values(), key=lambda v: (v.process_at, v.value), default=None)

    def swap_limiter(self, qps: float, now: float) -> None:
        """Use another rate (upstream's SwapLimiter: a bucket whose token is spent when the old
        one had none left)."""
        if self.limiter.qps == qps:
            return
        new = TokenBucket(qps, EVICTION_RATE_LIMITER_BURST, now)
        if qps > 0 and not self.limiter.try_accept(now):
            new.try_accept(now)
        self.limiter = new

    async def try_process(self, now: float, action: Action) -> None:
        head = self._head()
        while head is not None:
            if not self.limiter.try_accept(now):
                return
            if now < head.process_at:
                return
            done, retry_after = await action(head.value, head.uid)
            if done:
                self.items.pop(head.value, None)
            elif head.value in self.items:
                head.process_at = now + retry_after + 1e-9
            head = self._head()

    def next_attempt(self, now: float) -> float | None:
        """Seconds until the head could be processed; None when empty or never."""
        head = self._head()
        if head is None:
            return None
        token = self.limiter.wait_for_token(now)
        if token is None:
            return None
        return max(token, head.process_at - now, 0.0)
