"""scheduling.k8s.io v1beta1 / v1alpha3 (Kubernetes 1.37): Workload, PodGroup and CompositePodGroup
strategies: defaults, validation (field paths and messages), mutability, gated fields, admission."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from phalanx.api.registry import StrategyContext
from phalanx.api.scheduling import common, v1beta1
from phalanx.machinery.errors import StatusError
from phalanx.machinery.featuregates import FeatureGates

NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=timezone.utc)
WL = v1beta1.WORKLOADS.strategy
PG = v1beta1.POD_GROUPS.strategy
CPG = v1beta1.COMPOSITE_POD_GROUPS.strategy

WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
    "metadata": {"name": "training", "namespace": "default"},
    "spec": {
        "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "training-job"},
        "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}],
    },
}

COMPOSITE_WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
    "metadata": {"name": "lws", "namespace": "default"},
    "spec": {"compositePodGroupTemplates": [{
        "name": "replicas", "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
        "podGroupTemplates": [{"name": "leader", "schedulingPolicy": {"basic": {}}},
                              {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}],
    }]},
}

POD_GROUP = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
    "metadata": {"name": "training-workers", "namespace": "default"},
    "spec": {"workloadRef": {"workloadName": "training", "templateName": "workers"},
             "schedulingPolicy": {"gang": {"minCount": 4}}},
}

COMPOSITE = {
    "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
    "metadata": {"name": "replica-0", "namespace": "default"},
    "spec": {"workloadRef": {"workloadName": "lws", "templateName": "replicas"},
             "schedulingPolicy": {"gang": {"minGroupCount": 2}}},
}


class Objects:
    """The store behind StrategyContext.lookup / list_objects."""

    def __init__(self, *objs: dict):
        self.objs: dict[tuple[str, str, str], dict] = {}
        for o in objs:
            key = {"Workload": common.WORKLOADS_KEY, "PriorityClass": common.PRIORITY_CLASSES_KEY}[o["kind"]]
            self.objs[(key, o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o

    def lookup(self, key: str, ns: str, name: str):
        return self.objs.get((key, ns, name))

    def list_objects(self, key: str, ns):
        return [o for (k, n, _), o in self.objs.items() if k == key and (ns is None or n == ns)]


def ctx(gates: dict | None = None, objects: Objects | None = None) -> StrategyContext:
    objects = objects or Objects(WORKLOAD, COMPOSITE_WORKLOAD)
    return StrategyContext(gates=FeatureGates(gates or {}, release="1.37"), now=lambda: NOW,
                           lookup=objects.lookup, list_objects=objects.list_objects)


def create(strategy, obj: dict, c: StrategyContext | None = None) -> tuple[dict, list[str]]:
    """What the REST layer does on POST: default, prepare, admit, validate."""
    c = c or ctx()
    obj = copy.deepcopy(obj)
    strategy.default(obj, c)
    strategy.prepare_for_create(obj, c)
    strategy.admit("CREATE", obj, None, c)
    return obj, [e.message() for e in strategy.validate(obj, c)]


def update(strategy, old: dict, change, c: StrategyContext | None = None) -> tuple[dict, list[str]]:
    """PUT of `old` (as created) changed by `change(new)`."""
    c = c or ctx()
    new = copy.deepcopy(old)
    change(new)
    strategy.default(new, c)
    strategy.prepare_for_update(new, old, c)
    return new, [e.message() for e in strategy.validate_update(new, old, c)]


def with_spec(obj: dict, **fields) -> dict:
    o = copy.deepcopy(obj)
    o["spec"].update(fields)
    return o


def with_template(**fields) -> dict:
    o = copy.deepcopy(WORKLOAD)
    o["spec"]["podGroupTemplates"][0].update(fields)
    return o


# -- Workload ------------------------------------------------------------------------------------------


def test_workload_defaults_keep_upstream_json_shape():
    obj, errs = create(WL, WORKLOAD)
    assert errs == []
    assert obj["spec"]["podGroupTemplates"][0]["schedulingConstraints"] is None
    composite, errs = create(WL, COMPOSITE_WORKLOAD)
    assert errs == []
    assert composite["spec"]["podGroupTemplates"] is None  # no omitempty
    nested = composite["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][0]
    assert nested["schedulingConstraints"] is None


@pytest.mark.parametrize("spec,expected", [
    ({}, "spec: Invalid value: \"\": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`"),
    ({"podGroupTemplates": [{"name": "a", "schedulingPolicy": {"basic": {}}}],
      "compositePodGroupTemplates": COMPOSITE_WORKLOAD["spec"]["compositePodGroupTemplates"]},
     "spec: Invalid value: \"{podGroupTemplates, compositePodGroupTemplates}\": must specify exactly one of: "
     "`podGroupTemplates`, `compositePodGroupTemplates`"),
])
def test_workload_template_lists_are_a_union(spec, expected):
    obj = copy.deepcopy(WORKLOAD)
    obj["spec"] = spec
    assert create(WL, obj)[1] == [expected]


def test_workload_at_most_eight_templates():
    templates = [{"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]
    assert create(WL, with_spec(WORKLOAD, podGroupTemplates=templates))[1] == [
        "spec.podGroupTemplates: Too many: 9: must have at most 8 items"]


def test_workload_template_policy_union_and_min_count():
    assert create(WL, with_template(schedulingPolicy={}))[1] == [
        'spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']
    assert create(WL, with_template(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}}))[1] == [
        'spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "{basic, gang}": '
        'must specify exactly one of: `basic`, `gang`']
    assert create(WL, with_template(schedulingPolicy={"gang": {"minCount": 0}}))[1] == [
        "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"]
    assert create(WL, with_template(schedulingPolicy={"gang": {"minCount": -1}}))[1] == [
        "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: -1: "
        "must be greater than or equal to 1"]


def test_workload_template_fields_formats():
    _, errs = create(WL, with_template(name="Workers", priority=1_000_000_001, priorityClassName="Bad_Name",
                                       disruptionMode={"single": {}, "all": {}}, preemptionPolicy="Sometimes"))
    assert errs[0].startswith('spec.podGroupTemplates[0].name: Invalid value: "Workers": a lowercase RFC 1123 label')
    assert 'spec.podGroupTemplates[0].disruptionMode: Invalid value: "{single, all}": must specify exactly one of: ' \
           '`single`, `all`' in errs
    assert "spec.podGroupTemplates[0].priority: Invalid value: 1000000001: must be less than or equal to " \
           "1000000000" in errs
    assert any(e.startswith('spec.podGroupTemplates[0].priorityClassName: Invalid value: "Bad_Name": '
                            "a lowercase RFC 1123 subdomain") for e in errs)
    assert 'spec.podGroupTemplates[0].preemptionPolicy: Unsupported value: "Sometimes": supported values: ' \
           '"Never", "PreemptLowerPriority"' in errs


def test_workload_resource_claims_and_topology():
    claims = [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}] + \
        [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(1)]
    _, errs = create(WL, with_template(resourceClaims=claims,
                                       schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}))
    assert "spec.podGroupTemplates[0].schedulingConstraints.topology: Too many: 2: must have at most 1 items" in errs
    assert 'spec.podGroupTemplates[0].resourceClaims[0]: Invalid value: "{resourceClaimName, ' \
           'resourceClaimTemplateName}": must specify exactly one of: `resourceClaimName`, ' \
           '`resourceClaimTemplateName`' in errs
    five = [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]
    assert create(WL, with_template(resourceClaims=five))[1] == [
        "spec.podGroupTemplates[0].resourceClaims: Too many: 5: must have at most 4 items"]


def test_workload_controller_ref():
    _, errs = create(WL, with_spec(WORKLOAD, controllerRef={"apiGroup": "Bad_Group", "kind": "", "name": "a/b"}))
    assert "spec.controllerRef.kind: Required value" in errs
    assert "spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/'" in errs
    assert any(e.startswith('spec.controllerRef.apiGroup: Invalid value: "Bad_Group"') for e in errs)


def test_workload_composite_template_rules():
    tree = copy.deepcopy(COMPOSITE_WORKLOAD)
    cpt = tree["spec"]["compositePodGroupTemplates"][0]
    cpt["schedulingPolicy"] = {"gang": {"minGroupCount": 0}}
    cpt["podGroupTemplates"] = []
    assert create(WL, tree)[1] == [
        'spec.compositePodGroupTemplates[0]: Invalid value: "replicas": must have at least one child '
        "PodGroupTemplate or CompositePodGroupTemplate",
        "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount: Required value"]


def nested(depth: int) -> dict:
    """A Workload whose tree is `depth` levels deep (composite templates down to one PodGroupTemplate)."""
    node: dict = {"podGroupTemplates": [{"name": f"leaf{depth}", "schedulingPolicy": {"basic": {}}}]}
    for level in range(depth - 1, 0, -1):
        node = {"compositePodGroupTemplates": [{"name": f"level{level}", "schedulingPolicy": {"basic": {}},
                                                **node}]}
    obj = copy.deepcopy(WORKLOAD)
    obj["spec"] = node
    return obj


def test_workload_tree_at_most_four_levels_deep():
    assert create(WL, nested(4))[1] == []  # three composite levels, pod group templates at the fourth
    assert create(WL, nested(5))[1] == ["spec.compositePodGroupTemplates[0]: Invalid value: null: "
                                        "maximum tree depth is 4"]


def test_workload_template_names_unique_across_the_tree():
    tree = copy.deepcopy(COMPOSITE_WORKLOAD)
    tree["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][1]["name"] = "replicas"
    assert create(WL, tree)[1] == [
        'spec.compositePodGroupTemplates[0].podGroupTemplates[1].name: Duplicate value: "replicas"']
    same_list = with_spec(WORKLOAD, podGroupTemplates=[{"name": "a", "schedulingPolicy": {"basic": {}}}] * 2)
    assert create(WL, same_list)[1] == [
        'spec.podGroupTemplates[1]: Duplicate value: {"name":"a","schedulingConstraints":null,'
        '"schedulingPolicy":{"basic":{}}}']


def test_workload_min_count_is_the_only_mutable_field():
    stored, _ = create(WL, WORKLOAD)
    _, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]
                     .update(minCount=2))
    assert errs == []
    _, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]
                     .update(minCount=0))
    assert errs == ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"]
    _, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"][0].update(priority=5))
    assert errs == ["spec.podGroupTemplates[0].priority: Invalid value: null: field is immutable"]
    _, errs = update(WL, stored, lambda o: o["spec"]["controllerRef"].update(name="other"))
    assert errs == ["spec.controllerRef: Invalid value: null: field is immutable"]


def test_workload_policy_cannot_switch_between_basic_and_gang():
    stored, _ = create(WL, WORKLOAD)
    _, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"][0].update(
        schedulingPolicy={"basic": {}}))
    assert errs == ["spec.podGroupTemplates[0].schedulingPolicy.basic: Invalid value: null: field is immutable",
                    "spec.podGroupTemplates[0].schedulingPolicy.gang: Invalid value: null: "
                    "field cannot be cleared once set"]


def test_workload_templates_cannot_be_added_or_removed():
    stored, _ = create(WL, WORKLOAD)
    extra = {"name": "extra", "schedulingPolicy": {"basic": {}}}
    _, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"].extend([extra, {**extra, "name": "x"}]))
    assert errs == ["spec.podGroupTemplates[1]: Forbidden: item may not be added",
                    "spec.podGroupTemplates[2]: Forbidden: item may not be added"]
    renamed, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"][0].update(name="renamed"))
    assert errs == ["spec.podGroupTemplates[0]: Forbidden: item may not be added",
                    "spec.podGroupTemplates: Forbidden: may not be removed"]
    _, errs = update(WL, stored, lambda o: o["spec"].update(podGroupTemplates=[]))
    assert errs == ['spec: Invalid value: "": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`',
                    "spec.podGroupTemplates: Forbidden: may not be removed"]


def test_workload_composite_templates_follow_the_same_update_rules():
    stored, _ = create(WL, COMPOSITE_WORKLOAD)
    _, errs = update(WL, stored, lambda o: o["spec"]["compositePodGroupTemplates"][0]["schedulingPolicy"]["gang"]
                     .update(minGroupCount=3))
    assert errs == []
    _, errs = update(WL, stored, lambda o: o["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][1]
                     ["schedulingPolicy"]["gang"].update(minCount=5))
    assert errs == []
    _, errs = update(WL, stored, lambda o: o["spec"]["compositePodGroupTemplates"][0].update(schedulingPolicy={}))
    assert errs == ['spec.compositePodGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: '
                    "`basic`, `gang`",
                    "spec.compositePodGroupTemplates[0].schedulingPolicy.gang: Invalid value: null: "
                    "field cannot be cleared once set"]
    _, errs = update(WL, stored, lambda o: o["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"].pop())
    assert errs == ["spec.compositePodGroupTemplates[0].podGroupTemplates: Forbidden: may not be removed"]


def test_workload_gated_fields_dropped_when_gates_are_off():
    off = ctx({"TopologyAwareWorkloadScheduling": False, "DRAWorkloadResourceClaims": False,
               "PodGroupPreemptionPolicy": False, "CompositePodGroup": False})
    obj, errs = create(WL, with_template(schedulingConstraints={"topology": [{"key": "zone"}]},
                                         resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}],
                                         preemptionPolicy="Never"), off)
    assert errs == []
    assert obj["spec"]["podGroupTemplates"][0] == {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                                                   "schedulingConstraints": None}
    obj, errs = create(WL, COMPOSITE_WORKLOAD, off)
    assert "compositePodGroupTemplates" not in obj["spec"]
    assert errs == ['spec: Invalid value: "": must specify one of: `podGroupTemplates`']


def test_workload_gated_field_kept_on_update_when_stored():
    stored, _ = create(WL, with_template(preemptionPolicy="Never"))
    new, errs = update(WL, stored, lambda o: None, ctx({"PodGroupPreemptionPolicy": False}))
    assert errs == [] and new["spec"]["podGroupTemplates"][0]["preemptionPolicy"] == "Never"


# -- PodGroup ------------------------------------------------------------------------------------------


def test_pod_group_defaults_and_admission():
    obj, errs = create(PG, POD_GROUP)
    assert errs == []
    spec = obj["spec"]
    assert spec["disruptionMode"] == {"single": {}}
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert obj["status"] == {}
    assert obj["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]


def test_pod_group_priority_and_preemption_policy_from_class():
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
          "value": 1000, "preemptionPolicy": "Never"}
    c = ctx(objects=Objects(WORKLOAD, pc))
    obj, errs = create(PG, with_spec(POD_GROUP, priorityClassName="high"), c)
    assert errs == [] and obj["spec"]["priority"] == 1000 and obj["spec"]["preemptionPolicy"] == "Never"
    with pytest.raises(StatusError) as e:
        create(PG, with_spec(POD_GROUP, priorityClassName="high", preemptionPolicy="PreemptLowerPriority"), c)
    assert e.value.message == (
        'podgroups.scheduling.k8s.io "training-workers" is forbidden: the string value of PreemptionPolicy '
        "(PreemptLowerPriority) must not be provided in pod group spec; priority admission controller computed "
        "Never from the given PriorityClass name")
    with pytest.raises(StatusError) as e:
        create(PG, with_spec(POD_GROUP, priorityClassName="missing"), c)
    assert "no PriorityClass with name missing was found" in e.value.message
    obj, _ = create(PG, with_spec(POD_GROUP, priorityClassName="high"), ctx({"PodGroupPreemptionPolicy": False},
                                                                            Objects(WORKLOAD, pc)))
    assert "preemptionPolicy" not in obj["spec"]


def test_pod_group_may_name_a_workload_or_template_that_does_not_exist():
    """1.37 removed the PodGroupWorkloadExists admission plugin (kubernetes/kubernetes#139008)."""
    for ref in ({"workloadName": "nope", "templateName": "workers"},
                {"workloadName": "training", "templateName": "other"}):
        obj, errs = create(PG, with_spec(POD_GROUP, workloadRef=ref))
        assert errs == [] and obj["spec"]["workloadRef"] == ref


def test_pod_group_validation_messages():
    standalone = copy.deepcopy(POD_GROUP)
    del standalone["spec"]["workloadRef"]
    _, errs = create(PG, with_spec(standalone, parentCompositePodGroupName="Parent",
                                   schedulingPolicy={"gang": {}}))
    assert errs[0].startswith('spec.parentCompositePodGroupName: Invalid value: "Parent": a lowercase RFC 1123')
    assert errs[1:] == ["spec.workloadRef: Required value: must be specified when `parentCompositePodGroupName` is set",
                        "spec.schedulingPolicy.gang.minCount: Required value"]
    _, errs = create(PG, with_spec(POD_GROUP, workloadRef={"workloadName": "", "templateName": "a.b"}))
    assert errs == ["spec.workloadRef.workloadName: Required value",
                    'spec.workloadRef.templateName: Invalid value: "a.b": must not contain dots']


def test_pod_group_mutability():
    stored, _ = create(PG, POD_GROUP)
    new, errs = update(PG, stored, lambda o: o["spec"]["schedulingPolicy"]["gang"].update(minCount=2))
    assert errs == [] and new["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    _, errs = update(PG, stored, lambda o: o["spec"].update(disruptionMode={"all": {}}))
    assert errs == ["spec.disruptionMode: Invalid value: null: field is immutable"]
    _, errs = update(PG, stored, lambda o: o["spec"]["workloadRef"].update(templateName="x"))
    assert errs == ["spec.workloadRef: Invalid value: null: field is immutable"]
    basic, _ = create(PG, with_spec(POD_GROUP, schedulingPolicy={"basic": {}}))
    _, errs = update(PG, basic, lambda o: o["spec"].update(schedulingPolicy={"gang": {"minCount": 2}}))
    assert errs == ["spec.schedulingPolicy.basic: Invalid value: null: field is immutable",
                    "spec.schedulingPolicy.gang: Invalid value: null: field cannot be set once created"]


def test_pod_group_gated_fields():
    off = ctx({"TopologyAwareWorkloadScheduling": False, "DRAWorkloadResourceClaims": False,
               "PodGroupPreemptionPolicy": False, "CompositePodGroup": False})
    obj, errs = create(PG, with_spec(POD_GROUP, schedulingConstraints={"topology": [{"key": "zone"}]},
                                     resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}],
                                     parentCompositePodGroupName="replica-0", preemptionPolicy="Never"), off)
    assert errs == []
    assert set(obj["spec"]) == {"workloadRef", "schedulingPolicy", "disruptionMode", "priority"}


def test_pod_group_status():
    stored, _ = create(PG, with_spec(POD_GROUP, resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}]))
    new = copy.deepcopy(stored)
    new["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "Maybe", "reason": "",
                                     "lastTransitionTime": "2026-10-01T12:00:00Z"}],
                     "resourceClaimStatuses": [{"name": "other"}] + [{"name": f"c{i}"} for i in range(4)]}
    PG.prepare_for_status_update(new, stored, ctx())
    assert [e.message() for e in PG.validate_status_update(new, stored, ctx())] == [
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
        "status.conditions[0].reason: Required value: must be set",
        'status.resourceClaimStatuses[0].name: Invalid value: "other": must match the name of an entry in '
        "`spec.resourceClaims`",
        'status.resourceClaimStatuses[1].name: Invalid value: "c0": must match the name of an entry in '
        "`spec.resourceClaims`",
        'status.resourceClaimStatuses[2].name: Invalid value: "c1": must match the name of an entry in '
        "`spec.resourceClaims`",
        'status.resourceClaimStatuses[3].name: Invalid value: "c2": must match the name of an entry in '
        "`spec.resourceClaims`",
        'status.resourceClaimStatuses[4].name: Invalid value: "c3": must match the name of an entry in '
        "`spec.resourceClaims`",
        "status.resourceClaimStatuses: Too many: 5: must have at most 4 items"]


def test_pod_group_table_row():
    obj, _ = create(PG, POD_GROUP)
    obj["metadata"]["creationTimestamp"] = "2026-10-01T11:00:00Z"
    obj["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False",
                                     "reason": "Unschedulable"}]}
    assert [c.name for c in PG.columns] == ["Name", "Policy", "Workload", "Status", "Age"]
    assert PG.row(obj, ctx()) == ["training-workers", "Gang", "training", "Unschedulable", "60m"]


# -- CompositePodGroup -------------------------------------------------------------------------------------


def test_composite_pod_group_create():
    obj, errs = create(CPG, COMPOSITE)
    assert errs == []
    assert obj["spec"]["disruptionMode"] == {"single": {}} and obj["spec"]["priority"] == 0
    assert obj["status"] == {} and "finalizers" not in obj["metadata"]
    obj["metadata"]["creationTimestamp"] = "2026-10-01T12:00:00Z"
    assert CPG.row(obj, ctx()) == ["replica-0", "Gang", "lws", "0s"]


def test_composite_pod_group_requires_workload_ref_and_is_immutable():
    no_ref = copy.deepcopy(COMPOSITE)
    del no_ref["spec"]["workloadRef"]
    obj, errs = create(CPG, no_ref)
    assert obj["spec"]["workloadRef"] is None
    assert errs == ["spec.workloadRef: Required value"]
    _, errs = create(CPG, with_spec(COMPOSITE, schedulingPolicy={"gang": {"minGroupCount": -2}}))
    assert errs == ["spec.schedulingPolicy.gang.minGroupCount: Invalid value: -2: must be greater than or equal to 1"]
    stored, _ = create(CPG, COMPOSITE)
    _, errs = update(CPG, stored, lambda o: o["spec"]["schedulingPolicy"]["gang"].update(minGroupCount=1))
    assert errs == ["spec.schedulingPolicy: Invalid value: null: field is immutable"]
    _, errs = update(CPG, stored, lambda o: o["spec"].update(parentCompositePodGroupName="root"))
    assert errs == ["spec.parentCompositePodGroupName: Invalid value: null: field is immutable"]


def test_composite_pod_group_status_conditions():
    stored, _ = create(CPG, COMPOSITE)
    new = copy.deepcopy(stored)
    new["status"] = {"conditions": [{"type": "CompositePodGroupInitiallyScheduled", "status": "True",
                                     "reason": "Scheduled", "lastTransitionTime": "2026-10-01T12:00:00Z"}] * 2}
    CPG.prepare_for_status_update(new, stored, ctx())
    assert [e.message() for e in CPG.validate_status_update(new, stored, ctx())] == [
        'status.conditions[1].type: Duplicate value: "CompositePodGroupInitiallyScheduled"']


def test_a_gated_field_changed_while_its_gate_is_off_is_forbidden():
    stored, _ = create(WL, with_template(preemptionPolicy="Never"))
    _, errs = update(WL, stored, lambda o: o["spec"]["podGroupTemplates"][0].update(
        preemptionPolicy="PreemptLowerPriority"), ctx({"PodGroupPreemptionPolicy": False}))
    assert errs == ["spec.podGroupTemplates[0].preemptionPolicy: Forbidden",
                    "spec.podGroupTemplates[0].preemptionPolicy: Invalid value: null: field is immutable"]
    claims = [{"name": "gpu", "resourceClaimName": "gpu"}]
    stored, _ = create(PG, with_spec(POD_GROUP, resourceClaims=claims))
    _, errs = update(PG, stored, lambda o: o["spec"]["resourceClaims"][0].update(resourceClaimName="other"),
                     ctx({"DRAWorkloadResourceClaims": False}))
    assert errs == ["spec.resourceClaims: Invalid value: null: field is immutable"]


def test_workload_templates_share_one_priority():
    two = with_spec(WORKLOAD, podGroupTemplates=[
        {"name": "a", "schedulingPolicy": {"basic": {}}, "priorityClassName": "high"},
        {"name": "b", "schedulingPolicy": {"basic": {}}, "priorityClassName": "low"}])
    assert create(WL, two)[1] == ["spec: Invalid value: null: detected multiple priority configurations"]
    tree = copy.deepcopy(COMPOSITE_WORKLOAD)
    tree["spec"]["compositePodGroupTemplates"][0]["priority"] = 100
    assert create(WL, tree)[1] == ["spec: Invalid value: null: detected multiple priority configurations"]
    for t in tree["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"]:
        t["priority"] = 100
    assert create(WL, tree)[1] == []


def test_workload_composite_templates_forbidden_while_their_gate_is_off():
    obj = copy.deepcopy(COMPOSITE_WORKLOAD)
    c = ctx({"CompositePodGroup": False})
    WL.default(obj, c)  # as if stored before: prepare_for_create would drop the list
    assert [e.message() for e in WL.validate(obj, c)] == ["spec.compositePodGroupTemplates: Forbidden"]
