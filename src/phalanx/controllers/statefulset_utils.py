"""What the StatefulSet controller computes without the API: pod identity (`<set>-<ordinal>`, its
labels, hostname, subdomain and claim volumes), claims from `volumeClaimTemplates`, controller
revisions (the template snapshot, its hash and name) and the status counts.

Upstream's `pkg/controller/statefulset/stateful_set_utils.go` and `controller_history.go`, in our
words:

    pod = new_pod(set_, ordinal=2, revision="web-7c9f8d6b5")     # web-2, labelled and with its claims
    claims = claims_for(set_, ordinal=2)                       # {"www": <PVC www-web-2>}
    rev = new_revision(set_, revision=3, collision_count=0)    # ControllerRevision web-<hash>
    set_from_revision(set_, rev)                               # the set with the revision's template
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..machinery.meta import deep_copy
from .podcontrol import controller_ref, is_pod_ready, is_pod_available, pod_phase, safe_encode_string

Obj = dict[str, Any]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
HASH_LABEL = "controller.kubernetes.io/hash"
_ORDINAL_RE = re.compile(r"^(.*)-([0-9]+)$")


def spec_of(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def replicas_of(set_: Obj) -> int:
    r = spec_of(set_).get("replicas")
    return r if isinstance(r, int) else 1


def start_ordinal(set_: Obj) -> int:
    return int((spec_of(set_).get("ordinals") or {}).get("start") or 0)


def partition_of(set_: Obj) -> int:
    strategy = spec_of(set_).get("updateStrategy") or {}
    return int((strategy.get("rollingUpdate") or {}).get("partition") or 0)


def max_unavailable(set_: Obj, replicas: int) -> int:
    """`getStatefulSetMaxUnavailable`: the rolling update's maxUnavailable scaled to the replicas
    (a percentage rounds down), at least 1."""
    strategy = spec_of(set_).get("updateStrategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable")
    if value is None:
        return 1
    if isinstance(value, str) and value.endswith("%"):
        return max(1, int(value[:-1]) * replicas // 100)
    return max(1, int(value))


def is_rolling_update(set_: Obj) -> bool:
    return (spec_of(set_).get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def is_parallel(set_: Obj) -> bool:
    return spec_of(set_).get("podManagementPolicy") == "Parallel"


def parent_and_ordinal(pod: Obj) -> tuple[str, int]:
    """`getParentNameAndOrdinal`: ("web", 2) for web-2; ("", -1) when the name has no ordinal."""
    m = _ORDINAL_RE.match((pod.get("metadata") or {}).get("name", ""))
    return (m.group(1), int(m.group(2))) if m else ("", -1)


def pod_name(set_: Obj, ordinal: int) -> str:
    return f"{set_['metadata']['name']}-{ordinal}"


def claim_name(set_: Obj, template_name: str, ordinal: int) -> str:
    return f"{template_name}-{set_['metadata']['name']}-{ordinal}"


def revision_of(pod: Obj) -> str:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL, "")


def is_created(pod: Obj) -> bool:
    return bool((pod.get("status") or {}).get("phase"))


def is_terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_failed(pod: Obj) -> bool:
    return pod_phase(pod) == "Failed"


def is_succeeded(pod: Obj) -> bool:
    return pod_phase(pod) == "Succeeded"


def is_running_and_ready(pod: Obj) -> bool:
    return pod_phase(pod) == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    return pod_phase(pod) == "Running" and is_pod_available(pod, min_ready_seconds, now)


def is_healthy(pod: Obj) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)


# -- claims ------------------------------------------------------------------------------------------
def claims_for(set_: Obj, ordinal: int) -> dict[str, Obj]:
    """`getPersistentVolumeClaims`: one claim per template, labelled with the set's selector labels."""
    out: dict[str, Obj] = {}
    sel_labels = (spec_of(set_).get("selector") or {}).get("matchLabels") or {}
    for t in spec_of(set_).get("volumeClaimTemplates") or []:
        tmd = t.get("metadata") or {}
        name = tmd.get("name") or ""
        md: Obj = {"name": claim_name(set_, name, ordinal), "namespace": set_["metadata"].get("namespace", "")}
        labels = dict(tmd.get("labels") or {})
        labels.update(sel_labels)
        if labels:
            md["labels"] = labels
        if tmd.get("annotations"):
            md["annotations"] = dict(tmd["annotations"])
        out[name] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md,
                     "spec": deep_copy(t.get("spec") or {})}
    return out


def _claim_volumes(set_: Obj, ordinal: int, volumes: list) -> list:
    """`updateStorage`: the template's volumes with one PVC volume per claim template (replacing a
    volume of the same name)."""
    claims = claims_for(set_, ordinal)
    kept = [v for v in volumes if v.get("name") not in claims]
    added = [{"name": name, "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
             for name, c in claims.items()]
    return added + kept


# -- pods --------------------------------------------------------------------------------------------
def new_pod(set_: Obj, ordinal: int, revision: str) -> Obj:
    """`newStatefulSetPod` + `setPodRevision`: the template as pod `<set>-<ordinal>`, the set as
    controller, identity labels, hostname/subdomain and one PVC volume per claim template."""
    template = spec_of(set_).get("template") or {}
    tmd = template.get("metadata") or {}
    name = pod_name(set_, ordinal)
    labels = dict(tmd.get("labels") or {})
    labels[POD_NAME_LABEL] = name
    labels[POD_INDEX_LABEL] = str(ordinal)
    labels[REVISION_LABEL] = revision
    md: Obj = {"name": name, "namespace": set_["metadata"].get("namespace", ""), "labels": labels,
               "ownerReferences": [controller_ref(set_)]}
    if tmd.get("annotations"):
        md["annotations"] = dict(tmd["annotations"])
    if tmd.get("finalizers"):
        md["finalizers"] = list(tmd["finalizers"])
    spec = deep_copy(template.get("spec") or {})
    spec["hostname"] = name
    if spec_of(set_).get("serviceName"):
        spec["subdomain"] = spec_of(set_)["serviceName"]
    if spec_of(set_).get("volumeClaimTemplates"):
        spec["volumes"] = _claim_volumes(set_, ordinal, list(spec.get("volumes") or []))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


# -- revisions ---------------------------------------------------------------------------------------
def fnv32(data: bytes) -> int:
    """Go's hash/fnv New32 (FNV-1: multiply, then xor)."""
    h = 0x811C9DC5
    for b in data:
        h = (h * 0x01000193) & 0xFFFFFFFF
        h ^= b
    return h


def revision_patch(set_: Obj) -> Obj:
    """`getPatch`: what a revision records, the pod template replacing the set's."""
    template = deep_copy(spec_of(set_).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def hash_revision_data(data: Obj, collision_count: int | None) -> str:
    """`HashControllerRevision`: FNV-32 of the data (and the collision count), safe-encoded."""
    raw = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        raw += str(collision_count).encode()
    return safe_encode_string(str(fnv32(raw)))


def new_revision(set_: Obj, revision: int, collision_count: int | None) -> Obj:
    """`newRevision`: a ControllerRevision `<set>-<hash>` owned by the set, with the template's
    labels and the hash label."""
    data = revision_patch(set_)
    h = hash_revision_data(data, collision_count)
    labels = dict(((spec_of(set_).get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[HASH_LABEL] = h
    md = set_["metadata"]
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"{md['name']}-{h}", "namespace": md.get("namespace", ""), "labels": labels,
                         "ownerReferences": [controller_ref(set_)]},
            "data": data, "revision": revision}


def set_from_revision(set_: Obj, revision: Obj) -> Obj:
    """`ApplyRevision`: the set with the template the revision recorded."""
    out = deep_copy(set_)
    template = deep_copy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    out.setdefault("spec", {})["template"] = template
    return out


def revision_number(rev: Obj) -> int:
    r = rev.get("revision")
    return r if isinstance(r, int) else 0


def sort_revisions(revisions: list[Obj]) -> list[Obj]:
    """Oldest first: by revision number, then creation time, then name."""
    return sorted(revisions, key=lambda r: (revision_number(r), r["metadata"].get("creationTimestamp") or "",
                                            r["metadata"]["name"]))


def equal_revision(a: Obj, b: Obj) -> bool:
    return a.get("data") == b.get("data")


# -- status ------------------------------------------------------------------------------------------
def compute_status(set_: Obj, pods: list[Obj], current: str, update: str, now: float,
                   collision_count: int) -> Obj:
    """`computeReplicaStatus` and the revisions; once every pod is updated and ready the update
    revision becomes current (`completeRollingUpdate`; for OnDelete too since Kubernetes 1.36,
    kubernetes/kubernetes#136833)."""
    mrs = int(spec_of(set_).get("minReadySeconds") or 0)
    st = {"observedGeneration": set_["metadata"].get("generation", 0), "replicas": 0, "readyReplicas": 0,
          "currentReplicas": 0, "updatedReplicas": 0, "availableReplicas": 0, "currentRevision": current,
          "updateRevision": update, "collisionCount": collision_count}
    for pod in pods:
        if is_created(pod):
            st["replicas"] += 1
        if is_running_and_ready(pod):
            st["readyReplicas"] += 1
            if is_running_and_available(pod, mrs, now):
                st["availableReplicas"] += 1
        if is_created(pod) and not is_terminating(pod):
            rev = revision_of(pod)
            st["currentReplicas"] += rev == current
            st["updatedReplicas"] += rev == update
    if st["updatedReplicas"] == st["replicas"] and st["readyReplicas"] == st["replicas"]:
        st["currentRevision"] = update
        st["currentReplicas"] = st["updatedReplicas"]
    return st
