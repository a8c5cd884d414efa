"""apps/v1 Deployment and ReplicaSet: defaults, validation, update rules and table cells."""

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
DEPLOY = registry.lookup("apps", "v1", "deployments")
RS = registry.lookup("apps", "v1", "replicasets")


def ts(seconds_ago: int) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def workload(kind="Deployment", name="web", **spec):
    s = {"selector": {"matchLabels": {"app": "web"}},
         "template": {"metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                              {"name": "log", "image": "busybox"}]}}}
    s.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default", "uid": "u", "creationTimestamp": ts(3600)}, "spec": s}


def msgs(errs):
    return [e.message() for e in errs]


def create(rt, obj):
    obj = copy.deepcopy(obj)
    rt.strategy.default(obj, CTX)
    rt.strategy.prepare_for_create(obj, CTX)
    rt.strategy.admit("CREATE", obj, None, CTX)
    return obj, msgs(rt.strategy.validate(obj, CTX))


def test_deployment_defaults():
    d, errs = create(DEPLOY, workload())
    assert errs == []
    spec = d["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    tspec = spec["template"]["spec"]
    assert tspec["restartPolicy"] == "Always" and tspec["containers"][1]["imagePullPolicy"] == "Always"
    assert "enableServiceLinks" not in tspec  # a Pod-only default
    assert d["status"] == {}


def test_recreate_strategy_gets_no_rolling_update():
    d, errs = create(DEPLOY, workload(strategy={"type": "Recreate"}))
    assert errs == [] and d["spec"]["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize("mutate,expected", [
    (lambda s: s.pop("selector"), "spec.selector: Required value"),
    (lambda s: s.update(selector={}), "spec.selector: Invalid value: {}: empty selector is invalid for deployment"),
    (lambda s: s.update(selector={"matchLabels": {"app": "api"}}),
     'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`'),
    (lambda s: s["template"]["spec"].update(restartPolicy="Never"),
     'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'),
    (lambda s: s["template"]["spec"].update(activeDeadlineSeconds=5),
     "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"),
    (lambda s: s.update(replicas=-1), "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    (lambda s: s.update(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}),
     "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"),
    (lambda s: s.update(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "120%"}}),
     'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%'),
    (lambda s: s.update(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "lots"}}),
     "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"lots\": a valid percent string must be a numeric string "
     "followed by an ending '%'"),
    (lambda s: s.update(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
     "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"),
    (lambda s: s.update(minReadySeconds=700),
     "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"),
    (lambda s: s["template"]["spec"]["containers"].append({"name": "nginx", "image": "x"}),
     'spec.template.spec.containers[2].name: Duplicate value: "nginx"'),
])
def test_deployment_validation(mutate, expected):
    d = workload()
    mutate(d["spec"])
    _, errs = create(DEPLOY, d)
    assert any(e.startswith(expected) for e in errs), errs


def test_deployment_selector_is_immutable_and_status_kept():
    s = DEPLOY.strategy
    old, _ = create(DEPLOY, workload())
    old["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "fe"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "fe"
    new["status"] = {}
    s.default(new, CTX)
    s.prepare_for_update(new, old, CTX)
    assert new["status"] == old["status"]
    assert msgs(s.validate_update(new, old, CTX)) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"fe"}}: field is immutable']


def test_deployment_status_validation():
    s = DEPLOY.strategy
    old, _ = create(DEPLOY, workload())
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 1}
    assert msgs(s.validate_status_update(new, old, CTX)) == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"]


def test_deployment_row():
    d, _ = create(DEPLOY, workload(replicas=3))
    d["status"] = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    assert DEPLOY.strategy.row(d, CTX) == ["web", "2/3", 3, 2, "60m", "nginx,log", "nginx:1.27,busybox", "app=web"]
    assert [c.name for c in DEPLOY.strategy.columns if c.priority == 0] == ["Name", "Ready", "Up-to-date", "Available",
                                                                            "Age"]
    assert DEPLOY.short_names == ["deploy"] and DEPLOY.subresources == ["status", "scale"]


def test_replicaset_defaults_validation_and_row():
    rs, errs = create(RS, workload("ReplicaSet", "web-7d9c"))
    assert errs == []
    assert rs["spec"]["replicas"] == 1 and rs["status"] == {"replicas": 0}
    rs["status"] = {"replicas": 1, "readyReplicas": 1}
    assert RS.strategy.row(rs, CTX) == ["web-7d9c", 1, 1, 1, "60m", "nginx,log", "nginx:1.27,busybox", "app=web"]
    assert RS.strategy.field_selectors["status.replicas"](rs) == "1"
    bad = workload("ReplicaSet", selector={"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
    _, errs = create(RS, bad)
    assert 'spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator' in errs
    assert any(e.startswith("spec.selector: Invalid value: ") and e.endswith("invalid label selector") for e in errs)
    assert RS.short_names == ["rs"] and RS.categories == ["all"]
