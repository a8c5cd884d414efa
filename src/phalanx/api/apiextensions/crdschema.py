"""The OpenAPI v3 schema of `apiextensions.k8s.io/v1` CustomResourceDefinition (and its list).

Written after upstream's published schema (`io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.*`),
with the fields `kubectl explain crd` and strict field validation need. A version's
`schema.openAPIV3Schema` (upstream's recursive JSONSchemaProps) is kept as a free-form object with
its unknown fields preserved: the API server checks it as a structural schema instead.
"""

from __future__ import annotations

_P = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
_META = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1."


def _ref(name: str, description: str = "") -> dict:
    out: dict = {"allOf": [{"$ref": f"#/components/schemas/{_P}{name}"}]}
    if description:
        out["description"] = description
    return out


def _str(description: str) -> dict:
    return {"type": "string", "description": description}


def _strings(description: str, atomic: bool = True) -> dict:
    out = {"type": "array", "items": {"type": "string", "default": ""}, "description": description}
    if atomic:
        out["x-kubernetes-list-type"] = "atomic"
    return out


_BOOL = {"type": "boolean"}
_FREE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

_NAMES = {
    "description": "CustomResourceDefinitionNames indicates the names to serve this CustomResourceDefinition",
    "type": "object", "required": ["plural", "kind"],
    "properties": {
        "categories": _strings("categories is a list of grouped resources this custom resource belongs to (e.g. 'all')."),
        "kind": _str("kind is the serialized kind of the resource. It is normally CamelCase and singular."),
        "listKind": _str("listKind is the serialized kind of the list for this resource. Defaults to \"`kind`List\"."),
        "plural": _str("plural is the plural name of the resource to serve: /apis/<group>/<version>/.../<plural>."),
        "shortNames": _strings("shortNames are short names for the resource, exposed in API discovery documents."),
        "singular": _str("singular is the singular name of the resource. Defaults to the lowercased `kind`."),
    }}

_COLUMN = {
    "description": "CustomResourceColumnDefinition specifies a column for server side printing.",
    "type": "object", "required": ["name", "type", "jsonPath"],
    "properties": {
        "description": _str("description is a human readable description of this column."),
        "format": _str("format is an optional OpenAPI type definition for this column."),
        "jsonPath": _str("jsonPath is a simple JSON path evaluated against each custom resource to produce the "
                         "value for this column."),
        "name": _str("name is a human readable name for the column."),
        "priority": {"type": "integer", "format": "int32",
                     "description": "priority is an integer defining the relative importance of this column "
                                    "compared to others."},
        "type": _str("type is an OpenAPI type definition for this column."),
    }}

_SCALE = {
    "description": "CustomResourceSubresourceScale defines how to serve the scale subresource for CustomResources.",
    "type": "object", "required": ["specReplicasPath", "statusReplicasPath"],
    "properties": {
        "labelSelectorPath": _str("labelSelectorPath defines the JSON path inside of a custom resource that "
                                  "corresponds to Scale `status.selector`."),
        "specReplicasPath": _str("specReplicasPath defines the JSON path inside of a custom resource that "
                                 "corresponds to Scale `spec.replicas`."),
        "statusReplicasPath": _str("statusReplicasPath defines the JSON path inside of a custom resource that "
                                   "corresponds to Scale `status.replicas`."),
    }}

_SUBRESOURCES = {
    "description": "CustomResourceSubresources defines the status and scale subresources for CustomResources.",
    "type": "object",
    "properties": {
        "scale": _ref("CustomResourceSubresourceScale", "scale indicates the custom resource should serve a "
                      "`/scale` subresource that returns an `autoscaling/v1` Scale object."),
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                   "description": "status indicates the custom resource should serve a `/status` subresource."},
    }}

_VERSION = {
    "description": "CustomResourceDefinitionVersion describes a version for CRD.",
    "type": "object", "required": ["name", "served", "storage"],
    "properties": {
        "additionalPrinterColumns": {"type": "array", "x-kubernetes-list-type": "atomic",
                                     "items": {"$ref": f"#/components/schemas/{_P}CustomResourceColumnDefinition",
                                               "default": {}},
                                     "description": "additionalPrinterColumns specifies additional columns "
                                                    "returned in Table output."},
        "deprecated": {**_BOOL, "description": "deprecated indicates this version of the custom resource API "
                                               "is deprecated."},
        "deprecationWarning": _str("deprecationWarning overrides the default warning returned to API clients."),
        "name": _str("name is the version name, e.g. \u201cv1\u201d, \u201cv2beta1\u201d, etc."),
        "schema": _ref("CustomResourceValidation", "schema describes the schema used for validation, pruning, "
                       "and defaulting of this version of the custom resource."),
        "selectableFields": {"type": "array", "x-kubernetes-list-type": "atomic", "items": _FREE,
                             "description": "selectableFields specifies paths to fields that may be used as "
                                            "field selectors."},
        "served": {**_BOOL, "default": False,
                   "description": "served is a flag enabling/disabling this version from being served via REST APIs"},
        "storage": {**_BOOL, "default": False,
                    "description": "storage indicates this version should be used when persisting custom "
                                   "resources to storage. There must be exactly one version with storage=true."},
        "subresources": _ref("CustomResourceSubresources", "subresources specify what subresources this version "
                             "of the defined custom resource have."),
    }}

_VALIDATION = {
    "description": "CustomResourceValidation is a list of validation methods for CustomResources.",
    "type": "object",
    "properties": {"openAPIV3Schema": {**_FREE, "description": "openAPIV3Schema is the OpenAPI v3 schema to use "
                                                               "for validation and pruning."}},
}

_SPEC = {
    "description": "CustomResourceDefinitionSpec describes how a user wants their resource to appear",
    "type": "object", "required": ["group", "names", "scope", "versions"],
    "properties": {
        "conversion": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                       "properties": {"strategy": _str("strategy specifies how custom resources are converted "
                                                       "between versions. Allowed values are: - `\"None\"`: The "
                                                       "converter only change the apiVersion and would not touch "
                                                       "any other field in the custom resource. - `\"Webhook\"`: "
                                                       "API Server will call to an external webhook to do the "
                                                       "conversion.")},
                       "description": "conversion defines conversion settings for the CRD."},
        "group": _str("group is the API group of the defined custom resource. Must match the name of the "
                      "CustomResourceDefinition (in the form `<names.plural>.<group>`)."),
        "names": _ref("CustomResourceDefinitionNames", "names specify the resource and kind names for the custom "
                      "resource."),
        "preserveUnknownFields": {**_BOOL, "description": "preserveUnknownFields indicates that object fields "
                                                          "which are not specified in the OpenAPI schema should "
                                                          "be preserved when persisting to storage."},
        "scope": _str("scope indicates whether the defined custom resource is cluster- or namespace-scoped. "
                      "Allowed values are `Cluster` and `Namespaced`."),
        "versions": {"type": "array", "x-kubernetes-list-type": "atomic",
                     "items": {"$ref": f"#/components/schemas/{_P}CustomResourceDefinitionVersion", "default": {}},
                     "description": "versions is the list of all API versions of the defined custom resource."},
    }}

_CONDITION = {
    "description": "CustomResourceDefinitionCondition contains details for the current condition of this pod.",
    "type": "object", "required": ["type", "status"],
    "properties": {
        "lastTransitionTime": {"allOf": [{"$ref": f"{_META}Time"}],
                               "description": "lastTransitionTime last time the condition transitioned from one "
                                              "status to another."},
        "message": _str("message is a human-readable message indicating details about last transition."),
        "reason": _str("reason is a unique, one-word, CamelCase reason for the condition's last transition."),
        "status": _str("status is the status of the condition. Can be True, False, Unknown."),
        "type": _str("type is the type of the condition. Types include Established, NamesAccepted and "
                     "Terminating."),
    }}

_STATUS = {
    "description": "CustomResourceDefinitionStatus indicates the state of the CustomResourceDefinition",
    "type": "object",
    "properties": {
        "acceptedNames": _ref("CustomResourceDefinitionNames", "acceptedNames are the names that are actually "
                              "being used to serve discovery."),
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                       "items": {"$ref": f"#/components/schemas/{_P}CustomResourceDefinitionCondition",
                                 "default": {}},
                       "description": "conditions indicate state for particular aspects of a "
                                      "CustomResourceDefinition"},
        "storedVersions": _strings("storedVersions lists all versions of CustomResources that were ever "
                                   "persisted."),
    }}

_CRD = {
    "description": "CustomResourceDefinition represents a resource that should be exposed on the API server. "
                   "Its name MUST be in the format <.spec.name>.<.spec.group>.",
    "type": "object", "required": ["spec"],
    "properties": {
        "apiVersion": _str("APIVersion defines the versioned schema of this representation of an object."),
        "kind": _str("Kind is a string value representing the REST resource this object represents."),
        "metadata": {"allOf": [{"$ref": f"{_META}ObjectMeta"}], "default": {},
                     "description": "Standard object's metadata."},
        "spec": _ref("CustomResourceDefinitionSpec", "spec describes how the user wants the resources to appear"),
        "status": _ref("CustomResourceDefinitionStatus", "status indicates the actual state of the "
                       "CustomResourceDefinition"),
    },
    "x-kubernetes-group-version-kind": [{"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
                                         "version": "v1"}],
}

_CRD_LIST = {
    "description": "CustomResourceDefinitionList is a list of CustomResourceDefinition objects.",
    "type": "object", "required": ["items"],
    "properties": {
        "apiVersion": _str("APIVersion defines the versioned schema of this representation of an object."),
        "items": {"type": "array", "description": "items list individual CustomResourceDefinition objects",
                  "items": {"$ref": f"#/components/schemas/{_P}CustomResourceDefinition", "default": {}}},
        "kind": _str("Kind is a string value representing the REST resource this object represents."),
        "metadata": {"allOf": [{"$ref": f"{_META}ListMeta"}], "default": {},
                     "description": "Standard object's metadata."},
    },
    "x-kubernetes-group-version-kind": [{"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinitionList",
                                         "version": "v1"}],
}

CRD_SCHEMAS: dict[str, dict] = {
    _P + "CustomResourceDefinition": _CRD, _P + "CustomResourceDefinitionList": _CRD_LIST,
    _P + "CustomResourceDefinitionSpec": _SPEC, _P + "CustomResourceDefinitionStatus": _STATUS,
    _P + "CustomResourceDefinitionNames": _NAMES, _P + "CustomResourceDefinitionVersion": _VERSION,
    _P + "CustomResourceDefinitionCondition": _CONDITION, _P + "CustomResourceColumnDefinition": _COLUMN,
    _P + "CustomResourceSubresources": _SUBRESOURCES, _P + "CustomResourceSubresourceScale": _SCALE,
    _P + "CustomResourceValidation": _VALIDATION,
}
