"""The simulated kubelet as a kubectl user meets it: Jobs that complete, `kubectl run --rm -i`,
logs, exec on a simulated node, CrashLoopBackOff and graceful deletion."""

from __future__ import annotations

import json
import time

from .conftest import Cluster


def poll(fn, timeout: float = 60.0, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value {value!r}")
        time.sleep(interval)


def test_job_with_sleep_completes_and_wait_returns(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "create", "job", "pi", "--image=busybox", "--", "sleep", "2").check()
    out = cluster.kubectl("-n", ns, "wait", "--for=condition=complete", "job/pi", "--timeout=60s", timeout=90).check()
    assert "condition met" in out.stdout
    logs = cluster.kubectl("-n", ns, "logs", "job/pi").check().stdout
    assert 'container "pi" exited with code 0 (Completed)' in logs


def test_job_with_an_unknown_program_completes_as_kwok(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "create", "job", "perl", "--image=perl", "--", "perl", "-e", "1").check()
    cluster.kubectl("-n", ns, "wait", "--for=condition=complete", "job/perl", "--timeout=60s", timeout=90).check()


def test_run_rm_interactive_echo_prints_and_removes_the_pod(cluster: Cluster, ns: str):
    out = cluster.kubectl("-n", ns, "run", "tmp", "--rm", "-i", "--restart=Never", "--image=busybox", "--",
                          "echo", "hi", timeout=90)
    assert "hi" in out.stdout.splitlines(), (out.stdout, out.stderr)
    assert cluster.kubectl("-n", ns, "get", "pod", "tmp").returncode != 0  # removed


def test_logs_of_a_pod_that_has_not_started_say_waiting(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "run", "big", "--image=busybox", "--overrides",
                    json.dumps({"spec": {"nodeSelector": {"no": "such-node"}}})).check()
    out = cluster.kubectl("-n", ns, "logs", "big")
    assert out.returncode != 0
    assert 'container "big" in pod "big" is waiting to start' in out.stderr


def test_logs_options_and_exec_on_a_simulated_node(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "run", "web", "--image=nginx").check()
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s", timeout=90).check()
    logs = cluster.kubectl("-n", ns, "logs", "web", "--timestamps").check().stdout.splitlines()
    assert len(logs) == 1 and logs[0].endswith('container "web" started (image nginx) on simulated node '
                                               f'"{cluster.name}-worker"')
    assert logs[0][:4].isdigit() and "T" in logs[0].split()[0]
    assert cluster.kubectl("-n", ns, "logs", "web", "--tail=0").check().stdout == ""
    prev = cluster.kubectl("-n", ns, "logs", "web", "--previous")
    assert 'previous terminated container "web" in pod "web" not found' in prev.stderr
    for args in (["exec", "web", "--", "ls"], ["attach", "web"], ["port-forward", "web", "18080:80"],
                 ["cp", "web:/etc/hostname", "/tmp/phalanx-cp-target"]):
        out = cluster.kubectl("-n", ns, *args, timeout=30)
        assert out.returncode != 0 and "is simulated by phalanx and runs no containers" in out.stderr, out.stderr


def test_crash_loop_back_off_with_events(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "run", "crash", "--image=busybox", "--", "sh", "-c", "exit 1").check()

    def status():
        rows = cluster.kubectl("-n", ns, "get", "pod", "crash", "--no-headers").check().stdout.split()
        return rows[2] if len(rows) > 2 else ""

    poll(lambda: status() == "CrashLoopBackOff", timeout=60)
    pod = cluster.kubectl("-n", ns, "get", "pod", "crash", "-o", "json").check().json()
    cs = pod["status"]["containerStatuses"][0]
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["state"]["waiting"]["message"].startswith("back-off 10s restarting failed container=crash pod=crash_")
    # the next back-off doubles
    poll(lambda: "back-off 20s" in cluster.kubectl("-n", ns, "get", "pod", "crash", "-o",
                                                   "jsonpath={.status.containerStatuses[0].state.waiting.message}").stdout,
         timeout=60)
    events = cluster.kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=crash",
                             "-o", "json").check().json()["items"]
    reasons = {e["reason"] for e in events}
    assert {"Scheduled", "Pulling", "Pulled", "Created", "Started", "BackOff"} <= reasons
    assert "exited with code 1 (Error)" in cluster.kubectl("-n", ns, "logs", "crash", "--previous").check().stdout


def test_deleted_pod_goes_not_ready_with_terminated_states_before_it_goes(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "run", "web", "--image=nginx").check()
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s", timeout=90).check()
    watch = cluster.kubectl_popen("-n", ns, "get", "pod", "web", "--watch", "--output-watch-events", "-o", "json",
                                  "--request-timeout=90s")
    try:
        time.sleep(1)
        cluster.kubectl("-n", ns, "delete", "pod", "web", timeout=90).check()
        seen = []
        for line in watch.stdout:  # type: ignore[union-attr]
            seen.append(line)
            if '"DELETED"' in line[:40].replace(" ", ""):
                break
    finally:
        watch.kill()
    text = "".join(seen)
    decoder, events, pos = json.JSONDecoder(), [], 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = decoder.raw_decode(text, pos)
        events.append(obj)
    states = [({c["type"]: c["status"] for c in e["object"]["status"]["conditions"]}["Ready"],
               next(iter(e["object"]["status"]["containerStatuses"][0]["state"]))) for e in events]
    assert ("False", "terminated") in states
    assert states.index(("False", "terminated")) < len(states) - 1 or events[-1]["type"] == "DELETED"
    assert events[-1]["type"] == "DELETED"


def test_logs_follow_ends_when_the_container_exits(cluster: Cluster, ns: str):
    cluster.kubectl("-n", ns, "run", "nap", "--restart=Never", "--image=busybox", "--",
                    "sh", "-c", "echo going to sleep; sleep 3").check()
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/nap", "--timeout=60s", timeout=90).check()
    out = cluster.kubectl("-n", ns, "logs", "-f", "nap", timeout=60).check().stdout.splitlines()
    assert out[1] == "going to sleep"
    assert out[-1] == '[phalanx] container "nap" exited with code 0 (Completed)'
