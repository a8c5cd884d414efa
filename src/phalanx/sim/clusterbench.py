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

The shapes are in `clustershapes` (a Deployment, an Indexed Job, the tutorial's JobSet at scale,
SchedulingBasic and GangScheduling over HTTP, watch fan-out in `clusterfanout`). The cluster is
first left to settle (the simulated drivers publish their slices, the kubelets their Leases) so
the run times the shape alone. Each run ends with correctness checks (`clusterchecks`) over the
final state and the pod watch's log, then tears the shape down and checks nothing is left; with
`compare`, the scheduler_perf-style workload of the same pods then runs alone (`phalanx bench`'s
harness) for the ratio of end-to-end pods/s to the scheduler's.

    phalanx bench --cluster deployment --pods 2000 --config examples/clusters/phalanx-gpu-topology.yaml
"""

from __future__ import annotations

import asyncio
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
from .clusterchecks import RestReader, WatchLog, final_state_checks, leftovers, leftovers_check, watch_log_checks
from .clusterfanout import measure_fanout
from .clustershapes import ALONE, LABEL, NAMESPACE, Shape, ShapeParams, build_shape

COMPONENTS = ("scheduler", "controllers", "nodes", "apiserver", "store", "sim", "client", "api", "machinery", "dra")


@dataclass
class PodTimeline:
    """When the counts of the shape's pods first reached the target, from the watch; every event
    also goes to the watch log the correctness checks replay."""

    target: int
    t0: float
    created: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)
    running: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)
    reached: dict[str, float] = field(default_factory=dict)
    log: WatchLog = field(default_factory=WatchLog)

    def observe(self, event_type: str, pod: dict[str, Any]) -> None:
        self.log.add(event_type, pod)
        name = pod["metadata"]["name"]
        now = time.perf_counter() - self.t0
        self.created.add(name)
        if (pod.get("spec") or {}).get("nodeName"):
            self.bound.add(name)
            if "firstBound" not in self.reached:
                self.reached["firstBound"] = now
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

    def mark(self, phase: str) -> None:
        self.reached[phase] = time.perf_counter() - self.t0


# -- the cluster --------------------------------------------------------------------------------------

@dataclass
class Cluster:
    home: Path
    kubeconfig: Path
    env: dict[str, str]
    kubectl: list[str]
    phalanx: list[str]
    config_path: Optional[str] = None

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
                      phalanx, config)
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


def cluster_config(config: Optional[str], generated: Optional[dict[str, Any]], external_scheduler: bool,
                   tmp: Path) -> Optional[str]:
    """The config file the run's cluster is created from: the user's (`config`), else the shape's
    generated one, else none (the default cluster); with `external_scheduler`, a copy with the
    built-in scheduler off (`scheduler: {enabled: false}`)."""
    if not external_scheduler and (config or generated is None):
        return config
    doc: dict[str, Any] = yaml.safe_load(Path(config).read_text()) if config else dict(generated or {})
    if not doc:
        doc = {"apiVersion": "phalanx.dev/v1alpha1", "kind": "Cluster"}
    if doc.get("apiVersion") != "phalanx.dev/v1alpha1":
        raise ValueError("--external-scheduler needs a phalanx.dev/v1alpha1 cluster config (or none)")
    if external_scheduler:
        doc.setdefault("scheduler", {})["enabled"] = False
    out = tmp / "cluster.yaml"
    out.write_text(yaml.safe_dump(doc))
    return str(out)


def settle(pid: Optional[int], timeout: float = 180.0, window: float = 0.5, idle_share: float = 0.1) -> float:
    """Wait until the control plane is idle (below `idle_share` of a core over two windows in a
    row): a new cluster's drivers publish their ResourceSlices and its kubelets their Leases for a
    few seconds after `create cluster` returns. Returns the seconds waited."""
    t0 = time.perf_counter()
    if pid is None:
        return 0.0
    quiet, last = 0, _cpu_seconds(pid)
    while quiet < 2 and time.perf_counter() - t0 < timeout:
        time.sleep(window)
        now = _cpu_seconds(pid)
        quiet = quiet + 1 if now - last < window * idle_share else 0
        last = now
    return time.perf_counter() - t0


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
    shape: ShapeParams
    config: Optional[str] = None
    image: Optional[str] = None
    timeout: float = 900.0
    profile_out: Optional[str] = None  # keep py-spy's collapsed stacks here
    external_scheduler: bool = False  # no built-in scheduler: `phalanx scheduler --kubeconfig` in its own process
    compare: Optional[Path] = None  # benchmarks/workloads: run the shape's scheduler-alone workload after
    clients: int = 8  # concurrent HTTP clients creating the objects of the basic and gang shapes


class ShapeTooLarge(RuntimeError):
    pass


def run_once(spec: RunSpec) -> dict[str, Any]:
    chosen = build_shape(spec.shape)
    with tempfile.TemporaryDirectory(prefix="phalanx-clusterbench-") as tmp_dir:
        tmp = Path(tmp_dir)
        config = cluster_config(spec.config, chosen.config, spec.external_scheduler, tmp)
        cluster, created_s = create_cluster(tmp, config, spec.image)
        scheduler: Optional[subprocess.Popen[bytes]] = None
        try:
            settled_s = settle(cluster.pid())
            if spec.external_scheduler and not chosen.objects:
                scheduler = start_scheduler(cluster, tmp)
            if chosen.name == "fanout":
                result = _fanout(cluster, chosen, spec, tmp)
            else:
                result, scheduler = _drive(cluster, chosen, spec, tmp, scheduler)
                result["checks"] += _teardown(cluster, chosen, spec, result)
            result.update(createClusterSeconds=round(created_s, 3), settleSeconds=round(settled_s, 2),
                          loadAverage=_loadavg())
            if scheduler is not None:
                result["schedulerProcessCpuSeconds"] = round(_cpu_seconds(scheduler.pid), 2)
        finally:
            if scheduler is not None:
                scheduler.terminate()
                scheduler.wait(timeout=30)
            delete_cluster(cluster)
    if spec.compare is not None and chosen.name in ALONE and ALONE[chosen.name][2] == chosen.at_once:
        result["schedulerAlone"] = scheduler_alone(chosen.name, spec.compare)
        alone = result["schedulerAlone"].get("podsPerSecond")
        if alone and result.get("podsPerSecondEndToEnd"):
            result["ratioToSchedulerAlone"] = round(result["podsPerSecondEndToEnd"] / alone, 3)
    return result


def _loadavg() -> Optional[list[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def room_for_pods(node_list: dict[str, Any], pod_list: dict[str, Any] | None = None,
                  tolerated: tuple[str, ...] = ()) -> int:
    """How many pods the nodes admit (`status.allocatable.pods`) that have no NoSchedule or
    NoExecute taint except those keyed in `tolerated`, less the pods already bound there (such as
    kube-system's kube-proxy and kindnet): the most a shape can run at once."""
    room = 0
    usable = set()
    for node in node_list.get("items") or []:
        taints = (node.get("spec") or {}).get("taints") or []
        if any(t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") not in tolerated for t in taints):
            continue
        usable.add((node.get("metadata") or {}).get("name"))
        room += int(((node.get("status") or {}).get("allocatable") or {}).get("pods") or 0)
    bound = [p for p in (pod_list or {}).get("items") or [] if (p.get("spec") or {}).get("nodeName") in usable]
    return room - len(bound)


def _drive(cluster: Cluster, chosen: Shape, spec: RunSpec, tmp: Path,
           scheduler: Optional[subprocess.Popen[bytes]]) -> tuple[dict[str, Any], Optional[subprocess.Popen[bytes]]]:
    """Apply (or create) the shape, follow its pods to the end, check the final state; a
    Deployment is then scaled to zero. Returns the result and the scheduler process, if any."""
    node_list = json.loads(cluster.run_kubectl("get", "nodes", "-o", "json"))
    nodes = len(node_list.get("items") or [])
    room = room_for_pods(node_list, json.loads(cluster.run_kubectl("get", "pods", "-A", "-o", "json")), chosen.tolerated)
    if room < chosen.at_once:
        raise ShapeTooLarge(f"{chosen.name}: {chosen.at_once} pods at once, but the cluster's nodes admit "
                            f"{room}; give --config with more nodes (e.g. examples/clusters/phalanx-gpu-topology.yaml)")
    cluster.run_kubectl("create", "namespace", NAMESPACE)
    timeline = PodTimeline(chosen.pods, time.perf_counter())
    stop = threading.Event()
    watcher = watch_pods(cluster, timeline, stop)
    pid = cluster.pid()
    samplers = {"": Sampler(pid, tmp / "profile.raw")}
    if scheduler is not None:
        samplers["scheduler"] = Sampler(scheduler.pid, tmp / "scheduler.raw")
    cpu0 = _cpu_seconds(pid) if pid else 0.0
    timeline.t0 = time.perf_counter()
    if chosen.manifests:
        # server-side: the JobSet of 512 gangs is too large for client-side apply's annotation
        cluster.run_kubectl("apply", "--server-side", "-f", "-",
                            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": chosen.manifests}))
    if chosen.objects:
        asyncio.run(create_objects(cluster.kubeconfig, chosen.objects, spec.clients))
        if spec.external_scheduler:  # created first, then the scheduler: its own throughput over HTTP
            timeline.mark("schedulerStarted")
            scheduler = start_scheduler(cluster, tmp)
            samplers["scheduler"] = Sampler(scheduler.pid, tmp / "scheduler.raw")
    applied = time.perf_counter() - timeline.t0
    final = "allFinished" if chosen.finishes else "allRunning"
    done = wait_for(lambda: final in timeline.reached, spec.timeout)
    cpu = (_cpu_seconds(pid) if pid else 0.0) - cpu0
    checks = _final_checks(cluster, spec, timeline)
    if done and chosen.scale_to_zero:
        timeline.mark("scaledToZeroAfter")
        cluster.run_kubectl("scale", "deployment/bench", "-n", NAMESPACE, "--replicas=0")
        wait_for(lambda: "allGone" in timeline.reached, spec.timeout)
    shares = _stop_samplers(samplers, spec.profile_out)
    stop.set()
    watcher.join(timeout=10)
    result = _result(chosen, nodes, applied, timeline, done, shares.pop(""), checks)
    if "scheduler" in shares:
        result["schedulerProcessCpuShareByComponent"] = shares["scheduler"]
    result["controlPlaneCpuSeconds"] = round(cpu, 2)  # apply -> the final phase; a busy machine disturbs it least
    result["controlPlaneCpuMsPerPod"] = round(cpu / chosen.pods * 1000, 2)
    return result, scheduler


def _stop_samplers(samplers: dict[str, Sampler], profile_out: Optional[str]) -> dict[str, dict[str, float]]:
    """Each process's shares by component; the raw stacks kept at `profile_out` (the control
    plane's) and `profile_out` + `.scheduler` (the scheduler process's)."""
    shares = {}
    for name, sampler in samplers.items():
        shares[name] = sampler.stop()
        if profile_out and sampler.out.exists():
            shutil.copy(sampler.out, profile_out + (f".{name}" if name else ""))
    return shares


async def create_objects(kubeconfig: Path, objects: list[dict[str, Any]], clients: int) -> None:
    """Create `objects` in order through the Python HTTP client, `clients` requests at a time
    (PodGroups come first, so a gang's pods find their group)."""
    from ..client.http import HTTPClient

    client = HTTPClient.from_kubeconfig(str(kubeconfig), field_manager="phalanx-bench")
    pending = list(reversed(objects))

    async def worker() -> None:
        while pending:
            await client.create(pending.pop())

    try:
        await asyncio.gather(*(worker() for _ in range(clients)))
    finally:
        await client.close()


def _gates(spec: RunSpec, cluster: Cluster) -> Any:
    from ..cluster.config import load_cluster_config
    from ..machinery.featuregates import FeatureGates

    path = cluster.config_path
    parsed = load_cluster_config(path, image=spec.image)
    return FeatureGates.from_config(parsed.feature_gates, parsed.release)


def _final_checks(cluster: Cluster, spec: RunSpec, timeline: PodTimeline) -> list[dict[str, Any]]:
    reader = RestReader.from_kubeconfig(cluster.kubeconfig)
    return final_state_checks(reader, _gates(spec, cluster)) + watch_log_checks(timeline.log, reader)


def _teardown(cluster: Cluster, chosen: Shape, spec: RunSpec, result: dict[str, Any]) -> list[dict[str, Any]]:
    """Delete what the shape made, time until its namespace is empty, and check nothing is left."""
    reader = RestReader.from_kubeconfig(cluster.kubeconfig)
    t0 = time.perf_counter()
    if chosen.manifests:
        cluster.run_kubectl("delete", "-f", "-", "--wait=false",
                            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": chosen.manifests}))
    if chosen.objects:
        cluster.run_kubectl("delete", "pods,podgroups", "--all", "-n", NAMESPACE, "--wait=false")
    left = leftovers(reader, NAMESPACE)
    deadline = time.perf_counter() + min(spec.timeout, 120.0)
    while left and time.perf_counter() < deadline:
        time.sleep(0.25)
        left = leftovers(reader, NAMESPACE)
    result["teardownSeconds"] = round(time.perf_counter() - t0, 2)
    return [leftovers_check(left)]


def _fanout(cluster: Cluster, chosen: Shape, spec: RunSpec, tmp: Path) -> dict[str, Any]:
    cluster.run_kubectl("create", "namespace", NAMESPACE)
    pid = cluster.pid()
    sampler = Sampler(pid, tmp / "profile.raw")
    out = asyncio.run(measure_fanout(cluster.kubeconfig, chosen.pods, chosen.watchers,
                                     lambda: _cpu_seconds(pid) if pid else 0.0))
    out["cpuShareByComponent"] = sampler.stop()
    if spec.profile_out and sampler.out.exists():
        shutil.copy(sampler.out, spec.profile_out)
    reader = RestReader.from_kubeconfig(cluster.kubeconfig)
    left = leftovers(reader, NAMESPACE)
    deadline = time.perf_counter() + 60
    while left and time.perf_counter() < deadline:
        time.sleep(0.25)
        left = leftovers(reader, NAMESPACE)
    return {"shape": chosen.name, "pods": chosen.pods, "completed": True, **out, "checks": [leftovers_check(left)]}


def _result(chosen: Shape, nodes: int, applied: float, timeline: PodTimeline, done: bool,
            shares: dict[str, float], checks: list[dict[str, Any]]) -> dict[str, Any]:
    reached = {k: round(v, 3) for k, v in timeline.reached.items()}
    final = reached.get("allFinished" if chosen.finishes else "allRunning")
    out: dict[str, Any] = {"shape": chosen.name, "pods": chosen.pods, "nodes": nodes, "completed": done,
                           "applySeconds": round(applied, 3), "phases": reached, "cpuShareByComponent": shares,
                           "checks": checks}
    if chosen.gangs:
        out["gangs"] = chosen.gangs
    if final:
        out["podsPerSecondEndToEnd"] = round(chosen.pods / final, 1)
    if "allBound" in reached:
        out["podsPerSecondToBound"] = round(chosen.pods / reached["allBound"], 1)
        if "schedulerStarted" in reached:
            out["podsPerSecondSchedulerProcess"] = round(
                chosen.pods / max(reached["allBound"] - reached["schedulerStarted"], 1e-3), 1)
            out["podsPerSecondFirstToLastBind"] = round(
                chosen.pods / max(reached["allBound"] - reached["firstBound"], 1e-3), 1)
    if "allGone" in reached and "scaledToZeroAfter" in reached:
        out["scaleToZeroSeconds"] = round(reached["allGone"] - reached["scaledToZeroAfter"], 3)
    return out


# -- the scheduler alone ----------------------------------------------------------------------------------

def scheduler_alone(shape_name: str, workloads: Path) -> dict[str, Any]:
    """The shape's scheduler_perf-style workload (`clustershapes.ALONE`) run once by `phalanx
    bench`'s harness in a process of its own: the same pods on the same nodes, nothing else
    running. `podsPerSecond` is pods / (release of the scheduler -> last bind)."""
    from .harness import RunOptions, run_workload_isolated
    from .workload import load_workload_file, select

    file_name, name, _ = ALONE[shape_name]
    path = workloads / file_name
    if not path.exists():
        return {"error": f"{path} not found"}
    chosen = select(load_workload_file(str(path)), (name,), None)
    if not chosen:
        return {"error": f"{name} not in {path}"}
    case, workload = chosen[0]
    r = run_workload_isolated(case, workload, RunOptions(store_limit=False))
    m = (r.get("measurements") or [{}])[0]
    return {"workload": f"{file_name} {name}", "status": r.get("status"),
            "podsPerSecond": round(m.get("overallThroughput") or 0.0, 1),
            "schedulingThroughputAverage": (m.get("SchedulingThroughput") or {}).get("Average"),
            "loadAverage": _loadavg()}
