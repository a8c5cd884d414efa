"""OpenAPI schemas, /openapi/v3 documents and strict field validation (phalanx.api.openapi)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from phalanx.api import openapi, openapipaths
from phalanx.api.registry import ResourceType

REPO = Path(__file__).resolve().parents[3]

SERVED = [
    ("", "v1", "Namespace"), ("", "v1", "Node"), ("", "v1", "Pod"), ("", "v1", "Binding"),
    ("", "v1", "Service"), ("", "v1", "ConfigMap"), ("", "v1", "Secret"), ("", "v1", "ServiceAccount"),
    ("", "v1", "Event"), ("events.k8s.io", "v1", "Event"), ("coordination.k8s.io", "v1", "Lease"),
    ("batch", "v1", "Job"), ("apps", "v1", "Deployment"), ("apps", "v1", "ReplicaSet"),
    ("autoscaling", "v1", "Scale"), ("policy", "v1", "PodDisruptionBudget"), ("policy", "v1", "Eviction"),
    ("scheduling.k8s.io", "v1", "PriorityClass"), ("scheduling.k8s.io", "v1alpha2", "Workload"),
    ("scheduling.k8s.io", "v1alpha2", "PodGroup"), ("resource.k8s.io", "v1", "DeviceClass"),
    ("resource.k8s.io", "v1", "ResourceSlice"), ("resource.k8s.io", "v1", "ResourceClaim"),
    ("resource.k8s.io", "v1", "ResourceClaimTemplate"), ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
]

# The objects of the seed tutorial (shared/seed/dra-integration.md), verbatim.
TUTORIAL = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-claim-template
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata:
  name: training-workload
spec:
  controllerRef:
    apiGroup: jobset.x-k8s.io
    kind: JobSet
    name: training-job
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang:
        minCount: 6
    resourceClaims:
    - name: shared-gpu
      resourceClaimTemplateName: gpu-claim-template
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: training-workers
  namespace: default
spec:
  podGroupTemplateRef:
    workload:
      workloadName: training-workload
      podGroupTemplateName: workers
  schedulingPolicy:
    gang:
      minCount: 6
  resourceClaims:
  - name: shared-gpu
    resourceClaimTemplateName: gpu-claim-template
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: training-job
spec:
  replicatedJobs:
  - name: workers
    replicas: 3
    template:
      spec:
        completions: 2
        parallelism: 2
        backoffLimit: 0
        template:
          spec:
            terminationGracePeriodSeconds: 0
            schedulingGroup:
              podGroupName: training-workers
            resourceClaims:
            - name: shared-gpu
              resourceClaimTemplateName: gpu-claim-template
            containers:
            - name: worker
              image: busybox
              command: ["/bin/sh", "-c", "sleep infinity"]
              resources:
                claims:
                - name: shared-gpu
"""

# What the system writes back: a running pod of the gang and the allocated, reserved claim.
POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
        "name": "training-job-workers-0-0-abcde", "namespace": "default", "uid": "5d4e",
        "resourceVersion": "42", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"jobset.sigs.k8s.io/jobset-name": "training-job", "batch.kubernetes.io/job-completion-index": "0"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        "finalizers": ["batch.kubernetes.io/job-tracking"],
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "training-job-workers-0",
                             "uid": "11aa", "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}],
    },
    "spec": {
        "containers": [{
            "name": f"c{i}", "image": "busybox", "imagePullPolicy": "Always",
            "command": ["/bin/sh", "-c", "sleep infinity"],
            "env": [{"name": "RANK", "value": str(i)},
                    {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "ports": [{"containerPort": 8080 + i, "protocol": "TCP", "name": f"p{i}"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": 1},
                          "claims": [{"name": "shared-gpu"}]},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        } for i in range(3)],
        "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default", "nodeName": "kind-worker", "schedulerName": "default-scheduler",
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
        "schedulingGroup": {"podGroupName": "training-workers"},
        "resourceClaims": [{"name": "shared-gpu", "resourceClaimTemplateName": "gpu-claim-template"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}},
        "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
    },
    "status": {
        "phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.2", "podIP": "10.244.1.5",
        "podIPs": [{"ip": "10.244.1.5"}], "hostIPs": [{"ip": "10.0.0.2"}], "startTime": "2026-01-01T00:00:01Z",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": "2026-01-01T00:00:02Z"}],
        "containerStatuses": [{"name": "c0", "ready": True, "restartCount": 0, "image": "busybox",
                               "imageID": "sha256:1", "containerID": "containerd://1", "started": True,
                               "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}}}],
        "resourceClaimStatuses": [{"name": "shared-gpu", "resourceClaimName": "training-workers-shared-gpu-x7k2p"}],
    },
}

RESOURCE_CLAIM = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "training-workers-shared-gpu-x7k2p", "namespace": "default",
                 "generateName": "training-workers-shared-gpu-",
                 "annotations": {"resource.kubernetes.io/pod-claim-name": "shared-gpu"},
                 "ownerReferences": [{"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                                      "name": "training-workers", "uid": "pg-uid", "controller": True,
                                      "blockOwnerDeletion": True}],
                 "finalizers": ["resource.kubernetes.io/delete-protection"]},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}],
        "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                  "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "X",
                                                                 "anything": {"goes": [1, 2]}}}}]}},
    "status": {
        "allocation": {
            "allocationTimestamp": "2026-01-01T00:00:00Z",
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "kind-worker",
                                     "device": "gpu-0", "adminAccess": None}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["kind-worker"]}]}]},
        },
        "reservedFor": [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "training-workers",
                         "uid": "pg-uid"}],
        "devices": [{"driver": "gpu.example.com", "pool": "kind-worker", "device": "gpu-0",
                     "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                     "data": {"free": "form"}}],
    },
}

RESOURCE_SLICE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "kind-worker-gpu.example.com-abc"},
    "spec": {"driver": "gpu.example.com", "nodeName": "kind-worker",
             "pool": {"name": "kind-worker", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0",
                          "attributes": {"index": {"int": 0}, "uuid": {"string": "gpu-1"},
                                         "driverVersion": {"version": "1.0.0"}},
                          "capacity": {"memory": {"value": "80Gi"}}}]},
}


def _tutorial() -> list[dict]:
    return [d for d in yaml.safe_load_all(TUTORIAL) if d]


def _gvk(obj: dict) -> tuple[str, str, str]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return group, version, obj["kind"]


# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gvk", SERVED, ids=lambda g: "/".join(p for p in g if p))
def test_every_served_kind_has_a_schema_with_its_gvk(gvk):
    schema = openapi.schema_for_gvk(*gvk)
    assert schema is not None
    group, version, kind = gvk
    assert {"group": group, "version": version, "kind": kind} in schema["x-kubernetes-group-version-kind"]
    assert schema.get("description"), "top-level kinds carry a description for kubectl explain"
    for field in ("apiVersion", "kind", "metadata"):
        assert field in schema["properties"]


def test_schema_names_follow_upstream():
    assert openapi.schema_name_for_gvk("", "v1", "Pod") == "io.k8s.api.core.v1.Pod"
    assert openapi.schema_name_for_gvk("scheduling.k8s.io", "v1alpha2", "PodGroup") == \
        "io.k8s.api.scheduling.v1alpha2.PodGroup"
    assert openapi.schema_name_for_gvk("resource.k8s.io", "v1", "ResourceClaim") == \
        "io.k8s.api.resource.v1.ResourceClaim"
    assert openapi.schema_name_for_gvk("", "v1", "Event") == "io.k8s.api.core.v1.Event"
    assert openapi.schema_name_for_gvk("events.k8s.io", "v1", "Event") == "io.k8s.api.events.v1.Event"
    assert openapi.component("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")["type"] == "object"
    assert openapi.component("io.k8s.apimachinery.pkg.api.resource.Quantity") == \
        {"oneOf": [{"type": "string"}, {"type": "number"}]}
    assert openapi.component("io.k8s.apimachinery.pkg.util.intstr.IntOrString")["format"] == "int-or-string"
    assert openapi.schema_for_gvk("", "v1", "NoSuchKind") is None
    with pytest.raises(KeyError):
        openapi.component("io.k8s.api.core.v1.NoSuchThing")


def test_no_dangling_refs_and_every_kind_is_closed():
    comps = openapi.components()
    refs: list[str] = []
    openapi._collect_refs(comps, refs)
    dangling = sorted({r for r in refs if r not in comps})
    assert dangling == []
    for gvk in SERVED:
        name = openapi.schema_name_for_gvk(*gvk)
        closure = openapi.reachable_schemas([name])
        assert name in closure
        assert all(openapi.resolve("#/components/schemas/" + r) is not None for r in closure)


# JobSet lists that the upstream CRD leaves without a list type (atomic by default).
JOBSET_UNDECLARED = {"io.x-k8s.jobset.v1alpha2.FailurePolicy.rules",
                     "io.x-k8s.jobset.v1alpha2.FailurePolicyRule.onJobFailureReasons",
                     "io.x-k8s.jobset.v1alpha2.FailurePolicyRule.onJobFailureMessagePatterns"}


def test_every_list_field_declares_its_list_type():
    missing = []
    for name, schema in openapi.components().items():
        for field, prop in (schema.get("properties") or {}).items():
            if prop.get("type") == "array" and "x-kubernetes-list-type" not in prop:
                if not (name.endswith("List") and field == "items"):
                    missing.append(f"{name}.{field}")
    assert sorted(missing) == sorted(JOBSET_UNDECLARED)


@pytest.mark.parametrize("schema,field,expected", [
    ("core.v1.Container", "name", "string"),
    ("core.v1.PodSpec", "terminationGracePeriodSeconds", ("integer", "int64")),
    ("core.v1.ContainerPort", "containerPort", ("integer", "int32")),
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "generation", ("integer", "int64")),
    ("core.v1.Secret", "data", "object"),
])
def test_field_types_and_formats(schema, field, expected):
    prefix = "io.k8s." if schema.startswith("apimachinery") else "io.k8s.api."
    prop = openapi.component(prefix + schema)["properties"][field]
    if isinstance(expected, tuple):
        assert (prop["type"], prop["format"]) == expected
    else:
        assert prop["type"] == expected


def _ref(prop: dict) -> str:
    """The schema a property refers to: `$ref`, or upstream's `allOf` wrapper when it has a description."""
    return prop["$ref"] if "$ref" in prop else prop["allOf"][0]["$ref"]


def test_time_quantity_and_int_or_string_fields_reference_their_types():
    meta = openapi.component("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")["properties"]
    assert _ref(meta["creationTimestamp"]).endswith("meta.v1.Time")
    lease = openapi.component("io.k8s.api.coordination.v1.LeaseSpec")["properties"]
    assert _ref(lease["renewTime"]).endswith("meta.v1.MicroTime")
    req = openapi.component("io.k8s.api.core.v1.ResourceRequirements")["properties"]
    assert req["limits"]["additionalProperties"]["$ref"].endswith("resource.Quantity")
    port = openapi.component("io.k8s.api.core.v1.ServicePort")["properties"]
    assert _ref(port["targetPort"]).endswith("intstr.IntOrString")
    assert port["protocol"]["default"] == "TCP"
    assert openapi.component("io.k8s.api.core.v1.Secret")["properties"]["data"]["additionalProperties"] == \
        {"type": "string", "format": "byte"}


def test_descriptions_are_upstreams_for_built_in_kinds():
    spec = openapi.component("io.k8s.api.scheduling.v1alpha2.PodGroupSpec")
    policy = spec["properties"]["schedulingPolicy"]
    assert policy["description"].startswith("SchedulingPolicy defines the scheduling policy for this instance")
    assert _ref(policy).endswith("v1alpha2.PodGroupSchedulingPolicy")
    assert openapi.component("io.k8s.api.core.v1.Pod")["description"].startswith("Pod is a collection of containers")
    beta = openapi.component("io.k8s.api.scheduling.v1beta1.PodGroupSpec", release="1.37")
    assert beta["properties"]["schedulingPolicy"]["description"].startswith("schedulingPolicy defines")  # 1.37 words


def test_required_fields_come_from_the_python_client():
    assert openapi.component("io.k8s.api.core.v1.Container")["required"] == ["name"]
    assert openapi.component("io.k8s.api.core.v1.PodSpec")["required"] == ["containers"]
    assert openapi.component("io.k8s.api.scheduling.v1alpha2.PodGroupSpec")["required"] == ["schedulingPolicy"]
    assert "required" not in openapi.component("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


def test_jobset_pod_template_is_the_core_schema():
    rj = openapi.component("io.x-k8s.jobset.v1alpha2.ReplicatedJob")["properties"]
    assert rj["template"]["$ref"].endswith("io.k8s.api.batch.v1.JobTemplateSpec")
    job_spec = openapi.component("io.k8s.api.batch.v1.JobSpec")["properties"]
    assert _ref(job_spec["template"]).endswith("io.k8s.api.core.v1.PodTemplateSpec")
    assert rj["replicas"]["default"] == 1
    assert "x-kubernetes-preserve-unknown-fields" not in str(openapi.reachable_schemas(
        ["io.x-k8s.jobset.v1alpha2.JobSet"]))


# ---------------------------------------------------------------------------------------------
# Patch metadata
# ---------------------------------------------------------------------------------------------
def _meta_at(gvk, path):
    meta = openapi.patch_meta(*gvk)
    for step in path.split("."):
        meta = meta.items() if step == "[]" else meta.field(step)
    return meta


POD_GVK = ("", "v1", "Pod")


@pytest.mark.parametrize("gvk,path,merge_key,strategies,list_type,map_keys", [
    (POD_GVK, "spec.containers", "name", {"merge"}, "map", ["name"]),
    (POD_GVK, "spec.initContainers", "name", {"merge"}, "map", ["name"]),
    (POD_GVK, "spec.containers.[].env", "name", {"merge"}, "map", ["name"]),
    (POD_GVK, "spec.containers.[].ports", "containerPort", {"merge"}, "map", ["containerPort", "protocol"]),
    (POD_GVK, "spec.containers.[].volumeMounts", "mountPath", {"merge"}, "map", ["mountPath"]),
    (POD_GVK, "spec.containers.[].args", None, set(), "atomic", []),
    (POD_GVK, "spec.volumes", "name", {"merge", "retainKeys"}, "map", ["name"]),
    (POD_GVK, "spec.tolerations", None, set(), "atomic", []),
    (POD_GVK, "spec.imagePullSecrets", "name", {"merge"}, "map", ["name"]),
    (POD_GVK, "spec.resourceClaims", "name", {"merge", "retainKeys"}, "map", ["name"]),
    (POD_GVK, "spec.topologySpreadConstraints", "topologyKey", {"merge"}, "map",
     ["topologyKey", "whenUnsatisfiable"]),
    (POD_GVK, "spec.schedulingGates", "name", {"merge"}, "map", ["name"]),
    (POD_GVK, "status.conditions", "type", {"merge"}, "map", ["type"]),
    (POD_GVK, "status.podIPs", "ip", {"merge"}, "map", ["ip"]),
    (POD_GVK, "metadata.ownerReferences", "uid", {"merge"}, "map", ["uid"]),
    (POD_GVK, "metadata.finalizers", None, {"merge"}, "set", []),
    (("", "v1", "Node"), "spec.taints", None, set(), "atomic", []),
    (("", "v1", "Node"), "status.addresses", "type", {"merge"}, "map", ["type"]),
    (("", "v1", "Service"), "spec.ports", "port", {"merge"}, "map", ["port", "protocol"]),
    (("apps", "v1", "Deployment"), "spec.template.spec.containers", "name", {"merge"}, "map", ["name"]),
    (("apps", "v1", "Deployment"), "status.conditions", "type", {"merge"}, "map", ["type"]),
    (("batch", "v1", "Job"), "status.conditions", "type", {"merge"}, "atomic", []),
    (("scheduling.k8s.io", "v1alpha2", "PodGroup"), "status.conditions", "type", {"merge"}, "map", ["type"]),
    (("scheduling.k8s.io", "v1alpha2", "PodGroup"), "spec.resourceClaims", "name", {"merge", "retainKeys"},
     "map", ["name"]),
    (("scheduling.k8s.io", "v1alpha2", "Workload"), "spec.podGroupTemplates", None, set(), "map", ["name"]),
    (("resource.k8s.io", "v1", "ResourceClaim"), "status.reservedFor", "uid", {"merge"}, "map", ["uid"]),
    (("resource.k8s.io", "v1", "ResourceClaim"), "spec.devices.requests", None, set(), "atomic", []),
    (("jobset.x-k8s.io", "v1alpha2", "JobSet"), "spec.replicatedJobs", "name", {"merge"}, "map", ["name"]),
    (("jobset.x-k8s.io", "v1alpha2", "JobSet"),
     "spec.replicatedJobs.[].template.spec.template.spec.containers.[].env", "name", {"merge"}, "map", ["name"]),
])
def test_patch_facts(gvk, path, merge_key, strategies, list_type, map_keys):
    meta = _meta_at(gvk, path)
    assert meta.known
    assert meta.merge_key == merge_key
    assert meta.strategies == strategies
    assert meta.list_type == list_type
    assert meta.map_keys == map_keys


def test_struct_and_map_patch_facts():
    assert _meta_at(("apps", "v1", "Deployment"), "spec.strategy").strategies == {"retainKeys"}
    assert _meta_at(("policy", "v1", "PodDisruptionBudget"), "spec.selector").strategies == {"replace"}
    assert _meta_at(POD_GVK, "spec.nodeSelector").map_type == "atomic"
    assert _meta_at(POD_GVK, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                    ).map_type == "atomic"
    assert openapi.patch_meta("", "v1", "Nope").known is False


# ---------------------------------------------------------------------------------------------
# Strict field validation
# ---------------------------------------------------------------------------------------------
def _realistic_objects() -> list[dict]:
    return _tutorial() + [POD, RESOURCE_CLAIM, RESOURCE_SLICE]


@pytest.mark.parametrize("obj", _realistic_objects(), ids=lambda o: o["kind"])
def test_realistic_objects_round_trip_clean(obj):
    raw = orjson.dumps(obj)
    decoded = orjson.loads(raw)
    gvk = _gvk(decoded)
    assert decoded == obj
    assert openapi.unknown_fields(*gvk, decoded) == []
    assert openapi.type_errors(*gvk, decoded) == []
    assert openapi.strict_decoding_errors(*gvk, raw) == []
    assert openapi.duplicate_fields(raw) == []


def _planted(obj: dict, path: list, key: str, value=1) -> dict:
    out = copy.deepcopy(obj)
    node = out
    for step in path:
        node = node[step]
    node[key] = value
    return out


JOBSET = _tutorial()[3]
PODGROUP = _tutorial()[2]


@pytest.mark.parametrize("obj,expected", [
    (_planted(POD, ["spec"], "foo"), ["spec.foo"]),
    (_planted(POD, ["spec", "containers", 1], "bar"), ["spec.containers[1].bar"]),
    (_planted(POD, ["metadata"], "labelz", {"a": "b"}), ["metadata.labelz"]),
    (_planted(POD, [], "extra"), ["extra"]),
    (_planted(POD, ["spec", "containers", 2, "env", 1, "valueFrom", "fieldRef"], "x"),
     ["spec.containers[2].env[1].valueFrom.fieldRef.x"]),
    (_planted(POD, ["status", "containerStatuses", 0, "state", "running"], "since"),
     ["status.containerStatuses[0].state.running.since"]),
    (_planted(PODGROUP, ["spec", "schedulingPolicy", "gang"], "minCont"), ["spec.schedulingPolicy.gang.minCont"]),
    (_planted(JOBSET, ["spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0],
              "imagee", "busybox"),
     ["spec.replicatedJobs[0].template.spec.template.spec.containers[0].imagee"]),
    (_planted(RESOURCE_CLAIM, ["status", "reservedFor", 0], "kind", "PodGroup"), ["status.reservedFor[0].kind"]),
    (_planted(RESOURCE_SLICE, ["spec", "devices", 0, "capacity", "memory"], "valu"),
     ["spec.devices[0].capacity.memory.valu"]),
])
def test_unknown_fields_are_reported_with_upstream_paths(obj, expected):
    assert openapi.unknown_fields(*_gvk(obj), obj) == expected
    assert openapi.strict_decoding_errors(*_gvk(obj), orjson.dumps(obj)) == \
        [f'unknown field "{p}"' for p in expected]


def test_free_form_fields_accept_anything():
    claim = copy.deepcopy(RESOURCE_CLAIM)
    claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["deep"] = {"any": {"thing": 1}}
    claim["metadata"]["labels"] = {"anything": "goes"}
    assert openapi.unknown_fields(*_gvk(claim), claim) == []


def test_unknown_kind_reports_nothing():
    assert openapi.unknown_fields("example.com", "v1", "Widget", {"spec": {"x": 1}}) == []
    assert openapi.type_errors("example.com", "v1", "Widget", {"spec": 1}) == []


# The body of upstream's field-validation integration test (test/integration/apiserver), and the
# message it expects from the API server.
UPSTREAM_INVALID_DEPLOYMENT = b"""{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "dupename", "name": "test-deployment", "unknownMeta": "metaVal",
               "labels": {"app": "nginx"}},
  "spec": {
    "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
    "paused": true, "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}},
      "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
                               "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""


def test_strict_decoding_message_matches_upstream():
    errors = openapi.strict_decoding_errors("apps", "v1", "Deployment", UPSTREAM_INVALID_DEPLOYMENT)
    assert openapi.strict_decoding_message(errors) == (
        'strict decoding error: duplicate field "metadata.name", unknown field "metadata.unknownMeta", '
        'unknown field "spec.unknown1", unknown field "spec.unknownDupe", duplicate field "spec.paused", '
        'unknown field "spec.template.spec.containers[0].unknownNested", '
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"')


def test_duplicate_fields():
    assert openapi.duplicate_fields(UPSTREAM_INVALID_DEPLOYMENT) == [
        "metadata.name", "spec.unknownDupe", "spec.paused", "spec.template.spec.containers[0].imagePullPolicy"]
    assert openapi.duplicate_fields(b'{"metadata":{"labels":{"a":"1","a":"2"}}}') == ["metadata.labels.a"]
    assert openapi.duplicate_fields(b'{"a":[{"b":1},{"b":1,"b":2}]}') == ["a[1].b"]
    assert openapi.duplicate_fields(b'{"a":1,"b":{"a":1}}') == []


@pytest.mark.parametrize("raw, expected", [
    (b'{"a":"x:y\\":z","b":[{"k":1},{"k":2}]}', []),        # colons and escaped quotes inside strings
    (b'{"a":"\\\\","a":1}', ["a"]),                         # a string ending in an escaped backslash
    ('{"\u00e9":1,"\u00e9":2}', ["\u00e9"]),                  # a str body, escapes decoded alike
    (b'{"n":123456789012345678901234567890,"n":1}', ["n"]),     # integers past 64 bits
    (b'{"n":123456789012345678901234567890}', []),
    (b'{"a" : {"c" : "d", "c":"e"}}', ["a.c"]),                 # whitespace around the colons
    (b'[{"x":1,"x":2}]', ["[0].x"]),
    (b'{"a":' * 300 + b'{"b":1,"b":2}' + b'}' * 300, ["a" + ".a" * 299 + ".b"]),  # deeper than orjson writes
])
def test_duplicate_fields_in_bodies_of_every_form(raw, expected):
    assert openapi.duplicate_fields(raw) == expected


def test_duplicate_map_keys_are_reported_as_duplicates():
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","a":"2"}}'
    assert openapi.strict_decoding_errors("", "v1", "ConfigMap", raw) == ['duplicate field "data.a"']


def _with(obj: dict, path: list, value) -> dict:
    out = copy.deepcopy(obj)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize("obj,expected", [
    (_with(POD, ["spec", "containers", 0, "env", 0, "value"], 5),
     "json: cannot unmarshal number into Go struct field EnvVar.spec.containers.env.value of type string"),
    (_with(POD, ["metadata", "labels", "a"], True),
     "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"),
    (_with(POD, ["spec"], "x"), "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"),
    (_with(POD, ["spec", "containers"], {"name": "c"}),
     "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"),
    (_with(POD, ["spec", "containers", 0, "name"], 7),
     "json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string"),
    (_with(POD, ["spec", "restartPolicy"], 1),
     "json: cannot unmarshal number into Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy"),
    (_with(POD, ["spec", "containers", 0, "ports", 0, "containerPort"], "80"),
     "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort "
     "of type int32"),
    (_with(POD, ["spec", "containers", 0, "ports", 0, "containerPort"], 1.5),
     "json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort "
     "of type int32"),
    (_with(POD, ["spec", "containers", 0, "ports", 0, "containerPort"], 1 << 40),
     f"json: cannot unmarshal number {1 << 40} into Go struct field "
     "ContainerPort.spec.containers.ports.containerPort of type int32"),
    (_with(POD, ["spec", "containers", 0, "command"], "sleep"),
     "json: cannot unmarshal string into Go struct field Container.spec.containers.command of type []string"),
    (_with(POD, ["spec", "containers", 0, "resources", "requests", "cpu"], "lots"),
     openapi.QUANTITY_FORMAT_ERROR),
    (_with(POD, ["spec", "containers", 0, "readinessProbe", "httpGet", "port"], {"n": 1}),
     "json: cannot unmarshal object into Go value of type int32"),
    (_with(POD, ["metadata", "creationTimestamp"], 5),
     "json: cannot unmarshal number into Go value of type string"),
    (_with(PODGROUP, ["spec", "schedulingPolicy", "gang", "minCount"], "6"),
     "json: cannot unmarshal string into Go struct field GangSchedulingPolicy.spec.schedulingPolicy.gang.minCount "
     "of type int32"),
])
def test_type_errors_word_the_go_decoder(obj, expected):
    assert openapi.type_errors(*_gvk(obj), obj) == [expected]


def test_null_values_are_accepted_everywhere():
    obj = _with(POD, ["spec", "containers", 0, "env"], None)
    obj = _with(obj, ["spec", "priority"], None)
    assert openapi.type_errors(*_gvk(obj), obj) == []
    assert openapi.unknown_fields(*_gvk(obj), obj) == []


# ---------------------------------------------------------------------------------------------
# /openapi/v3
# ---------------------------------------------------------------------------------------------
RESOURCES = [
    ResourceType("", "v1", "Pod", "pods", True, subresources=["status", "binding", "log"]),
    ResourceType("", "v1", "Node", "nodes", False, subresources=["status"]),
    ResourceType("apps", "v1", "Deployment", "deployments", True, subresources=["status", "scale"]),
    ResourceType("scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups", True, subresources=["status"]),
    ResourceType("scheduling.k8s.io", "v1alpha2", "Workload", "workloads", True),
    ResourceType("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True, subresources=["status"]),
]


def _doc(group: str, version: str) -> dict:
    return openapi.openapi_v3_document(group, version,
                                       [r for r in RESOURCES if (r.group, r.version) == (group, version)])


def test_index_lists_every_group_version_with_a_stable_hash():
    served = [("", "v1"), ("apps", "v1"), ("scheduling.k8s.io", "v1alpha2")]
    by_gv = {gv: [r for r in RESOURCES if (r.group, r.version) == gv] for gv in served}
    index = openapi.openapi_v3_index(served, by_gv)
    assert set(index["paths"]) == {"api/v1", "apis/apps/v1", "apis/scheduling.k8s.io/v1alpha2"}
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    assert openapi.openapi_v3_index(served, by_gv) == index
    assert index["paths"]["api/v1"]["serverRelativeURL"] != \
        openapi.openapi_v3_index([("", "v1")], {("", "v1"): RESOURCES[:1]})["paths"]["api/v1"]["serverRelativeURL"]


@pytest.mark.parametrize("rt", RESOURCES, ids=lambda r: r.kind)
def test_patch_operations_carry_gvk_and_field_validation(rt):
    doc = _doc(rt.group, rt.version)
    base = f"/{openapipaths.gv_path(rt.group, rt.version)}"
    item = (f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}" if rt.namespaced
            else f"{base}/{rt.plural}/{{name}}")
    patch = doc["paths"][item]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": rt.group, "version": rt.version, "kind": rt.kind}
    names = {p["name"] for p in patch["parameters"] if p["in"] == "query"}
    assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= names
    content = patch["requestBody"]["content"]
    assert "application/apply-patch+yaml" in content and "application/merge-patch+json" in content
    assert ("application/strategic-merge-patch+json" in content) == (rt.group != "jobset.x-k8s.io")
    assert {"get", "put", "delete"} <= set(doc["paths"][item])
    collection = item.rsplit("/", 1)[0]
    assert {"get", "post", "delete"} <= set(doc["paths"][collection])


def test_document_components_are_closed_and_explainable():
    for group, version in {(r.group, r.version) for r in RESOURCES}:
        doc = _doc(group, version)
        assert doc["openapi"].startswith("3.0")
        schemas = doc["components"]["schemas"]
        refs: list[str] = []
        openapi._collect_refs(doc, refs)
        assert sorted({r for r in refs if r not in schemas}) == []
    core = _doc("", "v1")["components"]["schemas"]
    assert "io.k8s.api.core.v1.Container" in core and "io.k8s.api.core.v1.Binding" in core
    sched = _doc("scheduling.k8s.io", "v1alpha2")["components"]["schemas"]
    assert "io.k8s.api.scheduling.v1alpha2.PodGroupSchedulingPolicy" in sched
    assert "io.k8s.api.core.v1.Pod" not in sched


def test_paths_follow_scope_and_subresources():
    core = _doc("", "v1")["paths"]
    assert "/api/v1/nodes/{name}" in core and "/api/v1/namespaces/{namespace}/nodes" not in core
    assert "/api/v1/pods" in core  # list across namespaces
    assert "post" in core["/api/v1/namespaces/{namespace}/pods/{name}/binding"]
    assert "patch" in core["/api/v1/namespaces/{namespace}/pods/{name}/status"]
    apps = _doc("apps", "v1")["paths"]
    scale = apps["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert "io.k8s.api.autoscaling.v1.Scale" in _doc("apps", "v1")["components"]["schemas"]


def test_documents_are_cached():
    rts = [r for r in RESOURCES if r.group == "apps"]
    assert openapi.openapi_v3_document("apps", "v1", rts) is openapi.openapi_v3_document("apps", "v1", rts)
    raw = openapi.openapi_v3_document_bytes("apps", "v1", rts)
    assert raw is openapi.openapi_v3_document_bytes("apps", "v1", rts)
    assert orjson.loads(raw) == openapi.openapi_v3_document("apps", "v1", rts)


def test_committed_schemas_match_the_generator():
    pytest.importorskip("kubernetes")
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_schemas.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
