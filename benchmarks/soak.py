"""Soak benchmark: the control plane's memory and CPU under steady churn, sampled over time.

Starts a real cluster as a user does (`phalanx create cluster` with a temporary PHALANX_HOME: the
SQLite store, the scheduler, controllers and simulated kubelets in one process), then for
`--duration` seconds creates and deletes pods and ConfigMaps at a steady rate over HTTPS while a
few watches stay open, and samples the control plane's RSS and CPU every `--interval` seconds
(psutil when installed, else /proc/PID/status and /proc/PID/stat). Reports a table of memory over
time, the slope of RSS over the last half of the run and whether it plateaus (slope under
`--plateau-mb-per-min`). A benchmark, not a test: it asserts nothing.

    .venv/bin/python benchmarks/soak.py [--duration 120] [--rate 20] [--live 50] [--watchers 3]
        [--kinds pods,configmaps] [--interval 5] [--json OUT] [--plot OUT.png]

`--rate` is objects created per second (pods and ConfigMaps in turn; `--kinds` picks either
alone); once `--live` objects of a kind exist, each create is followed by the delete of the oldest
of that kind.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import aiohttp
import orjson
import yaml

BIN = Path(sys.executable).parent
NAMESPACE = "soak"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Sample:
    t: float  # seconds since the churn started
    rss_mb: float
    cpu_s: float  # the control plane's user + system CPU seconds so far
    cpu_percent: float  # of one core, since the previous sample
    created: int
    deleted: int
    watch_events: int


def rss_and_cpu(pid: int) -> tuple[float, float]:
    """The process's resident set (MB) and CPU seconds (user + system)."""
    try:
        import psutil  # optional
        p = psutil.Process(pid)
        times = p.cpu_times()
        return p.memory_info().rss / 2**20, times.user + times.system
    except ImportError:
        pass
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def slope_mb_per_min(samples: list[Sample]) -> float:
    """Least-squares slope of RSS over time, in MB per minute."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mean_t = sum(s.t for s in samples) / n
    mean_r = sum(s.rss_mb for s in samples) / n
    var = sum((s.t - mean_t) ** 2 for s in samples)
    cov = sum((s.t - mean_t) * (s.rss_mb - mean_r) for s in samples)
    return cov / var * 60 if var else 0.0


class Churn:
    """Creates and deletes pods and ConfigMaps at a steady rate; counts what the watches see."""

    def __init__(self, session: aiohttp.ClientSession, rate: float, live: int, kinds: list[str]) -> None:
        self.session, self.rate, self.live, self.kinds = session, rate, live, kinds
        self.created = self.deleted = self.watch_events = self.errors = 0
        self.queues: dict[str, deque[str]] = {"pods": deque(), "configmaps": deque()}

    def body(self, kind: str, name: str) -> dict:
        if kind == "pods":
            return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "soak"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox:1",
                                             "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                             "terminationGracePeriodSeconds": 0}}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name * 20}}

    async def request(self, method: str, path: str, body: dict | None = None) -> None:
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, path, data=data,
                                        headers={"Content-Type": "application/json"}) as r:
            await r.read()
            if r.status >= 400 and r.status != 404:
                self.errors += 1

    async def run(self, until: float) -> None:
        base = f"/api/v1/namespaces/{NAMESPACE}"
        i = 0
        start = time.monotonic()
        while time.monotonic() < until:
            kind = self.kinds[i % len(self.kinds)]
            name = f"{kind[:3]}-{i}"
            await self.request("POST", f"{base}/{kind}", self.body(kind, name))
            self.created += 1
            self.queues[kind].append(name)
            if len(self.queues[kind]) > self.live:
                old = self.queues[kind].popleft()
                await self.request("DELETE", f"{base}/{kind}/{old}?gracePeriodSeconds=0")
                self.deleted += 1
            i += 1
            await asyncio.sleep(max(0.0, start + i / self.rate - time.monotonic()))

    async def watch(self, path: str, until: float) -> None:
        """A watch kept open (re-opened from the last resourceVersion when the server ends it)."""
        rv = ""
        while time.monotonic() < until:
            url = f"{path}?watch=true&allowWatchBookmarks=true" + (f"&resourceVersion={rv}" if rv else "")
            try:
                async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
                    async for line in r.content:
                        event = orjson.loads(line)
                        if event["type"] == "ERROR":
                            rv = ""
                            break
                        rv = event["object"]["metadata"].get("resourceVersion", rv)
                        self.watch_events += 1
            except (aiohttp.ClientError, asyncio.TimeoutError):
                await asyncio.sleep(0.2)


async def sample_loop(pid: int, churn: Churn, t0: float, until: float, interval: float,
                      samples: list[Sample]) -> None:
    prev_cpu, prev_t = rss_and_cpu(pid)[1], time.monotonic()
    while True:
        rss, cpu = rss_and_cpu(pid)
        now = time.monotonic()
        percent = 100 * (cpu - prev_cpu) / (now - prev_t) if now > prev_t else 0.0
        samples.append(Sample(round(now - t0, 1), round(rss, 1), round(cpu, 2), round(percent, 1),
                              churn.created, churn.deleted, churn.watch_events))
        prev_cpu, prev_t = cpu, now
        if now >= until:
            return
        await asyncio.sleep(min(interval, max(0.0, until - now)))


async def drive(server: str, ca_pem: str, token: str, pid: int, args: argparse.Namespace) -> tuple[list[Sample], Churn]:
    ctx = ssl.create_default_context(cadata=ca_pem)
    headers = {"Authorization": f"Bearer {token}"}
    samples: list[Sample] = []
    async with aiohttp.ClientSession(server, headers=headers, connector=aiohttp.TCPConnector(ssl=ctx)) as s:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        async with s.post("/api/v1/namespaces", data=orjson.dumps(ns),
                          headers={"Content-Type": "application/json"}) as r:
            assert r.status == 201, await r.text()
        await asyncio.sleep(1.0)
        churn = Churn(s, args.rate, args.live, args.kinds.split(","))
        t0 = time.monotonic()
        until = t0 + args.duration
        paths = ["/api/v1/pods", f"/api/v1/namespaces/{NAMESPACE}/configmaps", "/api/v1/events"]
        watchers = [asyncio.create_task(churn.watch(paths[i % len(paths)], until)) for i in range(args.watchers)]
        sampler = asyncio.create_task(sample_loop(pid, churn, t0, until, args.interval, samples))
        await churn.run(until)
        await sampler
        for w in watchers:
            w.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    return samples, churn


def report(samples: list[Sample], churn: Churn, args: argparse.Namespace) -> dict:
    print(f"{'t (s)':>7} {'RSS (MB)':>9} {'CPU %':>6} {'created':>8} {'deleted':>8} {'watch events':>13}")
    for s in samples:
        print(f"{s.t:7.1f} {s.rss_mb:9.1f} {s.cpu_percent:6.1f} {s.created:8d} {s.deleted:8d} {s.watch_events:13d}")
    last_half = [s for s in samples if s.t >= args.duration / 2]
    slope = slope_mb_per_min(last_half)
    plateaus = abs(slope) < args.plateau_mb_per_min
    cpu_total = samples[-1].cpu_s - samples[0].cpu_s if samples else 0.0
    summary = {
        "duration_s": args.duration, "rate_per_s": args.rate, "kinds": args.kinds, "live": args.live,
        "watchers": args.watchers,
        "created": churn.created, "deleted": churn.deleted, "errors": churn.errors,
        "watch_events": churn.watch_events,
        "rss_start_mb": samples[0].rss_mb, "rss_end_mb": samples[-1].rss_mb,
        "rss_peak_mb": max(s.rss_mb for s in samples),
        "slope_last_half_mb_per_min": round(slope, 2), "plateaus": plateaus,
        "cpu_seconds": round(cpu_total, 1), "cpu_percent_mean": round(100 * cpu_total / max(samples[-1].t, 1e-9), 1),
        "cpu_ms_per_write": round(1000 * cpu_total / max(churn.created + churn.deleted, 1), 2),
    }
    print(f"RSS start {summary['rss_start_mb']:.0f} MB, end {summary['rss_end_mb']:.0f} MB, peak "
          f"{summary['rss_peak_mb']:.0f} MB; last-half slope {slope:+.2f} MB/min -> "
          f"{'plateaus' if plateaus else 'still growing'} (threshold {args.plateau_mb_per_min} MB/min)")
    print(f"{churn.created} creates, {churn.deleted} deletes, {churn.errors} errors, {churn.watch_events} watch "
          f"events; control plane CPU {cpu_total:.1f} s ({summary['cpu_percent_mean']}% of a core, "
          f"{summary['cpu_ms_per_write']} ms per write, kubelets and scheduler included)")
    return summary


def plot(samples: list[Sample], out: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot([s.t for s in samples], [s.rss_mb for s in samples], marker="o", label="RSS (MB)")
    ax.set_xlabel("seconds of churn")
    ax.set_ylabel("control plane RSS (MB)")
    cpu_ax = ax.twinx()
    cpu_ax.plot([s.t for s in samples], [s.cpu_percent for s in samples], color="tab:orange", alpha=0.6,
                label="CPU % of a core")
    cpu_ax.set_ylabel("CPU % of a core")
    fig.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out)
    print(f"plot written to {out}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of churn")
    ap.add_argument("--rate", type=float, default=20.0, help="objects created per second")
    ap.add_argument("--live", type=int, default=50, help="objects of each kind kept before deleting the oldest")
    ap.add_argument("--watchers", type=int, default=3)
    ap.add_argument("--kinds", default="pods,configmaps", help="what the churn creates, in turn")
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--plateau-mb-per-min", type=float, default=1.0)
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--plot", metavar="OUT.png")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PHALANX_HOME=f"{tmp}/home", KUBECONFIG=f"{tmp}/kubeconfig")
        subprocess.run([str(BIN / "phalanx"), "create", "cluster", "--name", "soak", "--wait", "60s"],
                       env=env, check=True, capture_output=True)
        try:
            state = Path(tmp, "home", "clusters", "soak")
            pid = int((state / "pid").read_text())
            cfg = yaml.safe_load(Path(tmp, "kubeconfig").read_text())
            entry = next(c["cluster"] for c in cfg["clusters"] if c["name"] == "phalanx-soak")
            ca_pem = base64.b64decode(entry["certificate-authority-data"]).decode()
            token = (state / "token").read_text().strip()
            samples, churn = asyncio.run(drive(entry["server"], ca_pem, token, pid, args))
        finally:
            subprocess.run([str(BIN / "phalanx"), "delete", "cluster", "--name", "soak"], env=env,
                           capture_output=True)
    summary = report(samples, churn, args)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "samples": [asdict(s) for s in samples]}, indent=1))
    if args.plot:
        plot(samples, args.plot)


if __name__ == "__main__":
    main()
