"""What a Kubernetes user expects around the workloads: discovery and docs (`/openapi/v2`,
`kubectl explain` with upstream's descriptions), and the other built-in kinds real tools touch."""

from __future__ import annotations

import pytest

from .conftest import KUBECTL_137, Cluster

UNKNOWN = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"


@pytest.mark.parametrize("binary", ["1.36.4", "1.37.1"])
def test_apply_of_an_unknown_kind_says_no_matches_for_kind(cluster: Cluster, binary: str):
    kwargs = {"binary": KUBECTL_137} if binary == "1.37.1" else {}
    r = cluster.kubectl("apply", "-f", "-", input=UNKNOWN, **kwargs)
    assert r.returncode != 0
    assert 'no matches for kind "Widget" in version "example.com/v1"' in r.stderr, r.stderr


def test_explain_prints_upstreams_descriptions(cluster: Cluster):
    out = cluster.kubectl("explain", "podgroup.spec.schedulingPolicy").check().out
    assert "SchedulingPolicy defines the scheduling policy for this instance of the" in out
    assert "Exactly one policy must be set." in out
    out = cluster.kubectl("explain", "pod.spec.nodeName").check().out
    assert "NodeName indicates in which node this pod is scheduled." in out
    out = cluster.kubectl("explain", "resourceclaim.status.reservedFor").check().out
    assert "ReservedFor indicates which entities are currently allowed to use" in out
    # the same from /openapi/v2 (gnostic protobuf), which kubectl parses whole
    out = cluster.kubectl("explain", "podgroup.spec.schedulingPolicy", "--output=plaintext-openapiv2").check().out
    assert "VERSION:  scheduling.k8s.io/v1alpha2" in out and "Exactly one policy must be set." in out


def test_explain_on_1_37_prints_1_37_descriptions(cluster137: Cluster):
    out = cluster137.kubectl("explain", "podgroup.spec.schedulingPolicy", binary=KUBECTL_137).check().out
    assert "VERSION:    v1beta1" in out
    assert "schedulingPolicy defines the scheduling policy for this instance of the" in out


RC_AND_NETWORKING = """\
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx-e2e}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx-e2e
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec:
  podSelector: {matchLabels: {app: web}}
"""


def test_rc_ingress_netpol_csr_apiservices_are_served(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=RC_AND_NETWORKING).check()
    out = cluster.kubectl("get", "rc,ingress,netpol", "-n", ns).check().out
    assert "replicationcontroller/web   2         " in out
    assert "web.example.com" in out and "nginx-e2e" in out
    assert "networkpolicy.networking.k8s.io/deny   app=web" in out
    pods = cluster.kubectl("get", "pods", "-n", ns, "-l", "app=web", "-o", "json").check().json()["items"]
    assert len(pods) == 2 and all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController" for p in pods)
    cluster.kubectl("scale", "rc", "web", "-n", ns, "--replicas=3").check()
    names = ""
    for _ in range(100):
        names = cluster.kubectl("get", "pods", "-n", ns, "-l", "app=web", "-o", "name").check().out
        if len(names.split()) == 3:
            break
    assert len(names.split()) == 3
    out = cluster.kubectl("get", "apiservices").check().out
    assert "v1.apps" in out and "Local" in out
    assert "True" in out.splitlines()[1]
    bad = cluster.kubectl("apply", "-n", ns, "-f", "-", input="apiVersion: networking.k8s.io/v1\nkind: Ingress\n"
                          "metadata: {name: bad}\nspec: {}\n")
    assert "either `defaultBackend` or `rules` must be specified" in bad.stderr


def test_certificate_approve_issues_a_certificate(cluster: Cluster, tmp_path):
    import base64
    import subprocess
    key, csr = tmp_path / "u.key", tmp_path / "u.csr"
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-subj",
                    "/CN=alice/O=dev", "-out", str(csr)], check=True, capture_output=True)
    manifest = ("apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: alice}\n"
                f"spec:\n  request: {base64.b64encode(csr.read_bytes()).decode()}\n"
                "  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n")
    cluster.kubectl("apply", "-f", "-", input=manifest).check()
    assert "Pending" in cluster.kubectl("get", "csr", "alice").check().out
    assert cluster.kubectl("certificate", "approve", "alice").check().out.strip() \
        == "certificatesigningrequest.certificates.k8s.io/alice approved"
    cert = ""
    for _ in range(100):
        cert = cluster.kubectl("get", "csr", "alice", "-o", "jsonpath={.status.certificate}").check().out
        if cert:
            break
    assert cert, "the signer issued no certificate"
    text = subprocess.run(["openssl", "x509", "-noout", "-subject"], input=base64.b64decode(cert),
                          capture_output=True, check=True).stdout.decode()
    assert "CN = alice" in text
    assert "Approved,Issued" in cluster.kubectl("get", "csr", "alice").check().out


def test_kube_system_has_kinds_system_pods(cluster: Cluster):
    pods = cluster.kubectl("get", "pods", "-n", "kube-system", "-o", "json").check().json()["items"]
    names = {p["metadata"]["name"] for p in pods}
    for prefix in ("etcd-e2e-control-plane", "kube-apiserver-e2e-control-plane", "kube-scheduler-e2e-control-plane",
                   "kube-controller-manager-e2e-control-plane"):
        assert prefix in names
    assert sum(n.startswith("coredns-") for n in names) == 2
    nodes = cluster.kubectl("get", "nodes", "-o", "name").check().out.split()
    assert sum(n.startswith("kube-proxy-") for n in names) == len(nodes)
    assert sum(n.startswith("kindnet-") for n in names) == len(nodes)
    assert all(p["metadata"]["annotations"]["phalanx.dev/simulated"] == "true" for p in pods)
    assert all(p["spec"]["nodeName"] for p in pods)
    etcd: dict = {}
    for _ in range(100):
        etcd = cluster.kubectl("get", "pod", "etcd-e2e-control-plane", "-n", "kube-system", "-o", "json").check().json()
        if etcd["status"].get("phase") == "Running":
            break
    assert etcd["metadata"]["labels"] == {"component": "etcd", "tier": "control-plane"}
    assert etcd["status"]["podIP"] == etcd["status"]["hostIP"]  # host network, as kind's static pods


def test_responses_carry_the_apf_headers(cluster: Cluster):
    r = cluster.kubectl("get", "namespaces", "-v=8")
    fs = [line.split(":", 1)[1].strip() for line in r.stderr.splitlines() if "X-Kubernetes-Pf-Flowschema-Uid" in line]
    pl = [line.split(":", 1)[1].strip() for line in r.stderr.splitlines()
          if "X-Kubernetes-Pf-Prioritylevel-Uid" in line]
    assert fs and pl
    exempt_fs = cluster.kubectl("get", "flowschema", "exempt", "-o", "jsonpath={.metadata.uid}").check().out
    exempt_pl = cluster.kubectl("get", "prioritylevelconfiguration", "exempt",
                                "-o", "jsonpath={.metadata.uid}").check().out
    assert fs[-1] == exempt_fs and pl[-1] == exempt_pl  # the admin is in system:masters
    assert "global-default" in cluster.kubectl("get", "flowschemas").check().out


def _csr_request(tmp_path, cn: str) -> str:
    import base64
    import subprocess
    key, csr = tmp_path / f"{cn}.key", tmp_path / f"{cn}.csr"
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-subj",
                    f"/CN={cn}/O=dev", "-out", str(csr)], check=True, capture_output=True)
    return base64.b64encode(csr.read_bytes()).decode()


def test_a_csr_names_who_asked(cluster: Cluster, tmp_path):
    _CSR_B64 = _csr_request(tmp_path, "who")
    manifest = ("apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: who}\n"
                "spec:\n  request: " + _CSR_B64 + "\n  signerName: example.com/custom\n  usages: [client auth]\n"
                "  username: someone-else\n")
    cluster.kubectl("create", "-f", "-", input=manifest).check()
    spec = cluster.kubectl("get", "csr", "who", "-o", "json").check().json()["spec"]
    assert spec["username"] != "someone-else" and "system:masters" in spec["groups"]
    row = cluster.kubectl("get", "csr", "who", "--no-headers").check().out.split()
    assert row[2:5] == ["example.com/custom", spec["username"], "<none>"] and row[-1] == "Pending"
    cluster.kubectl("certificate", "deny", "who").check()
    assert cluster.kubectl("get", "csr", "who", "--no-headers").check().out.split()[-1] == "Denied"



def test_system_pods_and_apf_objects_survive_a_restart(tmp_path):
    from .conftest import create_cluster
    c = create_cluster(tmp_path, "sysrestart")
    try:
        def uids() -> dict[str, str]:
            pods = c.kubectl("get", "pods", "-n", "kube-system", "-o", "json").check().json()["items"]
            schemas = c.kubectl("get", "flowschemas", "-o", "json").check().json()["items"]
            return {o["metadata"]["name"]: o["metadata"]["uid"] for o in pods + schemas}
        before = uids()
        c.phalanx("stop", "cluster", "--name", "sysrestart").check()
        c.phalanx("start", "cluster", "--name", "sysrestart").check()
        assert uids() == before
        phases = c.kubectl("get", "pods", "-n", "kube-system", "-o", "jsonpath={.items[*].status.phase}").check().out
        assert set(phases.split()) == {"Running"}
    finally:
        c.phalanx("delete", "cluster", "--name", "sysrestart")


def test_the_kinds_on_1_37_with_kubectl_1_37(cluster137: Cluster):
    r = cluster137.kubectl("get", "rc,ingress,netpol,csr,apiservices", "-A", binary=KUBECTL_137).check()
    assert "v1.scheduling.k8s.io" in r.out and "v1beta1.scheduling.k8s.io" in r.out
    assert "v1alpha2.scheduling.k8s.io" not in r.out
    r = cluster137.kubectl("get", "pods", "-n", "kube-system", "-v=8", binary=KUBECTL_137).check()
    assert "kube-apiserver-e2e137-control-plane" in r.out
    assert "X-Kubernetes-Pf-Flowschema-Uid" in r.stderr
    r = cluster137.kubectl("apply", "-f", "-", input=UNKNOWN, binary=KUBECTL_137)
    assert 'no matches for kind "Widget" in version "example.com/v1"' in r.stderr


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.oapi.example.com}
spec:
  group: oapi.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


def _api_service_exists(cluster: Cluster, name: str) -> bool:
    return cluster.kubectl("get", "apiservice", name).returncode == 0


def test_a_crds_group_version_gets_an_api_service_while_served(cluster: Cluster):
    gadget = "apiVersion: oapi.example.com/v1\nkind: Gadget\nmetadata: {name: g}\n"
    assert "no matches for kind" in cluster.kubectl("apply", "-f", "-", input=gadget).stderr
    cluster.kubectl("apply", "-f", "-", input=CRD).check()
    try:
        for _ in range(100):
            if _api_service_exists(cluster, "v1.oapi.example.com"):
                break
        row = cluster.kubectl("get", "apiservice", "v1.oapi.example.com", "--no-headers").check().out.split()
        assert row[1:3] == ["Local", "True"]
    finally:
        cluster.kubectl("delete", "crd", "gadgets.oapi.example.com").check()
    for _ in range(100):
        if not _api_service_exists(cluster, "v1.oapi.example.com"):
            break
    assert not _api_service_exists(cluster, "v1.oapi.example.com")


def test_a_flow_schema_naming_no_priority_level_is_dangling(cluster: Cluster):
    fs = ("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: oapi-dangling}\n"
          "spec:\n  priorityLevelConfiguration: {name: nowhere}\n  matchingPrecedence: 5000\n"
          "  rules:\n  - subjects: [{kind: User, user: {name: nobody}}]\n"
          "    nonResourceRules: [{verbs: [get], nonResourceURLs: [/nothing]}]\n")
    cluster.kubectl("apply", "-f", "-", input=fs).check()
    try:
        row: list[str] = []
        for _ in range(100):
            row = cluster.kubectl("get", "flowschema", "oapi-dangling", "--no-headers").check().out.split()
            if row[-1] != "Unknown":
                break
        assert row[1:4] == ["nowhere", "5000", "<none>"] and row[-1] == "True"
        assert cluster.kubectl("get", "flowschema", "global-default", "--no-headers").check().out.split()[-1] == "False"
    finally:
        cluster.kubectl("delete", "flowschema", "oapi-dangling").check()


def test_a_service_account_falls_under_service_accounts(cluster: Cluster, ns: str):
    cluster.kubectl("create", "serviceaccount", "bot", "-n", ns).check()
    token = cluster.kubectl("create", "token", "bot", "-n", ns).check().out.strip()
    r = cluster.kubectl("--token", token, "get", "--raw", "/version", "-v=8")
    uids = {line.split(":", 1)[0].split()[-1]: line.split(":", 1)[1].strip() for line in r.stderr.splitlines()
            if "X-Kubernetes-Pf-" in line}
    fs = cluster.kubectl("get", "flowschema", "service-accounts", "-o", "jsonpath={.metadata.uid}").check().out
    pl = cluster.kubectl("get", "prioritylevelconfiguration", "workload-low",
                         "-o", "jsonpath={.metadata.uid}").check().out
    assert uids == {"X-Kubernetes-Pf-Flowschema-Uid": fs, "X-Kubernetes-Pf-Prioritylevel-Uid": pl}, r.stderr[-2000:]
