"""The `fanout` shape of `phalanx bench --cluster`: pod create latency with and without watchers.

    result = asyncio.run(measure_fanout(kubeconfig, pods=1000, watchers=200, cpu_of_server=cpu))

Pods churn (created one at a time by one client, each deleted again once `live` newer ones exist;
the scheduler binds them and the kubelets run them meanwhile, so each pod makes several watch
events), first with no watcher, then while `watchers` HTTP watches of the namespace's pods follow
every event, as `kubectl get pods -w` and informers do. The two phases run back to back on one
cluster, so their ratio is measured under the same load. Each create's latency is timed at the
client; the control plane's CPU seconds per create (`cpu_of_server`) is the figure a busy machine
disturbs least.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import aiohttp
import orjson

from ..client.kubeconfig import load_kubeconfig
from .clustershapes import NAMESPACE, fanout_pod

LIVE = 100  # pods alive at once while they churn


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure_fanout(kubeconfig: Path, pods: int, watchers: int,
                         cpu_of_server: Callable[[], float]) -> dict[str, Any]:
    cfg = load_kubeconfig(kubeconfig)
    headers = {"Authorization": f"Bearer {cfg.token or ''}", "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=watchers + 8, ssl=cfg.ssl_context() or False)
    async with aiohttp.ClientSession(cfg.server, headers=headers, connector=connector) as session:
        alone = await _churn(session, "a", pods, cpu_of_server)
        counts = [0] * watchers
        opened: list[int] = []
        tasks = [asyncio.create_task(_watch(session, counts, k, opened)) for k in range(watchers)]
        try:
            deadline = time.perf_counter() + 60
            while len(opened) < watchers and time.perf_counter() < deadline:
                await asyncio.sleep(0.05)
            watched = await _churn(session, "b", pods, cpu_of_server)
            await asyncio.sleep(0.5)  # the last events reach the watchers
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    out = {"withoutWatchers": alone, f"with{watchers}Watchers": watched, "watchers": watchers,
           "watchEventsDelivered": sum(counts)}
    if alone["createP50Ms"]:
        out["p50Ratio"] = round(watched["createP50Ms"] / alone["createP50Ms"], 2)
    return out


async def _watch(session: aiohttp.ClientSession, counts: list[int], k: int, opened: list[int]) -> None:
    """One watcher: counts the events (lines) it receives."""
    async with session.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"watch": "true"},
                           timeout=aiohttp.ClientTimeout(total=None)) as resp:
        resp.raise_for_status()
        opened.append(k)
        async for chunk in resp.content.iter_any():
            counts[k] += chunk.count(b"\n")


async def _churn(session: aiohttp.ClientSession, prefix: str, pods: int,
                 cpu_of_server: Callable[[], float]) -> dict[str, Any]:
    """Create `pods` pods one at a time (timed), deleting each again once LIVE newer ones exist;
    then delete the rest."""
    latencies: list[float] = []
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    cpu0, t0 = cpu_of_server(), time.perf_counter()
    for i in range(pods):
        body = orjson.dumps(fanout_pod(f"fanout-{prefix}-{i}"))
        start = time.perf_counter()
        async with session.post(path, data=body) as resp:
            await resp.read()
            if resp.status != 201:
                raise RuntimeError(f"create fanout-{prefix}-{i}: {resp.status}")
        latencies.append(time.perf_counter() - start)
        if i >= LIVE:
            await _delete(session, f"{path}/fanout-{prefix}-{i - LIVE}")
    wall, cpu = time.perf_counter() - t0, cpu_of_server() - cpu0
    for i in range(max(0, pods - LIVE), pods):
        await _delete(session, f"{path}/fanout-{prefix}-{i}")
    return {"creates": pods, "createP50Ms": round(_percentile(latencies, 0.5) * 1000, 2),
            "createP99Ms": round(_percentile(latencies, 0.99) * 1000, 2),
            "createMeanMs": round(statistics.fmean(latencies) * 1000, 2), "wallSeconds": round(wall, 2),
            "serverCpuMsPerCreate": round(cpu / pods * 1000, 2)}


async def _delete(session: aiohttp.ClientSession, path: str) -> None:
    async with session.delete(path, data=orjson.dumps({"gracePeriodSeconds": 0})) as resp:
        await resp.read()
