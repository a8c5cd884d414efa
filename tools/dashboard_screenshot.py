"""The README's picture of the dashboard: the GPU topology example with the tutorial's gang selected.

Creates a cluster from examples/clusters/phalanx-gpu-topology.yaml (4,161 nodes), gives it some
background (`--gangs` rack-bound gangs of 16 pods, so racks and allocation show), runs the seed
tutorial's manifests (examples/dra-integration: the `training-workers` gang and its shared GPU
claim), starts `phalanx dashboard` as a user does, opens it in Debian's headless Chromium, selects
the PodGroup, zooms to the zone it runs in and writes the page to `docs/images/dashboard.png`
(a palette PNG, kept under 400 KB).

    .venv/bin/python tools/dashboard_screenshot.py [--out docs/images/dashboard.png] [--gangs 48]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import dashboard_bench as bench  # noqa: E402  (the cluster, the dashboard and the browser helpers)

TUTORIAL = ROOT / "examples" / "dra-integration"
MAX_BYTES = 400 * 1024


async def background(kubeconfig: str, context: str, gangs: int) -> None:
    from phalanx.client import HTTPClient

    client = HTTPClient.from_kubeconfig(kubeconfig, context, field_manager="dashboard-screenshot")
    try:
        await bench.create_all(client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bench.NAMESPACE}}])
        objects = []
        for g in range(gangs):  # gangs of 8 to 32 pods taking 24 to 48 CPUs each, spread over the zones
            pods = bench.gang(f"gang-{g}", (8, 16, 32, 16)[g % 4], "scheduling.k8s.io/v1alpha2")
            for p in pods[1:]:
                p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = ("24", "48", "32")[g % 3]
                p["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": f"zone-{g % 4}"}
            objects += pods
        await bench.create_all(client, objects)
        await bench.wait_bound(client, "background")
    finally:
        await client.close()


def tutorial(env: dict, name: str) -> None:
    kubectl = [str(bench.BIN / "kubectl"), "--context", f"phalanx-{name}"]
    for f in ("resourceclaimtemplate", "workload", "podgroup", "jobset"):
        subprocess.run(kubectl + ["apply", "-f", str(TUTORIAL / f"{f}.yaml")], env=env, check=True, capture_output=True)
    subprocess.run(kubectl + ["wait", "--for=condition=PodGroupScheduled", "podgroup/training-workers", "--timeout=120s"],
                   env=env, check=True, capture_output=True)


def save_small_png(png: bytes, out: Path) -> int:
    """The screenshot as an optimized PNG; as a palette PNG (the page has few colours) when that is
    needed to stay under MAX_BYTES."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    for colours in (256, 128):
        if buf.tell() <= MAX_BYTES:
            break
        buf = io.BytesIO()
        image.quantize(colors=colours, method=Image.Quantize.FASTOCTREE).save(buf, format="PNG", optimize=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buf.getvalue())
    return buf.tell()


def shoot(url: str, out: Path) -> int:
    with bench.browser(tempfile.mkdtemp(prefix="dashboard-shot-"), width=1600, height=1060) as driver:
        driver.get(url)
        bench.wait_js(driver, "document.body.dataset.firstRender === '1' && window.__dashboard.get('podGroups', "
                              "'default/training-workers')")
        driver.execute_script("""
          const d = window.__dashboard;
          d.select('podgroup', 'default/training-workers');
          d.zoomToNodes(d.highlightedNodes, 0);
          d.showNode(d.highlightedNodes[0]);
          const aside = document.querySelector('aside'), row = document.querySelector('tr.selected');
          aside.scrollTop = row.offsetTop - aside.offsetTop - 120;
          window.scrollTo(0, 0);""")
        time.sleep(1)
        return save_small_png(driver.get_screenshot_as_png(), out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "images" / "dashboard.png"))
    ap.add_argument("--gangs", type=int, default=40, help="background gangs, each inside one rack")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dashboard-shot-")
    env = dict(os.environ, PHALANX_HOME=f"{tmp}/home", KUBECONFIG=f"{tmp}/kubeconfig")
    name = "gpu-farm"
    try:
        bench.create_cluster(name, bench.CONFIG, env)
        asyncio.run(background(env["KUBECONFIG"], f"phalanx-{name}", args.gangs))
        tutorial(env, name)
        with bench.dashboard(name, env) as (url, _):
            size = shoot(url, Path(args.out))
        print(f"wrote {args.out} ({size / 1024:.0f} KiB)")
    finally:
        subprocess.run([str(bench.BIN / "phalanx"), "delete", "cluster", "--name", name], env=env, capture_output=True)


if __name__ == "__main__":
    main()
