"""No request can freeze the control plane: pathological input is refused at once, and the API
server (one event loop shared with the scheduler and controllers) answers the next request."""

from __future__ import annotations

import time

import pytest

from .conftest import Cluster

QUANTITY_MESSAGE = ("quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
# Generous "does not hang" bound for one kubectl round trip that should take milliseconds.
ROUND_TRIP_BOUND_SECONDS = 20


def _pod_with_cpu_request(name: str, cpu: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: c
    image: busybox:1
    resources:
      requests: {{cpu: "{cpu}"}}
"""


@pytest.mark.parametrize("cpu", ["1e999999999", "1e10000000"])
def test_a_huge_exponent_is_refused_and_the_server_stays_ready(cluster: Cluster, ns: str, cpu: str):
    started = time.monotonic()
    r = cluster.kubectl("create", "-n", ns, "-v=6", "-f", "-", input=_pod_with_cpu_request("huge", cpu),
                        timeout=ROUND_TRIP_BOUND_SECONDS)
    assert r.returncode != 0
    assert 'verb="POST"' in r.stderr and 'status="422 Unprocessable Entity"' in r.stderr
    assert (f'The Pod "huge" is invalid: spec.containers[0].resources.requests[cpu]: '
            f'Invalid value: "{cpu}": {QUANTITY_MESSAGE}') in r.stderr

    ready = cluster.kubectl("get", "--raw", "/readyz", timeout=ROUND_TRIP_BOUND_SECONDS).check()
    assert ready.out.strip() == "ok"
    assert time.monotonic() - started < ROUND_TRIP_BOUND_SECONDS
    assert cluster.kubectl("get", "pods", "-n", ns, "-o", "name").check().out.strip() == ""
