"""API benchmark: creates/s, create latency, gets/s, list latency for 10,000 pods and watch fan-out.

Measured in-process (rest.API over the store, as the scheduler and controllers use it) and over
HTTP (the aiohttp server on loopback, as kubectl and client-go use it), for the in-memory and the
SQLite store. This is a benchmark, not a test: it reports figures and asserts nothing.

    .venv/bin/python benchmarks/api_bench.py [--pods 10000] [--runs 3] [--json out.json]
    .venv/bin/python benchmarks/api_bench.py --only http/memory --watchers 200 --pods 2000   # fan-out
    .venv/bin/python benchmarks/api_bench.py --only http/memory --concurrency 8 --watchers 0 \
        --load-processes 2 --tls        # the server alone in this process, HTTPS as a cluster serves it

With `--load-processes N` the creates come from N processes of their own (the concurrency split
among them), so this process's CPU is the server's alone: `server_cpu_us_per_create`. Without it
the clients share the server's event loop (the figures of earlier runs). `server_loop_us_per_create`
is the median over 0.1 s windows of the loop thread's CPU per create. `--tls` serves HTTPS with
a cluster's certificates (`cluster/pki.py`), as `phalanx create cluster` does.

Each figure is the median of `--runs` runs; the spread (min-max) is printed beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import ssl
import statistics
import sys
import tempfile
import time

import aiohttp
import orjson

from phalanx.apiserver import build_api
from phalanx.cluster.controlplane import ControlPlane, tune_gc
from phalanx.cluster.pki import ensure_pki
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


def _load_process(base: str, ca_dir: str | None, indexes: list[int], clients: int, out: "multiprocessing.Queue") -> None:
    """A load generator in its own process: create the pods `indexes` with `clients` concurrent
    requests; put the latencies (seconds) on `out`."""
    async def run() -> list[float]:
        ctx = ssl.create_default_context(cafile=os.path.join(ca_dir, "pki", "ca.crt")) if ca_dir else False
        headers = {"Authorization": "Bearer bench-token", "Content-Type": "application/json"}
        lat: list[float] = []
        queue = list(indexes)
        async with aiohttp.ClientSession(base, headers=headers,
                                         connector=aiohttp.TCPConnector(limit=clients, ssl=ctx)) as s:
            async def creator() -> None:
                while queue:
                    body = orjson.dumps(make_pod(queue.pop()))
                    t = time.perf_counter()
                    async with s.post("/api/v1/namespaces/default/pods", data=body) as r:
                        await r.read()
                        assert r.status == 201, r.status
                    lat.append(time.perf_counter() - t)
            await asyncio.gather(*(creator() for _ in range(clients)))
        return lat
    out.put(asyncio.run(run()))


async def _sample_cpu_per_write(store, windows: list[float], every: float = 0.1) -> None:
    """Append the event loop thread's CPU microseconds per store write of each window with writes."""
    last = (time.thread_time(), store.resource_version)
    while True:
        await asyncio.sleep(every)
        now = (time.thread_time(), store.resource_version)
        if now[1] - last[1] >= 20:
            windows.append((now[0] - last[0]) / (now[1] - last[1]) * 1e6)
        last = now


async def _create_in_processes(base: str, ca_dir: str | None, pods: int, concurrency: int,
                               processes: int) -> list[float]:
    """Create `pods` pods from `processes` load processes; the latencies of every create."""
    mp = multiprocessing.get_context("spawn")
    out = mp.Queue()
    clients = max(1, concurrency // processes)
    procs = [mp.Process(target=_load_process, args=(base, ca_dir, list(range(k, pods, processes)), clients, out))
             for k in range(processes)]
    for p in procs:
        p.start()
    loop = asyncio.get_running_loop()
    lat: list[float] = []
    for _ in procs:
        lat.extend(await loop.run_in_executor(None, out.get))
    for p in procs:
        await loop.run_in_executor(None, p.join)
    return lat


async def _http(kind: str, pods: int, watchers: int, concurrency: int, load_processes: int = 0,
                tls: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec = ClusterSpec(name="bench", nodes=default_nodes("bench", 0), storage=kind, port=0)
        server_ssl = client_ssl = None
        if tls:
            pki = ensure_pki(tmp, "bench")
            server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            server_ssl.load_cert_chain(pki.server_cert_file, pki.server_key_file)
            client_ssl = ssl.create_default_context(cafile=str(pki.ca_cert_file))
        cp = ControlPlane(spec, state_dir=tmp, token="bench-token", components=False, ssl_context=server_ssl)
        port = await cp.start()
        tune_gc()  # as `phalanx serve` does after its start
        base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        headers = {"Authorization": "Bearer bench-token", "Content-Type": "application/json"}
        conn = aiohttp.TCPConnector(limit=concurrency + watchers + 4, ssl=client_ssl or False)
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

            t0, cpu0, times0 = time.perf_counter(), time.process_time(), os.times()
            if load_processes:
                sampler = asyncio.create_task(_sample_cpu_per_write(cp.store, windows := []))
                create_lat = await _create_in_processes(base, tmp if tls else None, pods, concurrency, load_processes)
                sampler.cancel()
            else:
                await asyncio.gather(*(creator() for _ in range(concurrency)))
            create_s = time.perf_counter() - t0
            create_cpu_s = time.process_time() - cpu0
            create_sys_s = os.times().system - times0.system
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
                # With the clients in processes of their own: the server's CPU alone per create.
                **({"server_cpu_us_per_create": create_cpu_s / pods * 1e6,
                    "server_sys_us_per_create": create_sys_s / pods * 1e6,
                    # the event loop's CPU per create in 0.1 s windows: the median of the windows is
                    # what a busy machine disturbs least
                    "server_loop_us_per_create": statistics.median(windows) if windows else 0.0}
                   if load_processes else {}),
                "list_10k_ms": statistics.median(lat) * 1000, "table_10k_ms": statistics.median(tlat) * 1000,
                "watchers": watchers, "watch_events_delivered": sum(counts),
                "watch_fanout_events_per_s": sum(counts) / fanout_s}


def bench_http(kind: str, pods: int, watchers: int, concurrency: int, load_processes: int = 0,
               tls: bool = False) -> dict:
    return asyncio.run(_http(kind, pods, watchers, concurrency, load_processes, tls))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--watchers", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--load-processes", type=int, default=0,
                    help="create from this many processes of their own (0: clients in the server's process)")
    ap.add_argument("--tls", action="store_true", help="serve HTTPS, as a cluster does")
    ap.add_argument("--only", action="append", default=[],
                    help="run only these mode/store pairs, e.g. --only http/memory (repeatable)")
    ap.add_argument("--json", help="write the raw results here")
    args = ap.parse_args(argv)
    results: dict[str, list[dict]] = {}
    for kind in ("memory", "sqlite"):
        for mode, fn in (("in-process", lambda k: bench_inprocess(k, args.pods, args.watchers)),
                         ("http", lambda k: bench_http(k, args.pods, args.watchers, args.concurrency,
                                                            args.load_processes, args.tls))):
            key = f"{mode}/{kind}"
            if args.only and key not in args.only:
                continue
            results[key] = [fn(kind) for _ in range(args.runs)]
            print(f"{key}: done", file=sys.stderr)
    metrics = ["creates_per_s", "create_p50_ms", "create_cpu_ms", "server_cpu_us_per_create", "server_sys_us_per_create", "server_loop_us_per_create", "gets_per_s", "list_10k_ms", "table_10k_ms",
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
            digits = 1 if m.endswith("_ms") or m.endswith("_create") else 0
            cells.append(f"{med:>12.{digits}f} ({min(vals):.{digits}f}-{max(vals):.{digits}f})".rjust(28))
        print(f"{key:<20}" + "".join(cells))
    print(f"pods={args.pods} runs={args.runs} watchers={args.watchers} http-concurrency={args.concurrency} "
          f"load-processes={args.load_processes} tls={args.tls} load={os.getloadavg()[0]:.1f}; "
          f"median (min-max)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
