"""Prometheus metrics of every component, under the names and labels upstream gives them.

One control-plane process runs the API server, the scheduler and the controllers, so one registry
(`REGISTRY`) holds the metrics of all of them and `GET /metrics` on the API server serves it in the
Prometheus text format (`render()`). Upstream serves each component's metrics on its own port.

Components import the module of their metrics and only increment or observe on their paths:

    from phalanx.metrics import scheduler as m
    m.SCHEDULE_ATTEMPTS.labels("scheduled", profile).inc()

Gauges that describe state (queue depths, stored objects) are read at scrape time from sources the
component registers (`registry.ScrapeGauge.add_source`), so keeping them costs nothing in between.
This package imports nothing of phalanx: every layer may use it.
"""

from .registry import CONTENT_TYPE, REGISTRY, render

__all__ = ["CONTENT_TYPE", "REGISTRY", "render"]
