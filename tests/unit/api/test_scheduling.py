"""scheduling.k8s.io: PriorityClass, Workload and PodGroup behaviour as kube-apiserver 1.36 shows it."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from phalanx.api import scheduling
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.errors import StatusError

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)

WORKLOAD = {  # the tutorial's workload.yaml (namespace from the kubeconfig)
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "Workload",
    "metadata": {"name": "training-workload", "namespace": "default"},
    "spec": {
        "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "training-job"},
        "podGroupTemplates": [{
            "name": "workers",
            "schedulingPolicy": {"gang": {"minCount": 6}},
            "resourceClaims": [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}],
        }],
    },
}

POD_GROUP = {  # the tutorial's podgroup.yaml
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "PodGroup",
    "metadata": {"name": "training-workers", "namespace": "default"},
    "spec": {
        "podGroupTemplateRef": {"workload": {"workloadName": "training-workload", "podGroupTemplateName": "workers"}},
        "schedulingPolicy": {"gang": {"minCount": 6}},
        "resourceClaims": [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}],
    },
}


class Objects:
    """A tiny stand-in for the store behind StrategyContext.lookup / list_objects."""

    def __init__(self, *objs: dict):
        self.objs: dict[tuple[str, str, str], dict] = {}
        for o in objs:
            self.add(o)

    def add(self, o: dict) -> None:
        key = {"Workload": scheduling.WORKLOADS_KEY, "PriorityClass": scheduling.PRIORITY_CLASSES_KEY}[o["kind"]]
        self.objs[(key, o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o

    def lookup(self, key: str, ns: str, name: str):
        return self.objs.get((key, ns, name))

    def list_objects(self, key: str, ns):
        return [o for (k, n, _), o in self.objs.items() if k == key and (ns is None or n == ns)]


def ctx(gates: dict | None = None, objects: Objects | None = None) -> StrategyContext:
    objects = objects or Objects()
    return StrategyContext(gates=FeatureGates(gates or {}), now=lambda: NOW, lookup=objects.lookup,
                           list_objects=objects.list_objects)


def msgs(errs) -> list[str]:
    return [e.message() for e in errs]


def create(strategy, obj: dict, c: StrategyContext) -> tuple[dict, list[str]]:
    """What the REST layer does on POST: default, prepare, admit, validate."""
    obj = copy.deepcopy(obj)
    strategy.default(obj, c)
    strategy.prepare_for_create(obj, c)
    strategy.admit("CREATE", obj, None, c)
    return obj, msgs(strategy.validate(obj, c))


def update(strategy, new: dict, old: dict, c: StrategyContext) -> tuple[dict, list[str]]:
    new = copy.deepcopy(new)
    strategy.default(new, c)
    strategy.prepare_for_update(new, old, c)
    strategy.admit("UPDATE", new, old, c)
    return new, msgs(strategy.validate_update(new, old, c))


def with_(obj: dict, path: str, value) -> dict:
    """A copy of obj with the dotted path (list indexes as numbers) set; value `...` deletes it."""
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


WL = scheduling.WorkloadStrategy()
PG = scheduling.PodGroupStrategy()
PC = scheduling.PriorityClassStrategy()


# -- the tutorial's manifests -----------------------------------------------------------------------

def test_tutorial_workload_is_accepted_with_null_scheduling_constraints():
    obj, errs = create(WL, WORKLOAD, ctx())
    assert errs == []
    template = obj["spec"]["podGroupTemplates"][0]
    assert "schedulingConstraints" in template and template["schedulingConstraints"] is None
    assert template["resourceClaims"] == [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}]
    assert "disruptionMode" not in template  # no default on a template


def test_tutorial_pod_group_gets_disruption_mode_finalizer_and_priority():
    objects = Objects(WORKLOAD)
    obj, errs = create(PG, POD_GROUP, ctx(objects=objects))
    assert errs == []
    assert obj["spec"]["disruptionMode"] == "Pod"
    assert obj["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    assert obj["spec"]["priority"] == 0  # no class, no global default
    assert "priorityClassName" not in obj["spec"]
    assert obj["status"] == {}
    assert obj["spec"]["resourceClaims"][0]["name"] == "shared-gpu"


def test_pod_group_without_template_ref_serializes_null_ref():
    pg = with_(POD_GROUP, "spec.podGroupTemplateRef", ...)
    obj, errs = create(PG, pg, ctx())
    assert errs == []
    assert "podGroupTemplateRef" in obj["spec"] and obj["spec"]["podGroupTemplateRef"] is None


def test_user_set_status_is_cleared_on_create():
    obj, _ = create(PG, with_(POD_GROUP, "status", {"conditions": [{"type": "X"}]}), ctx(objects=Objects(WORKLOAD)))
    assert obj["status"] == {}


# -- PodGroup admission ---------------------------------------------------------------------------

@pytest.mark.parametrize("objects, message", [
    (Objects(), 'podgroups.scheduling.k8s.io "training-workers" is forbidden: PodGroup rejected: '
                'Workload "training-workload" not found'),
    (Objects(with_(WORKLOAD, "metadata.deletionTimestamp", "2026-05-01T11:00:00Z")),
     'podgroups.scheduling.k8s.io "training-workers" is forbidden: PodGroup rejected: '
     'Workload "training-workload" is being deleted'),
    (Objects(with_(WORKLOAD, "spec.podGroupTemplates.0.name", "other")),
     'podgroups.scheduling.k8s.io "training-workers" is forbidden: PodGroup rejected: '
     'PodGroupTemplate "workers" not found in Workload "training-workload"'),
])
def test_pod_group_workload_exists_admission(objects, message):
    with pytest.raises(StatusError) as e:
        create(PG, POD_GROUP, ctx(objects=objects))
    assert e.value.code == 403 and e.value.reason == "Forbidden"
    assert e.value.message == message


def pc(name, value, global_default=False):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": global_default}


@pytest.mark.parametrize("pcs, class_name, preset, want_class, want_priority", [
    ([pc("high", 1000)], "high", None, "high", 1000),
    ([pc("low", 10, True), pc("high", 1000)], "", None, "low", 10),
    ([pc("a", 30, True), pc("b", 20, True)], "", None, "b", 20),  # several defaults: the lowest value
    ([pc("high", 1000)], "high", 1000, "high", 1000),  # a matching preset is fine
])
def test_pod_group_priority_admission_resolves_class(pcs, class_name, preset, want_class, want_priority):
    pg = with_(POD_GROUP, "spec.priorityClassName", class_name)
    if preset is not None:
        pg = with_(pg, "spec.priority", preset)
    obj, errs = create(PG, pg, ctx(objects=Objects(WORKLOAD, *pcs)))
    assert errs == []
    assert obj["spec"]["priorityClassName"] == want_class
    assert obj["spec"]["priority"] == want_priority


def test_pod_group_priority_admission_refuses_unknown_class_and_wrong_preset():
    with pytest.raises(StatusError) as e:
        create(PG, with_(POD_GROUP, "spec.priorityClassName", "nope"), ctx(objects=Objects(WORKLOAD)))
    assert e.value.code == 403
    assert e.value.message == ('podgroups.scheduling.k8s.io "training-workers" is forbidden: '
                               'no PriorityClass with name nope was found')
    pg = with_(with_(POD_GROUP, "spec.priorityClassName", "high"), "spec.priority", 5)
    with pytest.raises(StatusError) as e:
        create(PG, pg, ctx(objects=Objects(WORKLOAD, pc("high", 1000))))
    assert "the integer value of priority (5) must not be provided" in e.value.message


def test_priority_admission_skipped_when_gate_off():
    obj, errs = create(PG, with_(POD_GROUP, "spec.priorityClassName", "nope"),
                       ctx({"WorkloadAwarePreemption": False}, Objects(WORKLOAD)))
    assert errs == []
    assert "priority" not in obj["spec"] and "priorityClassName" not in obj["spec"]
    assert "disruptionMode" not in obj["spec"]


# -- validation: Workload ------------------------------------------------------------------------

def template(name="g", **policy):
    return {"name": name, "schedulingPolicy": policy or {"basic": {}}}


@pytest.mark.parametrize("change, want", [
    (("spec.podGroupTemplates", []), ["spec.podGroupTemplates: Required value"]),
    (("spec.podGroupTemplates", ...), ["spec.podGroupTemplates: Required value"]),
    (("spec.podGroupTemplates", [template(f"g{i}") for i in range(9)]),
     ["spec.podGroupTemplates: Too many: 9: must have at most 8 items"]),
    (("spec.podGroupTemplates.0.schedulingPolicy", {}),
     ['spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']),
    (("spec.podGroupTemplates.0.schedulingPolicy", {"basic": {}, "gang": {"minCount": 2}}),
     ['spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "{basic, gang}": '
      'must specify exactly one of: `basic`, `gang`']),
    (("spec.podGroupTemplates.0.schedulingPolicy.gang.minCount", 0),
     ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"]),
    (("spec.podGroupTemplates.0.schedulingPolicy.gang.minCount", -1),
     ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: -1: "
      "must be greater than or equal to 1"]),
    (("spec.podGroupTemplates.0.name", ""), ["spec.podGroupTemplates[0].name: Required value"]),
    (("spec.podGroupTemplates.0.name", "Workers"),
     ['spec.podGroupTemplates[0].name: Invalid value: "Workers": a lowercase RFC 1123 label must consist of '
      "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character "
      "(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    (("spec.podGroupTemplates.0.name", "workers\n"),
     ['spec.podGroupTemplates[0].name: Invalid value: "workers\\n": a lowercase RFC 1123 label must consist of '
      "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character "
      "(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    (("spec.podGroupTemplates.0.name", "a.b"),
     ['spec.podGroupTemplates[0].name: Invalid value: "a.b": must not contain dots']),
    (("spec.controllerRef.kind", ""), ["spec.controllerRef.kind: Required value"]),
    (("spec.controllerRef.name", "a/b"),
     ["spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/'"]),
    (("spec.podGroupTemplates.0.resourceClaims.0.resourceClaimName", "c"),
     ['spec.podGroupTemplates[0].resourceClaims[0]: Invalid value: "{resourceClaimName, resourceClaimTemplateName}"'
      ": must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`"]),
    (("spec.podGroupTemplates.0.resourceClaims", [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]),
     ["spec.podGroupTemplates[0].resourceClaims: Too many: 5: must have at most 4 items"]),
    (("spec.podGroupTemplates.0.disruptionMode", "Everything"),
     ['spec.podGroupTemplates[0].disruptionMode: Unsupported value: "Everything": '
      'supported values: "Pod", "PodGroup"']),
    (("spec.podGroupTemplates.0.priority", 2000000000),
     ["spec.podGroupTemplates[0].priority: Invalid value: 2000000000: must be less than or equal to 1000000000"]),
    (("spec.podGroupTemplates.0.schedulingConstraints", {"topology": [{"key": "a"}, {"key": "b"}]}),
     ["spec.podGroupTemplates[0].schedulingConstraints.topology: Too many: 2: must have at most 1 items"]),
    (("spec.podGroupTemplates.0.schedulingConstraints", {"topology": [{"key": ""}]}),
     ["spec.podGroupTemplates[0].schedulingConstraints.topology[0].key: Required value"]),
])
def test_workload_validation_errors(change, want):
    _, errs = create(WL, with_(WORKLOAD, *change), ctx())
    assert errs == want


def test_workload_duplicate_template_names():
    wl = with_(WORKLOAD, "spec.podGroupTemplates", [template("a"), template("b"), template("a")])
    _, errs = create(WL, wl, ctx())
    assert len(errs) == 1 and errs[0].startswith("spec.podGroupTemplates[2]: Duplicate value: ")


def test_workload_spec_is_immutable():
    old, _ = create(WL, WORKLOAD, ctx())
    _, errs = update(WL, with_(old, "spec.podGroupTemplates.0.schedulingPolicy.gang.minCount", 3), old, ctx())
    assert errs == ["spec.podGroupTemplates: Invalid value: null: field is immutable"]
    _, errs = update(WL, with_(old, "spec.controllerRef", ...), old, ctx())
    assert errs == ["spec.controllerRef: Invalid value: null: field is immutable"]
    _, errs = update(WL, with_(old, "metadata.labels", {"a": "b"}), old, ctx())
    assert errs == []


@pytest.mark.parametrize("gate, field, dropped_to", [
    ("TopologyAwareWorkloadScheduling", "schedulingConstraints", None),
    ("DRAWorkloadResourceClaims", "resourceClaims", ...),
    ("WorkloadAwarePreemption", "disruptionMode", ...),
    ("WorkloadAwarePreemption", "priorityClassName", ...),
    ("WorkloadAwarePreemption", "priority", ...),
])
def test_workload_gated_template_fields_are_dropped_when_gate_off(gate, field, dropped_to):
    value = {"schedulingConstraints": {"topology": [{"key": "zone"}]}, "resourceClaims": None,
             "disruptionMode": "PodGroup", "priorityClassName": "high", "priority": 7}[field]
    wl = WORKLOAD if value is None else with_(WORKLOAD, f"spec.podGroupTemplates.0.{field}", value)
    obj, errs = create(WL, wl, ctx({gate: False}))
    assert errs == []
    t = obj["spec"]["podGroupTemplates"][0]
    if dropped_to is None:
        assert t[field] is None
    else:
        assert field not in t
    # ... but kept on update when the old object already used them
    old, _ = create(WL, wl, ctx())
    new, errs = update(WL, old, old, ctx({gate: False}))
    assert new["spec"]["podGroupTemplates"][0] == old["spec"]["podGroupTemplates"][0]
    assert errs == []


# -- validation: PodGroup ------------------------------------------------------------------------

@pytest.mark.parametrize("change, want", [
    (("spec.schedulingPolicy", {}), ['spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']),
    (("spec.schedulingPolicy.gang.minCount", 0), ["spec.schedulingPolicy.gang.minCount: Required value"]),
    (("spec.podGroupTemplateRef.workload.podGroupTemplateName", ""),
     ["spec.podGroupTemplateRef.workload.podGroupTemplateName: Required value"]),
    (("spec.podGroupTemplateRef", {}),
     ['spec.podGroupTemplateRef: Invalid value: "": must specify one of: `workload`']),
    (("spec.resourceClaims.0.resourceClaimTemplateName", ...),
     ['spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, '
      '`resourceClaimTemplateName`']),
    (("spec.disruptionMode", "Sometimes"),
     ['spec.disruptionMode: Unsupported value: "Sometimes": supported values: "Pod", "PodGroup"']),
])
def test_pod_group_validation_errors(change, want):
    # (validation comes before the PodGroupWorkloadExists check, so a bad ref is a 422, not a 403)
    _, errs = create(PG, with_(POD_GROUP, *change), ctx(objects=Objects(WORKLOAD)))
    assert errs == want


def created_pod_group(c=None) -> dict:
    obj, errs = create(PG, POD_GROUP, c or ctx(objects=Objects(WORKLOAD)))
    assert errs == []
    obj["metadata"].update({"uid": "u1", "resourceVersion": "1"})
    return obj


@pytest.mark.parametrize("path, value, want", [
    ("spec.schedulingPolicy.gang.minCount", 3, "spec.schedulingPolicy: Invalid value: null: field is immutable"),
    ("spec.podGroupTemplateRef", None, "spec.podGroupTemplateRef: Invalid value: null: field is immutable"),
    ("spec.resourceClaims", [], "spec.resourceClaims: Invalid value: null: field is immutable"),
    ("spec.disruptionMode", "PodGroup", "spec.disruptionMode: Invalid value: null: field is immutable"),
    ("spec.priority", 5, "spec.priority: Invalid value: null: field is immutable"),
    ("spec.schedulingConstraints", {"topology": [{"key": "zone"}]},
     "spec.schedulingConstraints: Invalid value: null: field is immutable"),
])
def test_pod_group_spec_fields_are_immutable(path, value, want):
    old = created_pod_group()
    _, errs = update(PG, with_(old, path, value), old, ctx())
    assert errs == [want]


def test_pod_group_stored_before_wap_was_enabled_can_still_be_updated():
    old, errs = create(PG, POD_GROUP, ctx({"WorkloadAwarePreemption": False}, Objects(WORKLOAD)))
    assert errs == [] and "disruptionMode" not in old["spec"]
    new, errs = update(PG, with_(old, "metadata.labels", {"team": "a"}), old, ctx())
    assert errs == [] and new["spec"]["disruptionMode"] == "Pod"


def test_pod_group_main_update_keeps_status_and_status_update_keeps_spec():
    old = created_pod_group()
    old["status"] = {"conditions": [cond()]}
    new, errs = update(PG, with_(old, "status", {}), old, ctx())
    assert errs == [] and new["status"] == old["status"]
    st = with_(old, "spec.schedulingPolicy", {"basic": {}})
    PG.prepare_for_status_update(st, old, ctx())
    assert st["spec"] == old["spec"]


def cond(**kw):
    c = {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": "",
         "lastTransitionTime": "2026-05-01T12:00:00Z"}
    c.update(kw)
    return c


@pytest.mark.parametrize("status, want", [
    ({"conditions": [cond()]}, []),
    ({"conditions": [cond(status="Maybe")]},
     ['status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"']),
    ({"conditions": [cond(reason="")]}, ["status.conditions[0].reason: Required value: must be set"]),
    ({"conditions": [cond(lastTransitionTime=None)]},
     ["status.conditions[0].lastTransitionTime: Required value: must be set"]),
    ({"conditions": [cond(reason="not valid")]},
     ['status.conditions[0].reason: Invalid value: "not valid": a condition reason must start with alphabetic '
      "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
      "alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
      "'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"]),
    ({"conditions": [cond(reason="Scheduled\n")]},
     ['status.conditions[0].reason: Invalid value: "Scheduled\\n": a condition reason must start with alphabetic '
      "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
      "alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
      "'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"]),
    ({"conditions": [cond(), cond()]}, ['status.conditions[1].type: Duplicate value: "PodGroupScheduled"']),
    ({"resourceClaimStatuses": [{"name": "shared-gpu", "resourceClaimName": "training-workers-shared-gpu-abcde"}]},
     []),
    ({"resourceClaimStatuses": [{"name": "other", "resourceClaimName": "x"}]},
     ['status.resourceClaimStatuses[0].name: Invalid value: "other": must match the name of an entry in '
      '`spec.resourceClaims`']),
])
def test_pod_group_status_update_validation(status, want):
    old = created_pod_group()
    new = with_(old, "status", status)
    PG.prepare_for_status_update(new, old, ctx())
    assert msgs(PG.validate_status_update(new, old, ctx())) == want


def test_pod_group_claims_dropped_when_dra_workload_claims_off():
    c = ctx({"DRAWorkloadResourceClaims": False}, Objects(WORKLOAD))
    obj, errs = create(PG, POD_GROUP, c)
    assert errs == [] and "resourceClaims" not in obj["spec"]
    # status.resourceClaimStatuses is dropped on /status too, unless the spec already has claims
    st = with_(obj, "status", {"resourceClaimStatuses": [{"name": "shared-gpu"}]})
    PG.prepare_for_status_update(st, obj, c)
    assert "resourceClaimStatuses" not in st["status"]
    with_claims = created_pod_group()
    st = with_(with_claims, "status", {"resourceClaimStatuses": [{"name": "shared-gpu", "resourceClaimName": "x"}]})
    PG.prepare_for_status_update(st, with_claims, c)
    assert st["status"]["resourceClaimStatuses"] == [{"name": "shared-gpu", "resourceClaimName": "x"}]


def test_pod_group_constraints_dropped_when_tas_off():
    pg = with_(POD_GROUP, "spec.schedulingConstraints", {"topology": [{"key": "topology.kubernetes.io/zone"}]})
    obj, errs = create(PG, pg, ctx({"TopologyAwareWorkloadScheduling": False}, Objects(WORKLOAD)))
    assert errs == [] and "schedulingConstraints" not in obj["spec"]
    obj, errs = create(PG, pg, ctx(objects=Objects(WORKLOAD)))
    assert errs == [] and obj["spec"]["schedulingConstraints"] == {"topology": [{"key": "topology.kubernetes.io/zone"}]}


# -- PodGroup table --------------------------------------------------------------------------------

@pytest.mark.parametrize("change, status, want", [
    (None, {}, ["training-workers", "Gang", "training-workload", "", "90s"]),
    (None, {"conditions": [cond()]}, ["training-workers", "Gang", "training-workload", "Scheduled", "90s"]),
    (None, {"conditions": [cond(status="False", reason="Unschedulable")]},
     ["training-workers", "Gang", "training-workload", "Unschedulable", "90s"]),
    (("spec.schedulingPolicy", {"basic": {}}), {}, ["training-workers", "Basic", "training-workload", "", "90s"]),
    (("spec.podGroupTemplateRef", None), {}, ["training-workers", "Gang", "<none>", "", "90s"]),
])
def test_pod_group_columns(change, status, want):
    obj = created_pod_group()
    if change:
        obj = with_(obj, *change)
    obj["status"] = status
    obj["metadata"]["creationTimestamp"] = (NOW - timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [c.name for c in PG.columns] == ["Name", "Policy", "Workload", "Status", "Age"]
    assert PG.row(obj, ctx()) == want


# -- PriorityClass ---------------------------------------------------------------------------------

def test_priority_class_defaults_and_columns():
    obj, errs = create(PC, pc("high", 1000), ctx())
    assert errs == [] and obj["preemptionPolicy"] == "PreemptLowerPriority"
    obj["metadata"]["creationTimestamp"] = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [c.name for c in PC.columns] == ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
    assert PC.row(obj, ctx()) == ["high", 1000, False, "5m", "PreemptLowerPriority"]


@pytest.mark.parametrize("obj, want", [
    (pc("system-cluster-critical", 2000000000), []),
    (pc("system-node-critical", 2000001000), []),
    (pc("system-foo", 10), ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
                            "system use only. error: system-foo is not a known system priority class"]),
    (pc("system-node-critical", 5), ["metadata.name: Forbidden: priority class names with 'system-' prefix are "
                                     "reserved for system use only. error: value of system-node-critical "
                                     "PriorityClass must be 2000001000"]),
    (pc("big", 1000000001), ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]),
    (dict(pc("p", 1), preemptionPolicy="Sometimes"),
     ['preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"']),
])
def test_priority_class_validation(obj, want):
    _, errs = create(PC, obj, ctx())
    assert errs == want


def test_system_priority_classes_validate():
    for obj in scheduling.SYSTEM_PRIORITY_CLASSES:
        _, errs = create(PC, obj, ctx())
        assert errs == []
    assert {o["metadata"]["name"]: o["value"] for o in scheduling.SYSTEM_PRIORITY_CLASSES} == {
        "system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def test_priority_class_update_rules():
    old, _ = create(PC, pc("high", 1000), ctx())
    assert update(PC, with_(old, "value", 1001), old, ctx())[1] == [
        "value: Forbidden: may not be changed in an update."]
    assert update(PC, with_(old, "preemptionPolicy", "Never"), old, ctx())[1] == [
        'preemptionPolicy: Invalid value: "Never": field is immutable']
    assert update(PC, with_(old, "description", "x"), old, ctx())[1] == []


def test_only_one_global_default_priority_class():
    objects = Objects(pc("default-a", 10, True))
    with pytest.raises(StatusError) as e:
        create(PC, pc("default-b", 20, True), ctx(objects=objects))
    assert e.value.code == 403
    assert e.value.message == ('priorityclasses.scheduling.k8s.io "default-b" is forbidden: PriorityClass '
                               'default-a is already marked as default. Only one default can exist')
    # the existing default may be updated
    old = objects.lookup(scheduling.PRIORITY_CLASSES_KEY, "", "default-a")
    PC.admit("UPDATE", with_(old, "description", "x"), old, ctx(objects=objects))


def test_registration():
    from phalanx.api import registry
    assert registry.lookup("scheduling.k8s.io", "v1", "priorityclasses").short_names == ["pc"]
    pgs = registry.lookup("scheduling.k8s.io", "v1alpha2", "podgroups")
    assert pgs.alpha and pgs.namespaced and pgs.subresources == ["status"] and pgs.strategy.status_is_subresource
    wls = registry.lookup("scheduling.k8s.io", "v1alpha2", "workloads")
    assert wls.alpha and wls.subresources == []
