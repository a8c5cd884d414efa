"""The Job controller on virtual time against the real API, with simulated kubelets and the real
scheduler: completions, backoffLimit, Indexed jobs, suspend/resume, policies and WorkloadWithJob.
"""

from __future__ import annotations

from phalanx.machinery.featuregates import FeatureGates
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.garbagecollector import GarbageCollector
from phalanx.controllers.job.controller import JobController
from phalanx.controllers.job.workload import compute_pod_group_name
from phalanx.nodes.kubelet import SimulatedKubelets

from ..harness import Running, scheduler, shared_factory

NODES = ["n1", "n2", "n3"]


class Cluster(Running):
    def __init__(self, env, gates=None, gc=False):
        env.bootstrap([NodeSpec(n) for n in NODES])
        self.env = env
        self.factory = shared_factory(env)
        kw = dict(clock=env.clock)
        self.jobs = JobController(env.client, self.factory, feature_gates=gates, **kw)
        self.controllers = [self.jobs, SimulatedKubelets(env.client, self.factory, **kw),
                            scheduler(env, self.factory, **kw)]
        if gc:
            self.controllers.append(GarbageCollector(env.client, self.factory, **kw))

    def job(self, name, ns="default"):
        return self.jobs.jobs.get(f"{ns}/{name}")

    def pods(self, job_name, ns="default"):
        return sorted((p for p in self.jobs.pods.list(ns)
                       if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == job_name),
                      key=lambda p: p["metadata"]["name"])

    def condition(self, name, ctype):
        for c in ((self.job(name) or {}).get("status") or {}).get("conditions") or []:
            if c["type"] == ctype:
                return c
        return None

    def is_true(self, name, ctype):
        c = self.condition(name, ctype)
        return bool(c and c["status"] == "True")

    async def events(self, name):
        items, _ = await self.env.client.list("v1", "Event", "default")
        return [(e["reason"], e["message"]) for e in items if e["involvedObject"]["name"] == name]


def job(name, *, completions=None, parallelism=None, backoff_limit=None, mode=None, restart="Never",
        run_for="10s", exit_code=0, **spec):
    annotations = {"phalanx.dev/run-for": run_for} if run_for else {}
    if exit_code:
        annotations["phalanx.dev/exit-code"] = str(exit_code)
    s = {"template": {"metadata": {"annotations": annotations},
                      "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 0,
                               "containers": [{"name": "main", "image": "busybox"}]}}}
    for k, v in (("completions", completions), ("parallelism", parallelism), ("backoffLimit", backoff_limit),
                 ("completionMode", mode)):
        if v is not None:
            s[k] = v
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}, "spec": s}


# -- the controller -------------------------------------------------------------------------------------
async def test_nonindexed_job_completes_with_upstream_pods_status_and_events(env):
    async with Cluster(env) as cl:
        created = await env.client.create(job("pi", completions=3, parallelism=2))
        uid = created["metadata"]["uid"]
        assert await env.run_until(lambda: len(cl.pods("pi")) == 2, within=10)
        pod = cl.pods("pi")[0]
        md = pod["metadata"]
        assert md["generateName"] == "pi-"
        assert md["labels"]["batch.kubernetes.io/job-name"] == "pi"
        assert md["labels"]["batch.kubernetes.io/controller-uid"] == uid
        assert md["labels"]["job-name"] == "pi" and md["labels"]["controller-uid"] == uid
        assert md["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        assert md["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": uid,
                                          "controller": True, "blockOwnerDeletion": True}]
        assert "hostname" not in pod["spec"] and "batch.kubernetes.io/job-completion-index" not in md["labels"]
        assert await env.run_until(lambda: cl.is_true("pi", "Complete"), within=120)
        j = cl.job("pi")
        st = j["status"]
        assert st["succeeded"] == 3 and "failed" not in st and "active" not in st
        assert st["ready"] == 0 and st["terminating"] == 0 and st["uncountedTerminatedPods"] == {}
        assert st["startTime"] and st["completionTime"]
        types = [(c["type"], c["reason"], c["message"]) for c in st["conditions"]]
        assert types == [("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
                         ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")]
        # every finished pod was counted once and released
        assert await env.run_until(lambda: all(not p["metadata"].get("finalizers") for p in cl.pods("pi")), within=10)
        assert len(cl.pods("pi")) == 3
        events = await cl.events("pi")
        assert sum(1 for r, m in events if r == "SuccessfulCreate" and m.startswith("Created pod: pi-")) == 3
        assert ("Completed", "Job completed") in events


async def test_backoff_limit_zero_fails_on_the_first_failed_pod(env):
    async with Cluster(env) as cl:
        await env.client.create(job("boom", backoff_limit=0, exit_code=1))
        assert await env.run_until(lambda: cl.is_true("boom", "Failed"), within=120)
        st = cl.job("boom")["status"]
        assert st["failed"] == 1 and "succeeded" not in st and "completionTime" not in st
        assert [(c["type"], c["reason"]) for c in st["conditions"]] == \
            [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
        assert cl.condition("boom", "Failed")["message"] == "Job has reached the specified backoff limit"
        assert len(cl.pods("boom")) == 1
        assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in await cl.events("boom")


async def test_on_failure_container_restart_counts_toward_backoff_limit_zero(env):
    async with Cluster(env) as cl:
        await env.client.create(job("crashy", backoff_limit=0, exit_code=1, restart="OnFailure"))
        assert await env.run_until(lambda: cl.is_true("crashy", "Failed"), within=120)
        assert cl.condition("crashy", "Failed")["reason"] == "BackoffLimitExceeded"
        # the restarting pod was deleted and counted as failed
        assert cl.job("crashy")["status"]["failed"] == 1
        assert await env.run_until(lambda: not cl.pods("crashy"), within=60)


async def test_failed_pods_are_replaced_after_a_backoff_until_the_limit(env):
    async with Cluster(env) as cl:
        await env.client.create(job("retry", backoff_limit=2, exit_code=3))
        assert await env.run_until(lambda: cl.is_true("retry", "Failed"), within=600)
        st = cl.job("retry")["status"]
        assert st["failed"] == 3
        pods = cl.pods("retry")
        assert len(pods) == 3
        starts = sorted(p["metadata"]["creationTimestamp"] for p in pods)
        assert starts[0] < starts[1] < starts[2]  # replacements came after a delay, one at a time


async def test_indexed_job_recreates_a_failed_index(env):
    async with Cluster(env) as cl:
        await env.client.create(job("idx", completions=3, parallelism=3, mode="Indexed", run_for="20s",
                                    backoff_limit=3))
        assert await env.run_until(lambda: len(cl.pods("idx")) == 3, within=10)
        pods = {p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]: p for p in cl.pods("idx")}
        assert sorted(pods) == ["0", "1", "2"]
        one = pods["1"]
        md, spec = one["metadata"], one["spec"]
        assert md["generateName"] == "idx-1-" and md["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
        assert spec["hostname"] == "idx-1"
        env_var = spec["containers"][0]["env"][0]
        assert env_var == {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}
        # make index 1's first attempt fail
        await env.client.patch("v1", "Pod", "default", md["name"],
                               {"metadata": {"annotations": {"phalanx.dev/exit-code": "1"}}})
        assert await env.run_until(lambda: cl.is_true("idx", "Complete"), within=300)
        st = cl.job("idx")["status"]
        assert st["completedIndexes"] == "0-2" and st["succeeded"] == 3 and st["failed"] == 1
        index1 = [p for p in cl.pods("idx")
                  if p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"]
        assert sorted(p["status"]["phase"] for p in index1) == ["Failed", "Succeeded"]


async def test_suspend_deletes_pods_and_resume_recreates_them(env):
    async with Cluster(env) as cl:
        await env.client.create(job("sus", completions=2, parallelism=2, run_for="100s", suspend=True))
        assert await env.run_until(lambda: cl.is_true("sus", "Suspended"), within=10)
        assert not cl.pods("sus") and "startTime" not in cl.job("sus")["status"]
        c = cl.condition("sus", "Suspended")
        assert (c["reason"], c["message"]) == ("JobSuspended", "Job suspended")
        await env.client.patch("batch/v1", "Job", "default", "sus", {"spec": {"suspend": False}})
        assert await env.run_until(lambda: len([p for p in cl.pods("sus") if p["status"].get("phase") == "Running"])
                                   == 2, within=20)
        c = cl.condition("sus", "Suspended")
        assert (c["status"], c["reason"], c["message"]) == ("False", "JobResumed", "Job resumed")
        assert cl.job("sus")["status"]["startTime"]
        await env.client.patch("batch/v1", "Job", "default", "sus", {"spec": {"suspend": True}})
        assert await env.run_until(lambda: not cl.pods("sus") and cl.is_true("sus", "Suspended"), within=30)
        st = cl.job("sus")["status"]
        assert "active" not in st and "failed" not in st  # suspension is not a failure
        events = [r for r, _ in await cl.events("sus")]
        assert "Suspended" in events and "Resumed" in events and "SuccessfulDelete" in events


async def test_active_deadline_fails_the_job(env):
    async with Cluster(env) as cl:
        await env.client.create(job("slow", run_for="1000s", activeDeadlineSeconds=30))
        assert await env.run_until(lambda: cl.is_true("slow", "Failed"), within=120)
        c = cl.condition("slow", "Failed")
        assert (c["reason"], c["message"]) == ("DeadlineExceeded", "Job was active longer than specified deadline")
        assert await env.run_until(lambda: not cl.pods("slow"), within=30)


async def test_pod_failure_policy_fail_job_and_ignore(env):
    async with Cluster(env) as cl:
        rules = [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
        await env.client.create(job("pfp", exit_code=42, podFailurePolicy={"rules": rules}))
        assert await env.run_until(lambda: cl.is_true("pfp", "Failed"), within=120)
        c = cl.condition("pfp", "Failed")
        assert c["reason"] == "PodFailurePolicy"
        assert c["message"].startswith("Container main for pod default/pfp-") and \
            c["message"].endswith("failed with exit code 42 matching FailJob rule at index 0")


async def test_success_policy_completes_an_indexed_job_early(env):
    async with Cluster(env) as cl:
        await env.client.create(job("leader", completions=3, parallelism=3, mode="Indexed", run_for="1000s",
                                    successPolicy={"rules": [{"succeededIndexes": "0"}]}))
        assert await env.run_until(lambda: len(cl.pods("leader")) == 3, within=10)
        zero = [p for p in cl.pods("leader")
                if p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "0"][0]
        await env.client.patch("v1", "Pod", "default", zero["metadata"]["name"],
                               {"metadata": {"annotations": {"phalanx.dev/run-for": "5s"}}})
        assert await env.run_until(lambda: cl.is_true("leader", "Complete"), within=120)
        c = cl.condition("leader", "Complete")
        assert (c["reason"], c["message"]) == ("SuccessPolicy", "Matched rules at index 0")
        assert cl.job("leader")["status"]["completedIndexes"] == "0"


async def test_backoff_limit_per_index_marks_failed_indexes(env):
    async with Cluster(env) as cl:
        await env.client.create(job("perix", completions=2, parallelism=2, mode="Indexed", run_for="10s",
                                    backoffLimitPerIndex=0))
        assert await env.run_until(lambda: len(cl.pods("perix")) == 2, within=10)
        one = [p for p in cl.pods("perix")
               if p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"][0]
        assert one["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] == "0"
        await env.client.patch("v1", "Pod", "default", one["metadata"]["name"],
                               {"metadata": {"annotations": {"phalanx.dev/exit-code": "1"}}})
        assert await env.run_until(lambda: cl.is_true("perix", "Failed"), within=120)
        st = cl.job("perix")["status"]
        assert st["failedIndexes"] == "1" and st["completedIndexes"] == "0"
        assert cl.condition("perix", "Failed")["reason"] == "FailedIndexes"


async def test_deleting_a_running_job_releases_and_removes_its_pods(env):
    async with Cluster(env, gc=True) as cl:
        await env.client.create(job("gone", completions=2, parallelism=2, run_for=None))
        assert await env.run_until(lambda: len(cl.pods("gone")) == 2, within=10)
        await env.client.delete("batch/v1", "Job", "default", "gone")  # kubectl's default: background
        assert await env.run_until(lambda: cl.job("gone") is None and not cl.pods("gone"), within=60)


async def test_orphan_pods_matching_the_selector_are_adopted_with_the_tracking_finalizer(env):
    async with Cluster(env) as cl:
        stray = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "adopt"}},
                 "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
        await env.client.create(stray)
        assert await env.run_until(lambda: cl.jobs.pods.get("default/stray") is not None, within=5)
        j = job("adopt", completions=1, parallelism=1, run_for=None, manualSelector=True,
                selector={"matchLabels": {"app": "adopt"}})
        j["spec"]["template"]["metadata"]["labels"] = {"app": "adopt"}
        created = await env.client.create(j)
        assert await env.run_until(lambda: (cl.job("adopt").get("status") or {}).get("active") == 1, within=30)
        await env.clock.advance(10)
        md = cl.jobs.pods.get("default/stray")["metadata"]
        assert md["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "adopt",
                                          "uid": created["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]
        assert md["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        # the adopted pod is the Job's one active pod: no other pod was created
        assert [p["metadata"]["name"] for p in cl.jobs.pods.list("default")] == ["stray"]


async def test_workload_with_job_creates_workload_and_gang_pod_group(env):
    gates = FeatureGates({"WorkloadWithJob": True})
    async with Cluster(env, gates=gates) as cl:
        created = await env.client.create(job("gang", completions=3, parallelism=3, mode="Indexed", run_for=None))
        assert await env.run_until(lambda: len(cl.pods("gang")) == 3, within=10)
        workloads, _ = await env.client.list("scheduling.k8s.io/v1alpha2", "Workload", "default")
        groups, _ = await env.client.list("scheduling.k8s.io/v1alpha2", "PodGroup", "default")
        assert len(workloads) == 1 and len(groups) == 1
        wl, pg = workloads[0], groups[0]
        assert wl["metadata"]["name"].startswith("gang-")
        assert wl["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "gang"}
        assert wl["spec"]["podGroupTemplates"][0]["name"] == "gang-worker-0"
        assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        assert wl["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        assert pg["spec"]["podGroupTemplateRef"] == {"workload": {"workloadName": wl["metadata"]["name"],
                                                                  "podGroupTemplateName": "gang-worker-0"}}
        assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job", "Workload"]
        assert pg["metadata"]["name"] == compute_pod_group_name(wl["metadata"]["name"], "gang-worker-0")
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in cl.pods("gang")} == {pg["metadata"]["name"]}


async def test_workload_with_job_leaves_jobs_with_a_scheduling_group_alone(env):
    gates = FeatureGates({"WorkloadWithJob": True})
    async with Cluster(env, gates=gates) as cl:
        j = job("mine", completions=2, parallelism=2, mode="Indexed", run_for=None)
        j["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "users-group"}
        await env.client.create(j)
        assert await env.run_until(lambda: len(cl.pods("mine")) == 2, within=10)
        workloads, _ = await env.client.list("scheduling.k8s.io/v1alpha2", "Workload", "default")
        assert workloads == []
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in cl.pods("mine")} == {"users-group"}


async def test_a_restarted_controller_rebuilds_its_pod_state_from_the_cache(env):
    """Pods that finish while the controller is down are counted by the next one, which starts from
    what the API holds: no index is created twice, each pod's finalizer goes, the Job completes."""
    async with Cluster(env) as cl:
        await env.client.create(job("again", completions=4, parallelism=4, mode="Indexed"))
        assert await env.run_until(lambda: (cl.job("again").get("status") or {}).get("active") == 4, within=30)
        await cl.jobs.stop()
        await env.clock.advance(15)  # every pod runs out and succeeds meanwhile
        assert await env.run_until(lambda: all((p.get("status") or {}).get("phase") == "Succeeded"
                                               for p in cl.pods("again")), within=10)
        factory = shared_factory(env)
        restarted = JobController(env.client, factory, clock=env.clock)
        restarted.start()
        try:
            assert await env.run_until(lambda: cl.is_true("again", "Complete"), within=30)
            status = cl.job("again")["status"]
            assert (status["succeeded"], status["completedIndexes"], status.get("active", 0)) == (4, "0-3", 0)
            pods = cl.pods("again")
            assert len(pods) == 4
            assert not any(p["metadata"].get("finalizers") for p in pods)
        finally:
            await restarted.stop()
            await factory.stop()


async def test_a_pod_whose_labels_stop_matching_is_released_and_replaced(env):
    async with Cluster(env) as cl:
        j = job("rel", completions=1, parallelism=1, run_for=None, manualSelector=True,
                selector={"matchLabels": {"app": "rel"}})
        j["spec"]["template"]["metadata"]["labels"] = {"app": "rel"}
        await env.client.create(j)

        def owned():
            return sorted(p["metadata"]["name"] for p in cl.jobs.pods.list("default")
                          if any(r.get("name") == "rel" for r in p["metadata"].get("ownerReferences") or []))

        assert await env.run_until(lambda: len(owned()) == 1, within=30)
        first = owned()[0]
        await env.client.patch("v1", "Pod", "default", first, {"metadata": {"labels": {"app": "other"}}},
                               "application/merge-patch+json")
        assert await env.run_until(lambda: len(owned()) == 1 and first not in owned(), within=30)
        assert await env.run_until(lambda: (cl.job("rel").get("status") or {}).get("active") == 1, within=30)
