"""`phalanx simulate`'s engine end to end, in process: the small example scenario gives plausible
numbers; the same seed gives the same event log, another seed another; and a scenario run in
virtual time agrees with the same scenario run in real time on a real-clock control plane."""

from __future__ import annotations

import textwrap
from pathlib import Path

from phalanx.client.clock import REAL_CLOCK
from phalanx.simulate.engine import Simulation
from phalanx.simulate.scenario import load_scenario, parse_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"

CLUSTER = """
cluster:
  apiVersion: phalanx.dev/v1alpha1
  kind: Cluster
  featureGates: {GenericWorkload: true, GangScheduling: true, TopologyAwareWorkloadScheduling: true,
                 DRAWorkloadResourceClaims: true}
  runtimeConfig: {api/alpha: "true"}
  nodePools:
  - {name: cp, role: control-plane}
  - name: gpu
    count: NODES
    labels: {example.com/rack: "rack-{i//2}"}
    capacity: {cpu: "16", memory: 64Gi, pods: "110"}
"""


def scenario(body: str, nodes: int):
    text = textwrap.dedent("""
        apiVersion: phalanx.dev/v1alpha1
        kind: Scenario
        name: t
        """) + CLUSTER.replace("NODES", str(nodes)) + textwrap.dedent(body)
    return parse_scenario(text, "test.yaml")


async def test_small_example_end_to_end():
    s = load_scenario(str(EXAMPLES / "small.yaml"))
    result = await Simulation(s, s.variants[0]).run()
    jobs, summary = result.jobs, result.summary
    assert summary["jobs_submitted"] == len(list(s.stream(s.variants[0]))) == len(jobs)
    assert summary["jobs_completed"] > len(jobs) / 2
    assert 0.2 < summary["gpu_allocation_mean"] < 1.0
    assert 0 < summary["jct_p50"] <= summary["jct_p90"] <= summary["jct_p99"] <= s.duration
    trains = [j for j in jobs if j["name"].startswith("train-") and j["gang_scheduled"] is not None]
    assert trains and all(j["spread_rack"] == 1 for j in trains)  # rack-constrained gangs sit in one rack
    assert all(j["jct"] >= 40 * 60 for j in trains if j["jct"] is not None)  # they run for 40 minutes
    assert len(result.samples) >= s.duration / s.sample_every
    failures = [e for e in result.events if e[1] in ("fail", "recover")]
    assert [(e[0], e[1], len(e[3])) for e in failures] == [(3000.0, "fail", 8), (4200.0, "recover", 8)]
    assert result.run["simulatedSeconds"] == s.duration


DETERMINISM = """
seed: 5
duration: 1h
sampleEvery: 1m
workload:
- generator:
    name: g
    arrivals: {poisson: {ratePerHour: 120}}
    pods: {choice: [1, 2, 4]}
    gpusPerPod: {choice: [1, 2, 4]}
    duration: {lognormal: {median: 8m, sigma: 1}}
    topology: {choice: [rack, null]}
    sharedClaim: {probability: 0.3}
"""


async def test_same_seed_same_events_other_seed_other_events():
    s = scenario(DETERMINISM, nodes=8)
    first = await Simulation(s, s.variants[0]).run()
    again = await Simulation(s, s.variants[0]).run()
    other = await Simulation(s, s.variants[0], seed=6).run()
    assert len(first.events) > 100
    assert first.events == again.events
    assert first.jobs == again.jobs and first.samples == again.samples
    assert first.events != other.events


FIDELITY = """
seed: 3
duration: 60s
sampleEvery: 1s
variants:
- name: default
  # a gang that fails waits at most a second before its next attempt (no doubling back-off), so a
  # real-time lag (a claim deallocated a moment late) costs a moment, not a rack
  schedulerConfig: {apiVersion: kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration,
                    podInitialBackoffSeconds: 1, podMaxBackoffSeconds: 1}
workload:
# Each gang fills a rack (2 nodes x 8 GPUs) for 14 s and one arrives every 6 s: from the third on,
# each finds both racks busy, fails and waits (2 to 4 s) for the rack the gang two before it frees,
# one gang waiting at a time, and starts 4 s before the next one arrives. Nothing here is a toss-up
# that milliseconds of real time would decide (where a back-off ends at the moment another gang
# arrives, which goes first does depend on them: a waiting gang can lose its rack to a newcomer).
- template: {name: gang, count: 5, every: 6s, pods: 2, gpusPerPod: 8, duration: 14s, topology: rack}
"""


async def test_virtual_time_agrees_with_real_time():
    s = scenario(FIDELITY, nodes=4)
    virtual = await Simulation(s, s.variants[0]).run()
    real = await Simulation(s, s.variants[0], clock=REAL_CLOCK).run()

    node_rack = {n.name: n.labels.get("example.com/rack") for n in s.variants[0].cluster.nodes}

    def start_order(result) -> list[str]:
        return [name for _, name in sorted((j["started"], j["name"]) for j in result.jobs if j["started"] is not None)]

    def racks(result) -> dict[str, set[str]]:  # the racks each gang's pods were bound in
        out: dict[str, set[str]] = {}
        for e in result.events:
            if e[1] == "bind":
                out.setdefault(e[2].rsplit("-", 2)[0], set()).add(node_rack[e[3]])
        return out

    assert start_order(virtual) == [f"gang-{i}" for i in range(5)] == start_order(real)
    assert racks(real) == racks(virtual)
    assert all(len(r) == 1 for r in racks(virtual).values())
    # and the scenario has contention: from the third gang on, each waited for a rack
    assert [j["queueing_delay"] for j in virtual.jobs] == [0, 0, 2, 2, 4]
    assert all(j["queueing_delay"] > 1 for j in real.jobs[2:])


async def test_a_trace_sample_replays():
    s = load_scenario(str(EXAMPLES / "pai-sample.yaml"))
    result = await Simulation(s, s.variant("one-rack")).run()
    jobs = result.jobs
    assert len(jobs) == len(list(s.stream(s.variants[0]))) > 100
    assert all(j["topology"] == "rack" for j in jobs)
    assert sum(j["status"] == "Complete" for j in jobs) > len(jobs) / 2
    assert all(j["spread_rack"] == 1 for j in jobs if j["gang_scheduled"] is not None)
