"""A failure rehearsal with the real kubectl: the seed tutorial's gang (examples/dra-integration/) on a
cluster with two racks, first losing the rack that holds it, then the GPU it moves to.

The JobSet is the tutorial's with `failurePolicy: {maxRestarts: 3}` and tolerations of 2 s for
unreachable and not-ready nodes; the cluster config shortens the node monitor grace period (3 s)
and the lease (1 s) and raises the eviction rate, so the rehearsal takes seconds. At each step the
test reads what a user reads: `kubectl get events`, `get nodes`, `get pods`, `get resourceclaim`.

What happens is upstream's, including the place where a user has to act: the tutorial's PodGroup is
the user's own object, and a claim reserved for a PodGroup keeps its device while the PodGroup exists;
so the restarted gang waits for the failed device until the PodGroup is made anew, after which the
claim is allocated on a healthy device. (The tutorial's pods have a grace period of 0, so evicted
pods go at once even from a node whose kubelet is gone; pods with a grace period would stay
Terminating there until the node is taken out of service, see docs/failures.md.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from .conftest import Cluster, create_cluster, poll

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-integration"
TOLERATION_SECONDS = 2

CONFIG = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
featureGates:
  GenericWorkload: true
  GangScheduling: true
  TopologyAwareWorkloadScheduling: true
  WorkloadAwarePreemption: true
  DRAWorkloadResourceClaims: true
runtimeConfig:
  api/alpha: "true"
nodePools:
- {name: control-plane, role: control-plane}
- {name: worker, count: 4, labels: {rack: "rack-{i//2}"}}
kubelet:
  nodeLeaseDurationSeconds: 1
controllerManager:
  nodeMonitorPeriod: 500ms
  nodeMonitorGracePeriod: 3s
  nodeEvictionRate: 10
"""


def jobset_manifest() -> str:
    """The tutorial's JobSet with a failure policy and short unreachable/not-ready tolerations."""
    js = yaml.safe_load((EXAMPLE / "jobset.yaml").read_text())
    js["spec"]["failurePolicy"] = {"maxRestarts": 3}
    pod_spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["tolerations"] = [{"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": TOLERATION_SECONDS}
                               for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")]
    return yaml.safe_dump(js)


@pytest.fixture(scope="module")
def racks(tmp_path_factory) -> Cluster:
    tmp = tmp_path_factory.mktemp("failures")
    c = create_cluster(tmp, "failures", config=CONFIG)
    yield c
    c.phalanx("delete", "cluster", "--name", "failures")


class Rehearsal:
    def __init__(self, c: Cluster):
        self.c = c
        self.k = c.kubectl

    def events(self) -> list[tuple[str, str, str, str]]:
        """`kubectl get events` rows as (TYPE, REASON, OBJECT, MESSAGE)."""
        rows = self.k("get", "events").check().out.splitlines()[1:]
        out = []
        for row in rows:
            m = re.match(r"^\S+\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$", row)
            if m:
                out.append((m.group(1), m.group(2), m.group(3), m.group(4).strip()))
        return out

    def wait_events(self, predicate, what: str, timeout: float = 60):
        rows = poll(lambda: [e for e in self.events() if predicate(e)], timeout)
        assert rows, f"no event {what}; events:\n" + "\n".join(map(str, self.events()))
        return rows

    def pods(self) -> list[dict]:
        items = json.loads(self.k("get", "pods", "-o", "json").check().out)["items"]
        return [p for p in items if p["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == "training-job"]

    def running_gang(self, attempt: str) -> str | None:
        """The node of the gang when its 6 pods of restart `attempt` run there."""
        pods = [p for p in self.pods() if p["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == attempt
                and not p["metadata"].get("deletionTimestamp")]
        if len(pods) == 6 and all(p["status"].get("phase") == "Running" for p in pods):
            nodes = {p["spec"]["nodeName"] for p in pods}
            return nodes.pop() if len(nodes) == 1 else None
        return None

    def claim(self) -> dict | None:
        items = json.loads(self.k("get", "resourceclaim", "-o", "json").check().out)["items"]
        return items[0] if len(items) == 1 else None

    def allocated_device(self) -> tuple[str, str] | None:
        claim = self.claim()
        allocation = ((claim or {}).get("status") or {}).get("allocation")
        if not allocation:
            return None
        [result] = allocation["devices"]["results"]
        return result["pool"], result["device"]

    def restarts(self) -> int:
        return int(self.k("get", "jobset", "training-job", "-o", "jsonpath={.status.restarts}").check().out or 0)

    def node_rack(self, node: str) -> str:
        return self.k("get", "node", node, "-o", "jsonpath={.metadata.labels.rack}").check().out

    def node_status(self, node: str) -> str:
        return self.k("get", "node", node, "--no-headers").check().out.split()[1]

    def apply(self, *files: str, manifest: str | None = None) -> None:
        for f in files:
            self.k("apply", "-f", str(EXAMPLE / f)).check()
        if manifest is not None:
            self.k("apply", "-f", "-", input=manifest).check()

    def start_gang(self, attempt: str = "0") -> tuple[str, tuple[str, str]]:
        self.apply("podgroup.yaml", manifest=jobset_manifest())
        node = poll(lambda: self.running_gang(attempt), 60)
        assert node, self.k("get", "pods", "-o", "wide").out
        device = poll(self.allocated_device)
        assert device and device[0] == node  # dra-example-driver's pools are named after their node
        return node, device

    def make_podgroup_anew(self) -> None:
        """The user's way to free the claim: the JobSet and its PodGroup go, then come again."""
        self.k("delete", "jobset", "training-job", "--wait=true", "--timeout=60s").check()
        self.k("delete", "podgroup", "training-workers", "--wait=true", "--timeout=60s").check()
        assert poll(lambda: self.claim() is None and not self.pods(), 60)


def test_a_rack_and_then_a_gpu_fail_under_the_gang(racks: Cluster):
    r = Rehearsal(racks)
    r.apply("resourceclaimtemplate.yaml", "workload.yaml")
    node, device = r.start_gang()
    rack = r.node_rack(node)
    rack_nodes = r.k("get", "nodes", "-l", f"rack={rack}", "-o", "name").check().out.split()

    # -- the rack loses power ---------------------------------------------------------------------
    out = racks.phalanx("fail", "nodes", "-l", f"rack={rack}", "--name", "failures").check().out
    assert out.split("\n")[:2] == [f"{n} failed" for n in rack_nodes]
    assert poll(lambda: r.node_status(node) == "NotReady", 30)
    r.wait_events(lambda e: e[1:] == ("NodeNotReady", f"node/{node}", f"Node {node} status is now: NodeNotReady"),
                  "NodeNotReady for the node")
    gang = [p["metadata"]["name"] for p in r.pods()]
    r.wait_events(lambda e: e[0] == "Warning" and e[1] == "NodeNotReady" and e[3] == "Node is not ready", "pod not ready")
    assert poll(lambda: "node.kubernetes.io/unreachable:NoExecute" in r.k(
        "get", "node", node, "-o", "jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}").check().out, 30)

    # after the 2 s toleration the taint manager deletes the pods (grace period 0: at once)
    assert poll(lambda: {e[2] for e in r.events() if e[1] == "TaintManagerEviction"} == {f"pod/{p}" for p in gang},
                30), r.events()
    assert {e[3] for e in r.events() if e[1] == "TaintManagerEviction"} == {
        f"Marking for deletion Pod default/{p}" for p in gang}
    r.wait_events(lambda e: e[0:2] == ("Warning", "BackoffLimitExceeded")
                  and e[3] == "Job has reached the specified backoff limit", "the Jobs' failure", 30)
    r.wait_events(lambda e: e[1] == "RestartJobSetFailurePolicyAction" and e[2] == "jobset/training-job",
                  "the JobSet's restart", 30)
    assert poll(lambda: r.restarts() == 1, 30)
    assert poll(lambda: len([p for p in r.pods() if p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
                             == "1"]) == 6, 30)
    # the PodGroup's claim still holds the GPU of the dead node: the restarted gang cannot start
    assert r.allocated_device() == device
    waiting = r.wait_events(lambda e: e[1:3] == ("FailedScheduling", "podgroup/training-workers")
                            and "untolerated taint {node.kubernetes.io/unreachable: }" in e[3],
                            "FailedScheduling of the restarted gang", 30)
    assert "didn't satisfy plugin(s) [DynamicResources]" in waiting[0][3]
    assert r.running_gang("1") is None

    r.make_podgroup_anew()
    new_node, new_device = r.start_gang()
    assert r.node_rack(new_node) != rack and new_device != device
    claim_rows = r.k("get", "resourceclaim", "--no-headers").check().out.split()
    assert claim_rows[1] == "allocated,reserved"

    # -- then the GPU under the new gang fails --------------------------------------------------
    out = racks.phalanx("fail", "device", "--node", new_node, new_device[1], "--name", "failures").check().out
    assert out.strip() == f"node/{new_node} devices failed: {new_device[1]}"
    slices = json.loads(r.k("get", "resourceslices", "-o", "json").check().out)["items"]
    [taint] = [t for s in slices if s["spec"].get("nodeName") == new_node
               for d in s["spec"]["devices"] if d["name"] == new_device[1] for t in d.get("taints") or []]
    assert (taint["key"], taint["effect"]) == ("gpu.example.com/unhealthy", "NoExecute")
    r.wait_events(lambda e: e[1] == "DeviceTaintManagerEviction" and e[3] == "Marking for deletion",
                  "DeviceTaintManagerEviction", 30)
    assert poll(lambda: r.restarts() >= 1, 30)
    r.wait_events(lambda e: e[1] == "RestartJobSetFailurePolicyAction", "the JobSet's restart", 30)

    r.make_podgroup_anew()
    _, healthy = r.start_gang()
    assert healthy != new_device  # the allocator passes over the tainted GPU

    # -- everything comes back ------------------------------------------------------------------
    racks.phalanx("recover", "device", "--node", new_node, new_device[1], "--name", "failures").check()
    out = racks.phalanx("recover", "nodes", "-l", f"rack={rack}", "--name", "failures").check().out
    assert out.split("\n")[:2] == [f"{n} recovered" for n in rack_nodes]
    assert poll(lambda: all(r.node_status(n.split("/")[1]) == "Ready" for n in rack_nodes), 30)
    assert poll(lambda: r.k("get", "node", node, "-o", "jsonpath={.spec.taints}").check().out == "", 30)
    r.wait_events(lambda e: e[1:] == ("NodeReady", f"node/{node}", f"Node {node} status is now: NodeReady"),
                  "NodeReady", 30)


def test_cli_errors_change_nothing(racks: Cluster):
    p = racks.phalanx
    r = p("fail", "node", "worker-0", "no-such-node", "--name", "failures")
    assert r.returncode == 1 and 'nodes "no-such-node" not found (nothing was changed)' in r.stderr
    assert racks.kubectl("get", "node", "worker-0", "-o",
                         "jsonpath={.metadata.annotations.fault\\.phalanx\\.dev/node}").check().out == ""
    r = p("fail", "nodes", "-l", "rack in (", "--name", "failures")
    assert r.returncode == 1 and "invalid label selector 'rack in ('" in r.stderr
    r = p("fail", "nodes", "-l", "rack=rack-9", "--name", "failures")
    assert r.returncode == 1 and "no nodes match the label selector 'rack=rack-9'" in r.stderr
    r = p("fail", "device", "--node", "worker-0", "gpu-99", "--name", "failures")
    assert r.returncode == 1 and "node worker-0 publishes no device 'gpu-99'" in r.stderr
    r = p("fail", "node", "worker-0", "--name", "no-such-cluster")
    assert r.returncode == 1 and 'unknown cluster "no-such-cluster"' in r.stderr
