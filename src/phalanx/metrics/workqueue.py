"""client-go's work queue metrics (`k8s.io/component-base/metrics/prometheus/workqueue`), by queue name.

- `workqueue_depth{name}`: keys waiting in the queue (read from the live queues when scraped);
- `workqueue_adds_total{name}`: keys added (not counting adds of a key already waiting);
- `workqueue_retries_total{name}`: rate-limited re-adds;
- `workqueue_queue_duration_seconds{name}`: how long a key waited before a worker took it;
- `workqueue_work_duration_seconds{name}`: how long processing a key took.

`QueueMetrics(queue)` holds the children of one named queue, resolved once (queues of one name
share them); a queue without a name records nothing, as client-go's unnamed queues do.
"""

from __future__ import annotations

from typing import Protocol

from .local import CounterFamily, HistogramFamily
from .registry import ScrapeGauge, exponential_buckets

# client-go: ExponentialBuckets(10e-9, 10, 10), from 10 ns to 100 s
DURATION_BUCKETS = exponential_buckets(10e-9, 10, 10)

DEPTH = ScrapeGauge("workqueue_depth", "[ALPHA] Current depth of workqueue", ("name",))
ADDS = CounterFamily("workqueue_adds_total", "[ALPHA] Total number of adds handled by workqueue", ("name",))
RETRIES = CounterFamily("workqueue_retries_total", "[ALPHA] Total number of retries handled by workqueue", ("name",))
QUEUE_DURATION = HistogramFamily("workqueue_queue_duration_seconds",
                                 "[ALPHA] How long in seconds an item stays in workqueue before being requested.",
                                 ("name",), buckets=DURATION_BUCKETS)
WORK_DURATION = HistogramFamily("workqueue_work_duration_seconds",
                                "[ALPHA] How long in seconds processing an item from workqueue takes.",
                                ("name",), buckets=DURATION_BUCKETS)


class Queue(Protocol):
    name: str

    def __len__(self) -> int: ...

    @property
    def shutting_down(self) -> bool: ...


def _depth(q: Queue) -> dict[tuple[str, ...], float]:
    return {(q.name,): 0.0 if q.shutting_down else float(len(q))}


class QueueMetrics:
    """The metric children of one named queue; its depth is read from it when scraped."""

    __slots__ = ("adds", "retries", "queue_duration", "work_duration")

    def __init__(self, queue: Queue):
        name = queue.name
        DEPTH.add_source(queue, _depth)
        self.adds = ADDS.labels(name)
        self.retries = RETRIES.labels(name)
        self.queue_duration = QUEUE_DURATION.labels(name)
        self.work_duration = WORK_DURATION.labels(name)
