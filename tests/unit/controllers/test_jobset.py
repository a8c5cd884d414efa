"""The JobSet controller with the Job controller, simulated kubelets, the garbage collector and a
real scheduler, on virtual time against the real API: the tutorial's JobSet, failure policy with
restarts, success policies, suspend, InOrder startup and TTL.

The tutorial's gang placement with its PodGroup and shared claim runs in tests/e2e/test_tutorial.py.
"""

from __future__ import annotations

import hashlib

from phalanx.controllers.job.controller import JobController
from phalanx.controllers.jobset import JobSetController

from .harness import ControllerCluster, scheduler

NODES = ["n1", "n2", "n3", "n4"]
JS = "jobset.x-k8s.io/v1alpha2"


class Cluster(ControllerCluster):
    nodes = NODES

    def make_controllers(self, env, factory, **kw):
        self.jobsets = JobSetController(env.client, factory, **kw)
        self.jobs = JobController(env.client, factory, **kw)
        return [self.jobsets, self.jobs]

    def js(self, name):
        return self.jobsets.jobsets.get(f"default/{name}")

    def status(self, name):
        return (self.js(name) or {}).get("status") or {}

    def condition(self, name, ctype):
        return next((c for c in self.status(name).get("conditions") or [] if c["type"] == ctype), None)

    def is_true(self, name, ctype):
        c = self.condition(name, ctype)
        return bool(c and c["status"] == "True")

    def child_jobs(self, name):
        return sorted((j for j in self.jobs.jobs.list("default")
                       if (j["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") == name),
                      key=lambda j: j["metadata"]["name"])

    def pods(self, name):
        return sorted((p for p in self.jobs.pods.list("default")
                       if (p["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") == name),
                      key=lambda p: p["metadata"]["name"])

    async def events(self, name):
        items, _ = await self.env.client.list("v1", "Event", "default")
        return [(e["type"], e["reason"], e["message"]) for e in items
                if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "JobSet"]


def tutorial_jobset():
    """jobset.yaml of the DRA integration tutorial, verbatim."""
    return {
        "apiVersion": JS, "kind": "JobSet", "metadata": {"name": "training-job", "namespace": "default"},
        "spec": {"replicatedJobs": [{
            "name": "workers", "replicas": 3,
            "template": {"spec": {
                "completions": 2, "parallelism": 2, "backoffLimit": 0,
                "template": {"spec": {
                    "terminationGracePeriodSeconds": 0,
                    "schedulingGroup": {"podGroupName": "training-workers"},
                    "resourceClaims": [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}],
                    "containers": [{"name": "worker", "image": "busybox",
                                    "command": ["/bin/sh", "-c", "sleep infinity"],
                                    "resources": {"claims": [{"name": "shared-gpu"}]}}]}}}}}]}}


def rjob(name, replicas=1, completions=1, parallelism=1, run_for="10s", exit_code=0, backoff_limit=0):
    ann = {"phalanx.dev/run-for": run_for} if run_for else {}
    if exit_code:
        ann["phalanx.dev/exit-code"] = str(exit_code)
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "completions": completions, "parallelism": parallelism, "backoffLimit": backoff_limit,
        "template": {"metadata": {"annotations": ann},
                     "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "c", "image": "busybox"}]}}}}}


def jobset(name, *rjobs, **spec):
    return {"apiVersion": JS, "kind": "JobSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicatedJobs": list(rjobs), **spec}}


async def test_tutorial_jobset_creates_three_jobs_six_pods_and_the_headless_service(env):
    async with Cluster(env) as cl:
        created = await env.client.create(tutorial_jobset())
        uid = created["metadata"]["uid"]
        assert await env.run_until(lambda: len(cl.pods("training-job")) == 6, within=30)
        jobs = cl.child_jobs("training-job")
        assert [j["metadata"]["name"] for j in jobs] == [f"training-job-workers-{i}" for i in range(3)]
        for i, j in enumerate(jobs):
            md = j["metadata"]
            expected = {
                "jobset.sigs.k8s.io/jobset-name": "training-job",
                "jobset.sigs.k8s.io/jobset-uid": uid,
                "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                "jobset.sigs.k8s.io/replicatedjob-replicas": "3",
                "jobset.sigs.k8s.io/global-replicas": "3",
                "jobset.sigs.k8s.io/job-index": str(i),
                "jobset.sigs.k8s.io/job-global-index": str(i),
                "jobset.sigs.k8s.io/job-key": hashlib.sha1(f"default/training-job-workers-{i}".encode()).hexdigest(),
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "jobset.sigs.k8s.io/group-name": "default",
                "jobset.sigs.k8s.io/group-replicas": "3",
                "jobset.sigs.k8s.io/job-group-index": str(i),
            }
            for k, v in expected.items():
                assert md["labels"][k] == v and md["annotations"][k] == v, k
                assert j["spec"]["template"]["metadata"]["labels"][k] == v
                assert j["spec"]["template"]["metadata"]["annotations"][k] == v
            assert md["ownerReferences"] == [{"apiVersion": JS, "kind": "JobSet", "name": "training-job", "uid": uid,
                                              "controller": True, "blockOwnerDeletion": True}]
            spec = j["spec"]
            assert spec["suspend"] is False and spec["completionMode"] == "Indexed"
            assert spec["template"]["spec"]["subdomain"] == "training-job"
            assert spec["template"]["spec"]["restartPolicy"] == "OnFailure"
        pods = cl.pods("training-job")
        names = [p["metadata"]["name"] for p in pods]
        for j in range(3):
            for i in range(2):
                assert sum(1 for n in names if n.startswith(f"training-job-workers-{j}-{i}-")
                           and len(n) == len(f"training-job-workers-{j}-{i}-") + 5) == 1
        for p in pods:
            spec, labels = p["spec"], p["metadata"]["labels"]
            assert spec["schedulingGroup"] == {"podGroupName": "training-workers"}
            assert spec["resourceClaims"] == [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}]
            assert spec["containers"][0]["resources"]["claims"] == [{"name": "shared-gpu"}]
            assert spec["subdomain"] == "training-job"
            ix = labels["batch.kubernetes.io/job-completion-index"]
            assert spec["hostname"] == f"{labels['batch.kubernetes.io/job-name']}-{ix}"
            assert labels["jobset.sigs.k8s.io/jobset-name"] == "training-job"
        # kubectl get pods -l jobset.sigs.k8s.io/jobset-name=training-job
        listed, _ = await env.client.list("v1", "Pod", "default",
                                          label_selector="jobset.sigs.k8s.io/jobset-name=training-job")
        assert len(listed) == 6
        svc = await env.client.get("v1", "Service", "default", "training-job")
        assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
        assert svc["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "training-job"}
        assert svc["metadata"]["ownerReferences"][0]["uid"] == uid
        # Without the tutorial's PodGroup the scheduler holds the pods (GangScheduling's PreEnqueue:
        # the pod group does not exist); the whole flow runs in tests/e2e/test_tutorial.py.
        await env.run_until(lambda: False, within=5)
        assert all(not p["spec"].get("nodeName") for p in cl.pods("training-job"))
        assert cl.status("training-job")["restarts"] == 0 and "conditions" not in cl.status("training-job")
        assert (cl.status("training-job").get("replicatedJobsStatus") or [{}])[0].get("ready", 0) == 0
        await env.clock.advance(600)
        assert not cl.status("training-job").get("terminalState") and len(cl.pods("training-job")) == 6


async def test_deleting_the_jobset_removes_jobs_pods_and_service(env):
    async with Cluster(env) as cl:
        await env.client.create(tutorial_jobset())
        assert await env.run_until(lambda: len(cl.pods("training-job")) == 6, within=30)
        await env.client.delete(JS, "JobSet", "default", "training-job")
        assert await env.run_until(lambda: not cl.pods("training-job") and not cl.child_jobs("training-job"),
                                   within=120)
        services, _ = await env.client.list("v1", "Service", "default")
        assert [s["metadata"]["name"] for s in services] == ["kubernetes"]


async def test_failed_job_restarts_the_jobset_once_then_fails_it_at_max_restarts(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("flaky", rjob("w", replicas=2, exit_code=1), failurePolicy={"maxRestarts": 1}))
        assert await env.run_until(lambda: cl.status("flaky").get("restarts") == 1, within=120)
        assert cl.status("flaky").get("restartsCountTowardsMax") == 1
        # the Jobs of attempt 0 are replaced by Jobs of attempt 1 with the same names
        assert await env.run_until(
            lambda: [j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for j in cl.child_jobs("flaky")]
            == ["1", "1"], within=120)
        assert await env.run_until(lambda: cl.is_true("flaky", "Failed"), within=200)
        st = cl.status("flaky")
        assert st["restarts"] == 1 and st["terminalState"] == "Failed"
        c = cl.condition("flaky", "Failed")
        assert c["reason"] == "ReachedMaxRestarts"
        assert c["message"].startswith(
            "jobset failed due to reaching max number of restarts (first failed job: flaky-w-")
        events = await cl.events("flaky")
        assert any(r == "RestartJobSetFailurePolicyAction" and t == "Warning" for t, r, _ in events)
        assert any(r == "ReachedMaxRestarts" for _, r, _ in events)


async def test_no_failure_policy_fails_on_the_first_failed_job(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("fragile", rjob("w", exit_code=2)))
        assert await env.run_until(lambda: cl.is_true("fragile", "Failed"), within=120)
        c = cl.condition("fragile", "Failed")
        assert (c["reason"], c["message"]) == ("FailedJobs",
                                               "jobset failed due to one or more job failures (first failed job: "
                                               "fragile-w-0)")
        assert cl.status("fragile")["replicatedJobsStatus"][0]["failed"] == 1


async def test_fail_jobset_rule_on_job_failure_reason(env):
    async with Cluster(env) as cl:
        rules = [{"action": "FailJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}]
        await env.client.create(jobset("strict", rjob("w", exit_code=1),
                                       failurePolicy={"maxRestarts": 5, "rules": rules}))
        assert await env.run_until(lambda: cl.is_true("strict", "Failed"), within=120)
        c = cl.condition("strict", "Failed")
        assert (c["reason"], c["message"]) == ("FailJobSetFailurePolicyAction",
                                               "applying FailJobSet failure policy action (first failed job: "
                                               "strict-w-0)")
        assert cl.status("strict")["restarts"] == 0


async def test_success_policy_all_completes_when_every_job_succeeds(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("all", rjob("a", replicas=2, run_for="5s"), rjob("b", run_for="20s")))
        assert await env.run_until(lambda: cl.status("all").get("replicatedJobsStatus", [{}])[0].get("succeeded") == 2,
                                   within=60)
        assert not cl.is_true("all", "Completed")  # b is still running
        assert await env.run_until(lambda: cl.is_true("all", "Completed"), within=120)
        c = cl.condition("all", "Completed")
        assert (c["reason"], c["message"]) == ("AllJobsCompleted", "jobset completed successfully")
        assert cl.status("all")["terminalState"] == "Completed"
        assert ("Normal", "AllJobsCompleted", "jobset completed successfully") in await cl.events("all")


async def test_success_policy_any_on_a_target_ends_the_other_jobs(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("any", rjob("driver", run_for="5s"), rjob("workers", replicas=2, run_for=None),
                                       successPolicy={"operator": "Any", "targetReplicatedJobs": ["driver"]}))
        assert await env.run_until(lambda: cl.is_true("any", "Completed"), within=120)
        # the still-running workers Jobs are deleted with the JobSet finished
        assert await env.run_until(
            lambda: [j["metadata"]["name"] for j in cl.child_jobs("any")] == ["any-driver-0"], within=120)


async def test_suspended_jobset_suspends_its_jobs_until_resumed(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("later", rjob("w", replicas=2, run_for=None), suspend=True))
        assert await env.run_until(lambda: len(cl.child_jobs("later")) == 2 and cl.is_true("later", "Suspended"),
                                   within=30)
        assert all(j["spec"]["suspend"] is True for j in cl.child_jobs("later"))
        c = cl.condition("later", "Suspended")
        assert (c["reason"], c["message"]) == ("SuspendedJobs", "jobset is suspended")
        await env.clock.advance(30)
        assert not cl.pods("later")
        await env.client.patch(JS, "JobSet", "default", "later", {"spec": {"suspend": False}})
        assert await env.run_until(lambda: len(cl.pods("later")) == 2, within=30)
        assert all(j["spec"]["suspend"] is False for j in cl.child_jobs("later"))
        c = cl.condition("later", "Suspended")
        assert (c["status"], c["reason"], c["message"]) == ("False", "ResumeJobs", "jobset is resumed")


async def test_in_order_startup_creates_the_next_replicated_job_once_the_previous_is_ready(env):
    async with Cluster(env, bind=False) as cl:
        await env.client.create(jobset("ordered", rjob("leader", run_for=None),
                                       rjob("workers", replicas=2, run_for=None),
                                       startupPolicy={"startupPolicyOrder": "InOrder"}))
        assert await env.run_until(lambda: len(cl.child_jobs("ordered")) == 1, within=30)
        await env.clock.advance(30)
        assert [j["metadata"]["name"] for j in cl.child_jobs("ordered")] == ["ordered-leader-0"]
        c = cl.condition("ordered", "StartupPolicyInProgress")
        assert (c["status"], c["reason"]) == ("True", "InOrderStartupPolicyInProgress")
        # the leader's pod gets a node and becomes ready: the workers follow
        binder = scheduler(env, cl.factory, clock=env.clock)
        cl.controllers.append(binder)
        binder.start()
        assert await env.run_until(lambda: len(cl.child_jobs("ordered")) == 3, within=60)
        assert await env.run_until(lambda: cl.is_true("ordered", "StartupPolicyCompleted"), within=60)
        c = cl.condition("ordered", "StartupPolicyCompleted")
        assert (c["reason"], c["message"]) == ("InOrderStartupPolicyCompleted", "in order startup policy has completed")
        assert cl.condition("ordered", "StartupPolicyInProgress")["status"] == "False"


async def test_ttl_deletes_a_finished_jobset(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("brief", rjob("w", run_for="5s"), ttlSecondsAfterFinished=30))
        assert await env.run_until(lambda: cl.is_true("brief", "Completed"), within=60)
        assert await env.run_until(lambda: cl.js("brief") is None and not cl.child_jobs("brief"), within=120)


async def test_status_follows_each_child_job_and_a_deleted_job_comes_back(env):
    async with Cluster(env) as cl:
        await env.client.create(jobset("follow", rjob("a", replicas=2, run_for=None), rjob("b", run_for="30s")))

        def entry(name):
            return next((s for s in cl.status("follow").get("replicatedJobsStatus") or [] if s["name"] == name), {})

        assert await env.run_until(lambda: entry("a").get("ready") == 2 and entry("b").get("ready") == 1, within=60)
        assert entry("a") == {"name": "a", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}
        # a user deletes one Job: the JobSet reports one Job fewer, then recreates it
        await env.client.delete("batch/v1", "Job", "default", "follow-a-1", propagation="Background")
        assert await env.run_until(lambda: [j["metadata"]["name"] for j in cl.child_jobs("follow")]
                                   == ["follow-a-0", "follow-a-1", "follow-b-0"]
                                   and not cl.child_jobs("follow")[1]["metadata"].get("deletionTimestamp"), within=60)
        assert await env.run_until(lambda: entry("a").get("ready") == 2, within=60)
        assert await env.run_until(lambda: entry("b").get("succeeded") == 1 and entry("b").get("active") == 0,
                                   within=120)
        assert entry("a")["active"] == 2 and not cl.is_true("follow", "Completed")
