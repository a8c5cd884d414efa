"""resource.k8s.io/v1: DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate behaviour."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest
from fractions import Fraction

from phalanx.api.resource import strategies
from phalanx.api.resource.fields import parse_quantity, validate_uid
from phalanx.api.registry import StrategyContext
from phalanx.machinery.featuregates import FeatureGates

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)

TEMPLATE = {  # the tutorial's resourceclaimtemplate.yaml
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu-claim-template", "namespace": "default"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
}

DEVICE_CLASS = {  # what dra-example-driver installs
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
}


def gpu(i: int) -> dict:
    return {"name": f"gpu-{i}",
            "attributes": {"index": {"int": i}, "uuid": {"string": f"gpu-{i:08d}"},
                           "model": {"string": "LATEST-GPU-MODEL"}, "driverVersion": {"version": "1.0.0"}},
            "capacity": {"memory": {"value": "80Gi"}, "compute": {"value": "100"}},
            "allowMultipleAllocations": False}


SLICE = {  # a dra-example-driver slice on one worker
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "0-gpu.example.com-kind-worker-x7k2p"},
    "spec": {"driver": "gpu.example.com", "nodeName": "kind-worker",
             "pool": {"name": "kind-worker", "generation": 1, "resourceSliceCount": 1},
             "devices": [gpu(i) for i in range(8)]},
}

CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "training-workers-shared-gpu-abcde", "namespace": "default"},
    "spec": copy.deepcopy(TEMPLATE["spec"]["spec"]),
}


class Namespaces:
    def __init__(self, **labels_by_ns):
        self.labels = labels_by_ns

    def lookup(self, key, ns, name):
        if key == "core/namespaces" and name in self.labels:
            return {"metadata": {"name": name, "labels": self.labels[name]}}
        return None


class Gates:
    """Feature gates with overrides, including gates 1.36 locks (to exercise the drop logic)."""

    def __init__(self, overrides: dict):
        self.base, self.overrides = FeatureGates(), overrides

    def enabled(self, name: str) -> bool:
        return self.overrides.get(name, self.base.enabled(name))


def ctx(gates: dict | None = None, namespaces: Namespaces | None = None) -> StrategyContext:
    namespaces = namespaces or Namespaces(default={})
    return StrategyContext(gates=Gates(gates or {}), now=lambda: NOW, lookup=namespaces.lookup)


def msgs(errs) -> list[str]:
    return [e.message() for e in errs]


def create(strategy, obj: dict, c: StrategyContext) -> tuple[dict, list[str]]:
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


def status_update(strategy, new: dict, old: dict, c: StrategyContext) -> tuple[dict, list[str]]:
    new = copy.deepcopy(new)
    strategy.prepare_for_status_update(new, old, c)
    return new, msgs(strategy.validate_status_update(new, old, c))


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


RCT = strategies.ResourceClaimTemplateStrategy()
RC = strategies.ResourceClaimStrategy()
RS = strategies.ResourceSliceStrategy()
DC = strategies.DeviceClassStrategy()


# -- the tutorial's template ----------------------------------------------------------------------

def test_tutorial_template_is_accepted_and_defaulted():
    obj, errs = create(RCT, TEMPLATE, ctx())
    assert errs == []
    assert obj["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
    assert obj["spec"]["metadata"] == {}


def test_all_mode_gets_no_count_and_empty_claims_keep_upstream_json_shape():
    claim = with_(CLAIM, f"{REQ}.0.exactly.allocationMode", "All")
    obj, errs = create(RC, claim, ctx())
    assert errs == [] and obj["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.example.com", "allocationMode": "All"}
    obj, errs = create(RC, with_(CLAIM, "spec", {}), ctx())
    assert errs == [] and obj["spec"] == {"devices": {"requests": None}}


def test_template_spec_is_immutable():
    old, _ = create(RCT, TEMPLATE, ctx())
    _, errs = update(RCT, with_(old, "spec.spec.devices.requests.0.exactly.count", 2), old, ctx())
    assert len(errs) == 1 and errs[0].startswith("spec: Invalid value: ") and errs[0].endswith("field is immutable")
    assert update(RCT, with_(old, "metadata.labels", {"a": "b"}), old, ctx())[1] == []


def test_template_metadata_only_allows_labels_and_annotations():
    obj = with_(TEMPLATE, "spec.metadata", {"labels": {"a": "b"}, "name": "x"})
    assert create(RCT, obj, ctx())[1] == ["spec.metadata.name: Forbidden: cannot be set for a template"]


# -- claim spec validation -------------------------------------------------------------------------

REQ = "spec.devices.requests"


@pytest.mark.parametrize("change, want", [
    ((f"{REQ}.0.exactly", ...), [f"{REQ}[0]: Required value: exactly one of `exactly` or `firstAvailable` is "
                                 "required"]),
    ((f"{REQ}.0.firstAvailable", [{"name": "a", "deviceClassName": "c"}]),
     [f"{REQ}[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple "
      "fields are set"]),
    ((f"{REQ}.0.exactly.deviceClassName", ""), [f"{REQ}[0].exactly.deviceClassName: Required value"]),
    ((f"{REQ}.0.name", "GPU"),
     [f'{REQ}[0].name: Invalid value: "GPU": a lowercase RFC 1123 label must consist of lower case alphanumeric '
      "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
      "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ((f"{REQ}.0.exactly.count", -1), [f"{REQ}[0].exactly.count: Invalid value: -1: must be greater than zero"]),
    ((f"{REQ}.0.exactly", {"deviceClassName": "c", "allocationMode": "All", "count": 2}),
     [f"{REQ}[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"]),
    ((f"{REQ}.0.exactly.allocationMode", "Some"),
     [f'{REQ}[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"']),
    ((f"{REQ}.0.exactly.selectors", [{"cel": {"expression": "true"}}] * 33),
     [f"{REQ}[0].exactly.selectors: Too many: 33: must have at most 32 items"]),
    ((f"{REQ}.0.exactly.selectors", [{"cel": {"expression": "x" * 10241}}]),
     [f"{REQ}[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"]),
    ((f"{REQ}.0.exactly.selectors", [{}]), [f"{REQ}[0].exactly.selectors[0].cel: Required value"]),
    ((f"{REQ}.0.exactly.selectors", [{"cel": {"expression": ""}}]),
     [f"{REQ}[0].exactly.selectors[0].cel.expression: Required value"]),
    ((REQ, [{"name": "gpu", "exactly": {"deviceClassName": "c"}}] * 2), [f'{REQ}[1]: Duplicate value: "gpu"']),
    ((REQ, [{"name": f"r{i}", "exactly": {"deviceClassName": "c"}} for i in range(33)]),
     [f"{REQ}: Too many: 33: must have at most 32 items"]),
    (("spec.devices.constraints", [{"requests": ["nope"], "matchAttribute": "gpu.example.com/numa"}]),
     ["spec.devices.constraints[0].requests[0]: Invalid value: \"nope\": must be the name of a request in the "
      "claim or the name of a request and a subrequest separated by '/'"]),
    (("spec.devices.constraints", [{"requests": ["gpu"], "matchAttribute": "numa"}]),
     ['spec.devices.constraints[0].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain '
      'and a name separated by a slash']),
    (("spec.devices.constraints", [{"requests": ["gpu"]}]),
     ['spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
      'required, but multiple fields are set']),
    (("spec.devices.config", [{"requests": ["gpu"]}]), ["spec.devices.config[0].opaque: Required value"]),
    (("spec.devices.config", [{"opaque": {"driver": "gpu.example.com", "parameters": [1]}}]),
     ['spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object']),
    (("spec.devices.config", [{"opaque": {"driver": "gpu.example.com"}}]),
     ["spec.devices.config[0].opaque.parameters: Required value"]),
    ((f"{REQ}.0.exactly.tolerations", [{"key": "a", "operator": "Exists", "value": "v"}]),
     [f'{REQ}[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator `Exists`']),
])
def test_claim_spec_validation(change, want):
    _, errs = create(RC, with_(CLAIM, *change), ctx({"DRADeviceTaints": True}))
    assert errs == want


def test_constraints_and_config_may_name_subrequests():
    claim = with_(CLAIM, REQ, [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com"},
        {"name": "small", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}]}])
    claim = with_(claim, "spec.devices.constraints", [{"requests": ["gpu/big", "gpu"], "matchAttribute": "x.io/numa"}])
    claim = with_(claim, "spec.devices.config", [{"requests": ["gpu/small"], "opaque": {
        "driver": "gpu.example.com", "parameters": {"apiVersion": "gpu.resource.example.com/v1alpha1"}}}])
    obj, errs = create(RC, claim, ctx())
    assert errs == []
    assert obj["spec"]["devices"]["requests"][0]["firstAvailable"][0]["count"] == 1
    bad = with_(claim, "spec.devices.constraints", [{"requests": ["gpu/huge"], "matchAttribute": "x.io/numa"}])
    assert create(RC, bad, ctx())[1] == [
        "spec.devices.constraints[0].requests[0]: Invalid value: \"gpu/huge\": must be the name of a request in the "
        "claim or the name of a request and a subrequest separated by '/'"]


def test_toleration_operator_defaults_to_equal():
    claim = with_(CLAIM, f"{REQ}.0.exactly.tolerations", [{"key": "dra.example.com/unhealthy", "effect": "NoSchedule"}])
    obj, errs = create(RC, claim, ctx({"DRADeviceTaints": True}))
    assert errs == [] and obj["spec"]["devices"]["requests"][0]["exactly"]["tolerations"][0]["operator"] == "Equal"


TYPE_ERROR = "device.driver == 1"
TYPE_ERROR_DETAIL = ("compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to "
                     "'(string, int)'\n | device.driver == 1\n | ..............^")


@pytest.mark.parametrize("strategy, obj, path", [
    (RC, with_(CLAIM, f"{REQ}.0.exactly.selectors", [{"cel": {"expression": TYPE_ERROR}}]),
     f"{REQ}[0].exactly.selectors[0].cel.expression"),
    (RCT, with_(TEMPLATE, "spec.spec.devices.requests.0.exactly.selectors", [{"cel": {"expression": TYPE_ERROR}}]),
     "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"),
    (DC, with_(DEVICE_CLASS, "spec.selectors", [{"cel": {"expression": TYPE_ERROR}}]),
     "spec.selectors[0].cel.expression"),
])
def test_selector_type_errors_are_invalid_at_admission(strategy, obj, path):
    assert create(strategy, obj, ctx())[1] == [f'{path}: Invalid value: "{TYPE_ERROR}": {TYPE_ERROR_DETAIL}']


@pytest.mark.parametrize("expression, problem", [
    ("device.driver == 'gpu.example.com'", None),
    ("device.attributes['gpu.example.com'].index == 1", None),  # attribute types are known at runtime only
    ("1 +", "compilation failed: ERROR: <input>:1:4: Syntax error"),
    ("device.drivr == 'x'", "undefined field 'drivr'"),
    ("device.driver < 2", "found no matching overload for '_<_' applied to '(string, int)'"),
    ("device.allowMultipleAllocations != 'true'", "found no matching overload for '_!=_' applied to '(bool, string)'"),
    ("quantity('1Gi') == 1", "found no matching overload for '_==_' applied to '(kubernetes.Quantity, int)'"),
    ("1 < 2.5", None),  # ordering compares numbers across int and double
])
def test_claim_selectors_are_compiled_at_admission(expression, problem):
    claim = with_(CLAIM, f"{REQ}.0.exactly.selectors", [{"cel": {"expression": expression}}])
    errs = create(RC, claim, ctx())[1]
    if problem is None:
        assert errs == []
    else:
        assert len(errs) == 1 and errs[0].startswith(f"{REQ}[0].exactly.selectors[0].cel.expression: Invalid value: ")
        assert problem in errs[0]


# -- gated fields ---------------------------------------------------------------------------------

@pytest.mark.parametrize("gate, path, value, gone", [
    ("DRAAdminAccess", f"{REQ}.0.exactly.adminAccess", True, ("exactly", "adminAccess")),
    ("DRADeviceTaints", f"{REQ}.0.exactly.tolerations", [{"key": "k", "operator": "Exists"}],
     ("exactly", "tolerations")),
    ("DRAConsumableCapacity", f"{REQ}.0.exactly.capacity", {"requests": {"memory": "10Gi"}}, ("exactly", "capacity")),
])
def test_claim_gated_fields_dropped_when_gate_off(gate, path, value, gone):
    claim = with_(CLAIM, path, value)
    c_off = ctx({gate: False}, Namespaces(default={"resource.kubernetes.io/admin-access": "true"}))
    obj, errs = create(RC, claim, c_off)
    assert errs == []
    assert gone[1] not in obj["spec"]["devices"]["requests"][0][gone[0]]
    c_on = ctx({gate: True}, Namespaces(default={"resource.kubernetes.io/admin-access": "true"}))
    obj, errs = create(RC, claim, c_on)
    assert errs == [] and gone[1] in obj["spec"]["devices"]["requests"][0][gone[0]]


def test_first_available_dropped_when_prioritized_list_off():
    claim = with_(CLAIM, REQ, [{"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}])
    obj, errs = create(RC, claim, ctx({"DRAPrioritizedList": False}))
    assert "firstAvailable" not in obj["spec"]["devices"]["requests"][0]
    assert errs == [f"{REQ}[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"]


def test_admin_access_needs_namespace_label():
    claim = with_(CLAIM, f"{REQ}.0.exactly.adminAccess", True)
    assert create(RC, claim, ctx())[1] == [
        "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label on the containing namespace"]
    assert create(RC, claim, ctx(namespaces=Namespaces(default={"resource.kubernetes.io/admin-access": "true"})))[1] \
        == []
    template = with_(TEMPLATE, "spec.spec.devices.requests.0.exactly.adminAccess", True)
    assert create(RCT, template, ctx())[1][0].startswith("spec.devices.requests[0].adminAccess: Forbidden: ")


# -- ResourceClaim status --------------------------------------------------------------------------

def allocation(*devices: str) -> dict:
    return {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "kind-worker",
                                     "device": d} for d in devices]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["kind-worker"]}]}]}}


PG_REF = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "training-workers",
          "uid": "0f6ad1f7-4b50-4a3c-9d5c-1e0c7bbd3b11"}


def created_claim() -> dict:
    obj, errs = create(RC, CLAIM, ctx())
    assert errs == [] and obj["status"] == {}
    return obj


@pytest.mark.parametrize("status, want", [
    ({"allocation": allocation("gpu-0"), "reservedFor": [PG_REF]}, []),
    ({"reservedFor": [PG_REF]}, ["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]),
    ({"allocation": allocation("gpu-0"), "reservedFor": [PG_REF, PG_REF]},
     ['status.reservedFor[1]: Duplicate value: "0f6ad1f7-4b50-4a3c-9d5c-1e0c7bbd3b11"']),
    ({"allocation": allocation("gpu-0"), "reservedFor": [{"resource": "pods", "name": "p"}]},
     ["status.reservedFor[0].uid: Required value"]),
    ({"allocation": allocation("gpu-0"),
      "reservedFor": [dict(PG_REF, uid=f"00000000-0000-0000-0000-{i:012d}") for i in range(257)]},
     ["status.reservedFor: Too many: 257: must have at most 256 items"]),
    ({"allocation": with_(allocation("gpu-0"), "devices.results.0.request", "cpu")},
     ["status.allocation.devices.results[0].request: Invalid value: \"cpu\": must be the name of a request in the "
      "claim or the name of a request and a subrequest separated by '/'"]),
    ({"allocation": allocation("gpu-0"), "devices": [{"driver": "gpu.example.com", "pool": "kind-worker",
                                                      "device": "gpu-1"}]},
     ['status.devices[0]: Invalid value: "gpu.example.com/kind-worker/gpu-1": must be an allocated device in the '
      'claim']),
])
def test_claim_status_validation(status, want):
    old = created_claim()
    _, errs = status_update(RC, with_(old, "status", status), old, ctx())
    assert errs == want


def test_claim_allocation_is_set_once():
    old = created_claim()
    old["status"] = {"allocation": allocation("gpu-0"), "reservedFor": [PG_REF]}
    _, errs = status_update(RC, with_(old, "status.allocation", allocation("gpu-1")), old, ctx())
    assert len(errs) == 1 and errs[0].startswith("status.allocation: Invalid value: ") \
        and errs[0].endswith(": field is immutable")
    # removing it (deallocation) and unreserving are fine
    assert status_update(RC, with_(old, "status", {}), old, ctx())[1] == []


def test_claim_status_devices_of_deallocated_devices_are_dropped():
    old = created_claim()
    old["status"] = {"allocation": allocation("gpu-0"),
                     "devices": [{"driver": "gpu.example.com", "pool": "kind-worker", "device": "gpu-0"}]}
    new, errs = status_update(RC, with_(old, "status.allocation", ...), old, ctx())
    assert errs == [] and "devices" not in new["status"]


def test_claim_spec_is_immutable_and_main_update_keeps_status():
    old = created_claim()
    old["status"] = {"allocation": allocation("gpu-0")}
    new, errs = update(RC, with_(with_(old, f"{REQ}.0.exactly.count", 2), "status", {}), old, ctx())
    assert errs[-1].startswith("spec: Invalid value: ") and errs[-1].endswith("field is immutable")
    assert new["status"] == old["status"]


@pytest.mark.parametrize("status, deleting, state", [
    ({}, False, "pending"),
    ({"allocation": allocation("gpu-0")}, False, "allocated"),
    ({"allocation": allocation("gpu-0"), "reservedFor": [PG_REF]}, False, "allocated,reserved"),
    ({}, True, "deleted"),
    ({"allocation": allocation("gpu-0"), "reservedFor": [PG_REF]}, True, "deleted,allocated,reserved"),
])
def test_claim_state_column(status, deleting, state):
    obj = created_claim()
    obj["status"] = status
    obj["metadata"]["creationTimestamp"] = (NOW - timedelta(seconds=42)).strftime("%Y-%m-%dT%H:%M:%SZ")
    if deleting:
        obj["metadata"]["deletionTimestamp"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [c.name for c in RC.columns] == ["Name", "State", "Age"]
    assert RC.row(obj, ctx()) == ["training-workers-shared-gpu-abcde", state, "42s"]


# -- ResourceSlice ---------------------------------------------------------------------------------

def test_driver_slice_is_accepted():
    obj, errs = create(RS, SLICE, ctx())
    assert errs == []
    assert obj["spec"]["devices"][0]["allowMultipleAllocations"] is False  # DRAConsumableCapacity is on
    obj["metadata"]["creationTimestamp"] = (NOW - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [c.name for c in RS.columns] == ["Name", "Node", "Driver", "Pool", "Age"]
    assert RS.row(obj, ctx()) == ["0-gpu.example.com-kind-worker-x7k2p", "kind-worker", "gpu.example.com",
                                  "kind-worker", "3h"]
    assert RS.field_selectors["spec.nodeName"](obj) == "kind-worker"
    assert RS.field_selectors["spec.driver"](obj) == "gpu.example.com"
    assert RS.field_selectors["spec.nodeName"](with_(obj, "spec.nodeName", ...)) == ""


DEV = "spec.devices"


@pytest.mark.parametrize("change, want", [
    (("spec.allNodes", True), ['spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
                               '`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple '
                               'fields are set']),
    (("spec.nodeName", ...), ["spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                              "`perDeviceNodeSelection` is required"]),
    (("spec.nodeName", ""), ['spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string',
                             "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                             "`perDeviceNodeSelection` is required"]),
    (("spec.pool.resourceSliceCount", 0),
     ["spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"]),
    (("spec.pool.name", ""), ["spec.pool.name: Required value"]),
    (("spec.pool.name", "a/B"),
     ['spec.pool.name: Invalid value: "B": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
      "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ((DEV, [gpu(0), gpu(0)]), ['spec.devices[1]: Duplicate value: "gpu-0"']),
    ((DEV, [dict(gpu(0), name=f"d{i}") for i in range(129)]), ["spec.devices: Too many: 129: must have at most 128 "
                                                                "items"]),
    ((f"{DEV}.0.attributes.index", {"int": 1, "string": "1"}),
     ['spec.devices[0].attributes[index]: Invalid value: {"int":1,"string":"1"}: exactly one value must be '
      'specified']),
    ((f"{DEV}.0.attributes.index", {}),
     ['spec.devices[0].attributes[index]: Invalid value: "": exactly one value must be specified']),
    ((f"{DEV}.0.attributes.driverVersion", {"version": "1.0"}),
     ['spec.devices[0].attributes[driverVersion].version: Invalid value: "1.0": must be a string compatible with '
      'semver.org spec 2.0.0']),
    # Go's `$` is the end of the text: a trailing newline is refused (Python's `$` would accept it).
    ((f"{DEV}.0.attributes.driverVersion", {"version": "1.0.0\n"}),
     ['spec.devices[0].attributes[driverVersion].version: Invalid value: "1.0.0\\n": must be a string compatible '
      'with semver.org spec 2.0.0']),
    ((f"{DEV}.0.attributes", {"name\n": {"int": 1}}),
     ['spec.devices[0].attributes: Invalid value: "name\\n": a valid C identifier must start with alphabetic '
      "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  "
      "or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"]),
    ((f"{DEV}.0.attributes.model", {"string": "x" * 65}),
     ["spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes"]),
    ((f"{DEV}.0.attributes", {"1bad": {"int": 1}}),
     ['spec.devices[0].attributes: Invalid value: "1bad": a valid C identifier must start with alphabetic '
      "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  "
      "or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"]),
    ((f"{DEV}.0.attributes", {f"a{i}": {"int": i} for i in range(31)}),
     ["spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"]),
    ((f"{DEV}.0.capacity.memory.requestPolicy", {"default": "1Gi"}),
     ["spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true"]),
    ((f"{DEV}.0.nodeName", "kind-worker"),
     ["spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"]),
    (("spec.sharedCounters", [{"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}]),
     ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed']),
])
def test_slice_validation(change, want):
    _, errs = create(RS, with_(SLICE, *change), ctx())
    assert errs == want


def test_slice_consumable_capacity_request_policy():
    dev = dict(gpu(0), allowMultipleAllocations=True)
    dev["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    assert create(RS, with_(SLICE, DEV, [dev]), ctx())[1] == []
    dev["capacity"]["memory"]["requestPolicy"] = {"default": "3Gi", "validValues": ["1Gi", "2Gi"]}
    assert create(RS, with_(SLICE, DEV, [dev]), ctx())[1] == [
        'spec.devices[0].capacity[memory].requestPolicy.validValues: Invalid value: "3Gi": default value is not '
        'valid according to the requestPolicy']


def test_slice_per_device_node_selection():
    devices = [dict(gpu(0), nodeName="kind-worker"), dict(gpu(1), allNodes=True), gpu(2)]
    spec_change = with_(with_(SLICE, "spec.nodeName", ...), "spec.perDeviceNodeSelection", True)
    _, errs = create(RS, with_(spec_change, DEV, devices), ctx())
    assert errs == ["spec.devices[2]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is "
                    "required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"]


def test_slice_gated_fields_dropped():
    shared = with_(with_(SLICE, DEV, ...), "spec.sharedCounters",
                   [{"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}])
    obj, errs = create(RS, shared, ctx({"DRAPartitionableDevices": False}))
    assert "sharedCounters" not in obj["spec"]
    obj, errs = create(RS, SLICE, ctx({"DRAConsumableCapacity": False}))
    assert errs == [] and "allowMultipleAllocations" not in obj["spec"]["devices"][0]
    tainted = with_(SLICE, f"{DEV}.0.taints", [{"key": "dra.example.com/unhealthy", "effect": "NoSchedule"}])
    obj, errs = create(RS, tainted, ctx({"DRADeviceTaints": False}))
    assert errs == [] and "taints" not in obj["spec"]["devices"][0]
    obj, errs = create(RS, tainted, ctx({"DRADeviceTaints": True}))
    assert errs == [] and obj["spec"]["devices"][0]["taints"][0]["timeAdded"] == "2026-05-01T12:00:00Z"


def test_slice_immutable_fields():
    old, _ = create(RS, SLICE, ctx())
    _, errs = update(RS, with_(old, "spec.driver", "other.example.com"), old, ctx())
    assert errs == ['spec.driver: Invalid value: "other.example.com": field is immutable']
    _, errs = update(RS, with_(old, "spec.pool.generation", 2), old, ctx())
    assert errs == []


# -- DeviceClass -----------------------------------------------------------------------------------

def test_device_class():
    obj, errs = create(DC, DEVICE_CLASS, ctx())
    assert errs == [] and DC.columns[0].name == "Name" and [c.name for c in DC.columns] == ["Name", "Age"]
    bad = with_(DEVICE_CLASS, "spec.extendedResourceName", "gpu")
    assert create(DC, bad, ctx())[1] == ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended '
                                         'resource name']
    ok = with_(DEVICE_CLASS, "spec.extendedResourceName", "example.com/gpu")
    assert create(DC, ok, ctx())[1] == []
    assert "extendedResourceName" not in create(DC, ok, ctx({"DRAExtendedResource": False}))[0]["spec"]
    assert create(DC, with_(DEVICE_CLASS, "spec.config", [{}]), ctx())[1] == ["spec.config[0].opaque: Required value"]
    # the spec of a class is mutable
    old, _ = create(DC, DEVICE_CLASS, ctx())
    assert update(DC, with_(old, "spec.selectors", []), old, ctx())[1] == []


def test_quantities():
    assert parse_quantity("80Gi") == 80 * 2 ** 30
    assert parse_quantity("100m") == Fraction(1, 10)
    assert parse_quantity("1e3") == 1000
    assert parse_quantity("abc") is None


def test_registration():
    from phalanx.api import registry
    assert registry.lookup("resource.k8s.io", "v1", "resourceclaims").subresources == ["status"]
    assert not registry.lookup("resource.k8s.io", "v1", "resourceslices").namespaced
    assert not registry.lookup("resource.k8s.io", "v1", "deviceclasses").namespaced
    assert registry.lookup("resource.k8s.io", "v1", "resourceclaimtemplates").namespaced


@pytest.mark.parametrize("uid, want", [
    ("0a1b2c3d-0000-1111-2222-333344445555", []),
    ("0a1b2c3d-0000-1111-2222-333344445555\n", ["error validating uid: invalid UUID format"]),
    ("0A1B2C3D-0000-1111-2222-333344445555", ["uid must be in RFC 4122 normalized form, "
                                              "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                                              "characters"]),
])
def test_uid_format_reaches_the_end_of_the_text(uid, want):
    assert [e.detail for e in validate_uid(uid, "uid")] == want
