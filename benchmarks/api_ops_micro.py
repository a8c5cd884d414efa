"""CPU per in-process API operation, the ones a scheduler_perf run makes per object: create a Node,
create a Pod (rest.API.create, no field manager), create an Event through the in-process client
(handover, as the scheduler's event recorder) and bind a pod (`pods/binding`). Each figure is
the best of `--runs` runs (CPU time of this process, so another process on the machine
inflates it less than wall time). Works on older trees too (before `build_api`), so a tree can
be compared with a past commit by running it with each tree's `PYTHONPATH`:

    PYTHONPATH=src .venv/bin/python benchmarks/api_ops_micro.py [--objects 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from typing import Any, Callable

from phalanx.cluster.bootstrap import bootstrap
from phalanx.cluster.spec import ClusterSpec
from phalanx.client.inprocess import InProcessClient
from phalanx.store import MemoryStore


def _api_factory() -> Callable[[], Any]:
    try:
        from phalanx.apiserver import build_api
        from phalanx.machinery.featuregates import FeatureGates
        return lambda: build_api(MemoryStore(), FeatureGates())
    except ImportError:  # a tree before the API builder: wire it as its control plane did
        from phalanx.apiserver.rest import API  # type: ignore[attr-defined]
        from phalanx.cluster.controlplane import _wire_optional_machinery  # type: ignore[attr-defined]
        from phalanx.cluster.featuregates import FeatureGates as OldGates  # type: ignore[import-not-found]

        def make() -> Any:
            api = API(MemoryStore(), OldGates())
            _wire_optional_machinery(api)
            return api
        return make


def node(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": {"zone": str(i // 100)}},
            "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": "default", "labels": {"app": "bench", "i": str(i % 10)}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}}


def event(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"pod-{i}.{i:016x}", "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": f"pod-{i}", "namespace": "default",
                               "uid": "1234-5678"},
            "reason": "Scheduled", "message": f"Successfully assigned default/pod-{i} to node-1", "type": "Normal",
            "source": {"component": "default-scheduler"}, "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1, "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-x", "action": "Binding"}


async def one_run(make_api: Callable[[], Any], n: int) -> dict[str, float]:
    api = make_api()
    bootstrap(api, ClusterSpec(nodes=[]))
    client = InProcessClient(api, field_manager="default-scheduler")
    nodes, pods = api.resource("", "v1", "nodes"), api.resource("", "v1", "pods")
    gc.collect()
    out: dict[str, float] = {}
    t = time.process_time()
    for i in range(n):
        api.create(nodes, None, node(i))
    out["nodeCreateUs"] = (time.process_time() - t) / n * 1e6
    t = time.process_time()
    names = [api.create(pods, "default", pod(i))["metadata"]["name"] for i in range(n)]
    out["podCreateUs"] = (time.process_time() - t) / n * 1e6
    t = time.process_time()
    for i in range(n):
        await client.create(event(i), handover=True)
    out["eventCreateUs"] = (time.process_time() - t) / n * 1e6
    t = time.process_time()
    for i, name in enumerate(names):
        await client.bind("default", name, f"node-{i % 100}")
    out["bindUs"] = (time.process_time() - t) / n * 1e6
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    make_api = _api_factory()
    runs = [await one_run(make_api, args.objects) for _ in range(args.runs)]
    print(json.dumps({k: round(min(r[k] for r in runs), 2) for k in runs[0]}))


if __name__ == "__main__":
    asyncio.run(main())
