"""core/v1 Pod: defaulting, the pod admission plugins (ServiceAccount token volume,
DefaultTolerationSeconds, Priority), validation of create, update and status updates, and the
STATUS column kubectl prints (`pod_status_reason`). Pod spec rules shared with workload templates
live in `phalanx.api.podspec`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..machinery import errors
from ..machinery.errors import FieldError, duplicate, forbidden, invalid
from ..machinery.names import dns1123_subdomain_errors, qualified_name_errors
from . import podspec
from .common import Obj, _col, _dict, _keep_status_from, _list, _name, creation_age, parse_timestamp
from .computeresources import compute_qos_class
from .fieldchecks import IMMUTABLE_MSG
from .poddefaults import default_pod_only, default_pod_spec, drop_disabled_pod_spec_fields
from .registry import AGE_COLUMN, NAME_COLUMN, Strategy, StrategyContext, human_duration

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
        default_pod_spec(spec, ctx)
        default_pod_only(spec)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = _dict(obj.get("spec"))
        drop_disabled_pod_spec_fields(spec, None, ctx)
        obj["status"] = {"phase": "Pending", "qosClass": compute_qos_class(spec)}

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        _keep_status_from(new, old)
        drop_disabled_pod_spec_fields(_dict(new.get("spec")), _dict(old.get("spec")), ctx)

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
            errs.append(invalid("status.qosClass", ns.get("qosClass", ""), IMMUTABLE_MSG))
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


POD_STRATEGY = PodStrategy()
