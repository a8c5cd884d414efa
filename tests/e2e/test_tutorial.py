"""The user's tutorial (JobSet "DRA Integration"), verbatim, with the real kubectl 1.36.4.

The only change to the tutorial: `kind create cluster --config kind.yaml` becomes
`phalanx create cluster --config kind.yaml`. The manifests are examples/dra-integration/ exactly as
the tutorial writes them; every Verify command of the tutorial is run and asserted on kubectl's
own output, then the cleanup.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Cluster, create_cluster, poll

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-integration"


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory) -> Cluster:
    tmp = tmp_path_factory.mktemp("tutorial")
    c = create_cluster(tmp, "tutorial", config=(EXAMPLE / "kind.yaml").read_text())
    yield c
    c.phalanx("delete", "cluster", "--name", "tutorial")


def test_tutorial_end_to_end(tutorial: Cluster):
    k = tutorial.kubectl
    nodes = k("get", "nodes", "--no-headers").check().out.splitlines()
    assert len(nodes) == 5 and all(n.split()[1] == "Ready" for n in nodes)

    # Step 1-3
    assert k("apply", "-f", str(EXAMPLE / "resourceclaimtemplate.yaml")).check().out.strip() == \
        "resourceclaimtemplate.resource.k8s.io/gpu-claim-template created"
    assert k("apply", "-f", str(EXAMPLE / "workload.yaml")).check().out.strip() == \
        "workload.scheduling.k8s.io/training-workload created"
    assert k("apply", "-f", str(EXAMPLE / "podgroup.yaml")).check().out.strip() == \
        "podgroup.scheduling.k8s.io/training-workers created"
    # "When the PodGroup is created, Kubernetes generates a ResourceClaim from the template."
    claims = poll(lambda: k("get", "resourceclaim", "--no-headers").check().out.splitlines())
    assert len(claims) == 1
    name, state = claims[0].split()[:2]
    assert name.startswith("training-workers-shared-gpu-") and state == "pending"
    status_name = k("get", "podgroup", "training-workers", "-o",
                    "jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}").check().out
    assert status_name == name

    # Step 4
    assert k("apply", "-f", str(EXAMPLE / "jobset.yaml")).check().out.strip() == \
        "jobset.jobset.x-k8s.io/training-job created"

    # Verify
    r = k("wait", "--for=condition=PodGroupScheduled", "podgroup/training-workers", "--timeout=60s")
    assert r.returncode == 0, r.stderr
    pg = k("get", "podgroup", "training-workers").check().out.splitlines()
    assert pg[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert pg[1].split()[:4] == ["training-workers", "Gang", "training-workload", "Scheduled"]

    def claim_state():
        rows = k("get", "resourceclaim").check().out.splitlines()
        return rows if len(rows) == 2 and rows[1].split()[1] == "allocated,reserved" else None
    rows = poll(claim_state)
    assert rows and rows[0].split() == ["NAME", "STATE", "AGE"], rows
    assert rows[1].split()[:2] == [name, "allocated,reserved"]

    reserved = k("get", "resourceclaim", "-o", "jsonpath={.items[0].status.reservedFor[0]}").check().out
    pg_uid = k("get", "podgroup", "training-workers", "-o", "jsonpath={.metadata.uid}").check().out
    assert reserved == json.dumps({"apiGroup": "scheduling.k8s.io", "name": "training-workers",
                                   "resource": "podgroups", "uid": pg_uid}, separators=(",", ":"))
    assert k("get", "resourceclaim", "-o", "jsonpath={.items[0].status.reservedFor[*].name}").check().out \
        == "training-workers"

    def six_running():
        rows = k("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=training-job").check().out.splitlines()
        body = rows[1:]
        return rows if len(body) == 6 and all(r.split()[1:4] == ["1/1", "Running", "0"] for r in body) else None
    rows = poll(six_running)
    assert rows, k("get", "pods", "-o", "wide").out
    assert rows[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    names = sorted(r.split()[0] for r in rows[1:])
    for j in range(3):
        for i in range(2):
            assert any(n.startswith(f"training-job-workers-{j}-{i}-") for n in names), names
    # one node-local GPU pins the whole gang to one node
    nodes_used = set(k("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=training-job", "-o",
                       "jsonpath={.items[*].spec.nodeName}").check().out.split())
    assert len(nodes_used) == 1
    alloc = json.loads(k("get", "resourceclaim", name, "-o", "jsonpath={.status.allocation}").check().out)
    assert alloc["devices"]["results"][0]["device"] == "gpu-0"
    assert alloc["devices"]["results"][0]["pool"] == nodes_used.pop()

    # Cleanup: the claim stays with the PodGroup after the JobSet goes ...
    assert 'jobset.jobset.x-k8s.io "training-job" deleted' in k("delete", "jobset", "training-job").check().out
    assert poll(lambda: k("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=training-job", "-o",
                          "name").check().out.strip() == "", timeout=60)
    assert k("get", "resourceclaim", name, "--no-headers").check().out.split()[1] == "allocated,reserved"
    # ... and goes with the PodGroup.
    k("delete", "podgroup", "training-workers", "--timeout=60s").check()
    assert poll(lambda: k("get", "resourceclaim", "-o", "name").check().out.strip() == "", timeout=60)
