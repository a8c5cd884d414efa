"""Lists in chunks and watches, as kubectl drives them against a real cluster.

`kubectl get --chunk-size=37` pages through a large set; every page of one list reads the same
snapshot, whatever is written between the pages; bad list and watch parameters get upstream's
answers."""

from __future__ import annotations

import json
import subprocess
import urllib.parse

from .conftest import Cluster

COUNT = 300
CHUNK = 37


def configmaps(ns: str, names: list[str]) -> str:
    """A multi-document manifest (JSON documents are YAML) for `kubectl create -f -`."""
    return "\n---\n".join(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": n, "namespace": ns}, "data": {"k": n}})
                           for n in names)


def raw(cluster: Cluster, path: str) -> subprocess.CompletedProcess:
    return cluster.kubectl("get", "--raw", path)  # type: ignore[return-value]


def test_get_in_chunks_of_37_across_a_large_set(cluster: Cluster, ns: str):
    names = [f"cm-{i:04d}" for i in range(COUNT)]
    cluster.kubectl("create", "-f", "-", input=configmaps(ns, names), timeout=300).check()
    out = cluster.kubectl("get", "configmaps", "-n", ns, f"--chunk-size={CHUNK}", "-o", "name", "-v=6").check()
    got = [n.removeprefix("configmap/") for n in out.out.split() if n.startswith("configmap/cm-")]
    assert got == names
    pages = -(-(COUNT + 1) // CHUNK)  # the namespace's kube-root-ca.crt may be listed too
    assert out.stderr.count(f"limit={CHUNK}") >= pages - 1
    table = cluster.kubectl("get", "configmaps", "-n", ns, f"--chunk-size={CHUNK}", "--no-headers").check()
    assert [line.split()[0] for line in table.out.splitlines() if line.startswith("cm-")] == names


def test_pages_of_one_list_read_one_snapshot_while_objects_come_and_go(cluster: Cluster, ns: str):
    names = [f"cm-{i:04d}" for i in range(COUNT)]
    cluster.kubectl("create", "-f", "-", input=configmaps(ns, names), timeout=300).check()
    base = f"/api/v1/namespaces/{ns}/configmaps?limit={CHUNK}"
    first = json.loads(raw(cluster, base).check().out)
    rv = first["metadata"]["resourceVersion"]
    seen = [o["metadata"]["name"] for o in first["items"]]
    token = first["metadata"]["continue"]
    page_rvs = {rv}
    step = 0
    while token:
        # Between pages: delete one object not yet listed, create one that sorts among the rest.
        step += 1
        cluster.kubectl("delete", "configmap", "-n", ns, f"cm-{(step * 41) % COUNT:04d}", "--wait=false").check()
        cluster.kubectl("create", "configmap", "-n", ns, f"cm-{(step * 53) % COUNT:04d}-new").check()
        page = json.loads(raw(cluster, f"{base}&continue={urllib.parse.quote(token)}").check().out)
        page_rvs.add(page["metadata"]["resourceVersion"])
        seen += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue")
    assert page_rvs == {rv}
    assert [n for n in seen if n.startswith("cm-")] == names  # the set at the first page's version
    now = cluster.kubectl("get", "configmaps", "-n", ns, "-o", "name").check().out.split()
    assert f"configmap/cm-{41 % COUNT:04d}" not in now and f"configmap/cm-{53 % COUNT:04d}-new" in now


def test_bad_list_and_watch_parameters(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "c", "-n", ns).check()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    everything = json.loads(raw(cluster, f"{path}?limit=-1").check().out)
    assert [o["metadata"]["name"] for o in everything["items"] if o["metadata"]["name"] == "c"] == ["c"]
    bad = raw(cluster, f"{path}?resourceVersion=garbage")
    assert bad.returncode != 0 and "invalid resource version" in bad.stderr
    bad = raw(cluster, f"{path}?watch=true&timeoutSeconds=nan")
    assert bad.returncode != 0 and 'strconv.ParseInt: parsing "nan": invalid syntax' in bad.stderr
    ahead = int(everything["metadata"]["resourceVersion"]) + 1_000_000
    bad = raw(cluster, f"{path}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan")
    assert bad.returncode != 0 and "Too large resource version" in bad.stderr


def test_watch_ends_at_its_timeout_and_sees_changes(cluster: Cluster, ns: str):
    cluster.kubectl("create", "configmap", "w0", "-n", ns).check()
    rv = json.loads(cluster.kubectl("get", "configmap", "w0", "-n", ns, "-o", "json").check().out)[
        "metadata"]["resourceVersion"]
    watch = cluster.kubectl_popen("get", "--raw",
                                  f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}"
                                  "&timeoutSeconds=3")
    cluster.kubectl("create", "configmap", "w1", "-n", ns).check()
    out, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w1")]
