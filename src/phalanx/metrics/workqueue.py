"""client-go's work queue metrics (`k8s.io/component-base/metrics/prometheus/workqueue`), by queue name.

- `workqueue_depth{name}`: keys waiting in the queue;
- `workqueue_adds_total{name}`: keys added (not counting adds of a key already waiting);
- `workqueue_retries_total{name}`: rate-limited re-adds;
- `workqueue_queue_duration_seconds{name}`: how long a key waited before a worker took it;
- `workqueue_work_duration_seconds{name}`: how long processing a key took.

`QueueMetrics(name)` holds the label children of one queue, resolved once; a queue without a name
records nothing, as client-go's unnamed queues do.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from .registry import REGISTRY, exponential_buckets

# client-go: ExponentialBuckets(10e-9, 10, 10), from 10 ns to 100 s
DURATION_BUCKETS = exponential_buckets(10e-9, 10, 10)

DEPTH = Gauge("workqueue_depth", "[ALPHA] Current depth of workqueue", ("name",), registry=REGISTRY)
ADDS = Counter("workqueue_adds_total", "[ALPHA] Total number of adds handled by workqueue", ("name",),
               registry=REGISTRY)
RETRIES = Counter("workqueue_retries_total", "[ALPHA] Total number of retries handled by workqueue", ("name",),
                  registry=REGISTRY)
QUEUE_DURATION = Histogram("workqueue_queue_duration_seconds",
                           "[ALPHA] How long in seconds an item stays in workqueue before being requested.",
                           ("name",), buckets=DURATION_BUCKETS, registry=REGISTRY)
WORK_DURATION = Histogram("workqueue_work_duration_seconds",
                          "[ALPHA] How long in seconds processing an item from workqueue takes.",
                          ("name",), buckets=DURATION_BUCKETS, registry=REGISTRY)


class QueueMetrics:
    """The metric children of one named queue."""

    __slots__ = ("depth", "adds", "retries", "queue_duration", "work_duration")

    def __init__(self, name: str):
        self.depth = DEPTH.labels(name)
        self.adds = ADDS.labels(name)
        self.retries = RETRIES.labels(name)
        self.queue_duration = QUEUE_DURATION.labels(name)
        self.work_duration = WORK_DURATION.labels(name)
