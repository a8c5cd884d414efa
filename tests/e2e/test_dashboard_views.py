"""The dashboard's Timeline, Metrics and Workloads views in a real headless Chromium.

On the seed tutorial (examples/dra-integration) with an oversized pod and a preemption: the
Timeline shows the gang's bindings (each naming its node; clicking one highlights it), the
oversized pod's FailedScheduling and the victim's Preempted entry (clicking it highlights the node
the victim was on, though the pod is gone); the Metrics view charts the scheduler's figures read
from /metrics; the Workloads view shows the JobSet -> Jobs -> PodGroup relation, and selecting
the JobSet highlights the gang's nodes and its claim's device. On a Kubernetes 1.37 cluster
(examples/clusters/phalanx-composite-1.37.yaml with examples/composite-pod-group): the
CompositePodGroup tree, the zone its leaves landed in, and the tree highlighted on the map.
Screenshots go to the test's tmp dir (printed; `pytest -s` shows them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Cluster, create_cluster
from .test_dashboard import CHROMIUM, EXAMPLE, HOG, _click, _wait, browser, running_dashboard  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="needs Debian's chromium at /usr/bin/chromium "
                                       "(apt-get install -y chromium chromium-driver; .ci/run does)")


def _priority_class(name: str, value: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def _pinned(name: str, node: str, cpu: str, priority: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"priorityClassName": priority, "nodeSelector": {"kubernetes.io/hostname": node},
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory) -> Cluster:
    """The tutorial's gang, a pod too big for any node, and a victim preempted on an idle worker."""
    c = create_cluster(tmp_path_factory.mktemp("dashviews"), "dashviews", config=(EXAMPLE / "kind.yaml").read_text())
    for name in ("resourceclaimtemplate", "workload", "podgroup", "jobset"):
        c.kubectl("apply", "-f", str(EXAMPLE / f"{name}.yaml")).check()
    c.kubectl("wait", "--for=condition=PodGroupScheduled", "podgroup/training-workers", "--timeout=60s").check()
    c.kubectl("apply", "-f", "-", input=json.dumps(HOG)).check()
    pods = c.kubectl("get", "pods", "-o", "json").check().json()["items"]
    used = {p["spec"].get("nodeName") for p in pods}
    nodes = c.kubectl("get", "nodes", "-o", "json").check().json()["items"]
    idle = next(n for n in nodes if n["metadata"]["name"] not in used and not n["spec"].get("taints"))
    name, cpu = idle["metadata"]["name"], idle["status"]["allocatable"]["cpu"]
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        _priority_class("dash-low", 10), _priority_class("dash-high", 1000),
        _pinned("victim", name, cpu, "dash-low")]})).check()
    c.kubectl("wait", "--for=condition=Ready", "pod/victim", "--timeout=60s").check()
    c.kubectl("apply", "-f", "-", input=json.dumps(_pinned("preemptor", name, cpu, "dash-high"))).check()
    c.kubectl("wait", "--for=condition=Ready", "pod/preemptor", "--timeout=60s").check()
    c.victim_node = name  # type: ignore[attr-defined]
    yield c
    c.phalanx("delete", "cluster", "--name", "dashviews")


def _shot(browser, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"dashboard-{name}.png"
    browser.save_screenshot(str(path))
    print(f"\nscreenshot: {path}")
    assert path.stat().st_size > 0


def _tab(browser, name: str) -> None:
    _click(browser, f'#tabs button[data-tab="{name}"]')
    _wait(browser, f"document.body.dataset.tab === '{name}'")


def test_timeline_shows_bindings_a_failure_and_a_preemption_linked_to_their_nodes(tutorial: Cluster, browser,
                                                                                  tmp_path):
    from selenium.webdriver.common.by import By

    pods = tutorial.kubectl("get", "pods", "-o", "json").check().json()["items"]
    gang = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods
            if (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == "training-workers"}
    member, node = sorted(gang.items())[0]

    with running_dashboard(tutorial) as url:
        browser.get(url)
        _wait(browser, "document.getElementById('status').dataset.state === 'live'")
        _tab(browser, "timeline")
        binding = f'#timeline-list li[data-category="binding"][data-object="Pod/default/{member}"]'
        _wait(browser, f"document.querySelector('{binding}')")
        entry = browser.find_element(By.CSS_SELECTOR, binding)
        assert entry.get_attribute("data-reason") == "Scheduled" and entry.get_attribute("data-nodes") == node
        _click(browser, binding)
        _wait(browser, f"window.__dashboard.highlightedNodes.join(',') === '{node}'")
        assert browser.find_element(By.ID, "map").get_attribute("data-highlighted") == node

        failed = '#timeline-list li[data-reason="FailedScheduling"][data-object="Pod/default/too-big"]'
        _wait(browser, f"document.querySelector('{failed}')")
        assert browser.find_element(By.CSS_SELECTOR, failed).get_attribute("data-category") == "failure"

        preempted = '#timeline-list li[data-reason="Preempted"][data-object="Pod/default/victim"]'
        _wait(browser, f"document.querySelector('{preempted}')")
        assert browser.find_element(By.CSS_SELECTOR, preempted).get_attribute("data-category") == "preemption"
        _click(browser, preempted)  # the victim is gone: its node comes from the event
        _wait(browser, f"window.__dashboard.highlightedNodes.join(',') === '{tutorial.victim_node}'")
        _shot(browser, tmp_path, "timeline")

        # Filtering by object keeps only that object's entries.
        browser.find_element(By.ID, "timeline-object").send_keys("too-big")
        _wait(browser, "[...document.querySelectorAll('#timeline-list li')].length > 0 && "
                       "[...document.querySelectorAll('#timeline-list li')].every(li => li.dataset.object === 'Pod/default/too-big')")


def test_metrics_view_charts_the_schedulers_figures(tutorial: Cluster, browser, tmp_path):
    from selenium.webdriver.common.by import By

    with running_dashboard(tutorial) as url:
        browser.get(url)
        _wait(browser, "document.getElementById('status').dataset.state === 'live'")
        _tab(browser, "metrics")
        _wait(browser, "Number(document.getElementById('metrics-chart').dataset.points) >= 1", timeout=30)
        cell = lambda key: browser.find_element(By.CSS_SELECTOR, f'td[data-metric="{key}"]').text  # noqa: E731
        assert int(cell("groupAttempts.scheduled")) >= 1  # the tutorial's gang
        # The pod too big for any node waits in one of the two queues of pods that failed.
        assert int(cell("pending.unschedulable")) + int(cell("pending.backoff")) >= 1
        assert cell("groupAttemptSeconds.p50").endswith(("ms", "s"))
        assert "scrape" in browser.find_element(By.ID, "metrics-note").text
        _shot(browser, tmp_path, "metrics")


def test_workloads_view_shows_the_jobset_its_jobs_and_their_pod_group(tutorial: Cluster, browser, tmp_path):
    from selenium.webdriver.common.by import By

    pods = tutorial.kubectl("get", "pods", "-o", "json").check().json()["items"]
    gang_nodes = sorted({p["spec"]["nodeName"] for p in pods
                         if (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == "training-workers"})
    claim = tutorial.kubectl("get", "resourceclaim", "-o", "json").check().json()["items"][0]
    device = claim["status"]["allocation"]["devices"]["results"][0]["device"]

    with running_dashboard(tutorial) as url:
        browser.get(url)
        _wait(browser, "document.getElementById('status').dataset.state === 'live'")
        _tab(browser, "workloads")
        jobset = '.tree-item[data-kind="jobset"][data-key="default/training-job"]'
        _wait(browser, f"document.querySelector('{jobset}')")
        assert browser.find_element(By.CSS_SELECTOR, jobset).get_attribute("data-jobs") == "3"
        jobs = browser.find_elements(By.CSS_SELECTOR, f'{jobset} > .tree-item[data-kind="job"]')
        assert [j.get_attribute("data-key") for j in jobs] == [f"default/training-job-workers-{i}" for i in range(3)]
        for job in jobs:
            (group,) = job.find_elements(By.CSS_SELECTOR, '.tree-item[data-kind="podgroup"]')
            assert group.get_attribute("data-key") == "default/training-workers"
            assert (group.get_attribute("data-scheduled"), group.get_attribute("data-pods")) == ("6", "6")

        _click(browser, f"{jobset} > .tree-line")
        assert browser.execute_script("return window.__dashboard.highlightedNodes") == gang_nodes
        assert browser.execute_script("return window.__dashboard.highlightedClaims") == \
            [f"default/{claim['metadata']['name']}"]
        shown = browser.execute_script(
            "const d = window.__dashboard; return d.highlightedNodes.flatMap(n => d.get('nodes', n).devices)"
            ".filter(x => d.highlightedClaims.includes(x.claim)).map(x => x.name)")
        assert shown == [device]
        _shot(browser, tmp_path, "workloads-jobset")

        _click(browser, f'{jobset} > .tree-item[data-key="default/training-job-workers-1"] > .tree-line')
        job_nodes = sorted({p["spec"]["nodeName"] for p in pods if p["metadata"]["name"].startswith("training-job-workers-1-")})
        assert browser.find_element(By.ID, "map").get_attribute("data-highlighted").split(",") == job_nodes


@pytest.fixture(scope="module")
def composite(tmp_path_factory) -> Cluster:
    config = (ROOT / "examples" / "clusters" / "phalanx-composite-1.37.yaml").read_text()
    c = create_cluster(tmp_path_factory.mktemp("dashcpg"), "dashcpg", config=config, kubernetes=None)
    for name in ("workload", "compositepodgroup", "podgroups", "jobset"):
        c.kubectl("apply", "-f", str(ROOT / "examples" / "composite-pod-group" / f"{name}.yaml")).check()
    for group in ("trainer-leader", "trainer-workers"):
        c.kubectl("wait", "--for=condition=PodGroupInitiallyScheduled", f"podgroup/{group}", "--timeout=60s").check()
    yield c
    c.phalanx("delete", "cluster", "--name", "dashcpg")


def test_a_composite_pod_group_tree_on_a_1_37_cluster(composite: Cluster, browser, tmp_path):
    from selenium.webdriver.common.by import By

    nodes = composite.kubectl("get", "nodes", "-o", "json").check().json()["items"]
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"].get("topology.kubernetes.io/zone") for n in nodes}
    pods = composite.kubectl("get", "pods", "-o", "json").check().json()["items"]
    tree_nodes = sorted({p["spec"]["nodeName"] for p in pods})
    (zone,) = {zone_of[n] for n in tree_nodes}

    with running_dashboard(composite) as url:
        browser.get(url)
        _wait(browser, "document.getElementById('status').dataset.state === 'live'")
        assert browser.execute_script("return window.__dashboard.doc.podGroupAPI") == "scheduling.k8s.io/v1beta1"
        _tab(browser, "workloads")
        tree = '.tree-item[data-kind="cpg"][data-key="default/trainer"]'
        _wait(browser, f"document.querySelector('{tree}') && document.querySelector('{tree}').dataset.domain === '{zone}'")
        children = browser.find_elements(By.CSS_SELECTOR, f'{tree} > .tree-item[data-kind="podgroup"]')
        assert [c.get_attribute("data-key") for c in children] == ["default/trainer-leader", "default/trainer-workers"]
        assert [c.get_attribute("data-scheduled") for c in children] == ["1", "4"]
        assert "Gang minGroupCount 2" in browser.find_element(By.CSS_SELECTOR, f"{tree} > .tree-line").text

        _click(browser, f"{tree} > .tree-line")
        canvas = browser.find_element(By.ID, "map")
        assert canvas.get_attribute("data-highlighted").split(",") == tree_nodes
        assert canvas.get_attribute("data-domains") == "1"  # the zone's box on the map
        assert browser.execute_script("return window.__dashboard.highlightedDomains") == \
            [{"key": "topology.kubernetes.io/zone", "value": zone}]
        _shot(browser, tmp_path, "composite-tree")
