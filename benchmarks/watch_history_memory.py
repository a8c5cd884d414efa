"""Memory benchmark: what 500 merge patches of a 1 MB ConfigMap cost the API server's RSS.

The server runs in its own process (a control plane without components, SQLite or memory store,
as `phalanx serve` wires it); this process drives it over HTTP and reads the server's RSS from
/proc. Every update stores a new 1 MB version; the watch history keeps the recent versions, up to
its byte bound (`PHALANX_WATCH_HISTORY_BYTES`, default 64 MiB), so the RSS growth stays bounded
instead of holding every version. This is a benchmark, not a test: it reports figures and
asserts nothing (the goal for issue 12: under 150 MB above the starting RSS after the updates).

    .venv/bin/python benchmarks/watch_history_memory.py [--updates 500] [--size 1000000]
        [--storage sqlite|memory] [--watchers 0]

`--watchers N` keeps N watches open on ConfigMaps (with a consumer each) while patching.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import textwrap
import time

import aiohttp
import orjson

SERVER = textwrap.dedent("""
    import asyncio, sys, tempfile
    from phalanx.cluster.controlplane import ControlPlane, tune_gc
    from phalanx.cluster.spec import ClusterSpec, default_nodes

    async def main():
        with tempfile.TemporaryDirectory() as tmp:
            spec = ClusterSpec(name="mem", nodes=default_nodes("mem", 0), storage=sys.argv[1], port=0)
            cp = ControlPlane(spec, state_dir=tmp, token="t", components=False)
            port = await cp.start()
            tune_gc()
            print(port, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
            await cp.stop()
    asyncio.run(main())
""")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def drive(port: int, pid: int, updates: int, size: int, watchers: int) -> dict[str, float]:
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": "Bearer t"}
    path = "/api/v1/namespaces/default/configmaps"
    figures: dict[str, float] = {}
    async with aiohttp.ClientSession(base, headers=headers) as s:
        async with s.get(path) as r:
            await r.read()
        await asyncio.sleep(0.5)
        figures["start_mb"] = rss_mb(pid)

        async def consume() -> None:
            async with s.get(f"{path}?watch=true", timeout=aiohttp.ClientTimeout(total=None)) as r:
                async for _ in r.content.iter_any():
                    pass
        watch_tasks = [asyncio.create_task(consume()) for _ in range(watchers)]
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"blob": "x" * size}}
        async with s.post(path, data=orjson.dumps(body), headers={"Content-Type": "application/json"}) as r:
            assert r.status == 201, await r.text()
        t0 = time.perf_counter()
        peak = 0.0
        for i in range(updates):
            patch = {"metadata": {"labels": {"update": str(i)}}, "data": {"blob": f"{i:08d}" + "x" * (size - 8)}}
            async with s.patch(f"{path}/big", data=orjson.dumps(patch),
                               headers={"Content-Type": "application/merge-patch+json"}) as r:
                assert r.status == 200, await r.text()
            if i % 25 == 0:
                peak = max(peak, rss_mb(pid))
        figures["patch_s"] = time.perf_counter() - t0
        await asyncio.sleep(0.5)
        figures["after_updates_mb"] = rss_mb(pid)
        figures["peak_mb"] = max(peak, figures["after_updates_mb"])
        async with s.delete(f"{path}/big") as r:
            assert r.status == 200, await r.text()
        await asyncio.sleep(0.5)
        figures["after_delete_mb"] = rss_mb(pid)
        for t in watch_tasks:
            t.cancel()
    return figures


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=500)
    ap.add_argument("--size", type=int, default=1_000_000, help="bytes of ConfigMap data")
    ap.add_argument("--storage", choices=("sqlite", "memory"), default="sqlite")
    ap.add_argument("--watchers", type=int, default=0)
    args = ap.parse_args(argv)
    proc = subprocess.Popen([sys.executable, "-c", SERVER, args.storage], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        port = int(proc.stdout.readline())  # type: ignore[union-attr]
        figures = asyncio.run(drive(port, proc.pid, args.updates, args.size, args.watchers))
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    start = figures["start_mb"]
    print(f"storage={args.storage} updates={args.updates} size={args.size} watchers={args.watchers} "
          f"history_bytes={os.environ.get('PHALANX_WATCH_HISTORY_BYTES', 'default')}")
    print(f"server RSS: start {start:.0f} MB, after updates {figures['after_updates_mb']:.0f} MB "
          f"(+{figures['after_updates_mb'] - start:.0f}), peak {figures['peak_mb']:.0f} MB "
          f"(+{figures['peak_mb'] - start:.0f}), after delete {figures['after_delete_mb']:.0f} MB "
          f"(+{figures['after_delete_mb'] - start:.0f}); {args.updates / figures['patch_s']:.1f} patches/s")


if __name__ == "__main__":
    main()
