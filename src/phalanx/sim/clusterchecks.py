"""Correctness checks at the end of a `phalanx bench --cluster` run, over HTTP and the watch log.

    reader = RestReader.from_kubeconfig(kubeconfig)
    results = final_state_checks(reader, gates)           # sim.checks over the API's final state
    results += watch_log_checks(log, reader)              # what the pod watch saw, in order
    results.append(leftovers_check(reader, "bench"))      # after teardown

Each result is `{"name", "ok", "detail"}` as in `sim.checks`. The final-state checks are
`sim.checks.run_checks` (nodes within allocatable, gangs all-or-nothing, topology, claims allocated
and reserved, no device allocated twice) read through the HTTP API. The watch log adds what a final
state cannot show: `podsBoundOnce` (no pod's `spec.nodeName` ever changed once set) and
`nodesNeverOvercommitted` (replaying every pod event in order, the pods that held a node at any
moment never requested more than its allocatable: this covers Jobs whose pods have all finished).
`leftovers_check` says whether anything of the shape is left in its namespace after teardown.
"""

from __future__ import annotations

import http.client
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlparse

from ..client.kubeconfig import load_kubeconfig
from .checks import check_result, overcommit_problems, pod_requests, run_checks

# Kinds a shape may leave behind, as (api prefix, plural): what `leftovers_check` lists.
LEFTOVER_KINDS = (("/api/v1", "pods"), ("/apis/apps/v1", "replicasets"), ("/apis/apps/v1", "deployments"),
                  ("/apis/batch/v1", "jobs"), ("/apis/jobset.x-k8s.io/v1alpha2", "jobsets"),
                  ("/apis/scheduling.k8s.io/v1alpha2", "podgroups"), ("/apis/scheduling.k8s.io/v1alpha2", "workloads"),
                  ("/apis/resource.k8s.io/v1", "resourceclaims"))


class RestReader:
    """GETs against the cluster's HTTP API with the kubeconfig's token, shaped like the part of
    `rest.API` that `sim.checks` reads (`resource`, `list`)."""

    def __init__(self, server: str, token: str, ssl_context: Any):
        url = urlparse(server)
        self.host, self.port, self.token, self.ctx = url.hostname or "127.0.0.1", url.port or 443, token, ssl_context

    @classmethod
    def from_kubeconfig(cls, path: Path) -> "RestReader":
        cfg = load_kubeconfig(path)
        return cls(cfg.server, cfg.token or "", cfg.ssl_context())

    def get(self, path: str) -> Optional[dict[str, Any]]:
        """The JSON at `path`; None for 404."""
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            body = resp.read()
        finally:
            conn.close()
        if resp.status == 404:
            return None
        if resp.status != 200:
            raise RuntimeError(f"GET {path}: {resp.status} {body[:200]!r}")
        doc: dict[str, Any] = json.loads(body)
        return doc

    def resource(self, group: str, version: str, plural: str) -> str:
        return f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"

    def list(self, path: str, namespace: Optional[str]) -> dict[str, Any]:
        if namespace:
            prefix, plural = path.rsplit("/", 1)
            path = f"{prefix}/namespaces/{namespace}/{plural}"
        doc = self.get(path)
        if doc is None:
            raise LookupError(f"{path} is not served")
        return doc


def final_state_checks(reader: RestReader, gates: Any) -> list[dict[str, Any]]:
    """`sim.checks.run_checks` over the cluster's final state (every op expectation is the run's own)."""
    return [c for c in run_checks(reader, {}, gates) if c["name"] != "podsScheduled"]


@dataclass
class PodRecord:
    """One pod event of the watch, reduced to what the checks replay."""

    type: str
    uid: str
    name: str
    node: str
    active: bool  # bound, not finished, not gone: it holds its node's resources
    cpu: int
    memory: int


@dataclass
class WatchLog:
    """Every pod event the bench's watch saw, in the order the API wrote them."""

    records: list[PodRecord] = field(default_factory=list)

    def add(self, event_type: str, pod: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName") or ""
        phase = (pod.get("status") or {}).get("phase")
        active = bool(node) and event_type != "DELETED" and phase not in ("Succeeded", "Failed")
        cpu, memory = pod_requests(pod)
        self.records.append(PodRecord(event_type, md.get("uid", ""), md.get("name", ""), node, active, cpu, memory))


def watch_log_checks(log: WatchLog, reader: RestReader) -> list[dict[str, Any]]:
    nodes = {n["metadata"]["name"]: n for n in (reader.get("/api/v1/nodes") or {}).get("items") or []}
    baseline = [p for p in (reader.get("/api/v1/pods") or {}).get("items") or []
                if (p.get("metadata") or {}).get("namespace") != "bench"]
    return [_bound_once(log), _never_overcommitted(log, nodes, baseline)]


def _bound_once(log: WatchLog) -> dict[str, Any]:
    bound: dict[str, str] = {}
    problems = []
    for r in log.records:
        if not r.node:
            continue
        first = bound.setdefault(r.uid, r.node)
        if first != r.node:
            problems.append(f"pod {r.name} bound to {first}, later to {r.node}")
    return check_result("podsBoundOnce", problems, len(bound), "pods bound once")


def _never_overcommitted(log: WatchLog, nodes: dict[str, dict], baseline: list[dict]) -> dict[str, Any]:
    """Replays the log: per node, the requests of the pods holding it (the pods of other
    namespaces, such as kube-system's, counted as held throughout)."""
    use: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for p in baseline:
        node = (p.get("spec") or {}).get("nodeName")
        if node and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            cpu, memory = pod_requests(p)
            _add(use[node], cpu, memory, 1)
    holding: dict[str, PodRecord] = {}
    problems: list[str] = []
    seen: set[str] = set()
    for r in log.records:
        before = holding.pop(r.uid, None)
        if before is not None:
            _add(use[before.node], -before.cpu, -before.memory, -1)
        if not r.active:
            continue
        holding[r.uid] = r
        u = use[r.node]
        _add(u, r.cpu, r.memory, 1)
        seen.add(r.node)
        alloc = ((nodes.get(r.node) or {}).get("status") or {}).get("allocatable") or {}
        found = overcommit_problems(r.node, alloc, u[0], u[1], u[2])
        if found:
            problems += [f"{p} (with pod {r.name})" for p in found]
    return check_result("nodesNeverOvercommitted", problems, len(seen), "nodes within allocatable at every event")


def _add(u: list[int], cpu: int, memory: int, count: int) -> None:
    u[0] += cpu
    u[1] += memory
    u[2] += count


def leftovers(reader: RestReader, namespace: str) -> dict[str, int]:
    """How many objects of each kind a shape might make are still in `namespace`."""
    out = {}
    for prefix, plural in LEFTOVER_KINDS:
        doc = reader.get(f"{prefix}/namespaces/{namespace}/{plural}")
        items = (doc or {}).get("items") or []
        if items:
            out[plural] = len(items)
    return out


def leftovers_check(left: dict[str, int], kinds_checked: int = len(LEFTOVER_KINDS)) -> dict[str, Any]:
    problems = [f"{n} {plural} left" for plural, n in left.items()]
    return check_result("noLeftoverObjects", problems, kinds_checked, "kinds with nothing left after teardown")
