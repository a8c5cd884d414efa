"""DaemonSet, ControllerRevision, CronJob, Endpoints and EndpointSlice: defaults, validation
messages a user sees in a 422, and the `kubectl get` cells."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from phalanx.api import load_all, registry
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates

load_all()

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
CTX = StrategyContext(gates=FeatureGates(), now=lambda: NOW)
DS = registry.lookup("apps", "v1", "daemonsets")
CJ = registry.lookup("batch", "v1", "cronjobs")
EP = registry.lookup("", "v1", "endpoints")
EPS = registry.lookup("discovery.k8s.io", "v1", "endpointslices")
CR = registry.lookup("apps", "v1", "controllerrevisions")
POD_SPEC = {"containers": [{"name": "c", "image": "busybox"}]}


def create(rt, obj):
    obj = copy.deepcopy(obj)
    rt.strategy.default(obj, CTX)
    rt.strategy.prepare_for_create(obj, CTX)
    return obj, [e.message() for e in rt.strategy.validate(obj, CTX)]


def daemonset(**spec):
    s = {"selector": {"matchLabels": {"app": "a"}},
         "template": {"metadata": {"labels": {"app": "a"}}, "spec": dict(POD_SPEC)}}
    s.update(spec)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "a", "namespace": "default",
                                                                       "creationTimestamp": "2026-05-01T11:00:00Z"},
            "spec": s}


def cronjob(name="c", **spec):
    s = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
        "restartPolicy": "OnFailure", **POD_SPEC}}}}}
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default",
                                                                      "creationTimestamp": "2026-05-01T11:00:00Z"},
            "spec": s}


def test_daemonset_defaults_rolling_update_one_unavailable():
    ds, errs = create(DS, daemonset())
    assert errs == []
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10


@pytest.mark.parametrize("spec,message", [
    ({"selector": {"matchLabels": {"app": "b"}}}, "spec.template.metadata.labels: Invalid value: "
                                                  '{"app":"a"}: `selector` does not match template `labels`'),
    ({"updateStrategy": {"type": "Sometimes"}}, 'spec.updateStrategy.type: Unsupported value: "Sometimes": '
                                                'supported values: "OnDelete", "RollingUpdate"'),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}},
     "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"),
])
def test_daemonset_validation(spec, message):
    _, errs = create(DS, daemonset(**spec))
    assert message in errs


def test_daemonset_row():
    ds, _ = create(DS, daemonset(template={"metadata": {"labels": {"app": "a"}},
                                           "spec": {**POD_SPEC, "nodeSelector": {"disk": "ssd"}}}))
    ds["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                    "updatedNumberScheduled": 3, "numberAvailable": 2}
    assert DS.strategy.row(ds, CTX)[:8] == ["a", 3, 3, 2, 3, 2, "disk=ssd", "60m"]


def test_cronjob_defaults():
    cj, errs = create(CJ, cronjob())
    assert errs == []
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)


@pytest.mark.parametrize("obj,message", [
    (cronjob(schedule="61 * * * *"), "spec.schedule: Invalid value: \"61 * * * *\""),
    (cronjob(schedule="* * * *"), "spec.schedule: Invalid value: \"* * * *\": expected exactly 5 fields, found 4"),
    (cronjob(timeZone="Mars/Olympus"), 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'),
    (cronjob(schedule="TZ=UTC * * * * *"), 'spec.schedule: Invalid value: "TZ=UTC * * * * *": cannot use TZ or '
                                           'CRON_TZ in schedule, use timeZone field instead'),
    (cronjob(concurrencyPolicy="Sometimes"), 'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported '
                                             'values: "Allow", "Forbid", "Replace"'),
    (cronjob(name="n" * 53), "metadata.name: Invalid value: \"" + "n" * 53 + "\": must be no more than 52 characters"),
    (cronjob(startingDeadlineSeconds=-1), "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or "
                                          "equal to 0"),
])
def test_cronjob_validation(obj, message):
    _, errs = create(CJ, obj)
    assert any(e.startswith(message) for e in errs), errs


def test_cronjob_row():
    cj, _ = create(CJ, cronjob(timeZone="Europe/Paris"))
    cj["status"] = {"active": [{"name": "c-1"}], "lastScheduleTime": "2026-05-01T11:55:00Z"}
    assert CJ.strategy.row(cj, CTX)[:7] == ["c", "*/5 * * * *", "Europe/Paris", False, 1, "5m", "60m"]


def test_endpoints_cell_shows_three_then_more():
    ep = {"metadata": {"name": "web", "creationTimestamp": "2026-05-01T11:00:00Z"}, "subsets": [
        {"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 5)], "ports": [{"port": 80}]}]}
    assert EP.strategy.row(ep, CTX)[1] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
    assert EP.strategy.row({"metadata": {"name": "x"}}, CTX)[1] == "<none>"


def test_endpointslice_validation_and_cells():
    eps = {"metadata": {"name": "web-abc", "creationTimestamp": "2026-05-01T11:00:00Z"}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}],
           "ports": [{"name": "http", "port": 8080}]}
    assert EPS.strategy.validate(eps, CTX) == []
    assert EPS.strategy.row(eps, CTX)[1:4] == ["IPv4", "8080", "10.0.0.1,10.0.0.2"]
    bad = dict(eps, addressType="IPv5", endpoints=[{"addresses": []}])
    assert [e.message() for e in EPS.strategy.validate(bad, CTX)] == [
        'addressType: Unsupported value: "IPv5": supported values: "IPv4", "IPv6", "FQDN"',
        "endpoints[0].addresses: Required value: must contain at least 1 address"]


def test_controller_revision_data_is_immutable_and_row_names_the_owner():
    rev = {"metadata": {"name": "a-1", "creationTimestamp": "2026-05-01T11:00:00Z", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "a", "uid": "u", "controller": True}]},
           "data": {"x": 1}, "revision": 2}
    assert CR.strategy.row(rev, CTX)[:3] == ["a-1", "daemonset.apps/a", 2]
    changed = dict(rev, data={"x": 2})
    errs = [e.message() for e in CR.strategy.validate_update(changed, rev, CTX)]
    assert len(errs) == 1 and errs[0].startswith("data: Invalid value: ") and errs[0].endswith("field is immutable")
