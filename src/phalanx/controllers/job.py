"""The Job controller and the TTL-after-finished controller (kube-controller-manager's `job` and
`ttl-after-finished` controllers), through `Client`.

    JobController(client, factory, clock=clock, feature_gates=gates).start()
    TTLAfterFinishedController(client, factory, clock=clock).start()

`JobController` keeps each batch/v1 Job's pods as upstream does and reports what they did:

- pods from the template with generateName `<job>-` (NonIndexed) or `<job>-<index>-` (Indexed), the
  labels/annotation `batch.kubernetes.io/job-completion-index`, env `JOB_COMPLETION_INDEX` on every
  container, hostname `<job>-<index>`, the Job as controller, and the `batch.kubernetes.io/job-tracking`
  finalizer, removed once the pod's end is counted (`status.uncountedTerminatedPods` first, then the
  counters: a crash between the two steps never counts a pod twice);
- completions and parallelism, `completedIndexes` / `failedIndexes` as compressed ranges ("0-2,4"),
  `backoffLimit` (container restarts of `OnFailure` pods count, `backoffLimit: 0` fails on the first),
  `backoffLimitPerIndex` / `maxFailedIndexes`, `activeDeadlineSeconds`, `podFailurePolicy`,
  `successPolicy`, `podReplacementPolicy`, suspend/resume, an exponential delay (10 s doubling to
  10 min) before replacing failed pods;
- conditions as 1.36 writes them: the interim `SuccessCriteriaMet` / `FailureTarget`, then `Complete` /
  `Failed` once no pod is left terminating, `Suspended` (JobSuspended / JobResumed); the events
  SuccessfulCreate, SuccessfulDelete, Completed, Suspended, Resumed and the failure reasons.
- with the `WorkloadWithJob` gate (alpha, off by default), an Indexed Job with parallelism ==
  completions > 1 and no `schedulingGroup` in its template gets a Workload and a gang PodGroup
  (minCount = parallelism) before its first pod; its pods carry `schedulingGroup.podGroupName`.

Jobs whose `spec.managedBy` names another controller are left alone.

`TTLAfterFinishedController` deletes (Foreground) finished Jobs whose `ttlSecondsAfterFinished` has
passed since their Complete/Failed condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..client.informer import object_key, split_key
from ..client.interface import STRATEGIC_MERGE_PATCH
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..machinery.timestamps import rfc3339_seconds
from ..client.controller import Controller
from .podcontrol import (INDEX_CONTROLLER_UID, BatchError, ControllerExpectations, PodControl,
                         active_pods_deletion_order, add_workload_indexers, candidates_for, claim_objects,
                         controller_ref, fnv32a, is_namespace_terminating, is_pod_active, is_pod_ready,
                         is_pod_terminating, pod_condition, pod_phase, rfc3339, safe_encode_string,
                         selector_of, slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE)

Obj = dict[str, Any]

COMPONENT = "job-controller"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
JOB_INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"
MAX_GENERATED_NAME_LENGTH = 58

SYNC_JOB_BATCH_PERIOD = 1.0
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0
MAX_UNCOUNTED_PODS = 500
MAX_POD_CREATE_DELETE_PER_SYNC = 500
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

# condition types and reasons (batch/v1)
COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
FAILURE_TARGET, SUCCESS_CRITERIA_MET = "FailureTarget", "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"
REASON_DEADLINE = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
REASON_FAILED_INDEXES = "FailedIndexes"
REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"
MSG_FAILED_INDEXES = "Job has failed indexes"
MSG_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"

SCHEDULING_API = "scheduling.k8s.io/v1alpha2"
WORKLOAD_WITH_JOB = "WorkloadWithJob"


# -- small Job helpers -------------------------------------------------------------------------------
def find_condition(job: Obj, ctype: str) -> dict | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def condition_true(job: Obj, ctype: str) -> bool:
    c = find_condition(job, ctype)
    return bool(c and c.get("status") == "True")


def is_job_finished(job: Obj) -> bool:
    """util.IsJobFinished: a Complete or Failed condition that is True."""
    return condition_true(job, COMPLETE) or condition_true(job, FAILED)


def finish_time(job: Obj) -> float | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in (COMPLETE, FAILED) and c.get("status") == "True":
            return rfc3339_seconds(c.get("lastTransitionTime"))
    return None


def is_indexed(job: Obj) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def has_backoff_limit_per_index(job: Obj) -> bool:
    return (job.get("spec") or {}).get("backoffLimitPerIndex") is not None


def job_suspended(job: Obj) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def only_replace_failed_pods(job: Obj) -> bool:
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def managed_by_external(job: Obj) -> str | None:
    mb = (job.get("spec") or {}).get("managedBy")
    return mb if mb and mb != JOB_CONTROLLER_NAME else None


def has_tracking_finalizer(pod: Obj) -> bool:
    return JOB_TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or [])


def completion_index(pod: Obj) -> int:
    """The pod's completion index annotation, or -1 when missing or invalid."""
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(JOB_COMPLETION_INDEX)
    try:
        i = int(v)
    except (TypeError, ValueError):
        return -1
    return i if i >= 0 else -1


def is_pod_failed(pod: Obj, job: Obj) -> bool:
    """A Failed pod, or (unless only failed pods are replaced) a deleted pod that did not succeed."""
    if pod_phase(pod) == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and pod_phase(pod) != "Succeeded"


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """`<job>-<index>-`, the job name truncated so the prefix stays within 58 characters."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _parse_int32(v: Any) -> int:
    try:
        i = int(v)
    except (TypeError, ValueError):
        return 0
    return i if 0 <= i <= 2**31 - 1 else 0


# -- ordered intervals ("0-2,4") ---------------------------------------------------------------------
class Intervals:
    """An ordered list of disjoint [first, last] index intervals (upstream's orderedIntervals)."""

    __slots__ = ("items",)

    def __init__(self, items: list[tuple[int, int]] | None = None):
        self.items: list[tuple[int, int]] = list(items or [])

    @classmethod
    def parse(cls, text: str | None, completions: int) -> "Intervals":
        out: list[list[int]] = []
        if not text:
            return cls()
        for part in text.split(","):
            limits = part.split("-")
            try:
                first = int(limits[0])
            except ValueError:
                continue
            if first >= completions:
                break
            if len(limits) > 1:
                try:
                    last = int(limits[1])
                except ValueError:
                    continue
                last = min(last, completions - 1)
            else:
                last = first
            if out and out[-1][1] == first - 1:
                out[-1][1] = last
            else:
                out.append([first, last])
        return cls([(a, b) for a, b in out])

    def merge(self, other: "Intervals") -> "Intervals":
        result: list[list[int]] = []

        def push(iv: tuple[int, int]) -> None:
            if not result or iv[0] > result[-1][1] + 1:
                result.append([iv[0], iv[1]])
            elif result[-1][1] < iv[1]:
                result[-1][1] = iv[1]

        a, b, i, j = self.items, other.items, 0, 0
        while i < len(a) and j < len(b):
            if a[i][0] < b[j][0]:
                push(a[i])
                i += 1
            else:
                push(b[j])
                j += 1
        for iv in a[i:]:
            push(iv)
        for iv in b[j:]:
            push(iv)
        return Intervals([(x, y) for x, y in result])

    def with_indexes(self, indexes: list[int]) -> "Intervals":
        return self.merge(Intervals([(i, i) for i in sorted(set(indexes))]))

    def total(self) -> int:
        return sum(b - a + 1 for a, b in self.items)

    def has(self, ix: int) -> bool:
        return any(a <= ix <= b for a, b in self.items)

    def __str__(self) -> str:
        parts = []
        for a, b in self.items:
            if b == a:
                parts.append(str(a))
            elif b == a + 1:
                parts.append(f"{a},{b}")
            else:
                parts.append(f"{a}-{b}")
        return ",".join(parts)

    def __len__(self) -> int:
        return len(self.items)


# -- pod failure policy and success policy -----------------------------------------------------------
def _matching_container(statuses: list, req: Obj) -> dict | None:
    name, op, values = req.get("containerName"), req.get("operator"), req.get("values") or []
    for cs in statuses or []:
        term = (cs.get("state") or {}).get("terminated")
        if not term:
            continue
        if name is not None and name != cs.get("name"):
            continue
        code = term.get("exitCode", 0)
        if code == 0:
            continue
        if (op == "In" and code in values) or (op == "NotIn" and code not in values):
            return cs
    return None


def match_pod_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str | None, bool, str | None]:
    """(FailJob message or None, count the failure?, matched action or None)."""
    if not policy:
        return None, True, None
    st = pod.get("status") or {}
    md = pod.get("metadata") or {}
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            cs = _matching_container(st.get("containerStatuses"), rule["onExitCodes"]) or \
                _matching_container(st.get("initContainerStatuses"), rule["onExitCodes"])
            if cs is None:
                continue
            if action == "FailJob":
                code = cs["state"]["terminated"].get("exitCode")
                return (f"Container {cs.get('name')} for pod {md.get('namespace')}/{md.get('name')} failed with exit "
                        f"code {code} matching FailJob rule at index {index}"), True, action
        elif rule.get("onPodConditions") is not None:
            cond = None
            for c in st.get("conditions") or []:
                if any(c.get("type") == p.get("type") and c.get("status") == (p.get("status") or "True")
                       for p in rule["onPodConditions"]):
                    cond = c
                    break
            if cond is None:
                continue
            if action == "FailJob":
                return (f"Pod {md.get('namespace')}/{md.get('name')} has condition {cond.get('type')} matching "
                        f"FailJob rule at index {index}"), True, action
        else:
            continue
        if action == "Ignore":
            return None, False, action
        if action in ("FailIndex", "Count"):
            return None, True, action
    return None, True, None


def match_success_policy(policy: Obj | None, completions: int, succeeded: Intervals) -> str | None:
    """The SuccessCriteriaMet message (`Matched rules at index <i>`) when a rule is met."""
    if not policy or not len(succeeded):
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = Intervals.parse(rule["succeededIndexes"], completions)
            if not len(required):
                continue
            contains = sum(1 for a, b in required.items for ix in range(a, b + 1) if succeeded.has(ix))
            if contains == required.total() or (count is not None and contains >= count):
                return f"Matched rules at index {index}"
        elif count is not None and succeeded.total() >= count:
            return f"Matched rules at index {index}"
    return None


# -- pod finish times and the failure backoff --------------------------------------------------------
def pod_finished_time(pod: Obj) -> float:
    """When the pod ended: its containers' latest finishedAt, else Ready=False's transition, else the
    deletion time minus the grace period, else its creation."""
    st = pod.get("status") or {}
    latest = None
    statuses = st.get("containerStatuses") or []
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated")
        t = rfc3339_seconds((term or {}).get("finishedAt"))
        if t is None:
            latest = None
            break
        latest = t if latest is None else max(latest, t)
    if statuses and latest is not None:
        return latest
    ready = pod_condition(pod, "Ready")
    if ready and ready.get("status") == "False":
        t = rfc3339_seconds(ready.get("lastTransitionTime"))
        if t is not None:
            return t
    md = pod.get("metadata") or {}
    t = rfc3339_seconds(md.get("deletionTimestamp"))
    if t is not None:
        return t - (md.get("deletionGracePeriodSeconds") or 0)
    return rfc3339_seconds(md.get("creationTimestamp")) or 0.0


@dataclass
class BackoffRecord:
    key: str
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def remaining(self, now: float, base: float = DEFAULT_POD_FAILURE_BACKOFF,
                  cap: float = MAX_POD_FAILURE_BACKOFF) -> float:
        return remaining_for_failures(now, base, cap, self.failures_after_last_success, self.last_failure_time)


def remaining_for_failures(now: float, base: float, cap: float, failures: int, last: float | None) -> float:
    if failures == 0 or last is None:
        return 0.0
    backoff = base
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= cap:
            backoff = cap
            break
    elapsed = now - last
    return 0.0 if backoff < elapsed else backoff - elapsed


class BackoffStore:
    """Per-Job count of pod failures since the last success (in memory, as upstream)."""

    def __init__(self):
        self._records: dict[str, BackoffRecord] = {}

    def new_record(self, key: str, succeeded: list[Obj], failed: list[Obj]) -> BackoffRecord:
        old = self._records.get(key)
        rec = BackoffRecord(key, old.failures_after_last_success, old.last_failure_time) if old else BackoffRecord(key)
        s_times = sorted(pod_finished_time(p) for p in succeeded)
        f_times = sorted(pod_finished_time(p) for p in failed)
        if not s_times:
            if f_times:
                rec.failures_after_last_success += len(f_times)
                rec.last_failure_time = f_times[-1]
            return rec
        rec.failures_after_last_success, rec.last_failure_time = 0, None
        last_success = s_times[-1]
        for t in reversed(f_times):
            if t <= last_success:
                break
            if rec.last_failure_time is None:
                rec.last_failure_time = t
            rec.failures_after_last_success += 1
        return rec

    def update(self, rec: BackoffRecord) -> None:
        self._records[rec.key] = rec

    def remove(self, key: str) -> None:
        self._records.pop(key, None)


# -- the sync context ---------------------------------------------------------------------------------
@dataclass
class _SyncCtx:
    job: Obj
    pods: list[Obj]
    active_pods: list[Obj]
    ready: int
    terminating: int
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_rm_finalizers: set[str]
    succeeded: int = 0
    failed: int = 0
    finished: dict | None = None
    prev_succeeded_indexes: Intervals = field(default_factory=Intervals)
    succeeded_indexes: Intervals = field(default_factory=Intervals)
    failed_indexes: Intervals | None = None
    new_backoff: BackoffRecord | None = None
    delayed_deletion: dict[int, Obj] = field(default_factory=dict)


def _uid(pod: Obj) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


class JobController(Controller):
    name = "job"
    workers = 5  # --concurrent-job-syncs

    ORPHAN_PREFIX = "orphan-pod:"

    def __init__(self, client: Any, factory: Any = None, *, clock=None, workers: int | None = None,
                 feature_gates: Any = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.gates = feature_gates
        self.workload_with_job = bool(feature_gates is not None and _gate(feature_gates, WORKLOAD_WITH_JOB))
        self.pod_control = PodControl(client, COMPONENT)
        self.expectations = ControllerExpectations(self.clock)
        self.finalizer_expectations: dict[str, set[str]] = {}
        self.backoff = BackoffStore()
        self.jobs = self.informer("batch/v1", "Job")
        self.pods = self.informer("v1", "Pod")
        add_workload_indexers(self.pods)
        self.jobs.add_event_handler(on_add=self._add_job, on_update=self._update_job, on_delete=self._delete_job)
        self.pods.add_event_handler(on_add=self._add_pod, on_update=self._update_pod,
                                    on_delete=lambda p: self._delete_pod(p, final=True))
        self.workloads = self.pod_groups = None
        if self.workload_with_job:
            self.workloads = self.informer(SCHEDULING_API, "Workload")
            self.pod_groups = self.informer(SCHEDULING_API, "PodGroup")
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
            return
        spec = job.setdefault("spec", {})
        mode = spec.get("completionMode")
        if mode is not None and mode not in ("NonIndexed", "Indexed"):
            await self.client.create_event(job, "UnknownCompletionMode",
                                           "Skipped Job sync because completion mode is unknown",
                                           type="Warning", component=COMPONENT)
            return
        status = job.setdefault("status", {})
        unc = status.get("uncountedTerminatedPods") or {}
        status["uncountedTerminatedPods"] = {"succeeded": list(unc.get("succeeded") or []),
                                             "failed": list(unc.get("failed") or [])}
        satisfied = self.expectations.satisfied(key)
        pods = await self._pods_for_job(job)
        active_pods = [p for p in pods if is_pod_active(p)]
        ctx = _SyncCtx(job=job, pods=pods, active_pods=active_pods,
                       ready=sum(1 for p in active_pods if is_pod_ready(p)),
                       terminating=sum(1 for p in pods if is_pod_terminating(p)),
                       uncounted_succeeded=set(unc.get("succeeded") or []),
                       uncounted_failed=set(unc.get("failed") or []),
                       expected_rm_finalizers=set(self.finalizer_expectations.get(key, ())))
        active = len(active_pods)
        new_succeeded, new_failed = self._new_finished_pods(ctx)
        ctx.succeeded = _int(status.get("succeeded")) + len(new_succeeded) + len(ctx.uncounted_succeeded)
        ctx.failed = _int(status.get("failed")) + self._non_ignored_failed(ctx, new_failed) + \
            len(ctx.uncounted_failed)
        now = self.clock.now()
        if not status.get("startTime") and not job_suspended(job):
            status["startTime"] = rfc3339(self.clock)
        ctx.new_backoff = self.backoff.new_record(key, new_succeeded, new_failed)

        backoff_limit = _int(spec.get("backoffLimit"), 6)
        exceeds_backoff_limit = ctx.failed > backoff_limit
        scm = find_condition(job, SUCCESS_CRITERIA_MET)
        ctx.finished = scm if scm and scm.get("status") == "True" else None
        if ctx.finished is None:
            ft = find_condition(job, FAILURE_TARGET)
            if ft is not None and ft.get("status") == "True":
                ctx.finished = self._new_condition(FAILED, ft.get("reason", ""), ft.get("message", ""))
            else:
                msg = self._fail_job_message(job, pods)
                if msg is not None:
                    ctx.finished = self._new_condition(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg)
        if ctx.finished is None:
            if exceeds_backoff_limit or self._past_backoff_limit_on_failure(job, pods):
                ctx.finished = self._new_condition(FAILURE_TARGET, REASON_BACKOFF_LIMIT, MSG_BACKOFF_LIMIT)
            elif self._past_active_deadline(job):
                ctx.finished = self._new_condition(FAILURE_TARGET, REASON_DEADLINE, MSG_DEADLINE)
            elif spec.get("activeDeadlineSeconds") is not None and not job_suspended(job):
                started = rfc3339_seconds(status.get("startTime")) or now
                self.enqueue_after(key, max(0.0, spec["activeDeadlineSeconds"] - (now - started)))

        if is_indexed(job):
            completions = _int(spec.get("completions"))
            ctx.prev_succeeded_indexes, ctx.succeeded_indexes = self._succeeded_indexes(job, pods)
            ctx.succeeded = ctx.succeeded_indexes.total()
            if has_backoff_limit_per_index(job):
                ctx.failed_indexes = self._failed_indexes(job, pods)
                if ctx.finished is None:
                    mfi = spec.get("maxFailedIndexes")
                    total_failed = ctx.failed_indexes.total()
                    if mfi is not None and total_failed > mfi:
                        ctx.finished = self._new_condition(FAILURE_TARGET, REASON_MAX_FAILED_INDEXES,
                                                           MSG_MAX_FAILED_INDEXES)
                    elif total_failed > 0 and total_failed + ctx.succeeded_indexes.total() >= completions:
                        ctx.finished = self._new_condition(FAILURE_TARGET, REASON_FAILED_INDEXES, MSG_FAILED_INDEXES)
                ctx.delayed_deletion = self._pods_with_delayed_deletion(ctx)
            if ctx.finished is None:
                msg = match_success_policy(spec.get("successPolicy"), completions, ctx.succeeded_indexes)
                if msg is not None:
                    ctx.finished = self._new_condition(SUCCESS_CRITERIA_MET, REASON_SUCCESS_POLICY, msg)

        suspend_changed = False
        manage_error: Exception | None = None
        if ctx.finished is not None:
            try:
                deleted_ready, deleted = await self._delete_active_pods(job, ctx.active_pods)
            except _PartialDelete as e:
                deleted_ready, deleted, manage_error = e.ready, e.deleted, e.error
            if deleted != active or not satisfied:
                ctx.finished = None  # wait for finalizers and pods the cache has not shown yet
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
        else:
            manage_called = False
            if satisfied and not job["metadata"].get("deletionTimestamp"):
                try:
                    active = await self._manage_job(key, job, ctx)
                except _ManageError as e:
                    active, manage_error = e.active, e.error
                manage_called = True
            completions = spec.get("completions")
            if completions is None:
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= completions and active == 0
            if complete:
                ctx.finished = self._new_condition(SUCCESS_CRITERIA_MET, REASON_COMPLETIONS_REACHED,
                                                   MSG_COMPLETIONS_REACHED)
            elif manage_called:
                if job_suspended(job):
                    if self._ensure_condition(job, SUSPENDED, "True", "JobSuspended", "Job suspended"):
                        suspend_changed = True
                        await self._event(job, "Suspended", "Job suspended")
                else:
                    if self._ensure_condition(job, SUSPENDED, "False", "JobResumed", "Job resumed"):
                        suspend_changed = True
                        await self._event(job, "Resumed", "Job resumed")
                        # ActiveDeadlineSeconds counts the time a Job is continuously active.
                        status["startTime"] = rfc3339(self.clock)

        needs = suspend_changed or active != _int(status.get("active")) or ctx.ready != status.get("ready") \
            or ctx.terminating != status.get("terminating")
        status["active"] = active
        status["ready"] = ctx.ready
        status["terminating"] = ctx.terminating
        await self._track_status_and_remove_finalizers(key, ctx, needs)
        if manage_error is not None:
            raise manage_error

    # -- counting ----------------------------------------------------------------------------------
    def _valid_pods(self, ctx: _SyncCtx, uncounted: set[str] | None, pred) -> list[Obj]:
        out = []
        completions = _int((ctx.job.get("spec") or {}).get("completions"))
        for p in ctx.pods:
            uid = _uid(p)
            if not has_tracking_finalizer(p) or (uncounted and uid in uncounted) or uid in ctx.expected_rm_finalizers:
                continue
            if is_indexed(ctx.job):
                ix = completion_index(p)
                if ix < 0 or ix >= completions:
                    continue
            if pred(p):
                out.append(p)
        return out

    def _new_finished_pods(self, ctx: _SyncCtx) -> tuple[list[Obj], list[Obj]]:
        succeeded = self._valid_pods(ctx, ctx.uncounted_succeeded, lambda p: pod_phase(p) == "Succeeded")
        failed = self._valid_pods(ctx, ctx.uncounted_failed, lambda p: is_pod_failed(p, ctx.job))
        return succeeded, failed

    @staticmethod
    def _non_ignored_failed(ctx: _SyncCtx, failed: list[Obj]) -> int:
        policy = (ctx.job.get("spec") or {}).get("podFailurePolicy")
        if not policy:
            return len(failed)
        return sum(1 for p in failed if match_pod_failure_policy(policy, p)[1])

    @staticmethod
    def _fail_job_message(job: Obj, pods: list[Obj]) -> str | None:
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        if not policy:
            return None
        for p in pods:
            if is_pod_failed(p, job):
                msg = match_pod_failure_policy(policy, p)[0]
                if msg is not None:
                    return msg
        return None

    @staticmethod
    def _past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
        """Container restarts of OnFailure pods count toward backoffLimit: any restart with
        `backoffLimit: 0`, otherwise at least backoffLimit restarts among running/pending pods."""
        spec = job.get("spec") or {}
        if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
            return False
        total = 0
        for p in pods:
            if pod_phase(p) in ("Running", "Pending"):
                st = p.get("status") or {}
                for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
                    total += cs.get("restartCount") or 0
        limit = _int(spec.get("backoffLimit"), 6)
        return total > 0 if limit == 0 else total >= limit

    def _past_active_deadline(self, job: Obj) -> bool:
        ads = (job.get("spec") or {}).get("activeDeadlineSeconds")
        start = rfc3339_seconds((job.get("status") or {}).get("startTime"))
        if ads is None or start is None or job_suspended(job):
            return False
        return self.clock.now() - start >= ads

    def _succeeded_indexes(self, job: Obj, pods: list[Obj]) -> tuple[Intervals, Intervals]:
        completions = _int((job.get("spec") or {}).get("completions"))
        prev = Intervals.parse((job.get("status") or {}).get("completedIndexes"), completions)
        new = [completion_index(p) for p in pods
               if pod_phase(p) == "Succeeded" and 0 <= completion_index(p) < completions and has_tracking_finalizer(p)]
        return prev, prev.with_indexes(new)

    def _failed_indexes(self, job: Obj, pods: list[Obj]) -> Intervals:
        completions = _int((job.get("spec") or {}).get("completions"))
        prev = Intervals.parse((job.get("status") or {}).get("failedIndexes"), completions)
        new = [completion_index(p) for p in pods if 0 <= completion_index(p) < completions
               and has_tracking_finalizer(p) and self._is_index_failed(job, p)]
        return prev.with_indexes(new)

    @staticmethod
    def _is_index_failed(job: Obj, pod: Obj) -> bool:
        counted = False
        if is_pod_failed(pod, job):
            policy = (job.get("spec") or {}).get("podFailurePolicy")
            if policy:
                _, count, action = match_pod_failure_policy(policy, pod)
                if action == "FailIndex":
                    return True
                counted = count
            else:
                counted = True
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        limit = _int(job["spec"].get("backoffLimitPerIndex"))
        return counted and _parse_int32(ann.get(JOB_INDEX_FAILURE_COUNT)) >= limit

    def _pods_with_delayed_deletion(self, ctx: _SyncCtx) -> dict[int, Obj]:
        """Failed pods whose finalizer stays until their index's replacement exists, so the
        replacement can carry the index's failure count."""
        active_indexes = {completion_index(p) for p in ctx.active_pods if completion_index(p) >= 0}
        out: dict[int, Obj] = {}
        for p in self._valid_pods(ctx, None, lambda q: is_pod_failed(q, ctx.job)):
            ix = completion_index(p)
            if ctx.succeeded_indexes.has(ix) or (ctx.failed_indexes and ctx.failed_indexes.has(ix)) \
                    or ix in active_indexes:
                continue
            last = out.get(ix)
            if last is None or (_abs_failure_count(last) <= _abs_failure_count(p)
                                and pod_finished_time(p) >= pod_finished_time(last)):
                out[ix] = p
        return out

    # -- managing pods -----------------------------------------------------------------------------
    async def _pods_for_job(self, job: Obj) -> list[Obj]:
        """The Job's pods: those it controls and matching orphans it adopts (adding the tracking
        finalizer); controlled pods its selector no longer matches are released."""
        return await claim_objects(self.client, job, selector_of(job), candidates_for(self.pods, job),
                                   api_version="v1", kind="Pod", adopt_finalizer=JOB_TRACKING_FINALIZER)

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

    def _pods_for_removal(self, job: Obj, pods: list[Obj], rm_at_least: int) -> list[Obj]:
        rm: list[Obj] = []
        left: list[Obj] = pods
        if is_indexed(job):
            completions = _int(job["spec"].get("completions"))
            rm, left = [], []
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
        if len(rm) < rm_at_least:
            ordered = active_pods_deletion_order(left)
            rm.extend(ordered[:rm_at_least - len(rm)])
        return rm

    def _first_pending_indexes(self, ctx: _SyncCtx, count: int, completions: int) -> list[int]:
        if count == 0:
            return []
        non_pending = ctx.succeeded_indexes.with_indexes(
            [completion_index(p) for p in ctx.active_pods if completion_index(p) >= 0])
        if only_replace_failed_pods(ctx.job):
            non_pending = non_pending.with_indexes(
                [completion_index(p) for p in ctx.pods if is_pod_terminating(p) and completion_index(p) >= 0])
        if ctx.failed_indexes is not None:
            non_pending = non_pending.merge(ctx.failed_indexes)
        out: list[int] = []
        candidate = 0
        for first, last in non_pending.items:
            while candidate < completions and len(out) < count and candidate < first:
                out.append(candidate)
                candidate += 1
            if candidate < last + 1:
                candidate = last + 1
        while candidate < completions and len(out) < count:
            out.append(candidate)
            candidate += 1
        return out

    async def _remove_active(self, job: Obj, key: str, ctx: _SyncCtx, active: int, to_delete: list) -> int:
        """Delete active pods (suspension or too many); the count of active pods left."""
        self.expectations.expect_deletions(key, [_uid(p) for p in to_delete])
        ready, removed, err = await self._delete_job_pods(job, key, to_delete)
        active -= removed
        ctx.terminating += removed
        ctx.ready -= ready
        if err is not None:
            raise _ManageError(active, err)
        return active

    async def _manage_job(self, key: str, job: Obj, ctx: _SyncCtx) -> int:
        spec = job["spec"]
        active = len(ctx.active_pods)
        parallelism = _int(spec.get("parallelism"), 1)
        if job_suspended(job):
            return await self._remove_active(job, key, ctx, active,
                                             self._pods_for_removal(job, ctx.active_pods, active))
        completions = spec.get("completions")
        if completions is None:
            want_active = active if ctx.succeeded > 0 else parallelism
        else:
            want_active = max(0, min(completions - ctx.succeeded, parallelism))
        rm_at_least = max(0, active - want_active)
        to_delete = self._pods_for_removal(job, ctx.active_pods, rm_at_least)[:MAX_POD_CREATE_DELETE_PER_SYNC]
        if to_delete:
            return await self._remove_active(job, key, ctx, active, to_delete)
        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want_active - terminating - active
        if diff <= 0:
            return active
        now = self.clock.now()
        if not has_backoff_limit_per_index(job):
            remaining = ctx.new_backoff.remaining(now) if ctx.new_backoff else 0.0
            if remaining > 0:
                self.enqueue_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
                return active
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int] = []
        if is_indexed(job):
            indexes = self._first_pending_indexes(ctx, diff, _int(completions))
            if has_backoff_limit_per_index(job):
                indexes, remaining = self._indexes_ready_for_creation(indexes, ctx.delayed_deletion, now)
                if remaining > 0:
                    self.enqueue_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
                    return active
            diff = len(indexes)
        if diff <= 0:
            return active
        template = deep_copy(spec.get("template") or {})
        tmd = template.setdefault("metadata", {})
        if is_indexed(job):
            _add_completion_index_env(template)
        finalizers = tmd.setdefault("finalizers", [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        if self.workload_with_job:
            pod_group = await self._ensure_workload_and_pod_group(job, ctx.pods)
            if pod_group is not None:
                template.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": pod_group["metadata"]["name"]}
        self.expectations.expect_creations(key, diff)
        job_name = job["metadata"]["name"]
        ns = job["metadata"].get("namespace", "")

        async def create(i: int) -> None:
            t, gen = template, None
            if indexes:
                ix = indexes[i]
                t = deep_copy(template)
                md = t.setdefault("metadata", {})
                md.setdefault("annotations", {})[JOB_COMPLETION_INDEX] = str(ix)
                md.setdefault("labels", {})[JOB_COMPLETION_INDEX] = str(ix)
                t.setdefault("spec", {})["hostname"] = f"{job_name}-{ix}"
                gen = pod_generate_name_with_index(job_name, ix)
                if has_backoff_limit_per_index(job):
                    _add_index_failure_count_annotation(t, job, ctx.delayed_deletion.get(ix))
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

    def _indexes_ready_for_creation(self, indexes: list[int], delayed: dict[int, Obj],
                                    now: float) -> tuple[list[int], float]:
        ready: list[int] = []
        min_remaining: float | None = None
        for ix in indexes:
            last = delayed.get(ix)
            remaining = 0.0
            if last is not None:
                remaining = remaining_for_failures(now, DEFAULT_POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF,
                                                   _abs_failure_count(last) + 1, pod_finished_time(last))
            if remaining == 0:
                ready.append(ix)
            elif min_remaining is None or remaining < min_remaining:
                min_remaining = remaining
        if ready:
            return ready, 0.0
        return ready, min_remaining or 0.0

    # -- status and finalizers ---------------------------------------------------------------------
    def _can_remove_finalizer(self, ctx: _SyncCtx, pod: Obj, considered_failed: bool) -> bool:
        if ctx.job["metadata"].get("deletionTimestamp") or ctx.finished is not None or pod_phase(pod) == "Succeeded":
            return True
        if not considered_failed:
            return False
        if has_backoff_limit_per_index(ctx.job):
            ix = completion_index(pod)
            if ix >= 0:
                p = ctx.delayed_deletion.get(ix)
                if p is not None and _uid(p) == _uid(pod):
                    return False
        return True

    @staticmethod
    def _clean_uncounted(status: Obj, with_finalizer: set[str]) -> bool:
        """Move uncounted pods whose finalizer is gone into the counters."""
        unc = status["uncountedTerminatedPods"]
        updated = False
        for field_, counter in (("succeeded", "succeeded"), ("failed", "failed")):
            keep = [u for u in unc[field_] if u in with_finalizer]
            if len(keep) != len(unc[field_]):
                updated = True
                status[counter] = _int(status.get(counter)) + len(unc[field_]) - len(keep)
                unc[field_] = keep
        return updated

    async def _track_status_and_remove_finalizers(self, key: str, ctx: _SyncCtx, needs: bool) -> None:
        job = ctx.job
        status = job["status"]
        spec = job["spec"]
        indexed = is_indexed(job)
        completions = _int(spec.get("completions"))
        pods = sorted(ctx.pods, key=completion_index) if indexed else ctx.pods
        with_finalizer = {_uid(p) for p in pods
                          if has_tracking_finalizer(p) and _uid(p) not in ctx.expected_rm_finalizers}
        if self._clean_uncounted(status, with_finalizer):
            needs = True
        unc = status["uncountedTerminatedPods"]
        to_remove: list[Obj] = []
        new_succeeded_indexes: list[int] = []
        reached_max = False
        policy = spec.get("podFailurePolicy")
        success_target = ctx.finished is not None and ctx.finished.get("type") == SUCCESS_CRITERIA_MET
        for pod in pods:
            uid = _uid(pod)
            if not has_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers:
                continue
            considered_failed = is_pod_failed(pod, job)
            if not self._can_remove_finalizer(ctx, pod, considered_failed):
                continue
            to_remove.append(pod)
            if pod_phase(pod) == "Succeeded" and uid not in ctx.uncounted_failed:
                if indexed:
                    ix = completion_index(pod)
                    if 0 <= ix < completions and not ctx.prev_succeeded_indexes.has(ix):
                        new_succeeded_indexes.append(ix)
                        needs = True
                elif uid not in ctx.uncounted_succeeded:
                    needs = True
                    unc["succeeded"].append(uid)
            elif considered_failed or (ctx.finished is not None and not success_target):
                ix = completion_index(pod)
                if uid not in ctx.uncounted_failed and (not indexed or 0 <= ix < completions):
                    if policy:
                        if match_pod_failure_policy(policy, pod)[1]:
                            needs = True
                            unc["failed"].append(uid)
                    else:
                        needs = True
                        unc["failed"].append(uid)
            if len(new_succeeded_indexes) + len(unc["succeeded"]) + len(unc["failed"]) >= MAX_UNCOUNTED_PODS:
                reached_max = True
                break
        if indexed:
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_indexes(new_succeeded_indexes)
            text = str(ctx.succeeded_indexes)
            if text != (status.get("completedIndexes") or ""):
                needs = True
            status["succeeded"] = ctx.succeeded_indexes.total()
            status["completedIndexes"] = text
            failed_text = str(ctx.failed_indexes) if ctx.failed_indexes is not None else None
            if failed_text != status.get("failedIndexes"):
                status["failedIndexes"] = failed_text
                needs = True
        if ctx.finished is not None and ctx.finished.get("type") == FAILURE_TARGET:
            status.setdefault("conditions", []).append(ctx.finished)
            needs = True
            ctx.finished = self._new_condition(FAILED, ctx.finished.get("reason", ""), ctx.finished.get("message", ""))
        if ctx.finished is not None and ctx.finished.get("type") == SUCCESS_CRITERIA_MET \
                and ctx.finished.get("status") == "True":
            if not condition_true(job, SUCCESS_CRITERIA_MET):
                status.setdefault("conditions", []).append(ctx.finished)
                needs = True
            ctx.finished = self._new_condition(COMPLETE, ctx.finished.get("reason", ""),
                                               ctx.finished.get("message", ""))
        needs, rm_error = await self._flush_and_remove_finalizers(key, ctx, to_remove, with_finalizer, needs)
        finished = not reached_max and self._enact_job_finished(ctx)
        if finished:
            needs = True
        if needs:
            ctx.job = await self._update_status(ctx.job)
            if finished:
                await self._record_job_finished(ctx.job, ctx.finished)
        if rm_error is not None:
            raise rm_error

    async def _flush_and_remove_finalizers(self, key: str, ctx: _SyncCtx, to_remove: list[Obj],
                                           with_finalizer: set[str], needs: bool) -> tuple[bool, Exception | None]:
        if needs:
            ctx.job = await self._update_status(ctx.job)
            if ctx.new_backoff is not None:
                self.backoff.update(ctx.new_backoff)
            needs = False
        rm_error: Exception | None = None
        if to_remove:
            expected = self.finalizer_expectations.setdefault(key, set())
            expected.update(_uid(p) for p in to_remove)
            for pod in to_remove:
                md = pod["metadata"]
                try:
                    await self._remove_finalizer(pod)
                    with_finalizer.discard(_uid(pod))
                except StatusError as e:
                    self._finalizer_removal_observed(key, md.get("uid", ""))
                    rm_error = rm_error or e
        if self._clean_uncounted(ctx.job["status"], with_finalizer):
            needs = True
        if rm_error is not None and needs:
            ctx.job = await self._update_status(ctx.job)
            needs = False
        return needs, rm_error

    def _enact_job_finished(self, ctx: _SyncCtx) -> bool:
        if ctx.finished is None:
            return False
        status = ctx.job["status"]
        unc = status["uncountedTerminatedPods"]
        if unc["succeeded"] or unc["failed"]:
            return False
        if ctx.terminating > 0:
            return False
        c = ctx.finished
        self._ensure_condition(ctx.job, c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        if c["type"] == COMPLETE:
            status["completionTime"] = find_condition(ctx.job, COMPLETE)["lastTransitionTime"]
        return True

    async def _record_job_finished(self, job: Obj, cond: dict) -> None:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        if cond["type"] == COMPLETE:
            if spec.get("completions") is not None and _int(status.get("succeeded")) > spec["completions"]:
                await self._event(job, "TooManySucceededPods",
                                  "Too many succeeded pods running after completion count reached", "Warning")
            await self._event(job, "Completed", "Job completed")
        else:
            await self._event(job, cond.get("reason", ""), cond.get("message", ""), "Warning")

    async def _update_status(self, job: Obj) -> Obj:
        out = deep_copy(job)
        out["status"] = _status_for_write(job["status"])
        updated = await self.client.update_status(out)
        # keep working on the in-memory form (lists present), with the server's metadata
        job["metadata"] = updated["metadata"]
        return job

    # -- conditions and events ---------------------------------------------------------------------
    def _new_condition(self, ctype: str, reason: str, message: str, status: str = "True") -> dict:
        now = rfc3339(self.clock)
        return {"type": ctype, "status": status, "lastProbeTime": now, "lastTransitionTime": now,
                "reason": reason, "message": message}

    def _ensure_condition(self, job: Obj, ctype: str, status: str, reason: str, message: str) -> bool:
        """ensureJobConditionStatus: update a condition of that type when anything differs; add one
        only when its status is not False."""
        conds = job["status"].setdefault("conditions", [])
        for i, c in enumerate(conds):
            if c.get("type") == ctype:
                if c.get("status") != status or c.get("reason") != reason or c.get("message") != message:
                    conds[i] = self._new_condition(ctype, reason, message, status)
                    return True
                return False
        if status != "False":
            conds.append(self._new_condition(ctype, reason, message, status))
            return True
        return False

    async def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        await self.client.create_event(job, reason, message, type=type_, component=COMPONENT)

    # -- WorkloadWithJob -----------------------------------------------------------------------------
    async def _ensure_workload_and_pod_group(self, job: Obj, pods: list[Obj]) -> Obj | None:
        """KEP-5547: discover (or, before the Job's first pod, create) the Job's Workload and gang
        PodGroup. None when the Job is not eligible or has pods but no such objects."""
        if not gang_scheduling_eligible(job):
            return None
        has_pods = bool(pods)
        ns = job["metadata"].get("namespace", "")
        wl_name = compute_workload_name(job)
        workload = self.workloads.get(f"{ns}/{wl_name}")
        if workload is None:
            if has_pods:
                return None
            workload = await self._create_or_get(_workload_for_job(job, wl_name), "Workload", ns, wl_name)
            await self._event(job, "WorkloadCreated", f"Created Workload {workload['metadata']['name']} with gang "
                                                      f"scheduling (minCount={_int(job['spec'].get('parallelism'))})")
        templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
        if len(templates) != 1:
            await self._event(job, "UnsupportedWorkloadStructure",
                              f"Workload {workload['metadata']['name']} has {len(templates)} PodGroupTemplates "
                              f"(expected 1), falling back to normal scheduling", "Warning")
            return None
        pg_name = compute_pod_group_name(workload["metadata"]["name"], templates[0].get("name", ""))
        pod_group = self.pod_groups.get(f"{ns}/{pg_name}")
        if pod_group is None:
            if has_pods:
                return None
            pod_group = await self._create_or_get(_pod_group_for_workload(job, workload, pg_name), "PodGroup", ns,
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
    def __init__(self, active: int, error: Exception):
        super().__init__(str(error))
        self.active = active
        self.error = error


class _PartialDelete(Exception):
    def __init__(self, ready: int, deleted: int, error: Exception):
        super().__init__(str(error))
        self.ready = ready
        self.deleted = deleted
        self.error = error


def _gate(gates: Any, name: str) -> bool:
    try:
        return bool(gates.enabled(name))
    except Exception:  # an unknown gate is off
        return False


def _abs_failure_count(pod: Obj) -> int:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return _parse_int32(ann.get(JOB_INDEX_FAILURE_COUNT)) + _parse_int32(ann.get(JOB_INDEX_IGNORED_FAILURE_COUNT))


def _add_completion_index_env(template: Obj) -> None:
    spec = template.setdefault("spec", {})
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            env = c.setdefault("env", [])
            if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                continue
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": f"metadata.labels['{JOB_COMPLETION_INDEX}']"}}})


def _add_index_failure_count_annotation(template: Obj, job: Obj, replaced: Obj | None) -> None:
    failures, ignored = 0, 0
    if replaced is not None:
        ann = (replaced.get("metadata") or {}).get("annotations") or {}
        failures = _parse_int32(ann.get(JOB_INDEX_FAILURE_COUNT))
        ignored = _parse_int32(ann.get(JOB_INDEX_IGNORED_FAILURE_COUNT))
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        if policy and not match_pod_failure_policy(policy, replaced)[1]:
            ignored += 1
        else:
            failures += 1
    ann = template.setdefault("metadata", {}).setdefault("annotations", {})
    ann[JOB_INDEX_FAILURE_COUNT] = str(failures)
    if ignored > 0:
        ann[JOB_INDEX_IGNORED_FAILURE_COUNT] = str(ignored)


def _status_for_write(status: Obj) -> Obj:
    """The JobStatus as the API serializes it: zero counters and empty lists omitted."""
    out = deep_copy(status)
    for f in ("active", "succeeded", "failed"):
        if not out.get(f):
            out.pop(f, None)
    if not out.get("completedIndexes"):
        out.pop("completedIndexes", None)
    if out.get("failedIndexes") is None:
        out.pop("failedIndexes", None)
    unc = out.get("uncountedTerminatedPods") or {}
    out["uncountedTerminatedPods"] = {k: v for k, v in unc.items() if v}
    if not out.get("conditions"):
        out.pop("conditions", None)
    ordered = {k: out.pop(k) for k in STATUS_FIELD_ORDER if k in out}
    ordered.update(out)
    return ordered


# batch/v1 JobStatus fields in the order the API serializes them
STATUS_FIELD_ORDER = ("conditions", "startTime", "completionTime", "active", "succeeded", "failed", "terminating",
                      "completedIndexes", "failedIndexes", "uncountedTerminatedPods", "ready")


# -- Workload / PodGroup naming (KEP-5547) ------------------------------------------------------------
def gang_scheduling_eligible(job: Obj) -> bool:
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    if not isinstance(parallelism, int) or parallelism <= 1 or not is_indexed(job):
        return False
    if spec.get("completions") != parallelism:
        return False
    return ((spec.get("template") or {}).get("spec") or {}).get("schedulingGroup") is None


def compute_workload_name(job: Obj) -> str:
    """`<job>-<hash>`: FNV-1a of the Job's UID as hashutil.DeepHashObject prints it, safe-encoded."""
    uid = job["metadata"].get("uid", "")
    h = safe_encode_string(str(fnv32a(f'(types.UID)"{uid}"'.encode())))
    prefix = job["metadata"]["name"][:DNS1123_SUBDOMAIN_MAX_LENGTH - len(h) - 1]
    return f"{prefix}-{h}"


def compute_pod_group_name(workload_name: str, template_name: str) -> str:
    """`<workload>-<template>-<hash>`, each part truncated to fit 253 characters."""
    h = safe_encode_string(str(fnv32a(workload_name.encode() + template_name.encode())))
    room = DNS1123_SUBDOMAIN_MAX_LENGTH - len(h) - 2
    wl, tpl = workload_name, template_name
    if len(wl) + len(tpl) > room:
        half = room // 2
        if len(wl) <= half:
            tpl = tpl[:room - len(wl)]
        elif len(tpl) <= half:
            wl = wl[:room - len(tpl)]
        else:
            wl, tpl = wl[:room - half], tpl[:half]
    return f"{wl}-{tpl}-{h}"


def _workload_for_job(job: Obj, name: str) -> Obj:
    md = job["metadata"]
    return {"apiVersion": SCHEDULING_API, "kind": "Workload",
            "metadata": {"name": name, "namespace": md.get("namespace", ""), "ownerReferences": [controller_ref(job)]},
            "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": md["name"]},
                     "podGroupTemplates": [{"name": f"{md['name']}-worker-0",
                                            "schedulingPolicy": {"gang": {"minCount": job["spec"]["parallelism"]}}}]}}


def _pod_group_for_workload(job: Obj, workload: Obj, name: str) -> Obj:
    template = workload["spec"]["podGroupTemplates"][0]
    wmd = workload["metadata"]
    return {"apiVersion": SCHEDULING_API, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": job["metadata"].get("namespace", ""),
                         "ownerReferences": [controller_ref(job),
                                             {"apiVersion": SCHEDULING_API, "kind": "Workload",
                                              "name": wmd["name"], "uid": wmd.get("uid", "")}]},
            "spec": {"podGroupTemplateRef": {"workload": {"workloadName": wmd["name"],
                                                          "podGroupTemplateName": template.get("name", "")}},
                     "schedulingPolicy": deep_copy(template.get("schedulingPolicy") or {})}}


# -- TTL after finished ---------------------------------------------------------------------------------
class TTLAfterFinishedController(Controller):
    """Deletes finished Jobs `ttlSecondsAfterFinished` after their Complete/Failed condition."""

    name = "ttl-after-finished"
    workers = 5  # --concurrent-ttl-after-finished-syncs

    def __init__(self, client: Any, factory: Any = None, *, clock=None, workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.jobs = self.informer("batch/v1", "Job")
        self.jobs.add_event_handler(on_add=self._maybe_enqueue, on_update=lambda o, n: self._maybe_enqueue(n))

    @staticmethod
    def _needs_cleanup(job: Obj) -> bool:
        return (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and is_job_finished(job) \
            and not job["metadata"].get("deletionTimestamp")

    def _maybe_enqueue(self, job: Obj) -> None:
        if self._needs_cleanup(job):
            self.enqueue(object_key(job))

    def _time_left(self, job: Obj) -> float | None:
        done = finish_time(job)
        if done is None:
            return None
        return done + job["spec"]["ttlSecondsAfterFinished"] - self.clock.now()

    async def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or not self._needs_cleanup(job):
            return
        left = self._time_left(job)
        if left is None:
            return
        if left > 0:
            self.enqueue_after(key, left)
            return
        ns, name = split_key(key)
        try:
            fresh = await self.client.get("batch/v1", "Job", ns, name)
        except StatusError as e:
            if e.code == 404:
                return
            raise
        if not self._needs_cleanup(fresh):
            return
        left = self._time_left(fresh)
        if left is None:
            return
        if left > 0:
            self.enqueue_after(key, left)
            return
        try:
            await self.client.delete("batch/v1", "Job", ns, name, propagation="Foreground",
                                     preconditions={"resourceVersion": fresh["metadata"].get("resourceVersion")})
        except StatusError as e:
            if e.code != 404:
                raise


__all__ = ["JobController", "TTLAfterFinishedController", "Intervals", "match_pod_failure_policy",
           "match_success_policy", "compute_workload_name", "compute_pod_group_name", "pod_generate_name_with_index",
           "JOB_TRACKING_FINALIZER", "JOB_COMPLETION_INDEX"]
