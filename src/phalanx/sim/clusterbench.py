"""End-to-end benchmarks of a whole phalanx cluster, measured as a user runs it.

Each run creates a real cluster with `phalanx create cluster` (SQLite, the HTTP API, controllers,
simulated kubelets and DRA drivers, the scheduler: one control-plane process), applies a shape with
the real kubectl, and follows its pods through a watch of the HTTP API to time the phases a user
waits for: `kubectl apply` returned, every pod created, every pod bound, every pod Running and
ready, every pod finished or gone. While the shape runs, `py-spy` (when installed) samples the
control-plane process; the samples are split by component (`scheduler`, `controllers`,
`apiserver`, `store`, `nodes`, ...) so a run says where the time went. A benchmark, not a test: it
asserts nothing.

Shapes:

- `deployment`: an N-replica Deployment to Available, then scaled to zero until its pods are gone;
- `indexed-job`: an Indexed Job of N completions (parallelism P) whose pods run for a few seconds
  (`phalanx.dev/run-for`), to Complete.

    phalanx bench --cluster deployment --replicas 2000 --config examples/clusters/phalanx-gpu-topology.yaml
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import urlparse

import yaml

from ..client.kubeconfig import load_kubeconfig

SHAPES = ("deployment", "indexed-job")
NAMESPACE = "bench"
LABEL = "phalanx.dev/bench"
COMPONENTS = ("scheduler", "controllers", "nodes", "apiserver", "store", "sim", "client", "api", "machinery", "dra")


@dataclass
class Shape:
    """What to apply and how many pods it makes."""

    name: str
    pods: int
    manifest: dict[str, Any]
    finishes: bool  # pods end Succeeded (a Job) rather than being deleted by a scale-down


@dataclass
class PodTimeline:
    """When the counts of the shape's pods first reached the target, from the watch."""

    target: int
    t0: float
    created: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)
    running: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)
    reached: dict[str, float] = field(default_factory=dict)

    def observe(self, event_type: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        now = time.perf_counter() - self.t0
        self.created.add(name)
        if (pod.get("spec") or {}).get("nodeName"):
            self.bound.add(name)
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        if status.get("phase") == "Running" and ready:
            self.running.add(name)
        if status.get("phase") in ("Succeeded", "Failed"):
            self.finished.add(name)
            self.running.add(name)
        if event_type == "DELETED":
            self.gone.add(name)
        for phase, names in (("allCreated", self.created), ("allBound", self.bound), ("allRunning", self.running),
                             ("allFinished", self.finished), ("allGone", self.gone)):
            if phase not in self.reached and len(names) >= self.target:
                self.reached[phase] = now


def shape(name: str, pods: int, parallelism: int, run_for: str) -> Shape:
    labels = {LABEL: name}
    container = {"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    template: dict[str, Any] = {"metadata": {"labels": labels},
                                "spec": {"containers": [container], "terminationGracePeriodSeconds": 0}}
    if name == "deployment":
        manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench", "namespace": NAMESPACE},
                    "spec": {"replicas": pods, "selector": {"matchLabels": labels}, "template": template}}
        return Shape(name, pods, manifest, finishes=False)
    if name == "indexed-job":
        template["metadata"]["annotations"] = {"phalanx.dev/run-for": run_for}
        template["spec"]["restartPolicy"] = "Never"
        manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bench", "namespace": NAMESPACE},
                    "spec": {"completionMode": "Indexed", "completions": pods, "parallelism": min(parallelism, pods),
                             "backoffLimit": 0, "template": template}}
        return Shape(name, pods, manifest, finishes=True)
    raise ValueError(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")


# -- the cluster --------------------------------------------------------------------------------------

@dataclass
class Cluster:
    home: Path
    kubeconfig: Path
    env: dict[str, str]
    kubectl: list[str]
    phalanx: list[str]

    def run_kubectl(self, *args: str, input: Optional[str] = None) -> str:
        p = subprocess.run(self.kubectl + list(args), env=self.env, input=input, capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def pid(self) -> Optional[int]:
        path = self.home / "clusters" / "bench" / "pid"
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None

def create_cluster(tmp: Path, config: Optional[str], image: Optional[str]) -> tuple[Cluster, float]:
    bindir = Path(sys.executable).parent
    phalanx = [str(bindir / "phalanx")] if (bindir / "phalanx").exists() else [sys.executable, "-m", "phalanx"]
    kubectl_bin = bindir / "kubectl" if (bindir / "kubectl").exists() else Path(shutil.which("kubectl") or "kubectl")
    env = dict(os.environ, PHALANX_HOME=str(tmp / "home"), KUBECONFIG=str(tmp / "kubeconfig"))
    cluster = Cluster(tmp / "home", tmp / "kubeconfig", env, [str(kubectl_bin), "--cache-dir", str(tmp / "cache")],
                      phalanx)
    args = phalanx + ["create", "cluster", "--name", "bench", "--wait", "120s", "-q"]
    if config:
        args += ["--config", config]
    if image:
        args += ["--image", image]
    t0 = time.perf_counter()
    subprocess.run(args, env=env, check=True, capture_output=True, timeout=900)
    return cluster, time.perf_counter() - t0


def delete_cluster(cluster: Cluster) -> None:
    subprocess.run(cluster.phalanx + ["delete", "cluster", "--name", "bench"], env=cluster.env, capture_output=True,
                   timeout=120)


def without_scheduler(config: Optional[str], tmp: Path) -> str:
    """A copy of a phalanx-format cluster config with the built-in scheduler off."""
    doc: dict[str, Any] = yaml.safe_load(Path(config).read_text()) if config else {}
    if not doc:
        doc = {"apiVersion": "phalanx.dev/v1alpha1", "kind": "Cluster"}
    if doc.get("apiVersion") != "phalanx.dev/v1alpha1":
        raise ValueError("--external-scheduler needs a phalanx.dev/v1alpha1 cluster config (or none)")
    doc.setdefault("scheduler", {})["enabled"] = False
    out = tmp / "cluster-without-scheduler.yaml"
    out.write_text(yaml.safe_dump(doc))
    return str(out)


def start_scheduler(cluster: Cluster, tmp: Path) -> subprocess.Popen[bytes]:
    """`phalanx scheduler --kubeconfig` as its own process, as kube-scheduler runs beside a cluster."""
    log = open(tmp / "scheduler.log", "wb")
    return subprocess.Popen(cluster.phalanx + ["scheduler", "--kubeconfig", str(cluster.kubeconfig)],
                            env=cluster.env, stdout=log, stderr=subprocess.STDOUT)


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


# -- following the pods ---------------------------------------------------------------------------------

def watch_pods(cluster: Cluster, timeline: PodTimeline, stop: threading.Event) -> threading.Thread:
    """A thread that follows the shape's pods through a watch of the HTTP API (one connection,
    resumed from the last resourceVersion if the server ends it)."""
    import http.client

    cfg = load_kubeconfig(cluster.kubeconfig)
    url, token, ctx = urlparse(cfg.server), cfg.token or "", cfg.ssl_context()

    def run() -> None:
        rv = ""
        while not stop.is_set():
            conn = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port or 443, context=ctx, timeout=5)
            path = (f"/api/v1/namespaces/{NAMESPACE}/pods?watch=true&allowWatchBookmarks=true"
                    f"&labelSelector={LABEL}&resourceVersion={rv}")
            try:
                conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
                resp = conn.getresponse()
                rv = _follow(resp, timeline, stop, rv)
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
            finally:
                conn.close()

    t = threading.Thread(target=run, name="pod-watch", daemon=True)
    t.start()
    return t


def _follow(resp: Any, timeline: PodTimeline, stop: threading.Event, rv: str) -> str:
    while not stop.is_set():
        try:
            line = resp.readline()
        except TimeoutError:
            continue
        if not line:
            return rv
        event = json.loads(line)
        obj = event.get("object") or {}
        rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            timeline.observe(event["type"], obj)
    return rv


def wait_for(pred: Callable[[], bool], timeout: float) -> bool:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


# -- where the time went ---------------------------------------------------------------------------------

class Sampler:
    """`py-spy record` of the control-plane process while the shape runs, read back as the share of
    samples per phalanx component (the innermost phalanx frame of each stack decides)."""

    def __init__(self, pid: Optional[int], out: Path, rate: int = 50):
        self.out = out
        self.proc: Optional[subprocess.Popen[bytes]] = None
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if pid is None or not Path(spy).exists():
            return
        self.proc = subprocess.Popen([spy, "record", "--pid", str(pid), "--format", "raw", "--rate", str(rate),
                                      "--output", str(out), "--nonblocking"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> dict[str, float]:
        if self.proc is None:
            return {}
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return component_shares(self.out)


def component_shares(raw: Path) -> dict[str, float]:
    """Share of samples per component from py-spy's collapsed stacks (`frame;frame;... count`)."""
    counts: Counter[str] = Counter()
    try:
        lines = raw.read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        counts[_component(stack)] += int(n)
    total = sum(counts.values()) or 1
    return {k: round(v / total, 3) for k, v in counts.most_common()}


PRIMARY = ("scheduler", "controllers", "nodes", "apiserver", "store", "sim")


def _component(stack: str) -> str:
    """Who the sample worked for: the outermost frame in a component that does work of its own
    (the scheduler, a controller, the simulated nodes, the API server, the store); else the
    innermost phalanx package (a library: machinery, client, api, dra)."""
    packages = [_package(frame) for frame in stack.split(";")]
    packages = [p for p in packages if p]
    for p in packages:
        if p in PRIMARY:
            return p
    if packages:
        return packages[-1] if packages[-1] in COMPONENTS else "other phalanx"
    return "python (no phalanx frame)"


def _package(frame: str) -> str:
    i = frame.find("phalanx/")
    if i < 0:
        return ""
    return frame[i + len("phalanx/"):].split("/", 1)[0].split(".py", 1)[0]


# -- a run ----------------------------------------------------------------------------------------------

@dataclass
class RunSpec:
    shape: str
    pods: int
    parallelism: int = 1000
    run_for: str = "5s"
    config: Optional[str] = None
    image: Optional[str] = None
    timeout: float = 900.0
    profile_out: Optional[str] = None  # keep py-spy's collapsed stacks here
    external_scheduler: bool = False  # no built-in scheduler: `phalanx scheduler --kubeconfig` in its own process


def run_once(spec: RunSpec) -> dict[str, Any]:
    chosen = shape(spec.shape, spec.pods, spec.parallelism, spec.run_for)
    with tempfile.TemporaryDirectory(prefix="phalanx-clusterbench-") as tmp_dir:
        tmp = Path(tmp_dir)
        config = without_scheduler(spec.config, tmp) if spec.external_scheduler else spec.config
        cluster, created_s = create_cluster(tmp, config, spec.image)
        scheduler = start_scheduler(cluster, tmp) if spec.external_scheduler else None
        try:
            result = _drive(cluster, chosen, spec, tmp, created_s)
            if scheduler is not None:
                result["schedulerProcessCpuSeconds"] = round(_cpu_seconds(scheduler.pid), 2)
            return result
        finally:
            if scheduler is not None:
                scheduler.terminate()
                scheduler.wait(timeout=30)
            delete_cluster(cluster)


class ShapeTooLarge(RuntimeError):
    pass


def room_for_pods(node_list: dict[str, Any], pod_list: dict[str, Any] | None = None) -> int:
    """How many pods the untainted nodes admit (`status.allocatable.pods`, less the pods already
    bound there, such as kube-system's kube-proxy and kindnet): the most a shape without
    tolerations can run at once."""
    room = 0
    untainted = set()
    for node in node_list.get("items") or []:
        taints = (node.get("spec") or {}).get("taints") or []
        if any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints):
            continue
        untainted.add((node.get("metadata") or {}).get("name"))
        room += int(((node.get("status") or {}).get("allocatable") or {}).get("pods") or 0)
    bound = [p for p in (pod_list or {}).get("items") or [] if (p.get("spec") or {}).get("nodeName") in untainted]
    return room - len(bound)


def _drive(cluster: Cluster, chosen: Shape, spec: RunSpec, tmp: Path, created_s: float) -> dict[str, Any]:
    node_list = json.loads(cluster.run_kubectl("get", "nodes", "-o", "json"))
    nodes = len(node_list.get("items") or [])
    room = room_for_pods(node_list, json.loads(cluster.run_kubectl("get", "pods", "-A", "-o", "json")))
    at_once = chosen.pods if not chosen.finishes else min(chosen.pods, spec.parallelism)
    if room < at_once:
        raise ShapeTooLarge(f"{chosen.name}: {at_once} pods at once, but the cluster's untainted nodes admit "
                            f"{room}; give --config with more nodes (e.g. examples/clusters/phalanx-gpu-topology.yaml)")
    cluster.run_kubectl("create", "namespace", NAMESPACE)
    timeline = PodTimeline(chosen.pods, time.perf_counter())
    stop = threading.Event()
    watcher = watch_pods(cluster, timeline, stop)
    sampler = Sampler(cluster.pid(), tmp / "profile.raw")
    timeline.t0 = time.perf_counter()
    cluster.run_kubectl("apply", "-f", "-", input=json.dumps(chosen.manifest))
    applied = time.perf_counter() - timeline.t0
    final = "allFinished" if chosen.finishes else "allRunning"
    done = wait_for(lambda: final in timeline.reached, spec.timeout)
    if done and not chosen.finishes:
        cluster.run_kubectl("scale", "deployment/bench", "-n", NAMESPACE, "--replicas=0")
        scaled_at = time.perf_counter() - timeline.t0
        wait_for(lambda: "allGone" in timeline.reached, spec.timeout)
        timeline.reached["scaledToZeroAfter"] = scaled_at
    shares = sampler.stop()
    if spec.profile_out and sampler.out.exists():
        shutil.copy(sampler.out, spec.profile_out)
    stop.set()
    watcher.join(timeout=10)
    return _result(chosen, nodes, created_s, applied, timeline, done, shares)


def _result(chosen: Shape, nodes: int, created_s: float, applied: float, timeline: PodTimeline, done: bool,
            shares: dict[str, float]) -> dict[str, Any]:
    reached = {k: round(v, 3) for k, v in timeline.reached.items()}
    final = reached.get("allFinished" if chosen.finishes else "allRunning")
    out: dict[str, Any] = {"shape": chosen.name, "pods": chosen.pods, "nodes": nodes, "completed": done,
                           "createClusterSeconds": round(created_s, 3), "applySeconds": round(applied, 3),
                           "phases": reached, "cpuShareByComponent": shares}
    if final:
        out["podsPerSecondEndToEnd"] = round(chosen.pods / final, 1)
    if "allBound" in reached:
        out["podsPerSecondToBound"] = round(chosen.pods / reached["allBound"], 1)
    if "allGone" in reached and "scaledToZeroAfter" in reached:
        out["scaleToZeroSeconds"] = round(reached["allGone"] - reached["scaledToZeroAfter"], 3)
    return out
