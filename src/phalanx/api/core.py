"""core/v1 kinds: Namespace, Node, Pod, Service, ConfigMap, Secret, ServiceAccount, Event.

Each kind is a `Strategy` subclass holding what upstream keeps in `pkg/apis/core/v1/defaults.go`,
`pkg/apis/core/validation`, `pkg/registry/core/<kind>/strategy.go`, the pod admission plugins
(ServiceAccount, DefaultTolerationSeconds, Priority) and `pkg/printers/internalversion`; the
module registers all of them at import. Pod spec rules shared with workload templates live in
`phalanx.api.podspec`.

Hooks for other parts of phalanx:
- `SERVICE_STRATEGY.ip_allocator`: set to `fn(service, old_or_None)` to allocate `clusterIP(s)`,
  IP families and node ports; it runs where upstream's service REST allocates (create and update,
  after defaulting). Without it services keep whatever the client sent.
"""

from __future__ import annotations

import base64
import re
from datetime import datetime
from typing import Any, Callable

from ..machinery import errors
from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_supported, required, too_long
from ..machinery.names import (dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
                               qualified_name_errors, validate_labels)
from . import podspec
from .podspec import _dict, _list, format_labels, validate_label_name
from .registry import (AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext,
                       human_duration, register)

Obj = dict[str, Any]

# --- time helpers (Time and MicroTime) ----------------------------------------------------------

_TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def parse_timestamp(ts: Any) -> datetime | None:
    """An RFC 3339 `metav1.Time` or `MicroTime` as an aware datetime; None when unset or malformed."""
    if not ts or not isinstance(ts, str):
        return None
    m = _TS_RE.match(ts)
    if not m:
        return None
    base, frac, tz = m.groups()
    tz = "+00:00" if tz == "Z" else tz
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    try:
        t = datetime.strptime(base + tz, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None
    return t.replace(microsecond=micro)


def since(ts: Any, ctx: StrategyContext) -> str:
    """`translateTimestampSince`: `<unknown>` for a zero time, else a human duration."""
    t = parse_timestamp(ts)
    if t is None:
        return "<unknown>"
    return human_duration((ctx.now() - t).total_seconds())


def creation_age(obj: Obj, ctx: StrategyContext) -> str:
    return since(_dict(obj.get("metadata")).get("creationTimestamp"), ctx)


def _name(obj: Obj) -> str:
    return _dict(obj.get("metadata")).get("name", "")


def _col(name: str, description: str, type_: str = "string", priority: int = 0) -> Column:
    return Column(name, type_, "", description, priority)


def _keep_status_from(new: Obj, old: Obj) -> None:
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)


# --- Namespace -----------------------------------------------------------------------------------

NAMESPACE_METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
FINALIZER_KUBERNETES = "kubernetes"


def _validate_finalizer_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid(path, name, m) for m in qualified_name_errors(name)]
    if not errs and "/" not in name and name != FINALIZER_KUBERNETES:
        errs.append(invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified"))
    return errs


class NamespaceStrategy(Strategy):
    columns = [NAME_COLUMN, _col("Status", "The status of the namespace"), AGE_COLUMN]
    status_is_subresource = True
    name_validation = "label"
    tracks_generation = False
    field_selectors = {
        "status.phase": lambda o: _dict(o.get("status")).get("phase", ""),
        "name": _name,
    }

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        name = _name(obj)
        if name:
            labels = obj["metadata"].get("labels")
            if not isinstance(labels, dict):
                labels = obj["metadata"]["labels"] = {}
            labels[NAMESPACE_METADATA_NAME_LABEL] = name
        status = obj.get("status")
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Active"

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        fins = _list(spec.get("finalizers"))
        if FINALIZER_KUBERNETES not in fins:
            spec["finalizers"] = fins + [FINALIZER_KUBERNETES]

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        _keep_status_from(new, old)
        old_fins = _dict(old.get("spec")).get("finalizers")
        if old_fins is not None:
            new.setdefault("spec", {})["finalizers"] = old_fins
        elif isinstance(new.get("spec"), dict):
            new["spec"].pop("finalizers", None)

    def prepare_for_finalize_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        """`PUT namespaces/<name>/finalize`: only `spec.finalizers` comes from the request
        (upstream's finalizeStrategy); everything else, status included, stays as stored."""
        fins = _dict(new.get("spec")).get("finalizers")
        for k in list(new):
            if k != "metadata":
                del new[k]
        for k, v in old.items():
            if k != "metadata":
                new[k] = v
        spec = dict(_dict(old.get("spec")))
        if fins is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = fins
        new["spec"] = spec

    def validate_finalize_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self.validate(new, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, f in enumerate(_list(_dict(obj.get("spec")).get("finalizers"))):
            errs += _validate_finalizer_name(str(f), f"spec.finalizers[{i}]")
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        phase = _dict(new.get("status")).get("phase", "")
        if _dict(new.get("metadata")).get("deletionTimestamp"):
            if phase != "Terminating":
                return [invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")]
        elif phase != "Active":
            return [invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")]
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), _dict(obj.get("status")).get("phase", ""), creation_age(obj, ctx)]


# --- Node ----------------------------------------------------------------------------------------

NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
NODE_ROLE_LABEL = "kubernetes.io/role"


def node_roles(node: Obj) -> list[str]:
    roles = set()
    for k, v in _dict(_dict(node.get("metadata")).get("labels")).items():
        if k.startswith(NODE_ROLE_PREFIX):
            role = k[len(NODE_ROLE_PREFIX):]
            if role:
                roles.add(role)
        elif k == NODE_ROLE_LABEL and v:
            roles.add(v)
    return sorted(roles)


def node_status_cell(node: Obj) -> str:
    status: list[str] = []
    for c in _list(_dict(node.get("status")).get("conditions")):
        if _dict(c).get("type") == "Ready":
            status = ["Ready" if c.get("status") == "True" else "NotReady"]
    if not status:
        status = ["Unknown"]
    if _dict(node.get("spec")).get("unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def _node_address(node: Obj, kind: str) -> str:
    for a in _list(_dict(node.get("status")).get("addresses")):
        if _dict(a).get("type") == kind:
            return a.get("address", "")
    return "<none>"


def validate_taints(taints: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: dict[str, set[str]] = {}
    for i, t in enumerate(taints):
        tp = f"{path}[{i}]"
        t = _dict(t)
        key, effect, value = t.get("key", ""), t.get("effect", ""), t.get("value", "")
        errs += validate_label_name(key, f"{tp}.key")
        msgs = label_value_errors(value or "")
        if msgs:
            errs.append(invalid(f"{tp}.value", value, ";".join(msgs)))
        if not effect:
            errs.append(required(f"{tp}.effect"))
        elif effect not in podspec.TAINT_EFFECTS:
            errs.append(not_supported(f"{tp}.effect", effect, podspec.TAINT_EFFECTS))
        if key in seen.get(effect, set()):
            e = duplicate(tp, t)
            e.detail = "taints must be unique by key and effect pair"
            errs.append(e)
            continue
        seen.setdefault(effect, set()).add(key)
    return errs


class NodeStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Status", "The status of the node"),
        _col("Roles", "The roles of the node"),
        AGE_COLUMN,
        _col("Version", "Kubelet Version reported by the node."),
        _col("Internal-IP", "List of addresses reachable to the node.", priority=1),
        _col("External-IP", "List of addresses reachable to the node.", priority=1),
        _col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
                         "(wheezy)).", priority=1),
        _col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. "
                               "3.16.0-0.bpo.4-amd64).", priority=1),
        _col("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API "
                                  "(e.g. containerd://1.4.2).", priority=1),
    ]
    status_is_subresource = True
    tracks_generation = False
    name_validation = "subdomain"
    field_selectors = {
        "spec.unschedulable": lambda o: "true" if _dict(o.get("spec")).get("unschedulable") else "false",
    }

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        status = obj.get("status")
        if isinstance(status, dict):
            podspec.canonicalize_resource_list(status.get("capacity"))
            podspec.canonicalize_resource_list(status.get("allocatable"))
            if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
                status["allocatable"] = dict(status["capacity"])

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        pass  # a kubelet registers its node with status; upstream keeps it

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = validate_taints(_list(spec.get("taints")), "spec.taints")
        for i, cidr in enumerate(_list(spec.get("podCIDRs"))):
            if not _is_cidr(cidr):
                errs.append(invalid(f"spec.podCIDRs[{i}]", cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        ns, os_ = _dict(new.get("spec")), _dict(old.get("spec"))
        if _list(os_.get("podCIDRs")) and _list(os_.get("podCIDRs")) != _list(ns.get("podCIDRs")):
            errs.append(forbidden("spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"))
        if os_.get("providerID") and os_.get("providerID") != ns.get("providerID"):
            errs.append(forbidden("spec.providerID", "node updates may not change providerID except from \"\" to valid"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        info = _dict(_dict(obj.get("status")).get("nodeInfo"))
        roles = ",".join(node_roles(obj)) or "<none>"
        return [
            _name(obj), node_status_cell(obj), roles, creation_age(obj, ctx), info.get("kubeletVersion", ""),
            _node_address(obj, "InternalIP"), _node_address(obj, "ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>",
        ]


def _is_cidr(value: Any) -> bool:
    import ipaddress
    try:
        ipaddress.ip_network(str(value), strict=False)
        return "/" in str(value)
    except ValueError:
        return False


# --- Pod -----------------------------------------------------------------------------------------

PRIORITY_CLASSES_KEY = "scheduling.k8s.io/priorityclasses"
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
DEFAULT_SERVICE_ACCOUNT = "default"
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
NODE_UNREACHABLE_POD_REASON = "NodeLost"
SERVICE_ACCOUNT_VOLUME_PREFIX = "kube-api-access-"
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
        from ..machinery.names import generate_name
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
        volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
        volumes.append(service_account_token_volume(volume_name))
        spec["volumes"] = volumes


def _restartable(c: Any) -> bool:
    return isinstance(c, dict) and c.get("restartPolicy") == "Always"


def _condition_true(conditions: Any, ctype: str) -> bool:
    for c in _list(conditions):
        if _dict(c).get("type") == ctype:
            return c.get("status") == "True"
    return False


def _later(a: datetime | None, b: Any) -> datetime | None:
    t = parse_timestamp(b)
    if t is None:
        return a
    if a is None or a < t:
        return t
    return a


def pod_status_reason(pod: Obj) -> tuple[str, int, int, int, datetime | None]:
    """printPod's STATUS computation: (reason, ready, total, restarts, last restart time)."""
    spec = _dict(pod.get("spec"))
    status = _dict(pod.get("status"))
    md = _dict(pod.get("metadata"))
    containers = _list(spec.get("containers"))
    inits = _list(spec.get("initContainers"))
    total = len(containers)
    ready = 0
    restarts = 0
    restartable_restarts = 0
    last_restart: datetime | None = None
    last_restartable: datetime | None = None
    phase = status.get("phase") or ""
    reason = phase
    if status.get("reason"):
        reason = status["reason"]
    for cond in _list(status.get("conditions")):
        if _dict(cond).get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_by_name: dict[str, Obj] = {}
    for c in inits:
        c = _dict(c)
        init_by_name[c.get("name", "")] = c
        if _restartable(c):
            total += 1
    initializing = False
    for i, cs in enumerate(_list(status.get("initContainerStatuses"))):
        cs = _dict(cs)
        restarts += int(cs.get("restartCount") or 0)
        last_term = _dict(_dict(cs.get("lastState")).get("terminated"))
        if last_term:
            last_restart = _later(last_restart, last_term.get("finishedAt"))
        is_sidecar = _restartable(init_by_name.get(cs.get("name", "")))
        if is_sidecar:
            restartable_restarts += int(cs.get("restartCount") or 0)
            if last_term:
                last_restartable = _later(last_restartable, last_term.get("finishedAt"))
        state = _dict(cs.get("state"))
        term = state.get("terminated")
        waiting = state.get("waiting")
        if isinstance(term, dict) and int(term.get("exitCode") or 0) == 0:
            continue
        if is_sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if isinstance(term, dict):
            if not term.get("reason"):
                if term.get("signal"):
                    reason = f"Init:Signal:{term['signal']}"
                else:
                    reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
            else:
                reason = "Init:" + term["reason"]
        elif isinstance(waiting, dict) and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(inits)}"
        initializing = True
        break
    if not initializing or _condition_true(status.get("conditions"), "Initialized"):
        restarts = restartable_restarts
        last_restart = last_restartable
        has_running = False
        error_reason = ""
        for cs in reversed(_list(status.get("containerStatuses"))):
            cs = _dict(cs)
            restarts += int(cs.get("restartCount") or 0)
            last_term = _dict(_dict(cs.get("lastState")).get("terminated"))
            if last_term:
                last_restart = _later(last_restart, last_term.get("finishedAt"))
            state = _dict(cs.get("state"))
            waiting, term, running = state.get("waiting"), state.get("terminated"), state.get("running")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = waiting["reason"]
            elif isinstance(term, dict):
                if term.get("reason"):
                    reason = term["reason"]
                elif term.get("signal"):
                    reason = f"Signal:{term['signal']}"
                else:
                    reason = f"ExitCode:{term.get('exitCode', 0)}"
                if int(term.get("exitCode") or 0) != 0:
                    error_reason = reason
            elif cs.get("ready") and isinstance(running, dict):
                has_running = True
                ready += 1
        if reason == "Completed":
            if has_running and _condition_true(status.get("conditions"), "Ready"):
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"
    if md.get("deletionTimestamp") and status.get("reason") == NODE_UNREACHABLE_POD_REASON:
        reason = "Unknown"
    elif md.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return reason, ready, total, restarts, last_restart


def pod_row(pod: Obj, ctx: StrategyContext) -> list[Any]:
    """The cells of upstream's printPod (always wide, as the server sends them)."""
    reason, ready, total, restarts, last_restart = pod_status_reason(pod)
    restarts_str = str(restarts)
    if restarts and last_restart is not None:
        restarts_str = f"{restarts} ({human_duration((ctx.now() - last_restart).total_seconds())} ago)"
    spec = _dict(pod.get("spec"))
    status = _dict(pod.get("status"))
    pod_ips = _list(status.get("podIPs"))
    pod_ip = _dict(pod_ips[0]).get("ip", "") if pod_ips else status.get("podIP", "")
    gates = "<none>"
    rgs = _list(spec.get("readinessGates"))
    if rgs:
        true_count = 0
        for g in rgs:
            ctype = _dict(g).get("conditionType")
            for c in _list(status.get("conditions")):
                if _dict(c).get("type") == ctype:
                    if c.get("status") == "True":
                        true_count += 1
                    break
        gates = f"{true_count}/{len(rgs)}"
    return [
        _name(pod), f"{ready}/{total}", reason, restarts_str, creation_age(pod, ctx),
        pod_ip or "<none>", spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", gates,
    ]


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


def _terminal_state_errors(new_statuses: list, old_statuses: list, path: str, restart_policy: str,
                           inits: list | None = None) -> list[FieldError]:
    if restart_policy == "Always":
        return []
    errs: list[FieldError] = []
    sidecars = {_dict(c).get("name") for c in (inits or []) if _restartable(c)}
    for i, os_ in enumerate(old_statuses):
        os_ = _dict(os_)
        term = _dict(os_.get("state")).get("terminated")
        if not isinstance(term, dict):
            continue
        if int(term.get("exitCode") or 0) != 0 and restart_policy == "OnFailure":
            continue
        if os_.get("name") in sidecars:
            continue
        for ns in new_statuses:
            ns = _dict(ns)
            if ns.get("name") == os_.get("name") and not isinstance(_dict(ns.get("state")).get("terminated"), dict):
                errs.append(forbidden(f"{path}[{i}].state", "may not be transitioned to non-terminated state"))
    return errs


class PodStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        _col("Status", "The aggregate status of the containers in this pod."),
        _col("Restarts", "The number of times the containers in this pod have been restarted and when the last "
                         "container in this pod has restarted."),
        AGE_COLUMN,
        _col("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
                   "allocated.", priority=1),
        _col("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate "
                     "for scheduling by the scheduler defined in schedulerName.", priority=1),
        _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but "
                               "it cannot schedule right away as preemption victims receive their graceful "
                               "termination periods.", priority=1),
        _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", priority=1),
    ]
    status_is_subresource = True
    field_selectors = {
        "spec.nodeName": lambda o: _dict(o.get("spec")).get("nodeName", ""),
        "spec.host": lambda o: _dict(o.get("spec")).get("nodeName", ""),  # v1 alias of spec.nodeName
        "spec.restartPolicy": lambda o: _dict(o.get("spec")).get("restartPolicy", ""),
        "spec.schedulerName": lambda o: _dict(o.get("spec")).get("schedulerName", ""),
        "spec.serviceAccountName": lambda o: _dict(o.get("spec")).get("serviceAccountName", ""),
        "spec.hostNetwork": lambda o: "true" if _dict(o.get("spec")).get("hostNetwork") else "false",
        "status.phase": lambda o: _dict(o.get("status")).get("phase", ""),
        "status.podIP": lambda o: _pod_ip(o),
        # Accepted as a field label by upstream but never populated in the selectable field set.
        "status.podIPs": lambda o: "",
        "status.nominatedNodeName": lambda o: _dict(o.get("status")).get("nominatedNodeName", ""),
    }

    # -- defaults and preparation
    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        podspec.default_pod_spec(spec, ctx)
        podspec.default_pod_only(spec)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = _dict(obj.get("spec"))
        podspec.drop_disabled_pod_spec_fields(spec, None, ctx)
        obj["status"] = {"phase": "Pending", "qosClass": podspec.compute_qos_class(spec)}

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        _keep_status_from(new, old)
        podspec.drop_disabled_pod_spec_fields(_dict(new.get("spec")), _dict(old.get("spec")), ctx)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        if not status.get("qosClass") and _dict(old.get("status")).get("qosClass"):
            status["qosClass"] = old["status"]["qosClass"]

    # -- admission: ServiceAccount, DefaultTolerationSeconds, Priority
    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if operation == "UPDATE" and old is not None:
            ospec = _dict(old.get("spec"))
            for f in ("priority", "preemptionPolicy"):
                if spec.get(f) is None and ospec.get(f) is not None:
                    spec[f] = ospec[f]
            return
        if operation != "CREATE":
            return
        # ServiceAccount admission: every pod runs as a service account.
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
        # DefaultTolerationSeconds admission.
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
        # Priority admission.
        name = _name(obj)
        pcn = spec.get("priorityClassName") or ""
        if pcn:
            pc = _priority_class(pcn, ctx)
            if pc is None:
                raise errors.forbidden_error("pods", "", name, f"no PriorityClass with name {pcn} was found")
            priority = int(pc.get("value", 0))
            policy = pc.get("preemptionPolicy") or "PreemptLowerPriority"
        else:
            pc = _default_priority_class(ctx)
            if pc is not None:
                spec["priorityClassName"] = _name(pc)
                priority = int(pc.get("value", 0))
                policy = pc.get("preemptionPolicy") or "PreemptLowerPriority"
            else:
                priority, policy = 0, "PreemptLowerPriority"
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

    # -- validation
    def _validate_pod(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = podspec.validate_pod_spec(spec, "spec", ctx, resource_is_pod=True)
        if not spec.get("serviceAccountName"):
            for vi, v in enumerate(_list(spec.get("volumes"))):
                for si, s in enumerate(_list(_dict(_dict(v).get("projected")).get("sources"))):
                    if _dict(s).get("serviceAccountToken") is not None:
                        errs.append(forbidden(f"spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken",
                                              "must not be specified when serviceAccountName is not set"))
        for key in ("containers", "initContainers"):
            for i, c in enumerate(_list(spec.get(key))):
                img = _dict(c).get("image") or ""
                if img and img != img.strip():
                    errs.append(invalid(f"spec.{key}[{i}].image", img, "must not have leading or trailing whitespace"))
        return errs

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self._validate_pod(obj, ctx)
        if _list(_dict(obj.get("spec")).get("ephemeralContainers")):
            errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self._validate_pod(new, ctx)
        errs += podspec.validate_pod_spec_update(_dict(new.get("spec")), _dict(old.get("spec")), "spec", ctx)
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        ns, os_ = _dict(new.get("status")), _dict(old.get("status"))
        for i, c in enumerate(_list(ns.get("conditions"))):
            ctype = _dict(c).get("type") or ""
            if ctype in ("PodScheduled", "Ready", "Initialized"):
                continue
            errs += [invalid(f"metadata.conditions[{i}].Type", ctype, m) for m in qualified_name_errors(ctype)]
        if _dict(new.get("spec")).get("nodeName") != _dict(old.get("spec")).get("nodeName"):
            errs.append(forbidden("status.nodeName", "may not be changed directly"))
        nnn = ns.get("nominatedNodeName")
        if nnn and nnn != os_.get("nominatedNodeName"):
            errs += [invalid("status.nominatedNodeName", nnn, m) for m in dns1123_subdomain_errors(nnn)]
        if ns.get("qosClass", "") != os_.get("qosClass", ""):
            errs.append(invalid("status.qosClass", ns.get("qosClass", ""), podspec.IMMUTABLE_MSG))
        ospec = _dict(old.get("spec"))
        rp = ospec.get("restartPolicy", "Always")
        errs += _terminal_state_errors(_list(ns.get("containerStatuses")), _list(os_.get("containerStatuses")),
                                       "status.containerStatuses", rp)
        errs += _terminal_state_errors(_list(ns.get("initContainerStatuses")), _list(os_.get("initContainerStatuses")),
                                       "status.initContainerStatuses", rp, _list(ospec.get("initContainers")))
        errs += _validate_pod_ips(ns)
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return pod_row(obj, ctx)


def _pod_ip(pod: Obj) -> str:
    status = _dict(pod.get("status"))
    ips = _list(status.get("podIPs"))
    if ips:
        return _dict(ips[0]).get("ip", "")
    return status.get("podIP", "")


def _validate_pod_ips(status: Obj) -> list[FieldError]:
    import ipaddress
    errs: list[FieldError] = []
    ips = _list(status.get("podIPs"))
    families = set()
    seen: set[str] = set()
    for i, p in enumerate(ips):
        ip = _dict(p).get("ip", "")
        try:
            families.add(ipaddress.ip_address(ip).version)
        except ValueError:
            errs.append(invalid(f"status.podIPs[{i}]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        if ip in seen:
            errs.append(duplicate(f"status.podIPs[{i}]", p))
        seen.add(ip)
    if len(ips) > 1 and (len(ips) > 2 or len(families) != 2):
        errs.append(invalid("status.podIPs", ips, "may specify no more than one IP for each IP family"))
    return errs


# --- Service -------------------------------------------------------------------------------------

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10800


def _externally_accessible(spec: Obj) -> bool:
    t = spec.get("type")
    return t in ("LoadBalancer", "NodePort") or (t == "ClusterIP" and bool(_list(spec.get("externalIPs"))))


def service_external_ip(svc: Obj, wide: bool = True) -> str:
    spec, status = _dict(svc.get("spec")), _dict(svc.get("status"))
    t = spec.get("type")
    ext = [str(x) for x in _list(spec.get("externalIPs"))]
    if t in ("ClusterIP", "NodePort"):
        return ",".join(ext) if ext else "<none>"
    if t == "LoadBalancer":
        lb = sorted({_dict(i).get("ip") or _dict(i).get("hostname") for i in
                     _list(_dict(status.get("loadBalancer")).get("ingress")) if _dict(i).get("ip") or _dict(i).get("hostname")})
        lbs = ",".join(lb)
        if not wide and len(lbs) > 16:
            lbs = lbs[:13] + "..."
        if ext:
            return ",".join(([*lbs.split(",")] if lbs else []) + ext)
        return lbs or "<pending>"
    if t == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def service_ports_cell(svc: Obj) -> str:
    pieces = []
    for p in _list(_dict(svc.get("spec")).get("ports")):
        p = _dict(p)
        if p.get("nodePort"):
            pieces.append(f"{p.get('port', 0)}:{p['nodePort']}/{p.get('protocol', '')}")
        else:
            pieces.append(f"{p.get('port', 0)}/{p.get('protocol', '')}")
    return ",".join(pieces) or "<none>"


def _drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """Upstream `dropTypeDependentFields`: when a Service changes `type`, values that no longer
    apply and that the user did not change themselves are cleared (and later released)."""
    ns, os_ = new["spec"], _dict(old.get("spec"))
    if os_.get("type") != "ExternalName" and ns.get("type") == "ExternalName":
        if ns.get("clusterIP") == os_.get("clusterIP") and ns.get("clusterIPs") == os_.get("clusterIPs"):
            ns.pop("clusterIP", None)
            ns.pop("clusterIPs", None)
        for f in ("ipFamilies", "ipFamilyPolicy"):
            if ns.get(f) == os_.get(f):
                ns.pop(f, None)
    node_port_types = ("NodePort", "LoadBalancer")
    if os_.get("type") in node_port_types and ns.get("type") not in node_port_types:
        old_ports = {_dict(p).get("nodePort") for p in _list(os_.get("ports")) if _dict(p).get("nodePort")}
        new_ports = {_dict(p).get("nodePort") for p in _list(ns.get("ports")) if _dict(p).get("nodePort")}
        if new_ports <= old_ports:
            for p in _list(ns.get("ports")):
                if isinstance(p, dict):
                    p.pop("nodePort", None)
    if os_.get("type") == "LoadBalancer" and ns.get("type") != "LoadBalancer":
        if ns.get("healthCheckNodePort") == os_.get("healthCheckNodePort"):
            ns.pop("healthCheckNodePort", None)
        if ns.get("allocateLoadBalancerNodePorts") is not None and \
                ns.get("allocateLoadBalancerNodePorts") == os_.get("allocateLoadBalancerNodePorts"):
            ns.pop("allocateLoadBalancerNodePorts", None)
        if ns.get("loadBalancerClass") == os_.get("loadBalancerClass"):
            ns.pop("loadBalancerClass", None)
    if _externally_accessible(os_) and not _externally_accessible(ns) and \
            ns.get("externalTrafficPolicy") == os_.get("externalTrafficPolicy"):
        ns.pop("externalTrafficPolicy", None)
    if ns.get("type") != "LoadBalancer" and isinstance(new.get("status"), dict):
        new["status"] = dict(new["status"], loadBalancer={})


class ServiceStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Type", "type determines how the Service is exposed. Defaults to ClusterIP."),
        _col("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
        _col("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also "
                            "accept traffic for this service."),
        _col("Port(s)", "The list of ports that are exposed by this service."),
        AGE_COLUMN,
        _col("Selector", "Route service traffic to pods with label keys and values matching this selector.",
             priority=1),
    ]
    status_is_subresource = True
    tracks_generation = False
    name_validation = "label1035"
    field_selectors = {
        "spec.clusterIP": lambda o: _dict(o.get("spec")).get("clusterIP", ""),
        "spec.type": lambda o: _dict(o.get("spec")).get("type", ""),
    }
    # Hook for cluster IP / node port allocation: fn(service, old_or_None) mutates `service`.
    ip_allocator: Callable[[Obj, Obj | None], None] | None = None

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if not spec.get("sessionAffinity"):
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            cip = _dict(_dict(spec.get("sessionAffinityConfig")).get("clientIP"))
            if cip.get("timeoutSeconds") is None:
                spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_AFFINITY_SECONDS}}
        if not spec.get("type"):
            spec["type"] = "ClusterIP"
        for p in _list(spec.get("ports")):
            if not isinstance(p, dict):
                continue
            if not p.get("protocol"):
                p["protocol"] = "TCP"
            if p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p.get("port")
        if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
            spec["internalTrafficPolicy"] = "Cluster"
        if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"loadBalancer": {}}
        if self.ip_allocator is not None:
            self.ip_allocator(obj, None)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        _keep_status_from(new, old)
        ns, os_ = new.get("spec"), _dict(old.get("spec"))
        if isinstance(ns, dict):
            # upstream patchAllocatedValues: a client that omits allocated values keeps them.
            if ns.get("type") != "ExternalName" and os_.get("type") != "ExternalName":
                if not ns.get("clusterIP") and os_.get("clusterIP"):
                    ns["clusterIP"] = os_["clusterIP"]
                if not ns.get("clusterIPs") and os_.get("clusterIPs") and ns.get("clusterIP") == os_.get("clusterIP"):
                    ns["clusterIPs"] = os_["clusterIPs"]
                for f in ("ipFamilies", "ipFamilyPolicy"):
                    if not ns.get(f) and os_.get(f):
                        ns[f] = os_[f]
            if ns.get("type") in ("NodePort", "LoadBalancer") and os_.get("type") in ("NodePort", "LoadBalancer"):
                old_np = {(_dict(p).get("port"), _dict(p).get("protocol")): _dict(p).get("nodePort")
                          for p in _list(os_.get("ports"))}
                for p in _list(ns.get("ports")):
                    if isinstance(p, dict) and not p.get("nodePort"):
                        np_ = old_np.get((p.get("port"), p.get("protocol")))
                        if np_:
                            p["nodePort"] = np_
            _drop_type_dependent_fields(new, old)
        if self.ip_allocator is not None:
            self.ip_allocator(new, old)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs: list[FieldError] = []
        stype = spec.get("type", "")
        if stype not in SERVICE_TYPES:
            errs.append(not_supported("spec.type", stype, SERVICE_TYPES))
        headless = spec.get("clusterIP") == "None"
        ports = _list(spec.get("ports"))
        if not ports and not headless and stype != "ExternalName":
            errs.append(required("spec.ports"))
        names: set[str] = set()
        for i, p in enumerate(ports):
            pp = f"spec.ports[{i}]"
            p = _dict(p)
            pname = p.get("name") or ""
            if len(ports) > 1 and not pname:
                errs.append(required(f"{pp}.name"))
            elif pname:
                errs += [invalid(f"{pp}.name", pname, m) for m in dns1123_label_errors(pname)]
                if pname in names:
                    errs.append(duplicate(f"{pp}.name", pname))
                names.add(pname)
            port = p.get("port")
            if not podspec._valid_port_num(port):
                errs.append(invalid(f"{pp}.port", port, podspec.PORT_RANGE_MSG))
            proto = p.get("protocol") or ""
            if not proto:
                errs.append(required(f"{pp}.protocol"))
            elif proto not in podspec.PORT_PROTOCOLS:
                errs.append(not_supported(f"{pp}.protocol", proto, podspec.PORT_PROTOCOLS))
            errs += podspec.validate_port_num_or_name(p.get("targetPort"), f"{pp}.targetPort")
            if stype == "ClusterIP" and p.get("nodePort"):
                errs.append(forbidden(f"{pp}.nodePort", "may not be used when `type` is 'ClusterIP'"))
        if stype == "ExternalName":
            if spec.get("clusterIP") not in (None, ""):
                errs.append(forbidden("spec.clusterIP", "may not be set for ExternalName services"))
            ename = spec.get("externalName") or ""
            if not ename:
                errs.append(required("spec.externalName"))
            else:
                errs += [invalid("spec.externalName", ename, m)
                         for m in dns1123_subdomain_errors(ename[:-1] if ename.endswith(".") else ename)]
        sa = spec.get("sessionAffinity", "")
        if sa not in SESSION_AFFINITIES:
            errs.append(not_supported("spec.sessionAffinity", sa, SESSION_AFFINITIES))
        errs += validate_labels(spec.get("selector"), "spec.selector")
        etp = spec.get("externalTrafficPolicy")
        if etp and not _externally_accessible(spec):
            errs.append(invalid("spec.externalTrafficPolicy", etp, "may only be set for externally-accessible services"))
        elif etp and etp not in ("Cluster", "Local"):
            errs.append(not_supported("spec.externalTrafficPolicy", etp, ("Cluster", "Local")))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        ns, os_ = _dict(new.get("spec")), _dict(old.get("spec"))
        if os_.get("type") != "ExternalName" and ns.get("type") != "ExternalName":
            oips, nips = _list(os_.get("clusterIPs")), _list(ns.get("clusterIPs"))
            if oips and nips and oips[0] != nips[0]:
                errs.append(invalid("spec.clusterIPs[0]", nips, "may not change once set"))
            elif os_.get("clusterIP") and ns.get("clusterIP") and os_["clusterIP"] != ns["clusterIP"] and not oips:
                errs.append(invalid("spec.clusterIPs[0]", [ns["clusterIP"]], "may not change once set"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        ips = _list(spec.get("clusterIPs"))
        cluster_ip = ips[0] if ips else (spec.get("clusterIP") or "<none>")
        return [_name(obj), spec.get("type", ""), cluster_ip, service_external_ip(obj), service_ports_cell(obj),
                creation_age(obj, ctx), format_labels(spec.get("selector"))]


# --- ConfigMap and Secret ------------------------------------------------------------------------

MAX_SECRET_SIZE = 1 * 1024 * 1024
_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                  "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")


def config_key_errors(key: str) -> list[str]:
    msgs = []
    if len(key) > 253:
        msgs.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.match(key):
        msgs.append(CONFIG_KEY_MSG)
    if key == ".":
        msgs.append("must not be '.'")
    elif key == "..":
        msgs.append("must not be '..'")
    elif key.startswith(".."):
        msgs.append("must not start with '..'")
    return msgs


def _validate_immutable_data(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        for f in fields:
            if (new.get(f) or {}) != (old.get(f) or {}):
                errs.append(forbidden(f, "field is immutable when `immutable` is set"))
    return errs


class ConfigMapStrategy(Strategy):
    columns = [NAME_COLUMN, _col("Data", "Data contains the configuration data."), AGE_COLUMN]
    tracks_generation = False

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        total = 0
        data = _dict(obj.get("data"))
        binary = _dict(obj.get("binaryData"))
        for k, v in data.items():
            errs += [invalid(f"data[{k}]", k, m) for m in config_key_errors(k)]
            total += len(str(v))
        for k, v in binary.items():
            errs += [invalid(f"binaryData[{k}]", k, m) for m in config_key_errors(k)]
            if k in data:
                errs.append(invalid(f"binaryData[{k}]", k, "duplicate of key present in data"))
            total += len(str(v)) * 3 // 4
        if total > MAX_SECRET_SIZE:
            errs.append(too_long("", MAX_SECRET_SIZE))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _validate_immutable_data(new, old, ("data", "binaryData")) + self.validate(new, ctx)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), len(_dict(obj.get("data"))) + len(_dict(obj.get("binaryData"))), creation_age(obj, ctx)]


_B64_ALPHABET = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error_offset(value: Any) -> int | None:
    """Where Go's standard base64 decoder would reject `value` (None when it decodes)."""
    if not isinstance(value, str):
        return 0
    s = value.replace("\r", "").replace("\n", "")
    body = s.rstrip("=")
    pad = len(s) - len(body)
    for i, ch in enumerate(body):
        if ch not in _B64_ALPHABET:
            return i
    if pad > 2 or (len(s) % 4 != 0):
        return len(body) - (len(body) % 4) if len(body) % 4 == 1 else len(s)
    return None


SECRET_TYPE_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.key", "tls.crt"),
}


class SecretStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Type", "Used to facilitate programmatic handling of secret data."),
        _col("Data", "Data contains the secret data."),
        AGE_COLUMN,
    ]
    tracks_generation = False
    field_selectors = {"type": lambda o: o.get("type", "")}

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        if not obj.get("type"):
            obj["type"] = "Opaque"
        for v in _dict(obj.get("data")).values():
            bad = base64_error_offset(v)
            if bad is not None:
                raise errors.bad_request(f'Secret in version "v1" cannot be handled as a Secret: illegal base64 '
                                         f'data at input byte {bad}')
        # v1 `stringData` is write-only: it is merged into `data` (base64) and never stored.
        sd = obj.pop("stringData", None)
        if isinstance(sd, dict) and sd:
            data = obj.get("data")
            if not isinstance(data, dict):
                data = obj["data"] = {}
            for k, v in sd.items():
                data[k] = base64.b64encode(str(v).encode()).decode()

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        data = _dict(obj.get("data"))
        total = 0
        for k, v in data.items():
            errs += [invalid(f"data[{k}]", k, m) for m in config_key_errors(k)]
            total += len(str(v)) * 3 // 4
        if total > MAX_SECRET_SIZE:
            errs.append(too_long("data", MAX_SECRET_SIZE))
        stype = obj.get("type", "")
        if stype == "kubernetes.io/service-account-token":
            ann = _dict(_dict(obj.get("metadata")).get("annotations"))
            if not ann.get("kubernetes.io/service-account.name"):
                errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
        elif stype == "kubernetes.io/basic-auth":
            if "username" not in data and "password" not in data:
                errs.append(required("data[username]"))
                errs.append(required("data[password]"))
        for key in SECRET_TYPE_REQUIRED_KEYS.get(stype, ()):
            if key not in data:
                errs.append(required(f"data[{key}]"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        if new.get("type", "") != old.get("type", ""):
            errs.append(invalid("type", new.get("type", ""), podspec.IMMUTABLE_MSG))
        return _validate_immutable_data(new, old, ("data",)) + errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), obj.get("type", ""), len(_dict(obj.get("data"))), creation_age(obj, ctx)]


class ServiceAccountStrategy(Strategy):
    columns = [NAME_COLUMN, _col("Secrets", "Secrets is a list of the secrets in the same namespace that pods "
                                            "running using this ServiceAccount are allowed to use."), AGE_COLUMN]
    tracks_generation = False

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, s in enumerate(_list(obj.get("secrets"))):
            n = _dict(s).get("name")
            if n:
                errs += [invalid(f"secrets[{i}].name", n, m) for m in dns1123_subdomain_errors(n)]
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), len(_list(obj.get("secrets"))), creation_age(obj, ctx)]


# --- Event (core/v1) -----------------------------------------------------------------------------

EVENT_COLUMNS = [
    _col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", "This should be a short, machine understandable string that gives the reason for the "
                   "transition into the object's current status."),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "If referring to a piece of an object instead of an entire object, this string should "
                      "contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
         priority=1),
    _col("Source", "The component reporting this event. Should be a short machine understandable string.",
         priority=1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
         priority=1),
    _col("Count", "The number of times this event has occurred.", priority=1),
    Column("Name", "string", "name", NAME_COLUMN.description, 1),
]


def format_event_source(source: Any, reporting_controller: str, reporting_instance: str) -> str:
    src = _dict(source)
    component = src.get("component") or reporting_controller or ""
    instance = src.get("host") or reporting_instance or ""
    return f"{component}, {instance}" if instance else component


def core_event_row(ev: Obj, ctx: StrategyContext) -> list[Any]:
    """printEvent's cells for a core/v1-shaped Event."""
    first = since(ev.get("firstTimestamp"), ctx) if parse_timestamp(ev.get("firstTimestamp")) else \
        since(ev.get("eventTime"), ctx)
    last = since(ev.get("lastTimestamp"), ctx) if parse_timestamp(ev.get("lastTimestamp")) else first
    count = int(ev.get("count") or 0)
    series = ev.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), ctx)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    inv = _dict(ev.get("involvedObject"))
    kind = (inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    return [
        last, ev.get("type", ""), ev.get("reason", ""), target, inv.get("fieldPath", ""),
        format_event_source(ev.get("source"), ev.get("reportingComponent", ""), ev.get("reportingInstance", "")),
        (ev.get("message") or "").strip(), first, count, _name(ev),
    ]


def _event_source_field(ev: Obj) -> str:
    return _dict(ev.get("source")).get("component") or ev.get("reportingComponent", "")


def _inv(field: str) -> Callable[[Obj], str]:
    return lambda ev: str(_dict(ev.get("involvedObject")).get(field, ""))


EVENT_FIELD_SELECTORS: dict[str, Callable[[Obj], str]] = {
    "involvedObject.kind": _inv("kind"),
    "involvedObject.namespace": _inv("namespace"),
    "involvedObject.name": _inv("name"),
    "involvedObject.uid": _inv("uid"),
    "involvedObject.apiVersion": _inv("apiVersion"),
    "involvedObject.resourceVersion": _inv("resourceVersion"),
    "involvedObject.fieldPath": _inv("fieldPath"),
    "reason": lambda ev: ev.get("reason", ""),
    "reportingComponent": lambda ev: ev.get("reportingComponent", ""),
    "source": _event_source_field,
    "type": lambda ev: ev.get("type", ""),
}

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024


def legacy_event_errors(ev: Obj, reporting_field: str) -> list[FieldError]:
    """Upstream's `legacyValidateEvent` (the checks every Event passes, whatever its API version)."""
    errs: list[FieldError] = []
    ns = _dict(ev.get("metadata")).get("namespace", "")
    inv_ns = _dict(ev.get("involvedObject")).get("namespace", "")
    if not parse_timestamp(ev.get("eventTime")):
        if not inv_ns:
            if ns not in ("", "default"):
                errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
        elif ns != inv_ns:
            errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
    else:
        if not inv_ns and ns not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
        rc = ev.get("reportingComponent") or ""
        if not rc:
            errs.append(required(reporting_field))
        errs += [invalid(reporting_field, rc, m) for m in qualified_name_errors(rc)]
        ri = ev.get("reportingInstance") or ""
        if not ri:
            errs.append(required("reportingInstance"))
        if len(ri) > REPORTING_INSTANCE_LIMIT:
            errs.append(invalid("reportingInstance", "", f"can have at most {REPORTING_INSTANCE_LIMIT} characters"))
        action = ev.get("action") or ""
        if not action:
            errs.append(required("action"))
        if len(action) > ACTION_LIMIT:
            errs.append(invalid("action", "", f"can have at most {ACTION_LIMIT} characters"))
        reason = ev.get("reason") or ""
        if not reason:
            errs.append(required("reason"))
        if len(reason) > REASON_LIMIT:
            errs.append(invalid("reason", "", f"can have at most {REASON_LIMIT} characters"))
        if len(ev.get("message") or "") > NOTE_LIMIT:
            errs.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    errs += [invalid("namespace", ns, m) for m in dns1123_subdomain_errors(ns)] if ns else []
    return errs


class EventStrategy(Strategy):
    columns = EVENT_COLUMNS
    tracks_generation = False
    name_validation = "path_segment"
    field_selectors = EVENT_FIELD_SELECTORS

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return legacy_event_errors(obj, "reportingComponent")

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return core_event_row(obj, ctx)


# --- registration --------------------------------------------------------------------------------

NAMESPACE_STRATEGY = NamespaceStrategy()
NODE_STRATEGY = NodeStrategy()
POD_STRATEGY = PodStrategy()
SERVICE_STRATEGY = ServiceStrategy()
CONFIGMAP_STRATEGY = ConfigMapStrategy()
SECRET_STRATEGY = SecretStrategy()
SERVICEACCOUNT_STRATEGY = ServiceAccountStrategy()
EVENT_STRATEGY = EventStrategy()

register(ResourceType("", "v1", "Namespace", "namespaces", False, NAMESPACE_STRATEGY, short_names=["ns"],
                      subresources=["status", "finalize"],
                      verbs=["create", "delete", "get", "list", "patch", "update", "watch"]))
register(ResourceType("", "v1", "Node", "nodes", False, NODE_STRATEGY, short_names=["no"],
                      subresources=["status"]))
register(ResourceType("", "v1", "Pod", "pods", True, POD_STRATEGY, short_names=["po"], categories=["all"],
                      subresources=["status", "binding", "log"]))
register(ResourceType("", "v1", "Service", "services", True, SERVICE_STRATEGY, short_names=["svc"],
                      categories=["all"], subresources=["status"]))
register(ResourceType("", "v1", "ConfigMap", "configmaps", True, CONFIGMAP_STRATEGY, short_names=["cm"]))
register(ResourceType("", "v1", "Secret", "secrets", True, SECRET_STRATEGY))
register(ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, SERVICEACCOUNT_STRATEGY,
                      short_names=["sa"]))
register(ResourceType("", "v1", "Event", "events", True, EVENT_STRATEGY, short_names=["ev"]))
