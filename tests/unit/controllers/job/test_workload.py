"""WorkloadWithJob: which Jobs get a gang, and the names of their Workload and PodGroup."""

from __future__ import annotations

import pytest

from phalanx.controllers.job.workload import compute_pod_group_name, compute_workload_name, gang_scheduling_eligible


def test_pod_group_names_fit_253_characters():
    name = compute_pod_group_name("w" * 200, "t" * 200)
    assert len(name) <= 253 and name.startswith("w" * 100)




def job_spec(**spec) -> dict:
    return {"metadata": {"name": "train", "uid": "0b6f6f1e-8d0c-4bb8-9a0e-3f0d3a9d1c11"},
            "spec": {"template": {"spec": {}}, **spec}}


@pytest.mark.parametrize("spec,eligible", [
    (dict(completionMode="Indexed", parallelism=4, completions=4), True),
    (dict(completionMode="Indexed", parallelism=1, completions=1), False),      # a gang of one is no gang
    (dict(completionMode="NonIndexed", parallelism=4, completions=4), False),
    (dict(completionMode="Indexed", parallelism=4, completions=8), False),
    (dict(completionMode="Indexed", parallelism=4, completions=4,
          template={"spec": {"schedulingGroup": {"podGroupName": "mine"}}}), False),
])
def test_gang_scheduling_eligibility(spec, eligible):
    assert gang_scheduling_eligible(job_spec(**spec)) is eligible


def test_workload_name_is_the_job_name_and_a_stable_hash():
    name = compute_workload_name(job_spec())
    assert name.startswith("train-") and name == compute_workload_name(job_spec())
    other = job_spec()
    other["metadata"]["uid"] = "another-uid"
    assert compute_workload_name(other) != name
