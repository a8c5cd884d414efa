"""What the observer measures, on a tiny synthetic run: informer events played by hand."""

from __future__ import annotations

import pytest

from phalanx.cluster.spec import NodeSpec
from phalanx.simulate.jobs import JobArrival
from phalanx.simulate.objects import JOB_LABEL
from phalanx.simulate.observe import Observer, percentile, summarize


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


class Informer:
    def __init__(self) -> None:
        self.handlers: list[dict] = []

    def add_event_handler(self, **handlers) -> None:
        self.handlers.append(handlers)

    def fire(self, event: str, *objs) -> None:
        for h in self.handlers:
            if h.get(event):
                h[event](*objs)


class Factory:
    def __init__(self) -> None:
        self.informers: dict[str, Informer] = {}

    def informer(self, api_version: str, kind: str) -> Informer:
        return self.informers.setdefault(kind, Informer())


NODES = [NodeSpec("cp", "control-plane")] + [
    NodeSpec(f"n{i}", labels={"example.com/rack": f"r{i // 2}", "zone": "z"}, capacity={"cpu": "8"}) for i in range(4)]


def pod(name: str, job: str, node: str | None = None, phase: str = "Pending", cpu: str = "2", **status) -> dict:
    return {"metadata": {"name": name, "uid": name, "labels": {JOB_LABEL: job}},
            "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase, **status}}


def slice_(node: str, devices: int) -> dict:
    return {"metadata": {"uid": f"s-{node}"}, "spec": {"nodeName": node, "devices": [{}] * devices}}


def claim(uid: str, nodes: list[str]) -> dict:
    return {"metadata": {"uid": uid}, "status": {"allocation": {"devices": {"results": [
        {"pool": n, "device": f"gpu-{i}"} for i, n in enumerate(nodes)]}}}}


@pytest.fixture
def run():
    clock, factory = Clock(), Factory()
    obs = Observer(factory, clock, start=1000.0, nodes=NODES, levels={"rack": "example.com/rack", "zone": "zone"})
    for i in range(4):
        factory.informers["ResourceSlice"].fire("on_add", slice_(f"n{i}", 4))
    return clock, factory.informers, obs


def test_a_gang_from_submission_to_completion(run):
    clock, inf, obs = run
    obs.submitted(JobArrival(name="g", arrival=0, pods=2, gpus_per_pod=2, topology="rack"), "g")
    clock.t = 1010
    inf["Pod"].fire("on_add", pod("g-0", "g", "n0"))
    clock.t = 1015
    inf["Pod"].fire("on_update", None, pod("g-1", "g", "n2"))
    inf["ResourceClaim"].fire("on_add", claim("c0", ["n0", "n0"]))
    inf["ResourceClaim"].fire("on_add", claim("c1", ["n2", "n2"]))
    clock.t = 1020
    for p in ("g-0", "g-1"):
        inf["Pod"].fire("on_update", None, pod(p, "g", "n0" if p == "g-0" else "n2", "Running"))
    sample = obs.sample()
    clock.t = 1100
    inf["Job"].fire("on_update", None, {"metadata": {"labels": {JOB_LABEL: "g"}},
                                        "status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    rec = obs.jobs["g"]
    assert (rec.first_scheduled, rec.gang_scheduled, rec.started, rec.finished) == (10, 15, 20, 100)
    assert (rec.gang_wait, rec.queueing_delay, rec.jct, rec.status) == (15, 20, 100, "Complete")
    assert rec.spread == {"rack": 2, "zone": 1}
    assert sample["gpu_allocation"] == pytest.approx(4 / 16) and sample["cpu_allocation"] == pytest.approx(4 / 32)
    assert (sample["running_gangs"], sample["pending_gangs"]) == (1, 0)
    assert [e[1] for e in obs.events] == ["submit", "bind", "bind", "start", "finish"]
    inf["Pod"].fire("on_update", None, pod("g-0", "g", "n0", "Succeeded"))
    inf["ResourceClaim"].fire("on_delete", claim("c0", ["n0", "n0"]))
    after = obs.sample()
    assert after["gpus_used"] == 2 and after["cpu_allocation"] == pytest.approx(2 / 32)


def test_preemption_and_eviction_are_counted_apart(run):
    clock, inf, obs = run
    obs.submitted(JobArrival(name="v", arrival=0, pods=2), "v")
    disrupted = {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}
    inf["Pod"].fire("on_update", None, pod("v-0", "v", "n0", "Running", **disrupted))
    inf["Pod"].fire("on_update", None, pod("v-0", "v", "n0", "Running", **disrupted))  # seen twice, counted once
    evicted = {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}]}
    inf["Pod"].fire("on_update", None, pod("v-1", "v", "n1", "Running", **evicted))
    assert (obs.jobs["v"].preempted, obs.jobs["v"].evicted) == (1, 1)
    assert (obs.preemptions, obs.evictions) == (1, 1)


def test_fragmentation_of_the_next_waiting_gang(run):
    clock, inf, obs = run
    # rack r0 (n0, n1) has 3 + 1 free devices, rack r1 (n2, n3) 2 + 2: 8 free in all
    inf["ResourceClaim"].fire("on_add", claim("a", ["n0", "n1", "n1", "n1", "n2", "n2", "n3", "n3"]))
    obs.submitted(JobArrival(name="w", arrival=0, pods=2, gpus_per_pod=2, topology="rack"), "w")
    # it needs 2 pods x 2 devices in one rack: r1 can (2 + 2), r0 cannot (3 // 2 + 1 // 2 = 1 pod)
    assert obs.fragmentation() == pytest.approx(4 / 8)
    obs.submitted(JobArrival(name="hi", arrival=0, pods=1, gpus_per_pod=3, shared_claim=True, topology="rack",
                             priority=10), "hi")
    # the higher priority one waits first: 3 devices on one node; only n0 has 3
    assert obs.fragmentation() == pytest.approx(4 / 8)
    obs.nodes_down.add("n0")
    assert obs.fragmentation() == pytest.approx(1.0)  # nothing left can host it


def test_a_gang_without_constraint_has_the_cluster_as_its_domain(run):
    clock, inf, obs = run
    inf["ResourceClaim"].fire("on_add", claim("a", ["n0", "n1", "n1", "n1", "n2", "n2", "n3", "n3"]))
    obs.submitted(JobArrival(name="w", arrival=0, pods=3, gpus_per_pod=2), "w")
    assert obs.fragmentation() == 0.0  # n0, n2 and n3 each hold one pod: the cluster can host it
    obs.submitted(JobArrival(name="big", arrival=0, pods=1, gpus_per_pod=4, priority=1), "big")
    assert obs.fragmentation() == 1.0  # 8 devices free, but no node has 4


def test_rejected_jobs_and_summary():
    rows = [{"status": "Complete", "started": 1.0, "finished": 10.0, "queueing_delay": q, "gang_wait": q,
             "jct": 10.0 * q, "preempted": 0, "evicted": 0} for q in (1.0, 2.0, 3.0, 4.0)]
    rows.append({"status": "Rejected", "started": None, "finished": None, "queueing_delay": None, "gang_wait": None,
                 "jct": None, "preempted": 0, "evicted": 0})
    samples = [{"gpu_allocation": 0.5, "cpu_allocation": 0.1, "pending_gangs": 2, "fragmentation": None},
               {"gpu_allocation": 1.0, "cpu_allocation": 0.3, "pending_gangs": 0, "fragmentation": 0.5}]
    s = summarize(rows, samples)
    assert (s["jobs_submitted"], s["jobs_rejected"], s["jobs_completed"]) == (4, 1, 4)
    assert s["queueing_delay_p50"] == 2.5 and s["jct_p90"] == pytest.approx(37.0)
    assert (s["gpu_allocation_mean"], s["fragmentation_mean"], s["makespan"]) == (0.75, 0.5, 10.0)
    assert percentile([], 50) is None and percentile([5.0], 99) == 5.0
