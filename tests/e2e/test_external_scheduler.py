"""A cluster whose built-in scheduler is off (`scheduler: {enabled: false}` in phalanx's config),
scheduled by `phalanx scheduler --kubeconfig` running as a process of its own, as kube-scheduler runs
beside a real control plane."""

from __future__ import annotations

import subprocess
import time

from .conftest import PHALANX, POD_SMOKE, create_cluster
from .test_tutorial import poll

CONFIG = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
name: nosched
scheduler:
  enabled: false
"""


def test_pods_wait_for_a_scheduler_then_an_external_one_binds_them(tmp_path):
    c = create_cluster(tmp_path, "nosched", config=CONFIG)
    try:
        c.kubectl("apply", "-n", "default", "-f", "-", input=POD_SMOKE).check()
        time.sleep(2)  # nothing binds it meanwhile: no scheduler runs in the cluster
        assert c.kubectl("get", "pod", "smoke", "-n", "default", "-o", "jsonpath={.spec.nodeName}").check().out == ""
        scheduler = subprocess.Popen([str(PHALANX), "scheduler", "--kubeconfig", str(c.kubeconfig)], env=c.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            node = poll(lambda: c.kubectl("get", "pod", "smoke", "-n", "default", "-o",
                                          "jsonpath={.spec.nodeName}").check().out, timeout=60)
            assert node == "nosched-worker"
            events = c.kubectl("get", "events", "-n", "default", "--field-selector",
                               "involvedObject.name=smoke,reason=Scheduled", "-o", "jsonpath={.items[*].message}")
            assert "Successfully assigned default/smoke to nosched-worker" in events.check().out
        finally:
            scheduler.terminate()
            scheduler.wait(timeout=30)
    finally:
        c.phalanx("delete", "cluster", "--name", c.name)
