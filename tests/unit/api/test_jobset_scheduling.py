"""JobSet `spec.scheduling` (JobSet's JobSetWorkloadAwareSchedulingAPI gate, Kubernetes 1.37): the
webhook's defaults and denials in JobSet's words, the schema rules, immutability, and the
PodGroupTemplates and names a JobSet compiles into."""

from __future__ import annotations

import copy
import hashlib

import pytest

from phalanx.api import jobset, jobset_scheduling as sch
from phalanx.api.registry import StrategyContext
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates

JS = jobset.JobSetStrategy()
GATE_ON = FeatureGates({"JobSetWorkloadAwareSchedulingAPI": True}, release="1.37")
GATE_OFF = FeatureGates({}, release="1.37")


def rjob(name, replicas=1, parallelism=1, priority_class="", depends_on=None):
    pod_spec = {"containers": [{"name": "c", "image": "busybox"}]}
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    rj = {"name": name, "replicas": replicas,
          "template": {"spec": {"parallelism": parallelism, "completions": parallelism,
                                "template": {"spec": pod_spec}}}}
    if depends_on:
        rj["dependsOn"] = [{"name": depends_on, "status": "Ready"}]
    return rj


def jobset_of(scheduling, *rjobs, name="train", **spec):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"scheduling": scheduling, "replicatedJobs": list(rjobs or (rjob("driver"), rjob("workers", 2, 2))),
                     **spec}}


def create(obj, gates=GATE_ON):
    obj = copy.deepcopy(obj)
    ctx = StrategyContext(gates=gates)
    JS.default(obj, ctx)
    JS.admit("CREATE", obj, None, ctx)
    return obj, [e.message() for e in JS.validate(obj, ctx)]


def denial(obj, gates=GATE_ON) -> list[str]:
    with pytest.raises(StatusError) as e:
        create(obj, gates)
    assert e.value.code == 403 and e.value.reason == "Forbidden"
    prefix = 'admission webhook "vjobset.kb.io" denied the request: '
    assert e.value.message.startswith(prefix)
    return e.value.message[len(prefix):].split("\n")


def sha10(text):
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def templates(obj):
    """The compiled templates, without the `schedulingConstraints: null` every one carries."""
    out = [item.template() for item in sch.plan_items(create(obj)[0])]
    assert all("schedulingConstraints" in t for t in out)
    return [{k: v for k, v in t.items() if v is not None} for t in out]


# -- defaults ---------------------------------------------------------------------------------------

def test_empty_scheduling_defaults_to_a_top_level_gang():
    obj, errs = create(jobset_of({}))
    assert errs == []
    assert obj["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 0}}}


def test_per_replicated_job_entries_get_no_top_level_policy():
    obj, _ = create(jobset_of({"replicatedJobs": [
        {"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"gang": {}}},
        {"targetReplicatedJobs": ["workers"], "job": {"schedulingPolicy": {"gang": {}}}}]}))
    scheduling = obj["spec"]["scheduling"]
    assert "schedulingPolicy" not in scheduling
    assert scheduling["replicatedJobs"][0]["schedulingPolicy"] == {"gang": {"minCount": 0}}
    assert scheduling["replicatedJobs"][1]["job"]["schedulingPolicy"] == {"gang": {"minCount": 0}}


def test_sequenced_startup_gets_no_top_level_policy():
    obj, _ = create(jobset_of({}, rjob("leader"), rjob("workers", 2, 2, depends_on="leader")))
    assert obj["spec"]["scheduling"] == {}


# -- the compiled templates and names ---------------------------------------------------------------------

def test_top_level_gang_is_one_template_counting_every_pod():
    obj = jobset_of({"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}})
    name = f"train-{sha10('JobSet/default/train')}"
    assert templates(obj) == [{"name": name, "schedulingPolicy": {"gang": {"minCount": 1 * 1 + 2 * 2}},
                               "disruptionMode": {"all": {}}}]
    assert sch.workload_name(obj) == name
    assert sch.pod_group_name(obj, name) == name  # the single top-level PodGroup takes the template's name
    assert sch.template_name_for_job(obj, "workers", 1) == name


def test_explicit_top_level_min_count_is_kept():
    assert templates(jobset_of({"schedulingPolicy": {"gang": {"minCount": 3}}}))[0]["schedulingPolicy"] == \
        {"gang": {"minCount": 3}}


def test_per_replicated_job_templates_and_pod_group_names():
    obj = jobset_of({"replicatedJobs": [{"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"basic": {}}},
                                        {"targetReplicatedJobs": ["workers"], "schedulingPolicy": {"gang": {}}}]})
    driver, workers = f"driver-{sha10('ReplicatedJobGroup/default/train/driver')}", \
        f"workers-{sha10('ReplicatedJobGroup/default/train/workers')}"
    assert templates(obj) == [{"name": driver, "schedulingPolicy": {"basic": {}}},
                              {"name": workers, "schedulingPolicy": {"gang": {"minCount": 4}}}]
    assert sch.pod_group_name(obj, workers) == f"train-{workers}"
    assert sch.template_name_for_job(obj, "workers", 0) == workers


def test_replicated_jobs_targeted_together_share_one_template():
    obj = jobset_of({"replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"],
                                         "schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}}]})
    name = f"driver-workers-{sha10('ReplicatedJobGroup/default/train/driver-workers')}"
    assert templates(obj) == [{"name": name, "schedulingPolicy": {"gang": {"minCount": 5}},
                               "disruptionMode": {"all": {}}}]


def test_job_entry_gives_every_job_replica_its_own_template():
    obj = jobset_of({"replicatedJobs": [
        {"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"gang": {}}},
        {"targetReplicatedJobs": ["workers"], "job": {"schedulingPolicy": {"gang": {}},
                                                      "resourceClaims": [{"name": "gpu",
                                                                          "resourceClaimTemplateName": "t"}]}}]})
    got = templates(obj)
    assert [t["schedulingPolicy"]["gang"]["minCount"] for t in got] == [1, 2, 2]
    assert [t["name"] for t in got[1:]] == [f"workers-{i}-{sha10(f'Job/default/train/workers/{i}')}"
                                             for i in range(2)]
    assert got[2]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    assert sch.template_name_for_job(obj, "workers", 1) == got[2]["name"]


def test_sequenced_startup_splits_a_top_level_gang_per_replicated_job():
    obj = jobset_of({"schedulingPolicy": {"gang": {}}}, rjob("leader"), rjob("workers", 2, 3, depends_on="leader"))
    got = templates(obj)
    assert [t["name"] for t in got] == [f"{n}-{sha10(f'ReplicatedJob/default/train/{n}')}"
                                        for n in ("leader", "workers")]
    assert [t["schedulingPolicy"] for t in got] == [{"gang": {"minCount": 1}}, {"gang": {"minCount": 6}}]


def test_top_level_basic_is_one_basic_template_per_replicated_job():
    got = templates(jobset_of({"schedulingPolicy": {"basic": {}}}))
    assert [t["schedulingPolicy"] for t in got] == [{"basic": {}}, {"basic": {}}]


def test_priority_class_goes_to_the_template():
    obj = jobset_of({}, rjob("a", priority_class="high"), rjob("b", priority_class="high"))
    assert templates(obj)[0]["priorityClassName"] == "high"


def test_long_names_fit_a_dns_label():
    long = "j" * 60
    obj = jobset_of({"replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"]}]}, name=long)
    assert sch.workload_name(obj) == f"{long[:52]}-{sha10(f'JobSet/default/{long}')}"
    template = sch.group_template_name(obj, ["driver", "workers"])
    assert sch.pod_group_name(obj, template) == f"{long[:52]}-{sha10(f'{long}/{template}')}"


# -- the validating webhook ---------------------------------------------------------------------------

def test_gate_off_forbids_scheduling():
    assert denial(jobset_of({}), GATE_OFF) == [
        "spec.scheduling: Forbidden: cannot be set when JobSetWorkloadAwareSchedulingAPI feature gate is disabled"]


def test_kubernetes_1_36_has_no_such_gate_and_forbids_scheduling():
    with pytest.raises(Exception, match="unrecognized feature gate: JobSetWorkloadAwareSchedulingAPI"):
        FeatureGates({"JobSetWorkloadAwareSchedulingAPI": True}, release="1.36")
    assert denial(jobset_of({}), FeatureGates({}, release="1.36"))[0].startswith("spec.scheduling: Forbidden")


BOTH = ("spec.scheduling: Forbidden: cannot set schedulingPolicy, schedulingConstraints, or disruptionMode together "
        "with replicatedJobs; use exactly one of the top-level scheduling API or the per-ReplicatedJob "
        "(replicatedJobs) scheduling API")
NOT_TARGETED = ('spec.replicatedJobs[1].name: Invalid value: "workers": must be targeted by a replicatedJobs entry '
                "when spec.scheduling does not set a top-level schedulingPolicy, schedulingConstraints, or "
                "disruptionMode")


@pytest.mark.parametrize("scheduling, want", [
    ({"disruptionMode": {"all": {}}, "replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"]}]}, [BOTH]),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["driver"]}]}, [NOT_TARGETED]),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["driver", "nope"]},
                         {"targetReplicatedJobs": ["workers", "driver"]}]},
     ['spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]: Invalid value: "nope": does not reference a valid '
      "replicatedJob name",
      'spec.scheduling.replicatedJobs[1].targetReplicatedJobs[1]: Invalid value: "driver": is targeted by more than '
      "one replicatedJobs entry"]),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["driver"]},
                         {"targetReplicatedJobs": ["workers"], "disruptionMode": {"single": {}},
                          "job": {"schedulingPolicy": {"gang": {}}}}]},
     ['spec.scheduling.replicatedJobs[1].job: Invalid value: true: cannot be set together with schedulingPolicy, '
      "schedulingConstraints, disruptionMode, or resourceClaims on the same replicatedJobs entry; job replaces the "
      "single shared PodGroup those fields configure with one PodGroup per Job"]),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["driver"]},
                         {"targetReplicatedJobs": ["workers"],
                          "job": {"schedulingPolicy": {"gang": {"minCount": 3}}}}]},
     ['spec.scheduling.replicatedJobs[1].job.schedulingPolicy.gang.minCount: Invalid value: 3: cannot exceed the '
      'per-Job pod count (parallelism) of replicatedJob "workers" (2)']),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"],
                          "schedulingPolicy": {"gang": {"minCount": 6}}}]},
     ["spec.scheduling.replicatedJobs[0].schedulingPolicy.gang.minCount: Invalid value: 6: cannot exceed the number "
      "of pods across the targeted ReplicatedJobs [driver workers] (5)"]),
    ({"schedulingPolicy": {"gang": {"minCount": 6}}},
     ["spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 6: cannot exceed the total number of JobSet "
      "pods (5)"]),
    ({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
     ['spec.scheduling.disruptionMode: Invalid value: "": the disruptionMode `all` is not supported with the Basic '
      "scheduling policy"] * 2),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["driver"], "disruptionMode": {"single": {}, "all": {}}},
                         {"targetReplicatedJobs": ["workers"], "schedulingPolicy": {}}]},
     ['spec.scheduling.replicatedJobs.driver.disruptionMode: Invalid value: "": exactly one of `single`, `all` is '
      "required, but multiple fields are set",
      'spec.scheduling.replicatedJobs.workers.schedulingPolicy: Invalid value: "": must specify one of: `basic`, '
      "`gang`"]),
    ({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}},
     ["spec.scheduling.schedulingConstraints.topology: Too many: 2: must have at most 1 items"]),
])
def test_webhook_denials(scheduling, want):
    assert denial(jobset_of(scheduling)) == want


def test_sequenced_startup_refuses_an_explicit_top_level_min_count():
    obj = jobset_of({"schedulingPolicy": {"gang": {"minCount": 2}}}, rjob("leader"),
                    rjob("workers", 2, 2, depends_on="leader"))
    assert denial(obj) == ["spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 2: cannot be set when "
                           "DependsOn or InOrder StartupPolicy is used; use per-ReplicatedJob gang policies instead"]


def test_in_order_startup_is_sequenced_too():
    obj = jobset_of({}, startupPolicy={"startupPolicyOrder": "InOrder"})
    assert [t["schedulingPolicy"] for t in templates(obj)] == [{"gang": {"minCount": 1}}, {"gang": {"minCount": 4}}]


def test_pods_may_not_name_their_own_pod_group():
    rj = rjob("workers", 2, 2)
    rj["template"]["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    assert denial(jobset_of({}, rj)) == [
        "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup: Forbidden: cannot be set directly when "
        "spec.scheduling is configured; the JobSet controller manages this field"]


def test_one_top_level_pod_group_needs_one_priority_class():
    assert denial(jobset_of({}, rjob("a", priority_class="high"), rjob("b", priority_class="low"))) == [
        'spec.replicatedJobs[1].template.spec.template.spec.priorityClassName: Invalid value: "low": must match '
        '"high" when top-level gang scheduling is used']


def test_replicated_jobs_sharing_a_pod_group_need_one_priority_class():
    obj = jobset_of({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"]}]},
                    rjob("a", priority_class="high"), rjob("b"))
    assert denial(obj) == ['spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]: Invalid value: "b": '
                           'priorityClassName "" must match "high" of the other ReplicatedJobs sharing this PodGroup']


def test_job_entry_targets_exactly_one_replicated_job():
    obj = jobset_of({"replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"], "job": {}}]})
    assert denial(obj) == ['spec.scheduling.replicatedJobs[0].targetReplicatedJobs: Invalid value: '
                           '[]string{"driver", "workers"}: must target exactly one replicatedJob when job is set']


# -- CRD schema and updates -------------------------------------------------------------------------------

def test_schema_limits():
    too_many = [{"targetReplicatedJobs": [f"r{i}"]} for i in range(51)]
    _, errs = create(jobset_of({"replicatedJobs": too_many}))
    assert errs == ["spec.scheduling.replicatedJobs: Too many: 51: must have at most 50 items"]
    _, errs = create(jobset_of({"replicatedJobs": [{"schedulingPolicy": {"gang": {}}},
                                                    {"targetReplicatedJobs": ["driver", "driver"]}]}))
    assert errs == ["spec.scheduling.replicatedJobs[0].targetReplicatedJobs: Required value",
                    'spec.scheduling.replicatedJobs[1].targetReplicatedJobs[1]: Duplicate value: "driver"']


def update(new, old):
    ctx = StrategyContext(gates=GATE_ON)
    new = copy.deepcopy(new)
    JS.default(new, ctx)
    JS.admit("UPDATE", new, old, ctx)
    return new


def test_scheduling_is_immutable_unless_suspended():
    old, _ = create(jobset_of({}))
    changed = copy.deepcopy(old)
    changed["spec"]["scheduling"]["disruptionMode"] = {"all": {}}
    with pytest.raises(StatusError) as e:
        update(changed, old)
    assert e.value.message == ('admission webhook "vjobset.kb.io" denied the request: spec.scheduling: Invalid '
                               'value: "": field is immutable')
    old["spec"]["suspend"] = changed["spec"]["suspend"] = True
    old["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    assert update(changed, old)["spec"]["scheduling"]["disruptionMode"] == {"all": {}}
