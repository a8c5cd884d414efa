"""`phalanx dashboard` in a real headless Chromium, on the seed tutorial, as a person uses it.

Starts a cluster from examples/dra-integration/kind.yaml, applies the tutorial's manifests, runs
`phalanx dashboard --name ...` as a user does, logs in with the printed URL, and asserts on what the
page renders: the `training-workers` PodGroup scheduled with 6 pods, its node highlighted on the map
when it is selected, the claim `allocated,reserved` for the PodGroup, a pending pod's reason as
`phalanx explain` gives it, and the live update when the JobSet is deleted. Screenshots go to the
test's tmp dir (printed; `pytest -s` shows the paths).

Chromium is Debian's (`chromium` + `chromium-driver`, installed by .ci/run); nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest

from .conftest import PHALANX, Cluster, create_cluster

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-integration"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="needs Debian's chromium at /usr/bin/chromium "
                                       "(apt-get install -y chromium chromium-driver; .ci/run does)")

HOG = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "too-big", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1000"}}}]}}


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory) -> Cluster:
    tmp = tmp_path_factory.mktemp("dashboard")
    c = create_cluster(tmp, "dash", config=(EXAMPLE / "kind.yaml").read_text())
    for name in ("resourceclaimtemplate", "workload", "podgroup", "jobset"):
        c.kubectl("apply", "-f", str(EXAMPLE / f"{name}.yaml")).check()
    c.kubectl("wait", "--for=condition=PodGroupScheduled", "podgroup/training-workers", "--timeout=60s").check()
    c.kubectl("apply", "-f", "-", input=json.dumps(HOG)).check()
    yield c
    c.phalanx("delete", "cluster", "--name", "dash")


@contextlib.contextmanager
def running_dashboard(cluster: Cluster):
    """`phalanx dashboard --name NAME` in a subprocess, as a user starts it; the login URL it prints."""
    proc = subprocess.Popen([str(PHALANX), "dashboard", "--name", cluster.name, "--kubeconfig", str(cluster.kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env)
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("open http://127.0.0.1:"):
                url = line.split()[1]
                break
        assert url and "token=" in url, proc.stderr.read() if proc.stderr else ""
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def dashboard_url(tutorial: Cluster):
    with running_dashboard(tutorial) as url:
        yield url


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-proxy-server", "--window-size=1400,900", f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=str(CHROMEDRIVER)))
    yield driver
    driver.quit()


def _wait(driver, script: str, timeout: float = 60):
    """Wait until the page's JavaScript expression is truthy; its value."""
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(f"return {script}"))


def _row(driver, kind: str, key: str):
    from selenium.webdriver.common.by import By
    return driver.find_element(By.CSS_SELECTOR, f'tr[data-kind="{kind}"][data-key="{key}"]')


def _click(driver, css: str) -> None:
    """Click what `css` selects, finding it again if a live update replaced it meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    for _ in range(5):
        try:
            driver.find_element(By.CSS_SELECTOR, css).click()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{css} kept being replaced")


def test_the_tutorial_gang_its_node_and_its_claim(tutorial: Cluster, dashboard_url: str, browser, tmp_path):
    from selenium.webdriver.common.by import By

    pods = tutorial.kubectl("get", "pods", "-o", "json").check().json()["items"]
    gang = [p for p in pods if (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == "training-workers"]
    assert len(gang) == 6
    gang_nodes = sorted({p["spec"]["nodeName"] for p in gang})
    claim = tutorial.kubectl("get", "resourceclaim", "-o", "json").check().json()["items"][0]["metadata"]["name"]

    browser.get(dashboard_url)
    _wait(browser, "document.querySelector('tr[data-key=\"default/training-workers\"][data-scheduled=\"6\"]')")
    assert browser.find_element(By.ID, "status").get_attribute("data-state") == "live"
    row = _row(browser, "podgroup", "default/training-workers")
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    assert cells[:5] == ["default/training-workers", "Gang", "6", "6", "0"]
    assert cells[5].startswith("PodGroupScheduled=True")

    # Nothing is highlighted until the PodGroup is selected; then exactly its pods' nodes are.
    canvas = browser.find_element(By.ID, "map")
    assert canvas.get_attribute("data-highlighted") == ""
    _click(browser, 'tr[data-kind="podgroup"][data-key="default/training-workers"]')
    assert canvas.get_attribute("data-highlighted").split(",") == gang_nodes
    assert browser.execute_script("return window.__dashboard.highlightedNodes") == gang_nodes
    shot = tmp_path / "dashboard-training-workers.png"
    browser.save_screenshot(str(shot))
    print(f"\nscreenshot: {shot}")
    assert shot.stat().st_size > 0

    # The one claim: allocated and reserved for the PodGroup, its device on the gang's node.
    claim_row = _row(browser, "claim", f"default/{claim}")
    assert claim_row.get_attribute("data-state") == "allocated,reserved"
    assert claim_row.get_attribute("data-reserved-for") == "podgroups/training-workers"
    _click(browser, f'tr[data-kind="claim"][data-key="default/{claim}"]')
    assert canvas.get_attribute("data-highlighted").split(",") == gang_nodes

    # Why the oversized pod waits: what `phalanx explain pod` says.
    _wait(browser, "document.querySelector('li[data-pod=\"default/too-big\"]')")
    _click(browser, 'li[data-pod="default/too-big"]')
    why = _wait(browser, "document.getElementById('why').dataset.pod === 'default/too-big' && "
                         "document.getElementById('why').textContent")
    explained = tutorial.phalanx("explain", "pod", "too-big").check().out
    assert "Insufficient cpu" in why and "Insufficient cpu" in explained
    assert why.splitlines()[:3] == explained.splitlines()[:3]

    # Live: deleting the JobSet empties the gang on the page without a reload.
    tutorial.kubectl("delete", "jobset", "training-job", "--wait=false").check()
    _wait(browser, "document.querySelector('tr[data-key=\"default/training-workers\"][data-scheduled=\"0\"]')")
    browser.save_screenshot(str(tmp_path / "dashboard-after-delete.png"))


# -- a cluster with topology labels: 2 zones x 2 racks x 3 nodes ---------------------------------------

TOPOLOGY_CLUSTER = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
name: dashtopo
featureGates: {GenericWorkload: true, GangScheduling: true, TopologyAwareWorkloadScheduling: true}
runtimeConfig: {api/alpha: "true"}
nodePools:
- name: cp
  role: control-plane
- name: w
  count: 12
  labels:
    topology.kubernetes.io/zone: "zone-{i//6}"
    example.com/rack: "rack-{i//3}"
  capacity: {cpu: "4", memory: 16Gi}
"""


def gang(name: str, size: int) -> str:
    """A gang of `size` pods of 3 CPUs (one per 4-CPU node) that must share one rack."""
    docs = [{"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "default"},
             "spec": {"schedulingConstraints": {"topology": [{"key": "example.com/rack"}]},
                      "schedulingPolicy": {"gang": {"minCount": size}}}}]
    docs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": "default"},
              "spec": {"schedulingGroup": {"podGroupName": name},
                       "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}]}}
             for i in range(size)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


@pytest.fixture(scope="module")
def topology(tmp_path_factory) -> Cluster:
    c = create_cluster(tmp_path_factory.mktemp("dashtopo"), "dashtopo", config=TOPOLOGY_CLUSTER, kubernetes=None)
    c.kubectl("apply", "-f", "-", input=gang("racked", 3)).check()
    c.kubectl("wait", "--for=condition=PodGroupScheduled", "podgroup/racked", "--timeout=60s").check()
    c.kubectl("apply", "-f", "-", input=gang("too-wide", 4)).check()
    yield c
    c.phalanx("delete", "cluster", "--name", "dashtopo")


def test_levels_from_labels_a_gang_inside_one_rack_and_why_a_wider_one_waits(topology: Cluster, browser, tmp_path):
    from selenium.webdriver.common.by import By

    nodes = topology.kubectl("get", "nodes", "-o", "json").check().json()["items"]
    rack_of = {n["metadata"]["name"]: n["metadata"]["labels"].get("example.com/rack") for n in nodes}
    pods = topology.kubectl("get", "pods", "-o", "json").check().json()["items"]
    racked_nodes = sorted(p["spec"]["nodeName"] for p in pods if p["metadata"]["name"].startswith("racked-"))
    assert len({rack_of[n] for n in racked_nodes}) == 1

    with running_dashboard(topology) as url:
        browser.get(url)
        _wait(browser, "document.querySelector('tr[data-key=\"default/racked\"][data-scheduled=\"3\"]')")
        assert browser.execute_script("return window.__dashboard.doc.levels") == \
            ["topology.kubernetes.io/zone", "example.com/rack"]
        assert browser.find_element(By.ID, "levels").text == "topology.kubernetes.io/zone → example.com/rack → node"
        _click(browser, 'tr[data-kind="podgroup"][data-key="default/racked"]')
        assert browser.find_element(By.ID, "map").get_attribute("data-highlighted").split(",") == racked_nodes
        browser.save_screenshot(str(tmp_path / "dashboard-topology-racked.png"))
        print(f"\nscreenshot: {tmp_path / 'dashboard-topology-racked.png'}")

        # The wider gang cannot fit one rack: its pods wait, and the page says why as explain does.
        _wait(browser, "document.querySelector('tr[data-key=\"default/too-wide\"][data-condition=\"False\"]')")
        wide = _row(browser, "podgroup", "default/too-wide")
        assert wide.get_attribute("data-pending") == "4"
        _click(browser, 'li[data-pod="default/too-wide-0"]')
        why = _wait(browser, "document.getElementById('why').dataset.pod === 'default/too-wide-0' && "
                             "document.getElementById('why').textContent")
        explained = topology.phalanx("explain", "pod", "too-wide-0").check().out
        assert why.splitlines()[:3] == explained.splitlines()[:3]
        assert "pod group: too-wide" in why
