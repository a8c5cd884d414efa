#!/usr/bin/env python3
"""Generate `src/phalanx/api/schemas/components.json`: the OpenAPI v3 component schemas of every
kind phalanx serves.

Run by a developer after changing the tables below; the output is committed:

    .venv/bin/python tools/gen_schemas.py            # writes the JSON files
    .venv/bin/python tools/gen_schemas.py --check    # exits 1 if the committed files are stale

Where the facts come from:

- Field names, JSON types and required fields: the model classes of the official `kubernetes`
  Python client (pinned to 36.0.3, generated from the Kubernetes 1.36 OpenAPI). Each class has
  `openapi_types` (attribute -> type string such as `list[V1Container]`, `dict[str, str]`, `int`)
  and `attribute_map` (attribute -> JSON name). A required field is one whose setter raises
  `ValueError` for `None` when client-side validation is on; we probe every setter that way.
- Everything the Python client drops is tabulated here from upstream's Go types and published
  OpenAPI (kubernetes/api `*/types.go` struct tags and markers, `api/openapi-spec/v3`): the schema
  package of each class, strategic-merge-patch keys and strategies, server-side-apply list and map
  types, int32/int64 formats, `Quantity` / `IntOrString` / `MicroTime` / `RawExtension` typed
  fields, declared defaults and enums, and the Go type names that decoding errors mention.
- JobSet (`jobset.x-k8s.io/v1alpha2`) is a CRD upstream; its structure is tabulated from
  kubernetes-sigs/jobset `api/jobset/v1alpha2/jobset_types.go`, with the Job template given as a
  `$ref` to `io.k8s.api.batch.v1.JobTemplateSpec` so strict validation and `kubectl explain`
  reach into the pod template.

Descriptions are upstream's, read from the installed `kubernetes-validate` package (the JSON schemas
of upstream's OpenAPI, per release) by `tools/upstream_docs.py` after the schemas are built; the
one-liners below stay only where upstream has none (JobSet: no maintained Python package ships its
documentation).

The script refuses to run if a list field of a served kind has no entry in `LIST_FACTS`: every list
must say how it merges.

Kubernetes 1.37's additions (scheduling.k8s.io v1beta1/v1alpha3) are generated separately, from the
37.x client, by `tools/gen_schemas_137.py` into `components-1.37.json`, laid over this file.

A second file, `gotypes.json`, maps schema -> field -> Go type name for the fields whose Go type is
a named type (`v1.RestartPolicy`, `v1.ResourceList`, ...); `phalanx.api.openapi` uses it to word
decoding errors the way the Go JSON decoder does. It is not served.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from kubernetes.client import models as M
from upstream_docs import apply_descriptions, definitions, upstream_property
from kubernetes.client.configuration import Configuration

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "src" / "phalanx" / "api" / "schemas"

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
TIME = f"{META}.Time"
MICRO_TIME = f"{META}.MicroTime"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"
FIELDS_V1 = f"{META}.FieldsV1"

PKG = {
    "core": "io.k8s.api.core.v1",
    "meta": META,
    "apps": "io.k8s.api.apps.v1",
    "batch": "io.k8s.api.batch.v1",
    "policy": "io.k8s.api.policy.v1",
    "autoscaling": "io.k8s.api.autoscaling.v1",
    "coordination": "io.k8s.api.coordination.v1",
    "events": "io.k8s.api.events.v1",
    "scheduling": "io.k8s.api.scheduling.v1",
    "schedulingalpha": "io.k8s.api.scheduling.v1alpha2",
    "resource": "io.k8s.api.resource.v1",
    "jobset": "io.x-k8s.jobset.v1alpha2",
    "rbac": "io.k8s.api.rbac.v1",
    "networking": "io.k8s.api.networking.v1",
    "certificates": "io.k8s.api.certificates.v1",
    "flowcontrol": "io.k8s.api.flowcontrol.v1",
    "apiregistration": "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
    "storage": "io.k8s.api.storage.v1",
    "discovery": "io.k8s.api.discovery.v1",
}
# Packages whose structs are found by name in upstream's definitions (upstream_docs), with their
# list semantics, integer formats and typed fields read from there too: the kinds added for the
# tools that touch them (ReplicationController, Ingress, CSR, APIService, APF).
UPSTREAM_PACKAGES = ("networking", "certificates", "flowcontrol", "apiregistration")


def N(short: str) -> str:
    """`core.PodSpec` -> `io.k8s.api.core.v1.PodSpec`."""
    pkg, _, name = short.partition(".")
    return f"{PKG[pkg]}.{name}"


# ---------------------------------------------------------------------------------------------
# Served kinds: (group, version, kind, python client class). Lists are added automatically.
# ---------------------------------------------------------------------------------------------
SERVED_KINDS = [
    ("", "v1", "Namespace", "V1Namespace"),
    ("", "v1", "Node", "V1Node"),
    ("", "v1", "Pod", "V1Pod"),
    ("", "v1", "Binding", "V1Binding"),
    ("", "v1", "Service", "V1Service"),
    ("", "v1", "ConfigMap", "V1ConfigMap"),
    ("", "v1", "Secret", "V1Secret"),
    ("", "v1", "ServiceAccount", "V1ServiceAccount"),
    ("", "v1", "Event", "CoreV1Event"),
    ("events.k8s.io", "v1", "Event", "EventsV1Event"),
    ("coordination.k8s.io", "v1", "Lease", "V1Lease"),
    ("batch", "v1", "Job", "V1Job"),
    ("apps", "v1", "Deployment", "V1Deployment"),
    ("apps", "v1", "ReplicaSet", "V1ReplicaSet"),
    ("apps", "v1", "StatefulSet", "V1StatefulSet"),
    ("apps", "v1", "ControllerRevision", "V1ControllerRevision"),
    ("", "v1", "PersistentVolumeClaim", "V1PersistentVolumeClaim"),
    ("", "v1", "PersistentVolume", "V1PersistentVolume"),
    ("storage.k8s.io", "v1", "StorageClass", "V1StorageClass"),
    ("apps", "v1", "DaemonSet", "V1DaemonSet"),
    ("batch", "v1", "CronJob", "V1CronJob"),
    ("", "v1", "Endpoints", "V1Endpoints"),
    ("discovery.k8s.io", "v1", "EndpointSlice", "V1EndpointSlice"),
    ("autoscaling", "v1", "Scale", "V1Scale"),
    ("policy", "v1", "PodDisruptionBudget", "V1PodDisruptionBudget"),
    ("policy", "v1", "Eviction", "V1Eviction"),
    ("scheduling.k8s.io", "v1", "PriorityClass", "V1PriorityClass"),
    ("scheduling.k8s.io", "v1alpha2", "Workload", "V1alpha2Workload"),
    ("scheduling.k8s.io", "v1alpha2", "PodGroup", "V1alpha2PodGroup"),
    ("resource.k8s.io", "v1", "DeviceClass", "V1DeviceClass"),
    ("resource.k8s.io", "v1", "ResourceSlice", "V1ResourceSlice"),
    ("resource.k8s.io", "v1", "ResourceClaim", "ResourceV1ResourceClaim"),
    ("resource.k8s.io", "v1", "ResourceClaimTemplate", "V1ResourceClaimTemplate"),
    ("rbac.authorization.k8s.io", "v1", "Role", "V1Role"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "V1ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "V1RoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "V1ClusterRoleBinding"),
    ("", "v1", "ReplicationController", "V1ReplicationController"),
    ("networking.k8s.io", "v1", "Ingress", "V1Ingress"),
    ("networking.k8s.io", "v1", "IngressClass", "V1IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy", "V1NetworkPolicy"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest", "V1CertificateSigningRequest"),
    ("apiregistration.k8s.io", "v1", "APIService", "V1APIService"),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "V1FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", "V1PriorityLevelConfiguration"),
]
# Kinds with no List of their own (subresource bodies).
NO_LIST = {"Binding", "Scale", "Eviction"}
LIST_CLASSES = {
    "CoreV1Event": "CoreV1EventList",
    "EventsV1Event": "EventsV1EventList",
    "ResourceV1ResourceClaim": "V1ResourceClaimList",
}
# Other roots reachable from request/response bodies (or from JobSet).
EXTRA_ROOTS = ["V1Status", "V1DeleteOptions", "V1WatchEvent", "V1APIResourceList", "V1JobTemplateSpec",
               "V1PodTemplateSpec", "V1PersistentVolumeClaim"]
# Group-versions that carry DeleteOptions / WatchEvent GVKs (every served one, plus JobSet's).
SERVED_GVS = sorted({(g, v) for g, v, _, _ in SERVED_KINDS} | {("jobset.x-k8s.io", "v1alpha2")})

# ---------------------------------------------------------------------------------------------
# Schema package of each Python client class (those not listed are core/v1).
# ---------------------------------------------------------------------------------------------
CLASS_PACKAGE_BY_KIND = {
    "meta": {"Condition", "DeleteOptions", "LabelSelector", "LabelSelectorRequirement", "ListMeta",
             "ManagedFieldsEntry", "ObjectMeta", "OwnerReference", "Preconditions", "ShardInfo",
             "Status", "StatusCause", "StatusDetails", "WatchEvent", "APIResource", "APIResourceList"},
    "apps": {"Deployment", "DeploymentCondition", "DeploymentList", "DeploymentSpec", "DeploymentStatus",
             "DeploymentStrategy", "ReplicaSet", "ReplicaSetCondition", "ReplicaSetList", "ReplicaSetSpec",
             "ReplicaSetStatus", "RollingUpdateDeployment", "StatefulSet", "StatefulSetCondition",
             "StatefulSetList", "StatefulSetOrdinals", "StatefulSetPersistentVolumeClaimRetentionPolicy",
             "StatefulSetSpec", "StatefulSetStatus", "StatefulSetUpdateStrategy",
             "RollingUpdateStatefulSetStrategy", "ControllerRevision", "ControllerRevisionList",
             "DaemonSet", "DaemonSetCondition", "DaemonSetList", "DaemonSetSpec", "DaemonSetStatus",
             "DaemonSetUpdateStrategy", "RollingUpdateDaemonSet"},
    "storage": {"StorageClass", "StorageClassList"},
    "discovery": {"EndpointSlice", "EndpointSliceList", "Endpoint", "EndpointConditions", "EndpointHints",
                  "EndpointPort", "ForZone", "ForNode"},
    "batch": {"Job", "JobCondition", "JobList", "JobSpec", "JobStatus", "JobTemplateSpec", "PodFailurePolicy",
              "PodFailurePolicyOnExitCodesRequirement", "PodFailurePolicyOnPodConditionsPattern",
              "PodFailurePolicyRule", "SuccessPolicy", "SuccessPolicyRule", "UncountedTerminatedPods",
              "CronJob", "CronJobList", "CronJobSpec", "CronJobStatus"},
    "policy": {"PodDisruptionBudget", "PodDisruptionBudgetList", "PodDisruptionBudgetSpec",
               "PodDisruptionBudgetStatus", "Eviction"},
    "autoscaling": {"Scale", "ScaleSpec", "ScaleStatus"},
    "rbac": {"AggregationRule", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBindingList", "ClusterRoleList",
             "PolicyRule", "Role", "RoleBinding", "RoleBindingList", "RoleList", "RoleRef"},
    "coordination": {"Lease", "LeaseList", "LeaseSpec"},
    "scheduling": {"PriorityClass", "PriorityClassList"},
    "resource": {"AllocatedDeviceStatus", "AllocationResult", "CELDeviceSelector", "CapacityRequestPolicy",
                 "CapacityRequestPolicyRange", "CapacityRequirements", "Counter", "CounterSet", "Device",
                 "DeviceAllocationConfiguration", "DeviceAllocationResult", "DeviceAttribute", "DeviceCapacity",
                 "DeviceClaim", "DeviceClaimConfiguration", "DeviceClass", "DeviceClassConfiguration",
                 "DeviceClassList", "DeviceClassSpec", "DeviceConstraint", "DeviceCounterConsumption",
                 "DeviceRequest", "DeviceRequestAllocationResult", "DeviceSelector", "DeviceSubRequest",
                 "DeviceTaint", "DeviceToleration", "ExactDeviceRequest", "NetworkDeviceData",
                 "NodeAllocatableResourceMapping", "OpaqueDeviceConfiguration", "ResourceClaimConsumerReference",
                 "ResourceClaimList", "ResourceClaimSpec", "ResourceClaimStatus", "ResourceClaimTemplate",
                 "ResourceClaimTemplateList", "ResourceClaimTemplateSpec", "ResourcePool", "ResourceSlice",
                 "ResourceSliceList", "ResourceSliceSpec"},
}
CLASS_NAME_OVERRIDES = {
    "CoreV1Event": N("core.Event"), "CoreV1EventList": N("core.EventList"),
    "CoreV1EventSeries": N("core.EventSeries"), "CoreV1ResourceClaim": N("core.ResourceClaim"),
    "EventsV1Event": N("events.Event"), "EventsV1EventList": N("events.EventList"),
    "EventsV1EventSeries": N("events.EventSeries"),
    "ResourceV1ResourceClaim": N("resource.ResourceClaim"),
    "RbacV1Subject": N("rbac.Subject"),
    "FlowcontrolV1Subject": N("flowcontrol.Subject"),
    "ApiregistrationV1ServiceReference": N("apiregistration.ServiceReference"),
    "CoreV1EndpointPort": N("core.EndpointPort"), "DiscoveryV1EndpointPort": N("discovery.EndpointPort"),
}


def schema_name(cls_name: str) -> str:
    if cls_name in CLASS_NAME_OVERRIDES:
        return CLASS_NAME_OVERRIDES[cls_name]
    if cls_name.startswith("V1alpha2"):
        return f"{PKG['schedulingalpha']}.{cls_name[len('V1alpha2'):]}"
    if not cls_name.startswith("V1"):
        raise SystemExit(f"no schema package known for Python client class {cls_name}")
    kind = cls_name[2:]
    for pkg, kinds in CLASS_PACKAGE_BY_KIND.items():
        if kind in kinds:
            return f"{PKG[pkg]}.{kind}"
    for pkg in UPSTREAM_PACKAGES:
        if f"{PKG[pkg]}.{kind}" in definitions("1.36"):
            return f"{PKG[pkg]}.{kind}"
    return f"{PKG['core']}.{kind}"


def upstream(sname: str, field: str) -> dict:
    """Upstream's schema of a field (empty when upstream has none)."""
    return upstream_property("1.36", N(sname), field) or {}


def upstream_list_facts(sname: str, field: str) -> dict | None:
    """The list and patch extensions upstream declares on a field; None if upstream has no such field."""
    prop = upstream_property("1.36", N(sname), field)
    if prop is None:
        return None
    return {k: v for k, v in prop.items() if k.startswith("x-kubernetes-")}


# ---------------------------------------------------------------------------------------------
# List semantics. Value: "<list-type>[:<map keys>][|<patch strategy>[:<merge key>]]".
#   atomic | set | map:k1,k2        x-kubernetes-list-type / x-kubernetes-list-map-keys
#   |merge:name  |merge  |merge,retainKeys:name   x-kubernetes-patch-strategy / -merge-key
# ---------------------------------------------------------------------------------------------
CONDITIONS = "map:type|merge:type"
LIST_FACTS: dict[str, dict[str, str]] = {
    # meta/v1
    "meta.ObjectMeta": {"finalizers": "set|merge", "ownerReferences": "map:uid|merge:uid",
                        "managedFields": "atomic"},
    "meta.LabelSelector": {"matchExpressions": "atomic"},
    "meta.LabelSelectorRequirement": {"values": "atomic"},
    "meta.StatusDetails": {"causes": "atomic"},
    "meta.DeleteOptions": {"dryRun": "atomic"},
    "meta.APIResourceList": {"resources": "atomic"},
    "meta.APIResource": {"categories": "atomic", "shortNames": "atomic", "verbs": "atomic"},
    # core/v1: pods
    "core.PodSpec": {
        "volumes": "map:name|merge,retainKeys:name",
        "initContainers": "map:name|merge:name",
        "containers": "map:name|merge:name",
        "ephemeralContainers": "map:name|merge:name",
        "imagePullSecrets": "map:name|merge:name",
        "hostAliases": "map:ip|merge:ip",
        "tolerations": "atomic",
        "readinessGates": "atomic",
        "topologySpreadConstraints": "map:topologyKey,whenUnsatisfiable|merge:topologyKey",
        "schedulingGates": "map:name|merge:name",
        "resourceClaims": "map:name|merge,retainKeys:name",
    },
    "core.Container": {
        "command": "atomic", "args": "atomic",
        "ports": "map:containerPort,protocol|merge:containerPort",
        "envFrom": "atomic",
        "env": "map:name|merge:name",
        "resizePolicy": "atomic",
        "restartPolicyRules": "atomic",
        "volumeMounts": "map:mountPath|merge:mountPath",
        "volumeDevices": "map:devicePath|merge:devicePath",
    },
    "core.EphemeralContainer": {
        "command": "atomic", "args": "atomic",
        "ports": "map:containerPort,protocol|merge:containerPort",
        "envFrom": "atomic",
        "env": "map:name|merge:name",
        "resizePolicy": "atomic",
        "restartPolicyRules": "atomic",
        "volumeMounts": "map:mountPath|merge:mountPath",
        "volumeDevices": "map:devicePath|merge:devicePath",
    },
    "core.ContainerRestartRuleOnExitCodes": {"values": "set"},
    "core.ResourceRequirements": {"claims": "map:name"},
    "core.PodStatus": {
        "conditions": CONDITIONS,
        "podIPs": "map:ip|merge:ip",
        "hostIPs": "map:ip|merge:ip",
        "initContainerStatuses": "atomic",
        "containerStatuses": "atomic",
        "ephemeralContainerStatuses": "atomic",
        "resourceClaimStatuses": "map:name|merge,retainKeys:name",
        "nodeAllocatableResourceClaimStatuses": "map:resourceClaimName",
    },
    "core.NodeAllocatableResourceClaimStatus": {"containers": "set"},
    "core.PodExtendedResourceClaimStatus": {"requestMappings": "atomic"},
    "core.ContainerStatus": {"volumeMounts": "map:mountPath|merge:mountPath",
                             "allocatedResourcesStatus": "map:name|merge:name"},
    "core.ResourceStatus": {"resources": "map:resourceID"},
    "core.LinuxContainerUser": {"supplementalGroups": "atomic"},
    "core.PodSecurityContext": {"supplementalGroups": "atomic", "sysctls": "atomic"},
    "core.PodDNSConfig": {"nameservers": "atomic", "searches": "atomic", "options": "atomic"},
    "core.HostAlias": {"hostnames": "atomic"},
    "core.Capabilities": {"add": "atomic", "drop": "atomic"},
    "core.ExecAction": {"command": "atomic"},
    "core.HTTPGetAction": {"httpHeaders": "atomic"},
    "core.NodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": "atomic"},
    "core.NodeSelector": {"nodeSelectorTerms": "atomic"},
    "core.NodeSelectorTerm": {"matchExpressions": "atomic", "matchFields": "atomic"},
    "core.NodeSelectorRequirement": {"values": "atomic"},
    "core.PodAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "atomic",
                         "preferredDuringSchedulingIgnoredDuringExecution": "atomic"},
    "core.PodAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "atomic",
                             "preferredDuringSchedulingIgnoredDuringExecution": "atomic"},
    "core.PodAffinityTerm": {"namespaces": "atomic", "matchLabelKeys": "atomic", "mismatchLabelKeys": "atomic"},
    "core.TopologySpreadConstraint": {"matchLabelKeys": "atomic"},
    # core/v1: volumes
    "core.ConfigMapVolumeSource": {"items": "atomic"},
    "core.ConfigMapProjection": {"items": "atomic"},
    "core.SecretVolumeSource": {"items": "atomic"},
    "core.SecretProjection": {"items": "atomic"},
    "core.DownwardAPIVolumeSource": {"items": "atomic"},
    "core.DownwardAPIProjection": {"items": "atomic"},
    "core.ProjectedVolumeSource": {"sources": "atomic"},
    "core.CephFSVolumeSource": {"monitors": "atomic"},
    "core.RBDVolumeSource": {"monitors": "atomic"},
    "core.ISCSIVolumeSource": {"portals": "atomic"},
    "core.FCVolumeSource": {"targetWWNs": "atomic", "wwids": "atomic"},
    "core.PersistentVolumeClaimSpec": {"accessModes": "atomic"},
    "core.PersistentVolumeClaimStatus": {"accessModes": "atomic", "conditions": CONDITIONS},
    # core/v1: other kinds
    "core.NamespaceSpec": {"finalizers": "atomic"},
    "core.NamespaceStatus": {"conditions": CONDITIONS},
    "core.NodeSpec": {"podCIDRs": "set|merge", "taints": "atomic"},
    "core.NodeStatus": {
        "addresses": "map:type|merge:type",
        "conditions": CONDITIONS,
        "images": "atomic",
        "volumesInUse": "atomic",
        "volumesAttached": "atomic",
        "runtimeHandlers": "atomic",
        "declaredFeatures": "atomic",
    },
    "core.ContainerImage": {"names": "atomic"},
    "core.ServiceSpec": {
        "ports": "map:port,protocol|merge:port",
        "clusterIPs": "atomic",
        "externalIPs": "atomic",
        "loadBalancerSourceRanges": "atomic",
        "ipFamilies": "atomic",
    },
    "core.ServiceStatus": {"conditions": CONDITIONS},
    "core.LoadBalancerStatus": {"ingress": "atomic"},
    "core.LoadBalancerIngress": {"ports": "atomic"},
    "core.ServiceAccount": {"secrets": "map:name|merge:name", "imagePullSecrets": "atomic"},
    # apps/v1
    "apps.DeploymentStatus": {"conditions": CONDITIONS},
    "apps.ReplicaSetStatus": {"conditions": CONDITIONS},
    "apps.StatefulSetSpec": {"volumeClaimTemplates": "atomic"},
    "apps.StatefulSetStatus": {"conditions": CONDITIONS},
    # core/v1: persistent volumes; storage.k8s.io/v1
    "core.CephFSPersistentVolumeSource": {"monitors": "atomic"},
    "core.ISCSIPersistentVolumeSource": {"portals": "atomic"},
    "core.RBDPersistentVolumeSource": {"monitors": "atomic"},
    "core.PersistentVolumeSpec": {"accessModes": "atomic", "mountOptions": "atomic"},
    "core.TopologySelectorLabelRequirement": {"values": "atomic"},
    "core.TopologySelectorTerm": {"matchLabelExpressions": "atomic"},
    "storage.StorageClass": {"allowedTopologies": "atomic", "mountOptions": "atomic"},
    "apps.DaemonSetStatus": {"conditions": CONDITIONS},
    # core/v1 Endpoints, discovery.k8s.io/v1
    "core.Endpoints": {"subsets": "atomic"},
    "core.EndpointSubset": {"addresses": "atomic", "notReadyAddresses": "atomic", "ports": "atomic"},
    "discovery.EndpointSlice": {"endpoints": "atomic", "ports": "atomic"},
    "discovery.Endpoint": {"addresses": "set"},
    "discovery.EndpointHints": {"forZones": "atomic", "forNodes": "atomic"},
    "batch.CronJobStatus": {"active": "atomic"},
    # batch/v1
    "batch.JobStatus": {"conditions": "atomic|merge:type"},
    "batch.UncountedTerminatedPods": {"succeeded": "set", "failed": "set"},
    "batch.PodFailurePolicy": {"rules": "atomic"},
    "batch.PodFailurePolicyRule": {"onPodConditions": "atomic"},
    "batch.PodFailurePolicyOnExitCodesRequirement": {"values": "set"},
    "batch.SuccessPolicy": {"rules": "atomic"},
    # policy/v1
    "policy.PodDisruptionBudgetStatus": {"conditions": CONDITIONS},
    # scheduling.k8s.io/v1alpha2
    "schedulingalpha.WorkloadSpec": {"podGroupTemplates": "map:name"},
    "schedulingalpha.PodGroupTemplate": {"resourceClaims": "map:name|merge,retainKeys:name"},
    "schedulingalpha.PodGroupSpec": {"resourceClaims": "map:name|merge,retainKeys:name"},
    "schedulingalpha.PodGroupStatus": {"conditions": CONDITIONS,
                                       "resourceClaimStatuses": "map:name|merge,retainKeys:name"},
    "schedulingalpha.PodGroupSchedulingConstraints": {"topology": "atomic"},
    # resource.k8s.io/v1
    "resource.DeviceClassSpec": {"selectors": "atomic", "config": "atomic"},
    "resource.DeviceClaim": {"requests": "atomic", "constraints": "atomic", "config": "atomic"},
    "resource.DeviceRequest": {"firstAvailable": "atomic"},
    "resource.ExactDeviceRequest": {"selectors": "atomic", "tolerations": "atomic"},
    "resource.DeviceSubRequest": {"selectors": "atomic", "tolerations": "atomic"},
    "resource.DeviceConstraint": {"requests": "atomic"},
    "resource.DeviceClaimConfiguration": {"requests": "atomic"},
    "resource.CapacityRequestPolicy": {"validValues": "atomic"},
    "resource.ResourceClaimStatus": {"reservedFor": "map:uid|merge:uid",
                                     "devices": "map:driver,device,pool,shareID"},
    "resource.AllocatedDeviceStatus": {"conditions": "map:type"},
    "resource.NetworkDeviceData": {"ips": "atomic"},
    "resource.DeviceAllocationResult": {"results": "atomic", "config": "atomic"},
    "resource.DeviceAllocationConfiguration": {"requests": "atomic"},
    "resource.DeviceRequestAllocationResult": {"tolerations": "atomic", "bindingConditions": "atomic",
                                               "bindingFailureConditions": "atomic"},
    "resource.ResourceSliceSpec": {"devices": "atomic", "sharedCounters": "atomic"},
    "resource.Device": {"consumesCounters": "atomic", "taints": "atomic", "bindingConditions": "atomic",
                        "bindingFailureConditions": "atomic"},
    "resource.DeviceAttribute": {"bools": "atomic", "ints": "atomic", "strings": "atomic", "versions": "atomic"},
    # rbac/v1
    "rbac.Role": {"rules": "atomic"},
    "rbac.ClusterRole": {"rules": "atomic"},
    "rbac.AggregationRule": {"clusterRoleSelectors": "atomic"},
    "rbac.PolicyRule": {"apiGroups": "atomic", "nonResourceURLs": "atomic", "resourceNames": "atomic",
                        "resources": "atomic", "verbs": "atomic"},
    "rbac.RoleBinding": {"subjects": "atomic"},
    "rbac.ClusterRoleBinding": {"subjects": "atomic"},
}

# Struct-level and map-level facts (x-kubernetes-map-type, patch strategies on non-lists).
ATOMIC_STRUCTS = {"meta.LabelSelector", "core.NodeSelector", "core.NodeSelectorTerm", "core.ObjectReference",
                  "core.LocalObjectReference", "core.TypedLocalObjectReference", "core.ConfigMapKeySelector",
                  "core.SecretKeySelector", "core.ObjectFieldSelector", "core.ResourceFieldSelector",
                  "core.FileKeySelector", "core.ClusterTrustBundleProjection", "rbac.RoleRef"}
FIELD_EXTENSIONS: dict[tuple[str, str], dict] = {
    ("core.PodSpec", "nodeSelector"): {"x-kubernetes-map-type": "atomic"},
    ("core.ServiceSpec", "selector"): {"x-kubernetes-map-type": "atomic"},
    ("apps.DeploymentSpec", "strategy"): {"x-kubernetes-patch-strategy": "retainKeys"},
    ("policy.PodDisruptionBudgetSpec", "selector"): {"x-kubernetes-patch-strategy": "replace"},
    ("core.PersistentVolumeClaimStatus", "allocatedResourceStatuses"): {"x-kubernetes-map-type": "granular"},
}

# ---------------------------------------------------------------------------------------------
# Scalar typing the Python client loses.
# ---------------------------------------------------------------------------------------------
INT64_FIELDS = {
    "meta.ObjectMeta": {"generation", "deletionGracePeriodSeconds"},
    "meta.ListMeta": {"remainingItemCount"},
    "meta.DeleteOptions": {"gracePeriodSeconds"},
    "meta.Condition": {"observedGeneration"},
    "core.PodSpec": {"activeDeadlineSeconds", "terminationGracePeriodSeconds"},
    "core.Probe": {"terminationGracePeriodSeconds"},
    "core.PodSecurityContext": {"runAsUser", "runAsGroup", "fsGroup", "supplementalGroups"},
    "core.SecurityContext": {"runAsUser", "runAsGroup"},
    "core.LinuxContainerUser": {"uid", "gid", "supplementalGroups"},
    "core.Toleration": {"tolerationSeconds"},
    "core.ContainerImage": {"sizeBytes"},
    "core.ServiceAccountTokenProjection": {"expirationSeconds"},
    "core.PodCondition": {"observedGeneration"},
    "core.PodStatus": {"observedGeneration"},
    "core.NodeSwapStatus": {"capacity"},
    "core.SleepAction": {"seconds"},
    "apps.DeploymentStatus": {"observedGeneration"},
    "apps.ReplicaSetStatus": {"observedGeneration"},
    "apps.StatefulSetStatus": {"observedGeneration"},
    "apps.DaemonSetStatus": {"observedGeneration"},
    "apps.ControllerRevision": {"revision"},
    "batch.JobSpec": {"activeDeadlineSeconds"},
    "batch.CronJobSpec": {"startingDeadlineSeconds"},
    "policy.PodDisruptionBudgetStatus": {"observedGeneration"},
    "resource.DeviceToleration": {"tolerationSeconds"},
    "resource.ResourcePool": {"generation", "resourceSliceCount"},
    "resource.DeviceAttribute": {"int", "ints"},
    "resource.ExactDeviceRequest": {"count"},
    "resource.DeviceSubRequest": {"count"},
}
QUANTITY_FIELDS = {
    "core.ResourceRequirements": {"limits", "requests"},
    "core.VolumeResourceRequirements": {"limits", "requests"},
    "core.PodSpec": {"overhead"},
    "core.PodStatus": {"allocatedResources"},
    "core.ContainerStatus": {"allocatedResources"},
    "core.NodeStatus": {"allocatable", "capacity"},
    "core.EmptyDirVolumeSource": {"sizeLimit"},
    "core.ResourceFieldSelector": {"divisor"},
    "core.NodeAllocatableResourceClaimStatus": {"resources"},
    "core.PersistentVolumeClaimStatus": {"capacity", "allocatedResources"},
    "core.PersistentVolumeSpec": {"capacity"},
    "resource.CapacityRequestPolicy": {"default", "validValues"},
    "resource.CapacityRequestPolicyRange": {"min", "max", "step"},
    "resource.CapacityRequirements": {"requests"},
    "resource.Counter": {"value"},
    "resource.DeviceCapacity": {"value"},
    "resource.DeviceRequestAllocationResult": {"consumedCapacity"},
    "resource.NodeAllocatableResourceMapping": {"allocationMultiplier"},
}
MICRO_TIME_FIELDS = {
    "core.Event": {"eventTime"}, "core.EventSeries": {"lastObservedTime"},
    "events.Event": {"eventTime"}, "events.EventSeries": {"lastObservedTime"},
    "coordination.LeaseSpec": {"acquireTime", "renewTime"},
}
BYTE_FIELDS = {"core.Secret": {"data"}, "core.ConfigMap": {"binaryData"}}
# Python client type 'object' -> what upstream declares.
OBJECT_FIELDS = {
    ("core.HTTPGetAction", "port"): INT_OR_STRING,
    ("core.TCPSocketAction", "port"): INT_OR_STRING,
    ("core.ServicePort", "targetPort"): INT_OR_STRING,
    ("apps.RollingUpdateDeployment", "maxSurge"): INT_OR_STRING,
    ("apps.RollingUpdateDeployment", "maxUnavailable"): INT_OR_STRING,
    ("apps.RollingUpdateStatefulSetStrategy", "maxUnavailable"): INT_OR_STRING,
    ("apps.RollingUpdateDaemonSet", "maxSurge"): INT_OR_STRING,
    ("apps.RollingUpdateDaemonSet", "maxUnavailable"): INT_OR_STRING,
    ("apps.ControllerRevision", "data"): RAW_EXTENSION,
    ("policy.PodDisruptionBudgetSpec", "maxUnavailable"): INT_OR_STRING,
    ("policy.PodDisruptionBudgetSpec", "minAvailable"): INT_OR_STRING,
    ("meta.ManagedFieldsEntry", "fieldsV1"): FIELDS_V1,
    ("resource.OpaqueDeviceConfiguration", "parameters"): RAW_EXTENSION,
    ("resource.AllocatedDeviceStatus", "data"): RAW_EXTENSION,
    ("meta.WatchEvent", "object"): RAW_EXTENSION,
    ("schedulingalpha.PodGroupSchedulingPolicy", "basic"): N("schedulingalpha.BasicSchedulingPolicy"),
}
# Empty structs the Python client models as plain 'object'.
EMPTY_STRUCTS = {N("schedulingalpha.BasicSchedulingPolicy")}

# Defaults upstream declares in the schema (+default markers).
DEFAULTS = {
    ("core.ContainerPort", "protocol"): "TCP",
    ("core.ServicePort", "protocol"): "TCP",
}

# Enums upstream lists (+enum string types), for the fields users write most.
ENUMS = {
    ("core.PodSpec", "restartPolicy"): ["Always", "Never", "OnFailure"],
    ("core.PodSpec", "dnsPolicy"): ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"],
    ("core.PodSpec", "preemptionPolicy"): ["Never", "PreemptLowerPriority"],
    ("core.Container", "imagePullPolicy"): ["Always", "IfNotPresent", "Never"],
    ("core.Container", "terminationMessagePolicy"): ["FallbackToLogsOnError", "File"],
    ("core.EphemeralContainer", "imagePullPolicy"): ["Always", "IfNotPresent", "Never"],
    ("core.EphemeralContainer", "terminationMessagePolicy"): ["FallbackToLogsOnError", "File"],
    ("core.ContainerPort", "protocol"): ["SCTP", "TCP", "UDP"],
    ("core.ServicePort", "protocol"): ["SCTP", "TCP", "UDP"],
    ("core.Toleration", "operator"): ["Equal", "Exists"],
    ("core.Toleration", "effect"): ["NoExecute", "NoSchedule", "PreferNoSchedule"],
    ("core.Taint", "effect"): ["NoExecute", "NoSchedule", "PreferNoSchedule"],
    ("core.NodeSelectorRequirement", "operator"): ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"],
    ("core.PodStatus", "phase"): ["Failed", "Pending", "Running", "Succeeded", "Unknown"],
    ("core.PodStatus", "qosClass"): ["BestEffort", "Burstable", "Guaranteed"],
    ("core.TopologySpreadConstraint", "whenUnsatisfiable"): ["DoNotSchedule", "ScheduleAnyway"],
    ("core.TopologySpreadConstraint", "nodeAffinityPolicy"): ["Honor", "Ignore"],
    ("core.TopologySpreadConstraint", "nodeTaintsPolicy"): ["Honor", "Ignore"],
    ("core.ServiceSpec", "type"): ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
    ("core.ServiceSpec", "sessionAffinity"): ["ClientIP", "None"],
    ("core.ServiceSpec", "externalTrafficPolicy"): ["Cluster", "Local"],
    ("core.ServiceSpec", "internalTrafficPolicy"): ["Cluster", "Local"],
    ("core.ServiceSpec", "ipFamilyPolicy"): ["PreferDualStack", "RequireDualStack", "SingleStack"],
    ("core.NamespaceStatus", "phase"): ["Active", "Terminating"],
    ("core.NodeStatus", "phase"): ["Pending", "Running", "Terminated"],
    ("apps.DeploymentStrategy", "type"): ["Recreate", "RollingUpdate"],
    ("apps.StatefulSetSpec", "podManagementPolicy"): ["OrderedReady", "Parallel"],
    ("apps.StatefulSetUpdateStrategy", "type"): ["OnDelete", "RollingUpdate"],
    ("core.PersistentVolumeSpec", "persistentVolumeReclaimPolicy"): ["Delete", "Recycle", "Retain"],
    ("core.PersistentVolumeSpec", "volumeMode"): ["Block", "Filesystem"],
    ("core.PersistentVolumeClaimSpec", "volumeMode"): ["Block", "Filesystem"],
    ("core.PersistentVolumeStatus", "phase"): ["Available", "Bound", "Failed", "Pending", "Released"],
    ("core.PersistentVolumeClaimStatus", "phase"): ["Bound", "Lost", "Pending"],
    ("batch.JobSpec", "completionMode"): ["Indexed", "NonIndexed"],
    ("batch.JobSpec", "podReplacementPolicy"): ["Failed", "TerminatingOrFailed"],
    ("batch.PodFailurePolicyRule", "action"): ["Count", "FailIndex", "FailJob", "Ignore"],
    ("batch.PodFailurePolicyOnExitCodesRequirement", "operator"): ["In", "NotIn"],
    ("policy.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"): ["AlwaysAllow", "IfHealthyBudget"],
    ("resource.DeviceToleration", "operator"): ["Equal", "Exists"],
}

# Go type names of named (non-builtin) field types, for decoding error messages.
GO_TYPES = {
    "core.PodSpec": {"restartPolicy": "v1.RestartPolicy", "dnsPolicy": "v1.DNSPolicy",
                     "preemptionPolicy": "v1.PreemptionPolicy", "overhead": "v1.ResourceList"},
    "core.Container": {"imagePullPolicy": "v1.PullPolicy", "terminationMessagePolicy": "v1.TerminationMessagePolicy",
                       "restartPolicy": "v1.ContainerRestartPolicy"},
    "core.EphemeralContainer": {"imagePullPolicy": "v1.PullPolicy",
                                "terminationMessagePolicy": "v1.TerminationMessagePolicy",
                                "restartPolicy": "v1.ContainerRestartPolicy"},
    "core.ContainerPort": {"protocol": "v1.Protocol"},
    "core.ServicePort": {"protocol": "v1.Protocol"},
    "core.ResourceRequirements": {"limits": "v1.ResourceList", "requests": "v1.ResourceList"},
    "core.VolumeResourceRequirements": {"limits": "v1.ResourceList", "requests": "v1.ResourceList"},
    "core.NodeStatus": {"capacity": "v1.ResourceList", "allocatable": "v1.ResourceList", "phase": "v1.NodePhase"},
    "core.Toleration": {"operator": "v1.TolerationOperator", "effect": "v1.TaintEffect"},
    "core.Taint": {"effect": "v1.TaintEffect"},
    "core.NodeSelectorRequirement": {"operator": "v1.NodeSelectorOperator"},
    "core.PodStatus": {"phase": "v1.PodPhase", "qosClass": "v1.PodQOSClass"},
    "core.PodCondition": {"type": "v1.PodConditionType", "status": "v1.ConditionStatus"},
    "core.ServiceSpec": {"type": "v1.ServiceType", "sessionAffinity": "v1.ServiceAffinity"},
    "core.TopologySpreadConstraint": {"whenUnsatisfiable": "v1.UnsatisfiableConstraintAction"},
    "core.Secret": {"type": "v1.SecretType"},
    "meta.LabelSelectorRequirement": {"operator": "v1.LabelSelectorOperator"},
    "meta.Condition": {"status": "v1.ConditionStatus"},
    "meta.ObjectMeta": {"uid": "types.UID"},
    "meta.OwnerReference": {"uid": "types.UID"},
    "apps.DeploymentStrategy": {"type": "v1.DeploymentStrategyType"},
    "batch.JobSpec": {"completionMode": "v1.CompletionMode", "podReplacementPolicy": "v1.PodReplacementPolicy"},
    "resource.ResourceClaimConsumerReference": {"uid": "types.UID"},
    "resource.ExactDeviceRequest": {"allocationMode": "v1.DeviceAllocationMode"},
    "resource.DeviceSubRequest": {"allocationMode": "v1.DeviceAllocationMode"},
    "schedulingalpha.PodGroupSpec": {"disruptionMode": "v1alpha2.DisruptionMode"},
}

# ---------------------------------------------------------------------------------------------
# Our own descriptions (kubectl explain) where upstream has none: JobSet. Every other description is
# upstream's, laid on by upstream_docs.apply_descriptions.
# ---------------------------------------------------------------------------------------------
KIND_DESCRIPTIONS = {
    "jobset.JobSet": "A JobSet runs a group of replicated jobs as one unit.",
    "jobset.JobSetSpec": "The desired state of a job set: its replicated jobs and success, failure and startup policies.",
    "jobset.JobSetStatus": "The observed state of a job set: its conditions, restarts and per-replicated-job counts.",
}
FIELD_DESCRIPTIONS = {
    "metadata": "Standard object metadata.",
    "spec": "The desired state of this {kind}.",
    "status": "The observed state of this {kind}. Read-only for most clients.",
    "apiVersion": "The versioned schema of this object, such as v1 or apps/v1.",
    "kind": "The REST kind this object represents, in CamelCase.",
}

# ---------------------------------------------------------------------------------------------
# JobSet (CRD): tabulated from kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go.
# ---------------------------------------------------------------------------------------------
S = {"type": "string"}
I32 = {"type": "integer", "format": "int32"}
B = {"type": "boolean"}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def js(name: str) -> str:
    return N(f"jobset.{name}")


def jobset_schemas() -> dict[str, dict]:
    atomic_strings = {"type": "array", "items": S, "x-kubernetes-list-type": "atomic"}
    return {
        js("JobSet"): {"type": "object", "properties": {
            "apiVersion": S, "kind": S, "metadata": ref(f"{META}.ObjectMeta"),
            "spec": ref(js("JobSetSpec")), "status": ref(js("JobSetStatus"))}},
        js("JobSetList"): {"type": "object", "required": ["items"], "properties": {
            "apiVersion": S, "kind": S, "metadata": ref(f"{META}.ListMeta"),
            "items": {"type": "array", "items": ref(js("JobSet"))}}},
        js("JobSetSpec"): {"type": "object", "properties": {
            "replicatedJobs": {"type": "array", "items": ref(js("ReplicatedJob")),
                               "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                               "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
            "network": ref(js("Network")),
            "successPolicy": ref(js("SuccessPolicy")),
            "failurePolicy": ref(js("FailurePolicy")),
            "startupPolicy": ref(js("StartupPolicy")),
            "suspend": B,
            "coordinator": ref(js("Coordinator")),
            "managedBy": S,
            "ttlSecondsAfterFinished": {**I32, "minimum": 0},
            "volumeClaimPolicies": {"type": "array", "items": ref(js("VolumeClaimPolicy")),
                                    "x-kubernetes-list-type": "atomic", "maxItems": 50},
            "scheduling": ref(js("JobSetScheduling")),
        }},
        **jobset_scheduling_schemas(),
        js("JobSetStatus"): {"type": "object", "properties": {
            "conditions": {"type": "array", "items": ref(f"{META}.Condition"),
                           "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                           "x-kubernetes-patch-merge-key": "type", "x-kubernetes-patch-strategy": "merge"},
            "restarts": I32,
            "restartsCountTowardsMax": I32,
            "terminalState": S,
            "replicatedJobsStatus": {"type": "array", "items": ref(js("ReplicatedJobStatus")),
                                     "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                     "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
            "previousInPlaceRestartAttempt": {**I32, "minimum": 0},
            "currentInPlaceRestartAttempt": {**I32, "minimum": 0},
        }},
        js("ReplicatedJobStatus"): {"type": "object",
                                    "required": ["name", "ready", "succeeded", "failed", "active", "suspended"],
                                    "properties": {
            "name": S, "ready": I32, "succeeded": I32, "failed": I32, "active": I32, "suspended": I32,
            "jobRestarts": {"type": "array", "items": I32, "x-kubernetes-list-type": "atomic", "maxItems": 1024},
            "jobRestartsCountTowardsMax": {"type": "array", "items": I32, "x-kubernetes-list-type": "atomic",
                                           "maxItems": 1024},
        }},
        js("ReplicatedJob"): {"type": "object", "required": ["name", "template"], "properties": {
            "name": S,
            "groupName": {**S, "default": "default"},
            "template": ref(N("batch.JobTemplateSpec")),
            "replicas": {**I32, "default": 1},
            "dependsOn": {"type": "array", "items": ref(js("DependsOn")), "maxItems": 5,
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
        }},
        js("DependsOn"): {"type": "object", "required": ["name", "status"], "properties": {
            "name": S, "status": {**S, "enum": ["Ready", "Complete"]}}},
        js("Network"): {"type": "object", "properties": {
            "enableDNSHostnames": B, "subdomain": S, "publishNotReadyAddresses": B}},
        js("SuccessPolicy"): {"type": "object", "required": ["operator"], "properties": {
            "operator": {**S, "enum": ["All", "Any"]}, "targetReplicatedJobs": atomic_strings}},
        js("FailurePolicy"): {"type": "object", "properties": {
            "maxRestarts": I32,
            "restartStrategy": {**S, "default": "Recreate", "enum": ["Recreate", "BlockingRecreate", "InPlaceRestart"]},
            "rules": {"type": "array", "items": ref(js("FailurePolicyRule"))},
        }},
        js("FailurePolicyRule"): {"type": "object", "required": ["name", "action"], "properties": {
            "name": S,
            "action": {**S, "enum": ["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts",
                                     "RestartJob", "RestartJobAndIgnoreMaxRestarts"]},
            "onJobFailureReasons": {"type": "array", "items": S},
            "onJobFailureMessagePatterns": {"type": "array", "items": S},
            "targetReplicatedJobs": atomic_strings,
        }},
        js("StartupPolicy"): {"type": "object", "required": ["startupPolicyOrder"], "properties": {
            "startupPolicyOrder": {**S, "enum": ["AnyOrder", "InOrder"]}}},
        js("Coordinator"): {"type": "object", "required": ["replicatedJob"], "properties": {
            "replicatedJob": S, "jobIndex": {"type": "integer"}, "podIndex": {"type": "integer"}}},
        js("VolumeClaimPolicy"): {"type": "object", "properties": {
            "templates": {"type": "array", "items": ref(N("core.PersistentVolumeClaim")),
                          "x-kubernetes-list-type": "atomic", "maxItems": 50},
            "retentionPolicy": ref(js("VolumeRetentionPolicy")),
        }},
        js("VolumeRetentionPolicy"): {"type": "object", "properties": {
            "whenDeleted": {**S, "default": "Delete", "enum": ["Delete", "Retain"]}}},
    }


SCHED_V1ALPHA3 = "io.k8s.api.scheduling.v1alpha3"


def jobset_scheduling_schemas() -> dict[str, dict]:
    """JobSet's `spec.scheduling` (workload-aware scheduling, Kubernetes 1.37) and the
    scheduling.k8s.io/v1alpha3 building blocks it embeds."""
    def blocks(with_claims: bool) -> dict:
        out = {"schedulingPolicy": ref(f"{SCHED_V1ALPHA3}.PodGroupSchedulingPolicy"),
               "schedulingConstraints": ref(f"{SCHED_V1ALPHA3}.PodGroupSchedulingConstraints"),
               "disruptionMode": ref(f"{SCHED_V1ALPHA3}.DisruptionMode")}
        if with_claims:
            out["resourceClaims"] = {"type": "array", "items": ref(f"{SCHED_V1ALPHA3}.PodGroupResourceClaim"),
                                     "x-kubernetes-list-type": "atomic", "maxItems": 4}
        return out
    empty = {"type": "object"}
    return {
        js("JobSetScheduling"): {"type": "object", "properties": {
            **blocks(False),
            "replicatedJobs": {"type": "array", "items": ref(js("ReplicatedJobScheduling")),
                               "x-kubernetes-list-type": "atomic", "maxItems": 50}}},
        js("ReplicatedJobScheduling"): {"type": "object", "required": ["targetReplicatedJobs"], "properties": {
            "targetReplicatedJobs": {"type": "array", "items": {**S, "maxLength": 256}, "minItems": 1,
                                     "maxItems": 50, "x-kubernetes-list-type": "set"},
            **blocks(True),
            "job": ref(js("JobScheduling"))}},
        js("JobScheduling"): {"type": "object", "properties": blocks(True)},
        f"{SCHED_V1ALPHA3}.PodGroupSchedulingPolicy": {"type": "object", "properties": {
            "basic": ref(f"{SCHED_V1ALPHA3}.BasicSchedulingPolicy"),
            "gang": ref(f"{SCHED_V1ALPHA3}.GangSchedulingPolicy")}},
        f"{SCHED_V1ALPHA3}.BasicSchedulingPolicy": empty,
        f"{SCHED_V1ALPHA3}.GangSchedulingPolicy": {"type": "object", "required": ["minCount"],
                                                   "properties": {"minCount": I32}},
        f"{SCHED_V1ALPHA3}.PodGroupSchedulingConstraints": {"type": "object", "properties": {
            "topology": {"type": "array", "items": ref(f"{SCHED_V1ALPHA3}.TopologyConstraint"),
                         "x-kubernetes-list-type": "atomic"}}},
        f"{SCHED_V1ALPHA3}.TopologyConstraint": {"type": "object", "required": ["key"], "properties": {"key": S}},
        f"{SCHED_V1ALPHA3}.DisruptionMode": {"type": "object", "properties": {
            "single": ref(f"{SCHED_V1ALPHA3}.SingleDisruptionMode"),
            "all": ref(f"{SCHED_V1ALPHA3}.AllDisruptionMode")}},
        f"{SCHED_V1ALPHA3}.SingleDisruptionMode": empty,
        f"{SCHED_V1ALPHA3}.AllDisruptionMode": empty,
        f"{SCHED_V1ALPHA3}.PodGroupResourceClaim": {"type": "object", "required": ["name"], "properties": {
            "name": S, "resourceClaimName": S, "resourceClaimTemplateName": S}},
    }


JOBSET_GO_TYPES = {
    "jobset.DependsOn": {"status": "v1alpha2.DependsOnStatus"},
    "jobset.SuccessPolicy": {"operator": "v1alpha2.Operator"},
    "jobset.FailurePolicy": {"restartStrategy": "v1alpha2.JobSetRestartStrategy"},
    "jobset.FailurePolicyRule": {"action": "v1alpha2.FailurePolicyAction"},
    "jobset.StartupPolicy": {"startupPolicyOrder": "v1alpha2.StartupPolicyOptions"},
    "jobset.Coordinator": {"jobIndex": "int", "podIndex": "int"},
}

# Scalar helper types, as upstream's OpenAPI v3 declares them.
HELPER_SCHEMAS = {
    TIME: {"type": "string", "format": "date-time"},
    MICRO_TIME: {"type": "string", "format": "date-time"},
    QUANTITY: {"oneOf": [{"type": "string"}, {"type": "number"}]},
    INT_OR_STRING: {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    RAW_EXTENSION: {"type": "object"},
    FIELDS_V1: {"type": "object"},
    f"{META}.Patch": {"type": "object"},
}


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------
def short(name: str) -> str:
    for key, prefix in PKG.items():
        if name.startswith(prefix + ".") and "." not in name[len(prefix) + 1:]:
            return f"{key}.{name[len(prefix) + 1:]}"
    return name


def required_fields(cls) -> list[str]:
    """JSON names of the fields whose setter rejects None (the generator's `required`)."""
    cfg = Configuration()
    cfg.client_side_validation = True
    probe = cls.__new__(cls)
    probe.local_vars_configuration = cfg
    required = []
    for attr, json_name in cls.attribute_map.items():
        try:
            setattr(probe, attr, None)
        except ValueError:
            required.append(json_name)
    return required


def list_facts(spec: str) -> dict:
    out: dict = {}
    list_part, _, patch_part = spec.partition("|")
    list_type, _, keys = list_part.partition(":")
    out["x-kubernetes-list-type"] = list_type
    if list_type == "map":
        out["x-kubernetes-list-map-keys"] = keys.split(",")
    if patch_part:
        strategy, _, merge_key = patch_part.partition(":")
        out["x-kubernetes-patch-strategy"] = strategy
        if merge_key:
            out["x-kubernetes-patch-merge-key"] = merge_key
    return out


# Python client types that map to one JSON schema whatever the field.
PLAIN_TYPES = {"float": {"type": "number", "format": "double"}, "bool": {"type": "boolean"},
               "date": {"type": "string", "format": "date"}}


class Generator:
    def __init__(self) -> None:
        self.schemas: dict[str, dict] = {}
        self.go_types: dict[str, dict[str, str]] = {}
        self.missing_lists: list[str] = []
        self.used_list_facts: set[tuple[str, str]] = set()

    def walk(self, cls_name: str) -> str:
        name = schema_name(cls_name)
        if name in self.schemas:
            return name
        self.schemas[name] = {}  # placeholder against cycles
        cls = getattr(M, cls_name)
        self.schemas[name] = self.build(cls, name)
        return name

    def build(self, cls, name: str) -> dict:
        sname = short(name)
        props = {}
        for attr, type_str in cls.openapi_types.items():
            field = cls.attribute_map[attr]
            props[field] = self.field_schema(sname, field, type_str)
        schema: dict = {"type": "object", "properties": dict(sorted(props.items()))}
        req = required_fields(cls)
        if req:
            schema["required"] = req
        if sname in ATOMIC_STRUCTS:
            schema["x-kubernetes-map-type"] = "atomic"
        if sname in KIND_DESCRIPTIONS:
            schema["description"] = KIND_DESCRIPTIONS[sname]
        return schema

    def field_schema(self, sname: str, field: str, type_str: str) -> dict:
        key = (sname, field)
        if type_str.startswith("list["):
            item = self.type_schema(sname, field, type_str[5:-1])
            s = {"type": "array", "items": item}
            facts = LIST_FACTS.get(sname, {}).get(field)
            if sname.endswith("List") and field == "items":
                pass  # List kinds: upstream declares no list semantics for items
            elif facts is None and upstream_list_facts(sname, field) is not None:
                s.update(upstream_list_facts(sname, field) or {})
            elif facts is None:
                self.missing_lists.append(f"{sname}.{field}")
            else:
                self.used_list_facts.add(key)
                s.update(list_facts(facts))
        elif type_str.startswith("dict["):
            value_type = type_str[len("dict[str, "):-1]
            s = {"type": "object", "additionalProperties": self.type_schema(sname, field, value_type)}
        else:
            s = self.type_schema(sname, field, type_str)
        if key in FIELD_EXTENSIONS:
            s = dict(s)
            if "$ref" in s:
                s = {"allOf": [{"$ref": s.pop("$ref")}], **s}
            s.update(FIELD_EXTENSIONS[key])
        if key in DEFAULTS:
            s = {"allOf": [s], "default": DEFAULTS[key]} if "$ref" in s else {**s, "default": DEFAULTS[key]}
        if key in ENUMS:
            s = {**s, "enum": ENUMS[key]}
        go_type = GO_TYPES.get(sname, {}).get(field)
        if go_type:
            self.go_types.setdefault(N(sname), {})[field] = go_type
        return s

    def upstream_typed(self, sname: str, field: str, t: str) -> dict | None:
        """For the packages read from upstream (UPSTREAM_PACKAGES): list-valued map values, byte
        strings, int64 and IntOrString fields as upstream's definitions type them; None otherwise."""
        if t.startswith("list["):
            return {"type": "array", "items": self.type_schema(sname, field, t[5:-1])}
        if sname.split(".")[0] not in UPSTREAM_PACKAGES:
            return None
        up = upstream(sname, field)
        if t == "str" and up.get("format") == "byte":
            return {"type": "string", "format": "byte"}
        if t == "int" and up.get("format") == "int64":
            return {"type": "integer", "format": "int64"}
        if t == "object" and (sname, field) not in OBJECT_FIELDS and up.get("$ref", "").endswith(INT_OR_STRING):
            return ref(INT_OR_STRING)
        return None

    def type_schema(self, sname: str, field: str, t: str) -> dict:
        key = (sname, field)
        typed = self.upstream_typed(sname, field, t)
        if typed is not None:
            return typed
        if t == "str":
            if field in QUANTITY_FIELDS.get(sname, ()):
                return ref(QUANTITY)
            if field in BYTE_FIELDS.get(sname, ()):
                return {"type": "string", "format": "byte"}
            return {"type": "string"}
        if t == "int":
            fmt = "int64" if field in INT64_FIELDS.get(sname, ()) else "int32"
            return {"type": "integer", "format": fmt}
        if t in PLAIN_TYPES:
            return dict(PLAIN_TYPES[t])
        if t == "datetime":
            return ref(MICRO_TIME if field in MICRO_TIME_FIELDS.get(sname, ()) else TIME)
        if t == "object":
            if key not in OBJECT_FIELDS:
                raise SystemExit(f"untyped 'object' field {sname}.{field}: add it to OBJECT_FIELDS")
            target = OBJECT_FIELDS[key]
            if target in EMPTY_STRUCTS and target not in self.schemas:
                self.schemas[target] = {"type": "object",
                                        "description": "Standard scheduling: pods of the group are placed one by one."}
            return ref(target)
        if hasattr(M, t):
            return ref(self.walk(t))
        raise SystemExit(f"unknown Python client type {t!r} at {sname}.{field}")

    # ---------------------------------------------------------------------------------
    def run(self) -> None:
        for group, version, kind, cls_name in SERVED_KINDS:
            name = self.walk(cls_name)
            self.mark_kind(name, group, version, kind)
            if kind in NO_LIST:
                continue
            list_cls = LIST_CLASSES.get(cls_name, cls_name + "List")
            list_name = self.walk(list_cls)
            self.mark_kind(list_name, group, version, kind + "List")
        for cls_name in EXTRA_ROOTS:
            self.walk(cls_name)
        self.mark_kind(f"{META}.Status", "", "v1", "Status")
        gvks = [{"group": g, "kind": "DeleteOptions", "version": v} for g, v in SERVED_GVS]
        self.schemas[f"{META}.DeleteOptions"]["x-kubernetes-group-version-kind"] = gvks
        self.schemas[f"{META}.WatchEvent"]["x-kubernetes-group-version-kind"] = [
            {**gvk, "kind": "WatchEvent"} for gvk in gvks]
        for name, schema in HELPER_SCHEMAS.items():
            self.schemas.setdefault(name, schema)
        for name, schema in jobset_schemas().items():
            sname = short(name)
            if sname in KIND_DESCRIPTIONS:
                schema = {**schema, "description": KIND_DESCRIPTIONS[sname]}
            self.schemas[name] = schema
        self.mark_kind(js("JobSet"), "jobset.x-k8s.io", "v1alpha2", "JobSet")
        self.mark_kind(js("JobSetList"), "jobset.x-k8s.io", "v1alpha2", "JobSetList")
        for sname, fields in JOBSET_GO_TYPES.items():
            self.go_types.setdefault(N(sname), {}).update(fields)

        unused = {(s, f) for s, fs in LIST_FACTS.items() for f in fs} - self.used_list_facts
        problems = [f"list field without LIST_FACTS entry: {m}" for m in sorted(set(self.missing_lists))]
        problems += [f"LIST_FACTS entry for a field that does not exist: {s}.{f}" for s, f in sorted(unused)]
        if problems:
            raise SystemExit("\n".join(problems))
        self.check_refs()

    def mark_kind(self, name: str, group: str, version: str, kind: str) -> None:
        schema = self.schemas[name]
        schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
        props = schema.get("properties", {})
        kind_word = kind[:-4] if kind.endswith("List") else kind
        for field, text in FIELD_DESCRIPTIONS.items():
            if field in props and not kind.endswith("List"):
                p = props[field]
                if "$ref" in p:
                    p = {"allOf": [{"$ref": p["$ref"]}]}
                props[field] = {**p, "description": text.format(kind=kind_word)}

    def check_refs(self) -> None:
        check_refs(self.schemas, {})


def check_refs(schemas: dict[str, dict], base: dict[str, dict]) -> None:
    """Stop on a `$ref` to a schema neither `schemas` nor `base` holds."""
    def visit(node, where):
        if isinstance(node, dict):
            r = node.get("$ref")
            if r is not None:
                target = r.rsplit("/", 1)[-1]
                if target not in schemas and target not in base:
                    raise SystemExit(f"dangling $ref {r} in {where}")
            for v in node.values():
                visit(v, where)
        elif isinstance(node, list):
            for v in node:
                visit(v, where)
    for name, schema in schemas.items():
        visit(schema, name)


def render(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed output is stale")
    args = parser.parse_args(argv)
    gen = Generator()
    gen.run()
    apply_descriptions(gen.schemas, "1.36")
    outputs = {OUT_DIR / "components.json": render(gen.schemas),
               OUT_DIR / "gotypes.json": render(gen.go_types)}
    if args.check:
        stale = [str(p) for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        if stale:
            print("stale: " + ", ".join(stale), file=sys.stderr)
            return 1
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for path, text in outputs.items():
        path.write_text(text)
    print(f"wrote {len(gen.schemas)} schemas to {OUT_DIR / 'components.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
