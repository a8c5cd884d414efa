#!/usr/bin/env python3
"""Generate `src/phalanx/api/schemas/components-1.37.json` and `gotypes-1.37.json`: the OpenAPI v3
schemas a Kubernetes 1.37 cluster serves on top of the 1.36 ones in `components.json` (made by
`tools/gen_schemas.py`).

What 1.37 adds is scheduling.k8s.io: Workload and PodGroup at `v1beta1` and `v1alpha3`,
CompositePodGroup at `v1alpha3`. PriorityClass (`scheduling.k8s.io/v1`) and every other kind are
unchanged from 1.36, so they are not repeated here. The overlay also carries `DeleteOptions` and
`WatchEvent` with the new group-versions added to their `x-kubernetes-group-version-kind`.

Run it with the official Python client 37.x on the path (its models are generated from the 1.37
OpenAPI); the output is committed:

    PYTHONPATH=.venv/client-37 .venv/bin/python tools/gen_schemas_137.py          # write
    PYTHONPATH=.venv/client-37 .venv/bin/python tools/gen_schemas_137.py --check  # exit 1 if stale

Where the facts come from, as for 1.36: field names, JSON types and required fields from the client's
models (pydantic: `attribute_map`, `openapi_types`, `model_fields[...].is_required()`); list and
merge semantics, enums and the empty marker structs (`basic: {}`, `single: {}`) tabulated here from
upstream's 1.37 Go types (`staging/src/k8s.io/api/scheduling/v1beta1/types.go`). Descriptions are
upstream's 1.37 ones, from the installed `kubernetes-validate` package (`tools/upstream_docs.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kubernetes.client import models as M
from gen_schemas import check_refs, render
from upstream_docs import apply_descriptions

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "src" / "phalanx" / "api" / "schemas"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
GROUP = "scheduling.k8s.io"
VERSIONS = ("v1beta1", "v1alpha3")
PKG = {v: f"io.k8s.api.scheduling.{v}" for v in VERSIONS}
# Classes the 1.36 components already hold, by Python client class.
BASE_CLASSES = {"V1ObjectMeta": f"{META}.ObjectMeta", "V1ListMeta": f"{META}.ListMeta",
                "V1Condition": f"{META}.Condition"}

SERVED_KINDS = [
    ("v1beta1", "Workload"), ("v1beta1", "PodGroup"),
    ("v1alpha3", "Workload"), ("v1alpha3", "PodGroup"), ("v1alpha3", "CompositePodGroup"),
]

CONDITIONS = "map:type|merge:type"
CLAIMS = "map:name|merge,retainKeys:name"
# Per struct (without version prefix): list field -> "<list-type>[:<keys>][|<patch strategy>[:<merge key>]]".
LIST_FACTS = {
    "WorkloadSpec": {"podGroupTemplates": "map:name", "compositePodGroupTemplates": "map:name"},
    "CompositePodGroupTemplate": {"podGroupTemplates": "map:name", "compositePodGroupTemplates": "map:name"},
    "PodGroupTemplate": {"resourceClaims": CLAIMS},
    "PodGroupSpec": {"resourceClaims": CLAIMS},
    "PodGroupStatus": {"conditions": CONDITIONS, "resourceClaimStatuses": CLAIMS},
    "PodGroupSchedulingConstraints": {"topology": "atomic"},
    "CompositePodGroupSchedulingConstraints": {"topology": "atomic"},
    "CompositePodGroupStatus": {"conditions": CONDITIONS},
}
# Fields the client models as a free-form object: upstream's empty marker structs.
EMPTY_STRUCTS = {
    ("PodGroupSchedulingPolicy", "basic"): "BasicSchedulingPolicy",
    ("DisruptionMode", "single"): "SingleDisruptionMode",
    ("DisruptionMode", "all"): "AllDisruptionMode",
    ("CompositePodGroupSchedulingPolicy", "basic"): "CompositeBasicSchedulingPolicy",
    ("CompositeDisruptionMode", "single"): "SingleCompositeDisruptionMode",
    ("CompositeDisruptionMode", "all"): "AllCompositeDisruptionMode",
}
EMPTY_DESCRIPTIONS = {
    "BasicSchedulingPolicy": "Standard scheduling: pods of the group are placed one by one.",
    "CompositeBasicSchedulingPolicy": "Standard scheduling: child groups are placed independently.",
    "SingleDisruptionMode": "Members of the group may be disrupted one at a time.",
    "AllDisruptionMode": "The group is disrupted as a whole.",
    "SingleCompositeDisruptionMode": "Child groups may be disrupted one at a time.",
    "AllCompositeDisruptionMode": "The composite group is disrupted as a whole.",
}
PREEMPTION_POLICIES = ["Never", "PreemptLowerPriority"]
ENUM_FIELDS = {("PodGroupTemplate", "preemptionPolicy"), ("PodGroupSpec", "preemptionPolicy"),
               ("CompositePodGroupTemplate", "preemptionPolicy"), ("CompositePodGroupSpec", "preemptionPolicy")}
KIND_DESCRIPTIONS = {
    "Workload": "A Workload declares the pod group templates (possibly nested in composite templates) of an "
                "application for workload-aware scheduling.",
    "WorkloadSpec": "The desired state of a workload: its controlling object and exactly one of "
                    "podGroupTemplates or compositePodGroupTemplates.",
    "PodGroupTemplate": "A template from which pod groups are created: scheduling policy, constraints, claims "
                        "and priority.",
    "CompositePodGroupTemplate": "A template from which composite pod groups are created, with the templates "
                                 "of its children.",
    "PodGroup": "A PodGroup is a set of pods scheduled together, for example all-or-nothing as a gang.",
    "PodGroupSpec": "The desired state of a pod group: its workload template, scheduling policy, constraints, "
                    "claims and priority.",
    "PodGroupStatus": "The observed state of a pod group: its conditions and generated resource claims.",
    "PodGroupSchedulingPolicy": "How the pods of a group are scheduled: basic (one by one) or gang (at least "
                                "minCount together).",
    "CompositePodGroup": "A CompositePodGroup groups pod groups (or other composite groups) of one workload "
                         "into a tree scheduled together.",
    "CompositePodGroupSpec": "The desired state of a composite pod group: its workload template, parent, "
                             "scheduling policy and priority.",
    "CompositePodGroupStatus": "The observed state of a composite pod group: its conditions.",
    "CompositePodGroupSchedulingPolicy": "How child groups are scheduled: basic, or gang (at least minGroupCount "
                                         "children together).",
}
FIELD_DESCRIPTIONS = {
    "metadata": "Standard object metadata.",
    "spec": "The desired state of this {kind}.",
    "status": "The observed state of this {kind}. Read-only for most clients.",
    "apiVersion": "The versioned schema of this object, such as v1 or apps/v1.",
    "kind": "The REST kind this object represents, in CamelCase.",
}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


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


def split_class(cls_name: str) -> tuple[str, str]:
    """`V1beta1PodGroupSpec` -> ("v1beta1", "PodGroupSpec")."""
    for version in VERSIONS:
        prefix = "V" + version[1:]
        if cls_name.startswith(prefix):
            return version, cls_name[len(prefix):]
    raise SystemExit(f"no 1.37 scheduling package for Python client class {cls_name}")


class Generator:
    def __init__(self) -> None:
        self.schemas: dict[str, dict] = {}
        self.used_list_facts: set[tuple[str, str]] = set()
        self.missing: list[str] = []

    def walk(self, cls_name: str) -> str:
        if cls_name in BASE_CLASSES:
            return BASE_CLASSES[cls_name]
        version, struct = split_class(cls_name)
        name = f"{PKG[version]}.{struct}"
        if name not in self.schemas:
            self.schemas[name] = {}  # placeholder against cycles
            self.schemas[name] = self.build(getattr(M, cls_name), version, struct)
        return name

    def build(self, cls, version: str, struct: str) -> dict:
        props = {}
        required = []
        for attr, type_str in cls.openapi_types.items():
            field = cls.attribute_map[attr]
            props[field] = self.field_schema(version, struct, field, type_str)
            if cls.model_fields[attr].is_required():
                required.append(field)
        schema: dict = {"type": "object", "properties": dict(sorted(props.items()))}
        if required:
            schema["required"] = required
        if struct in KIND_DESCRIPTIONS:
            schema["description"] = KIND_DESCRIPTIONS[struct]
        return schema

    def field_schema(self, version: str, struct: str, field: str, type_str: str) -> dict:
        if type_str.startswith("List["):
            s = {"type": "array", "items": self.type_schema(version, struct, field, type_str[5:-1])}
            facts = LIST_FACTS.get(struct, {}).get(field)
            if struct.endswith("List") and field == "items":
                return s
            if facts is None:
                self.missing.append(f"{struct}.{field}")
                return s
            self.used_list_facts.add((struct, field))
            return {**s, **list_facts(facts)}
        s = self.type_schema(version, struct, field, type_str)
        if (struct, field) in ENUM_FIELDS:
            s = {**s, "enum": PREEMPTION_POLICIES}
        return s

    def type_schema(self, version: str, struct: str, field: str, t: str) -> dict:
        simple = {"str": {"type": "string"}, "int": {"type": "integer", "format": "int32"},
                  "bool": {"type": "boolean"}}
        if t in simple:
            return dict(simple[t])
        if t == "object":
            empty = EMPTY_STRUCTS.get((struct, field))
            if empty is None:
                raise SystemExit(f"untyped 'object' field {struct}.{field}: add it to EMPTY_STRUCTS")
            name = f"{PKG[version]}.{empty}"
            self.schemas[name] = {"type": "object", "description": EMPTY_DESCRIPTIONS[empty]}
            return ref(name)
        if hasattr(M, t):
            return ref(self.walk(t))
        raise SystemExit(f"unknown Python client type {t!r} at {struct}.{field}")

    def mark_kind(self, name: str, version: str, kind: str) -> None:
        schema = self.schemas[name]
        schema["x-kubernetes-group-version-kind"] = [{"group": GROUP, "kind": kind, "version": version}]
        if kind.endswith("List"):
            return
        props = schema.get("properties", {})
        for field, text in FIELD_DESCRIPTIONS.items():
            if field in props:
                p = props[field]
                if "$ref" in p:
                    p = {"allOf": [{"$ref": p["$ref"]}]}
                props[field] = {**p, "description": text.format(kind=kind)}

    def run(self, base: dict[str, dict]) -> None:
        for version, kind in SERVED_KINDS:
            prefix = "V" + version[1:]
            self.mark_kind(self.walk(prefix + kind), version, kind)
            self.mark_kind(self.walk(prefix + kind + "List"), version, kind + "List")
        new_gvks = [{"group": GROUP, "kind": "DeleteOptions", "version": v} for v in VERSIONS]
        for name, kind in ((f"{META}.DeleteOptions", "DeleteOptions"), (f"{META}.WatchEvent", "WatchEvent")):
            schema = json.loads(json.dumps(base[name]))
            gvks = schema["x-kubernetes-group-version-kind"] + [{**g, "kind": kind} for g in new_gvks]
            schema["x-kubernetes-group-version-kind"] = sorted(gvks, key=lambda g: (g["group"], g["version"]))
            self.schemas[name] = schema
        unused = {(s, f) for s, fs in LIST_FACTS.items() for f in fs} - self.used_list_facts
        problems = [f"list field without LIST_FACTS entry: {m}" for m in sorted(set(self.missing))]
        problems += [f"LIST_FACTS entry for a field that does not exist: {s}.{f}" for s, f in sorted(unused)]
        if problems:
            raise SystemExit("\n".join(problems))
        check_refs(self.schemas, base)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed output is stale")
    args = parser.parse_args(argv)
    base = json.loads((OUT_DIR / "components.json").read_text())
    gen = Generator()
    gen.run(base)
    apply_descriptions(gen.schemas, "1.37")
    outputs = {OUT_DIR / "components-1.37.json": render(gen.schemas),
               OUT_DIR / "gotypes-1.37.json": render({})}
    if args.check:
        stale = [str(p) for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        if stale:
            print("stale: " + ", ".join(stale), file=sys.stderr)
            return 1
        return 0
    for path, text in outputs.items():
        path.write_text(text)
    print(f"wrote {len(gen.schemas)} schemas to {OUT_DIR / 'components-1.37.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
