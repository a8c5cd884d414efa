"""benchmarks/dra_allocation_trace.py, the check that a change to the DRA path leaves every
allocation as it was: the same tree must give the same trace twice (else comparing two trees
says nothing), and the trace must hold the allocations the run made."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "benchmarks", "dra_allocation_trace.py")


def _trace() -> dict:
    out = subprocess.run([sys.executable, SCRIPT, "--workload", "SteadyStateClusterResourceClaimTemplate/half_500nodes",
                          "--param", "nodesWithDRA=5", "--param", "initClaims=25", "--param", "duration=1s"],
                         capture_output=True, text=True, timeout=300, check=True, env={**os.environ})
    return json.loads(out.stdout)


def test_the_trace_is_the_same_for_the_same_tree_and_lists_each_allocation():
    first, second = _trace(), _trace()
    assert first["allocations"] > 0
    assert first["sha256"] == second["sha256"]
    entry = first["trace"][0]
    driver, pool, device = entry["devices"][0][1:]
    assert driver == "test-driver.cdi.k8s.io" and pool.startswith("scheduler-perf-dra-") and device.startswith("instance-")
    assert entry["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [pool]
