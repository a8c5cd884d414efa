"""The workload controllers (Job, JobSet, Deployment/ReplicaSet) driven by the real kubectl.

Every assertion reads kubectl's own output: `get` tables (parsed by their header's column
positions, so blank cells stay blank), `-o jsonpath`, `wait`, `rollout status`, `describe`.

Pods are ended through the simulated kubelet, as KWOK stages are driven: the pod annotations
`phalanx.dev/run-for` and `phalanx.dev/exit-code`, set in a template (every pod of it) or with
`kubectl annotate` on one running pod (that pod only; the kubelet reads them on each sync). Waits
use `kubectl wait` or `poll` with generous timeouts; nothing sleeps a fixed time.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import yaml

from .conftest import Cluster, create_cluster

MANIFESTS = Path(__file__).resolve().parent / "manifests"
RUN_FOR = "phalanx.dev/run-for"
EXIT_CODE = "phalanx.dev/exit-code"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
RJOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
WAIT = "--timeout=60s"


# -- helpers --------------------------------------------------------------------------------------
def poll(fn, timeout: float = 60.0, interval: float = 0.2):
    """Call `fn` until it returns something truthy (returned) or `timeout` passes (last value)."""
    deadline = time.monotonic() + timeout
    while True:
        last = fn()
        if last or time.monotonic() > deadline:
            return last
        time.sleep(interval)


def parse_table(text: str) -> list[dict[str, str]]:
    """kubectl's human table as one dict per row, cut at the header's column starts."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    cols = [(m.group(), m.start()) for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    rows = []
    for line in lines[1:]:
        ends = [start for _, start in cols[1:]] + [None]
        rows.append({name: line[start:end].strip() for (name, start), end in zip(cols, ends)})
    return rows


def get_table(cluster: Cluster, ns: str, *args: str) -> list[dict[str, str]]:
    return parse_table(cluster.kubectl("get", "-n", ns, *args).check().out)


def jsonpath(cluster: Cluster, ns: str, target: str, path: str) -> str:
    return cluster.kubectl("get", "-n", ns, target, "-o", f"jsonpath={path}").check().out


def apply(cluster: Cluster, ns: str, *objs: dict) -> list[str]:
    out = cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(objs)).check().out
    return out.strip().splitlines()


def wait(cluster: Cluster, ns: str, *args: str) -> str:
    return cluster.kubectl("wait", "-n", ns, *args, WAIT, timeout=90).check().out


def end_pods(cluster: Cluster, ns: str, selector: str, exit_code: int = 0) -> None:
    """Tell the kubelet that the containers of these pods exit now, with `exit_code`."""
    cluster.kubectl("annotate", "pods", "-n", ns, "-l", selector, "--overwrite",
                    f"{RUN_FOR}=0s", f"{EXIT_CODE}={exit_code}").check()


def pod_names(cluster: Cluster, ns: str, selector: str, phase: str | None = None) -> list[str]:
    args = ["get", "pods", "-n", ns, "-l", selector, "-o", "jsonpath={.items[*].metadata.name}"]
    if phase:
        args += ["--field-selector", f"status.phase={phase}"]
    return sorted(cluster.kubectl(*args).check().out.split())


def event_reasons(cluster: Cluster, ns: str, name: str) -> list[str]:
    """The reasons of the events about object `name`, as `kubectl get events` lists them."""
    return cluster.kubectl("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}",
                           "-o", "jsonpath={.items[*].reason}").check().out.split()


def pod_spec(*, annotations: dict | None = None, restart_policy: str | None = "Never",
             container: str = "c") -> dict:
    spec: dict = {"terminationGracePeriodSeconds": 0, "containers": [{"name": container, "image": "busybox"}]}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    template: dict = {"spec": spec}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return template


def job(name: str, *, run_for: str | None = None, exit_code: int | None = None,
        restart_policy: str = "Never", **spec) -> dict:
    annotations = {}
    if run_for is not None:
        annotations[RUN_FOR] = run_for
    if exit_code is not None:
        annotations[EXIT_CODE] = str(exit_code)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "template": pod_spec(annotations=annotations, restart_policy=restart_policy)}}


def replicated_job(name: str, replicas: int, *, run_for: str | None = None, exit_code: int | None = None,
                   restart_policy: str | None = "Never", **job_spec) -> dict:
    annotations = {}
    if run_for is not None:
        annotations[RUN_FOR] = run_for
    if exit_code is not None:
        annotations[EXIT_CODE] = str(exit_code)
    return {"name": name, "replicas": replicas,
            "template": {"spec": {**job_spec, "template": pod_spec(annotations=annotations,
                                                                   restart_policy=restart_policy,
                                                                   container=name)}}}


def jobset(name: str, *rjobs: dict, **spec) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {**spec, "replicatedJobs": list(rjobs)}}


JOB_COLUMNS = ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
JOBSET_COLUMNS = ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE"]


def job_row(cluster: Cluster, ns: str, name: str) -> dict[str, str]:
    rows = get_table(cluster, ns, "job", name)
    assert list(rows[0]) == JOB_COLUMNS
    return rows[0]


def jobset_row(cluster: Cluster, ns: str, name: str) -> dict[str, str]:
    rows = get_table(cluster, ns, "jobset", name)
    assert list(rows[0]) == JOBSET_COLUMNS
    return rows[0]


# -- Job --------------------------------------------------------------------------------------------
def test_job_completions_succeed(cluster: Cluster, ns: str):
    assert apply(cluster, ns, job("x", completions=3, parallelism=3, run_for="1s")) == ["job.batch/x created"]
    assert wait(cluster, ns, "--for=condition=Complete", "job/x").strip() == "job.batch/x condition met"
    row = job_row(cluster, ns, "x")
    assert (row["STATUS"], row["COMPLETIONS"]) == ("Complete", "3/3")
    assert jsonpath(cluster, ns, "job/x", '{.status.conditions[?(@.type=="Complete")].reason}') == \
        "CompletionsReached"
    pods = get_table(cluster, ns, "pods", "-l", "batch.kubernetes.io/job-name=x")
    assert len(pods) == 3 and all((p["READY"], p["STATUS"]) == ("0/1", "Completed") for p in pods), pods
    assert all(p["NAME"].startswith("x-") for p in pods)
    desc = cluster.kubectl("describe", "job", "x", "-n", ns).check().out
    assert re.search(r"Pods Statuses:\s+0 Active \(0 Ready\) / 3 Succeeded / 0 Failed", desc), desc
    assert poll(lambda: "Job completed" in cluster.kubectl("describe", "job", "x", "-n", ns).check().out)


def test_job_carries_its_template_labels(cluster: Cluster, ns: str):
    apply(cluster, ns, job("lbl"))
    uid = jsonpath(cluster, ns, "job/lbl", "{.metadata.uid}")
    labels = json.loads(jsonpath(cluster, ns, "job/lbl", "{.metadata.labels}") or "{}")
    assert labels == {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "lbl",
                      "controller-uid": uid, "job-name": "lbl"}
    assert cluster.kubectl("get", "jobs", "-n", ns, "-l", "job-name=lbl", "-o", "name").check().out.strip() == \
        "job.batch/lbl"


@pytest.mark.parametrize("restart_policy", ["Never", "OnFailure"])
def test_job_backoff_limit_zero_fails_on_first_failure(cluster: Cluster, ns: str, restart_policy: str):
    apply(cluster, ns, job("f", backoffLimit=0, run_for="1s", exit_code=1, restart_policy=restart_policy))
    assert wait(cluster, ns, "--for=condition=Failed", "job/f").strip() == "job.batch/f condition met"
    assert jsonpath(cluster, ns, "job/f", '{.status.conditions[?(@.type=="Failed")].reason}') == \
        "BackoffLimitExceeded"
    assert jsonpath(cluster, ns, "job/f", '{.status.conditions[?(@.type=="Failed")].message}') == \
        "Job has reached the specified backoff limit"
    assert jsonpath(cluster, ns, "job/f", "{.status.failed}") == "1"
    row = job_row(cluster, ns, "f")
    assert (row["STATUS"], row["COMPLETIONS"]) == ("Failed", "0/1")
    if restart_policy == "Never":
        # the one pod failed and was not replaced
        pods = get_table(cluster, ns, "pods", "-l", "job-name=f")
        assert [(p["READY"], p["STATUS"]) for p in pods] == [("0/1", "Error")], pods
    else:
        # the container's first restart counts; the still-running pod is deleted
        assert poll(lambda: pod_names(cluster, ns, "job-name=f") == []), pod_names(cluster, ns, "job-name=f")
    assert event_reasons(cluster, ns, "f").count("SuccessfulCreate") == 1
    assert poll(lambda: "BackoffLimitExceeded" in event_reasons(cluster, ns, "f")), event_reasons(cluster, ns, "f")


def test_indexed_job_recreates_a_failed_index(cluster: Cluster, ns: str):
    # How index 1 fails: its pod alone is annotated with run-for=0s/exit-code=1, so the simulated
    # kubelet ends its container with exit code 1 and, restartPolicy being Never, reports the pod
    # Failed (terminated state, exit code, finishedAt), exactly as it reports any failing container.
    # The Job controller then sees the same input as from a real node. The alternatives are less
    # faithful: patching the pod status by hand impersonates the kubelet (and races it), and
    # `kubectl delete pod --force` exercises deletion, which counts as a failure only under
    # podReplacementPolicy TerminatingOrFailed, not the failed-pod path.
    apply(cluster, ns, job("idx", completionMode="Indexed", completions=3, parallelism=3))
    wait(cluster, ns, "--for=jsonpath={.status.ready}=3", "job/idx")
    pods = get_table(cluster, ns, "pods", "-l", "job-name=idx", "-L", COMPLETION_INDEX)
    by_index = {p["JOB-COMPLETION-INDEX"]: p["NAME"] for p in pods}
    assert sorted(by_index) == ["0", "1", "2"]
    assert all(name.startswith(f"idx-{i}-") for i, name in by_index.items()), by_index
    failed = by_index["1"]

    end_pods(cluster, ns, f"job-name=idx,{COMPLETION_INDEX}=1", exit_code=1)
    wait(cluster, ns, "--for=jsonpath={.status.phase}=Failed", f"pod/{failed}")
    assert jsonpath(cluster, ns, f"pod/{failed}", "{.status.containerStatuses[0].state.terminated.exitCode}") == "1"
    wait(cluster, ns, "--for=jsonpath={.status.failed}=1", "job/idx")

    # the index comes back (after the Job controller's 10s pod-failure backoff)
    def replacement():
        names = [n for n in pod_names(cluster, ns, f"job-name=idx,{COMPLETION_INDEX}=1", phase="Running")
                 if n != failed]
        return names[0] if names else None
    new = poll(replacement, timeout=60)
    assert new and new.startswith("idx-1-"), pod_names(cluster, ns, "job-name=idx")
    assert jsonpath(cluster, ns, f"pod/{new}", "{.spec.hostname}") == "idx-1"
    assert json.loads(jsonpath(cluster, ns, f"pod/{new}", "{.metadata.annotations}"))[COMPLETION_INDEX] == "1"
    rows = get_table(cluster, ns, "pods", "-l", "job-name=idx", "-L", COMPLETION_INDEX)
    assert sorted((r["JOB-COMPLETION-INDEX"], r["STATUS"]) for r in rows) == \
        [("0", "Running"), ("1", "Error"), ("1", "Running"), ("2", "Running")], rows

    # every index then succeeds: the failure stays counted, the Job completes
    end_pods(cluster, ns, "job-name=idx", exit_code=0)
    wait(cluster, ns, "--for=condition=Complete", "job/idx")
    assert jsonpath(cluster, ns, "job/idx", "{.status.completedIndexes} {.status.succeeded} {.status.failed}") == \
        "0-2 3 1"
    row = job_row(cluster, ns, "idx")
    assert (row["STATUS"], row["COMPLETIONS"]) == ("Complete", "3/3")


def test_job_suspend_and_resume(cluster: Cluster, ns: str):
    apply(cluster, ns, job("s", completions=4, parallelism=2))
    wait(cluster, ns, "--for=jsonpath={.status.ready}=2", "job/s")
    before = pod_names(cluster, ns, "job-name=s")
    assert len(before) == 2

    out = cluster.kubectl("patch", "job", "s", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
    assert out.check().out.strip() == "job.batch/s patched"
    assert wait(cluster, ns, "--for=condition=Suspended", "job/s").strip() == "job.batch/s condition met"
    assert jsonpath(cluster, ns, "job/s", '{.status.conditions[?(@.type=="Suspended")].reason}') == "JobSuspended"
    assert poll(lambda: pod_names(cluster, ns, "job-name=s") == []), pod_names(cluster, ns, "job-name=s")
    row = job_row(cluster, ns, "s")
    assert (row["STATUS"], row["COMPLETIONS"]) == ("Suspended", "0/4")
    assert jsonpath(cluster, ns, "job/s", "{.status.active}") == ""

    cluster.kubectl("patch", "job", "s", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}').check()
    wait(cluster, ns, "--for=condition=Suspended=False", "job/s")
    assert jsonpath(cluster, ns, "job/s", '{.status.conditions[?(@.type=="Suspended")].reason}') == "JobResumed"
    after = poll(lambda: (lambda n: n if len(n) == 2 else None)(pod_names(cluster, ns, "job-name=s", "Running")))
    assert after and not set(after) & set(before), (before, after)
    row = job_row(cluster, ns, "s")
    assert (row["STATUS"], row["COMPLETIONS"]) == ("Running", "0/4")
    events = poll(lambda: (lambda r: r if "Resumed" in r else None)(event_reasons(cluster, ns, "s")))
    assert events and "Suspended" in events and events.count("SuccessfulDelete") == 2, events


# -- JobSet ---------------------------------------------------------------------------------------
def test_jobset_tutorial_shape(cluster: Cluster, ns: str):
    """The tutorial's JobSet without DRA: one replicatedJob `workers`, 3 replicas x 2 completions."""
    js = jobset("train", replicated_job("workers", 3, restart_policy=None, completions=2, parallelism=2,
                                        backoffLimit=0))
    assert apply(cluster, ns, js) == ["jobset.jobset.x-k8s.io/train created"]
    sel = f"{JOBSET_NAME}=train"

    def six_running():
        rows = get_table(cluster, ns, "pods", "-l", sel)
        return rows if len(rows) == 6 and all((r["READY"], r["STATUS"]) == ("1/1", "Running") for r in rows) else None
    pods = poll(six_running)
    assert pods, get_table(cluster, ns, "pods", "-l", sel)
    names = sorted(p["NAME"] for p in pods)
    for j in range(3):
        for i in range(2):
            assert sum(n.startswith(f"train-workers-{j}-{i}-") for n in names) == 1, names

    jobs = get_table(cluster, ns, "jobs", "-l", sel)
    assert list(jobs[0]) == JOB_COLUMNS
    assert [(r["NAME"], r["STATUS"], r["COMPLETIONS"]) for r in jobs] == \
        [(f"train-workers-{j}", "Running", "0/2") for j in range(3)]

    pod_labels = cluster.kubectl("get", "pods", "-n", ns, "-l", f"{sel},{RJOB_NAME}=workers", "-o",
                                 "jsonpath={range .items[*]}{.metadata.labels.jobset\\.sigs\\.k8s\\.io/job-index}"
                                 "/{.metadata.labels.batch\\.kubernetes\\.io/job-completion-index}"
                                 " {.spec.hostname}.{.spec.subdomain} {.spec.restartPolicy}\n{end}").check().out
    assert sorted(pod_labels.splitlines()) == [f"{j}/{i} train-workers-{j}-{i}.train OnFailure"
                                               for j in range(3) for i in range(2)]
    uid = jsonpath(cluster, ns, "jobset/train", "{.metadata.uid}")
    for label, want in [("jobset-uid", uid), ("replicatedjob-replicas", "3"), ("global-replicas", "3"),
                        ("restart-attempt", "0")]:
        got = jsonpath(cluster, ns, "job/train-workers-1", f"{{.metadata.labels.jobset\\.sigs\\.k8s\\.io/{label}}}")
        assert got == want, label

    svc = get_table(cluster, ns, "service", "train")
    assert (svc[0]["TYPE"], svc[0]["CLUSTER-IP"]) == ("ClusterIP", "None")
    assert jsonpath(cluster, ns, "service/train", "{.spec.selector} {.spec.publishNotReadyAddresses}") == \
        '{"jobset.sigs.k8s.io/jobset-name":"train"} true'
    assert jsonpath(cluster, ns, "service/train", "{.metadata.ownerReferences[0].kind}") == "JobSet"

    wait(cluster, ns, "--for=jsonpath={.status.replicatedJobsStatus[0].ready}=3", "jobset/train")
    row = jobset_row(cluster, ns, "train")
    assert (row["TERMINALSTATE"], row["RESTARTS"], row["COMPLETED"]) == ("", "0", "")


def test_jobset_restarts_once_then_fails(cluster: Cluster, ns: str):
    js = jobset("flaky", replicated_job("workers", 2, run_for="1s", exit_code=1, backoffLimit=0),
                failurePolicy={"maxRestarts": 1})
    apply(cluster, ns, js)
    assert wait(cluster, ns, "--for=condition=Failed", "jobset/flaky").strip() == \
        "jobset.jobset.x-k8s.io/flaky condition met"
    row = jobset_row(cluster, ns, "flaky")
    assert (row["TERMINALSTATE"], row["RESTARTS"], row["COMPLETED"]) == ("Failed", "1", "")
    assert jsonpath(cluster, ns, "jobset/flaky", '{.status.conditions[?(@.type=="Failed")].reason}') == \
        "ReachedMaxRestarts"
    assert jsonpath(cluster, ns, "jobset/flaky", "{.status.restartsCountTowardsMax}") == "1"
    reasons = poll(lambda: (lambda r: r if "ReachedMaxRestarts" in r else None)(event_reasons(cluster, ns, "flaky")))
    assert reasons and reasons.count("RestartJobSetFailurePolicyAction") == 1, reasons
    # the failed Job that ended it is one of the second attempt
    failed = cluster.kubectl("get", "jobs", "-n", ns, "-l", f"{JOBSET_NAME}=flaky", "-o",
                             'jsonpath={range .items[?(@.status.failed)]}'
                             '{.metadata.labels.jobset\\.sigs\\.k8s\\.io/restart-attempt}{"\\n"}{end}').check().out
    assert "1" in failed.split(), failed


def test_jobset_success_policy_all(cluster: Cluster, ns: str):
    js = jobset("all", replicated_job("leader", 1, run_for="1s"), replicated_job("workers", 2),
                successPolicy={"operator": "All"})
    apply(cluster, ns, js)
    wait(cluster, ns, "--for=condition=Complete", "job/all-leader-0")
    wait(cluster, ns, "--for=jsonpath={.status.ready}=1", "job/all-workers-0", "job/all-workers-1")
    # one replicatedJob done, the other running: not complete under All
    assert jsonpath(cluster, ns, "jobset/all", "{.status.replicatedJobsStatus[0].succeeded}") == "1"
    row = jobset_row(cluster, ns, "all")
    assert (row["TERMINALSTATE"], row["COMPLETED"]) == ("", "")

    end_pods(cluster, ns, f"{JOBSET_NAME}=all,{RJOB_NAME}=workers")
    wait(cluster, ns, "--for=condition=Completed", "jobset/all")
    row = jobset_row(cluster, ns, "all")
    assert (row["TERMINALSTATE"], row["RESTARTS"], row["COMPLETED"]) == ("Completed", "0", "True")
    assert jsonpath(cluster, ns, "jobset/all", '{.status.conditions[?(@.type=="Completed")].reason}') == \
        "AllJobsCompleted"
    jobs = get_table(cluster, ns, "jobs", "-l", f"{JOBSET_NAME}=all")
    assert [(r["NAME"], r["STATUS"]) for r in jobs] == \
        [("all-leader-0", "Complete"), ("all-workers-0", "Complete"), ("all-workers-1", "Complete")]


def test_jobset_success_policy_any_of_target(cluster: Cluster, ns: str):
    js = jobset("any", replicated_job("workers", 2, run_for="1s"), replicated_job("leader", 1),
                successPolicy={"operator": "Any", "targetReplicatedJobs": ["leader"]})
    apply(cluster, ns, js)
    wait(cluster, ns, "--for=condition=Complete", "job/any-workers-0", "job/any-workers-1")
    wait(cluster, ns, "--for=jsonpath={.status.ready}=1", "job/any-leader-0")
    # two Jobs completed, but none of the target replicatedJob
    row = jobset_row(cluster, ns, "any")
    assert (row["TERMINALSTATE"], row["COMPLETED"]) == ("", "")

    end_pods(cluster, ns, f"{JOBSET_NAME}=any,{RJOB_NAME}=leader")
    wait(cluster, ns, "--for=condition=Completed", "jobset/any")
    row = jobset_row(cluster, ns, "any")
    assert (row["TERMINALSTATE"], row["COMPLETED"]) == ("Completed", "True")
    assert jsonpath(cluster, ns, "job/any-leader-0", '{.status.conditions[?(@.type=="Complete")].status}') == "True"


def test_jobset_any_completes_on_first_job_and_stops_the_rest(cluster: Cluster, ns: str):
    js = jobset("first", replicated_job("workers", 3), successPolicy={"operator": "Any"})
    apply(cluster, ns, js)
    wait(cluster, ns, "--for=jsonpath={.status.replicatedJobsStatus[0].ready}=3", "jobset/first")
    end_pods(cluster, ns, f"{JOBSET_NAME}=first,jobset.sigs.k8s.io/job-index=1")
    wait(cluster, ns, "--for=condition=Completed", "jobset/first")
    row = jobset_row(cluster, ns, "first")
    assert (row["TERMINALSTATE"], row["COMPLETED"]) == ("Completed", "True")
    # the Jobs still running when the JobSet finished are deleted
    assert poll(lambda: cluster.kubectl("get", "jobs", "-n", ns, "-l", f"{JOBSET_NAME}=first", "-o", "name")
                .check().out.split() == ["job.batch/first-workers-1"])


def test_jobset_suspend_and_resume(cluster: Cluster, ns: str):
    apply(cluster, ns, jobset("sus", replicated_job("workers", 2), suspend=True))
    wait(cluster, ns, "--for=condition=Suspended", "jobset/sus")
    assert jsonpath(cluster, ns, "jobset/sus", '{.status.conditions[?(@.type=="Suspended")].reason}') == \
        "SuspendedJobs"
    assert jobset_row(cluster, ns, "sus")["SUSPENDED"] == "true"
    jobs = poll(lambda: (lambda r: r if len(r) == 2 else None)(get_table(cluster, ns, "jobs", "-l",
                                                                          f"{JOBSET_NAME}=sus")))
    assert jobs and [(r["NAME"], r["STATUS"]) for r in jobs] == \
        [("sus-workers-0", "Suspended"), ("sus-workers-1", "Suspended")], jobs
    assert pod_names(cluster, ns, f"{JOBSET_NAME}=sus") == []

    cluster.kubectl("patch", "jobset", "sus", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}').check()
    wait(cluster, ns, "--for=condition=Suspended=False", "jobset/sus")
    assert jsonpath(cluster, ns, "jobset/sus", '{.status.conditions[?(@.type=="Suspended")].reason}') == "ResumeJobs"
    assert jobset_row(cluster, ns, "sus")["SUSPENDED"] == "false"
    running = poll(lambda: (lambda n: n if len(n) == 2 else None)(pod_names(cluster, ns, f"{JOBSET_NAME}=sus",
                                                                            "Running")))
    assert running and [n.rsplit("-", 1)[0] for n in running] == ["sus-workers-0-0", "sus-workers-1-0"], running


# -- Deployment -------------------------------------------------------------------------------------
DEPLOY_COLUMNS = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]


def test_deployment_scale_and_rolling_update(cluster: Cluster, ns: str):
    k = cluster.kubectl
    assert k("create", "deployment", "web", "--image=busybox", "--replicas=2", "-n", ns).check().out.strip() == \
        "deployment.apps/web created"

    def deploy_ready(n: int):
        rows = get_table(cluster, ns, "deploy", "web")
        ok = rows and (rows[0]["READY"], rows[0]["UP-TO-DATE"], rows[0]["AVAILABLE"]) == (f"{n}/{n}", str(n), str(n))
        return rows if ok else None

    for replicas in (2, 5, 1):
        if replicas != 2:
            assert k("scale", "deployment/web", f"--replicas={replicas}", "-n", ns).check().out.strip() == \
                "deployment.apps/web scaled"
        out = k("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s", timeout=90).check().out
        assert out.strip().endswith('deployment "web" successfully rolled out'), out
        rows = poll(lambda: deploy_ready(replicas))
        assert rows and list(rows[0]) == DEPLOY_COLUMNS, get_table(cluster, ns, "deploy", "web")
        assert poll(lambda: len(pod_names(cluster, ns, "app=web")) == replicas), pod_names(cluster, ns, "app=web")

    old_rs = k("get", "rs", "-n", ns, "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}").check().out
    assert len(old_rs.split()) == 1
    assert k("set", "image", "deployment/web", "busybox=busybox:2", "-n", ns).check().out.strip() == \
        "deployment.apps/web image updated"
    out = k("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s", timeout=90).check().out
    assert out.strip().splitlines()[-1] == 'deployment "web" successfully rolled out', out

    def rolled():
        rows = get_table(cluster, ns, "rs", "-l", "app=web", "-o", "wide")
        by_image = {r["IMAGES"]: (r["NAME"], r["DESIRED"], r["CURRENT"], r["READY"]) for r in rows}
        return by_image if len(rows) == 2 and by_image.get("busybox", ("",))[1:] == ("0", "0", "0") else None
    by_image = poll(rolled)
    assert by_image, get_table(cluster, ns, "rs", "-l", "app=web", "-o", "wide")
    assert by_image["busybox"][0] == old_rs
    new_rs = by_image["busybox:2"][0]
    assert by_image["busybox:2"][1:] == ("1", "1", "1")
    assert jsonpath(cluster, ns, f"rs/{new_rs}", "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}") == "2"
    assert poll(lambda: k("get", "pods", "-n", ns, "-l", "app=web", "-o",
                          "jsonpath={.items[*].spec.containers[0].image}").check().out == "busybox:2")
    rows = get_table(cluster, ns, "deploy", "web")
    assert (rows[0]["READY"], rows[0]["UP-TO-DATE"], rows[0]["AVAILABLE"]) == ("1/1", "1", "1")
    history = k("rollout", "history", "deployment/web", "-n", ns).check().out
    assert [line.split()[0] for line in history.strip().splitlines()[-2:]] == ["1", "2"], history
    assert poll(lambda: f"Scaled down replica set {old_rs} from 1 to 0" in
                k("describe", "deployment", "web", "-n", ns).check().out)
    desc = k("describe", "deployment", "web", "-n", ns).check().out
    assert re.search(rf"NewReplicaSet:\s+{new_rs} \(1/1 replicas created\)", desc), desc

    # and back: the first template's ReplicaSet becomes revision 3
    assert k("rollout", "undo", "deployment/web", "-n", ns).check().out.strip() == "deployment.apps/web rolled back"
    k("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s", timeout=90).check()
    assert poll(lambda: k("get", "pods", "-n", ns, "-l", "app=web", "-o",
                          "jsonpath={.items[*].spec.containers[0].image}").check().out == "busybox")
    revisions = jsonpath(cluster, ns, f"rs/{old_rs}",
                         "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}/"
                         "{.metadata.annotations.deployment\\.kubernetes\\.io/revision-history}")
    assert revisions == "3/1"
    history = k("rollout", "history", "deployment/web", "-n", ns).check().out
    assert [line.split()[0] for line in history.strip().splitlines()[-2:]] == ["2", "3"], history


def test_deployment_replaces_a_deleted_pod(cluster: Cluster, ns: str):
    cluster.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=2", "-n", ns).check()
    cluster.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s", timeout=90).check()
    before = poll(lambda: (lambda n: n if len(n) == 2 else None)(pod_names(cluster, ns, "app=web", "Running")))
    assert before
    cluster.kubectl("delete", "pod", before[0], "-n", ns, "--wait=false").check()

    def replaced():
        names = pod_names(cluster, ns, "app=web", "Running")
        return names if len(names) == 2 and before[0] not in names else None
    after = poll(replaced)
    assert after and before[1] in after, (before, after)
    rows = get_table(cluster, ns, "deploy", "web")
    assert poll(lambda: get_table(cluster, ns, "deploy", "web")[0]["READY"] == "2/2"), rows


# -- dra-example-driver's podgroup-resourceclaimtemplate demo ---------------------------------------
GPU_CLUSTER = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
- role: worker
- role: worker
"""


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory) -> Cluster:
    """Three workers with dra-example-driver's 8 GPUs each, so a group's pods could spread: keeping
    them on one node is then the shared claim's doing, not the only choice."""
    tmp = tmp_path_factory.mktemp("workloads-gpu")
    c = create_cluster(tmp, "wlgpu", config=GPU_CLUSTER)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def test_podgroup_resourceclaimtemplate_demo(gpu_cluster: Cluster):
    c = gpu_cluster
    ns = "podgroup-resourceclaimtemplate"
    c.kubectl("create", "namespace", ns).check()
    out = c.kubectl("apply", "-n", ns, "-f", str(MANIFESTS / "podgroup-resourceclaimtemplate.yaml")).check().out
    assert out.strip().splitlines() == [
        "resourceclaimtemplate.resource.k8s.io/one-gpu created",
        "podgroup.scheduling.k8s.io/group-1 created", "deployment.apps/group-1 created",
        "podgroup.scheduling.k8s.io/group-2 created", "deployment.apps/group-2 created"]
    wait(c, ns, "--for=condition=PodGroupScheduled", "podgroup/group-1", "podgroup/group-2")
    for group in ("group-1", "group-2"):
        out = c.kubectl("rollout", "status", f"deployment/{group}", "-n", ns, "--timeout=60s", timeout=90).check().out
        assert out.strip().splitlines()[-1] == f'deployment "{group}" successfully rolled out'
    pgs = get_table(c, ns, "podgroup")
    assert [(r["NAME"], r["POLICY"], r["STATUS"]) for r in pgs] == \
        [("group-1", "Gang", "Scheduled"), ("group-2", "Gang", "Scheduled")]

    def two_claims_ready():
        rows = get_table(c, ns, "resourceclaim")
        return rows if len(rows) == 2 and all(r["STATE"] == "allocated,reserved" for r in rows) else None
    claims = poll(two_claims_ready)
    assert claims, get_table(c, ns, "resourceclaim")
    assert list(claims[0]) == ["NAME", "STATE", "AGE"]

    devices = set()
    for group, claim in zip(("group-1", "group-2"), sorted(r["NAME"] for r in claims)):
        assert re.fullmatch(f"{group}-gpu-[a-z0-9]{{5}}", claim), claim
        pg_uid = jsonpath(c, ns, f"podgroup/{group}", "{.metadata.uid}")
        assert jsonpath(c, ns, f"podgroup/{group}", "{.status.resourceClaimStatuses[0].resourceClaimName}") == claim
        assert json.loads(jsonpath(c, ns, f"resourceclaim/{claim}", "{.status.reservedFor}")) == [
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": group, "uid": pg_uid}]
        assert jsonpath(c, ns, f"resourceclaim/{claim}", "{.metadata.ownerReferences[0].kind}/"
                                                          "{.metadata.ownerReferences[0].name}") == f"PodGroup/{group}"
        results = json.loads(jsonpath(c, ns, f"resourceclaim/{claim}", "{.status.allocation.devices.results}"))
        assert len(results) == 1 and results[0]["driver"] == "gpu.example.com", results
        devices.add((results[0]["pool"], results[0]["device"]))
        pods = c.kubectl("get", "pods", "-n", ns, "-l", f"app={group}", "-o",
                         "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase} "
                         "{.status.resourceClaimStatuses[0].resourceClaimName}{\"\\n\"}{end}").check().out
        rows = pods.strip().splitlines()
        # both pods of the group use the group's one claim, on the node that holds its GPU
        assert rows == [f"{results[0]['pool']} Running {claim}"] * 2, rows
    assert len(devices) == 2, devices  # each group got its own GPU
