"""The admission plugins a new pod passes: ServiceAccount (the service account and its projected
API token volume), DefaultTolerationSeconds and Priority (priority and preemption policy from the
PriorityClass)."""

from __future__ import annotations


from ..machinery import errors
from ..machinery.names import TOKEN_VOLUME_PREFIX, generate_name
from .common import Obj, _dict, _list, _name
from .registry import StrategyContext

PRIORITY_CLASSES_KEY = "scheduling.k8s.io/priorityclasses"
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
DEFAULT_SERVICE_ACCOUNT = "default"
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
SERVICE_ACCOUNT_VOLUME_PREFIX = TOKEN_VOLUME_PREFIX
DEFAULT_API_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
# Whether ServiceAccount admission mounts the projected API token volume into pods (as upstream
# does by default); tests that want byte-stable pod specs may turn it off.
MOUNT_SERVICE_ACCOUNT_TOKEN = True


def service_account_token_volume(name: str) -> Obj:
    """The projected volume ServiceAccount admission adds (`kube-api-access-<random>`)."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


def mount_service_account_token(spec: Obj) -> None:
    """Upstream `mountServiceAccountToken`: every container not already using the token path
    mounts the token volume read-only; the volume is added when some container needs it."""
    volume_name = ""
    for v in _list(spec.get("volumes")):
        if _dict(v).get("name", "").startswith(SERVICE_ACCOUNT_VOLUME_PREFIX):
            volume_name = v["name"]
            break
    has_volume = bool(volume_name)
    if not volume_name:
        volume_name = generate_name(SERVICE_ACCOUNT_VOLUME_PREFIX)
    needs_volume = False
    for key in ("initContainers", "containers"):
        for c in _list(spec.get(key)):
            if not isinstance(c, dict):
                continue
            mounts = c.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = []
            if any(_dict(m).get("mountPath") == DEFAULT_API_TOKEN_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": volume_name, "readOnly": True, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH})
            c["volumeMounts"] = mounts
            needs_volume = True
    if needs_volume and not has_volume:
        volumes = spec.get("volumes")
        if not isinstance(volumes, list):
            volumes = []
        volumes.append(service_account_token_volume(volume_name))
        spec["volumes"] = volumes


def _priority_class(name: str, ctx: StrategyContext) -> Obj | None:
    pc = ctx.lookup(PRIORITY_CLASSES_KEY, "", name)
    if pc is None and name in SYSTEM_PRIORITY_CLASSES:
        pc = {"metadata": {"name": name}, "value": SYSTEM_PRIORITY_CLASSES[name],
              "preemptionPolicy": "PreemptLowerPriority"}
    return pc


def _default_priority_class(ctx: StrategyContext) -> Obj | None:
    best = None
    for pc in ctx.list_objects(PRIORITY_CLASSES_KEY, None) or []:
        if _dict(pc).get("globalDefault"):
            if best is None or pc.get("value", 0) < best.get("value", 0):
                best = pc
    return best


def admit_pod_create(obj: Obj, spec: Obj, ctx: StrategyContext) -> None:
    """The admission plugins a new pod passes, in upstream's order."""
    _admit_service_account(obj, spec, ctx)
    _admit_default_toleration_seconds(spec)
    _admit_priority(obj, spec, ctx)


def _admit_service_account(obj: Obj, spec: Obj, ctx: StrategyContext) -> None:
    """ServiceAccount admission: every pod runs as a service account, with its token mounted
    unless the pod or the account opts out."""
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT
    spec["serviceAccount"] = spec["serviceAccountName"]
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        sa = ctx.lookup("core/serviceaccounts", _dict(obj.get("metadata")).get("namespace", ""),
                        spec["serviceAccountName"])
        automount = _dict(sa).get("automountServiceAccountToken")
    if MOUNT_SERVICE_ACCOUNT_TOKEN and automount is not False:
        mount_service_account_token(spec)


def _admit_default_toleration_seconds(spec: Obj) -> None:
    """DefaultTolerationSeconds admission: tolerate not-ready and unreachable nodes for 300 s
    unless the pod already tolerates them."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    tolerates = {TAINT_NODE_NOT_READY: False, TAINT_NODE_UNREACHABLE: False}
    for t in tolerations:
        t = _dict(t)
        key, effect = t.get("key") or "", t.get("effect") or ""
        for taint in tolerates:
            if (key == taint or not key) and effect in ("NoExecute", ""):
                tolerates[taint] = True
    for taint, ok in tolerates.items():
        if not ok:
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    if tolerations:
        spec["tolerations"] = tolerations


def _admit_priority(obj: Obj, spec: Obj, ctx: StrategyContext) -> None:
    """Priority admission: priority and preemptionPolicy come from the PriorityClass (named, or
    the global default); a pod may not set other values itself."""
    name = _name(obj)
    priority, policy = _resolved_priority(spec, ctx, name)
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise errors.forbidden_error(
            "pods", "", name,
            f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name")
    spec["priority"] = priority
    if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
        raise errors.forbidden_error(
            "pods", "", name,
            f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod "
            f"spec; priority admission controller computed {policy} from the given PriorityClass name")
    spec["preemptionPolicy"] = policy


def _resolved_priority(spec: Obj, ctx: StrategyContext, pod_name: str) -> tuple[int, str]:
    """(priority, preemptionPolicy) of the pod's PriorityClass; sets the default class's name."""
    pcn = spec.get("priorityClassName") or ""
    if pcn:
        pc = _priority_class(pcn, ctx)
        if pc is None:
            raise errors.forbidden_error("pods", "", pod_name, f"no PriorityClass with name {pcn} was found")
    else:
        pc = _default_priority_class(ctx)
        if pc is None:
            return 0, "PreemptLowerPriority"
        spec["priorityClassName"] = _name(pc)
    return int(pc.get("value", 0)), pc.get("preemptionPolicy") or "PreemptLowerPriority"
