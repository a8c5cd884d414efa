"""StatefulSets and simulated storage driven by the real kubectl: a StatefulSet with a volume claim
template comes up in order, each claim Bound to a volume the simulated provisioner made on the
pod's node, `kubectl rollout status` follows it, an image update rolls pods from the highest
ordinal down, scaling down removes pods from the top and keeps their claims, and `kubectl get
pvc,pv,sc` print upstream's columns."""

from __future__ import annotations

import yaml

from .conftest import Cluster, create_cluster
from .test_workloads import get_table, jsonpath, poll

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80, "name": "web"}]}}


def statefulset(image: str = "registry.k8s.io/nginx-slim:0.24") -> dict:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": {"serviceName": "web", "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": image,
                                                           "ports": [{"containerPort": 80, "name": "web"}],
                                                           "volumeMounts": [{"name": "www",
                                                                             "mountPath": "/usr/share/nginx/html"}]}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def sts_events(cluster: Cluster, ns: str, reason: str) -> list[str]:
    out = cluster.kubectl("get", "events", "-n", ns, "--field-selector",
                          f"involvedObject.kind=StatefulSet,reason={reason}", "-o", "json").check().json()
    items = sorted(out["items"], key=lambda e: (e.get("eventTime") or e.get("firstTimestamp") or "",
                                                 e["metadata"]["name"]))
    return [e["message"] for e in items]


def delete_counts(cluster: Cluster, ns: str) -> dict[str, int]:
    out = cluster.kubectl("get", "events", "-n", ns, "--field-selector",
                          "involvedObject.kind=StatefulSet,reason=SuccessfulDelete", "-o", "json").check().json()
    return {e["message"].split()[2]: (e.get("series") or {}).get("count") or e.get("count") or 1
            for e in out["items"]}


def rollout(cluster: Cluster, ns: str) -> str:
    return cluster.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=90s", timeout=120).check().out


def test_statefulset_with_claims_rolls_out_updates_and_scales_in_order(cluster: Cluster, ns: str):
    k = cluster.kubectl
    k("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all([SERVICE, statefulset()])).check()
    out = rollout(cluster, ns)
    # kubectl reads the defaulted `partition: 0` as a partitioned roll out, on a real cluster too
    assert out.strip().splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."

    assert [m for m in sts_events(cluster, ns, "SuccessfulCreate") if " Pod " in m and "Claim" not in m] == [
        f"create Pod web-{i} in StatefulSet web successful" for i in range(3)]
    pvcs = get_table(cluster, ns, "pvc")
    assert [r["NAME"] for r in pvcs] == ["www-web-0", "www-web-1", "www-web-2"]
    for row in pvcs:
        assert (row["STATUS"], row["CAPACITY"], row["ACCESS MODES"], row["STORAGECLASS"],
                row["VOLUMEATTRIBUTESCLASS"]) == ("Bound", "1Gi", "RWO", "standard", "<unset>")
        assert row["VOLUME"].startswith("pvc-")
        pv = k("get", "pv", row["VOLUME"], "-o", "json").check().json()
        assert pv["status"]["phase"] == "Bound" and pv["spec"]["claimRef"]["name"] == row["NAME"]
        node = jsonpath(cluster, ns, f"pod/web-{row['NAME'][-1]}", "{.spec.nodeName}")
        assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [node]

    pvs = [r for r in get_table(cluster, ns, "pv") if r["CLAIM"].startswith(f"{ns}/")]
    assert sorted(r["CLAIM"] for r in pvs) == [f"{ns}/www-web-{i}" for i in range(3)]
    assert {(r["CAPACITY"], r["ACCESS MODES"], r["RECLAIM POLICY"], r["STATUS"], r["STORAGECLASS"]) for r in pvs} == \
        {("1Gi", "RWO", "Delete", "Bound", "standard")}
    sc = get_table(cluster, ns, "sc")
    assert sc == [{"NAME": "standard (default)", "PROVISIONER": "rancher.io/local-path", "RECLAIMPOLICY": "Delete",
                   "VOLUMEBINDINGMODE": "WaitForFirstConsumer", "ALLOWVOLUMEEXPANSION": "false",
                   "AGE": sc[0]["AGE"]}]
    assert get_table(cluster, ns, "sts")[0]["READY"] == "3/3"
    together = k("get", "pvc,pv,sc", "-n", ns).check().out
    headers = [line.split() for line in together.splitlines() if line.startswith("NAME")]
    assert headers == [
        ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"],
        ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM", "STORAGECLASS",
         "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"],
        ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]]
    assert "storageclass.storage.k8s.io/standard (default)" in together

    k("set", "image", "sts/web", "-n", ns, "nginx=registry.k8s.io/nginx-slim:0.25").check()
    rollout(cluster, ns)
    assert sts_events(cluster, ns, "SuccessfulDelete") == [
        f"delete Pod web-{i} in StatefulSet web successful" for i in (2, 1, 0)]
    images = jsonpath(cluster, ns, "pods", "{.items[*].spec.containers[0].image}").split()
    assert images == ["registry.k8s.io/nginx-slim:0.25"] * 3
    revisions = get_table(cluster, ns, "controllerrevisions")
    assert sorted(r["REVISION"] for r in revisions) == ["1", "2"]
    assert {r["CONTROLLER"] for r in revisions} == {"statefulset.apps/web"}

    k("scale", "sts/web", "-n", ns, "--replicas=1").check()
    assert poll(lambda: jsonpath(cluster, ns, "pods", "{.items[*].metadata.name}").split() == ["web-0"], timeout=90)
    # the same messages as during the update: the recorder counts them again (order: the unit tests)
    assert poll(lambda: delete_counts(cluster, ns) == {"web-2": 2, "web-1": 2, "web-0": 1}, timeout=30)
    assert [r["NAME"] for r in get_table(cluster, ns, "pvc")] == ["www-web-0", "www-web-1", "www-web-2"]


def test_statefulset_and_volumes_survive_a_restart_on_1_37(tmp_path):
    """On a 1.37 cluster: the set's pods and claims come back as the store holds them after a stop
    and start, and the restarted controllers carry on (a scale-up gets its claim bound)."""
    c = create_cluster(tmp_path, "sts137", kubernetes=None)
    try:
        k = c.kubectl
        sts = statefulset()
        sts["spec"]["replicas"] = 2
        k("apply", "-f", "-", input=yaml.safe_dump_all([SERVICE, sts])).check()
        c.kubectl("rollout", "status", "sts/web", "--timeout=90s", timeout=120).check()
        volumes = jsonpath(c, "default", "pvc", "{.items[*].spec.volumeName}").split()
        c.phalanx("stop", "cluster", "--name", "sts137").check()
        c.phalanx("start", "cluster", "--name", "sts137").check()
        k("scale", "sts/web", "--replicas=3").check()
        c.kubectl("rollout", "status", "sts/web", "--timeout=90s", timeout=120).check()
        rows = get_table(c, "default", "pvc")
        assert [(r["NAME"], r["STATUS"]) for r in rows] == [(f"www-web-{i}", "Bound") for i in range(3)]
        assert [r["VOLUME"] for r in rows][:2] == volumes
        assert jsonpath(c, "default", "sts/web", "{.status.readyReplicas}") == "3"
    finally:
        c.phalanx("delete", "cluster", "--name", "sts137")
