"""A gang Job on a Kubernetes 1.37 cluster (KEP-5547): `kubectl apply -f examples/job-gang-1.37.yaml`
gets a v1beta1 Workload and PodGroup named as upstream names them, and pods that join the PodGroup
and are bound together (or, when the gang does not fit, not at all). On a 1.36 cluster the same
manifest is refused: 1.36 has no `spec.scheduling`."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from .conftest import KUBECTL_137, Cluster, create_cluster, poll

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "job-gang-1.37.yaml"

CONFIG = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  GenericWorkload: true
  WorkloadWithJob: true
nodes:
- role: control-plane
- role: worker
- role: worker
"""

SAFE = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_hash(data: bytes) -> str:
    """rand.SafeEncodeString(fmt.Sprint(fnv32a(data)))."""
    return "".join(SAFE[ord(ch) % len(SAFE)] for ch in str(fnv32a(data)))


@pytest.fixture(scope="module")
def cluster137_wwj(tmp_path_factory) -> Cluster:
    c = create_cluster(tmp_path_factory.mktemp("job137"), "e2e-job137", config=CONFIG, kubernetes="v1.37.1")
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def kubectl(c: Cluster, *args: str, **kw):
    return c.kubectl(*args, binary=KUBECTL_137, **kw)


def namespace(c: Cluster) -> str:
    name = "t-" + uuid.uuid4().hex[:8]
    kubectl(c, "create", "namespace", name).check()
    return name


def test_gang_job_gets_workload_and_pod_group_named_as_upstream(cluster137_wwj):
    c = cluster137_wwj
    ns = namespace(c)
    kubectl(c, "apply", "-n", ns, "-f", str(EXAMPLE)).check()
    job = kubectl(c, "get", "job", "trainer", "-n", ns, "-o", "json").check().json()
    assert job["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}  # minCount is never written back

    uid = job["metadata"]["uid"]
    workload_name = "trainer-" + safe_hash(('(types.UID)"' + uid + '"').encode())  # hashutil.DeepHashObject
    template = "trainer-pgt-0"
    pod_group_name = f"{workload_name}-{template}-{safe_hash((workload_name + template).encode())}"

    def pods():
        items = kubectl(c, "get", "pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=trainer",
                        "-o", "json").check().json()["items"]
        return items if len(items) == 3 else None

    assert poll(pods), kubectl(c, "get", "events", "-n", ns).out
    wl = kubectl(c, "get", "workloads.v1beta1.scheduling.k8s.io", workload_name, "-n", ns, "-o", "json").check().json()
    assert wl["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "trainer"}
    assert wl["spec"]["podGroupTemplates"][0]["name"] == template
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == \
        ("Job", "trainer", job["metadata"]["uid"], True)

    pg = kubectl(c, "get", "podgroups.v1beta1.scheduling.k8s.io", pod_group_name, "-n", ns, "-o", "json").check().json()
    assert pg["spec"]["workloadRef"] == {"workloadName": workload_name, "templateName": template}
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job", "Workload"]

    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods()} == {pod_group_name}
    events = kubectl(c, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=trainer",
                     "-o", "json").check().json()["items"]
    assert f"Created Workload {workload_name} for Job trainer" in {e["message"] for e in events}


def pod_group(c: Cluster, ns: str) -> dict | None:
    items = kubectl(c, "get", "podgroups.scheduling.k8s.io", "-n", ns, "-o", "json").check().json()["items"]
    return items[0] if items else None


def scheduled_condition(pg: dict | None) -> dict | None:
    for cond in ((pg or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == "PodGroupInitiallyScheduled":
            return cond
    return None


def test_gang_pods_are_bound_together(cluster137_wwj):
    c = cluster137_wwj
    ns = namespace(c)
    kubectl(c, "apply", "-n", ns, "-f", str(EXAMPLE)).check()

    def bound():
        items = kubectl(c, "get", "pods", "-n", ns, "-o", "json").check().json()["items"]
        return items if len(items) == 3 and all(p["spec"].get("nodeName") for p in items) else None

    assert poll(bound), kubectl(c, "get", "pods,podgroups.scheduling.k8s.io,events", "-n", ns).out
    cond = poll(lambda: scheduled_condition(pod_group(c, ns)))
    assert cond and cond["status"] == "True"


def test_a_gang_that_does_not_fit_binds_none_of_its_pods(cluster137_wwj):
    """Two workers of 8 CPUs hold two pods of 6 CPUs: pod by pod two would run; the gang of 3 waits."""
    c = cluster137_wwj
    ns = namespace(c)
    big = EXAMPLE.read_text().replace(
        '        command: ["/bin/sh", "-c", "sleep 60"]\n',
        '        command: ["/bin/sh", "-c", "sleep 60"]\n        resources:\n          requests:\n            cpu: "6"\n')
    assert big != EXAMPLE.read_text()
    kubectl(c, "apply", "-n", ns, "-f", "-", input=big).check()
    cond = poll(lambda: scheduled_condition(pod_group(c, ns)))
    assert cond and (cond["status"], cond["reason"]) == ("False", "Unschedulable"), cond
    pods = kubectl(c, "get", "pods", "-n", ns, "-o", "json").check().json()["items"]
    assert len(pods) == 3 and not any(p["spec"].get("nodeName") for p in pods)


def test_kubectl_explain_shows_the_field(cluster137_wwj):
    out = kubectl(cluster137_wwj, "explain", "job.spec.scheduling.schedulingPolicy.gang").check().out
    assert "minCount" in out


def test_spec_scheduling_is_refused_by_a_1_36_cluster(cluster, ns):
    r = cluster.kubectl("apply", "-n", ns, "-f", str(EXAMPLE))
    assert r.returncode != 0
    assert 'unknown field "spec.scheduling"' in r.stderr


def test_reapplying_with_a_new_min_count_resizes_the_gang(cluster137_wwj):
    c = cluster137_wwj
    ns = namespace(c)
    kubectl(c, "apply", "-n", ns, "-f", str(EXAMPLE)).check()
    assert poll(lambda: len(kubectl(c, "get", "podgroups.scheduling.k8s.io", "-n", ns, "-o", "json")
                            .check().json()["items"]) == 1)
    changed = EXAMPLE.read_text().replace("      gang: {}", "      gang:\n        minCount: 2")
    assert changed != EXAMPLE.read_text()
    kubectl(c, "apply", "-n", ns, "-f", "-", input=changed).check()
    job = kubectl(c, "get", "job", "trainer", "-n", ns, "-o", "json").check().json()
    assert job["spec"]["scheduling"]["schedulingPolicy"] == {"gang": {"minCount": 2}}

    def min_counts():
        wl = kubectl(c, "get", "workloads.scheduling.k8s.io", "-n", ns, "-o", "json").check().json()["items"][0]
        pg = kubectl(c, "get", "podgroups.scheduling.k8s.io", "-n", ns, "-o", "json").check().json()["items"][0]
        got = (wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"],
               pg["spec"]["schedulingPolicy"]["gang"]["minCount"])
        return got if got == (2, 2) else None

    assert poll(min_counts, timeout=30)
    r = kubectl(c, "patch", "job", "trainer", "-n", ns, "--type=merge",
                "-p", '{"spec":{"scheduling":{"schedulingPolicy":{"gang":null,"basic":{}}}}}')
    assert r.returncode != 0
    assert "spec.scheduling.schedulingPolicy: Invalid value: null: field is immutable" in r.stderr
