"""The scheduler's metrics for the dashboard's Metrics view: scraped from the API server's `/metrics`
through the user's credentials, only while a page has the view open.

phalanx serves every component's metrics at the API server's `/metrics` (docs/metrics.md); a
cluster whose scheduler runs elsewhere has none there, and the view says so. `SchedulerMetrics`
scrapes at most once per `min_interval` seconds, whoever asks (`await metrics.current()` from the
page's poll), parses the text with prometheus_client's parser and keeps the last `history` samples:

- queue depths: `scheduler_pending_pods{queue}`;
- attempts: `scheduler_schedule_attempts_total{result}`, `scheduler_podgroup_schedule_attempts_total{result}`;
- attempt durations: `scheduler_scheduling_attempt_duration_seconds` and
  `scheduler_podgroup_scheduling_attempt_duration_seconds`, as the 50th/90th/99th percentiles of the
  attempts between two samples (from the histogram buckets, as PromQL's histogram_quantile does);
- `scheduler_preemption_attempts_total`, `scheduler_workload_preemption_attempts_total`.

`points()` is what the page charts: per sample the time, the queue depths, the attempts per second
by result and the interval's duration percentiles.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from phalanx.client.interface import Client

Obj = dict[str, Any]
Scrape = Callable[[], Awaitable[str]]

PENDING = "scheduler_pending_pods"
POD_ATTEMPTS = "scheduler_schedule_attempts"
GROUP_ATTEMPTS = "scheduler_podgroup_schedule_attempts"
POD_DURATION = "scheduler_scheduling_attempt_duration_seconds"
GROUP_DURATION = "scheduler_podgroup_scheduling_attempt_duration_seconds"
PREEMPTIONS = ("scheduler_preemption_attempts", "scheduler_workload_preemption_attempts")
QUANTILES = (0.5, 0.9, 0.99)


class MetricsUnavailable(Exception):
    """`/metrics` could not be read (forbidden, not served, unreachable)."""


def http_scrape(client: Client) -> Scrape | None:
    """A scrape of `<server>/metrics` with an HTTP client's credentials (bearer token, client
    certificate, CA); None for a client that is not an HTTP one."""
    server = getattr(client, "server", None)
    if not isinstance(server, str):
        return None
    token, ssl_context = getattr(client, "token", None), getattr(client, "ssl_context", None)
    server_name = getattr(client, "tls_server_name", None)

    async def scrape() -> str:
        headers = {"Accept": "text/plain;version=0.0.4"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        connector = aiohttp.TCPConnector(ssl=ssl_context if ssl_context is not None else True)
        try:
            async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=15)) as s:
                async with s.get(server + "/metrics", headers=headers, server_hostname=server_name) as resp:
                    text = await resp.text()
                    if resp.status >= 400:
                        raise MetricsUnavailable(f"GET /metrics: {resp.status} {resp.reason}: {text.strip()[:300]}")
                    return text
        except aiohttp.ClientError as e:
            raise MetricsUnavailable(f"GET {server}/metrics: {type(e).__name__}: {e}") from None
    return scrape


def process_scrape() -> str:
    """This process's registry (an in-process cluster: the scheduler runs here)."""
    from phalanx import metrics
    return metrics.render().decode()


@dataclass
class Histogram:
    """One histogram, summed over its label sets: cumulative bucket counts by upper bound."""

    buckets: dict[float, float] = field(default_factory=lambda: defaultdict(float))
    count: float = 0.0
    total: float = 0.0

    def minus(self, earlier: "Histogram") -> "Histogram":
        out = Histogram()
        for le, n in self.buckets.items():
            out.buckets[le] = max(0.0, n - earlier.buckets.get(le, 0.0))
        out.count, out.total = max(0.0, self.count - earlier.count), max(0.0, self.total - earlier.total)
        return out

    def quantile(self, q: float) -> float | None:
        """histogram_quantile: linear inside the bucket the rank falls in; None without observations."""
        ordered = sorted(self.buckets.items())
        if not ordered or ordered[-1][1] <= 0:
            return None
        rank, lower, below = q * ordered[-1][1], 0.0, 0.0
        for le, cumulative in ordered:
            if cumulative >= rank:
                if math.isinf(le):
                    return lower
                inside = cumulative - below
                return lower + (le - lower) * ((rank - below) / inside if inside else 1.0)
            lower, below = le, cumulative
        return lower


@dataclass
class Sample:
    """One scrape, reduced to what the view charts."""

    at: float
    pending: dict[str, float] = field(default_factory=dict)
    attempts: dict[str, float] = field(default_factory=dict)  # result -> cumulative, pods
    group_attempts: dict[str, float] = field(default_factory=dict)  # result -> cumulative, PodGroups
    pod_duration: Histogram = field(default_factory=Histogram)
    group_duration: Histogram = field(default_factory=Histogram)
    preemptions: float = 0.0
    families: int = 0  # scheduler_* families found: 0 means no scheduler reports here


def parse(text: str, at: float) -> Sample:
    """The scheduler's figures from a Prometheus text exposition."""
    sample = Sample(at)
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("scheduler_"):
            continue
        sample.families += 1
        for s in family.samples:
            _take(sample, family.name, s.name, s.labels, s.value)
    return sample


def _take(sample: Sample, family: str, name: str, labels: dict[str, str], value: float) -> None:
    if family == PENDING:
        sample.pending[labels.get("queue", "")] = sample.pending.get(labels.get("queue", ""), 0.0) + value
    elif family == POD_ATTEMPTS and name.endswith("_total"):
        sample.attempts[labels.get("result", "")] = sample.attempts.get(labels.get("result", ""), 0.0) + value
    elif family == GROUP_ATTEMPTS and name.endswith("_total"):
        result = labels.get("result", "")
        sample.group_attempts[result] = sample.group_attempts.get(result, 0.0) + value
    elif family in PREEMPTIONS and name.endswith("_total"):
        sample.preemptions += value
    elif family in (POD_DURATION, GROUP_DURATION):
        hist = sample.pod_duration if family == POD_DURATION else sample.group_duration
        if name.endswith("_bucket"):
            hist.buckets[float(labels["le"])] += value
        elif name.endswith("_count"):
            hist.count += value
        elif name.endswith("_sum"):
            hist.total += value


def _rates(now: dict[str, float], before: dict[str, float], seconds: float) -> dict[str, float]:
    return {k: round(max(0.0, v - before.get(k, 0.0)) / seconds, 3) for k, v in now.items()} if seconds > 0 else {}


def _percentiles(hist: Histogram) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for q in QUANTILES:
        v = hist.quantile(q)
        out[f"p{round(q * 100)}"] = round(v, 6) if v is not None else None
    out["count"] = hist.count
    return out


def point(now: Sample, before: Sample | None) -> Obj:
    """One chart point: depths now; rates and duration percentiles since `before` (the whole
    history for the first sample)."""
    seconds = now.at - before.at if before is not None else 0.0
    pod_hist = now.pod_duration.minus(before.pod_duration) if before is not None else now.pod_duration
    group_hist = now.group_duration.minus(before.group_duration) if before is not None else now.group_duration
    return {
        "t": round(now.at, 3),
        "pending": now.pending,
        "attemptsPerSecond": _rates(now.attempts, before.attempts if before else {}, seconds),
        "groupAttemptsPerSecond": _rates(now.group_attempts, before.group_attempts if before else {}, seconds),
        "attempts": now.attempts, "groupAttempts": now.group_attempts, "preemptionAttempts": now.preemptions,
        "podAttemptSeconds": _percentiles(pod_hist), "groupAttemptSeconds": _percentiles(group_hist),
    }


class SchedulerMetrics:
    """Scrapes on demand, at most once per `min_interval`; keeps `history` samples."""

    def __init__(self, scrape: Scrape, *, min_interval: float = 4.0, history: int = 150,
                 clock: Callable[[], float] = time.time):
        self.scrape = scrape
        self.min_interval = min_interval
        self.clock = clock
        self.samples: deque[Sample] = deque(maxlen=history)
        self.error: str | None = None
        self.scrapes = 0
        self._last_try = -math.inf

    async def current(self) -> Obj:
        """Scrape when the last try is older than `min_interval`; the view's JSON."""
        now = self.clock()
        if now - self._last_try >= self.min_interval:
            self._last_try = now
            await self._scrape(now)
        return self.view()

    async def _scrape(self, now: float) -> None:
        self.scrapes += 1
        try:
            text = await self.scrape()
        except MetricsUnavailable as e:
            self.error = str(e)
            return
        try:
            self.samples.append(parse(text, now))
            self.error = None
        except ValueError as e:
            self.error = f"/metrics is not in the Prometheus text format: {e}"

    def points(self) -> list[Obj]:
        samples = list(self.samples)
        return [point(s, samples[i - 1] if i else None) for i, s in enumerate(samples)]

    def view(self) -> Obj:
        latest = self.samples[-1] if self.samples else None
        since_start = {"podAttemptSeconds": _percentiles(latest.pod_duration),
                       "groupAttemptSeconds": _percentiles(latest.group_duration)} if latest else None
        return {"available": latest is not None and latest.families > 0, "error": self.error,
                "interval": self.min_interval, "points": self.points(), "sinceStart": since_start}
