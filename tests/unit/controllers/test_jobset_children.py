"""The JobSet controller's index of child Jobs (`controllers/jobset_children.py`): categories and
replicatedJob counts kept from marked Jobs, entries reused while their counts stay the same, and
Jobs leaving the index when they are gone or controlled by another JobSet."""

from __future__ import annotations

import pytest

from phalanx.controllers.jobset_children import ChildJobIndex

JS_UID = "js-uid"


def jobset(*rjobs, restarts=0):
    return {"metadata": {"name": "js", "namespace": "ns", "uid": JS_UID},
            "spec": {"replicatedJobs": [{"name": n, "replicas": r} for n, r in rjobs]},
            "status": {"restarts": restarts}}


def job(name, rjob, *, ready=0, active=1, parallelism=2, finished=None, suspend=False, attempt=0, owner=JS_UID):
    status = {"ready": ready, "active": active}
    if finished:
        status["conditions"] = [{"type": finished, "status": "True"}]
    return {"metadata": {"name": name, "namespace": "ns",
                         "labels": {"jobset.sigs.k8s.io/replicatedjob-name": rjob,
                                    "jobset.sigs.k8s.io/restart-attempt": str(attempt)},
                         "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                              "name": "js", "uid": owner, "controller": True}]},
            "spec": {"parallelism": parallelism, "completions": parallelism, "suspend": suspend},
            "status": status}


def entry(name, ready=0, succeeded=0, failed=0, active=0, suspended=0):
    return {"name": name, "ready": ready, "succeeded": succeeded, "failed": failed, "active": active,
            "suspended": suspended}


def test_counts_and_categories_as_the_controller_reports_them():
    js = jobset(("a", 2), ("b", 2))
    jobs = [job("js-a-0", "a", ready=2), job("js-a-1", "a", suspend=True), job("js-b-0", "b", finished="Complete"),
            job("js-b-1", "b", finished="Failed")]
    index = ChildJobIndex.build(js, jobs, None)
    assert index.statuses() == [entry("a", ready=1, active=2, suspended=1), entry("b", succeeded=1, failed=1)]
    owned = index.owned()
    assert [len(owned.active), len(owned.successful), len(owned.failed), len(owned.previous)] == [2, 1, 1, 0]
    assert index.suspended == 1
    # after a restart every one of them is of an older attempt: counted nowhere
    later = ChildJobIndex.build(jobset(("a", 2), ("b", 2), restarts=1), jobs, None)
    assert later.statuses() == [entry("a"), entry("b")] and len(later.owned().previous) == 4


def test_a_marked_job_changes_only_its_replicated_jobs_entry():
    js = jobset(("a", 1), ("b", 1))
    store = {"ns/js-a-0": job("js-a-0", "a"), "ns/js-b-0": job("js-b-0", "b")}
    index = ChildJobIndex.build(js, list(store.values()), None)
    before = index.statuses()
    store["ns/js-a-0"] = job("js-a-0", "a", ready=2)
    index.mark("ns/js-a-0")
    index.refresh(js, store.get)
    after = index.statuses()
    assert after == [entry("a", ready=1, active=1), entry("b", active=1)]
    assert after[1] is before[1] and after[0] is not before[0]
    # nothing marked: the very same entries
    index.refresh(js, store.get)
    assert all(x is y for x, y in zip(index.statuses(), after))


def test_current_entries_are_reused_when_they_agree():
    js = jobset(("a", 1))
    current = [entry("a", active=1)]
    index = ChildJobIndex.build(js, [job("js-a-0", "a")], current)
    assert index.statuses()[0] is current[0]


@pytest.mark.parametrize("change", ["deleted", "adopted by another JobSet"])
def test_a_job_that_is_gone_or_not_ours_leaves_the_index(change):
    js = jobset(("a", 2))
    store = {"ns/js-a-0": job("js-a-0", "a"), "ns/js-a-1": job("js-a-1", "a", ready=2)}
    index = ChildJobIndex.build(js, list(store.values()), None)
    assert index.statuses() == [entry("a", ready=1, active=2)]
    if change == "deleted":
        del store["ns/js-a-1"]
    else:
        store["ns/js-a-1"] = job("js-a-1", "a", ready=2, owner="other")
    index.mark("ns/js-a-1")
    index.refresh(js, store.get)
    assert index.statuses() == [entry("a", active=1)]
    assert not index.all_created(js, lambda rjob, i: f"js-{rjob}-{i}")
    store["ns/js-a-1"] = job("js-a-1", "a")
    index.mark("ns/js-a-1")
    index.refresh(js, store.get)
    assert index.all_created(js, lambda rjob, i: f"js-{rjob}-{i}")


def test_the_index_fits_one_uid_restart_attempt_and_set_of_replicated_jobs():
    index = ChildJobIndex.build(jobset(("a", 1)), [], None)
    assert index.fits(jobset(("a", 1)))
    assert not index.fits(jobset(("a", 1), restarts=1))
    assert not index.fits(jobset(("a", 1), ("b", 1)))
    other = jobset(("a", 1))
    other["metadata"]["uid"] = "new"
    assert not index.fits(other)


def test_an_invalid_restart_attempt_label_is_an_error_and_is_looked_at_again():
    js = jobset(("a", 1))
    store = {"ns/js-a-0": job("js-a-0", "a")}
    index = ChildJobIndex.build(js, [], None)
    store["ns/js-a-0"]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "x"
    index.mark("ns/js-a-0")
    with pytest.raises(ValueError, match="restart-attempt, must be integer"):
        index.refresh(js, store.get)
    assert index.dirty == {"ns/js-a-0"}
