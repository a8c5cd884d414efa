"""core/v1 Pod: defaulting, the pod admission plugins (ServiceAccount token volume,
DefaultTolerationSeconds, Priority), validation of create, update and status updates, and the
STATUS column kubectl prints (`pod_status_reason`). Pod spec rules shared with workload templates
live in `phalanx.api.podspec`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from ..machinery.errors import FieldError, duplicate, forbidden, invalid
from ..machinery.interning import trimmed
from ..machinery.names import dns1123_subdomain_errors, qualified_name_errors, token_volume_names_by_position
from . import podspec
from .common import Obj, _col, _dict, _keep_status_from, _list, _name, creation_age
from ..machinery.timestamps import parse_rfc3339
from .computeresources import compute_qos_class
from .fieldchecks import IMMUTABLE_MSG
from .podadmission import admit_pod_create
from .podsharing import share_spec_parts, share_status_parts
from .poddefaults import default_pod_only, default_pod_spec, drop_disabled_pod_spec_fields
from .registry import AGE_COLUMN, NAME_COLUMN, Strategy, StrategyContext, human_duration

NODE_UNREACHABLE_POD_REASON = "NodeLost"


def _restartable(c: Any) -> bool:
    return isinstance(c, dict) and c.get("restartPolicy") == "Always"


def _condition_true(conditions: Any, ctype: str) -> bool:
    for c in _list(conditions):
        if _dict(c).get("type") == ctype:
            return c.get("status") == "True"
    return False


def _later(a: datetime | None, b: Any) -> datetime | None:
    t = parse_rfc3339(b)
    if t is None:
        return a
    if a is None or a < t:
        return t
    return a


class _Restarts:
    """A restart count and the time of the last restart (a previous run's finish)."""

    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count = 0
        self.last: datetime | None = None

    def add(self, cs: Obj) -> None:
        self.count += int(cs.get("restartCount") or 0)
        last_term = _dict(_dict(cs.get("lastState")).get("terminated"))
        if last_term:
            self.last = _later(self.last, last_term.get("finishedAt"))


def pod_status_reason(pod: Obj) -> tuple[str, int, int, int, datetime | None]:
    """printPod's STATUS computation: (reason, ready, total, restarts, last restart time)."""
    spec = _dict(pod.get("spec"))
    status = _dict(pod.get("status"))
    inits = _list(spec.get("initContainers"))
    init_by_name = {_dict(c).get("name", ""): _dict(c) for c in inits}
    total = len(_list(spec.get("containers"))) + sum(1 for c in inits if _restartable(c))
    reason = _pod_reason(status)
    all_restarts, sidecar_restarts = _Restarts(), _Restarts()
    init_reason, ready = _init_containers_state(_list(status.get("initContainerStatuses")), init_by_name,
                                                len(inits), all_restarts, sidecar_restarts)
    restarts = all_restarts
    if init_reason is not None:
        reason = init_reason
    if init_reason is None or _condition_true(status.get("conditions"), "Initialized"):
        restarts = sidecar_restarts  # the main containers' restarts are added to the sidecars'
        reason, running_ready = _containers_state(_list(status.get("containerStatuses")), reason, restarts,
                                                  status.get("conditions"))
        ready += running_ready
    reason = _deletion_reason(_dict(pod.get("metadata")), status, reason)
    return reason, ready, total, restarts.count, restarts.last


def _pod_reason(status: Obj) -> str:
    """The phase, or the status's reason; SchedulingGated while a scheduling gate holds the pod."""
    reason = status.get("reason") or status.get("phase") or ""
    for cond in _list(status.get("conditions")):
        if _dict(cond).get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    return reason


def _init_containers_state(statuses: list, init_by_name: dict[str, Obj], n_inits: int, all_restarts: _Restarts,
                           sidecar_restarts: _Restarts) -> tuple[str | None, int]:
    """(the `Init:...` reason of the first init container not done, or None; started sidecars ready)."""
    ready = 0
    for i, cs in enumerate(statuses):
        cs = _dict(cs)
        all_restarts.add(cs)
        is_sidecar = _restartable(init_by_name.get(cs.get("name", "")))
        if is_sidecar:
            sidecar_restarts.add(cs)
        state = _dict(cs.get("state"))
        term = state.get("terminated")
        if isinstance(term, dict) and int(term.get("exitCode") or 0) == 0:
            continue
        if is_sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        return _init_reason(term, state.get("waiting"), i, n_inits), ready
    return None, ready


def _init_reason(term: Any, waiting: Any, index: int, n_inits: int) -> str:
    if isinstance(term, dict):
        if term.get("reason"):
            return "Init:" + term["reason"]
        if term.get("signal"):
            return f"Init:Signal:{term['signal']}"
        return f"Init:ExitCode:{term.get('exitCode', 0)}"
    if isinstance(waiting, dict) and waiting.get("reason") and waiting["reason"] != "PodInitializing":
        return "Init:" + waiting["reason"]
    return f"Init:{index}/{n_inits}"


def _containers_state(statuses: list, reason: str, restarts: _Restarts, conditions: Any) -> tuple[str, int]:
    """(the reason the main containers give, last container first; how many run ready)."""
    ready = 0
    has_running = False
    error_reason = ""
    for cs in reversed(statuses):
        cs = _dict(cs)
        restarts.add(cs)
        state = _dict(cs.get("state"))
        waiting, term, running = state.get("waiting"), state.get("terminated"), state.get("running")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = waiting["reason"]
        elif isinstance(term, dict):
            reason = _terminated_reason(term)
            if int(term.get("exitCode") or 0) != 0:
                error_reason = reason
        elif cs.get("ready") and isinstance(running, dict):
            has_running = True
            ready += 1
    if reason == "Completed":
        if has_running and _condition_true(conditions, "Ready"):
            reason = "Running"
        elif error_reason:
            reason = error_reason
        elif has_running:
            reason = "NotReady"
    return reason, ready


def _terminated_reason(term: Obj) -> str:
    if term.get("reason"):
        return term["reason"]
    if term.get("signal"):
        return f"Signal:{term['signal']}"
    return f"ExitCode:{term.get('exitCode', 0)}"


def _deletion_reason(md: Obj, status: Obj, reason: str) -> str:
    if not md.get("deletionTimestamp"):
        return reason
    if status.get("reason") == NODE_UNREACHABLE_POD_REASON:
        return "Unknown"
    if (status.get("phase") or "") not in ("Succeeded", "Failed"):
        return "Terminating"
    return reason


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


# Pod specs that passed validation, by their encoding without generated names, per feature-gate set
# they were validated under: the pods of one template (a ReplicaSet's, a Job's) are validated once.
_VALID_SPECS: dict[int, tuple[Any, set[bytes]]] = {}  # id(gates) -> (gates, spec keys)
_VALID_SPECS_MAX = 1024
_GATE_SETS_MAX = 16


def _valid_specs(ctx: StrategyContext) -> set[bytes]:
    entry = _VALID_SPECS.get(id(ctx.gates))
    if entry is None or entry[0] is not ctx.gates:
        if len(_VALID_SPECS) >= _GATE_SETS_MAX:
            _VALID_SPECS.clear()
        entry = _VALID_SPECS[id(ctx.gates)] = (ctx.gates, set())
    return entry[1]


def _valid_spec_key(spec: Obj) -> bytes | None:
    try:
        return token_volume_names_by_position(orjson.dumps(spec), [])
    except TypeError:  # not JSON (an in-process caller's own types): validate it
        return None


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
        share_status_parts(status)

    # -- admission: ServiceAccount, DefaultTolerationSeconds, Priority (phalanx.api.podadmission)
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
        admit_pod_create(obj, spec, ctx)
        share_spec_parts(spec)

    # -- validation
    def _validate_pod(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        key = _valid_spec_key(spec)
        valid = _valid_specs(ctx)
        if key is not None and key in valid:
            return []
        errs = self._validate_spec(spec, ctx)
        if key is not None and not errs:
            if len(valid) >= _VALID_SPECS_MAX:
                valid.clear()
            valid.add(trimmed(key))
        return errs

    @staticmethod
    def _validate_spec(spec: Obj, ctx: StrategyContext) -> list[FieldError]:
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
