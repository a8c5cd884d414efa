"""The JobSet controller (kubernetes-sigs/jobset's `JobSetReconciler`), through `Client`.

    JobSetController(client, factory, clock=clock).start()

For each `jobset.x-k8s.io/v1alpha2` JobSet it converges the child objects and the status as the
JobSet controller does:

- a headless Service named `spec.network.subdomain` (default: the JobSet's name) with
  `clusterIP: None`, selector `jobset.sigs.k8s.io/jobset-name=<js>` and `publishNotReadyAddresses`,
  owned by the JobSet, when `network.enableDNSHostnames` is on;
- Jobs `<jobset>-<replicatedJob>-<jobIndex>` owned by the JobSet, with every `jobset.sigs.k8s.io/*`
  label and annotation on the Job and its pod template (jobset-name, jobset-uid, replicatedjob-name,
  replicatedjob-replicas, global-replicas, job-index, job-key = SHA1 of `<ns>/<job>`, job-global-index,
  restart-attempt, group-name, group-replicas, job-group-index, coordinator), the pod template's
  `subdomain`, and `suspend` mirroring the JobSet. Everything else in the template (including
  `schedulingGroup` and `resourceClaims`) is copied untouched;
- `startupPolicy` InOrder (a replicatedJob's Jobs are created once the previous one's Jobs are ready)
  or AnyOrder, `dependsOn`, `suspend` / resume of the child Jobs;
- `successPolicy` All / Any over `targetReplicatedJobs` -> condition Completed (AllJobsCompleted);
- `failurePolicy`: no policy fails the JobSet on the first failed Job (FailedJobs); rules with
  `onJobFailureReasons` / `targetReplicatedJobs` and actions FailJobSet, RestartJobSet (counts toward
  `maxRestarts`, then ReachedMaxRestarts) and RestartJobSetAndIgnoreMaxRestarts. A restart bumps
  `status.restarts`; Jobs of an older restart-attempt are deleted (Foreground) and recreated;
- `status.replicatedJobsStatus` (ready, succeeded, failed, active, suspended per replicatedJob),
  `restarts`, `restartsCountTowardsMax`, `terminalState`, conditions Completed / Failed / Suspended /
  StartupPolicyInProgress / StartupPolicyCompleted with JobSet's reasons and messages (each change
  also recorded as an event), and `ttlSecondsAfterFinished` (Foreground deletion once expired).

With `gates=` naming JobSet's gate `JobSetWorkloadAwareSchedulingAPI` (Kubernetes 1.37), a JobSet
that sets `spec.scheduling` also gets its Workload and PodGroups before its Jobs, and its Jobs and
pods point at them (`jobset_scheduling`); they are deleted while the JobSet is suspended or finished.

JobSets with a `spec.managedBy` other than `jobset.sigs.k8s.io/jobset-controller` are skipped.
RestartJob / RestartJobAndIgnoreMaxRestarts (behind JobSet's RestartJob gate upstream) restart the
whole JobSet here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..api import jobset_scheduling
from ..api.jobset import GROUP, VERSION
from ..api.scheduling.fields import WORKLOAD_API_BY_RELEASE
from ..client.informer import InformerFactory, object_key, split_key
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..machinery.timestamps import rfc3339_seconds
from ..client.clock import Clock
from ..client.controller import Controller
from .jobset_children import ChildJobIndex, ChildJobs
from .jobset_scheduling import SchedulingObjects, scheduling_fields_for_job
from .podcontrol import INDEX_CONTROLLER_UID, controller_ref, index_by_controller_uid, rfc3339
from ..client.interface import Client

Obj = dict[str, Any]

API_VERSION = f"{GROUP}/{VERSION}"
COMPONENT = "jobset"
CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"

JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID_KEY = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_KEY = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS_KEY = "jobset.sigs.k8s.io/global-replicas"
JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
JOB_GLOBAL_INDEX_KEY = "jobset.sigs.k8s.io/job-global-index"
RESTARTS_KEY = "jobset.sigs.k8s.io/restart-attempt"
GROUP_NAME_KEY = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS_KEY = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX_KEY = "jobset.sigs.k8s.io/job-group-index"
COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"
EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY_KEY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB_KEY = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT_KEY = "alpha.jobset.sigs.k8s.io/no-schedule"

# condition types
COMPLETED, FAILED, SUSPENDED = "Completed", "Failed", "Suspended"
STARTUP_IN_PROGRESS, STARTUP_COMPLETED = "StartupPolicyInProgress", "StartupPolicyCompleted"

# reasons and messages (pkg/constants)
REACHED_MAX_RESTARTS = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
FAILED_JOBS = ("FailedJobs", "jobset failed due to one or more job failures")
ALL_JOBS_COMPLETED = ("AllJobsCompleted", "jobset completed successfully")
IN_ORDER_IN_PROGRESS = ("InOrderStartupPolicyInProgress", "in order startup policy is in progress")
IN_ORDER_COMPLETED = ("InOrderStartupPolicyCompleted", "in order startup policy has completed")
SUSPENDED_JOBS = ("SuspendedJobs", "jobset is suspended")
RESUMED_JOBS = ("ResumeJobs", "jobset is resumed")
FAIL_JOBSET_ACTION = ("FailJobSetFailurePolicyAction", "applying FailJobSet failure policy action")
RESTART_JOBSET_ACTION = ("RestartJobSetFailurePolicyAction", "applying RestartJobSet failure policy action")
RESTART_IGNORE_MAX_ACTION = ("RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction",
                             "applying RestartJobSetAndIgnoreMaxRestarts failure policy action")
JOB_CREATION_FAILED = "JobCreationFailed"
HEADLESS_SERVICE_CREATION_FAILED = "HeadlessServiceCreationFailed"

DEFAULT_FAILURE_ACTION = "RestartJobSet"


# -- helpers --------------------------------------------------------------------------------------------
def _spec(js: Obj) -> Obj:
    return js.get("spec") or {}


def _rjobs(js: Obj) -> list[Obj]:
    return [rj for rj in _spec(js).get("replicatedJobs") or [] if isinstance(rj, dict)]


def _replicas(rj: Obj) -> int:
    r = rj.get("replicas", 1)
    return r if isinstance(r, int) else 1


def gen_job_name(jobset: str, rjob: str, index: int) -> str:
    return f"{jobset}-{rjob}-{index}"


def job_hash_key(namespace: str, job_name: str) -> str:
    """The SHA1 hex digest of `<namespace>/<jobName>`."""
    return hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()


def subdomain(js: Obj) -> str:
    return (_spec(js).get("network") or {}).get("subdomain") or js["metadata"]["name"]


def dns_hostnames_enabled(js: Obj) -> bool:
    return bool((_spec(js).get("network") or {}).get("enableDNSHostnames"))


def jobset_suspended(js: Obj) -> bool:
    return bool(_spec(js).get("suspend"))


def job_suspended(job: Obj) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def job_failure_condition(job: Obj) -> dict | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Failed" and c.get("status") == "True":
            return c
    return None


def jobset_condition(js: Obj, ctype: str) -> dict | None:
    for c in (js.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def jobset_finished(js: Obj) -> bool:
    return any(c.get("type") in (COMPLETED, FAILED) and c.get("status") == "True"
               for c in (js.get("status") or {}).get("conditions") or [])


def global_replicas(js: Obj) -> str:
    return str(sum(_replicas(rj) for rj in _rjobs(js)))


def global_job_index(js: Obj, rjob_name: str, job_index: int) -> str:
    total = 0
    for rj in _rjobs(js):
        if rj.get("name") == rjob_name:
            return str(total + job_index)
        total += _replicas(rj)
    return ""


def _group(rj: Obj) -> str:
    return rj.get("groupName") or "default"


def group_replicas(js: Obj, group: str) -> str:
    return str(sum(_replicas(rj) for rj in _rjobs(js) if _group(rj) == group))


def group_job_index(js: Obj, group: str, rjob_name: str, job_index: int) -> str:
    total = 0
    for rj in _rjobs(js):
        if _group(rj) != group:
            continue
        if rj.get("name") == rjob_name:
            return str(total + job_index)
        total += _replicas(rj)
    return ""


def coordinator_endpoint(js: Obj) -> str:
    c = _spec(js).get("coordinator") or {}
    return (f"{js['metadata']['name']}-{c.get('replicatedJob', '')}-{c.get('jobIndex', 0) or 0}-"
            f"{c.get('podIndex', 0) or 0}.{subdomain(js)}")


def _restarts(js: Obj) -> int:
    return int((js.get("status") or {}).get("restarts") or 0)


def label_and_annotate(meta: Obj, js: Obj, rj: Obj, job_index: int) -> None:
    """labelAndAnnotateObject: the JobSet's keys as labels and as annotations."""
    name, ns = js["metadata"]["name"], js["metadata"].get("namespace", "")
    job_name = gen_job_name(name, rj["name"], job_index)
    group = _group(rj)
    values = {
        JOBSET_NAME_KEY: name,
        JOBSET_UID_KEY: js["metadata"].get("uid", ""),
        REPLICATED_JOB_NAME_KEY: rj["name"],
        RESTARTS_KEY: str(_restarts(js)),
        REPLICATED_JOB_REPLICAS_KEY: str(_replicas(rj)),
        GLOBAL_REPLICAS_KEY: global_replicas(js),
        JOB_INDEX_KEY: str(job_index),
        JOB_KEY: job_hash_key(ns, job_name),
        JOB_GLOBAL_INDEX_KEY: global_job_index(js, rj["name"], job_index),
        GROUP_NAME_KEY: group,
        GROUP_REPLICAS_KEY: group_replicas(js, group),
        JOB_GROUP_INDEX_KEY: group_job_index(js, group, rj["name"], job_index),
    }
    if _spec(js).get("coordinator") is not None:
        values[COORDINATOR_KEY] = coordinator_endpoint(js)
    labels = dict(meta.get("labels") or {})
    labels.update(values)
    annotations = dict(meta.get("annotations") or {})
    annotations.update(values)
    js_ann = js["metadata"].get("annotations") or {}
    rj_ann = ((rj.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    for source in (js_ann, rj_ann):
        if EXCLUSIVE_KEY in source:
            annotations[EXCLUSIVE_KEY] = source[EXCLUSIVE_KEY]
            if NODE_SELECTOR_STRATEGY_KEY in source:
                annotations[NODE_SELECTOR_STRATEGY_KEY] = source[NODE_SELECTOR_STRATEGY_KEY]
    meta["labels"] = labels
    meta["annotations"] = annotations


def construct_job(js: Obj, rj: Obj, job_index: int) -> Obj:
    """The child Job for replicatedJob `rj`, index `job_index`, owned by the JobSet."""
    template = rj.get("template") or {}
    tmd = template.get("metadata") or {}
    md: Obj = {"name": gen_job_name(js["metadata"]["name"], rj["name"], job_index),
               "namespace": js["metadata"].get("namespace", "")}
    if tmd.get("labels"):
        md["labels"] = dict(tmd["labels"])
    if tmd.get("annotations"):
        md["annotations"] = dict(tmd["annotations"])
    job: Obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
                "spec": deep_copy(template.get("spec") or {})}
    label_and_annotate(md, js, rj, job_index)
    pod_template = job["spec"].setdefault("template", {})
    label_and_annotate(pod_template.setdefault("metadata", {}), js, rj, job_index)
    pod_spec = pod_template.setdefault("spec", {})
    if dns_hostnames_enabled(js):
        pod_spec["subdomain"] = subdomain(js)
    if EXCLUSIVE_KEY in md["annotations"] and NODE_SELECTOR_STRATEGY_KEY in md["annotations"]:
        pod_spec.setdefault("nodeSelector", {})[NAMESPACED_JOB_KEY] = f"{md['namespace']}_{md['name']}"
        pod_spec.setdefault("tolerations", []).append(
            {"key": NO_SCHEDULE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"})
    job["spec"]["suspend"] = jobset_suspended(js)
    md["ownerReferences"] = [controller_ref(js)]
    return job


@dataclass
class StatusUpdate:
    should_update: bool = False
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)


def _failure_time(job: Obj) -> float:
    c = job_failure_condition(job)
    t = rfc3339_seconds((c or {}).get("lastTransitionTime"))
    return t if t is not None else float("inf")


def _first_failed(jobs: list[Obj]) -> Obj | None:
    """The Job whose Failed condition is the oldest."""
    failed = [j for j in jobs if job_failure_condition(j) is not None]
    return min(failed, key=_failure_time) if failed else None


# Child Job events that change only the Job's status are collapsed into one JobSet sync per window:
# one sync per event made a JobSet of 512 Jobs quadratic. The sync itself now looks only at the Jobs
# that changed, but the status it writes has an entry per replicatedJob and the write costs its
# size (managedFields, the store's copy), so the window grows with the JobSet's Jobs: 0.1 s, and
# 2 ms more per child Job (1.1 s for 512).
JOB_STATUS_SYNC_WINDOW = 0.1
JOB_STATUS_SYNC_WINDOW_PER_JOB = 0.002


def _job_meta(job: Obj) -> tuple:
    md = job.get("metadata") or {}
    return (md.get("uid"), md.get("labels"), md.get("annotations"), md.get("ownerReferences"),
            md.get("deletionTimestamp"), md.get("finalizers"))


def _with_first_failed(message: str, job: Obj | None) -> str:
    return f"{message} (first failed job: {(job or {}).get('metadata', {}).get('name', '')})"


class JobSetController(Controller[str]):
    name = "jobset"
    workers = 1

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None, gates: Any = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.jobsets = self.informer(API_VERSION, "JobSet")
        self.jobs = self.informer("batch/v1", "Job")
        self.services = self.informer("v1", "Service")
        self.jobs.add_indexer(INDEX_CONTROLLER_UID, index_by_controller_uid)
        self.enqueue_on(self.jobsets)
        self.jobs.add_event_handler(on_add=self._job_changed, on_update=self._job_updated, on_delete=self._job_changed)
        self.enqueue_on(self.services, key_of=self._owner_key)
        self.scheduling: SchedulingObjects | None = None
        self._children: dict[str, ChildJobIndex] = {}  # JobSet key -> its child Jobs (a cache)
        if jobset_scheduling.gate_enabled(gates):  # JobSet's gate, 1.37 only
            api_version = WORKLOAD_API_BY_RELEASE[gates.release]
            workloads, pod_groups = self.informer(api_version, "Workload"), self.informer(api_version, "PodGroup")
            self.enqueue_on(workloads, key_of=self._owner_key)
            self.enqueue_on(pod_groups, key_of=self._owner_key)
            self.scheduling = SchedulingObjects(client, workloads, pod_groups, api_version)

    def _scheduling_on(self, js: Obj) -> bool:
        return self.scheduling is not None and _spec(js).get("scheduling") is not None

    def _mark(self, owner_key: str, job: Obj) -> None:
        """Tell the owner's child index (if it has one) to look at this Job again."""
        index = self._children.get(owner_key)
        if index is not None:
            index.mark(object_key(job))

    def _job_changed(self, job: Obj) -> None:
        key = self._owner_key(job)
        if key is not None:
            self._mark(key, job)
            self.enqueue(key)

    def _job_updated(self, old: Obj, new: Obj) -> None:
        """A child Job's new status is synced within the status window (one sync and one status
        write for a burst of them); any other change at once."""
        key = self._owner_key(new)
        if self._owner_key(old) not in (None, key):
            self._job_changed(old)
        if key is None:
            return
        self._mark(key, new)
        if _job_meta(old) == _job_meta(new) and (old.get("spec") or {}) == (new.get("spec") or {}):
            self.enqueue_coalesced(key, self._status_window(key))
        else:
            self.enqueue(key)

    def _status_window(self, key: str) -> float:
        index = self._children.get(key)
        jobs = len(index.children) if index is not None else 0
        return JOB_STATUS_SYNC_WINDOW + JOB_STATUS_SYNC_WINDOW_PER_JOB * jobs

    @staticmethod
    def _owner_key(obj: Obj) -> str | None:
        ref = controller_of(obj)
        if not ref or ref.get("kind") != "JobSet" or ref.get("apiVersion") != API_VERSION:
            return None
        return f"{(obj.get('metadata') or {}).get('namespace', '')}/{ref.get('name')}"

    # -- reconcile ---------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        cached = self.jobsets.get(key)
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            self._children.pop(key, None)
            return
        # The sync changes only the status: the rest stays shared with the cache (read-only); a
        # JobSet of 512 gangs is 700 KB, and a copy of it cost more than the sync. The status is
        # copied one level down (its lists are replaced or copied before a change, never changed
        # in place).
        js = dict(cached)
        js["status"] = dict(cached.get("status") or {})
        if "conditions" in js["status"]:
            js["status"]["conditions"] = list(js["status"]["conditions"] or [])
        mb = _spec(js).get("managedBy")
        if mb and mb != CONTROLLER_NAME:
            self._children.pop(key, None)
            return
        opts = StatusUpdate()
        index = self._child_index(key, js)
        owned = index.owned()
        statuses = index.statuses()
        if statuses != js["status"].get("replicatedJobsStatus"):
            js["status"]["replicatedJobsStatus"] = statuses
            opts.should_update = True
        requeue_after: float | None = None
        error: Exception | None = None
        try:
            if jobset_finished(js):
                await self._delete_jobs(owned.active)
                await self._delete_scheduling(js)
                requeue_after = await self._ttl_after_finished(js)
            else:
                await self._reconcile_unfinished(js, owned, statuses, opts, index)
        except StatusError as e:
            error = e
        if opts.should_update:
            try:
                await self.client.update_status(_for_write(js), handover=True)
            except StatusError as e:
                if e.code == 409:
                    self.enqueue(key)
                    return
                raise
            for type_, reason, message in opts.events:
                await self.client.create_event(js, reason, message, type=type_, component=COMPONENT)
        if error is not None:
            raise error
        if requeue_after is not None and requeue_after > 0:
            self.enqueue_after(key, requeue_after)

    async def _reconcile_unfinished(self, js: Obj, owned: ChildJobs, statuses: list[Obj], opts: StatusUpdate,
                                    index: ChildJobIndex) -> None:
        """Failure and success policies, then the children: Service, scheduling objects, Jobs.
        Once every Job exists and none is suspended (the common case of a running JobSet), the
        walks over the replicatedJobs that create and resume Jobs are skipped: without InOrder
        startup they would change nothing."""
        await self._delete_jobs(owned.previous)
        if owned.failed:
            self._execute_failure_policy(js, owned, opts)
            return
        if owned.successful and self._execute_success_policy(js, owned, opts):
            return
        await self._create_headless_service(js)
        if await self._reconcile_scheduling(js):
            return
        in_order = self._in_order(js)
        if in_order or not index.all_created(js, lambda rjob, i: gen_job_name(js["metadata"]["name"], rjob, i)):
            await self._reconcile_replicated_jobs(js, owned, statuses, opts)
        if jobset_suspended(js):
            await self._suspend_jobs(js, owned.active, opts)
        elif in_order or index.suspended:
            await self._resume_jobs_if_necessary(js, owned.active, statuses, opts)
        else:
            self._set_condition(js, SUSPENDED, "False", *RESUMED_JOBS, "Normal", opts)

    async def _delete_scheduling(self, js: Obj) -> None:
        if self.scheduling is not None and self._scheduling_on(js):
            await self.scheduling.delete_all(js)

    async def _reconcile_scheduling(self, js: Obj) -> bool:
        """The Workload and PodGroups of `spec.scheduling` (deleted while suspended). True when stale
        ones were deleted: the Jobs wait for the next pass, which recreates them."""
        if self.scheduling is None or not self._scheduling_on(js):
            return False
        if jobset_suspended(js):
            await self._delete_scheduling(js)
            return False
        return await self.scheduling.reconcile(js)

    def _child_index(self, key: str, js: Obj) -> ChildJobIndex:
        """The JobSet's child Jobs: the index kept from Job events, brought up to date with the
        Jobs that changed since the last sync; a new one (every child read) when there is none
        or it no longer fits the JobSet (another uid, restart attempt or replicatedJobs)."""
        index = self._children.get(key)
        if index is not None and index.fits(js):
            index.refresh(js, self.jobs.get)
            return index
        self._children.pop(key, None)
        jobs = self.jobs.by_index(INDEX_CONTROLLER_UID, js["metadata"].get("uid", ""))
        index = ChildJobIndex.build(js, jobs, js["status"].get("replicatedJobsStatus"))
        self._children[key] = index
        return index

    # -- conditions ----------------------------------------------------------------------------------
    def _set_condition(self, js: Obj, ctype: str, status: str, reason: str, message: str, event_type: str,
                       opts: StatusUpdate) -> None:
        """updateCondition + event: flip an existing condition whose status changed, add a new True
        one; InProgress and Completed startup conditions exclude each other."""
        new = {"type": ctype, "status": status, "lastTransitionTime": rfc3339(self.clock), "reason": reason,
               "message": message}
        conds = js["status"].setdefault("conditions", [])
        found = changed = False
        exclusive = {STARTUP_IN_PROGRESS: STARTUP_COMPLETED, STARTUP_COMPLETED: STARTUP_IN_PROGRESS}
        for i, cur in enumerate(conds):
            if cur.get("type") == ctype:
                found = True
                if cur.get("status") != status:
                    conds[i] = new
                    changed = True
            elif exclusive.get(ctype) == cur.get("type") and cur.get("status") == "True" and status == "True":
                conds[i] = dict(cur, status="False")
                changed = True
        if not found and status == "True":
            conds.append(new)
            changed = True
        if changed:
            opts.should_update = True
            opts.events.append((event_type, reason, message))

    def _set_failed(self, js: Obj, reason: str, message: str, opts: StatusUpdate) -> None:
        self._set_condition(js, FAILED, "True", reason, message, "Warning", opts)
        js["status"]["terminalState"] = FAILED

    # -- success and failure ---------------------------------------------------------------------------
    def _execute_success_policy(self, js: Obj, owned: ChildJobs, opts: StatusUpdate) -> bool:
        policy = _spec(js).get("successPolicy") or {"operator": "All"}
        targets = policy.get("targetReplicatedJobs") or []

        def matches(rjob_name: str) -> bool:
            return not targets or rjob_name in targets

        matched = sum(1 for j in owned.successful
                      if matches((j["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME_KEY, "")))
        if policy.get("operator") == "Any":
            expected = 1
        else:
            expected = sum(_replicas(rj) for rj in _rjobs(js) if matches(rj["name"]))
        if matched >= expected:
            self._set_condition(js, COMPLETED, "True", *ALL_JOBS_COMPLETED, "Normal", opts)
            js["status"]["terminalState"] = COMPLETED
            return True
        return False

    def _execute_failure_policy(self, js: Obj, owned: ChildJobs, opts: StatusUpdate) -> None:
        policy = _spec(js).get("failurePolicy")
        if policy is None:
            self._set_failed(js, FAILED_JOBS[0], _with_first_failed(FAILED_JOBS[1], _first_failed(owned.failed)), opts)
            return
        rule, job = self._first_matching_rule(policy.get("rules") or [], owned.failed)
        action = rule.get("action") if rule is not None else DEFAULT_FAILURE_ACTION
        if rule is None:
            job = _first_failed(owned.failed)
        status = js["status"]
        if action == "FailJobSet":
            self._set_failed(js, FAIL_JOBSET_ACTION[0], _with_first_failed(FAIL_JOBSET_ACTION[1], job), opts)
        elif action in ("RestartJobSet", "RestartJob"):
            if int(status.get("restartsCountTowardsMax") or 0) >= int(policy.get("maxRestarts") or 0):
                self._set_failed(js, REACHED_MAX_RESTARTS[0], _with_first_failed(REACHED_MAX_RESTARTS[1], job), opts)
                return
            self._restart(js, True, RESTART_JOBSET_ACTION, job, opts)
        elif action in ("RestartJobSetAndIgnoreMaxRestarts", "RestartJobAndIgnoreMaxRestarts"):
            self._restart(js, False, RESTART_IGNORE_MAX_ACTION, job, opts)
        else:
            raise ValueError(f"failed to find a corresponding action for the FailurePolicyRuleAction {action}")

    @staticmethod
    def _first_matching_rule(rules: list[Obj], failed: list[Obj]) -> tuple[Obj | None, Obj | None]:
        """The first rule some failed Job matches, with the earliest-failed Job it matches."""
        for rule in rules:
            reasons = rule.get("onJobFailureReasons") or []
            targets = rule.get("targetReplicatedJobs") or []
            matching = []
            for job in failed:
                c = job_failure_condition(job)
                parent = (job["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME_KEY, "")
                if c is None or not parent:
                    continue
                if (reasons and c.get("reason") not in reasons) or (targets and parent not in targets):
                    continue
                matching.append(job)
            if matching:
                return rule, min(matching, key=_failure_time)
        return None, None

    @staticmethod
    def _restart(js: Obj, counts_toward_max: bool, reason_message: tuple[str, str], job: Obj | None,
                 opts: StatusUpdate) -> None:
        status = js["status"]
        status["restarts"] = _restarts(js) + 1
        if counts_toward_max:
            status["restartsCountTowardsMax"] = int(status.get("restartsCountTowardsMax") or 0) + 1
        opts.should_update = True
        opts.events.append(("Warning", reason_message[0], _with_first_failed(reason_message[1], job)))

    # -- children -----------------------------------------------------------------------------------
    async def _delete_jobs(self, jobs: list[Obj]) -> None:
        for job in jobs:
            md = job["metadata"]
            if md.get("deletionTimestamp"):
                continue
            try:
                await self.client.delete("batch/v1", "Job", md.get("namespace", ""), md["name"],
                                         propagation="Foreground")
            except StatusError as e:
                if e.code != 404:
                    raise

    async def _create_headless_service(self, js: Obj) -> None:
        if not dns_hostnames_enabled(js):
            return
        name, ns = subdomain(js), js["metadata"].get("namespace", "")
        if self.services.get(f"{ns}/{name}") is not None:
            return
        publish = (_spec(js).get("network") or {}).get("publishNotReadyAddresses")
        svc = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ns, "ownerReferences": [controller_ref(js)]},
               "spec": {"clusterIP": "None", "selector": {JOBSET_NAME_KEY: js["metadata"]["name"]},
                        "publishNotReadyAddresses": True if publish is None else bool(publish)}}
        try:
            await self.client.create(svc)
        except StatusError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                return
            await self.client.create_event(js, HEADLESS_SERVICE_CREATION_FAILED, e.message, type="Warning",
                                           component=COMPONENT)
            raise

    def _jobs_to_create(self, js: Obj, rj: Obj, owned: ChildJobs, existing: set[str]) -> list[Obj]:
        """The Jobs of `rj` not among `existing` (the names of every owned Job)."""
        if owned.previous and (_spec(js).get("failurePolicy") or {}).get("restartStrategy") == "BlockingRecreate":
            return []
        jobs = []
        for i in range(_replicas(rj)):
            if gen_job_name(js["metadata"]["name"], rj["name"], i) in existing:
                continue
            job = construct_job(js, rj, i)
            if self._scheduling_on(js):
                scheduling_fields_for_job(job, js, rj["name"], i)
            jobs.append(job)
        return jobs

    @staticmethod
    def _dependencies_reached(rj: Obj, replicas: dict[str, int], by_name: dict[str, Obj]) -> bool:
        """`by_name`: the replicatedJob statuses by name."""
        for dep in rj.get("dependsOn") or []:
            s = by_name.get(dep.get("name"))
            if s is None:
                return False
            if dep.get("status") == "Complete" and replicas.get(dep["name"]) != s["succeeded"]:
                return False
            if dep.get("status") == "Ready" and replicas.get(dep["name"]) != s["failed"] + s["ready"] + s["succeeded"]:
                return False
        return True

    @staticmethod
    def _all_replicas_started(rj: Obj, by_name: dict[str, Obj]) -> bool:
        s = by_name.get(rj["name"])
        return s is not None and _replicas(rj) == s["failed"] + s["ready"] + s["succeeded"]

    @staticmethod
    def _in_order(js: Obj) -> bool:
        return (_spec(js).get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"

    async def _reconcile_replicated_jobs(self, js: Obj, owned: ChildJobs, statuses: list[Obj],
                                         opts: StatusUpdate) -> None:
        replicas: dict[str, int] = {}
        suspended = jobset_suspended(js)
        in_order = self._in_order(js)
        by_name = {s["name"]: s for s in statuses}
        existing = {j["metadata"]["name"] for j in owned.all()}
        for rj in _rjobs(js):
            replicas[rj["name"]] = _replicas(rj)
            if not self._dependencies_reached(rj, replicas, by_name):
                continue
            if not suspended and in_order and self._all_replicas_started(rj, by_name):
                continue
            await self._create_jobs(js, self._jobs_to_create(js, rj, owned, existing))
            if not suspended and in_order:
                self._set_condition(js, STARTUP_IN_PROGRESS, "True", *IN_ORDER_IN_PROGRESS, "Normal", opts)
                return
        if not suspended and in_order:
            self._set_condition(js, STARTUP_COMPLETED, "True", *IN_ORDER_COMPLETED, "Normal", opts)

    async def _create_jobs(self, js: Obj, jobs: list[Obj]) -> None:
        errors = []
        for job in jobs:
            try:
                await self.client.create(job)
            except StatusError as e:
                if e.code == 409 and e.reason == "AlreadyExists":
                    continue
                errors.append(f'job "{job["metadata"]["name"]}" creation failed with error: {e.message}')
                last = e
        if errors:
            await self.client.create_event(js, JOB_CREATION_FAILED, "\n".join(errors), type="Warning",
                                           component=COMPONENT)
            raise StatusError(last.code, last.reason, "\n".join(errors), last.details)

    async def _suspend_jobs(self, js: Obj, active: list[Obj], opts: StatusUpdate) -> None:
        for job in active:
            if not job_suspended(job):
                updated = deep_copy(job)
                updated["spec"]["suspend"] = True
                await self.client.update(updated)
        self._set_condition(js, SUSPENDED, "True", *SUSPENDED_JOBS, "Normal", opts)

    async def _resume_jobs_if_necessary(self, js: Obj, active: list[Obj], statuses: list[Obj],
                                        opts: StatusUpdate) -> None:
        templates = {rj["name"]: (rj.get("template") or {}).get("spec", {}).get("template") or {} for rj in _rjobs(js)}
        by_rjob: dict[str, list[Obj]] = {}
        for job in active:
            by_rjob.setdefault((job["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME_KEY, ""), []).append(job)
        replicas: dict[str, int] = {}
        in_order = self._in_order(js)
        by_name = {s["name"]: s for s in statuses}
        for rj in _rjobs(js):
            replicas[rj["name"]] = _replicas(rj)
            if not self._dependencies_reached(rj, replicas, by_name):
                continue
            if in_order and self._all_replicas_started(rj, by_name):
                continue
            for job in by_rjob.get(rj["name"], []):
                if job_suspended(job):
                    await self._resume_job(job, templates.get(rj["name"]) or {})
            if in_order:
                self._set_condition(js, STARTUP_IN_PROGRESS, "True", *IN_ORDER_IN_PROGRESS, "Normal", opts)
                return
        self._set_condition(js, SUSPENDED, "False", *RESUMED_JOBS, "Normal", opts)

    async def _resume_job(self, job: Obj, pod_template: Obj) -> None:
        job = deep_copy(job)
        if (job.get("status") or {}).get("startTime"):
            # a started Job's template is immutable: forget the start first
            job["status"].pop("startTime", None)
            job = await self.client.update_status(job)
        tmpl = job["spec"].setdefault("template", {})
        tmd = tmpl.setdefault("metadata", {})
        pmd = pod_template.get("metadata") or {}
        for f in ("labels", "annotations"):
            if pmd.get(f):
                tmd[f] = {**(tmd.get(f) or {}), **pmd[f]}
        tspec, pspec = tmpl.setdefault("spec", {}), pod_template.get("spec") or {}
        if pspec.get("nodeSelector"):
            tspec["nodeSelector"] = {**(tspec.get("nodeSelector") or {}), **pspec["nodeSelector"]}
        for f in ("tolerations", "schedulingGates"):
            for item in pspec.get(f) or []:
                tspec.setdefault(f, [])
                if item not in tspec[f]:
                    tspec[f].append(item)
        job["spec"]["suspend"] = False
        await self.client.update(job)

    # -- TTL ------------------------------------------------------------------------------------------
    async def _ttl_after_finished(self, js: Obj) -> float | None:
        ttl = _spec(js).get("ttlSecondsAfterFinished")
        if ttl is None or js["metadata"].get("deletionTimestamp"):
            return None
        finished_at = None
        for c in js["status"].get("conditions") or []:
            if c.get("type") in (COMPLETED, FAILED) and c.get("status") == "True":
                finished_at = rfc3339_seconds(c.get("lastTransitionTime"))
                break
        if finished_at is None:
            return None
        remaining = finished_at + ttl - self.clock.now()
        if remaining > 0:
            return remaining
        ns, name = split_key(object_key(js))
        try:
            await self.client.delete(API_VERSION, "JobSet", ns, name, propagation="Foreground")
        except StatusError as e:
            if e.code != 404:
                raise
        return None


# JobSetStatus fields in the order the CRD's Go type serializes them. `restarts` is always written
# (no omitempty); the others are omitted when empty.
_STATUS_ORDER = ("conditions", "restarts", "restartsCountTowardsMax", "terminalState", "replicatedJobsStatus")


def _for_write(js: Obj) -> Obj:
    """The JobSet to write, handed over to the client: a new top level, metadata and status (its
    status in order) over the rest of `js`, which the API server only reads. The status entries
    stay shared with the controller's child index, which never changes them in place."""
    out = dict(js)
    out["metadata"] = dict(js["metadata"])
    status = dict(out.get("status") or {})  # its lists are new or unchanged, never changed in place
    status["restarts"] = _restarts(out)
    for f in ("conditions", "restartsCountTowardsMax", "terminalState", "replicatedJobsStatus"):
        if not status.get(f):
            status.pop(f, None)
    ordered = {k: status.pop(k) for k in _STATUS_ORDER if k in status}
    ordered.update(status)
    out["status"] = ordered
    return out


__all__ = ["JobSetController", "construct_job", "job_hash_key", "gen_job_name"]
