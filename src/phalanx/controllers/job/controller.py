"""The Job controller (kube-controller-manager's `job` controller), through `Client`.

    JobController(client, factory, clock=clock, feature_gates=gates).start()

It keeps each batch/v1 Job's pods as upstream does and reports what they did:

- pods from the template with generateName `<job>-` (NonIndexed) or `<job>-<index>-` (Indexed), the
  labels/annotation `batch.kubernetes.io/job-completion-index`, env `JOB_COMPLETION_INDEX` on every
  container, hostname `<job>-<index>`, the Job as controller, and the `batch.kubernetes.io/job-tracking`
  finalizer, removed once the pod's end is counted (`status.py`);
- completions and parallelism, `completedIndexes` / `failedIndexes` (`indexes.py`), `backoffLimit` and
  the replacement delay (`backoff.py`), `backoffLimitPerIndex` / `maxFailedIndexes`,
  `activeDeadlineSeconds`, `podFailurePolicy` (`pod_failure_policy.py`), `successPolicy`
  (`success_policy.py`), `podReplacementPolicy`, suspend/resume;
- conditions as 1.36 writes them (`conditions.py`): the interim `SuccessCriteriaMet` / `FailureTarget`,
  then `Complete` / `Failed` once no pod is left terminating, `Suspended` (JobSuspended / JobResumed);
  the events SuccessfulCreate, SuccessfulDelete, Completed, Suspended, Resumed and the failure reasons;
- with the `WorkloadWithJob` gate (alpha, off by default), Workloads and PodGroups, one strategy
  per release: on 1.36 an Indexed Job with parallelism == completions > 1 and no `schedulingGroup`
  in its template gets a v1alpha2 Workload and a gang PodGroup (minCount = parallelism) before its
  first pod (`workload.py`); on 1.37 a Job's `spec.scheduling` (Basic when absent) is compiled into
  a v1beta1 Workload and PodGroup, or only the PodGroup when a parent delegates it
  (`workload137.py`); either way its pods carry `schedulingGroup.podGroupName`.

Jobs whose `spec.managedBy` names another controller are left alone.
"""

from __future__ import annotations

from typing import Any

from ...client.clock import Clock
from ...client.informer import Informer, InformerFactory, object_key, split_key
from ...client.interface import STRATEGIC_MERGE_PATCH, Client
from ...machinery.errors import StatusError
from ...machinery.featuregates import GateReader
from ...machinery.meta import controller_of, deep_copy
from ...client.controller import Controller
from ...machinery.timestamps import rfc3339_seconds
from ..podcontrol import (INDEX_CONTROLLER_UID, BatchError, ControllerExpectations, PodControl,
                          INDEX_ORPHANS, active_pods_deletion_order, add_workload_indexers, claim_objects,
                          is_namespace_terminating, is_pod_ready,
                          rfc3339, selector_of, slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE)
from .backoff import DEFAULT_BACKOFF_LIMIT, BackoffStore, past_backoff_limit_on_failure
from .conditions import (COMPLETE, FAILED, FAILURE_TARGET, MSG_BACKOFF_LIMIT, MSG_COMPLETIONS_REACHED, MSG_DEADLINE,
                         MSG_FAILED_INDEXES, MSG_MAX_FAILED_INDEXES, REASON_BACKOFF_LIMIT, REASON_COMPLETIONS_REACHED,
                         REASON_DEADLINE, REASON_FAILED_INDEXES, REASON_MAX_FAILED_INDEXES, REASON_POD_FAILURE_POLICY,
                         REASON_SUCCESS_POLICY, SUCCESS_CRITERIA_MET, SUSPENDED, ensure_condition, find_condition,
                         is_job_finished, new_condition)
from .indexes import (Intervals, add_completion_index_env, failed_indexes, first_pending_indexes,
                      indexed_pod_template, indexes_ready_for_creation, pods_with_delayed_deletion, succeeded_indexes)
from .pod_failure_policy import count_not_ignored, fail_job_message
from .podstate import JobPodStates, JobPods
from .status import (SyncContext, clean_uncounted, collect_finished_pods, enact_job_finished, new_finished_pods,
                     promote_interim_condition, status_for_write, update_indexes_status, valid_pods)
from .success_policy import match_success_policy
from .util import (COMPONENT, JOB_TRACKING_FINALIZER, completion_index, has_backoff_limit_per_index,
                   has_tracking_finalizer, int_or, is_indexed, is_pod_failed, job_suspended, managed_by_external,
                   only_replace_failed_pods, uid_of)
from .workload import (SCHEDULING_API, WORKLOAD_WITH_JOB, compute_pod_group_name, compute_workload_name,
                       gang_scheduling_eligible, pod_group_for_workload, workload_for_job)
from .workload137 import SCHEDULING_API as SCHEDULING_API_1_37, WorkloadScheduling

Obj = dict[str, Any]

SYNC_JOB_BATCH_PERIOD = 1.0
MAX_POD_CREATE_DELETE_PER_SYNC = 500


class JobController(Controller[str]):
    name = "job"
    workers = 5  # --concurrent-job-syncs

    ORPHAN_PREFIX = "orphan-pod:"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None, feature_gates: GateReader | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.gates = feature_gates
        self.workload_with_job = bool(feature_gates is not None and _gate(feature_gates, WORKLOAD_WITH_JOB))
        self.release = str(getattr(feature_gates, "release", "1.36"))
        self.pod_control = PodControl(client, COMPONENT)
        self.expectations = ControllerExpectations(self.clock)
        self.finalizer_expectations: dict[str, set[str]] = {}
        self.backoff = BackoffStore()
        self.jobs = self.informer("batch/v1", "Job")
        self.pods = self.informer("v1", "Pod")
        add_workload_indexers(self.pods)
        # per-Job pod buckets, updated before the handlers below enqueue anything (podstate.py)
        self.pod_states = JobPodStates()
        self.pods.add_event_handler(on_add=lambda p: self.pod_states.observe(None, p),
                                    on_update=self.pod_states.observe, on_delete=self.pod_states.forget)
        self.jobs.add_event_handler(on_add=self._add_job, on_update=self._update_job, on_delete=self._delete_job)
        self.pods.add_event_handler(on_add=self._add_pod, on_update=self._update_pod,
                                    on_delete=lambda p: self._delete_pod(p, final=True))
        self.workloads: Informer | None = None
        self.pod_groups: Informer | None = None
        # Kubernetes 1.37 compiles `spec.scheduling` into v1beta1 objects (workload137.py); 1.36
        # infers a gang from the Job's shape (workload.py).
        self.scheduling_1_37: WorkloadScheduling | None = None
        if self.workload_with_job:
            api = SCHEDULING_API_1_37 if self.release == "1.37" else SCHEDULING_API
            self.workloads = self.informer(api, "Workload")
            self.pod_groups = self.informer(api, "PodGroup")
            if self.release == "1.37":
                self.scheduling_1_37 = WorkloadScheduling(client, self.workloads, self.pod_groups, self._event)
            for inf in (self.workloads, self.pod_groups):
                inf.add_event_handler(on_add=self._scheduling_object_changed,
                                      on_update=lambda o, n: self._scheduling_object_changed(n),
                                      on_delete=self._scheduling_object_changed)

    # -- event handlers --------------------------------------------------------------------------
    def _enqueue_batched(self, key: str) -> None:
        self.enqueue_after(key, SYNC_JOB_BATCH_PERIOD)

    def _resolve(self, namespace: str, ref: dict | None) -> Obj | None:
        if not ref or ref.get("kind") != "Job":
            return None
        job = self.jobs.get(f"{namespace}/{ref.get('name')}")
        if job is None or job["metadata"].get("uid") != ref.get("uid"):
            return None
        return job

    def _jobs_selecting(self, pod: Obj) -> list[Obj]:
        md = pod.get("metadata") or {}
        out = []
        for job in self.jobs.list(md.get("namespace")):
            sel = selector_of(job)
            if not sel.empty and sel.matches(md.get("labels") or {}):
                out.append(job)
        return out

    def _add_job(self, job: Obj) -> None:
        self.enqueue(object_key(job))

    def _update_job(self, old: Obj, cur: Obj) -> None:
        key = object_key(cur)
        if cur["metadata"].get("generation") == old["metadata"].get("generation"):
            self._enqueue_batched(key)
        else:
            self.enqueue(key)
        if is_job_finished(cur):
            self._cleanup_pod_finalizers(cur)
        status, spec = cur.get("status") or {}, cur.get("spec") or {}
        ads = spec.get("activeDeadlineSeconds")
        start = rfc3339_seconds(status.get("startTime"))
        if start is not None and ads is not None and (old.get("spec") or {}).get("activeDeadlineSeconds") != ads:
            self.enqueue_after(key, max(0.0, ads - (self.clock.now() - start)))

    def _delete_job(self, job: Obj) -> None:
        self.pod_states.drop(uid_of(job))
        self.enqueue(object_key(job))
        self._cleanup_pod_finalizers(job)

    def _cleanup_pod_finalizers(self, job: Obj) -> None:
        for pod in self.pods.by_index(INDEX_CONTROLLER_UID, job["metadata"].get("uid", "")):
            if has_tracking_finalizer(pod):
                self.enqueue(self.ORPHAN_PREFIX + object_key(pod))

    def _add_pod(self, pod: Obj) -> None:
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            self._delete_pod(pod, final=False)
            return
        ref = controller_of(pod)
        if ref is not None:
            job = self._resolve(md.get("namespace", ""), ref)
            if job is None:
                return
            key = object_key(job)
            self.expectations.creation_observed(key)
            self._enqueue_batched(key)
            return
        if has_tracking_finalizer(pod):
            self.enqueue(self.ORPHAN_PREFIX + object_key(pod))
        for job in self._jobs_selecting(pod):
            self._enqueue_batched(object_key(job))

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        md = cur["metadata"]
        if md.get("resourceVersion") == old["metadata"].get("resourceVersion"):
            return
        if md.get("deletionTimestamp"):
            self._delete_pod(cur, final=False)
            return
        finalizer_removed = not has_tracking_finalizer(cur)
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            job = self._resolve(md.get("namespace", ""), old_ref)
            if job is not None:
                if finalizer_removed:
                    self._finalizer_removal_observed(object_key(job), md.get("uid", ""))
                self._enqueue_batched(object_key(job))
        if cur_ref is not None:
            job = self._resolve(md.get("namespace", ""), cur_ref)
            if job is None:
                return
            if finalizer_removed:
                self._finalizer_removal_observed(object_key(job), md.get("uid", ""))
            self._enqueue_batched(object_key(job))
            return
        if has_tracking_finalizer(cur):
            self.enqueue(self.ORPHAN_PREFIX + object_key(cur))
        if (md.get("labels") or {}) != (old["metadata"].get("labels") or {}) or cur_ref != old_ref:
            for job in self._jobs_selecting(cur):
                self._enqueue_batched(object_key(job))

    def _delete_pod(self, pod: Obj, final: bool) -> None:
        md = pod.get("metadata") or {}
        ref = controller_of(pod)
        has_fin = has_tracking_finalizer(pod)
        if ref is None:
            if has_fin:
                self.enqueue(self.ORPHAN_PREFIX + object_key(pod))
            return
        job = self._resolve(md.get("namespace", ""), ref)
        if job is None or is_job_finished(job):
            if has_fin:
                self.enqueue(self.ORPHAN_PREFIX + object_key(pod))
            return
        key = object_key(job)
        self.expectations.deletion_observed(key, md.get("uid", ""))
        if final or not has_fin:
            self._finalizer_removal_observed(key, md.get("uid", ""))
        self._enqueue_batched(key)

    def _finalizer_removal_observed(self, key: str, uid: str) -> None:
        s = self.finalizer_expectations.get(key)
        if s is not None:
            s.discard(uid)
            if not s:
                del self.finalizer_expectations[key]

    def _scheduling_object_changed(self, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        for ref in md.get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("apiVersion") == "batch/v1":
                self.enqueue(f"{md.get('namespace', '')}/{ref.get('name')}")
                return

    # -- orphan pods -----------------------------------------------------------------------------
    async def _sync_orphan_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = controller_of(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return
            job = self._resolve(pod["metadata"].get("namespace", ""), ref)
            if job is not None and managed_by_external(job):
                return
            if job is not None and not is_job_finished(job):
                return  # adopted meanwhile
        await self._remove_finalizer(pod)

    async def _remove_finalizer(self, pod: Obj) -> None:
        md = pod["metadata"]
        body = {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}
        try:
            await self.pod_control.patch_pod(md.get("namespace", ""), md["name"], body, STRATEGIC_MERGE_PATCH)
        except StatusError as e:
            if e.code != 404:
                raise

    # -- the sync ----------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(self.ORPHAN_PREFIX):
            await self._sync_orphan_pod(key[len(self.ORPHAN_PREFIX):])
            return
        ns, name = split_key(key)
        if not ns or not name:
            return
        shared = self.jobs.get(key)
        if shared is None:
            self.expectations.delete(key)
            self.finalizer_expectations.pop(key, None)
            self.backoff.remove(key)
            return
        if managed_by_external(shared):
            return
        job = deep_copy(shared)
        if is_job_finished(job):
            self.backoff.remove(key)
            self.pod_states.drop(uid_of(job))
            return
        mode = job.setdefault("spec", {}).get("completionMode")
        if mode is not None and mode not in ("NonIndexed", "Indexed"):
            await self.client.create_event(job, "UnknownCompletionMode",
                                           "Skipped Job sync because completion mode is unknown",
                                           type="Warning", component=COMPONENT)
            return
        await self._sync_job(key, job)

    async def _sync_job(self, key: str, job: Obj) -> None:
        """Count the finished pods, decide whether the Job is done, converge its pods, write status."""
        satisfied = self.expectations.satisfied(key)
        ctx = await self._new_context(key, job)
        status = job["status"]
        if self.scheduling_1_37 is not None and not is_job_finished(job):
            ctx.pod_group = await self.scheduling_1_37.pod_group(job, ctx.has_pods)  # before startTime is set
        now = self.clock.now()
        if not status.get("startTime") and not job_suspended(job):
            status["startTime"] = rfc3339(self.clock)
        ctx.finished = self._finished_so_far(key, ctx, now)
        if is_indexed(job):
            self._check_indexes(ctx)
        if ctx.finished is not None:
            active, manage_error = await self._delete_pods_of_finished_job(ctx, satisfied)
            suspend_changed = False
        else:
            active, suspend_changed, manage_error = await self._converge_pods(key, ctx, satisfied)
        needs = suspend_changed or active != int_or(status.get("active")) or ctx.ready != status.get("ready") \
            or ctx.terminating != status.get("terminating")
        status["active"] = active
        status["ready"] = ctx.ready
        status["terminating"] = ctx.terminating
        await self._track_status_and_remove_finalizers(key, ctx, needs)
        if manage_error is not None:
            raise manage_error

    async def _new_context(self, key: str, job: Obj) -> SyncContext:
        """The Job's pods (adopting and releasing) from its pod state, and the counts of finished
        ones: what this costs grows with the pods still to count, not with all the Job's pods."""
        status = job.setdefault("status", {})
        unc = status.get("uncountedTerminatedPods") or {}
        status["uncountedTerminatedPods"] = {"succeeded": list(unc.get("succeeded") or []),
                                             "failed": list(unc.get("failed") or [])}
        state = await self._pods_for_job(job)
        finishing = list(state.finishing.values())
        if is_indexed(job):
            finishing.sort(key=completion_index)
        ctx = SyncContext(job=job, pods=finishing, active_pods=list(state.active.values()),
                          ready=len(state.ready), terminating=len(state.terminating),
                          uncounted_succeeded=set(unc.get("succeeded") or []),
                          uncounted_failed=set(unc.get("failed") or []),
                          expected_rm_finalizers=set(self.finalizer_expectations.get(key, ())),
                          terminating_pods=list(state.terminating.values()),
                          active_indexes=dict(state.active_indexes),
                          with_finalizer=set(state.with_finalizer), has_pods=bool(state.members))
        if job["spec"].get("podFailurePolicy"):
            ctx.failed_pods = list(state.failed.values())
        new_succeeded, new_failed = new_finished_pods(ctx)
        ctx.succeeded = int_or(status.get("succeeded")) + len(new_succeeded) + len(ctx.uncounted_succeeded)
        policy = job["spec"].get("podFailurePolicy")
        ctx.failed = int_or(status.get("failed")) + count_not_ignored(policy, new_failed) + len(ctx.uncounted_failed)
        ctx.new_backoff = self.backoff.new_record(key, new_succeeded, new_failed)
        return ctx

    def _finished_so_far(self, key: str, ctx: SyncContext, now: float) -> dict | None:
        """The condition the Job is heading for: SuccessCriteriaMet or FailureTarget already written,
        a FailJob rule, or a limit (backoff, active deadline) reached."""
        job = ctx.job
        scm = find_condition(job, SUCCESS_CRITERIA_MET)
        if scm and scm.get("status") == "True":
            return scm
        ft = find_condition(job, FAILURE_TARGET)
        if ft is not None and ft.get("status") == "True":
            return self._new_condition(FAILED, ft.get("reason", ""), ft.get("message", ""))
        msg = fail_job_message(job, ctx.failed_pods)
        if msg is not None:
            return self._new_condition(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg)
        return self._failure_by_limits(key, ctx, now)

    def _failure_by_limits(self, key: str, ctx: SyncContext, now: float) -> dict | None:
        job = ctx.job
        spec = job["spec"]
        if ctx.failed > int_or(spec.get("backoffLimit"), DEFAULT_BACKOFF_LIMIT) \
                or past_backoff_limit_on_failure(job, ctx.active_pods + ctx.terminating_pods):
            return self._new_condition(FAILURE_TARGET, REASON_BACKOFF_LIMIT, MSG_BACKOFF_LIMIT)
        if self._past_active_deadline(job):
            return self._new_condition(FAILURE_TARGET, REASON_DEADLINE, MSG_DEADLINE)
        if spec.get("activeDeadlineSeconds") is not None and not job_suspended(job):
            started = rfc3339_seconds(job["status"].get("startTime")) or now
            self.enqueue_after(key, max(0.0, spec["activeDeadlineSeconds"] - (now - started)))
        return None

    def _check_indexes(self, ctx: SyncContext) -> None:
        """Indexed Jobs: the succeeded and failed indexes, failure by indexes, the success policy."""
        job, spec = ctx.job, ctx.job["spec"]
        completions = int_or(spec.get("completions"))
        ctx.prev_succeeded_indexes, ctx.succeeded_indexes = succeeded_indexes(job, ctx.pods)
        ctx.succeeded = ctx.succeeded_indexes.total()
        if has_backoff_limit_per_index(job):
            ctx.failed_indexes = failed_indexes(job, ctx.pods)
            if ctx.finished is None:
                ctx.finished = self._failure_by_indexes(ctx, completions)
            failed_pods = valid_pods(ctx, None, lambda q: is_pod_failed(q, job))
            ctx.delayed_deletion = pods_with_delayed_deletion(failed_pods, ctx.active_indexes, ctx.succeeded_indexes,
                                                              ctx.failed_indexes)
        if ctx.finished is None:
            msg = match_success_policy(spec.get("successPolicy"), completions, ctx.succeeded_indexes)
            if msg is not None:
                ctx.finished = self._new_condition(SUCCESS_CRITERIA_MET, REASON_SUCCESS_POLICY, msg)

    def _failure_by_indexes(self, ctx: SyncContext, completions: int) -> dict | None:
        mfi = ctx.job["spec"].get("maxFailedIndexes")
        total_failed = ctx.failed_indexes.total() if ctx.failed_indexes is not None else 0
        if mfi is not None and total_failed > mfi:
            return self._new_condition(FAILURE_TARGET, REASON_MAX_FAILED_INDEXES, MSG_MAX_FAILED_INDEXES)
        if total_failed > 0 and total_failed + ctx.succeeded_indexes.total() >= completions:
            return self._new_condition(FAILURE_TARGET, REASON_FAILED_INDEXES, MSG_FAILED_INDEXES)
        return None

    async def _delete_pods_of_finished_job(self, ctx: SyncContext, satisfied: bool) -> tuple[int, BaseException | None]:
        """A Job heading for Complete/Failed loses its active pods; it finishes only once the cache
        shows every pod it expects."""
        active = len(ctx.active_pods)
        error: BaseException | None = None
        try:
            deleted_ready, deleted = await self._delete_active_pods(ctx.job, ctx.active_pods)
        except _PartialDelete as e:
            deleted_ready, deleted, error = e.ready, e.deleted, e.error
        if deleted != active or not satisfied:
            ctx.finished = None  # wait for finalizers and pods the cache has not shown yet
        ctx.terminating += deleted
        ctx.ready -= deleted_ready
        return active - deleted, error

    async def _converge_pods(self, key: str, ctx: SyncContext,
                             satisfied: bool) -> tuple[int, bool, BaseException | None]:
        """Create or delete pods (when the cache is up to date), then note completion or the
        Suspended condition: (active pods, Suspended changed, the error managing pods met)."""
        job = ctx.job
        active = len(ctx.active_pods)
        manage_error: BaseException | None = None
        manage_called = satisfied and not job["metadata"].get("deletionTimestamp")
        if manage_called:
            try:
                active = await self._manage_job(key, job, ctx)
            except _ManageError as e:
                active, manage_error = e.active, e.error
        completions = job["spec"].get("completions")
        if ctx.succeeded >= (1 if completions is None else completions) and active == 0:
            ctx.finished = self._new_condition(SUCCESS_CRITERIA_MET, REASON_COMPLETIONS_REACHED,
                                               MSG_COMPLETIONS_REACHED)
            return active, False, manage_error
        if not manage_called:
            return active, False, manage_error
        return active, await self._sync_suspended_condition(job), manage_error

    async def _sync_suspended_condition(self, job: Obj) -> bool:
        """Suspended=True (JobSuspended) or False (JobResumed) with its event; True when it changed."""
        if job_suspended(job):
            if not self._ensure_condition(job, SUSPENDED, "True", "JobSuspended", "Job suspended"):
                return False
            await self._event(job, "Suspended", "Job suspended")
            return True
        if not self._ensure_condition(job, SUSPENDED, "False", "JobResumed", "Job resumed"):
            return False
        await self._event(job, "Resumed", "Job resumed")
        # ActiveDeadlineSeconds counts the time a Job is continuously active.
        job["status"]["startTime"] = rfc3339(self.clock)
        return True

    def _past_active_deadline(self, job: Obj) -> bool:
        ads = (job.get("spec") or {}).get("activeDeadlineSeconds")
        start = rfc3339_seconds((job.get("status") or {}).get("startTime"))
        if ads is None or start is None or job_suspended(job):
            return False
        return self.clock.now() - start >= ads

    # -- managing pods -----------------------------------------------------------------------------
    async def _pods_for_job(self, job: Obj) -> JobPods:
        """The Job's pod state: the pods it controls and its selector matches, with the matching
        orphans it adopts (adding the tracking finalizer); controlled pods its selector no longer
        matches are released."""
        uid = uid_of(job)
        state = self.pod_states.for_job(job, lambda: self.pods.by_index(INDEX_CONTROLLER_UID, uid))
        orphans = self.pods.by_index(INDEX_ORPHANS, job["metadata"].get("namespace", ""))
        candidates = list(state.unmatched.values()) + orphans
        if candidates:
            for pod in await claim_objects(self.client, job, state.selector, candidates, api_version="v1", kind="Pod",
                                           adopt_finalizer=JOB_TRACKING_FINALIZER):
                state.put(pod)  # adopted: the informer's event follows
        return state

    async def _delete_active_pods(self, job: Obj, pods: list[Obj]) -> tuple[int, int]:
        """DELETE the active pods, keeping their finalizers (removed once counted)."""
        deleted, ready, first_error = 0, 0, None
        for pod in pods:
            md = pod["metadata"]
            try:
                await self.pod_control.delete_pod(md.get("namespace", ""), md["name"], job)
            except StatusError as e:
                if e.code != 404:
                    first_error = first_error or e
                    continue
            deleted += 1
            if is_pod_ready(pod):
                ready += 1
        if first_error is not None:
            raise _PartialDelete(ready, deleted, first_error)
        return ready, deleted

    async def _delete_job_pods(self, job: Obj, key: str, pods: list[Obj]) -> tuple[int, int, Exception | None]:
        """Remove the tracking finalizer, then DELETE (suspension, too many pods)."""
        deleted, ready, err = 0, 0, None
        for pod in pods:
            md = pod["metadata"]
            try:
                if has_tracking_finalizer(pod):
                    await self._remove_finalizer(pod)
                await self.pod_control.delete_pod(md.get("namespace", ""), md["name"], job)
                deleted += 1
            except StatusError as e:
                self.expectations.deletion_observed(key, md.get("uid", ""))
                if e.code == 404:
                    deleted += 1
                else:
                    err = err or e
                    continue
            if is_pod_ready(pod):
                ready += 1
        return ready, deleted, err


    async def _remove_active(self, job: Obj, key: str, ctx: SyncContext, active: int, to_delete: list) -> int:
        """Delete active pods (suspension or too many); the count of active pods left."""
        self.expectations.expect_deletions(key, [uid_of(p) for p in to_delete])
        ready, removed, err = await self._delete_job_pods(job, key, to_delete)
        active -= removed
        ctx.terminating += removed
        ctx.ready -= ready
        if err is not None:
            raise _ManageError(active, err)
        return active

    async def _manage_job(self, key: str, job: Obj, ctx: SyncContext) -> int:
        """Delete the pods a suspended Job or one with too many has, or create the missing ones;
        the count of active pods afterwards."""
        spec = job["spec"]
        active = len(ctx.active_pods)
        if job_suspended(job):
            return await self._remove_active(job, key, ctx, active, pods_for_removal(job, ctx.active_pods, active))
        want_active = _wanted_active(spec, ctx.succeeded, active)
        to_delete: list[Obj] = []
        if active > want_active or (is_indexed(job) and _index_conflicts(ctx)):
            to_delete = pods_for_removal(job, ctx.active_pods, max(0, active - want_active))
        if to_delete:
            return await self._remove_active(job, key, ctx, active, to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC])
        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want_active - terminating - active
        if diff <= 0:
            return active
        now = self.clock.now()
        if self._backing_off(key, ctx, now):
            return active
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int] = []
        if is_indexed(job):
            indexes = self._indexes_to_create(key, ctx, diff, now)
            diff = len(indexes)
        if diff <= 0:
            return active
        template = await self._pod_template(job, ctx)
        self.expectations.expect_creations(key, diff)
        return await self._create_pods(key, ctx, template, indexes, diff, active)

    def _backing_off(self, key: str, ctx: SyncContext, now: float) -> bool:
        """Without backoffLimitPerIndex, replacements wait out the Job's failure backoff."""
        if has_backoff_limit_per_index(ctx.job):
            return False
        remaining = ctx.new_backoff.remaining(now) if ctx.new_backoff else 0.0
        if remaining <= 0:
            return False
        self.enqueue_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
        return True

    def _indexes_to_create(self, key: str, ctx: SyncContext, count: int, now: float) -> list[int]:
        """The first `count` pending indexes; with backoffLimitPerIndex, those whose backoff passed."""
        indexes = first_pending_indexes(_non_pending_indexes(ctx), count, int_or(ctx.job["spec"].get("completions")))
        if not has_backoff_limit_per_index(ctx.job):
            return indexes
        indexes, remaining = indexes_ready_for_creation(indexes, ctx.delayed_deletion, now)
        if remaining > 0:
            self.enqueue_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
        return indexes

    async def _pod_template(self, job: Obj, ctx: SyncContext) -> Obj:
        """The pod template with the tracking finalizer, the index env and the gang's PodGroup."""
        template = deep_copy(job["spec"].get("template") or {})
        tmd = template.setdefault("metadata", {})
        if is_indexed(job):
            add_completion_index_env(template)
        finalizers = tmd.setdefault("finalizers", [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        if self.scheduling_1_37 is not None:
            if ctx.pod_group is not None:
                template.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": ctx.pod_group}
        elif self.workload_with_job:
            pod_group = await self._ensure_workload_and_pod_group(job, ctx.has_pods)
            if pod_group is not None:
                template.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": pod_group["metadata"]["name"]}
        return template

    async def _create_pods(self, key: str, ctx: SyncContext, template: Obj, indexes: list[int], diff: int,
                           active: int) -> int:
        """Create `diff` pods in slow-start batches; the count of active pods afterwards."""
        job = ctx.job
        ns = job["metadata"].get("namespace", "")

        async def create(i: int) -> None:
            t, gen = template, None
            if indexes:
                t, gen = indexed_pod_template(template, job, indexes[i], ctx.delayed_deletion.get(indexes[i]))
            try:
                await self.pod_control.create_pod(ns, t, job, gen)
            except StatusError as e:
                self.expectations.creation_observed(key)
                if is_namespace_terminating(e):
                    return
                raise

        active += diff
        try:
            await slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create)
        except BatchError as e:
            failed = diff - e.succeeded - e.skipped
            for _ in range(e.skipped):
                self.expectations.creation_observed(key)
            active -= failed + e.skipped
            raise _ManageError(active, e.first) from None
        return active

    # -- status and finalizers ---------------------------------------------------------------------
    async def _track_status_and_remove_finalizers(self, key: str, ctx: SyncContext, needs: bool) -> None:
        """Record finished pods in the status, remove their finalizers, then finish the Job once
        nothing is left uncounted or terminating."""
        job = ctx.job
        status = job["status"]
        pods = ctx.pods
        if ctx.finished is not None or job["metadata"].get("deletionTimestamp"):
            # active pods' finalizers go too (their pods were just deleted)
            pods = pods + ctx.active_pods
            if is_indexed(job):
                pods.sort(key=completion_index)
        with_finalizer = ctx.with_finalizer - ctx.expected_rm_finalizers
        needs = clean_uncounted(status, with_finalizer) or needs
        found = collect_finished_pods(ctx, pods)
        needs = found.changed or needs
        if is_indexed(job):
            needs = update_indexes_status(ctx, found.new_succeeded_indexes) or needs
        needs = promote_interim_condition(ctx, rfc3339(self.clock)) or needs
        needs, rm_error = await self._flush_and_remove_finalizers(key, ctx, found.to_remove, with_finalizer, needs)
        finished = not found.reached_max and enact_job_finished(ctx, rfc3339(self.clock))
        if needs or finished:
            ctx.job = await self._update_status(ctx.job)
            if finished and ctx.finished is not None:
                await self._record_job_finished(ctx.job, ctx.finished)
        if rm_error is not None:
            raise rm_error

    async def _flush_and_remove_finalizers(self, key: str, ctx: SyncContext, to_remove: list[Obj],
                                           with_finalizer: set[str], needs: bool) -> tuple[bool, Exception | None]:
        if needs:
            ctx.job = await self._update_status(ctx.job)
            if ctx.new_backoff is not None:
                self.backoff.update(ctx.new_backoff)
            needs = False
        rm_error: Exception | None = None
        if to_remove:
            expected = self.finalizer_expectations.setdefault(key, set())
            expected.update(uid_of(p) for p in to_remove)
            for pod in to_remove:
                try:
                    await self._remove_finalizer(pod)
                    with_finalizer.discard(uid_of(pod))
                except StatusError as e:
                    self._finalizer_removal_observed(key, uid_of(pod))
                    rm_error = rm_error or e
        if clean_uncounted(ctx.job["status"], with_finalizer):
            needs = True
        if rm_error is not None and needs:
            ctx.job = await self._update_status(ctx.job)
            needs = False
        return needs, rm_error

    async def _record_job_finished(self, job: Obj, cond: dict) -> None:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        if cond["type"] == COMPLETE:
            if spec.get("completions") is not None and int_or(status.get("succeeded")) > spec["completions"]:
                await self._event(job, "TooManySucceededPods",
                                  "Too many succeeded pods running after completion count reached", "Warning")
            await self._event(job, "Completed", "Job completed")
        else:
            await self._event(job, cond.get("reason", ""), cond.get("message", ""), "Warning")

    async def _update_status(self, job: Obj) -> Obj:
        out = deep_copy(job)
        out["status"] = status_for_write(job["status"])
        updated = await self.client.update_status(out)
        # keep working on the in-memory form (lists present), with the server's metadata
        job["metadata"] = updated["metadata"]
        return job

    # -- conditions and events ---------------------------------------------------------------------
    def _new_condition(self, ctype: str, reason: str, message: str, status: str = "True") -> dict:
        return new_condition(rfc3339(self.clock), ctype, reason, message, status)

    def _ensure_condition(self, job: Obj, ctype: str, status: str, reason: str, message: str) -> bool:
        return ensure_condition(job, rfc3339(self.clock), ctype, status, reason, message)

    async def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        await self.client.create_event(job, reason, message, type=type_, component=COMPONENT)

    # -- WorkloadWithJob -----------------------------------------------------------------------------
    async def _ensure_workload_and_pod_group(self, job: Obj, has_pods: bool) -> Obj | None:
        """KEP-5547: discover (or, before the Job's first pod, create) the Job's Workload and gang
        PodGroup. None when the Job is not eligible or has pods but no such objects."""
        if not gang_scheduling_eligible(job):
            return None
        workloads, pod_groups = self.workloads, self.pod_groups
        if workloads is None or pod_groups is None:
            return None  # WorkloadWithJob off: no informers for them
        ns = job["metadata"].get("namespace", "")
        wl_name = compute_workload_name(job)
        workload = workloads.get(f"{ns}/{wl_name}")
        if workload is None:
            if has_pods:
                return None
            workload = await self._create_or_get(workload_for_job(job, wl_name), "Workload", ns, wl_name)
            await self._event(job, "WorkloadCreated", f"Created Workload {workload['metadata']['name']} with gang "
                                                      f"scheduling (minCount={int_or(job['spec'].get('parallelism'))})")
        templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
        if len(templates) != 1:
            await self._event(job, "UnsupportedWorkloadStructure",
                              f"Workload {workload['metadata']['name']} has {len(templates)} PodGroupTemplates "
                              f"(expected 1), falling back to normal scheduling", "Warning")
            return None
        pg_name = compute_pod_group_name(workload["metadata"]["name"], templates[0].get("name", ""))
        pod_group = pod_groups.get(f"{ns}/{pg_name}")
        if pod_group is None:
            if has_pods:
                return None
            pod_group = await self._create_or_get(pod_group_for_workload(job, workload, pg_name), "PodGroup", ns,
                                                  pg_name)
            await self._event(job, "PodGroupCreated",
                              f"Created PodGroup {pod_group['metadata']['name']} for Workload "
                              f"{workload['metadata']['name']}")
        return pod_group

    async def _create_or_get(self, obj: Obj, kind: str, ns: str, name: str) -> Obj:
        try:
            return await self.client.create(obj)
        except StatusError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                return await self.client.get(SCHEDULING_API, kind, ns, name)
            raise


class _ManageError(Exception):
    def __init__(self, active: int, error: BaseException):
        super().__init__(str(error))
        self.active = active
        self.error = error


class _PartialDelete(Exception):
    def __init__(self, ready: int, deleted: int, error: Exception):
        super().__init__(str(error))
        self.ready = ready
        self.deleted = deleted
        self.error = error


def _gate(gates: GateReader, name: str) -> bool:
    try:
        return bool(gates.enabled(name))
    except Exception:  # an unknown gate is off
        return False


def _wanted_active(spec: Obj, succeeded: int, active: int) -> int:
    """How many pods should be active: parallelism, capped by the completions still missing."""
    parallelism = int_or(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(completions - succeeded, parallelism))


def _non_pending_indexes(ctx: SyncContext) -> Intervals:
    """Indexes that need no new pod: succeeded, active, terminating (when only failed pods are
    replaced) and failed."""
    non_pending = ctx.succeeded_indexes.with_indexes([ix for ix in ctx.active_indexes if ix >= 0])
    if only_replace_failed_pods(ctx.job):
        non_pending = non_pending.with_indexes(
            [completion_index(p) for p in ctx.terminating_pods if completion_index(p) >= 0])
    if ctx.failed_indexes is not None:
        non_pending = non_pending.merge(ctx.failed_indexes)
    return non_pending


def _index_conflicts(ctx: SyncContext) -> bool:
    """Some active pod shares its completion index with another or holds none in range."""
    indexes = ctx.active_indexes
    if len(indexes) != len(ctx.active_pods):
        return True
    return bool(indexes) and (min(indexes) < 0 or max(indexes) >= int_or(ctx.job["spec"].get("completions")))


def pods_for_removal(job: Obj, pods: list[Obj], rm_at_least: int) -> list[Obj]:
    """Active pods to delete: for an Indexed Job every pod outside the indexes and every duplicate
    of an index first, then at least `rm_at_least` in deletion order."""
    rm: list[Obj] = []
    left: list[Obj] = pods
    if is_indexed(job):
        rm, left = _indexed_duplicates(job, pods)
    if len(rm) < rm_at_least:
        ordered = active_pods_deletion_order(left)
        rm.extend(ordered[:rm_at_least - len(rm)])
    return rm


def _indexed_duplicates(job: Obj, pods: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    completions = int_or(job["spec"].get("completions"))
    rm: list[Obj] = []
    left: list[Obj] = []
    by_index: dict[int, list[Obj]] = {}
    for p in pods:
        ix = completion_index(p)
        if ix < 0 or ix >= completions:
            rm.append(p)
        else:
            by_index.setdefault(ix, []).append(p)
    for ix in sorted(by_index):
        group = by_index[ix]
        if len(group) == 1:
            left.append(group[0])
        else:
            ordered = active_pods_deletion_order(group)
            rm.extend(ordered[:-1])
            left.append(ordered[-1])
    return rm, left
