"""The JobSet controller's workload-aware scheduling on a Kubernetes 1.37 API (JobSet's gate on):
the Workload and PodGroups it creates, the child Jobs and pods pointed at them, suspend / resume,
`gang.minCount` patched in place, garbage collection, and delegated PodGroups passed through.

Pods are not bound here (the scheduler's 1.37 PodGroup cycle is tested on its own); e2e runs a
real cluster in tests/e2e/test_jobset_scheduling_137.py.
"""

from __future__ import annotations

from phalanx.api import jobset_scheduling as sch
from phalanx.apiserver import build_api
from phalanx.client import InProcessClient
from phalanx.controllers.job.controller import JobController
from phalanx.controllers.jobset import JobSetController
from phalanx.controllers.podgroupprotection import PodGroupProtectionController
from phalanx.machinery.featuregates import FeatureGates

from .harness import ControllerCluster

JS = "jobset.x-k8s.io/v1alpha2"
SCHED = "scheduling.k8s.io/v1beta1"
GATES = FeatureGates({"JobSetWorkloadAwareSchedulingAPI": True}, release="1.37")


def env_137(make_env, gates=GATES):
    env = make_env()
    env.api = build_api(env.store, gates, now=env.clock.datetime)
    env.client = InProcessClient(env.api, clock=env.clock, field_manager="unit-test")
    return env


class Cluster(ControllerCluster):
    nodes = ["n1", "n2"]

    def make_controllers(self, env, factory, **kw):
        self.jobsets = JobSetController(env.client, factory, gates=env.api.gates, **kw)
        self.jobs = JobController(env.client, factory, **kw)
        self.workloads = factory.informer(SCHED, "Workload")
        self.pod_groups = factory.informer(SCHED, "PodGroup")
        # kube-controller-manager's podgroup-protection-controller releases a deleted PodGroup once its
        # pods are gone
        return [self.jobsets, self.jobs, PodGroupProtectionController(env.client, factory, release="1.37", **kw)]

    def workload(self, name):
        return self.workloads.get(f"default/{name}")

    def pod_group_names(self):
        return sorted(pg["metadata"]["name"] for pg in self.pod_groups.list("default"))

    def child_jobs(self, name):
        return sorted((j for j in self.jobs.jobs.list("default")
                       if (j["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") == name),
                      key=lambda j: j["metadata"]["name"])

    def pods(self):
        return self.jobs.pods.list("default")


def rjob(name, replicas=1, parallelism=1, annotations=None):
    template = {"spec": {"parallelism": parallelism, "completions": parallelism,
                         "template": {"spec": {"restartPolicy": "Never",
                                               "containers": [{"name": "c", "image": "busybox"}]}}}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {"name": name, "replicas": replicas, "template": template}


def jobset(name, *rjobs, **spec):
    return {"apiVersion": JS, "kind": "JobSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicatedJobs": list(rjobs), **spec}}


def gang_training(**spec):
    return jobset("gang-training", rjob("driver"), rjob("workers", replicas=2, parallelism=2),
                  scheduling={"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}}, **spec)


async def test_top_level_gang_gets_a_workload_a_pod_group_and_pods_that_name_it(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        created = await env.client.create(gang_training())
        js_uid = created["metadata"]["uid"]
        name = sch.workload_name(created)
        assert await env.run_until(lambda: len(cl.pods()) == 5, within=30)
        wl = cl.workload(name)
        owner = {"apiVersion": JS, "kind": "JobSet", "name": "gang-training", "uid": js_uid, "controller": True,
                 "blockOwnerDeletion": True}
        assert wl["metadata"]["ownerReferences"] == [owner]
        assert wl["spec"]["controllerRef"] == {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "gang-training"}
        assert wl["spec"]["podGroupTemplates"] == [{"name": name, "schedulingPolicy": {"gang": {"minCount": 5}},
                                                    "schedulingConstraints": None, "disruptionMode": {"all": {}}}]
        assert cl.pod_group_names() == [name]
        pg = cl.pod_groups.get(f"default/{name}")
        assert pg["metadata"]["ownerReferences"] == [owner]
        assert pg["spec"]["workloadRef"] == {"workloadName": name, "templateName": name}
        assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
        for job in cl.child_jobs("gang-training"):
            assert job["metadata"]["annotations"][sch.GROUP_TEMPLATE_NAME_KEY] == name
            assert job["spec"]["template"]["spec"]["schedulingGroup"] == {"podGroupName": name}
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": name} for p in cl.pods())


async def test_job_entries_give_each_job_replica_its_own_pod_group(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        js = jobset("per-job", rjob("launcher"), rjob("worker", replicas=2, parallelism=2),
                    scheduling={"replicatedJobs": [
                        {"targetReplicatedJobs": ["launcher"], "schedulingPolicy": {"gang": {}}},
                        {"targetReplicatedJobs": ["worker"], "job": {"schedulingPolicy": {"gang": {}}}}]})
        await env.client.create(js)
        assert await env.run_until(lambda: len(cl.child_jobs("per-job")) == 3 and len(cl.pod_group_names()) == 3,
                                   within=30)
        templates = [sch.group_template_name(js, ["launcher"]),
                     sch.job_template_name(js, "worker", 0), sch.job_template_name(js, "worker", 1)]
        assert cl.pod_group_names() == sorted(f"per-job-{t}" for t in templates)
        min_counts = {pg["spec"]["workloadRef"]["templateName"]: pg["spec"]["schedulingPolicy"]["gang"]["minCount"]
                      for pg in cl.pod_groups.list("default")}
        assert min_counts == {templates[0]: 1, templates[1]: 2, templates[2]: 2}
        by_job = {j["metadata"]["name"]: j["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"]
                  for j in cl.child_jobs("per-job")}
        assert by_job == {"per-job-launcher-0": f"per-job-{templates[0]}",
                          "per-job-worker-0": f"per-job-{templates[1]}",
                          "per-job-worker-1": f"per-job-{templates[2]}"}


async def test_suspend_deletes_the_scheduling_objects_and_resume_recreates_them(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        created = await env.client.create(gang_training())
        name = sch.workload_name(created)
        assert await env.run_until(lambda: cl.workload(name) is not None and cl.pod_group_names() == [name], within=30)
        await env.client.patch(JS, "JobSet", "default", "gang-training", {"spec": {"suspend": True}})
        assert await env.run_until(lambda: cl.workload(name) is None and cl.pod_group_names() == [], within=30)
        await env.client.patch(JS, "JobSet", "default", "gang-training", {"spec": {"suspend": False}})
        assert await env.run_until(lambda: cl.workload(name) is not None and cl.pod_group_names() == [name], within=30)


async def test_min_count_is_patched_in_place(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        created = await env.client.create(gang_training())
        name = sch.workload_name(created)
        assert await env.run_until(lambda: cl.pod_group_names() == [name], within=30)
        wl_uid, pg_uid = cl.workload(name)["metadata"]["uid"], cl.pod_groups.get(f"default/{name}")["metadata"]["uid"]
        # someone lowers minCount: the controller puts the JobSet's back, on the same objects
        wl = await env.client.get(SCHED, "Workload", "default", name)
        wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 2
        await env.client.update(wl)
        pg = await env.client.get(SCHED, "PodGroup", "default", name)
        pg["spec"]["schedulingPolicy"]["gang"]["minCount"] = 2
        await env.client.update(pg)

        def restored():
            w, p = cl.workload(name), cl.pod_groups.get(f"default/{name}")
            return (w["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 5
                    and p["spec"]["schedulingPolicy"]["gang"]["minCount"] == 5)
        assert await env.run_until(restored, within=30)
        assert cl.workload(name)["metadata"]["uid"] == wl_uid
        assert cl.pod_groups.get(f"default/{name}")["metadata"]["uid"] == pg_uid


async def test_deleting_the_jobset_collects_its_workload_and_pod_groups(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        created = await env.client.create(gang_training())
        name = sch.workload_name(created)
        assert await env.run_until(lambda: cl.pod_group_names() == [name], within=30)
        await env.client.delete(JS, "JobSet", "default", "gang-training", propagation="Background")
        assert await env.run_until(lambda: cl.workload(name) is None and cl.pod_group_names() == [], within=60)


async def test_jobset_without_scheduling_is_untouched(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        await env.client.create(jobset("plain", rjob("w", replicas=2)))
        assert await env.run_until(lambda: len(cl.pods()) == 2, within=30)
        assert cl.workloads.list("default") == [] and cl.pod_group_names() == []
        for job in cl.child_jobs("plain"):
            assert sch.GROUP_TEMPLATE_NAME_KEY not in job["metadata"]["annotations"]
            assert "schedulingGroup" not in job["spec"]["template"]["spec"]


async def test_delegated_group_template_annotation_passes_through_to_the_job(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        workload = {"apiVersion": SCHED, "kind": "Workload",
                    "metadata": {"name": "js-delegated", "namespace": "default"},
                    "spec": {"controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "js-delegated"},
                             "podGroupTemplates": [{"name": "workers",
                                                    "schedulingPolicy": {"gang": {"minCount": 2}}}]}}
        stored = await env.client.create(workload)
        await env.client.create(jobset("js-delegated", rjob("workers", parallelism=2,
                                                            annotations={sch.GROUP_TEMPLATE_NAME_KEY: "workers"})))
        assert await env.run_until(lambda: len(cl.child_jobs("js-delegated")) == 1, within=30)
        job = cl.child_jobs("js-delegated")[0]
        assert job["metadata"]["annotations"][sch.GROUP_TEMPLATE_NAME_KEY] == "workers"
        assert "schedulingGroup" not in job["spec"]["template"]["spec"]
        assert [w["metadata"]["name"] for w in cl.workloads.list("default")] == ["js-delegated"]
        assert cl.workload("js-delegated")["spec"] == stored["spec"]


async def test_a_finished_jobset_deletes_its_scheduling_objects(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        created = await env.client.create(gang_training())
        name = sch.workload_name(created)
        assert await env.run_until(lambda: cl.pod_group_names() == [name], within=30)
        js = await env.client.get(JS, "JobSet", "default", "gang-training")
        js["status"]["conditions"] = [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                                       "message": "jobset completed successfully",
                                       "lastTransitionTime": "2026-12-03T00:00:00Z"}]
        await env.client.update_status(js)
        assert await env.run_until(lambda: cl.workload(name) is None and cl.pod_group_names() == [], within=30)


async def test_scheduling_changed_while_suspended_applies_on_resume(make_env):
    env = env_137(make_env)
    async with Cluster(env, bind=False) as cl:
        created = await env.client.create(gang_training(suspend=True))
        name = sch.workload_name(created)

        def suspended():
            conds = ((cl.jobsets.jobsets.get("default/gang-training") or {}).get("status") or {}).get("conditions")
            return any(c["type"] == "Suspended" and c["status"] == "True" for c in conds or [])
        assert await env.run_until(suspended, within=30)
        assert cl.workload(name) is None and cl.pod_group_names() == []
        await env.client.patch(JS, "JobSet", "default", "gang-training",
                               {"spec": {"scheduling": {"disruptionMode": {"all": None, "single": {}}}}})
        await env.client.patch(JS, "JobSet", "default", "gang-training", {"spec": {"suspend": False}})
        assert await env.run_until(lambda: cl.workload(name) is not None and cl.pod_group_names() == [name], within=30)
        assert cl.workload(name)["spec"]["podGroupTemplates"][0]["disruptionMode"] == {"single": {}}
