"""DRA end to end with the real kubectl: dra-example-driver's demos, PodGroup claims, the gate
`DRAWorkloadResourceClaims` off, and the reasons a pod with claims stays Pending.

The demos run against phalanx's simulated `gpu.example.com` driver (every worker publishes one pool
named after the node with 8 GPUs `gpu-0` ... `gpu-7`), on a cluster of this module's own with two
workers (`gpus`). Every assertion reads kubectl's own output: `kubectl get resourceclaim`,
`-o jsonpath`, `kubectl get pods -o wide`, `kubectl describe`, `kubectl get events`, and
`phalanx explain`.

Which devices upstream picks, and so what these tests expect:

- the structured allocator takes the first free device in pool/slice/device order and never
  scores devices, so the claims a test allocates on one node hold `gpu-0`, `gpu-1`, ... in turn
  (`assert_lowest_free`);
- the node comes from scoring: NodeResourcesFit (LeastAllocated) counts every pod with the default
  non-zero request (100m CPU, 200Mi), so a second pod prefers the emptier worker. Two pods with
  their own claims therefore land on the two workers and each gets that worker's `gpu-0` (upstream
  does the same; which worker comes first is a random tie-break there and here);
- a claim allocated from a node-local device pins every pod that shares it to that node.

To keep "first free device" predictable, every test leaves no allocation behind (`make_ns` deletes
what the test made) and starts only when no claim in the cluster is allocated.
Manifests live in manifests/dra/ without a namespace and are applied with `-n`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import Cluster, create_cluster, poll

MANIFESTS = Path(__file__).resolve().parent / "manifests" / "dra"
TUTORIAL = Path(__file__).resolve().parents[2] / "examples" / "dra-integration"

TWO_WORKERS = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
- role: worker
"""

GATE_OFF = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  DRAWorkloadResourceClaims: false
nodes:
- role: control-plane
- role: worker
- role: worker
"""

# Two GPU workers that take 400 pods each: one PodGroup claim pins all 300 pods to one node.
BIG_NODES = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
nodePools:
- name: cp
  role: control-plane
- name: gpu
  count: 2
  capacity:
    pods: "400"
"""

GENERATED_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"  # generateName's alphabet
GPUS_PER_NODE = 8
PODGROUP_API_GROUP = "scheduling.k8s.io"


# -- helpers -------------------------------------------------------------------------------------


def apply(c: Cluster, ns: str, *files: str) -> str:
    args = ["apply", "-n", ns]
    for f in files:
        args += ["-f", str(MANIFESTS / f)]
    return c.kubectl(*args).check().out


def jsonpath(c: Cluster, ns: str, *what: str, path: str) -> str:
    return c.kubectl("get", *what, "-n", ns, "-o", f"jsonpath={path}").check().out


@dataclass
class PodRow:
    ready: str
    status: str
    node: str


def pods_wide(c: Cluster, ns: str) -> dict[str, PodRow]:
    """`kubectl get pods -o wide`, by pod name."""
    rows = c.kubectl("get", "pods", "-n", ns, "-o", "wide").check().out.splitlines()
    if not rows:
        return {}
    assert rows[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"], rows[0]
    out = {}
    for r in rows[1:]:
        p = r.split()
        out[p[0]] = PodRow(p[1], p[2], p[6])
    return out


def debug(c: Cluster, ns: str) -> str:
    return "\n".join([c.kubectl("get", "pods,resourceclaims,podgroups", "-n", ns, "-o", "wide").out,
                      c.kubectl("get", "events", "-n", ns).out])


def wait_running(c: Cluster, ns: str, count: int, timeout: float = 60) -> dict[str, PodRow]:
    def running():
        pods = pods_wide(c, ns)
        ok = len(pods) == count and all(
            p.status == "Running" and p.ready.split("/")[0] == p.ready.split("/")[1] for p in pods.values())
        return pods if ok else None
    pods = poll(running, timeout)
    assert pods, debug(c, ns)
    return pods


def claim_states(c: Cluster, ns: str) -> dict[str, str]:
    """`kubectl get resourceclaim`: the STATE column by claim name."""
    rows = c.kubectl("get", "resourceclaim", "-n", ns).check().out.splitlines()
    if not rows:
        return {}
    assert rows[0].split() == ["NAME", "STATE", "AGE"], rows[0]
    return {r.split()[0]: r.split()[1] for r in rows[1:]}


def wait_claims(c: Cluster, ns: str, count: int, state: str = "allocated,reserved",
                timeout: float = 60) -> dict[str, str]:
    def settled():
        states = claim_states(c, ns)
        return states if len(states) == count and set(states.values()) == {state} else None
    states = poll(settled, timeout)
    assert states, debug(c, ns)
    return states


@dataclass
class ClaimStatus:
    results: list[dict]
    reserved_for: list[dict]

    @property
    def devices(self) -> list[tuple[str, str]]:
        return [(r["pool"], r["device"]) for r in self.results]


CLAIM_ROWS = ('{range .items[*]}{.metadata.name}{"\\t"}{.status.allocation.devices.results}{"\\t"}'
              '{.status.reservedFor}{"\\n"}{end}')


def claim_statuses(c: Cluster, ns: str) -> dict[str, ClaimStatus]:
    """Allocation results and reservedFor of every claim in `ns`, via `-o jsonpath`."""
    out = {}
    for line in jsonpath(c, ns, "resourceclaim", path=CLAIM_ROWS).splitlines():
        if not line.strip():
            continue
        name, results, reserved = (line.split("\t") + ["", ""])[:3]
        out[name] = ClaimStatus(json.loads(results) if results else [], json.loads(reserved) if reserved else [])
    return out


def uid(c: Cluster, ns: str, kind: str, name: str) -> str:
    return jsonpath(c, ns, kind, name, path="{.metadata.uid}")


def pod_ref(c: Cluster, ns: str, pod: str) -> dict:
    return {"name": pod, "resource": "pods", "uid": uid(c, ns, "pod", pod)}


def podgroup_ref(c: Cluster, ns: str, group: str) -> dict:
    return {"apiGroup": PODGROUP_API_GROUP, "name": group, "resource": "podgroups",
            "uid": uid(c, ns, "podgroup", group)}


def assert_lowest_free(devices: list[tuple[str, str]]) -> None:
    """The allocator's rule on a clean cluster: on each node the devices taken are gpu-0..gpu-(k-1),
    each once."""
    by_pool: dict[str, list[str]] = defaultdict(list)
    for pool, device in devices:
        by_pool[pool].append(device)
    for pool, taken in by_pool.items():
        assert sorted(taken, key=lambda d: int(d.rsplit("-", 1)[1])) == [f"gpu-{i}" for i in range(len(taken))], \
            (pool, taken)


def pod_condition(c: Cluster, ns: str, pod: str, field: str) -> str:
    return jsonpath(c, ns, "pod", pod, path=f'{{.status.conditions[?(@.type=="PodScheduled")].{field}}}')


def podgroup_condition(c: Cluster, ns: str, group: str, field: str) -> str:
    return jsonpath(c, ns, "podgroup", group, path=f'{{.status.conditions[?(@.type=="PodGroupScheduled")].{field}}}')


def events(c: Cluster, ns: str, name: str, reason: str) -> list[str]:
    """Messages of the events about `name` with `reason`, from `kubectl get events`."""
    rows = c.kubectl("get", "events", "-n", ns, "--field-selector",
                     f"involvedObject.name={name},reason={reason}").check().out.splitlines()
    if not rows:
        return []
    header = rows[0]
    assert header.split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], header
    return [r[header.index("MESSAGE"):] for r in rows[1:]]


def explain(c: Cluster, kind: str, ns: str, name: str) -> str:
    return c.phalanx("explain", kind, name, "-n", ns, "--kubeconfig", str(c.kubeconfig)).check().out


def no_claim_allocated(c: Cluster) -> bool:
    rows = c.kubectl("get", "resourceclaim", "-A", "--no-headers").check().out.splitlines()
    return not any("allocated" in r.split()[2] for r in rows)


# -- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpus(tmp_path_factory) -> Cluster:
    """A cluster of this module's own: one control plane and two workers with 8 GPUs each."""
    c = create_cluster(tmp_path_factory.mktemp("dra"), "dra", config=TWO_WORKERS)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def _cleanup(c: Cluster, ns: str) -> None:
    c.kubectl("delete", "deployments", "--all", "-n", ns, "--cascade=foreground", "--timeout=60s")
    c.kubectl("delete", "pods", "--all", "-n", ns, "--timeout=60s")
    c.kubectl("delete", "podgroups,resourceclaims", "--all", "-n", ns, "--timeout=60s")
    c.kubectl("delete", "namespace", ns, "--wait=false")


@pytest.fixture
def make_ns(gpus: Cluster):
    """Fresh namespaces in `gpus`, once no claim in the cluster is allocated; afterwards their pods,
    PodGroups and claims are deleted (and waited for), so the next test finds every GPU free."""
    assert poll(lambda: no_claim_allocated(gpus)), gpus.kubectl("get", "resourceclaim", "-A").out
    made: list[str] = []

    def new(labels: dict[str, str] | None = None) -> str:
        name = "dra-" + uuid.uuid4().hex[:8]
        gpus.kubectl("create", "namespace", name).check()
        if labels:
            gpus.kubectl("label", "namespace", name, *(f"{k}={v}" for k, v in labels.items())).check()
        made.append(name)
        return name
    yield new
    for name in made:
        _cleanup(gpus, name)


@pytest.fixture
def dra_ns(make_ns) -> str:
    return make_ns()


# -- the simulated driver ------------------------------------------------------------------------

def test_each_worker_publishes_eight_gpus(gpus: Cluster):
    rows = gpus.kubectl("get", "resourceslices").check().out.splitlines()
    assert rows[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    slices = sorted(r.split()[:4] for r in rows[1:])
    assert [s[1:] for s in slices] == [["dra-worker", "gpu.example.com", "dra-worker"],
                                      ["dra-worker2", "gpu.example.com", "dra-worker2"]]
    for name, node, _, _ in slices:
        assert re.fullmatch(f"00000-gpu.example.com-{node}-{GENERATED_SUFFIX}", name), name
    devices = gpus.kubectl("get", "resourceslice", slices[0][0], "-o", "jsonpath={.spec.devices[*].name}").check().out
    assert devices.split() == [f"gpu-{i}" for i in range(GPUS_PER_NODE)]
    gpu3 = json.loads(gpus.kubectl("get", "resourceslice", slices[0][0], "-o",
                                   "jsonpath={.spec.devices[3]}").check().out)
    assert gpu3["attributes"]["index"] == {"int": 3}
    assert gpu3["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
    assert gpu3["attributes"]["driverVersion"] == {"version": "1.0.0"}
    assert gpu3["attributes"]["uuid"]["string"].startswith("gpu-")
    assert gpu3["capacity"] == {"memory": {"value": "80Gi"}}
    selector = gpus.kubectl("get", "deviceclass", "gpu.example.com", "-o",
                            "jsonpath={.spec.selectors[0].cel.expression}").check().out
    assert selector == "device.driver == 'gpu.example.com'"


# -- dra-example-driver's demos ------------------------------------------------------------------

def test_basic_resourceclaimtemplate(gpus: Cluster, dra_ns: str):
    """Two pods, one claim each from a template: two generated claims, two distinct GPUs."""
    out = apply(gpus, dra_ns, "basic-resourceclaimtemplate.yaml")
    assert out.splitlines() == ["resourceclaimtemplate.resource.k8s.io/single-gpu created",
                                "pod/pod0 created", "pod/pod1 created"]
    pods = wait_running(gpus, dra_ns, 2)
    states = wait_claims(gpus, dra_ns, 2)
    statuses = claim_statuses(gpus, dra_ns)
    for pod in ("pod0", "pod1"):
        [name] = [n for n in states if n.startswith(f"{pod}-gpu-")]
        assert re.fullmatch(f"{pod}-gpu-{GENERATED_SUFFIX}", name)
        assert jsonpath(gpus, dra_ns, "pod", pod, path="{.status.resourceClaimStatuses[0].resourceClaimName}") == name
        assert jsonpath(gpus, dra_ns, "resourceclaim", name,
                        path="{.metadata.annotations.resource\\.kubernetes\\.io/pod-claim-name}") == "gpu"
        st = statuses[name]
        assert st.reserved_for == [pod_ref(gpus, dra_ns, pod)]
        assert [(r["request"], r["driver"]) for r in st.results] == [("gpu", "gpu.example.com")]
        # the device comes from the pod's node (node-local pool named after the node) ...
        assert st.results[0]["pool"] == pods[pod].node
    # ... scoring spread the two pods over the two workers, and the allocator took each worker's
    # first free device: gpu-0 on each.
    assert {p.node for p in pods.values()} == {"dra-worker", "dra-worker2"}
    assert sorted(d for st in statuses.values() for d in st.devices) == [("dra-worker", "gpu-0"),
                                                                         ("dra-worker2", "gpu-0")]

    # a generated claim goes with its pod
    [claim0] = [n for n in states if n.startswith("pod0-gpu-")]
    gpus.kubectl("delete", "pod", "pod0", "-n", dra_ns).check()
    remaining = poll(lambda: (lambda st: st if claim0 not in st else None)(claim_states(gpus, dra_ns)))
    assert remaining and list(remaining.values()) == ["allocated,reserved"], remaining


def test_basic_shared_claim_across_pods(gpus: Cluster, dra_ns: str):
    """A standalone claim named by two pods: one allocation, both pods in reservedFor, one node."""
    apply(gpus, dra_ns, "basic-shared-claim-across-pods.yaml")
    pods = wait_running(gpus, dra_ns, 2)
    assert wait_claims(gpus, dra_ns, 1) == {"single-gpu": "allocated,reserved"}
    st = claim_statuses(gpus, dra_ns)["single-gpu"]
    [(node, device)] = st.devices
    assert device == "gpu-0"
    assert pods["pod0"].node == pods["pod1"].node == node
    assert sorted(st.reserved_for, key=lambda r: r["name"]) == [pod_ref(gpus, dra_ns, "pod0"),
                                                                 pod_ref(gpus, dra_ns, "pod1")]
    nodes = jsonpath(gpus, dra_ns, "resourceclaim", "single-gpu",
                     path="{.status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values}")
    assert json.loads(nodes) == [node]

    # the claim is released pod by pod and deallocated (not deleted) when nobody uses it
    gpus.kubectl("delete", "pod", "pod1", "-n", dra_ns).check()
    assert poll(lambda: claim_statuses(gpus, dra_ns)["single-gpu"].reserved_for == [pod_ref(gpus, dra_ns, "pod0")])
    assert claim_states(gpus, dra_ns) == {"single-gpu": "allocated,reserved"}
    gpus.kubectl("delete", "pod", "pod0", "-n", dra_ns).check()
    assert poll(lambda: claim_states(gpus, dra_ns) == {"single-gpu": "pending"}), debug(gpus, dra_ns)
    st = claim_statuses(gpus, dra_ns)["single-gpu"]
    assert st.results == [] and st.reserved_for == []
    assert "resource.kubernetes.io/delete-protection" not in \
        jsonpath(gpus, dra_ns, "resourceclaim", "single-gpu", path="{.metadata.finalizers}")


def test_deallocated_claim_has_no_finalizers_field(gpus: Cluster, dra_ns: str):
    apply(gpus, dra_ns, "basic-shared-claim-across-pods.yaml")
    wait_running(gpus, dra_ns, 2)
    wait_claims(gpus, dra_ns, 1)
    gpus.kubectl("delete", "pods", "--all", "-n", dra_ns).check()
    assert poll(lambda: claim_states(gpus, dra_ns) == {"single-gpu": "pending"}), debug(gpus, dra_ns)
    assert poll(lambda: "delete-protection" not in
                jsonpath(gpus, dra_ns, "resourceclaim", "single-gpu", path="{.metadata.finalizers}"))
    assert jsonpath(gpus, dra_ns, "resourceclaim", "single-gpu", path="{.metadata.finalizers}") == ""


def test_basic_shared_claim_across_containers(gpus: Cluster, dra_ns: str):
    """One pod, two containers naming the same claim: one GPU for both."""
    apply(gpus, dra_ns, "basic-shared-claim-across-containers.yaml")
    pods = wait_running(gpus, dra_ns, 1)
    assert pods["pod0"].ready == "2/2"
    [name] = wait_claims(gpus, dra_ns, 1)
    assert re.fullmatch(f"pod0-shared-gpu-{GENERATED_SUFFIX}", name)
    st = claim_statuses(gpus, dra_ns)[name]
    assert st.devices == [(pods["pod0"].node, "gpu-0")]
    assert st.reserved_for == [pod_ref(gpus, dra_ns, "pod0")]
    assert jsonpath(gpus, dra_ns, "pod", "pod0", path="{.spec.containers[*].resources.claims[*].name}") == \
        "shared-gpu shared-gpu"


def test_cel_selector(gpus: Cluster, dra_ns: str):
    """Selectors on the model attribute and the memory capacity match the simulated GPUs."""
    apply(gpus, dra_ns, "cel-selector.yaml")
    pods = wait_running(gpus, dra_ns, 1)
    [name] = wait_claims(gpus, dra_ns, 1)
    st = claim_statuses(gpus, dra_ns)[name]
    assert [(r["request"], r["pool"], r["device"]) for r in st.results] == [("gpu", pods["pod0"].node, "gpu-0")]
    assert st.reserved_for == [pod_ref(gpus, dra_ns, "pod0")]


def test_basic_multiple_requests(gpus: Cluster, dra_ns: str):
    """One claim with two requests: two distinct GPUs of one node, one result per request."""
    apply(gpus, dra_ns, "basic-multiple-requests.yaml")
    pods = wait_running(gpus, dra_ns, 1)
    [name] = wait_claims(gpus, dra_ns, 1)
    st = claim_statuses(gpus, dra_ns)[name]
    node = pods["pod0"].node
    assert [(r["request"], r["pool"], r["device"]) for r in st.results] == [("gpu-1", node, "gpu-0"),
                                                                            ("gpu-2", node, "gpu-1")]
    requests = jsonpath(gpus, dra_ns, "resourceclaim", name, path="{.status.allocation.devices.results[*].request}")
    assert requests == "gpu-1 gpu-2"


def test_admin_access_sees_every_gpu_even_in_use(gpus: Cluster, make_ns):
    """`allocationMode: All` with admin access in a labelled namespace: all 8 GPUs of the node,
    including one another claim holds."""
    holders = make_ns()
    apply(gpus, holders, "basic-resourceclaimtemplate.yaml")
    wait_running(gpus, holders, 2)
    wait_claims(gpus, holders, 2)
    held = sorted(d for st in claim_statuses(gpus, holders).values() for d in st.devices)
    assert held == [("dra-worker", "gpu-0"), ("dra-worker2", "gpu-0")]  # a GPU in use on every node

    admin = make_ns({"resource.kubernetes.io/admin-access": "true"})
    apply(gpus, admin, "admin-access.yaml")
    pods = wait_running(gpus, admin, 1)
    [name] = wait_claims(gpus, admin, 1)
    assert re.fullmatch(f"pod0-admin-gpus-{GENERATED_SUFFIX}", name)
    st = claim_statuses(gpus, admin)[name]
    node = pods["pod0"].node
    assert [(r["request"], r["pool"], r["device"], r.get("adminAccess")) for r in st.results] == \
        [("admin-gpu", node, f"gpu-{i}", True) for i in range(GPUS_PER_NODE)]
    assert (node, "gpu-0") in held
    # admin access takes nothing away: the holders' claims keep their device
    assert sorted(d for s in claim_statuses(gpus, holders).values() for d in s.devices) == held


def test_admin_access_needs_the_namespace_label(cluster: Cluster, ns: str):
    r = cluster.kubectl("apply", "-n", ns, "-f", str(MANIFESTS / "admin-access.yaml"))
    assert r.returncode != 0
    # upstream's path is spec.devices.requests[i].adminAccess for claims and templates alike
    assert r.stderr.strip() == (
        'The ResourceClaimTemplate "multiple-gpus-admin" is invalid: spec.devices.requests[0].adminAccess: '
        "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the "
        "containing namespace"), r.stderr
    assert cluster.kubectl("get", "resourceclaimtemplates", "-n", ns, "-o", "name").check().out == ""


def test_prioritized_alternatives(gpus: Cluster, dra_ns: str):
    """firstAvailable: pod0 falls back to its third subrequest, pod1 gets its first."""
    apply(gpus, dra_ns, "prioritized-alternatives.yaml")
    pods = wait_running(gpus, dra_ns, 2)
    states = wait_claims(gpus, dra_ns, 2)
    statuses = claim_statuses(gpus, dra_ns)
    chosen = {}
    for pod in ("pod0", "pod1"):
        [name] = [n for n in states if n.startswith(f"{pod}-gpu-")]
        [result] = statuses[name].results
        assert result["pool"] == pods[pod].node
        chosen[pod] = result["request"]
    assert chosen == {"pod0": "gpu/older-gpu", "pod1": "gpu/latest-gpu"}
    rows = jsonpath(gpus, dra_ns, "resourceclaim",
                    path='{range .items[*]}{.status.allocation.devices.results[*].request}{"\\n"}{end}')
    assert sorted(rows.split()) == ["gpu/latest-gpu", "gpu/older-gpu"]
    assert_lowest_free([d for st in statuses.values() for d in st.devices])

    # a preferred alternative that asks for more GPUs than a node has falls back as well
    apply(gpus, dra_ns, "prioritized-count-fallback.yaml")
    pods = wait_running(gpus, dra_ns, 3)
    wait_claims(gpus, dra_ns, 3)
    statuses = claim_statuses(gpus, dra_ns)
    fallback = statuses["nine-or-two"]
    assert [r["request"] for r in fallback.results] == ["gpus/two", "gpus/two"]
    assert {pool for pool, _ in fallback.devices} == {pods["pod2"].node}
    assert_lowest_free([d for st in statuses.values() for d in st.devices])


def plain_pods(prefix: str, count: int, claim: str) -> str:
    """`count` pods `<prefix>-NN`, each with claim `gpu` (`claim` is the pod claim's source field,
    e.g. `resourceClaimTemplateName: gpu-template`), as one multi-document YAML."""
    return "---\n".join(f"""apiVersion: v1
kind: Pod
metadata:
  name: {prefix}-{i:03d}
spec:
  terminationGracePeriodSeconds: 0
  resourceClaims:
  - {{name: gpu, {claim}}}
  containers:
  - name: ctr0
    image: busybox
    command: ["/bin/sh", "-c", "sleep infinity"]
    resources:
      claims:
      - name: gpu
""" for i in range(count))


def test_gpus_run_out_and_a_freed_gpu_is_reused(gpus: Cluster, dra_ns: str):
    """17 pods with a GPU each on 2 x 8 GPUs: 16 run on 16 distinct devices, the 17th waits with
    the reason; deleting a pod frees its GPU (claim deleted), and the waiting pod gets it."""
    apply(gpus, dra_ns, "gpu-template.yaml")
    gpus.kubectl("apply", "-n", dra_ns, "-f", "-",
                 input=plain_pods("p", 17, "resourceClaimTemplateName: gpu-template")).check()

    def sixteen_running():
        pods = pods_wide(gpus, dra_ns)
        running = [n for n, p in pods.items() if p.status == "Running"]
        pending = [n for n, p in pods.items() if p.status == "Pending"]
        return (pods, pending) if len(running) == 16 and len(pending) == 1 and \
            pod_condition(gpus, dra_ns, pending[0], "reason") == "Unschedulable" else None
    found = poll(sixteen_running)
    assert found, debug(gpus, dra_ns)
    pods, [waiting] = found
    statuses = claim_statuses(gpus, dra_ns)
    devices = [d for st in statuses.values() for d in st.devices]
    assert sorted(devices) == sorted((node, f"gpu-{i}") for node in ("dra-worker", "dra-worker2")
                                     for i in range(GPUS_PER_NODE))
    message = pod_condition(gpus, dra_ns, waiting, "message")
    assert "cannot allocate all claims" in message and \
        "request gpu: not enough devices: 1 requested, 0 available (8 in use)" in message, message
    states = claim_states(gpus, dra_ns)
    assert list(states.values()).count("pending") == 1
    [waiting_claim] = [n for n in states if n.startswith(f"{waiting}-gpu-")]
    assert states[waiting_claim] == "pending"

    [victim] = [n for n, p in pods.items() if p.status == "Running"][:1]
    [victim_claim] = [n for n in states if n.startswith(f"{victim}-gpu-")]
    freed = statuses[victim_claim].devices
    gpus.kubectl("delete", "pod", victim, "-n", dra_ns).check()
    wait_running(gpus, dra_ns, 16)
    assert claim_statuses(gpus, dra_ns)[waiting_claim].devices == freed
    assert pods_wide(gpus, dra_ns)[waiting].node == freed[0][0]


# -- PodGroup claims (DRAWorkloadResourceClaims) -------------------------------------------------

def test_podgroup_resourceclaimtemplate(gpus: Cluster, dra_ns: str):
    """Two gang PodGroups with one GPU each: one claim per group, reserved for the PodGroup, the
    group's pods on the GPU's node."""
    apply(gpus, dra_ns, "podgroup-resourceclaimtemplate.yaml")
    pods = wait_running(gpus, dra_ns, 4)
    states = wait_claims(gpus, dra_ns, 2)
    statuses = claim_statuses(gpus, dra_ns)
    rows = gpus.kubectl("get", "podgroups", "-n", dra_ns, "--no-headers").check().out.splitlines()
    assert sorted(r.split()[:4] for r in rows) == [["group-1", "Gang", "<none>", "Scheduled"],
                                                   ["group-2", "Gang", "<none>", "Scheduled"]]
    devices = []
    for group in ("group-1", "group-2"):
        [name] = [n for n in states if n.startswith(f"{group}-gpu-")]
        assert re.fullmatch(f"{group}-gpu-{GENERATED_SUFFIX}", name)
        st = statuses[name]
        assert st.reserved_for == [podgroup_ref(gpus, dra_ns, group)]  # one entry, never per pod
        [(node, device)] = st.devices
        devices.append((node, device))
        members = {p: row.node for p, row in pods.items() if p.startswith(f"{group}-")}
        assert len(members) == 2 and set(members.values()) == {node}, members
        assert jsonpath(gpus, dra_ns, "podgroup", group,
                        path="{.status.resourceClaimStatuses[0].resourceClaimName}") == name
        for p in members:
            assert jsonpath(gpus, dra_ns, "pod", p, path="{.status.resourceClaimStatuses[0].resourceClaimName}") \
                == name
        assert jsonpath(gpus, dra_ns, "resourceclaim", name, path="{.metadata.ownerReferences[0].kind}/"
                        "{.metadata.ownerReferences[0].name}") == f"PodGroup/{group}"
    # each group its own GPU; the second group's pods prefer the emptier worker (scoring), where the
    # allocator takes gpu-0 again
    assert len(set(devices)) == 2
    assert sorted(devices) == [("dra-worker", "gpu-0"), ("dra-worker2", "gpu-0")]


def test_podgroup_claim_and_per_pod_claims_side_by_side(gpus: Cluster, dra_ns: str):
    """Only a pod claim that matches a PodGroup claim (same name and template) is the PodGroup's;
    the pod's other claim is its own, generated and reserved per pod."""
    apply(gpus, dra_ns, "podgroup-mixed-claims.yaml")
    pods = wait_running(gpus, dra_ns, 2)
    states = wait_claims(gpus, dra_ns, 3)
    statuses = claim_statuses(gpus, dra_ns)
    [shared] = [n for n in states if re.fullmatch(f"mixed-shared-{GENERATED_SUFFIX}", n)]
    assert statuses[shared].reserved_for == [podgroup_ref(gpus, dra_ns, "mixed")]
    node = statuses[shared].devices[0][0]
    for pod in ("member-a", "member-b"):
        [own] = [n for n in states if re.fullmatch(f"{pod}-own-{GENERATED_SUFFIX}", n)]
        assert statuses[own].reserved_for == [pod_ref(gpus, dra_ns, pod)]
        assert pods[pod].node == node  # the shared GPU pins both members
        recorded = jsonpath(gpus, dra_ns, "pod", pod,
                            path='{range .status.resourceClaimStatuses[*]}{.name}={.resourceClaimName} {end}')
        assert sorted(recorded.split()) == sorted([f"own={own}", f"shared={shared}"])
    devices = [d for st in statuses.values() for d in st.devices]
    assert len(set(devices)) == 3
    assert_lowest_free(devices)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Cluster:
    """Two GPU workers that take 400 pods each."""
    c = create_cluster(tmp_path_factory.mktemp("dra-big"), "drabig", config=BIG_NODES)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def test_300_pods_share_one_podgroup_claim(big: Cluster):
    """300 pods of one gang share one claim: all Running on the GPU's node, one reservedFor entry
    (the 256-consumer limit does not apply to a PodGroup reservation)."""
    c = big
    c.kubectl("create", "namespace", "gang300").check()
    docs = [(TUTORIAL / "resourceclaimtemplate.yaml").read_text().replace("  namespace: default\n", ""),
            """apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: big
spec:
  schedulingPolicy:
    gang:
      minCount: 300
  resourceClaims:
  - name: shared-gpu
    resourceClaimTemplateName: gpu-claim-template
"""]
    for i in range(300):
        docs.append(f"""apiVersion: v1
kind: Pod
metadata:
  name: worker-{i:03d}
  labels: {{app: big}}
spec:
  terminationGracePeriodSeconds: 0
  schedulingGroup: {{podGroupName: big}}
  resourceClaims:
  - {{name: shared-gpu, resourceClaimTemplateName: gpu-claim-template}}
  containers:
  - name: worker
    image: busybox
    command: ["/bin/sh", "-c", "sleep infinity"]
    resources:
      claims:
      - name: shared-gpu
""")
    out = c.kubectl("apply", "-n", "gang300", "-f", "-", input="---\n".join(docs), timeout=120).check().out
    assert len(out.splitlines()) == 302 and out.splitlines()[-1] == "pod/worker-299 created"
    r = c.kubectl("wait", "-n", "gang300", "--for=condition=PodGroupScheduled", "podgroup/big", "--timeout=60s",
                  timeout=90)
    assert r.returncode == 0, r.stderr
    pods = wait_running(c, "gang300", 300, timeout=60)
    states = claim_states(c, "gang300")
    [name] = states
    assert re.fullmatch(f"big-shared-gpu-{GENERATED_SUFFIX}", name) and states[name] == "allocated,reserved"
    reserved = jsonpath(c, "gang300", "resourceclaim", path="{.items[0].status.reservedFor}")
    assert json.loads(reserved) == [podgroup_ref(c, "gang300", "big")]
    [(node, device)] = claim_statuses(c, "gang300")[name].devices
    assert device == "gpu-0"
    assert {p.node for p in pods.values()} == {node}  # the node-local GPU pins the whole gang
    recorded = jsonpath(c, "gang300", "pods", path="{.items[*].status.resourceClaimStatuses[0].resourceClaimName}")
    assert recorded.split() == [name] * 300


def test_a_standalone_claim_takes_at_most_256_pods(big: Cluster):
    """For contrast: a claim reserved per pod stops at 256 consumers; the 257th pod waits."""
    c = big
    c.kubectl("create", "namespace", "shared257").check()
    claim = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shared-gpu
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
---
"""
    c.kubectl("apply", "-n", "shared257", "-f", "-",
              input=claim + plain_pods("user", 257, "resourceClaimName: shared-gpu"), timeout=120).check()

    def settled():
        pods = pods_wide(c, "shared257")
        pending = [n for n, p in pods.items() if p.status == "Pending"]
        return (pods, pending) if len(pods) == 257 and len(pending) == 1 and \
            sum(p.status == "Running" for p in pods.values()) == 256 and \
            pod_condition(c, "shared257", pending[0], "reason") == "Unschedulable" else None
    found = poll(settled, timeout=60)
    assert found, c.kubectl("get", "pods", "-n", "shared257", "--field-selector", "status.phase!=Running").out
    pods, [waiting] = found
    message = pod_condition(c, "shared257", waiting, "message")
    assert message.startswith("0/3 nodes are available: resourceclaim in use."), message
    st = claim_statuses(c, "shared257")["shared-gpu"]
    assert len(st.reserved_for) == 256 and {r["resource"] for r in st.reserved_for} == {"pods"}
    assert waiting not in {r["name"] for r in st.reserved_for}
    [(node, _)] = st.devices
    assert {p.node for n, p in pods.items() if n != waiting} == {node}


def test_gate_off_every_pod_gets_its_own_claim(tmp_path):
    """DRAWorkloadResourceClaims off: the PodGroup's resourceClaims are dropped, each of the six pods
    gets `<pod>-shared-gpu-xxxxx` reserved for itself, six GPUs."""
    c = create_cluster(tmp_path, "draoff", config=GATE_OFF)
    try:
        k = c.kubectl
        k("apply", "-f", str(TUTORIAL / "resourceclaimtemplate.yaml"), "-f", str(TUTORIAL / "workload.yaml"),
          "-f", str(TUTORIAL / "podgroup.yaml")).check()
        assert jsonpath(c, "default", "podgroup", "training-workers", path="{.spec.resourceClaims}") == ""
        assert jsonpath(c, "default", "workload", "training-workload",
                        path="{.spec.podGroupTemplates[0].resourceClaims}") == ""
        assert claim_states(c, "default") == {}  # no claim for the PodGroup
        k("apply", "-f", str(MANIFESTS / "tutorial-plain-pods.yaml")).check()
        pods = wait_running(c, "default", 6)
        states = wait_claims(c, "default", 6)
        statuses = claim_statuses(c, "default")
        for i in range(6):
            pod = f"worker-{i}"
            [name] = [n for n in states if n.startswith(f"{pod}-shared-gpu-")]
            assert re.fullmatch(f"{pod}-shared-gpu-{GENERATED_SUFFIX}", name)
            st = statuses[name]
            assert st.reserved_for == [pod_ref(c, "default", pod)]
            [(node, _)] = st.devices
            assert node == pods[pod].node
        devices = [d for st in statuses.values() for d in st.devices]
        assert len(set(devices)) == 6
        assert_lowest_free(devices)
        assert {p.node for p in pods.values()} == {"draoff-worker", "draoff-worker2"}  # nothing pins them
        assert jsonpath(c, "default", "podgroup", "training-workers", path="{.status.resourceClaimStatuses}") == ""
        assert podgroup_condition(c, "default", "training-workers", "reason") == "Scheduled"
    finally:
        c.phalanx("delete", "cluster", "--name", c.name)


# -- why a pod with claims stays Pending ---------------------------------------------------------

FAILURES = {
    "cel-runtime-error": ("gpu-template-cel-runtime-error.yaml",
                          ["CEL runtime error: no such key: nosuchattribute",
                           "device.attributes['gpu.example.com'].nosuchattribute == 'x'"]),
    "missing-deviceclass": ("gpu-template-missing-deviceclass.yaml",
                            ["request gpu: device class late-gpu.example.com does not exist"]),
    "too-many-devices": ("gpu-template-too-many-devices.yaml",
                         ["cannot allocate all claims", "request gpu: not enough devices: 9 requested, 8 available"]),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_unsatisfiable_claim_is_explained(gpus: Cluster, dra_ns: str, case: str):
    """The reason reaches the pod (condition, FailedScheduling event, describe, explain) and the
    PodGroup; both claims stay pending."""
    template, expected = FAILURES[case]
    apply(gpus, dra_ns, template, "failing-pods.yaml")

    def solo_unschedulable():
        return pod_condition(gpus, dra_ns, "solo", "reason") == "Unschedulable" and \
            podgroup_condition(gpus, dra_ns, "team", "reason") == "Unschedulable"
    assert poll(solo_unschedulable), debug(gpus, dra_ns)

    condition = pod_condition(gpus, dra_ns, "solo", "message")
    assert pod_condition(gpus, dra_ns, "solo", "status") == "False"
    assert condition.startswith("0/3 nodes are available: "), condition
    messages = events(gpus, dra_ns, "solo", "FailedScheduling")
    assert messages, debug(gpus, dra_ns)
    described = gpus.kubectl("describe", "pod", "solo", "-n", dra_ns).check().out
    explained = explain(gpus, "pod", dra_ns, "solo")
    assert "PodScheduled=False (Unschedulable)" in explained
    group = podgroup_condition(gpus, dra_ns, "team", "message")
    assert podgroup_condition(gpus, dra_ns, "team", "status") == "False"
    assert group.startswith("0/2 pods fit, 2 required;"), group
    group_events = events(gpus, dra_ns, "team", "FailedScheduling")
    group_explained = explain(gpus, "podgroup", dra_ns, "team")
    member_explained = explain(gpus, "pod", dra_ns, "team-0")
    for text in expected:
        assert text in condition, condition
        assert any(text in m for m in messages), messages
        assert text in described, described
        assert text in explained, explained
        assert text in group, group
        assert any(text in m for m in group_events), group_events
        assert text in group_explained, group_explained
        assert text in member_explained, member_explained

    # nothing allocated: the pod's claim and the PodGroup's claim are both pending
    states = claim_states(gpus, dra_ns)
    assert len(states) == 2 and set(states.values()) == {"pending"}, states
    assert any(re.fullmatch(f"solo-gpu-{GENERATED_SUFFIX}", n) for n in states)
    assert any(re.fullmatch(f"team-gpu-{GENERATED_SUFFIX}", n) for n in states)
    assert all(st.results == [] and st.reserved_for == [] for st in claim_statuses(gpus, dra_ns).values())
    assert {(p.status, p.node) for p in pods_wide(gpus, dra_ns).values()} == {("Pending", "<none>")}


def test_missing_deviceclass_recovers_when_it_is_created(gpus: Cluster, dra_ns: str):
    """The pods wait for a DeviceClass event; creating the class schedules them."""
    apply(gpus, dra_ns, "gpu-template-missing-deviceclass.yaml", "failing-pods.yaml")
    assert poll(lambda: pod_condition(gpus, dra_ns, "solo", "reason") == "Unschedulable" and
                podgroup_condition(gpus, dra_ns, "team", "reason") == "Unschedulable"), debug(gpus, dra_ns)
    try:
        gpus.kubectl("apply", "-f", str(MANIFESTS / "late-deviceclass.yaml")).check()
        wait_running(gpus, dra_ns, 3)
        wait_claims(gpus, dra_ns, 2)
        assert podgroup_condition(gpus, dra_ns, "team", "reason") == "Scheduled"
    finally:
        gpus.kubectl("delete", "-f", str(MANIFESTS / "late-deviceclass.yaml"), "--ignore-not-found")


def test_missing_resourceclaimtemplate(gpus: Cluster, dra_ns: str):
    """No template: FailedResourceClaimCreation on the pod and on the PodGroup, no claim, pods wait
    (PreEnqueue, no scheduling attempt); creating the template lets everything run."""
    apply(gpus, dra_ns, "failing-pods.yaml")
    not_found = 'resource claim template "gpu-template": resourceclaimtemplate.resource.k8s.io "gpu-template" not found'
    pod_events = poll(lambda: events(gpus, dra_ns, "solo", "FailedResourceClaimCreation"))
    assert pod_events and all(m.strip() == f"PodResourceClaim gpu: {not_found}" for m in pod_events), pod_events
    group_events = poll(lambda: events(gpus, dra_ns, "team", "FailedResourceClaimCreation"))
    assert group_events and all(not_found in m for m in group_events), group_events
    described = gpus.kubectl("describe", "pod", "solo", "-n", dra_ns).check().out
    assert "FailedResourceClaimCreation" in described and not_found in described
    assert claim_states(gpus, dra_ns) == {}
    # held before the queue (DynamicResources' PreEnqueue: the claim does not exist yet), which the pod shows
    assert poll(lambda: pod_condition(gpus, dra_ns, "solo", "reason") == "SchedulingGated")
    assert {(p.status, p.node) for p in pods_wide(gpus, dra_ns).values()} == {("SchedulingGated", "<none>")}
    assert events(gpus, dra_ns, "solo", "FailedScheduling") == []
    explained = explain(gpus, "pod", dra_ns, "solo")
    assert "no scheduling decision recorded yet" in explained and "unresolved claims" in explained

    apply(gpus, dra_ns, "gpu-template.yaml")
    pods = wait_running(gpus, dra_ns, 3)
    states = wait_claims(gpus, dra_ns, 2)
    statuses = claim_statuses(gpus, dra_ns)
    [team_claim] = [n for n in states if n.startswith("team-gpu-")]
    assert statuses[team_claim].reserved_for == [podgroup_ref(gpus, dra_ns, "team")]
    assert pods["team-0"].node == pods["team-1"].node == statuses[team_claim].devices[0][0]


def test_explain_names_the_missing_template(gpus: Cluster, dra_ns: str):
    apply(gpus, dra_ns, "failing-pods.yaml")
    assert poll(lambda: events(gpus, dra_ns, "solo", "FailedResourceClaimCreation"))
    assert 'resourceclaimtemplate.resource.k8s.io "gpu-template" not found' in explain(gpus, "pod", dra_ns, "solo")


def test_cel_compile_error_is_refused_at_admission(cluster: Cluster, ns: str):
    """A selector that does not compile never reaches the scheduler: 422 Invalid on create."""
    r = cluster.kubectl("apply", "-n", ns, "-f", str(MANIFESTS / "invalid-cel-selector.yaml"), "-v=6")
    assert r.returncode != 0
    responses = [line for line in r.stderr.splitlines() if '"Response" verb="POST"' in line]
    assert len(responses) == 2 and all('status="422 Unprocessable Entity"' in line for line in responses), responses
    assert ('Error from server (Invalid): error when creating "' in r.stderr and
            'ResourceClaim.resource.k8s.io "bad-syntax" is invalid: '
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "
            "\"device.attributes['gpu.example.com'].model = 'LATEST-GPU-MODEL'\": compilation failed: "
            "ERROR: <input>:1:44: Syntax error:" in r.stderr), r.stderr
    assert ('ResourceClaimTemplate.resource.k8s.io "undefined-field" is invalid: '
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "
            "\"device.nosuchfield == 1\": compilation failed: ERROR: <input>:1:8: undefined field 'nosuchfield'"
            in r.stderr), r.stderr
    assert cluster.kubectl("get", "resourceclaims,resourceclaimtemplates", "-n", ns, "-o", "name").check().out == ""


def test_cel_type_error_is_refused_at_admission(cluster: Cluster, ns: str):
    """A selector comparing a string with an int is a compile error upstream: 422 Invalid on create
    of a ResourceClaim, a ResourceClaimTemplate and a DeviceClass, not a pod pending on "no devices"."""
    r = cluster.kubectl("apply", "-n", ns, "-f", str(MANIFESTS / "type-error-cel-selectors.yaml"), "-v=6")
    assert r.returncode != 0
    responses = [line for line in r.stderr.splitlines() if '"Response" verb="POST"' in line]
    assert len(responses) == 3 and all('status="422 Unprocessable Entity"' in line for line in responses), responses
    detail = ("Invalid value: \"device.driver == 1\": compilation failed: ERROR: <input>:1:15: "
              "found no matching overload for '_==_' applied to '(string, int)'")
    for what, path in (('ResourceClaim.resource.k8s.io "driver-is-int"', "spec.devices"),
                       ('ResourceClaimTemplate.resource.k8s.io "driver-is-int"', "spec.spec.devices"),
                       ('DeviceClass.resource.k8s.io "driver-is-int.example.com"', None)):
        field = f"{path}.requests[0].exactly.selectors[0]" if path else "spec.selectors[0]"
        assert f"{what} is invalid: {field}.cel.expression: {detail}" in r.stderr, r.stderr
    assert cluster.kubectl("get", "resourceclaims,resourceclaimtemplates", "-n", ns, "-o", "name").check().out == ""
    assert cluster.kubectl("get", "deviceclass", "driver-is-int.example.com").returncode != 0
