"""Pod spec defaulting, validation and update rules (phalanx.api.podspec)."""

from __future__ import annotations

import copy

import pytest

from phalanx.api import podspec
from phalanx.api.computeresources import compute_qos_class
from phalanx.api.labelselectors import (
    format_label_selector,
    format_labels,
    label_selector_matches,
    validate_label_selector,
)
from phalanx.api.poddefaults import default_pod_only, default_pod_spec, drop_disabled_pod_spec_fields
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates

CTX = StrategyContext(gates=FeatureGates())
CTX_NO_WAS = StrategyContext(gates=FeatureGates({"GenericWorkload": False}))


def spec(**kw):
    s = {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    s.update(kw)
    return s


def defaulted(s):
    s = copy.deepcopy(s)
    default_pod_spec(s, CTX)
    return s


def messages(errs):
    return [e.message() for e in errs]


def validate(s, ctx=CTX):
    return messages(podspec.validate_pod_spec(defaulted(s), "spec", ctx, resource_is_pod=True))


# --- defaults --------------------------------------------------------------------------------------

@pytest.mark.parametrize("image,policy", [
    ("busybox", "Always"),
    ("busybox:latest", "Always"),
    ("busybox:1.36", "IfNotPresent"),
    ("registry.local:5000/team/app", "Always"),
    ("registry.local:5000/team/app:v2", "IfNotPresent"),
    ("app@sha256:" + "a" * 64, "IfNotPresent"),
])
def test_image_pull_policy_default(image, policy):
    s = defaulted({"containers": [{"name": "c", "image": image}]})
    assert s["containers"][0]["imagePullPolicy"] == policy


def test_pod_spec_defaults_match_what_a_cluster_shows():
    s = defaulted({"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]})
    assert s["dnsPolicy"] == "ClusterFirst"
    assert s["restartPolicy"] == "Always"
    assert s["schedulerName"] == "default-scheduler"
    assert s["terminationGracePeriodSeconds"] == 30
    assert s["securityContext"] == {}
    c = s["containers"][0]
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"
    assert c["resources"] == {}
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "enableServiceLinks" not in s  # a Pod-only default


def test_defaults_keep_explicit_values_and_sync_service_account():
    s = defaulted({"containers": [{"name": "c", "image": "x", "imagePullPolicy": "Never"}],
                   "restartPolicy": "Never", "serviceAccount": "builder"})
    assert s["containers"][0]["imagePullPolicy"] == "Never"
    assert s["restartPolicy"] == "Never"
    assert s["serviceAccountName"] == "builder" and s["serviceAccount"] == "builder"


def test_probe_and_volume_defaults():
    s = defaulted({"containers": [{"name": "c", "image": "x",
                                   "livenessProbe": {"httpGet": {"port": 8080}}}],
                   "volumes": [{"name": "cfg", "configMap": {"name": "cm"}}, {"name": "scratch"}]})
    probe = s["containers"][0]["livenessProbe"]
    assert probe["httpGet"] == {"port": 8080, "path": "/", "scheme": "HTTP"}
    assert (probe["timeoutSeconds"], probe["periodSeconds"], probe["successThreshold"], probe["failureThreshold"]) \
        == (1, 10, 1, 3)
    assert s["volumes"][0]["configMap"]["defaultMode"] == 420
    assert s["volumes"][1]["emptyDir"] == {}


def test_pod_only_defaults_copy_limits_into_requests():
    s = defaulted({"containers": [{"name": "c", "image": "x",
                                   "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "1Gi"}}}]})
    default_pod_only(s)
    assert s["containers"][0]["resources"]["requests"] == {"memory": "1Gi", "cpu": "500m"}
    assert s["enableServiceLinks"] is True


# --- validation ------------------------------------------------------------------------------------

def test_a_minimal_spec_is_valid():
    assert validate(spec()) == []


@pytest.mark.parametrize("s,expected", [
    ({"containers": []}, "spec.containers: Required value"),
    (spec(containers=[{"name": "C_1", "image": "x"}]),
     'spec.containers[0].name: Invalid value: "C_1": a lowercase RFC 1123 label must consist of'),
    (spec(containers=[{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]),
     'spec.containers[1].name: Duplicate value: "c"'),
    (spec(containers=[{"name": "c"}]), "spec.containers[0].image: Required value"),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]),
     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"requests": {"memory": "lots"}}}]),
     "spec.containers[0].resources.requests[memory]: Invalid value: \"lots\": quantities must match the regular"),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "-1"}}}]),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"limits": {"example.com/gpu": "1"},
                                                                "requests": {"example.com/gpu": "2"}}}]),
     'spec.containers[0].resources.requests: Invalid value: "2": must be equal to example.com/gpu limit of 1'),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"requests": {"example.com/gpu": "1"}}}]),
     "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]),
     'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
     "pod.spec.resourceClaims which is empty"),
    (spec(containers=[{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
          resourceClaims=[{"name": "other", "resourceClaimName": "rc"}]),
     'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
     "pod.spec.resourceClaims: other"),
    (spec(resourceClaims=[{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]),
     "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"),
    (spec(resourceClaims=[{"name": "gpu"}]),
     'spec.resourceClaims[0]: Invalid value: {"name":"gpu"}: must specify one of: `resourceClaimName`, '
     "`resourceClaimTemplateName`"),
    (spec(resourceClaims=[{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}]),
     'spec.resourceClaims[1].name: Duplicate value: "gpu"'),
    (spec(restartPolicy="Sometimes"),
     'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    (spec(dnsPolicy="Google"),
     'spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", '
     '"Default", "None"'),
    (spec(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"),
    (spec(tolerations=[{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule",
                        "tolerationSeconds": 5}]),
     "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
     "`tolerationSeconds` is set"),
    (spec(tolerations=[{"operator": "Equal", "value": "v"}]),
     "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty"),
    (spec(tolerations=[{"key": "k", "operator": "Within"}]),
     'spec.tolerations[0].operator: Unsupported value: "Within": supported values: "Equal", "Exists"'),
    (spec(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoRun"}]),
     'spec.tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", '
     '"PreferNoSchedule", "NoExecute"'),
    (spec(nodeSelector={"bad key!": "v"}), 'spec.nodeSelector: Invalid value: "bad key!"'),
    (spec(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}}]}}),
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: "
     "can not be empty"),
    (spec(affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]}}),
     "labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (spec(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: "
     "must have at least one node selector term"),
    (spec(initContainers=[{"name": "i", "image": "x", "restartPolicy": "OnFailure"}]),
     'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'),
    (spec(initContainers=[{"name": "i", "image": "x", "readinessProbe": {"exec": {"command": ["true"]}}}]),
     "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without "
     "restartPolicy=Always"),
    (spec(initContainers=[{"name": "c", "image": "x"}]), 'spec.initContainers[0].name: Duplicate value: "c"'),
    (spec(containers=[{"name": "c", "image": "x", "restartPolicy": "Always"}]),
     "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"),
    (spec(containers=[{"name": "c", "image": "x", "env": [{"name": "A=B", "value": "1"}]}]),
     "a valid environment variable name must consist only of printable ASCII characters other than '='"),
    (spec(containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}]),
     "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
    (spec(containers=[{"name": "c", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]),
     'spec.containers[0].volumeMounts[0].name: Not found: "data"'),
    (spec(priorityClassName="High_Priority"), 'spec.priorityClassName: Invalid value: "High_Priority"'),
    (spec(schedulingGroup={"podGroupName": "Bad_Name"}), 'spec.schedulingGroup.podGroupName: Invalid value: "Bad_Name"'),
    (spec(schedulingGroup={}), "spec.schedulingGroup.podGroupName: Required value"),
])
def test_validation_messages(s, expected):
    msgs = validate(s)
    assert any(expected in m for m in msgs), msgs


def test_sidecar_counts_as_restartable_and_may_have_probes():
    s = spec(initContainers=[{"name": "side", "image": "x", "restartPolicy": "Always",
                              "readinessProbe": {"exec": {"command": ["true"]}}}])
    assert validate(s) == []


def test_scheduling_group_is_forbidden_when_generic_workload_is_off():
    s = spec(schedulingGroup={"podGroupName": "g"})
    assert "spec.schedulingGroup: Forbidden: disabled by feature-gate GenericWorkload" in validate(s, CTX_NO_WAS)
    dropped = defaulted(s)
    drop_disabled_pod_spec_fields(dropped, None, CTX_NO_WAS)
    assert "schedulingGroup" not in dropped
    kept = defaulted(s)
    drop_disabled_pod_spec_fields(kept, {"schedulingGroup": {"podGroupName": "g"}}, CTX_NO_WAS)
    assert kept["schedulingGroup"] == {"podGroupName": "g"}


def test_pod_template_validates_labels_and_forbids_ephemeral_containers():
    t = {"metadata": {"labels": {"app": "bad value!"}},
         "spec": defaulted(spec(ephemeralContainers=[{"name": "e", "image": "x"}]))}
    msgs = messages(podspec.validate_pod_template(t, "spec.template", CTX))
    assert any(m.startswith('spec.template.metadata.labels: Invalid value: "bad value!"') for m in msgs)
    assert "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template" in msgs


# --- update rules ----------------------------------------------------------------------------------

def update_errors(old, mutate):
    old = defaulted(old)
    new = copy.deepcopy(old)
    mutate(new)
    return messages(podspec.validate_pod_spec_update(new, old, "spec", CTX))


def test_image_and_deadline_and_added_tolerations_may_change():
    def mutate(s):
        s["containers"][0]["image"] = "busybox:1.37"
        s["activeDeadlineSeconds"] = 30
        s["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    assert update_errors(spec(), mutate) == []


@pytest.mark.parametrize("mutate,expected", [
    (lambda s: s.update(nodeName="n1"),
     "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
     "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
     "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"),
    (lambda s: s["containers"].append({"name": "d", "image": "x"}),
     "spec.containers: Forbidden: pod updates may not add or remove containers"),
    (lambda s: s["containers"][0].update(image=""), "spec.containers[0].image: Required value"),
    (lambda s: s.update(activeDeadlineSeconds=-1),
     "spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    (lambda s: s.update(schedulingGroup={"podGroupName": "other"}),
     'spec.schedulingGroup: Invalid value: {"podGroupName":"other"}: field is immutable'),
])
def test_update_rules(mutate, expected):
    msgs = update_errors(spec(schedulingGroup={"podGroupName": "g"}), mutate)
    assert any(m.startswith(expected) for m in msgs), msgs


def test_deadline_may_only_shrink_and_tolerations_only_grow():
    assert any("must be less than or equal to previous value" in m
               for m in update_errors(spec(activeDeadlineSeconds=10), lambda s: s.update(activeDeadlineSeconds=20)))
    old = spec(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}])
    assert update_errors(old, lambda s: s["tolerations"][0].update(tolerationSeconds=5)) == []
    assert "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds" in \
        update_errors(old, lambda s: s.update(tolerations=[]))


def test_negative_grace_period_may_become_one_and_gates_may_only_be_removed():
    assert update_errors(spec(terminationGracePeriodSeconds=-5),
                         lambda s: s.update(terminationGracePeriodSeconds=1)) == []
    old = spec(schedulingGates=[{"name": "a"}, {"name": "b"}])
    assert update_errors(old, lambda s: s.update(schedulingGates=[{"name": "b"}])) == []
    assert ("spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'c'"
            in update_errors(old, lambda s: s["schedulingGates"].append({"name": "c"})))


# --- QoS and selectors -----------------------------------------------------------------------------

@pytest.mark.parametrize("resources,qos", [
    ([{}], "BestEffort"),
    ([{"requests": {"cpu": "100m"}}], "Burstable"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}], "Burstable"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
    ([{"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}], "BestEffort"),
])
def test_qos_class(resources, qos):
    s = {"containers": [{"name": f"c{i}", "image": "x", "resources": r} for i, r in enumerate(resources)]}
    assert compute_qos_class(s) == qos


def test_label_selector_helpers():
    sel = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                                {"key": "legacy", "operator": "DoesNotExist"}]}
    assert label_selector_matches(sel, {"app": "web", "tier": "a"})
    assert not label_selector_matches(sel, {"app": "web", "tier": "c"})
    assert not label_selector_matches(None, {"app": "web"})
    assert label_selector_matches({}, {"anything": "goes"})
    assert format_label_selector(sel) == "app=web,!legacy,tier in (a,b)"
    assert format_label_selector({}) == "<none>"
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    bad = {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x"]}]}
    assert messages(validate_label_selector(bad, "spec.selector")) == [
        "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'"]


def test_resource_quantities_are_stored_canonical_and_rounded_to_milli():
    s = defaulted({"containers": [{"name": "c", "image": "x",
                                   "resources": {"requests": {"cpu": "1000m", "memory": "1.5Gi"},
                                                 "limits": {"cpu": "0.0001", "example.com/gpu": 2}}}]})
    res = s["containers"][0]["resources"]
    assert res == {"requests": {"cpu": "1", "memory": "1536Mi"}, "limits": {"cpu": "1m", "example.com/gpu": "2"}}
