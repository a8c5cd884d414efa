"""core/v1 kinds (and the small non-workload groups): defaults, admission, validation, printing."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from phalanx.api import load_all, registry
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.errors import StatusError

load_all()

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def ts(seconds_ago: int) -> str:
    from datetime import timedelta
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_ctx(priority_classes=()):
    stored = {pc["metadata"]["name"]: pc for pc in priority_classes}
    return StrategyContext(
        gates=FeatureGates(), now=lambda: NOW,
        lookup=lambda key, ns, name: stored.get(name) if key == "scheduling.k8s.io/priorityclasses" else None,
        list_objects=lambda key, ns: list(stored.values()) if key == "scheduling.k8s.io/priorityclasses" else [])


CTX = make_ctx()


def rt(group, plural):
    return registry.lookup(group, "v1", plural)


def msgs(errs):
    return [e.message() for e in errs]


def create(group, plural, obj, ctx=CTX):
    """What the REST layer does on create: default, prepare, admit, validate."""
    s = rt(group, plural).strategy
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {}).setdefault("uid", "uid-1")
    obj["metadata"].setdefault("creationTimestamp", ts(300))
    s.default(obj, ctx)
    s.prepare_for_create(obj, ctx)
    s.admit("CREATE", obj, None, ctx)
    return obj, msgs(s.validate(obj, ctx))


def pod(name="p", **spec):
    s = {"containers": [{"name": "c", "image": "busybox"}]}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": s}


# --- registration ------------------------------------------------------------------------------------

@pytest.mark.parametrize("group,version,plural,short,categories,subresources,namespaced", [
    ("", "v1", "pods", ["po"], ["all"], ["status", "binding", "log", "eviction"], True),
    ("", "v1", "nodes", ["no"], [], ["status"], False),
    ("", "v1", "namespaces", ["ns"], [], ["status", "finalize"], False),
    ("", "v1", "services", ["svc"], ["all"], ["status"], True),
    ("", "v1", "configmaps", ["cm"], [], [], True),
    ("", "v1", "secrets", [], [], [], True),
    ("", "v1", "serviceaccounts", ["sa"], [], [], True),
    ("", "v1", "events", ["ev"], [], [], True),
    ("events.k8s.io", "v1", "events", ["ev"], [], [], True),
    ("coordination.k8s.io", "v1", "leases", [], [], [], True),
    ("policy", "v1", "poddisruptionbudgets", ["pdb"], [], ["status"], True),
])
def test_registered_kinds(group, version, plural, short, categories, subresources, namespaced):
    t = registry.lookup(group, version, plural)
    assert t is not None
    assert (t.short_names, t.categories, t.subresources, t.namespaced) == (short, categories, subresources, namespaced)


# --- Pod: defaults and admission -------------------------------------------------------------------

def test_created_pod_looks_like_a_cluster_made_it():
    obj, errs = create("", "pods", pod())
    assert errs == []
    spec = obj["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["enableServiceLinks"] is True
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ]
    assert obj["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_pod_that_tolerates_everything_gets_no_default_tolerations():
    obj, _ = create("", "pods", pod(tolerations=[{"operator": "Exists"}]))
    assert obj["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_status_sent_on_create_is_replaced():
    p = pod()
    p["status"] = {"phase": "Running", "podIP": "10.0.0.1"}
    obj, _ = create("", "pods", p)
    assert obj["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


PC_HIGH = {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}
PC_DEFAULT = {"metadata": {"name": "batch-default"}, "value": 50, "globalDefault": True}


@pytest.mark.parametrize("classes,spec,priority,policy,class_name", [
    ((), {}, 0, "PreemptLowerPriority", None),
    ((PC_HIGH,), {"priorityClassName": "high"}, 1000, "Never", "high"),
    ((), {"priorityClassName": "system-cluster-critical"}, 2000000000, "PreemptLowerPriority", "system-cluster-critical"),
    ((), {"priorityClassName": "system-node-critical"}, 2000001000, "PreemptLowerPriority", "system-node-critical"),
    ((PC_DEFAULT,), {}, 50, "PreemptLowerPriority", "batch-default"),
    ((PC_HIGH,), {"priorityClassName": "high", "priority": 1000}, 1000, "Never", "high"),
])
def test_priority_admission(classes, spec, priority, policy, class_name):
    obj, errs = create("", "pods", pod(**spec), make_ctx(classes))
    assert errs == []
    assert obj["spec"]["priority"] == priority
    assert obj["spec"]["preemptionPolicy"] == policy
    assert obj["spec"].get("priorityClassName") == class_name


@pytest.mark.parametrize("classes,spec,message", [
    ((), {"priorityClassName": "foo"}, 'pods "p" is forbidden: no PriorityClass with name foo was found'),
    ((PC_HIGH,), {"priorityClassName": "high", "priority": 7},
     'pods "p" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission '
     "controller computed 1000 from the given PriorityClass name"),
    ((), {"priority": 5},
     'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission '
     "controller computed 0 from the given PriorityClass name"),
    ((PC_HIGH,), {"priorityClassName": "high", "preemptionPolicy": "PreemptLowerPriority"},
     'pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod '
     "spec; priority admission controller computed Never from the given PriorityClass name"),
])
def test_priority_admission_rejections(classes, spec, message):
    with pytest.raises(StatusError) as e:
        create("", "pods", pod(**spec), make_ctx(classes))
    assert (e.value.code, e.value.reason, e.value.message) == (403, "Forbidden", message)


def test_pod_update_keeps_priority_and_rejects_spec_changes():
    s = rt("", "pods").strategy
    old, _ = create("", "pods", pod())
    new = copy.deepcopy(old)
    del new["spec"]["priority"]
    new["spec"]["restartPolicy"] = "Never"
    new["status"] = {"phase": "Running"}
    s.default(new, CTX)
    s.prepare_for_update(new, old, CTX)
    s.admit("UPDATE", new, old, CTX)
    assert new["spec"]["priority"] == 0
    assert new["status"] == old["status"]
    errs = msgs(s.validate_update(new, old, CTX))
    assert len(errs) == 1 and errs[0].startswith("spec: Forbidden: pod updates may not change fields other than ")
    assert '- \tRestartPolicy: "Always",' in errs[0] and '+ \tRestartPolicy: "Never",' in errs[0]


def test_pod_status_update_keeps_spec_and_backfills_qos_class():
    s = rt("", "pods").strategy
    old, _ = create("", "pods", pod())
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "sneaky"
    new["status"] = {"phase": "Running", "podIPs": [{"ip": "10.244.0.5"}]}
    s.prepare_for_status_update(new, old, CTX)
    assert "nodeName" not in new["spec"]
    assert new["status"]["qosClass"] == "BestEffort"
    assert msgs(s.validate_status_update(new, old, CTX)) == []
    new["status"]["qosClass"] = "Guaranteed"
    assert msgs(s.validate_status_update(new, old, CTX)) == [
        'status.qosClass: Invalid value: "Guaranteed": field is immutable']


def test_pod_status_may_not_leave_terminated_state_under_never():
    s = rt("", "pods").strategy
    old, _ = create("", "pods", pod(restartPolicy="Never"))
    old["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"exitCode": 1}}}]
    new = copy.deepcopy(old)
    new["status"]["containerStatuses"] = [{"name": "c", "state": {"running": {}}}]
    assert msgs(s.validate_status_update(new, old, CTX)) == [
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"]


def test_pod_field_selectors():
    fs = rt("", "pods").strategy.field_selectors
    p, _ = create("", "pods", pod(nodeName="n1"))
    p["status"]["podIPs"] = [{"ip": "10.1.1.1"}]
    assert fs["spec.nodeName"](p) == "n1"
    assert fs["status.phase"](p) == "Pending"
    assert fs["status.podIP"](p) == "10.1.1.1"
    assert fs["spec.hostNetwork"](p) == "false"
    assert fs["spec.serviceAccountName"](p) == "default"


# --- Pod: printing -----------------------------------------------------------------------------------

def running(name="c", restarts=0, ready=True, finished=None):
    cs = {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {"startedAt": ts(600)}}}
    if finished is not None:
        cs["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": ts(finished)}}
    return cs


POD_STATES = [
    # (description, spec overrides, metadata overrides, status, expected [READY, STATUS, RESTARTS])
    ("new", {}, {}, {"phase": "Pending"}, ["0/1", "Pending", "0"]),
    ("gated", {"schedulingGates": [{"name": "g"}]}, {},
     {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]},
     ["0/1", "SchedulingGated", "0"]),
    ("creating", {}, {}, {"phase": "Pending", "containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]},
     ["0/1", "ContainerCreating", "0"]),
    ("running", {}, {}, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                         "containerStatuses": [running()]}, ["1/1", "Running", "0"]),
    ("restarted", {}, {}, {"phase": "Running", "containerStatuses": [running(restarts=3, finished=300)]},
     ["1/1", "Running", "3 (5m ago)"]),
    ("crashloop", {}, {}, {"phase": "Running", "containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 4,
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": ts(30)}},
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}, ["0/1", "CrashLoopBackOff", "4 (30s ago)"]),
    ("completed", {}, {}, {"phase": "Succeeded", "containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}, ["0/1", "Completed", "0"]),
    ("error", {}, {}, {"phase": "Failed", "containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]},
     ["0/1", "Error", "0"]),
    ("signal", {}, {}, {"phase": "Failed", "containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "signal": 9}}}]},
     ["0/1", "Signal:9", "0"]),
    ("one of two failed", {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]}, {},
     {"phase": "Failed", "containerStatuses": [
         {"name": "a", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}},
         {"name": "b", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]},
     ["0/2", "Error", "0"]),
    ("init 0/2", {"initContainers": [{"name": "i1", "image": "x"}, {"name": "i2", "image": "x"}]}, {},
     {"phase": "Pending", "initContainerStatuses": [
         {"name": "i1", "ready": False, "restartCount": 0, "state": {"running": {}}},
         {"name": "i2", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]},
     ["0/1", "Init:0/2", "0"]),
    ("init failed", {"initContainers": [{"name": "i1", "image": "x"}]}, {},
     {"phase": "Pending", "initContainerStatuses": [
         {"name": "i1", "ready": False, "restartCount": 2, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]},
     ["0/1", "Init:Error", "2"]),
    ("init pull error", {"initContainers": [{"name": "i1", "image": "x"}]}, {},
     {"phase": "Pending", "initContainerStatuses": [
         {"name": "i1", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull"}}}]},
     ["0/1", "Init:ErrImagePull", "0"]),
    ("sidecar", {"initContainers": [{"name": "side", "image": "x", "restartPolicy": "Always"}]}, {},
     {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
      "initContainerStatuses": [{"name": "side", "ready": True, "started": True, "restartCount": 1,
                                 "state": {"running": {}}}],
      "containerStatuses": [running()]}, ["2/2", "Running", "1"]),
    ("terminating", {}, {"deletionTimestamp": ts(5)},
     {"phase": "Running", "containerStatuses": [running()]}, ["1/1", "Terminating", "0"]),
    ("node lost", {}, {"deletionTimestamp": ts(5)},
     {"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]}, ["1/1", "Unknown", "0"]),
    ("evicted", {}, {}, {"phase": "Failed", "reason": "Evicted"}, ["0/1", "Evicted", "0"]),
]


@pytest.mark.parametrize("desc,spec,meta,status,expected", POD_STATES, ids=[s[0] for s in POD_STATES])
def test_pod_table_cells(desc, spec, meta, status, expected):
    p = pod("web", **spec)
    p["metadata"].update({"creationTimestamp": ts(7200)}, **meta)
    p["status"] = status
    cells = rt("", "pods").strategy.row(p, CTX)
    assert cells[0] == "web" and cells[4] == "120m"
    assert cells[1:4] == expected


def test_pod_wide_cells():
    p = pod("web", nodeName="kind-worker", readinessGates=[{"conditionType": "a"}, {"conditionType": "b"}])
    p["metadata"]["creationTimestamp"] = ts(10)
    p["status"] = {"phase": "Running", "podIPs": [{"ip": "10.244.1.2"}], "nominatedNodeName": "",
                   "conditions": [{"type": "a", "status": "True"}, {"type": "b", "status": "False"}]}
    assert rt("", "pods").strategy.row(p, CTX)[4:] == ["10s", "10.244.1.2", "kind-worker", "<none>", "1/2"]
    p2 = pod("idle")
    p2["status"] = {"phase": "Pending"}
    assert rt("", "pods").strategy.row(p2, CTX)[4:] == ["<unknown>", "<none>", "<none>", "<none>", "<none>"]
    assert [c.name for c in rt("", "pods").strategy.columns] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]


# --- Node -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("conditions,unschedulable,status", [
    ([{"type": "Ready", "status": "True"}], False, "Ready"),
    ([{"type": "Ready", "status": "False"}], False, "NotReady"),
    ([{"type": "Ready", "status": "Unknown"}], False, "NotReady"),
    ([], False, "Unknown"),
    ([{"type": "Ready", "status": "True"}], True, "Ready,SchedulingDisabled"),
])
def test_node_status_cell(conditions, unschedulable, status):
    node = {"metadata": {"name": "n", "creationTimestamp": ts(90000)},
            "spec": {"unschedulable": unschedulable} if unschedulable else {},
            "status": {"conditions": conditions}}
    assert rt("", "nodes").strategy.row(node, CTX)[1] == status


def test_node_row_roles_version_and_wide_cells():
    node = {"metadata": {"name": "kind-control-plane", "creationTimestamp": ts(90000),
                         "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.2"},
                                     {"type": "Hostname", "address": "kind-control-plane"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Debian GNU/Linux 12 (bookworm)"}}}
    assert rt("", "nodes").strategy.row(node, CTX) == [
        "kind-control-plane", "Ready", "control-plane,master", "25h", "v1.36.0", "172.18.0.2", "<none>",
        "Debian GNU/Linux 12 (bookworm)", "<unknown>", "<unknown>"]
    worker = {"metadata": {"name": "w"}, "status": {}}
    assert rt("", "nodes").strategy.row(worker, CTX)[2] == "<none>"


def test_node_defaults_allocatable_keeps_status_and_validates_taints():
    node, errs = create("", "nodes", {"metadata": {"name": "n1"},
                                      "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"},
                                                          {"key": "gpu", "effect": "NoSchedule"},
                                                          {"key": "x"}]},
                                      "status": {"capacity": {"cpu": "8"}}})
    assert node["status"]["allocatable"] == {"cpu": "8"}
    assert errs == ['spec.taints[1]: Duplicate value: {"effect":"NoSchedule","key":"gpu"}: taints must be unique by '
                    "key and effect pair", "spec.taints[2].effect: Required value"]
    assert rt("", "nodes").strategy.field_selectors["spec.unschedulable"](node) == "false"


# --- Namespace --------------------------------------------------------------------------------------

def test_namespace_create_and_status_rules():
    s = rt("", "namespaces").strategy
    ns, errs = create("", "namespaces", {"metadata": {"name": "team-a"}})
    assert errs == []
    assert ns["status"] == {"phase": "Active"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert s.row(ns, CTX) == ["team-a", "Active", "5m"]
    assert s.name_validation == "label"
    bad = copy.deepcopy(ns)
    bad["status"]["phase"] = "Terminating"
    assert msgs(s.validate_status_update(bad, ns, CTX)) == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"]


# --- Service ----------------------------------------------------------------------------------------

def test_service_defaults_and_row(monkeypatch):
    # the strategy alone: no cluster IP allocation (the API server's builder adds it)
    svc, errs = create("", "services", {"metadata": {"name": "web"},
                                        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    assert errs == []
    spec = svc["spec"]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert svc["status"] == {"loadBalancer": {}}
    assert rt("", "services").strategy.row(svc, CTX) == ["web", "ClusterIP", "<none>", "<none>", "80/TCP", "5m",
                                                         "app=web"]


def test_service_update_keeps_allocated_values():
    s = rt("", "services").strategy
    svc, _ = create("", "services", {"metadata": {"name": "web"},
                                     "spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
                                              "clusterIPs": ["10.96.0.10"],
                                              "ports": [{"port": 80, "nodePort": 30080}]}})
    assert s.row(svc, CTX)[2:5] == ["10.96.0.10", "<none>", "80:30080/TCP"]
    new = copy.deepcopy(svc)
    del new["spec"]["clusterIP"], new["spec"]["clusterIPs"]
    s.default(new, CTX)
    s.prepare_for_update(new, svc, CTX)
    assert new["spec"]["clusterIPs"] == ["10.96.0.10"]
    new["spec"]["clusterIPs"] = ["10.96.0.11"]
    new["spec"]["clusterIP"] = "10.96.0.11"
    assert 'spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set' in msgs(
        s.validate_update(new, svc, CTX))


@pytest.mark.parametrize("spec,expected", [
    ({"selector": {"app": "x"}}, "spec.ports: Required value"),
    ({"ports": [{"port": 80}, {"port": 443}]}, "spec.ports[0].name: Required value"),
    ({"ports": [{"port": 0}]}, "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    ({"type": "Magic", "ports": [{"port": 80}]},
     'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'),
    ({"ports": [{"port": 80, "nodePort": 30000}]},
     "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"),
    ({"type": "ExternalName"}, "spec.externalName: Required value"),
])
def test_service_validation(spec, expected):
    _, errs = create("", "services", {"metadata": {"name": "s"}, "spec": spec})
    assert expected in errs


def test_service_load_balancer_row():
    svc, _ = create("", "services", {"metadata": {"name": "lb"},
                                     "spec": {"type": "LoadBalancer", "ports": [{"port": 443, "nodePort": 31000}]}})
    assert rt("", "services").strategy.row(svc, CTX)[3] == "<pending>"
    assert svc["spec"]["allocateLoadBalancerNodePorts"] is True
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"


# --- ConfigMap, Secret, ServiceAccount --------------------------------------------------------------

def test_configmap_row_validation_and_immutability():
    s = rt("", "configmaps").strategy
    cm, errs = create("", "configmaps", {"metadata": {"name": "cfg"}, "data": {"a": "1", "b c": "2"},
                                         "binaryData": {"bin": "AAE="}})
    assert errs == ['data[b c]: Invalid value: "b c": a valid config key must consist of alphanumeric characters, '
                    "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                    "'[-._a-zA-Z0-9]+')"]
    assert s.row(cm, CTX) == ["cfg", 3, "5m"]
    old = {"metadata": {"name": "cfg"}, "immutable": True, "data": {"a": "1"}}
    new = {"metadata": {"name": "cfg"}, "immutable": True, "data": {"a": "2"}}
    assert msgs(s.validate_update(new, old, CTX)) == ["data: Forbidden: field is immutable when `immutable` is set"]


def test_secret_defaults_string_data_and_type_rules():
    s = rt("", "secrets").strategy
    sec, errs = create("", "secrets", {"metadata": {"name": "creds"}, "stringData": {"user": "admin"}})
    assert errs == []
    assert sec["type"] == "Opaque" and sec["data"] == {"user": "YWRtaW4="} and "stringData" not in sec
    assert s.row(sec, CTX) == ["creds", "Opaque", 1, "5m"]
    assert s.field_selectors["type"](sec) == "Opaque"
    _, errs = create("", "secrets", {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {}})
    assert errs == ["data[tls.key]: Required value", "data[tls.crt]: Required value"]
    changed = dict(sec, type="kubernetes.io/basic-auth", data={"username": "YQ=="})
    assert 'type: Invalid value: "kubernetes.io/basic-auth": field is immutable' in msgs(
        s.validate_update(changed, sec, CTX))
    with pytest.raises(StatusError) as e:
        create("", "secrets", {"metadata": {"name": "bad"}, "data": {"k": "no*base64"}})
    assert e.value.code == 400
    assert e.value.message == ('Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
                               "byte 2")


def test_serviceaccount_row():
    sa, errs = create("", "serviceaccounts", {"metadata": {"name": "default"}, "secrets": [{"name": "t"}]})
    assert errs == [] and rt("", "serviceaccounts").strategy.row(sa, CTX) == ["default", 1, "5m"]


# --- Events -----------------------------------------------------------------------------------------

def test_core_event_cells_and_columns():
    s = rt("", "events").strategy
    ev = {"metadata": {"name": "web.17a", "namespace": "default"},
          "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "fieldPath": "spec.containers{c}"},
          "reason": "Pulled", "type": "Normal", "message": "Successfully pulled image \"busybox\"\n",
          "source": {"component": "kubelet", "host": "kind-worker"},
          "firstTimestamp": ts(600), "lastTimestamp": ts(60), "count": 3}
    assert msgs(s.validate(ev, CTX)) == []
    assert s.row(ev, CTX) == ["60s", "Normal", "Pulled", "pod/web", "spec.containers{c}", "kubelet, kind-worker",
                              'Successfully pulled image "busybox"', "10m", 3, "web.17a"]
    visible = [c.name for c in s.columns if c.priority == 0]
    assert visible == ["Last Seen", "Type", "Reason", "Object", "Message"]
    assert s.field_selectors["involvedObject.name"](ev) == "web"
    assert s.field_selectors["source"](ev) == "kubelet"


def test_new_style_event_uses_event_time_series_and_reporting_controller():
    s = rt("", "events").strategy
    ev = {"metadata": {"name": "e", "namespace": "default"}, "involvedObject": {"kind": "Node", "name": "n1"},
          "reason": "Scheduled", "type": "Normal", "message": "ok", "eventTime": "2026-05-01T11:58:00.123456Z",
          "reportingComponent": "default-scheduler", "reportingInstance": "sched-1", "action": "Binding"}
    assert s.row(ev, CTX)[0] == "119s" and s.row(ev, CTX)[5] == "default-scheduler, sched-1"
    assert s.row(ev, CTX)[8] == 1
    ev["series"] = {"count": 4, "lastObservedTime": ts(3)}
    assert s.row(ev, CTX)[0] == "3s" and s.row(ev, CTX)[8] == 4
    assert msgs(s.validate(ev, CTX)) == []
    del ev["action"]
    assert msgs(s.validate(ev, CTX)) == ["action: Required value"]


def test_events_k8s_io_event_prints_like_core_and_validates_strictly():
    s = registry.lookup("events.k8s.io", "v1", "events").strategy
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
          "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}, "reason": "Started", "type": "Normal",
          "note": "Started container", "eventTime": ts(20) .replace("Z", ".000000Z"),
          "reportingController": "kubelet", "reportingInstance": "kind-worker", "action": "Start"}
    assert msgs(s.validate(ev, CTX)) == []
    assert s.row(ev, CTX)[:7] == ["20s", "Normal", "Started", "pod/web", "", "kubelet, kind-worker",
                                  "Started container"]
    bad = dict(ev, type="Odd", deprecatedCount=2)
    del bad["eventTime"]
    assert msgs(s.validate(bad, CTX)) == ["eventTime: Required value", 'type: Invalid value: "": has invalid value: Odd',
                                          'count: Invalid value: "": needs to be unset']


# --- Lease and PodDisruptionBudget ------------------------------------------------------------------

def test_lease_row_and_validation():
    s = registry.lookup("coordination.k8s.io", "v1", "leases").strategy
    lease, errs = create("coordination.k8s.io", "leases",
                         {"metadata": {"name": "kind-worker"}, "spec": {"holderIdentity": "kind-worker",
                                                                        "leaseDurationSeconds": 40}})
    assert errs == [] and s.row(lease, CTX) == ["kind-worker", "kind-worker", "5m"]
    _, errs = create("coordination.k8s.io", "leases", {"metadata": {"name": "x"},
                                                       "spec": {"leaseDurationSeconds": 0, "preferredHolder": "a"}})
    assert errs == ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                    "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]


def test_pdb_status_row_and_validation():
    s = registry.lookup("policy", "v1", "poddisruptionbudgets").strategy
    pdb, errs = create("policy", "poddisruptionbudgets",
                       {"metadata": {"name": "web"}, "spec": {"minAvailable": "50%",
                                                              "selector": {"matchLabels": {"app": "web"}}}})
    assert errs == []
    assert pdb["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    assert s.row(pdb, CTX) == ["web", "50%", "N/A", 0, "5m"]
    _, errs = create("policy", "poddisruptionbudgets",
                     {"metadata": {"name": "x"}, "spec": {"minAvailable": 1, "maxUnavailable": "150%"}})
    assert errs == ['spec: Invalid value: {"maxUnavailable":"150%","minAvailable":1}: minAvailable and maxUnavailable '
                    "cannot be both set",
                    'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%']


def test_namespace_update_keeps_spec_finalizers_but_finalize_changes_them():
    s = rt("", "namespaces").strategy
    ns, _ = create("", "namespaces", {"metadata": {"name": "team-a"}})
    upd = copy.deepcopy(ns)
    upd["spec"]["finalizers"] = []
    s.prepare_for_update(upd, ns, CTX)
    assert upd["spec"]["finalizers"] == ["kubernetes"]
    fin = copy.deepcopy(ns)
    fin["spec"]["finalizers"] = []
    fin["status"] = {"phase": "Active", "conditions": []}
    s.prepare_for_finalize_update(fin, ns, CTX)
    assert fin["spec"]["finalizers"] == [] and fin["status"] == ns["status"]
    assert msgs(s.validate(dict(ns, spec={"finalizers": ["custom"]}), CTX)) == [
        'spec.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully '
        "qualified"]


def test_service_type_change_releases_node_ports_and_traffic_policy():
    s = rt("", "services").strategy
    old, _ = create("", "services", {"metadata": {"name": "web"},
                                     "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}})
    new = copy.deepcopy(old)
    new["spec"]["type"] = "ClusterIP"
    s.default(new, CTX)
    s.prepare_for_update(new, old, CTX)
    assert new["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert "externalTrafficPolicy" not in new["spec"]
    assert msgs(s.validate_update(new, old, CTX)) == []


def test_service_account_admission_mounts_the_api_token():
    obj, errs = create("", "pods", pod(initContainers=[{"name": "init", "image": "busybox"}]))
    assert errs == []
    vols = obj["spec"]["volumes"]
    assert len(vols) == 1 and vols[0]["name"].startswith("kube-api-access-") and len(vols[0]["name"]) == 21
    assert [s_ for s in vols[0]["projected"]["sources"] for s_ in s] == ["serviceAccountToken", "configMap",
                                                                         "downwardAPI"]
    mount = {"name": vols[0]["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    assert obj["spec"]["containers"][0]["volumeMounts"] == [mount]
    assert obj["spec"]["initContainers"][0]["volumeMounts"] == [mount]


@pytest.mark.parametrize("pod_setting,sa_setting,mounted", [
    (False, None, False), (None, False, False), (True, False, True), (None, None, True)])
def test_automount_service_account_token(pod_setting, sa_setting, mounted):
    sa = {"metadata": {"name": "default", "namespace": "default"}}
    if sa_setting is not None:
        sa["automountServiceAccountToken"] = sa_setting
    ctx = StrategyContext(gates=FeatureGates(), now=lambda: NOW,
                          lookup=lambda key, ns, name: sa if key == "core/serviceaccounts" else None)
    spec = {} if pod_setting is None else {"automountServiceAccountToken": pod_setting}
    obj, errs = create("", "pods", pod(**spec), ctx)
    assert errs == [] and ("volumes" in obj["spec"]) is mounted
