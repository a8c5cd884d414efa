"""The dashboard at scale: 4,161 nodes, a few hundred gangs and ~50,000 pods, in headless Chromium.

Builds a real cluster as a user does (`phalanx create cluster --config
examples/clusters/phalanx-gpu-topology.yaml`), fills it through the API (HTTP, 32 requests in
flight): `--gangs` PodGroups of `--gang-size` pods (2 CPU each) that must share one rack
(`example.com/rack`), and filler pods (100m) up to `--pods` in all, every pod tolerating the GPU
nodes' taint; waits until every pod is bound. Then starts `phalanx dashboard --name` as a user
does, logs Debian's Chromium in (selenium, nothing downloaded) and, `--runs` times (a page load
each):

- time to first render: navigation start to the first drawn map (the page's own clock);
- the snapshot: its size, and the time the page takes to parse and apply it;
- frame times while panning (one pan step per animation frame, whole map in view, then zoomed in
  4x where devices are drawn) and while selecting gangs one after another (one per frame):
  requestAnimationFrame intervals and the map's draw time, collected in the page and read back;
  each selected gang must highlight exactly its nodes, all in one rack, and that rack's box;
- a burst: `--burst` new gangs created at once; every patch the page receives meanwhile (size,
  apply time) until it shows them all scheduled (seconds from the first create), then deleted.

Reported: the median over runs (and min-max) of each figure, and the server's counters from
`/api/stats` (document size, patches sent, bytes, flush time). A benchmark, not a test: it checks
that what is highlighted is right, but asserts nothing about speed.

    .venv/bin/python benchmarks/dashboard_bench.py [--runs 3] [--gangs 300] [--pods 50000] [--json out.json]
    .venv/bin/python benchmarks/dashboard_bench.py --reuse NAME   # a cluster this script filled before
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CONFIG = ROOT / "examples" / "clusters" / "phalanx-gpu-topology.yaml"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
NAMESPACE = "bench"
RACK = "example.com/rack"
TOLERATION = {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


# -- the cluster -------------------------------------------------------------------------------------
def create_cluster(name: str, config: Path, env: dict) -> None:
    started = time.perf_counter()
    subprocess.run([str(BIN / "phalanx"), "create", "cluster", "--name", name, "--config", str(config), "-q",
                    "--wait", "120s"], env=env, check=True)
    print(f"cluster {name}: created in {time.perf_counter() - started:.1f}s", flush=True)


def pod(name: str, cpu: str, group: str | None = None) -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                            "tolerations": [TOLERATION], "terminationGracePeriodSeconds": 0}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def gang(name: str, size: int, pod_group_api: str) -> list[dict]:
    """A PodGroup of `size` pods of 2 CPUs that must share one rack, and its pods."""
    pg = {"apiVersion": pod_group_api, "kind": "PodGroup", "metadata": {"name": name, "namespace": NAMESPACE},
          "spec": {"schedulingPolicy": {"gang": {"minCount": size}},
                   "schedulingConstraints": {"topology": [{"key": RACK}]}}}
    return [pg] + [pod(f"{name}-{i}", "2", group=name) for i in range(size)]


async def create_all(client: Any, objects: list[dict], in_flight: int = 32) -> None:
    from phalanx.machinery.errors import StatusError

    queue = iter(objects)

    async def worker() -> None:
        for obj in queue:
            for attempt in range(20):
                try:
                    await client.create(obj, handover=True)
                    break
                except StatusError as e:
                    if e.code == 409:
                        break
                    if attempt == 19:
                        raise
                    await asyncio.sleep(0.5)  # e.g. the namespace's ServiceAccount not there yet
    await asyncio.gather(*(worker() for _ in range(in_flight)))


async def unbound(client: Any) -> int:
    items, _ = await client.list("v1", "Pod", NAMESPACE, field_selector="spec.nodeName=")
    return len(items)


async def wait_bound(client: Any, what: str, timeout: float = 1800) -> float:
    started = time.perf_counter()
    while True:
        left = await unbound(client)
        if not left:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"{what}: {left} pods still unbound after {timeout}s")
        print(f"  {what}: {left} pods unbound", flush=True)
        await asyncio.sleep(10)


async def fill(kubeconfig: str, context: str, gangs: int, gang_size: int, pods: int) -> None:
    from phalanx.client import HTTPClient

    client = HTTPClient.from_kubeconfig(kubeconfig, context, field_manager="dashboard-bench")
    try:
        api = "scheduling.k8s.io/v1alpha2"
        await create_all(client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
        started = time.perf_counter()
        objects = [o for g in range(gangs) for o in gang(f"gang-{g}", gang_size, api)]
        filler = max(0, pods - gangs * gang_size)
        objects += [pod(f"filler-{i}", "100m") for i in range(filler)]
        await create_all(client, objects)
        print(f"created {gangs} gangs x {gang_size} + {filler} filler pods in {time.perf_counter() - started:.0f}s",
              flush=True)
        bound = await wait_bound(client, "fill")
        print(f"all bound {bound:.0f}s after the last create", flush=True)
    finally:
        await client.close()


# -- the dashboard and the browser ---------------------------------------------------------------------
def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


@contextlib.contextmanager
def dashboard(name: str, env: dict) -> Iterator[tuple[str, int]]:
    proc = subprocess.Popen([str(BIN / "phalanx"), "dashboard", "--name", name], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        started = time.perf_counter()
        for line in proc.stdout:
            if line.startswith("open "):
                print(f"dashboard: URL printed after {time.perf_counter() - started:.1f}s", flush=True)
                yield line.split()[1], proc.pid
                return
        raise RuntimeError(f"phalanx dashboard exited: {proc.stderr.read() if proc.stderr else ''}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.contextmanager
def browser(profile: str, width: int = 1600, height: int = 1000) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-proxy-server", "--hide-scrollbars",
                f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    driver.set_script_timeout(600)
    try:
        yield driver
    finally:
        driver.quit()


def wait_js(driver: Any, script: str, timeout: float = 300) -> Any:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        value = driver.execute_script(f"return {script}")
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(script)


def wait_quiet(driver: Any, seconds: float = 3.0, timeout: float = 300) -> None:
    """Until the page has had no patch for `seconds` (the cluster settled)."""
    deadline, last, since = time.perf_counter() + timeout, None, time.perf_counter()
    while time.perf_counter() < deadline:
        generation = driver.execute_script("return window.__dashboard.doc.generation")
        if generation != last:
            last, since = generation, time.perf_counter()
        elif time.perf_counter() - since >= seconds:
            return
        time.sleep(0.2)


# One step per animation frame: `step(i)` is JavaScript run in frame i; the frames recorded.
FRAMES_JS = """
const [steps, body, done] = [arguments[0], new Function('i', arguments[1]), arguments[arguments.length - 1]];
const d = window.__dashboard;
d.startFrames();
let i = 0;
const next = () => { if (i < steps) { body(i++); requestAnimationFrame(next); }
                     else requestAnimationFrame(() => requestAnimationFrame(() => done(d.stopFrames()))); };
requestAnimationFrame(next);
"""


def frames(driver: Any, steps: int, body: str) -> dict:
    return driver.execute_async_script(FRAMES_JS, steps, body)


def check_gang_selection(driver: Any, keys: list[str]) -> int:
    """Each gang highlights exactly its nodes, all in one rack, and that rack's box; the gangs checked."""
    result = driver.execute_script("""
      const d = window.__dashboard, out = [];
      const rackLevel = d.doc.levels.indexOf(arguments[1]);
      for (const key of arguments[0]) {
        d.select('podgroup', key);
        const g = d.get('podGroups', key);
        const racks = new Set(d.highlightedNodes.map(n => d.get('nodes', n).path[rackLevel]));
        out.push({key, same: JSON.stringify(d.highlightedNodes) === JSON.stringify(g.nodes), racks: [...racks],
                  domain: d.highlightedDomains.map(x => x.value), boxes: Number(document.getElementById('map').dataset.domains)});
        d.select('podgroup', key);
      }
      return out;""", keys, RACK)
    for r in result:
        if not (r["same"] and len(r["racks"]) == 1 and r["domain"] == r["racks"] and r["boxes"] == 1):
            raise AssertionError(f"selecting {r['key']} did not highlight one rack: {r}")
    return len(result)


def summary(values: list[float]) -> dict:
    values = sorted(values)
    if not values:
        return {}
    return {"median": round(statistics.median(values), 2), "p95": round(values[min(len(values) - 1, int(0.95 * len(values)))], 2),
            "max": round(values[-1], 2), "n": len(values)}


def measure_page(driver: Any, url: str) -> dict:
    driver.get(url)
    wait_js(driver, "document.body.dataset.firstRender === '1'")
    m = driver.execute_script("""
      const d = window.__dashboard, s = d.stats.messages[0];
      return {firstRenderMs: d.firstRenderAt, snapshotBytes: s.bytes, snapshotApplyMs: s.applyMs,
              nodes: d.rows.nodes.size, podGroups: d.rows.podGroups.size, pending: d.rows.pendingPods.size,
              timeline: d.rows.timeline.size, firstDrawMs: d.lastDrawMs, layoutCells: d.layout.length};""")
    time.sleep(1)
    m["panWhole"] = frames(driver, 120, "window.__dashboard.panBy(i % 40 < 20 ? 6 : -6, i % 60 < 30 ? 4 : -4)")
    driver.execute_script("const d = window.__dashboard, c = document.getElementById('map'); d.zoomAt(c.width / 2, c.height / 2, 4);")
    m["panZoomed"] = frames(driver, 120, "window.__dashboard.panBy(i % 40 < 20 ? 12 : -12, i % 60 < 30 ? 8 : -8)")
    driver.execute_script("window.__dashboard.fitMap()")
    keys = driver.execute_script("return window.__dashboard.sorted('podGroups').filter(g => g.scheduled > 0).slice(0, 40).map(g => g.namespace + '/' + g.name)")
    m["gangsChecked"] = check_gang_selection(driver, keys[:20])
    m["select"] = frames(driver, len(keys), f"window.__dashboard.select('podgroup', {json.dumps(keys)}[i])")
    return m


async def burst(kubeconfig: str, context: str, driver: Any, run: int, gangs: int, gang_size: int) -> dict:
    """`gangs` new gangs at once; the patches the page gets until it shows them scheduled."""
    from phalanx.client import HTTPClient

    client = HTTPClient.from_kubeconfig(kubeconfig, context, field_manager="dashboard-bench")
    names = [f"burst-{run}-{g}" for g in range(gangs)]
    try:
        driver.execute_script("window.__dashboard.stats.messages = []")
        started = time.perf_counter()
        await create_all(client, [o for n in names for o in gang(n, gang_size, "scheduling.k8s.io/v1alpha2")])
        keys = json.dumps([f"{NAMESPACE}/{n}" for n in names])
        await asyncio.to_thread(wait_js, driver, f"{keys}.every(k => {{ const g = window.__dashboard.get('podGroups', k); "
                                                 f"return g && g.scheduled === {gang_size}; }})", 600)
        seconds = time.perf_counter() - started
        msgs = driver.execute_script("return window.__dashboard.stats.messages")
        views = driver.execute_script("return window.__dashboard.stats.viewMs")
        for n in names:
            await client.delete(api_version="scheduling.k8s.io/v1alpha2", kind="PodGroup", namespace=NAMESPACE, name=n)
        pods, _ = await client.list("v1", "Pod", NAMESPACE, label_selector=None, field_selector=None)
        doomed = [p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith(f"burst-{run}-")]
        await asyncio.gather(*(client.delete("v1", "Pod", NAMESPACE, p, grace_period=0) for p in doomed))
        await asyncio.to_thread(wait_quiet, driver)  # the next run's page load should not meet this cleanup
        return {"seconds": round(seconds, 2), "patches": len(msgs), "bytes": summary([m["bytes"] / 1024 for m in msgs]),
                "applyMs": summary([m["applyMs"] for m in msgs]), "totalKiB": round(sum(m["bytes"] for m in msgs) / 1024, 1),
                "viewMsSinceLoad": {k: round(v, 1) for k, v in views.items()}}
    finally:
        await client.close()


def report(runs: list[dict], stats: dict) -> dict:
    def each(path: str) -> list[float]:
        out = []
        for r in runs:
            v: Any = r
            for part in path.split("."):
                v = v[part]
            out.append(v)
        return out

    def frame_stats(key: str) -> dict:
        return {"intervalMs": summary([x for r in runs for x in r[key]["intervals"]]),
                "drawMs": summary([x for r in runs for x in r[key]["draws"]])}
    out = {
        "firstRenderMs": summary(each("firstRenderMs")), "snapshotKiB": round(runs[0]["snapshotBytes"] / 1024, 1),
        "snapshotApplyMs": summary(each("snapshotApplyMs")), "firstDrawMs": summary(each("firstDrawMs")),
        "panWhole": frame_stats("panWhole"), "panZoomed": frame_stats("panZoomed"), "select": frame_stats("select"),
        "burstSeconds": summary(each("burst.seconds")), "burstPatches": summary(each("burst.patches")),
        "burstPatchKiB": summary([x for r in runs for x in [r["burst"]["bytes"].get("median", 0)]]),
        "burstApplyMs": summary([r["burst"]["applyMs"].get("median", 0) for r in runs]),
        "burstApplyMaxMs": summary([r["burst"]["applyMs"].get("max", 0) for r in runs]),
        "shape": {k: runs[0][k] for k in ("nodes", "podGroups", "pending", "timeline", "gangsChecked")},
        "server": stats,
    }
    return out


async def main_async(args: argparse.Namespace) -> None:
    tmp = tempfile.mkdtemp(prefix="dashboard-bench-") if not args.reuse else None
    env = dict(os.environ)
    if tmp:
        env.update(PHALANX_HOME=f"{tmp}/home", KUBECONFIG=f"{tmp}/kubeconfig")
    name = args.reuse or "dashbench"
    kubeconfig, context = env.get("KUBECONFIG") or os.path.expanduser("~/.kube/config"), f"phalanx-{name}"
    try:
        if not args.reuse:
            create_cluster(name, Path(args.config), env)
            await fill(kubeconfig, context, args.gangs, args.gang_size, args.pods)
        runs = []
        with dashboard(name, env) as (url, pid), browser(tempfile.mkdtemp(prefix="dashboard-bench-profile-")) as driver:
            started = time.perf_counter()
            driver.get(url)  # the one-time token becomes the session cookie; each run reloads the page
            wait_js(driver, "document.body.dataset.firstRender === '1'", timeout=600)
            print(f"dashboard: first page drawn {time.perf_counter() - started:.1f}s after the URL was printed "
                  "(the informers' first lists)", flush=True)
            base = url.split("?")[0]
            for run in range(args.runs):
                m = measure_page(driver, base)
                m["burst"] = await burst(kubeconfig, context, driver, run, args.burst, args.gang_size)
                print(f"run {run + 1}: first render {m['firstRenderMs']:.0f} ms, snapshot {m['snapshotBytes'] / 1024:.0f} KiB, "
                      f"burst {m['burst']['seconds']}s / {m['burst']['patches']} patches", flush=True)
                runs.append(m)
            stats = driver.execute_async_script("fetch('/api/stats').then(r => r.json()).then(arguments[0])")
            stats["dashboardRssMiB"] = rss_mib(pid)
        result = report(runs, stats)
        print(json.dumps(result, indent=2))
        if args.json:
            Path(args.json).write_text(json.dumps({"summary": result, "runs": runs}, indent=1))
    finally:
        if tmp and not args.keep:
            subprocess.run([str(BIN / "phalanx"), "delete", "cluster", "--name", name], env=env, capture_output=True)
        elif tmp:
            print(f"kept: PHALANX_HOME={tmp}/home KUBECONFIG={tmp}/kubeconfig ... --reuse {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gangs", type=int, default=300)
    ap.add_argument("--gang-size", type=int, default=32)
    ap.add_argument("--pods", type=int, default=50_000, help="pods in all (gangs' and filler)")
    ap.add_argument("--burst", type=int, default=20, help="gangs created at once in each run's burst")
    ap.add_argument("--config", default=str(CONFIG))
    ap.add_argument("--json", default=None)
    ap.add_argument("--reuse", default=None, metavar="NAME",
                    help="measure an existing cluster this script filled (KUBECONFIG, PHALANX_HOME from the environment)")
    ap.add_argument("--keep", action="store_true", help="keep the cluster (then --reuse it)")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
