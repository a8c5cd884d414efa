"""OpenAPI of a Kubernetes 1.37 cluster: the scheduling.k8s.io v1beta1/v1alpha3 schemas on top of
1.36's, used for documents, strict decoding, type errors and patch metadata; a 1.36 cluster's
documents are what they were."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from phalanx.api import openapi, registry
from phalanx.api import scheduling  # noqa: F401  (registers the kinds)

REPO = Path(__file__).resolve().parents[3]
CLIENT_37 = Path(sys.executable).parent.parent / "client-37"
SCHEDULING = "scheduling.k8s.io"


def served(version: str, release: str) -> list:
    return [rt for rt in registry.all_types() if rt.group == SCHEDULING and rt.version == version
            and registry.served_in(rt, release)]


def test_a_1_36_cluster_sees_exactly_the_1_36_schemas():
    base = orjson.loads((REPO / "src/phalanx/api/schemas/components.json").read_bytes())
    custom = ("io.k8s.apiextensions-apiserver.",)  # the CRD kind's schemas are served by every release
    assert {k: v for k, v in openapi.components("1.36").items() if not k.startswith(custom)} == base
    assert openapi.schema_for_gvk(SCHEDULING, "v1beta1", "PodGroup", "1.36") is None
    digest = hashlib.sha512((REPO / "src/phalanx/api/schemas/components.json").read_bytes()).hexdigest()
    h = hashlib.sha512()
    h.update(digest.encode())
    rts = served("v1alpha2", "1.36")
    h.update(repr((SCHEDULING, "v1alpha2", openapi._resources_key(rts))).encode())
    assert openapi.document_hash(SCHEDULING, "v1alpha2", rts, "1.36") == h.hexdigest().upper()
    assert openapi.openapi_v3_document(SCHEDULING, "v1alpha2", rts, "1.36")["info"]["version"] == "v1.36.0"


def test_1_37_documents_serve_the_new_kinds():
    doc = openapi.openapi_v3_document(SCHEDULING, "v1beta1", served("v1beta1", "1.37"), "1.37")
    assert doc["info"]["version"] == "v1.37.0"
    schemas = doc["components"]["schemas"]
    spec = schemas["io.k8s.api.scheduling.v1beta1.PodGroupSpec"]
    assert spec["required"] == ["schedulingPolicy"]
    assert spec["properties"]["preemptionPolicy"]["enum"] == ["Never", "PreemptLowerPriority"]
    assert schemas["io.k8s.api.scheduling.v1beta1.GangSchedulingPolicy"]["required"] == ["minCount"]
    assert {"group": SCHEDULING, "kind": "DeleteOptions", "version": "v1beta1"} in \
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]["x-kubernetes-group-version-kind"]
    cpg = openapi.openapi_v3_document(SCHEDULING, "v1alpha3", served("v1alpha3", "1.37"), "1.37")
    assert "io.k8s.api.scheduling.v1alpha3.CompositePodGroupSpec" in cpg["components"]["schemas"]
    assert any(p.endswith("/compositepodgroups/{name}/status") for p in cpg["paths"])


def test_1_37_strict_decoding_and_type_errors():
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "a"},
          "spec": {"schedulingPolicy": {"gang": {"minCount": 2, "minCout": 3}}, "disruptionMode": {"single": {}}}}
    assert openapi.unknown_fields(SCHEDULING, "v1beta1", "PodGroup", pg, release="1.37") == [
        "spec.schedulingPolicy.gang.minCout"]
    assert openapi.unknown_fields(SCHEDULING, "v1beta1", "PodGroup", pg, release="1.36") == []
    bad = {"spec": {"schedulingPolicy": {"gang": {"minCount": "two"}}}}
    assert openapi.type_errors(SCHEDULING, "v1beta1", "PodGroup", bad, "1.37") == [
        "json: cannot unmarshal string into Go struct field GangSchedulingPolicy.spec.schedulingPolicy.gang.minCount "
        "of type int32"]


def test_1_37_patch_meta_knows_template_and_claim_keys():
    meta = openapi.patch_meta(SCHEDULING, "v1beta1", "Workload", "1.37")
    templates = meta.field("spec").field("podGroupTemplates")
    assert templates.list_type == "map" and templates.map_keys == ["name"]
    claims = openapi.patch_meta(SCHEDULING, "v1beta1", "PodGroup", "1.37").field("spec").field("resourceClaims")
    assert claims.merge_key == "name"


def test_committed_1_37_schemas_match_the_generator():
    if not CLIENT_37.is_dir():
        pytest.skip("the kubernetes 37.x client is not installed at .venv/client-37")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(CLIENT_37), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_schemas_137.py"), "--check"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
