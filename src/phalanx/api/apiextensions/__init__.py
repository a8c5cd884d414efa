"""apiextensions.k8s.io/v1: CustomResourceDefinitions and the custom resources they define.

Modules, by role:
- `crd`: the CustomResourceDefinition kind (defaults, accepted names, conditions, printing);
- `crdvalidation`: validation of a CRD (names, versions, structural schemas) in upstream's words;
- `schema`: pruning, defaulting and validation of custom objects against a structural schema;
- `celrules`: `x-kubernetes-validations` CEL rules (`self`, `oldSelf`);
- `custom`: the ResourceType + Strategy of each served version, and its OpenAPI components;
- `jsonpath`: the JSONPath of printer columns and scale paths;
- `crdschema`: the OpenAPI schema of the CustomResourceDefinition kind itself.

The API server registers the custom types of established CRDs as they are written and at start
(`apiserver/customresources.py`).
"""

from __future__ import annotations

from .. import openapi
from ..registry import ResourceType, register
from .crd import CRDStrategy
from .crdschema import CRD_SCHEMAS

GROUP = "apiextensions.k8s.io"

CUSTOM_RESOURCE_DEFINITIONS = register(ResourceType(
    GROUP, "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False,
    strategy=CRDStrategy(), short_names=["crd", "crds"], categories=["api-extensions"], subresources=["status"]))

openapi.set_custom_schemas(GROUP, CRD_SCHEMAS)
