"""core/v1 kinds: Namespace, Node, ConfigMap, Secret, ServiceAccount, Event, and the
registration of every core/v1 kind (Pod is in `phalanx.api.pods`, Service in
`phalanx.api.services`).

Each kind is a `Strategy` subclass holding what upstream keeps in `pkg/apis/core/v1/defaults.go`,
`pkg/apis/core/validation`, `pkg/registry/core/<kind>/strategy.go` and
`pkg/printers/internalversion`; the module registers all of them at import.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Callable

from ..machinery import errors
from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_supported, required, too_long
from ..machinery.names import dns1123_subdomain_errors, label_value_errors, qualified_name_errors
from .common import Obj, _col, _dict, _keep_status_from, _list, _name, creation_age, since
from ..machinery.timestamps import parse_rfc3339
from .computeresources import canonicalize_resource_list
from .fieldchecks import IMMUTABLE_MSG
from .labelselectors import validate_label_name
from .podplacement import TAINT_EFFECTS
from .persistentvolumes import register_kinds as register_volume_kinds
from .pods import POD_STRATEGY
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register
from .services import SERVICE_STRATEGY

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
        elif effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{tp}.effect", effect, TAINT_EFFECTS))
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
            canonicalize_resource_list(status.get("capacity"))
            canonicalize_resource_list(status.get("allocatable"))
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
            errs.append(invalid("type", new.get("type", ""), IMMUTABLE_MSG))
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
    first = since(ev.get("firstTimestamp"), ctx) if parse_rfc3339(ev.get("firstTimestamp")) else \
        since(ev.get("eventTime"), ctx)
    last = since(ev.get("lastTimestamp"), ctx) if parse_rfc3339(ev.get("lastTimestamp")) else first
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
    ns = _dict(ev.get("metadata")).get("namespace", "")
    inv_ns = _dict(ev.get("involvedObject")).get("namespace", "")
    has_event_time = bool(parse_rfc3339(ev.get("eventTime")))
    errs: list[FieldError] = []
    if not _involved_namespace_matches(ns, inv_ns, has_event_time):
        errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
    if has_event_time:
        errs += _reporting_errors(ev, reporting_field)
    errs += [invalid("namespace", ns, m) for m in dns1123_subdomain_errors(ns)] if ns else []
    return errs


def _involved_namespace_matches(ns: str, inv_ns: str, has_event_time: bool) -> bool:
    """An event lives in its involved object's namespace; one about a cluster-scoped object lives
    in `default` (or, for a new-style event with eventTime, also `kube-system`)."""
    if inv_ns:
        return has_event_time or ns == inv_ns
    return ns in (("default", "kube-system") if has_event_time else ("", "default"))


# The fields a new-style event (one with eventTime) must set, with their length limits.
_REPORTED_FIELDS = (("reportingInstance", REPORTING_INSTANCE_LIMIT), ("action", ACTION_LIMIT),
                    ("reason", REASON_LIMIT))


def _reporting_errors(ev: Obj, reporting_field: str) -> list[FieldError]:
    errs: list[FieldError] = []
    rc = ev.get("reportingComponent") or ""
    if not rc:
        errs.append(required(reporting_field))
    errs += [invalid(reporting_field, rc, m) for m in qualified_name_errors(rc)]
    for field, limit in _REPORTED_FIELDS:
        value = ev.get(field) or ""
        if not value:
            errs.append(required(field))
        if len(value) > limit:
            errs.append(invalid(field, "", f"can have at most {limit} characters"))
    if len(ev.get("message") or "") > NOTE_LIMIT:
        errs.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
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


def format_endpoints(subsets: Any) -> str:
    """The ENDPOINTS cell (printer `formatEndpoints`): `ip:port` pairs, three at most, then
    ` + N more...`; `<none>` when there are none."""
    shown: list[str] = []
    count = 0
    for subset in _list(subsets):
        subset = _dict(subset)
        ports = _list(subset.get("ports")) or [None]
        for port in ports:
            for addr in _list(subset.get("addresses")):
                count += 1
                if len(shown) < 3:
                    ip = _dict(addr).get("ip", "")
                    shown.append(f"{ip}:{_dict(port).get('port')}" if port is not None else str(ip))
    if not shown:
        return "<none>"
    return ",".join(shown) + (f" + {count - 3} more..." if count > 3 else "")


class EndpointsStrategy(Strategy):
    """core/v1 Endpoints (written by the endpoints controller; `ValidateEndpoints` in short)."""
    columns = [NAME_COLUMN, Column("Endpoints", "string", "", "Endpoints of the service"), AGE_COLUMN]

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, subset in enumerate(_list(obj.get("subsets"))):
            for field in ("addresses", "notReadyAddresses"):
                for j, addr in enumerate(_list(_dict(subset).get(field))):
                    if not _dict(addr).get("ip"):
                        errs.append(required(f"subsets[{i}].{field}[{j}].ip", ""))
            for j, port in enumerate(_list(_dict(subset).get("ports"))):
                p = _dict(port).get("port")
                if not isinstance(p, int) or isinstance(p, bool) or not 1 <= p <= 65535:
                    errs.append(invalid(f"subsets[{i}].ports[{j}].port", p,
                                        "must be between 1 and 65535, inclusive"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), format_endpoints(obj.get("subsets")), creation_age(obj, ctx)]


# --- registration --------------------------------------------------------------------------------

NAMESPACE_STRATEGY = NamespaceStrategy()
NODE_STRATEGY = NodeStrategy()
CONFIGMAP_STRATEGY = ConfigMapStrategy()
SECRET_STRATEGY = SecretStrategy()
SERVICEACCOUNT_STRATEGY = ServiceAccountStrategy()
EVENT_STRATEGY = EventStrategy()
ENDPOINTS_STRATEGY = EndpointsStrategy()

register(ResourceType("", "v1", "Namespace", "namespaces", False, NAMESPACE_STRATEGY, short_names=["ns"],
                      subresources=["status", "finalize"],
                      verbs=["create", "delete", "get", "list", "patch", "update", "watch"]))
register(ResourceType("", "v1", "Node", "nodes", False, NODE_STRATEGY, short_names=["no"],
                      subresources=["status"]))
register(ResourceType("", "v1", "Pod", "pods", True, POD_STRATEGY, short_names=["po"], categories=["all"],
                      subresources=["status", "binding", "log", "eviction"]))
register(ResourceType("", "v1", "Service", "services", True, SERVICE_STRATEGY, short_names=["svc"],
                      categories=["all"], subresources=["status"]))
register(ResourceType("", "v1", "ConfigMap", "configmaps", True, CONFIGMAP_STRATEGY, short_names=["cm"]))
register(ResourceType("", "v1", "Secret", "secrets", True, SECRET_STRATEGY))
register(ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, SERVICEACCOUNT_STRATEGY,
                      short_names=["sa"]))
register(ResourceType("", "v1", "Event", "events", True, EVENT_STRATEGY, short_names=["ev"]))
register(ResourceType("", "v1", "Endpoints", "endpoints", True, ENDPOINTS_STRATEGY, short_names=["ep"],
                      deprecation_warning="v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 "
                                          "EndpointSlice"))
register_volume_kinds()


# --- ReplicationController -----------------------------------------------------------------------
# The older form of ReplicaSet (`pkg/apis/core/validation.ValidateReplicationController`): a plain
# label map for a selector, defaulted from the template's labels. Its controller is
# controllers/replicationcontroller.py.
def _rc_default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    template_labels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
    if template_labels:
        if not spec.get("selector"):
            spec["selector"] = dict(template_labels)
        md = obj.setdefault("metadata", {})
        if not md.get("labels"):
            md["labels"] = dict(template_labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def _rc_spec_errors(spec: Obj, ctx: StrategyContext) -> list[FieldError]:
    from .apps import validate_template_for_replica_set  # apps imports nothing of core; keep it lazy
    from .fieldchecks import validate_nonnegative
    errs = validate_nonnegative(spec.get("replicas", 0), "spec.replicas")
    errs += validate_nonnegative(spec.get("minReadySeconds", 0), "spec.minReadySeconds")
    selector = spec.get("selector")
    if not selector:
        errs.append(required("spec.selector"))
        return errs
    for key, value in _dict(selector).items():
        errs += [e for e in validate_label_name(key, "spec.selector")]
        errs += [invalid("spec.selector", value, m) for m in label_value_errors(str(value))]
    errs += validate_template_for_replica_set(spec.get("template"), {"matchLabels": selector}, "spec.template", ctx,
                                              "ReplicationController")
    return errs


class ReplicationControllerStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Desired", "integer", "", "Replicas is the number of desired replicas."),
        Column("Current", "integer", "", "Replicas is the most recently observed number of replicas."),
        Column("Ready", "integer", "", "The number of ready replicas for this replication controller."),
        AGE_COLUMN,
        Column("Containers", "string", "", "Names of each container in the template.", 1),
        Column("Images", "string", "", "Images referenced by each container in the template.", 1),
        Column("Selector", "string", "", "Selector is a label query over pods that should match the replicas "
                                         "count.", 1),
    ]
    status_is_subresource = True

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        from .poddefaults import default_pod_template
        _rc_default(obj)
        default_pod_template(_dict(obj.get("spec")).get("template"), ctx)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"replicas": 0}

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _rc_spec_errors(_dict(obj.get("spec")), ctx)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        from .batch import layout_container_cells
        from .labelselectors import format_labels
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        names, images = layout_container_cells(_list(_dict(_dict(spec.get("template")).get("spec")).get("containers")))
        return [_name(obj), spec.get("replicas", 0), status.get("replicas", 0), status.get("readyReplicas", 0),
                creation_age(obj, ctx), names, images, format_labels(spec.get("selector"))]


register(ResourceType("", "v1", "ReplicationController", "replicationcontrollers", True,
                      ReplicationControllerStrategy(), short_names=["rc"], categories=["all"],
                      subresources=["status", "scale"]))
