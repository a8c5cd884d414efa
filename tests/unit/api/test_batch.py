"""batch/v1 Job: defaults, generated selector, validation, update rules and `kubectl get jobs` cells."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from phalanx.api import load_all, registry
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates

load_all()

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
CTX = StrategyContext(gates=FeatureGates(), now=lambda: NOW)
JOBS = registry.lookup("batch", "v1", "jobs")
S = JOBS.strategy
UID = "0b8a3c1e-1111-2222-3333-444455556666"


def ts(seconds_ago: int) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def job(name="pi", **spec):
    s = {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}}
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "uid": UID, "creationTimestamp": ts(120)}, "spec": s}


def msgs(errs):
    return [e.message() for e in errs]


def create(obj):
    obj = copy.deepcopy(obj)
    S.default(obj, CTX)
    S.prepare_for_create(obj, CTX)
    S.admit("CREATE", obj, None, CTX)
    return obj, msgs(S.validate(obj, CTX))


def update(old, mutate):
    new = copy.deepcopy(old)
    mutate(new)
    S.default(new, CTX)
    S.prepare_for_update(new, old, CTX)
    return new, msgs(S.validate_update(new, old, CTX))


def test_defaults_and_generated_selector():
    j, errs = create(job())
    assert errs == []
    spec = j["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == ("NonIndexed", False, False)
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID, "job-name": "pi"}
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert j["status"] == {}


@pytest.mark.parametrize("given,expected", [
    ({"parallelism": 3}, {"parallelism": 3, "backoffLimit": 6}),
    ({"completions": 5}, {"completions": 5, "parallelism": 1}),
    ({"completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1},
     {"backoffLimit": 2147483647}),
    ({"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}},
     {"podReplacementPolicy": "Failed"}),
])
def test_conditional_defaults(given, expected):
    j, _ = create(job(**given))
    for k, v in expected.items():
        assert j["spec"][k] == v
    if "parallelism" in given and "completions" not in given:
        assert "completions" not in j["spec"]


def test_labels_come_from_the_template_when_the_job_has_none():
    j = job()
    j["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    out, errs = create(j)
    assert errs == [] and out["metadata"]["labels"] == {"app": "pi"}


def test_pod_failure_policy_condition_status_defaults_to_true():
    j, errs = create(job(podFailurePolicy={"rules": [{"action": "FailJob",
                                                      "onPodConditions": [{"type": "DisruptionTarget"}]}]}))
    assert errs == []
    assert j["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


@pytest.mark.parametrize("mutate,expected", [
    (lambda j: j["spec"]["template"]["spec"].pop("restartPolicy"),
     'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'),
    (lambda j: j["spec"]["template"]["spec"].update(restartPolicy="Always"),
     'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'),
    (lambda j: j["spec"].update(parallelism=-1), "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
    (lambda j: j["spec"].update(completionMode="Indexed", parallelism=2),
     "spec.completions: Required value: when completion mode is Indexed"),
    (lambda j: j["spec"].update(backoffLimitPerIndex=1), "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed "
                                                         "completion mode"),
    (lambda j: j["spec"].update(completionMode="Sometimes"),
     'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'),
    (lambda j: j["spec"].update(manualSelector=True, selector={"matchLabels": {"app": "other"}}),
     'spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`'),
    (lambda j: j["spec"].update(selector={"matchLabels": {"controller-uid": "someone-else"}}),
     "spec.selector: Invalid value: "),
    (lambda j: j["spec"]["template"].update(metadata={"labels": {"job-name": "other"}}),
     "spec.template.metadata.labels[job-name]: Invalid value: "),
    (lambda j: j["spec"].update(podFailurePolicy={"rules": [{"action": "Ignore",
                                                             "onExitCodes": {"operator": "In", "values": [0]}}]}),
     "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"),
    (lambda j: j["spec"]["template"]["spec"].update(restartPolicy="OnFailure") or j["spec"].update(
        podFailurePolicy={"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]}),
     'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy '
     "is specified"),
    (lambda j: j["metadata"].update(name="a" * 62) or j["spec"].update(completionMode="Indexed", completions=10),
     "will not able to create pod with invalid DNS label: " + "a" * 62 + "-9"),
])
def test_validation(mutate, expected):
    j = job()
    mutate(j)
    _, errs = create(j)
    assert any(e.startswith(expected) or expected in e for e in errs), errs


def test_missing_uid_is_reported():
    j = job()
    del j["metadata"]["uid"]
    _, errs = create(j)
    assert "metadata.uid: Required value" in errs


def test_template_is_immutable_but_parallelism_is_not():
    old, _ = create(job(parallelism=2, completions=4))
    _, errs = update(old, lambda j: j["spec"].update(parallelism=3))
    assert errs == []
    _, errs = update(old, lambda j: j["spec"]["template"]["spec"]["containers"][0].update(image="perl:5.40"))
    assert any(e.startswith("spec.template: Invalid value: ") and e.endswith(": field is immutable") for e in errs)
    _, errs = update(old, lambda j: j["spec"].update(completions=5))
    assert "spec.completions: Invalid value: 5: field is immutable" in errs


def test_indexed_completions_change_only_with_parallelism():
    old, _ = create(job(completionMode="Indexed", completions=4, parallelism=4))
    _, errs = update(old, lambda j: j["spec"].update(completions=6, parallelism=6))
    assert errs == []
    _, errs = update(old, lambda j: j["spec"].update(completions=6))
    assert "spec.completions: Invalid value: 6: can only be modified in tandem with spec.parallelism" in errs


def test_suspended_job_that_never_ran_may_change_scheduling_directives():
    old, _ = create(job(suspend=True))

    def schedule(j):
        j["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "true"}
        j["spec"]["template"]["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        j["spec"]["template"]["metadata"]["annotations"] = {"a": "b"}

    _, errs = update(old, schedule)
    assert errs == []
    running = copy.deepcopy(old)
    running["spec"]["suspend"] = False
    running["status"] = {"startTime": ts(10)}
    _, errs = update(running, schedule)
    assert any(e.startswith("spec.template: Invalid value") for e in errs)


def test_status_is_kept_on_update_and_terminal_conditions_stick():
    old, _ = create(job())
    old["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    new, _ = update(old, lambda j: j.update(status={}))
    assert new["status"] == old["status"]
    bad = copy.deepcopy(old)
    bad["status"]["conditions"] = []
    assert msgs(S.validate_status_update(bad, old, CTX)) == [
        "status.conditions: Invalid value: cannot disable the terminal Complete=True condition"]


@pytest.mark.parametrize("spec,status,meta,cells", [
    ({}, {}, {}, ["Running", "0/1", ""]),
    ({}, {"startTime": ts(90), "active": 1}, {}, ["Running", "0/1", "90s"]),
    ({}, {"startTime": ts(600), "completionTime": ts(540), "succeeded": 1,
          "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}, {},
     ["Complete", "1/1", "60s"]),
    ({}, {"failed": 7, "conditions": [{"type": "FailureTarget", "status": "True"},
                                      {"type": "Failed", "status": "True"}]}, {}, ["Failed", "0/1", ""]),
    ({"suspend": True}, {"conditions": [{"type": "Suspended", "status": "True"}]}, {}, ["Suspended", "0/1", ""]),
    ({}, {"conditions": [{"type": "FailureTarget", "status": "True"}]}, {}, ["FailureTarget", "0/1", ""]),
    ({}, {}, {"deletionTimestamp": ts(1)}, ["Terminating", "0/1", ""]),
    ({"parallelism": 3}, {"succeeded": 1}, {}, ["Running", "1/1 of 3", ""]),
    ({"completions": 2, "parallelism": 2, "completionMode": "Indexed"}, {"succeeded": 1}, {}, ["Running", "1/2", ""]),
])
def test_job_table_cells(spec, status, meta, cells):
    j, _ = create(job(**spec))
    j["status"] = status
    j["metadata"].update(meta)
    row = S.row(j, CTX)
    assert row[0] == "pi" and row[1:4] == cells and row[4] == "2m"
    assert row[5:] == ["pi", "perl:5.34", f"batch.kubernetes.io/controller-uid={UID}"]
    assert [c.name for c in S.columns] == ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images",
                                           "Selector"]


def test_registration_and_field_selector():
    assert JOBS.categories == ["all"] and JOBS.subresources == ["status"]
    j, _ = create(job())
    j["status"] = {"succeeded": 2}
    assert S.field_selectors["status.successful"](j) == "2"
