"""The CronJob controller with the Job controller, simulated kubelets and the scheduler, on virtual
time against the real API: Jobs named by their schedule time, history limits, concurrency
policies, suspend, missed starts and the status `kubectl get cronjobs` shows."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from phalanx.controllers.cronjob import CronJobController, job_name, most_recent_schedule_time
from phalanx.controllers.job.controller import JobController
from phalanx.machinery.cronschedule import Schedule

from .harness import ControllerCluster

START = 1_767_225_600.0  # the VirtualClock's start, 2026-01-01T00:00:00Z


class Cluster(ControllerCluster):
    nodes = ["n1"]

    def make_controllers(self, env, factory, **kw):
        self.cronjobs = CronJobController(env.client, factory, **kw)
        return [self.cronjobs, JobController(env.client, factory, feature_gates=env.api.gates, **kw)]

    def cj(self, name="every"):
        return self.cronjobs.cronjobs.get(f"default/{name}")

    def jobs(self, finished=None):
        out = []
        for j in self.cronjobs.jobs.list("default"):
            if j["metadata"].get("deletionTimestamp"):
                continue
            done = any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                       for c in (j.get("status") or {}).get("conditions") or [])
            if finished is None or finished == done:
                out.append(j)
        return sorted(out, key=lambda j: j["metadata"]["name"])


def cronjob(name="every", schedule="* * * * *", run_for="10s", exit_code="0", **spec):
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, **spec, "jobTemplate": {"spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": {"phalanx.dev/run-for": run_for, "phalanx.dev/exit-code": exit_code}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}


async def test_every_minute_keeps_three_successful_jobs_named_by_schedule_minute(env):
    async with Cluster(env) as cl:
        await env.client.create(cronjob())
        assert await env.run_until(lambda: len(cl.jobs(finished=True)) >= 3, within=300)
        # more minutes pass: the history stays at the default successfulJobsHistoryLimit of 3
        await env.clock.advance(300)
        assert await env.run_until(lambda: len(cl.jobs(finished=True)) == 3, within=60)
        names = [j["metadata"]["name"] for j in cl.jobs(finished=True)]
        minutes = [int(n.rsplit("-", 1)[1]) for n in names]
        assert minutes == sorted(minutes) and minutes[-1] - minutes[0] == 2 and minutes[-1] * 60 > START + 300
        job = cl.jobs(finished=True)[-1]
        stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        assert datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() == minutes[-1] * 60
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "every", True)
        st = cl.cj()["status"]
        assert st["lastScheduleTime"] and st["lastSuccessfulTime"]


async def test_failed_history_limit_and_custom_success_limit(env):
    async with Cluster(env) as cl:
        await env.client.create(cronjob(exit_code="1", failedJobsHistoryLimit=2))
        assert await env.run_until(lambda: len(cl.jobs(finished=True)) >= 2, within=300)
        await env.clock.advance(240)
        assert await env.run_until(lambda: len(cl.jobs(finished=True)) == 2, within=60)
        assert "lastSuccessfulTime" not in cl.cj()["status"]


async def test_forbid_skips_while_a_job_runs_and_replace_swaps_it(env):
    async with Cluster(env) as cl:
        await env.client.create(cronjob("forbid", run_for="150s", concurrencyPolicy="Forbid"))
        await env.client.create(cronjob("replace", run_for="150s", concurrencyPolicy="Replace"))
        await env.client.create(cronjob("allow", run_for="150s"))
        assert await env.run_until(lambda: len(cl.cj("allow")["status"].get("active") or []) == 2, within=200)
        assert len(cl.cj("forbid")["status"].get("active") or []) == 1
        assert len(cl.cj("replace")["status"].get("active") or []) == 1
        replace_jobs = [j for j in cl.jobs() if j["metadata"]["name"].startswith("replace-")]
        assert len(replace_jobs) == 1 and replace_jobs[0]["metadata"]["name"] == \
            cl.cj("replace")["status"]["active"][0]["name"]


async def test_suspended_cronjob_starts_nothing(env):
    async with Cluster(env) as cl:
        await env.client.create(cronjob(suspend=True))
        assert not await env.run_until(lambda: cl.jobs(), within=180)
        assert "lastScheduleTime" not in (cl.cj().get("status") or {})


def test_missed_start_times_are_counted_and_only_the_latest_is_started():
    sched = Schedule("* * * * *")
    created = datetime(2026, 1, 1, tzinfo=timezone.utc)
    cj = {"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}, "status": {}}
    now = datetime(2026, 1, 1, 3, 0, 30, tzinfo=timezone.utc)
    _, recent, missed = most_recent_schedule_time(cj, now, sched, include_deadline=True)
    assert recent == datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc) and missed == 180
    cj["spec"]["startingDeadlineSeconds"] = 200
    _, recent, missed = most_recent_schedule_time(cj, now, sched, include_deadline=True)
    assert recent == datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc) and missed <= 4
    _, recent, _ = most_recent_schedule_time(cj, created, sched, include_deadline=True)
    assert recent is None


def test_job_names_use_minutes_since_the_epoch():
    assert job_name({"metadata": {"name": "hello"}}, datetime(2026, 1, 1, 0, 5, tzinfo=timezone.utc)) == \
        f"hello-{int(START) // 60 + 5}"


@pytest.mark.parametrize("schedule,zone,after,expected", [
    ("0 9 * * *", "Asia/Tokyo", datetime(2026, 1, 1, 0, 30, tzinfo=timezone.utc),
     datetime(2026, 1, 2, 0, 0, tzinfo=timezone.utc)),
    ("@hourly", None, datetime(2026, 1, 1, 0, 30, tzinfo=timezone.utc), datetime(2026, 1, 1, 1, 0, tzinfo=timezone.utc)),
])
def test_schedules_in_a_time_zone(schedule, zone, after, expected):
    assert Schedule(schedule, zone).next_after(after) == expected


async def test_a_restarted_controller_does_not_start_a_schedule_time_twice(env):
    async with Cluster(env) as cl:
        await env.client.create(cronjob(run_for="300s"))
        assert await env.run_until(lambda: len(cl.jobs()) == 1, within=70)
        first = cl.jobs()[0]["metadata"]["name"]
        await cl.cronjobs.stop()
        fresh = CronJobController(env.client, cl.factory, clock=env.clock)
        fresh.start()
        assert await env.run_until(lambda: fresh.synced, within=10)
        # the same minute is not started again; the next minute is
        assert await env.run_until(lambda: len(cl.jobs()) == 2, within=70)
        names = [j["metadata"]["name"] for j in cl.jobs()]
        assert names[0] == first and int(names[1].rsplit("-", 1)[1]) == int(first.rsplit("-", 1)[1]) + 1
        await fresh.stop()


async def events_of(env, name):
    items = (await env.client.list("v1", "Event", "default"))
    items = items[0] if isinstance(items, tuple) else items.get("items", [])
    return [(e.get("reason"), e.get("message")) for e in items
            if (e.get("involvedObject") or {}).get("name") == name]


@pytest.mark.parametrize("deadline,started", [(None, True), (30, False)])
async def test_after_many_missed_times_only_the_latest_is_started_within_its_deadline(env, deadline, started):
    async with Cluster(env) as cl:
        await cl.cronjobs.stop()  # the controller is "down" while three hours of schedule pass
        spec = {"startingDeadlineSeconds": deadline} if deadline is not None else {}
        await env.client.create(cronjob(**spec))
        await env.clock.advance(3 * 3600 + 40)
        fresh = CronJobController(env.client, cl.factory, clock=env.clock)
        fresh.start()
        assert await env.run_until(lambda: fresh.synced, within=10)
        assert await env.run_until(lambda: bool((cl.cj().get("status") or {}).get("lastScheduleTime")) == started
                                   and (not started or len(cl.jobs()) == 1), within=5)
        reasons = [r for r, _ in await events_of(env, "every")]
        if started:
            assert "TooManyMissedTimes" in reasons
            message = next(m for r, m in await events_of(env, "every") if r == "TooManyMissedTimes")
            assert message.startswith("too many missed start times: 18") and message.endswith(
                "Set or decrease .spec.startingDeadlineSeconds or check clock skew")
            assert cl.jobs()[0]["metadata"]["name"] == f"every-{(int(START) + 3 * 3600) // 60}"
        else:
            # 40 s past the minute with a 30 s deadline: no time in the window, none older is looked at;
            # the next minute starts as usual
            assert not cl.jobs() and "TooManyMissedTimes" not in reasons
            assert await env.run_until(lambda: len(cl.jobs()) == 1, within=30)
            assert cl.jobs()[0]["metadata"]["name"] == f"every-{(int(START) + 3 * 3600) // 60 + 1}"
        await fresh.stop()
