"""The DRA Integration tutorial in its Kubernetes 1.37 form, with the real kubectl 1.37.1.

examples/dra-integration-1.37/ is the seed tutorial with what 1.37 changed and nothing else: the kind
config names 1.37's gates (GangScheduling and WorkloadAwarePreemption were merged into
GenericWorkload) and node image, and the Workload and PodGroup are `scheduling.k8s.io/v1alpha3` with
`workloadRef: {workloadName, templateName}`. The steps and the checks are the tutorial's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import KUBECTL_137, Cluster, create_cluster
from .test_tutorial import poll

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-integration-1.37"

pytestmark = pytest.mark.skipif(not KUBECTL_137.exists(), reason="kubectl 1.37.1 not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory) -> Cluster:
    tmp = tmp_path_factory.mktemp("tutorial137")
    c = create_cluster(tmp, "tutorial137", config=(EXAMPLE / "kind.yaml").read_text(), kubernetes=None)
    yield c
    c.phalanx("delete", "cluster", "--name", "tutorial137")


def test_tutorial_137_end_to_end(tutorial: Cluster):
    def k(*args: str):
        return tutorial.kubectl(*args, binary=KUBECTL_137, timeout=90)

    assert "Server Version: v1.37.1" in k("version").check().out
    nodes = k("get", "nodes", "--no-headers").check().out.splitlines()
    assert len(nodes) == 5 and all(n.split()[1] == "Ready" for n in nodes)

    assert k("apply", "-f", str(EXAMPLE / "resourceclaimtemplate.yaml")).check().out.strip() == \
        "resourceclaimtemplate.resource.k8s.io/gpu-claim-template created"
    assert k("apply", "-f", str(EXAMPLE / "workload.yaml")).check().out.strip() == \
        "workload.scheduling.k8s.io/training-workload created"
    assert k("apply", "-f", str(EXAMPLE / "podgroup.yaml")).check().out.strip() == \
        "podgroup.scheduling.k8s.io/training-workers created"
    claims = poll(lambda: k("get", "resourceclaim", "--no-headers").check().out.splitlines())
    assert len(claims) == 1
    name, state = claims[0].split()[:2]
    assert name.startswith("training-workers-shared-gpu-") and state == "pending"
    assert k("get", "podgroup", "training-workers", "-o",
             "jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}").check().out == name

    assert k("apply", "-f", str(EXAMPLE / "jobset.yaml")).check().out.strip() == \
        "jobset.jobset.x-k8s.io/training-job created"

    r = k("wait", "--for=condition=PodGroupInitiallyScheduled", "podgroup/training-workers", "--timeout=60s")
    assert r.returncode == 0, r.stderr

    def claim_state():
        rows = k("get", "resourceclaim").check().out.splitlines()
        return rows if len(rows) == 2 and rows[1].split()[1] == "allocated,reserved" else None
    rows = poll(claim_state)
    assert rows and rows[1].split()[:2] == [name, "allocated,reserved"], rows
    reserved = k("get", "resourceclaim", "-o", "jsonpath={.items[0].status.reservedFor[0]}").check().out
    pg_uid = k("get", "podgroup", "training-workers", "-o", "jsonpath={.metadata.uid}").check().out
    assert reserved == json.dumps({"apiGroup": "scheduling.k8s.io", "name": "training-workers",
                                   "resource": "podgroups", "uid": pg_uid}, separators=(",", ":"))

    def six_running():
        rows = k("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=training-job").check().out.splitlines()
        body = rows[1:]
        return rows if len(body) == 6 and all(r.split()[1:4] == ["1/1", "Running", "0"] for r in body) else None
    assert poll(six_running), k("get", "pods", "-o", "wide").out
    # The claim's owner is the PodGroup at the version 1.37 stores it in.
    owner = json.loads(k("get", "resourceclaim", name, "-o", "jsonpath={.metadata.ownerReferences[0]}").check().out)
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == \
        ("scheduling.k8s.io/v1beta1", "PodGroup", "training-workers")

    k("delete", "jobset", "training-job").check()
    k("delete", "podgroup", "training-workers", "--timeout=60s").check()
    assert poll(lambda: k("get", "resourceclaim", "-o", "name").check().out.strip() == "", timeout=60)
