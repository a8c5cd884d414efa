"""The CronJob controller (kube-controller-manager's `cronjob`, v2): Jobs on a cron schedule.

As upstream's `ControllerV2.syncCronJob`, each sync of a batch/v1 CronJob:

1. reconciles `status.active` with the Jobs it controls: a finished Job leaves the list (event
   `SawCompletedJob`), a listed Job that is gone leaves it (`MissingJob`), a running Job it does
   not list is reported (`UnexpectedJob`); the newest completion becomes `lastSuccessfulTime`;
2. stops there when the CronJob is being deleted, suspended, or its schedule or `timeZone` does
   not parse (`UnparseableSchedule`, `UnknownTimeZone`);
3. finds the most recent unmet schedule time since `lastScheduleTime` (or creation), no earlier
   than `startingDeadlineSeconds` ago; more than 100 missed times is reported
   (`TooManyMissedTimes`: "too many missed start times: N. Set or decrease
   .spec.startingDeadlineSeconds or check clock skew") and only the latest is started; a time
   older than the deadline is missed (`MissSchedule`);
4. applies `concurrencyPolicy`: Forbid skips while a Job is active (`JobAlreadyActive`), Replace
   deletes the active Jobs first (`SuccessfulDelete`);
5. creates the Job `<cronjob>-<scheduled time in minutes since the epoch>` from the template with
   the annotation `batch.kubernetes.io/cronjob-scheduled-timestamp` (the time in the CronJob's zone,
   RFC 3339) and the CronJob as controller (`SuccessfulCreate`), records it in `status.active` and
   `lastScheduleTime`;
6. deletes the oldest finished Jobs beyond `successfulJobsHistoryLimit` / `failedJobsHistoryLimit`;
7. asks to be synced again just after the next schedule time.

Time comes from the controller's `clock`, so the same code runs in virtual time.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from ..api.batch import CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION, job_condition_true
from ..client.clock import Clock, to_datetime
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..machinery import cronschedule
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..machinery.timestamps import now_rfc3339, parse_rfc3339
from .podcontrol import controller_ref

Obj = dict[str, Any]

NEXT_SCHEDULE_DELTA = 0.1  # seconds past the schedule time to wake up
MANY_MISSED = 100


def _job_finished(job: Obj) -> str | None:
    for ctype in ("Complete", "Failed"):
        if job_condition_true(job, ctype):
            return ctype
    return None


def job_name(cronjob: Obj, scheduled: datetime) -> str:
    return f"{cronjob['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def most_recent_schedule_time(cj: Obj, now: datetime, sched: cronschedule.Schedule,
                              include_deadline: bool) -> tuple[datetime, datetime | None, int]:
    """`mostRecentScheduleTime`: (earliest time considered, the most recent unmet schedule time
    or None, how many schedule times were missed)."""
    status, spec = cj.get("status") or {}, cj.get("spec") or {}
    earliest = parse_rfc3339(status.get("lastScheduleTime")) or parse_rfc3339(
        cj["metadata"].get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if include_deadline and deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=int(deadline)))
    t1 = sched.next_after(earliest)
    if now < t1:
        return earliest, None, 0
    t2 = sched.next_after(t1)
    if now < t2:
        return earliest, t1, 1
    # upstream's rough count: how many intervals of the first two times fit until now
    interval = max(round((t2 - t1).total_seconds()), 1)
    missed = int((now - t1).total_seconds()) // interval + 1
    return earliest, sched.prev_at_or_before(now), missed


class CronJobController(Controller[str]):
    name = "cronjob"
    workers = 5  # --concurrent-cron-job-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.cronjobs = self.informer("batch/v1", "CronJob")
        self.jobs = self.informer("batch/v1", "Job")
        self.enqueue_on(self.cronjobs)
        self.jobs.add_event_handler(on_add=self._job_changed, on_update=lambda old, new: self._job_changed(new),
                                    on_delete=self._job_changed)

    def _job_changed(self, job: Obj) -> None:
        ref = controller_of(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.enqueue(f"{job['metadata'].get('namespace')}/{ref.get('name')}")

    def _now(self) -> datetime:
        return to_datetime(self.clock.now())

    def _owned_jobs(self, cj: Obj) -> list[Obj]:
        uid = cj["metadata"].get("uid")
        return [j for j in self.jobs.list(cj["metadata"].get("namespace"))
                if (controller_of(j) or {}).get("uid") == uid]

    async def _event(self, cj: Obj, reason: str, message: str, warning: bool = False) -> None:
        await self.client.create_event(cj, reason, message, type="Warning" if warning else "Normal")

    # -- sync --------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.cronjobs.get(key)
        if shared is None:
            return
        cj = deep_copy(shared)
        jobs = self._owned_jobs(cj)
        listed = {a.get("uid") for a in (cj.get("status") or {}).get("active") or []}
        if any(j["metadata"].get("uid") not in listed and _job_finished(j) is None for j in jobs):
            # the cache may lag behind this controller's own last status write
            cj = await self.client.get("batch/v1", "CronJob", cj["metadata"].get("namespace"), cj["metadata"]["name"])
        before = deep_copy(cj.get("status") or {})
        await self._reconcile_active(cj, jobs)
        requeue = await self._schedule(cj)
        if cj.get("status") != before:
            cj = await self.client.update_status(cj)
        await self._cleanup_finished(cj, jobs)
        if requeue is not None:
            self.enqueue_after(key, requeue)

    async def _reconcile_active(self, cj: Obj, jobs: list[Obj]) -> None:
        status = cj.setdefault("status", {})
        active = status.get("active") or []
        uids = {j["metadata"].get("uid") for j in jobs}
        for job in jobs:
            md = job["metadata"]
            listed = any(a.get("uid") == md.get("uid") for a in active)
            finished = _job_finished(job)
            if not listed and finished is None:
                await self._event(cj, "UnexpectedJob", f"Saw a job that the controller did not create or forgot: "
                                  f"{md['name']}", warning=True)
            elif listed and finished is not None:
                active = [a for a in active if a.get("uid") != md.get("uid")]
                await self._event(cj, "SawCompletedJob", f"Saw completed job: {md['name']}, condition: {finished}")
            if finished == "Complete":
                done = (job.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if done and (last is None or parse_rfc3339(done) > parse_rfc3339(last)):  # type: ignore[operator]
                    status["lastSuccessfulTime"] = done
        for ref in list(active):
            if ref.get("uid") in uids:
                continue
            try:
                await self.client.get("batch/v1", "Job", ref.get("namespace"), ref.get("name", ""))
            except StatusError as e:
                if e.code == 404:
                    await self._event(cj, "MissingJob", f"Active job went missing: {ref.get('name')}")
                    active = [a for a in active if a.get("uid") != ref.get("uid")]
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    async def _schedule(self, cj: Obj) -> float | None:
        """Steps 2-5; returns seconds until the next look (None: no schedule to follow)."""
        spec = cj.get("spec") or {}
        if cj["metadata"].get("deletionTimestamp") or spec.get("suspend"):
            return None
        try:
            cronschedule.load_zone(spec.get("timeZone"))
        except cronschedule.ScheduleError:
            await self._event(cj, "UnknownTimeZone", f"invalid timeZone: {spec.get('timeZone')!r}: unknown time "
                              f"zone {spec.get('timeZone')}", warning=True)
            return None
        try:
            sched = cronschedule.Schedule(str(spec.get("schedule", "")), spec.get("timeZone"))
        except cronschedule.ScheduleError as e:
            await self._event(cj, "UnparseableSchedule", f"unparseable schedule: {spec.get('schedule')!r} : {e}",
                              warning=True)
            return None
        now = self._now()
        _, scheduled, missed = most_recent_schedule_time(cj, now, sched, include_deadline=True)
        if scheduled is not None and missed > MANY_MISSED:
            await self._event(cj, "TooManyMissedTimes", f"too many missed start times: {missed}. Set or decrease "
                              ".spec.startingDeadlineSeconds or check clock skew", warning=True)
        if scheduled is not None:
            await self._start(cj, sched, scheduled, now)
        return self._next_delay(cj, now, sched)

    def _next_delay(self, cj: Obj, now: datetime, sched: cronschedule.Schedule) -> float:
        earliest, recent, _ = most_recent_schedule_time(cj, now, sched, include_deadline=False)
        nxt = sched.next_after(recent or earliest)
        return max((nxt - now).total_seconds(), 0.0) + NEXT_SCHEDULE_DELTA

    async def _start(self, cj: Obj, sched: cronschedule.Schedule, scheduled: datetime, now: datetime) -> None:
        spec, status = cj.get("spec") or {}, cj["status"]
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            await self._event(cj, "MissSchedule", "Missed scheduled time to start a job: "
                              + scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000"), warning=True)
            return
        name = job_name(cj, scheduled)
        stamp = now_rfc3339(scheduled)
        if any(a.get("name") == name for a in status.get("active") or []) or status.get("lastScheduleTime") == stamp:
            return
        if spec.get("concurrencyPolicy") == "Forbid" and status.get("active"):
            await self._event(cj, "JobAlreadyActive", "Not starting job because prior execution is running and "
                              "concurrency policy is Forbid")
            return
        if spec.get("concurrencyPolicy") == "Replace":
            for ref in list(status.get("active") or []):
                await self._delete_job(cj, ref.get("name", ""))
                status["active"] = [a for a in status.get("active") or [] if a.get("uid") != ref.get("uid")]
            if not status.get("active"):
                status.pop("active", None)
        job = self._job_from_template(cj, sched, scheduled, name)
        try:
            created = await self.client.create(job)
        except StatusError as e:
            if e.code != 409:
                raise
            existing = self.jobs.get(f"{cj['metadata'].get('namespace')}/{name}")
            if existing is None or (controller_of(existing) or {}).get("uid") != cj["metadata"].get("uid"):
                raise
            status["lastScheduleTime"] = stamp
            return
        await self._event(cj, "SuccessfulCreate", f"Created job {name}")
        md = created["metadata"]
        status.setdefault("active", []).append({"kind": "Job", "namespace": md.get("namespace"), "name": name,
                                                "uid": md.get("uid"), "apiVersion": "batch/v1",
                                                "resourceVersion": md.get("resourceVersion")})
        status["lastScheduleTime"] = stamp

    def _job_from_template(self, cj: Obj, sched: cronschedule.Schedule, scheduled: datetime, name: str) -> Obj:
        template = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmd = template.get("metadata") or {}
        annotations = dict(tmd.get("annotations") or {})
        annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] = scheduled.astimezone(sched.zone).isoformat()
        if annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION].endswith("+00:00"):
            annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] = now_rfc3339(scheduled)
        md: Obj = {"name": name, "namespace": cj["metadata"].get("namespace"), "annotations": annotations,
                   "ownerReferences": [controller_ref(cj)]}
        if tmd.get("labels"):
            md["labels"] = dict(tmd["labels"])
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
                "spec": deep_copy(template.get("spec") or {})}

    async def _delete_job(self, cj: Obj, name: str) -> bool:
        try:
            await self.client.delete("batch/v1", "Job", cj["metadata"].get("namespace"), name,
                                     propagation="Background")
        except StatusError as e:
            if e.code != 404:
                await self._event(cj, "FailedDelete", f"Deleted job: {e.message}", warning=True)
                return False
        await self._event(cj, "SuccessfulDelete", f"Deleted job {name}")
        return True

    async def _cleanup_finished(self, cj: Obj, jobs: list[Obj]) -> None:
        spec = cj.get("spec") or {}
        if cj["metadata"].get("deletionTimestamp"):
            return
        for ctype, field in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(field)
            if limit is None:
                continue
            done = [j for j in jobs if _job_finished(j) == ctype and not j["metadata"].get("deletionTimestamp")]
            if len(done) <= limit:
                continue
            done.sort(key=_start_order)
            for job in done[:len(done) - int(limit)]:
                await self._delete_job(cj, job["metadata"]["name"])


def _start_order(job: Obj) -> tuple:
    """`byJobStartTime`: Jobs without a start time last, then by start time, then by name."""
    start = (job.get("status") or {}).get("startTime")
    return (start is None, parse_rfc3339(start) or datetime.max.replace(tzinfo=timezone.utc), job["metadata"]["name"])


__all__ = ["CronJobController", "job_name", "most_recent_schedule_time", "object_key"]
