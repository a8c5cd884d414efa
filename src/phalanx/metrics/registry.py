"""The process's metric registry, its text exposition and gauges read at scrape time.

`REGISTRY` is a `prometheus_client.CollectorRegistry` of its own (not the library's global one),
with the process collector as upstream components have theirs. `exponential_buckets` gives
component-base's `ExponentialBuckets(start, factor, count)`. `ScrapeGauge` is a gauge whose samples
come from callbacks of live objects (held weakly), summed by label values.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Iterable, Mapping

import prometheus_client
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector

prometheus_client.disable_created_metrics()  # upstream's text has no `_created` series

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

LabelValues = tuple[str, ...]
Source = Callable[[Any], Mapping[LabelValues, float]]


def render() -> bytes:
    """Every registered metric in the Prometheus text format (version 0.0.4)."""
    return generate_latest(REGISTRY)


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """`count` bucket bounds from `start`, each `factor` times the one before."""
    return [start * factor ** i for i in range(count)]


class ScrapeGauge(Collector):
    """A gauge family computed when scraped: each source is `(object, fn)`; `fn(object)` returns
    `{label values: value}`. Sources whose object is gone are dropped; values of several live
    sources with the same label values add up (two schedulers' queues, say)."""

    def __init__(self, name: str, documentation: str, labelnames: Iterable[str] = (), *,
                 registry: CollectorRegistry | None = REGISTRY, always: Iterable[LabelValues] = ()):
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.always = tuple(always)  # label values shown (as 0) even without a source
        self._sources: list[tuple[weakref.ref, Source]] = []
        if registry is not None:
            registry.register(self)

    def add_source(self, obj: Any, fn: Source) -> None:
        self._sources.append((weakref.ref(obj), fn))

    def set_source(self, obj: Any, fn: Source) -> None:
        """The one source from now on (the API server's store: one per process)."""
        self._sources = [(weakref.ref(obj), fn)]

    def values(self) -> dict[LabelValues, float]:
        out: dict[LabelValues, float] = {labels: 0.0 for labels in self.always}
        live = []
        for ref, fn in self._sources:
            obj = ref()
            if obj is None:
                continue
            live.append((ref, fn))
            for labels, value in fn(obj).items():
                out[labels] = out.get(labels, 0.0) + value
        self._sources = live
        return out

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, value in sorted(self.values().items()):
            family.add_metric(list(labels), value)
        return [family]
