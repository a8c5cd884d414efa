"""jobset.x-k8s.io/v1alpha2 JobSet: CRD defaults and schema, the JobSet webhooks, the printer columns."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from phalanx.api import jobset
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.errors import StatusError

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)

JOBSET = {  # the tutorial's jobset.yaml
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "training-job", "namespace": "default"},
    "spec": {"replicatedJobs": [{
        "name": "workers",
        "replicas": 3,
        "template": {"spec": {
            "completions": 2, "parallelism": 2, "backoffLimit": 0,
            "template": {"spec": {
                "terminationGracePeriodSeconds": 0,
                "schedulingGroup": {"podGroupName": "training-workers"},
                "resourceClaims": [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}],
                "containers": [{"name": "worker", "image": "busybox", "command": ["/bin/sh", "-c", "sleep infinity"],
                                "resources": {"claims": [{"name": "shared-gpu"}]}}],
            }},
        }},
    }]},
}

JS = jobset.JobSetStrategy()


def ctx() -> StrategyContext:
    return StrategyContext(gates=FeatureGates({}), now=lambda: NOW)


def create(obj: dict) -> tuple[dict, list[str]]:
    obj = copy.deepcopy(obj)
    c = ctx()
    JS.default(obj, c)
    JS.prepare_for_create(obj, c)
    JS.admit("CREATE", obj, None, c)
    return obj, [e.message() for e in JS.validate(obj, c)]


def update(new: dict, old: dict) -> tuple[dict, list[str]]:
    new = copy.deepcopy(new)
    c = ctx()
    JS.default(new, c)
    JS.prepare_for_update(new, old, c)
    JS.admit("UPDATE", new, old, c)
    return new, [e.message() for e in JS.validate_update(new, old, c)]


def with_(obj: dict, path: str, value) -> dict:
    out = copy.deepcopy(obj)
    parts = path.split(".")
    cur = out
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
    last = parts[-1]
    if value is ...:
        cur.pop(last, None)
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return out


RJ = "spec.replicatedJobs.0"


def test_tutorial_jobset_is_defaulted_like_the_webhook():
    obj, errs = create(JOBSET)
    assert errs == []
    spec = obj["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    rj = spec["replicatedJobs"][0]
    assert rj["groupName"] == "default" and rj["replicas"] == 3
    assert rj["template"]["spec"]["completionMode"] == "Indexed"
    pod_spec = rj["template"]["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "OnFailure"
    assert pod_spec["schedulingGroup"] == {"podGroupName": "training-workers"}
    assert "status" not in obj


def test_defaults_replicas_and_failure_policy_rule_names():
    js = with_(JOBSET, f"{RJ}.replicas", ...)
    js = with_(js, "spec.failurePolicy", {"maxRestarts": 2, "rules": [{"action": "FailJobSet"},
                                                                      {"name": "mine", "action": "RestartJobSet"}]})
    obj, errs = create(js)
    assert errs == []
    assert obj["spec"]["replicatedJobs"][0]["replicas"] == 1
    assert obj["spec"]["failurePolicy"]["restartStrategy"] == "Recreate"
    assert [r["name"] for r in obj["spec"]["failurePolicy"]["rules"]] == ["failurePolicyRule0", "mine"]
    # set values are kept
    obj, _ = create(with_(with_(JOBSET, "spec.successPolicy", {"operator": "Any", "targetReplicatedJobs": ["workers"]}),
                          f"{RJ}.template.spec.template.spec.restartPolicy", "Never"))
    assert obj["spec"]["successPolicy"]["operator"] == "Any"
    assert obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def denial(js: dict) -> str:
    with pytest.raises(StatusError) as e:
        create(js)
    assert e.value.code == 403 and e.value.reason == "Forbidden"
    prefix = 'admission webhook "vjobset.kb.io" denied the request: '
    assert e.value.message.startswith(prefix)
    return e.value.message[len(prefix):]


LONG = "a" * 54  # "<name>-workers-2" is 64 characters


@pytest.mark.parametrize("change, want", [
    (("metadata.name", LONG),
     f'spec.replicatedJobs[0].name: Invalid value: "{LONG}-workers-2": JobSet name is too long, job names generated '
     f'for this JobSet will exceed 63 characters\n'
     f'spec.replicatedJobs[0].name: Invalid value: "{LONG}-workers-2": JobSet name is too long, pod names generated '
     f'for this JobSet will exceed 63 characters'),
    (("metadata.name", "a" * 46),  # the job name fits, "<name>-workers-2-1-abcde" (64) does not
     f'spec.replicatedJobs[0].name: Invalid value: "{"a" * 46}-workers-2": JobSet name is too long, pod names '
     f'generated for this JobSet will exceed 63 characters'),
    (("spec.successPolicy", {"operator": "All", "targetReplicatedJobs": ["leader"]}),
     "invalid replicatedJob name 'leader' does not appear in .spec.ReplicatedJobs"),
    (("spec.network", {"subdomain": "Bad_Name"}),
     'spec.network.subdomain: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
     '\nspec.network.subdomain: Invalid value: "Bad_Name": a DNS-1035 label must consist of lower case alphanumeric '
     "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
     "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"),
    ((f"{RJ}.dependsOn", [{"name": "x", "status": "Ready"}]),
     "DependsOn can't be set for the first ReplicatedJob\nreplicatedJob: workers cannot depend on replicatedJob: x"),
    (("spec.failurePolicy", {"rules": [{"name": "r", "action": "FailJobSet"}, {"name": "r", "action": "FailJobSet"}]}),
     "rule names are not unique, rules with indices [0 1] all have the same name 'r'"),
    (("spec.failurePolicy", {"rules": [{"name": "r", "action": "FailJobSet", "onJobFailureReasons": ["Oops"],
                                        "targetReplicatedJobs": ["nope"]}]}),
     "invalid replicatedJob name 'nope' in failure policy does not appear in .spec.ReplicatedJobs\n"
     "invalid job failure reason 'Oops' in failure policy is not a recognized job failure reason"),
    (("spec.coordinator", {"replicatedJob": "workers", "jobIndex": 3}),
     "coordinator job index 3 is invalid for replicatedJob workers"),
    (("spec.coordinator", {"replicatedJob": "leader"}), "coordinator replicatedJob leader does not exist"),
    (("spec.managedBy", "kueue"), 'spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as '
                                  '"acme.io/foo")'),
])
def test_webhook_denials(change, want):
    assert denial(with_(JOBSET, *change)) == want


def test_valid_coordinator_and_managed_by_are_accepted():
    js = with_(with_(JOBSET, "spec.coordinator", {"replicatedJob": "workers", "jobIndex": 2, "podIndex": 1}),
               "spec.managedBy", "kueue.x-k8s.io/multikueue")
    assert create(js)[1] == []


@pytest.mark.parametrize("change, want", [
    (("spec.successPolicy", {"operator": "Most"}),
     ['spec.successPolicy.operator: Unsupported value: "Most": supported values: "All", "Any"']),
    (("spec.startupPolicy", {"startupPolicyOrder": "Random"}),
     ['spec.startupPolicy.startupPolicyOrder: Unsupported value: "Random": supported values: "AnyOrder", "InOrder"']),
    ((f"{RJ}.name", ...), ["spec.replicatedJobs[0].name: Required value"]),
    ((f"{RJ}.template.spec.template.spec.containers", ...),
     ["spec.replicatedJobs[0].template.spec.template.spec.containers: Required value"]),
    (("spec.ttlSecondsAfterFinished", -1),
     ["spec.ttlSecondsAfterFinished: Invalid value: -1: spec.ttlSecondsAfterFinished in body should be greater than "
      "or equal to 0"]),
    (("spec.failurePolicy", {"restartStrategy": "Sometimes"}),
     ['spec.failurePolicy.restartStrategy: Unsupported value: "Sometimes": supported values: "Recreate", '
      '"BlockingRecreate", "InPlaceRestart"']),
])
def test_crd_schema_errors(change, want):
    # schema errors are 422s; the webhook is not consulted for objects the schema rejects
    assert create(with_(JOBSET, *change))[1] == want


def test_startup_policy_and_depends_on_are_exclusive():
    js = with_(JOBSET, "spec.replicatedJobs", [
        copy.deepcopy(JOBSET["spec"]["replicatedJobs"][0]),
        dict(copy.deepcopy(JOBSET["spec"]["replicatedJobs"][0]), name="more", dependsOn=[
            {"name": "workers", "status": "Ready"}])])
    assert create(js)[1] == []
    assert create(with_(js, "spec.startupPolicy", {"startupPolicyOrder": "InOrder"}))[1] == [
        'spec: Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive']


def test_updates():
    old, _ = create(JOBSET)
    old["metadata"]["uid"] = "u"
    # CEL transition rule: successPolicy is immutable (422)
    _, errs = update(with_(old, "spec.successPolicy", {"operator": "Any"}), old)
    assert errs == ['spec.successPolicy: Invalid value: "object": Value is immutable']
    # the webhook: replicatedJobs are immutable (403)
    with pytest.raises(StatusError) as e:
        update(with_(old, f"{RJ}.replicas", 4), old)
    assert e.value.code == 403
    assert e.value.message.startswith('admission webhook "vjobset.kb.io" denied the request: spec.replicatedJobs: '
                                      'Invalid value: ')
    assert e.value.message.endswith(": field is immutable")
    # ... except pod scheduling directives while suspended (Kueue)
    suspended = with_(old, "spec.suspend", True)
    new, errs = update(with_(suspended, f"{RJ}.template.spec.template.spec.nodeSelector", {"zone": "a"}), suspended)
    assert errs == []
    # suspend itself is mutable; status is kept from the old object
    old["status"] = {"restarts": 0}
    new, errs = update(with_(with_(old, "spec.suspend", True), "status", {}), old)
    assert errs == [] and new["status"] == {"restarts": 0}


@pytest.mark.parametrize("status, suspend, want", [
    (None, None, [None, None, None, None]),
    ({"restarts": 0, "terminalState": "", "conditions": []}, False, [None, "0", None, "false"]),
    ({"restarts": 1, "terminalState": "Completed",
      "conditions": [{"type": "Completed", "status": "True"}]}, False, ["Completed", "1", "True", "false"]),
])
def test_columns(status, suspend, want):
    obj, _ = create(JOBSET if suspend is None else with_(JOBSET, "spec.suspend", suspend))
    if status is not None:
        obj["status"] = status
    obj["metadata"]["creationTimestamp"] = (NOW - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [(c.name, c.type) for c in JS.columns] == [
        ("Name", "string"), ("TerminalState", "string"), ("Restarts", "string"), ("Completed", "string"),
        ("Suspended", "string"), ("Age", "date")]
    assert JS.row(obj, ctx()) == ["training-job", *want, "30s"]


def test_names():
    assert jobset.job_name("training-job", "workers", 2) == "training-job-workers-2"
    assert jobset.pod_name("training-job", "workers", 2, 1) == "training-job-workers-2-1"
    assert jobset.subdomain(JOBSET) == "training-job"


def test_pod_templates_not_validated_unless_asked():
    bad = with_(JOBSET, f"{RJ}.template.spec.template.spec.containers.0.image", "")
    assert create(bad)[1] == []  # as upstream: the CRD does not validate pod templates


def test_pod_templates_validated_when_asked():
    pytest.importorskip("phalanx.api.podspec")
    bad = with_(JOBSET, f"{RJ}.template.spec.template.spec.containers.0.image", "")
    jobset.VALIDATE_POD_TEMPLATES = True
    try:
        message = denial(bad)
    finally:
        jobset.VALIDATE_POD_TEMPLATES = False
    assert message.startswith("spec.replicatedJobs[0].template.spec.template.spec.containers[0].image: ")


def test_registration():
    from phalanx.api import registry
    rt = registry.lookup("jobset.x-k8s.io", "v1alpha2", "jobsets")
    assert rt.namespaced and rt.subresources == ["status"] and rt.short_names == []
