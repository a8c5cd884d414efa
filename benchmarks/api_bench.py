"""API benchmark: creates/s, create latency, gets/s, list latency for 10,000 pods and watch fan-out.

Measured in-process (rest.API over the store, as the scheduler and controllers use it) and over
HTTP (the aiohttp server on loopback, as kubectl and client-go use it), for the in-memory and the
SQLite store. This is a benchmark, not a test: it reports figures and asserts nothing.

    .venv/bin/python benchmarks/api_bench.py [--pods 10000] [--runs 3] [--json out.json]
    .venv/bin/python benchmarks/api_bench.py --only http/memory --watchers 200 --pods 2000   # fan-out

Each figure is the median of `--runs` runs; the spread (min-max) is printed beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

import aiohttp
import orjson

from phalanx.apiserver import build_api
from phalanx.cluster.controlplane import ControlPlane
from phalanx.machinery.featuregates import FeatureGates
from phalanx.cluster.spec import ClusterSpec, default_nodes
from phalanx.store import MemoryStore, SQLiteStore


def make_pod(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "labels": {"app": "bench", "i": str(i % 10)}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def _store(kind: str, tmp: str):
    return MemoryStore() if kind == "memory" else SQLiteStore(os.path.join(tmp, f"bench-{time.time_ns()}.db"))


def bench_inprocess(kind: str, pods: int, watchers: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(kind, tmp)
        api = build_api(store, FeatureGates())
        from phalanx.cluster.bootstrap import bootstrap
        bootstrap(api, ClusterSpec(nodes=[]))
        rt = api.resource("", "v1", "pods")
        # watch fan-out: watchers registered before the creates receive every event
        ws = [store.watch(rt.key, None, from_rv=store.resource_version) for _ in range(watchers)]
        t0 = time.perf_counter()
        for i in range(pods):
            api.create(rt, "default", make_pod(i))
        create_s = time.perf_counter() - t0
        delivered = sum(len(w.drain()) for w in ws)
        for w in ws:
            w.close()
        t0 = time.perf_counter()
        for i in range(pods):
            api.get(rt, "default", f"pod-{i:05d}")
        get_s = time.perf_counter() - t0
        lat = []
        for _ in range(5):
            t0 = time.perf_counter()
            lst = api.list(rt, "default")
            orjson.dumps(lst)  # what serving the list costs: build + encode
            lat.append(time.perf_counter() - t0)
        store.close()
        return {"creates_per_s": pods / create_s, "gets_per_s": pods / get_s,
                "list_10k_ms": statistics.median(lat) * 1000,
                "watch_events_delivered": delivered, "watchers": watchers}


async def _http(kind: str, pods: int, watchers: int, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec = ClusterSpec(name="bench", nodes=default_nodes("bench", 0), storage=kind, port=0)
        cp = ControlPlane(spec, state_dir=tmp, token="bench-token", components=False)
        port = await cp.start()
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": "Bearer bench-token", "Content-Type": "application/json"}
        conn = aiohttp.TCPConnector(limit=concurrency + watchers + 4)
        async with aiohttp.ClientSession(base, headers=headers, connector=conn) as s:
            async with s.get("/api/v1/namespaces/default/pods") as r:
                rv = (await r.json())["metadata"]["resourceVersion"]
            counts = [0] * watchers
            ready = asyncio.Event()
            opened = 0

            async def watch(k: int) -> None:
                nonlocal opened
                async with s.get(f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}",
                                 timeout=aiohttp.ClientTimeout(total=None)) as r:
                    opened += 1
                    if opened == watchers:
                        ready.set()
                    async for line in r.content:
                        if line.strip():
                            counts[k] += 1
                            if counts[k] >= pods:
                                return

            wtasks = [asyncio.create_task(watch(k)) for k in range(watchers)]
            if watchers:
                await asyncio.wait_for(ready.wait(), 30)
            queue = list(range(pods))
            create_lat: list[float] = []

            async def creator() -> None:
                while queue:
                    i = queue.pop()
                    t = time.perf_counter()
                    async with s.post("/api/v1/namespaces/default/pods", data=orjson.dumps(make_pod(i))) as r:
                        assert r.status == 201, await r.text()
                    create_lat.append(time.perf_counter() - t)

            t0, cpu0 = time.perf_counter(), time.process_time()
            await asyncio.gather(*(creator() for _ in range(concurrency)))
            create_s = time.perf_counter() - t0
            create_cpu_s = time.process_time() - cpu0
            t0 = time.perf_counter()
            await asyncio.wait_for(asyncio.gather(*wtasks), 120)
            fanout_s = time.perf_counter() - t0 + create_s
            names = [f"pod-{i:05d}" for i in range(pods)]

            async def getter() -> None:
                while names:
                    n = names.pop()
                    async with s.get(f"/api/v1/namespaces/default/pods/{n}") as r:
                        await r.read()

            t0 = time.perf_counter()
            await asyncio.gather(*(getter() for _ in range(concurrency)))
            get_s = time.perf_counter() - t0
            lat, tlat = [], []
            for _ in range(5):
                t0 = time.perf_counter()
                async with s.get("/api/v1/namespaces/default/pods") as r:
                    await r.read()
                lat.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                async with s.get("/api/v1/namespaces/default/pods",
                                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}) as r:
                    await r.read()
                tlat.append(time.perf_counter() - t0)
        await cp.stop()
        return {"creates_per_s": pods / create_s, "gets_per_s": pods / get_s,
                "create_p50_ms": statistics.median(create_lat) * 1000,
                # CPU of this process (server, and the client's watch readers) per create: less
                # noisy than latency on a shared machine.
                "create_cpu_ms": create_cpu_s / pods * 1000,
                "list_10k_ms": statistics.median(lat) * 1000, "table_10k_ms": statistics.median(tlat) * 1000,
                "watchers": watchers, "watch_events_delivered": sum(counts),
                "watch_fanout_events_per_s": sum(counts) / fanout_s}


def bench_http(kind: str, pods: int, watchers: int, concurrency: int) -> dict:
    return asyncio.run(_http(kind, pods, watchers, concurrency))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--watchers", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--only", action="append", default=[],
                    help="run only these mode/store pairs, e.g. --only http/memory (repeatable)")
    ap.add_argument("--json", help="write the raw results here")
    args = ap.parse_args(argv)
    results: dict[str, list[dict]] = {}
    for kind in ("memory", "sqlite"):
        for mode, fn in (("in-process", lambda k: bench_inprocess(k, args.pods, args.watchers)),
                         ("http", lambda k: bench_http(k, args.pods, args.watchers, args.concurrency))):
            key = f"{mode}/{kind}"
            if args.only and key not in args.only:
                continue
            results[key] = [fn(kind) for _ in range(args.runs)]
            print(f"{key}: done", file=sys.stderr)
    metrics = ["creates_per_s", "create_p50_ms", "create_cpu_ms", "gets_per_s", "list_10k_ms", "table_10k_ms",
               "watch_fanout_events_per_s"]
    print(f"{'mode/store':<20}" + "".join(f"{m:>28}" for m in metrics))
    for key, runs in results.items():
        cells = []
        for m in metrics:
            vals = [r[m] for r in runs if m in r]
            if not vals:
                cells.append(f"{'-':>28}")
                continue
            med = statistics.median(vals)
            digits = 1 if m.endswith("_ms") else 0
            cells.append(f"{med:>12.{digits}f} ({min(vals):.{digits}f}-{max(vals):.{digits}f})".rjust(28))
        print(f"{key:<20}" + "".join(cells))
    print(f"pods={args.pods} runs={args.runs} watchers={args.watchers} http-concurrency={args.concurrency}; "
          f"median (min-max)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
