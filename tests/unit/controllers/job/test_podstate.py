"""The Job controller's per-Job pod buckets (podstate.py), as informer events change them."""

from __future__ import annotations

from phalanx.controllers.job.podstate import JobPodStates

JOB_UID = "job-uid"
FINALIZER = "batch.kubernetes.io/job-tracking"


def a_job(uid=JOB_UID):
    return {"metadata": {"name": "j", "namespace": "default", "uid": uid},
            "spec": {"selector": {"matchLabels": {"app": "j"}}, "completionMode": "Indexed"}}


def a_pod(uid, index, *, phase="Running", ready=False, finalizer=True, deleting=False, owner=JOB_UID,
          labels=None):
    md = {"name": f"p{uid}", "namespace": "default", "uid": uid,
          "labels": labels if labels is not None else {"app": "j"},
          "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
          "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner,
                               "controller": True}] if owner else []}
    if finalizer:
        md["finalizers"] = [FINALIZER]
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": md, "status": status}


def buckets(state):
    return {"active": sorted(state.active), "ready": sorted(state.ready), "indexes": dict(state.active_indexes),
            "terminating": sorted(state.terminating), "finishing": sorted(state.finishing),
            "failed": sorted(state.failed),
            "with_finalizer": sorted(state.with_finalizer), "unmatched": sorted(state.unmatched),
            "members": sorted(state.members)}


def test_built_from_the_cache_then_kept_from_events():
    states = JobPodStates()
    state = states.for_job(a_job(), lambda: [a_pod("a", 0, ready=True), a_pod("b", 1)])
    assert buckets(state)["active"] == ["a", "b"] and buckets(state)["ready"] == ["a"]
    states.observe(a_pod("b", 1), a_pod("b", 1, phase="Succeeded"))
    states.observe(None, a_pod("c", 1))
    states.observe(a_pod("a", 0, ready=True), a_pod("a", 0, deleting=True))
    assert buckets(state) == {"active": ["c"], "ready": [], "indexes": {1: 1}, "terminating": ["a"],
                              "finishing": ["a", "b"], "failed": [], "with_finalizer": ["a", "b", "c"],
                              "unmatched": [], "members": ["a", "b", "c"]}
    states.observe(a_pod("b", 1, phase="Succeeded"), a_pod("b", 1, phase="Succeeded", finalizer=False))
    states.forget(a_pod("a", 0, deleting=True))
    states.observe(a_pod("c", 1), a_pod("c", 1, phase="Failed", finalizer=False))
    assert buckets(state) == {"active": [], "ready": [], "indexes": {}, "terminating": [], "finishing": [],
                              "failed": ["c"], "with_finalizer": [], "unmatched": [], "members": ["b", "c"]}


def test_duplicate_indexes_are_counted_per_index():
    states = JobPodStates()
    state = states.for_job(a_job(), lambda: [a_pod("a", 2), a_pod("b", 2)])
    assert dict(state.active_indexes) == {2: 2}
    states.forget(a_pod("a", 2))
    assert dict(state.active_indexes) == {2: 1}


def test_pods_leave_the_job_when_released_or_their_labels_stop_matching():
    states = JobPodStates()
    state = states.for_job(a_job(), lambda: [a_pod("a", 0), a_pod("b", 1)])
    states.observe(a_pod("a", 0), a_pod("a", 0, labels={"app": "other"}))
    states.observe(a_pod("b", 1), a_pod("b", 1, owner=None))
    assert buckets(state)["members"] == [] and buckets(state)["unmatched"] == ["a"]
    states.observe(None, a_pod("z", 0, owner="another-job"))  # a Job nobody asked about: not kept
    assert list(states.jobs) == [JOB_UID]


def test_a_new_selector_rebuilds_the_state_and_a_dropped_job_is_forgotten():
    states = JobPodStates()
    state = states.for_job(a_job(), lambda: [a_pod("a", 0)])
    job = a_job()
    job["spec"]["selector"] = {"matchLabels": {"app": "k"}}
    rebuilt = states.for_job(job, lambda: [a_pod("a", 0)])
    assert rebuilt is not state and buckets(rebuilt)["unmatched"] == ["a"]
    states.drop(JOB_UID)
    assert not states.jobs
