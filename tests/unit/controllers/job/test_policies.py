"""`podFailurePolicy` and `successPolicy` rules."""

from __future__ import annotations

import pytest

from phalanx.controllers.job.indexes import Intervals
from phalanx.controllers.job.pod_failure_policy import match_pod_failure_policy
from phalanx.controllers.job.success_policy import match_success_policy


def failed_pod(code, container="main", conditions=()):
    return {"metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "conditions": list(conditions),
                       "containerStatuses": [{"name": container, "state": {"terminated": {"exitCode": code}}}]}}


@pytest.mark.parametrize("rules,pod,expected", [
    ([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}], failed_pod(42),
     ("Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0", True, "FailJob")),
    ([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [42]}}], failed_pod(42),
     (None, False, "Ignore")),
    ([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [42]}}], failed_pod(1), (None, True, None)),
    ([{"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}}], failed_pod(2), (None, True, "Count")),
    ([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}],
     failed_pod(137, conditions=[{"type": "DisruptionTarget", "status": "True"}]), (None, False, "Ignore")),
    ([{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}],
     failed_pod(137, conditions=[{"type": "DisruptionTarget", "status": "True"}]),
     ("Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0", True, "FailJob")),
])
def test_pod_failure_policy_matching(rules, pod, expected):
    assert match_pod_failure_policy({"rules": rules}, pod) == expected


def test_success_policy_matching():
    policy = {"rules": [{"succeededIndexes": "0,2"}, {"succeededCount": 3}]}
    assert match_success_policy(policy, 5, Intervals.parse("0-1", 5)) is None
    assert match_success_policy(policy, 5, Intervals.parse("0,2", 5)) == "Matched rules at index 0"
    assert match_success_policy(policy, 5, Intervals.parse("1,3,4", 5)) == "Matched rules at index 1"
