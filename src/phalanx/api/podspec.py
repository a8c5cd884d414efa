"""Pod spec defaulting and validation shared by every kind that embeds a pod template.

Pod, Job, Deployment, ReplicaSet and JobSet all carry a `PodSpec`; upstream defaults it with
`SetDefaults_PodSpec` / `SetDefaults_Container` and validates it with `ValidatePodSpec`, and so do we:

    default_pod_spec(spec, ctx)                      # dnsPolicy, restartPolicy, container defaults, ...
    errs = validate_pod_spec(spec, "spec", ctx)      # -> list[FieldError], upstream paths and words
    errs = validate_pod_template(template, "spec.template", ctx)
    errs = validate_pod_spec_update(new_spec, old_spec, "spec", ctx)   # pod immutability rules

Label selector helpers (`validate_label_selector`, `label_selector_matches`,
`format_label_selector`, `format_labels`) and int-or-percent helpers live here too, because every
workload kind needs them next to its template. All functions work on plain JSON dicts.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import orjson

from ..machinery import quantity as _quantity
from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_found, not_supported, required
from ..machinery.names import (dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
                               qualified_name_errors, validate_annotations, validate_labels)

Obj = dict[str, Any]

MAX_INT32 = 2**31 - 1

# --- constants (upstream core/v1 names) ---------------------------------------------------------

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
TERMINATION_MESSAGE_PATH_DEFAULT = "/dev/termination-log"
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
QOS_COMPUTE_RESOURCES = ("cpu", "memory")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers", "requests.storage",
}
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI",
    "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk",
    "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)

IS_NEGATIVE_MSG = "must be greater than or equal to 0"
IMMUTABLE_MSG = "field is immutable"
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"
QUANTITY_REGEX_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
               "'93%', regex used for validation is '[0-9]+%')")

# Fields of PodSpec a pod update may change (upstream's `updatablePodSpecFields`).
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _gate(ctx: Any, name: str, default: bool = True) -> bool:
    if ctx is None:
        return default
    try:
        return bool(ctx.enabled(name))
    except Exception:  # unknown gate in a reduced test context
        return default


# --- small generic helpers ------------------------------------------------------------------------

def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def to_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def parse_quantity(s: Any) -> Fraction:
    """A resource quantity as an exact Fraction; ValueError when malformed."""
    return _quantity.parse_quantity(s)


def quantity_str(q: Any) -> str:
    """What upstream's `Quantity.String()` prints for a value in an error message."""
    try:
        return _quantity.canonicalize(q)
    except (ValueError, TypeError):
        return q if isinstance(q, str) else str(q)


def canonical_resource_quantity(q: Any) -> Any:
    """A ResourceList value as the API server stores it: rounded up to milli precision
    (`SetDefaults_ResourceList`) and written in canonical form. Malformed values are kept for
    validation to report."""
    try:
        value, fmt = _quantity.parse_quantity_format(q)
    except (ValueError, TypeError):
        return q
    if (value * 1000).denominator != 1:
        milli = value * 1000
        whole = -((-abs(milli.numerator)) // milli.denominator)
        value = Fraction(whole if value > 0 else -whole, 1000)
        return _quantity.format_quantity(value, fmt)
    return _quantity.canonicalize(q)


def canonicalize_resource_list(rl: Any) -> None:
    if isinstance(rl, dict):
        for k, v in list(rl.items()):
            rl[k] = canonical_resource_quantity(v)


# --- labels and selectors -------------------------------------------------------------------------

def validate_label_name(key: Any, path: str) -> list[FieldError]:
    if not isinstance(key, str):
        return [invalid(path, key, "must be a string")]
    return [invalid(path, key, m) for m in qualified_name_errors(key)]


def validate_label_selector(sel: Any, path: str, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """apimachinery `ValidateLabelSelector` (matchLabels + matchExpressions)."""
    errs: list[FieldError] = []
    if sel is None:
        return errs
    if not isinstance(sel, dict):
        return [invalid(path, sel, "must be an object")]
    errs += validate_labels(sel.get("matchLabels"), f"{path}.matchLabels")
    for i, req in enumerate(_list(sel.get("matchExpressions"))):
        rp = f"{path}.matchExpressions[{i}]"
        req = _dict(req)
        op = req.get("operator")
        values = _list(req.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(required(f"{rp}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(f"{rp}.values",
                                      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(invalid(f"{rp}.operator", op or "", "not a valid selector operator"))
        errs += validate_label_name(req.get("key", ""), f"{rp}.key")
        if not allow_invalid_values:
            for j, v in enumerate(values):
                for m in label_value_errors(v if isinstance(v, str) else str(v)):
                    errs.append(invalid(f"{rp}.values[{j}]", v, m))
    return errs


def label_selector_matches(sel: Any, labels: dict | None) -> bool:
    """`metav1.LabelSelectorAsSelector(sel).Matches(labels)`: a nil selector matches nothing, `{}`
    matches everything."""
    if sel is None:
        return False
    labels = labels or {}
    for k, v in _dict(sel.get("matchLabels")).items():
        if labels.get(k) != v:
            return False
    for req in _list(sel.get("matchExpressions")):
        req = _dict(req)
        k, op, values = req.get("key"), req.get("operator"), _list(req.get("values"))
        if op == "In":
            if k not in labels or labels[k] not in values:
                return False
        elif op == "NotIn":
            if k in labels and labels[k] in values:
                return False
        elif op == "Exists":
            if k not in labels:
                return False
        elif op == "DoesNotExist":
            if k in labels:
                return False
        else:
            return False
    return True


def label_selector_string(sel: Any) -> str:
    """`LabelSelectorAsSelector(sel).String()`: requirements sorted by key, "" when empty or nil."""
    if not isinstance(sel, dict):
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in _dict(sel.get("matchLabels")).items():
        reqs.append((k, f"{k}={v}"))
    for req in _list(sel.get("matchExpressions")):
        req = _dict(req)
        k, op = req.get("key", ""), req.get("operator")
        vals = ",".join(sorted(str(v) for v in _list(req.get("values"))))
        if op == "In":
            reqs.append((k, f"{k} in ({vals})"))
        elif op == "NotIn":
            reqs.append((k, f"{k} notin ({vals})"))
        elif op == "Exists":
            reqs.append((k, k))
        elif op == "DoesNotExist":
            reqs.append((k, f"!{k}"))
    reqs.sort(key=lambda r: r[0])
    return ",".join(r[1] for r in reqs)


def format_label_selector(sel: Any) -> str:
    """`metav1.FormatLabelSelector`: `<none>` for an empty selector."""
    s = label_selector_string(sel)
    return s if s else "<none>"


def format_labels(labels: dict | None) -> str:
    """`labels.FormatLabels`: `k=v,...` sorted by key, `<none>` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


# --- int-or-percent (maxSurge, maxUnavailable, minAvailable) --------------------------------------

_PERCENT_RE = re.compile(r"^[0-9]+%$")


def validate_positive_int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, bool):
        return [invalid(path, value, "must be an integer or percentage (e.g '5%%')")]
    if isinstance(value, str):
        return [] if _PERCENT_RE.match(value) else [invalid(path, value, PERCENT_MSG)]
    if isinstance(value, int):
        return [] if value >= 0 else [invalid(path, value, IS_NEGATIVE_MSG)]
    return [invalid(path, value, "must be an integer or percentage (e.g '5%%')")]


def int_or_percent_value(value: Any) -> int:
    if isinstance(value, str):
        if _PERCENT_RE.match(value):
            return int(value[:-1])
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 0


def is_not_more_than_100_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str) and _PERCENT_RE.match(value) and int(value[:-1]) > 100:
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def validate_nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, IS_NEGATIVE_MSG)]
    return []


# --- defaulting -----------------------------------------------------------------------------------

def image_tag(image: str) -> str:
    """The tag `ParseImageName` reports: `latest` when neither tag nor digest is given."""
    if not image:
        return ""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def _default_handler(h: Any) -> None:
    if isinstance(h, dict) and isinstance(h.get("httpGet"), dict):
        hg = h["httpGet"]
        hg.setdefault("path", "/")
        hg.setdefault("scheme", "HTTP")


def _default_probe(p: Any) -> None:
    if not isinstance(p, dict):
        return
    for k, v in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)):
        if not p.get(k):
            p[k] = v
    _default_handler(p)


def default_container(c: Obj) -> None:
    """`SetDefaults_Container` plus the declarative defaults on ports, env and probes."""
    if not isinstance(c, dict):
        return
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if image_tag(c.get("image") or "") == "latest" else "IfNotPresent"
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = TERMINATION_MESSAGE_PATH_DEFAULT
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    if c.get("resources") is None:
        c["resources"] = {}
    res = c.get("resources")
    if isinstance(res, dict):
        canonicalize_resource_list(res.get("requests"))
        canonicalize_resource_list(res.get("limits"))
    for p in _list(c.get("ports")):
        if isinstance(p, dict) and not p.get("protocol"):
            p["protocol"] = "TCP"
    for e in _list(c.get("env")):
        fr = _dict(_dict(_dict(e).get("valueFrom")).get("fieldRef"))
        if fr and not fr.get("apiVersion"):
            fr["apiVersion"] = "v1"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(probe))
    lc = _dict(c.get("lifecycle"))
    for h in ("postStart", "preStop"):
        _default_handler(lc.get(h))


def _default_volume(v: Obj) -> None:
    if not isinstance(v, dict):
        return
    if not any(k in v for k in VOLUME_SOURCES):
        v["emptyDir"] = {}
    for src in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(v.get(src), dict) and v[src].get("defaultMode") is None:
            v[src]["defaultMode"] = 420
    if isinstance(v.get("hostPath"), dict) and "type" not in v["hostPath"]:
        v["hostPath"]["type"] = ""
    for s in _list(_dict(v.get("projected")).get("sources")):
        sat = _dict(s).get("serviceAccountToken")
        if isinstance(sat, dict) and sat.get("expirationSeconds") is None:
            sat["expirationSeconds"] = 3600
    for item in _list(_dict(v.get("downwardAPI")).get("items")):
        fr = _dict(_dict(item).get("fieldRef"))
        if fr and not fr.get("apiVersion"):
            fr["apiVersion"] = "v1"


def default_pod_spec(spec: Obj, ctx: Any = None) -> None:
    """`SetDefaults_PodSpec` and the defaults of everything inside a PodSpec (containers, volumes).

    What only a Pod (not a template) gets — requests from limits, `enableServiceLinks`, host
    ports under hostNetwork — is in `default_pod_only`."""
    if not isinstance(spec, dict):
        return
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            default_container(c)
    for v in _list(spec.get("volumes")):
        _default_volume(v)
    canonicalize_resource_list(spec.get("overhead"))
    # v1 keeps the deprecated `serviceAccount` in step with `serviceAccountName`.
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]


def default_pod_only(spec: Obj) -> None:
    """`SetDefaults_Pod`: defaults a Pod gets but a pod template does not."""
    for key in ("containers", "initContainers"):
        for c in _list(spec.get(key)):
            res = _dict(c.get("resources"))
            limits = res.get("limits")
            if isinstance(limits, dict) and limits:
                reqs = res.setdefault("requests", {})
                if isinstance(reqs, dict):
                    for k, v in limits.items():
                        reqs.setdefault(k, v)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for c in _list(spec.get(key)):
                for p in _list(c.get("ports")):
                    if isinstance(p, dict) and not p.get("hostPort") and p.get("containerPort"):
                        p["hostPort"] = p["containerPort"]


def default_pod_template(template: Obj, ctx: Any = None) -> None:
    if isinstance(template, dict):
        default_pod_spec(template.setdefault("spec", {}), ctx)


def drop_disabled_pod_spec_fields(spec: Obj, old_spec: Obj | None, ctx: Any) -> None:
    """`dropDisabledPodFields` for the gates phalanx knows: a field whose gate is off is dropped
    unless the old object already used it."""
    if not isinstance(spec, dict):
        return
    if not _gate(ctx, "GenericWorkload") and "schedulingGroup" in spec:
        if not (old_spec and old_spec.get("schedulingGroup")):
            spec.pop("schedulingGroup", None)


# --- QoS -------------------------------------------------------------------------------------------

def compute_qos_class(spec: Obj) -> str:
    """Upstream `GetPodQOS` (container-level resources): Guaranteed, Burstable or BestEffort."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    containers = _list(spec.get("containers")) + _list(spec.get("initContainers"))
    for c in containers:
        res = _dict(_dict(c).get("resources"))
        for name, q in _dict(res.get("requests")).items():
            if name not in QOS_COMPUTE_RESOURCES:
                continue
            try:
                v = parse_quantity(q)
            except (ValueError, TypeError):
                continue
            if v > 0:
                requests[name] = requests.get(name, Fraction(0)) + v
        found = set()
        for name, q in _dict(res.get("limits")).items():
            if name not in QOS_COMPUTE_RESOURCES:
                continue
            try:
                v = parse_quantity(q)
            except (ValueError, TypeError):
                continue
            if v > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + v
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, req in requests.items():
            if limits.get(name) != req:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# --- validation: containers -----------------------------------------------------------------------

_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_HAS_LETTER = re.compile(r"[a-z]")


def port_name_errors(name: str) -> list[str]:
    msgs = []
    if len(name) > 15:
        msgs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(name):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    elif not _HAS_LETTER.search(name):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in name:
        msgs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def _valid_port_num(p: Any) -> bool:
    return isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 65535


def validate_port_num_or_name(port: Any, path: str) -> list[FieldError]:
    if isinstance(port, int) and not isinstance(port, bool):
        return [] if _valid_port_num(port) else [invalid(path, port, PORT_RANGE_MSG)]
    if isinstance(port, str):
        return [invalid(path, port, m) for m in port_name_errors(port)]
    return [invalid(path, port, "must be an integer or a port name")]


def _validate_container_ports(ports: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, p in enumerate(ports):
        ip = f"{path}[{i}]"
        p = _dict(p)
        name = p.get("name")
        if name:
            msgs = port_name_errors(name)
            if msgs:
                errs += [invalid(f"{ip}.name", name, m) for m in msgs]
            elif name in names:
                errs.append(duplicate(f"{ip}.name", name))
            else:
                names.add(name)
        cp = p.get("containerPort")
        if not cp:
            errs.append(required(f"{ip}.containerPort"))
        elif not _valid_port_num(cp):
            errs.append(invalid(f"{ip}.containerPort", cp, PORT_RANGE_MSG))
        hp = p.get("hostPort")
        if hp and not _valid_port_num(hp):
            errs.append(invalid(f"{ip}.hostPort", hp, PORT_RANGE_MSG))
        proto = p.get("protocol")
        if not proto:
            errs.append(required(f"{ip}.protocol"))
        elif proto not in PORT_PROTOCOLS:
            errs.append(not_supported(f"{ip}.protocol", proto, PORT_PROTOCOLS))
    return errs


def _validate_env(env: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, e in enumerate(env):
        ip = f"{path}[{i}]"
        e = _dict(e)
        name = e.get("name") or ""
        if not name:
            errs.append(required(f"{ip}.name"))
            errs.append(invalid(f"{ip}.name", name, "environment variable name must be non-empty"))
        elif any(ord(ch) > 127 or not ch.isprintable() or ch == "=" for ch in name):
            errs.append(invalid(f"{ip}.name", name, "a valid environment variable name must consist only of "
                                                    "printable ASCII characters other than '='"))
        vf = e.get("valueFrom")
        if vf is not None:
            vf = _dict(vf)
            srcs = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
                    if vf.get(k) is not None]
            vp = f"{ip}.valueFrom"
            if not srcs:
                errs.append(invalid(vp, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                            "`configMapKeyRef` or `secretKeyRef`"))
            elif e.get("value"):
                errs.append(invalid(vp, "", "may not be specified when `value` is not empty"))
            elif len(srcs) > 1:
                errs.append(invalid(vp, "", "may not have more than one field specified at a time"))
            for ref in ("configMapKeyRef", "secretKeyRef"):
                r = vf.get(ref)
                if isinstance(r, dict) and not r.get("key"):
                    errs.append(required(f"{vp}.{ref}.key"))
            fr = vf.get("fieldRef")
            if isinstance(fr, dict):
                if not fr.get("apiVersion"):
                    errs.append(required(f"{vp}.fieldRef.apiVersion"))
                elif not fr.get("fieldPath"):
                    errs.append(required(f"{vp}.fieldRef.fieldPath"))
    return errs


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_extended_resource(name: str) -> bool:
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native_resource(name) and not _is_hugepages(name)


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid(path, name, m) for m in qualified_name_errors(name)]
    if not errs and "/" not in name and name not in STANDARD_RESOURCES and not _is_hugepages(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_quantity_value(name: str, q: Any, path: str) -> tuple[list[FieldError], Fraction | None]:
    try:
        v = parse_quantity(q)
    except (ValueError, TypeError):
        return [invalid(path, q, QUANTITY_REGEX_MSG)], None
    errs: list[FieldError] = []
    if v < 0:
        errs.append(invalid(path, quantity_str(q), IS_NEGATIVE_MSG))
    if _is_extended_resource(name) and v.denominator != 1:
        errs.append(invalid(path, quantity_str(q), "must be an integer"))
    return errs, v


def validate_resource_requirements(res: Any, claim_names: set[str], path: str) -> list[FieldError]:
    """`ValidateContainerResourceRequirements`: names, quantities, requests <= limits, claims."""
    errs: list[FieldError] = []
    res = _dict(res)
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    limits = _dict(res.get("limits"))
    requests = _dict(res.get("requests"))
    lim_vals: dict[str, Fraction] = {}
    lim_cpu_mem = req_cpu_mem = lim_huge = req_huge = False
    for name, q in limits.items():
        fp = f"{lim_path}[{name}]"
        errs += _validate_container_resource_name(name, fp)
        qerrs, v = _validate_quantity_value(name, q, fp)
        errs += qerrs
        if v is not None:
            lim_vals[name] = v
        lim_huge |= _is_hugepages(name)
        lim_cpu_mem |= name in QOS_COMPUTE_RESOURCES
    for name, q in requests.items():
        fp = f"{req_path}[{name}]"
        errs += _validate_container_resource_name(name, fp)
        qerrs, v = _validate_quantity_value(name, q, fp)
        errs += qerrs
        if name in limits:
            lv = lim_vals.get(name)
            if v is not None and lv is not None:
                if v != lv and not _overcommit_allowed(name):
                    errs.append(invalid(req_path, quantity_str(q),
                                        f"must be equal to {name} limit of {quantity_str(limits[name])}"))
                elif v > lv:
                    errs.append(invalid(req_path, quantity_str(q),
                                        f"must be less than or equal to {name} limit of {quantity_str(limits[name])}"))
        elif not _overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        req_huge |= _is_hugepages(name)
        req_cpu_mem |= name in QOS_COMPUTE_RESOURCES
    if not lim_cpu_mem and not req_cpu_mem and (req_huge or lim_huge):
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    seen: set[str] = set()
    for i, claim in enumerate(_list(res.get("claims"))):
        cp = f"{path}.claims[{i}]"
        name = _dict(claim).get("name") or ""
        if not name:
            errs.append(required(cp))
            continue
        if name in seen:
            errs.append(duplicate(cp, name))
        else:
            seen.add(name)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += " which is empty" if not claim_names else ": " + ", ".join(sorted(claim_names))
            e = not_found(cp, name)
            e.detail = detail
            errs.append(e)
    return errs


def _validate_handler(h: Any, path: str, grace: Any) -> list[FieldError]:
    h = _dict(h)
    errs: list[FieldError] = []
    n = 0
    for kind in ("exec", "httpGet", "tcpSocket", "grpc", "sleep"):
        if h.get(kind) is None:
            continue
        if n > 0:
            errs.append(forbidden(f"{path}.{kind}", "may not specify more than 1 handler type"))
            continue
        n += 1
        body = _dict(h[kind])
        if kind == "exec" and not body.get("command"):
            errs.append(required(f"{path}.exec.command"))
        elif kind == "httpGet":
            if not body.get("path"):
                errs.append(required(f"{path}.httpGet.path"))
            errs += validate_port_num_or_name(body.get("port"), f"{path}.httpGet.port")
            if body.get("scheme") not in ("HTTP", "HTTPS"):
                errs.append(not_supported(f"{path}.httpGet.scheme", body.get("scheme", ""), ("HTTP", "HTTPS")))
        elif kind == "tcpSocket":
            errs += validate_port_num_or_name(body.get("port"), f"{path}.tcpSocket.port")
        elif kind == "grpc":
            errs += validate_port_num_or_name(body.get("port"), f"{path}.grpc.port")
        elif kind == "sleep":
            secs = body.get("seconds", 0)
            if isinstance(grace, int) and (secs < 0 or secs > grace):
                errs.append(invalid(f"{path}.sleep", secs, "must be non-negative and less than "
                                                          f"terminationGracePeriodSeconds ({grace})"))
    if n == 0:
        errs.append(required(path, "must specify a handler type"))
    return errs


def _validate_probe(p: Any, path: str, grace: Any, kind: str) -> list[FieldError]:
    if p is None:
        return []
    p = _dict(p)
    errs = _validate_handler(p, path, grace)
    for f in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs += validate_nonnegative(p.get(f, 0), f"{path}.{f}")
    tgps = p.get("terminationGracePeriodSeconds")
    if tgps is not None and isinstance(tgps, int) and tgps <= 0:
        errs.append(invalid(f"{path}.terminationGracePeriodSeconds", tgps, "must be greater than 0"))
    if kind in ("liveness", "startup") and p.get("successThreshold", 1) != 1:
        errs.append(invalid(f"{path}.successThreshold", p.get("successThreshold"), "must be 1"))
    if kind == "readiness" and tgps is not None:
        errs.append(invalid(f"{path}.terminationGracePeriodSeconds", tgps, "must not be set for readinessProbes"))
    return errs


def _validate_lifecycle(lc: Any, path: str, grace: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    lc = _dict(lc)
    for h in ("postStart", "preStop"):
        if lc.get(h) is not None:
            errs += _validate_handler(lc[h], f"{path}.{h}", grace)
    return errs


def _validate_container_common(c: Obj, volumes: set[str], claim_names: set[str], path: str,
                               restart_policy: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    name = c.get("name") or ""
    if not name:
        errs.append(required(f"{path}.name"))
    else:
        errs += [invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name)]
    if not c.get("image"):
        errs.append(required(f"{path}.image"))
    tmp = c.get("terminationMessagePolicy")
    if not tmp:
        errs.append(required(f"{path}.terminationMessagePolicy"))
    elif tmp not in TERMINATION_MESSAGE_POLICIES:
        errs.append(not_supported(f"{path}.terminationMessagePolicy", tmp, TERMINATION_MESSAGE_POLICIES))
    errs += _validate_container_ports(_list(c.get("ports")), f"{path}.ports")
    errs += _validate_env(_list(c.get("env")), f"{path}.env")
    for i, ef in enumerate(_list(c.get("envFrom"))):
        ef = _dict(ef)
        n = sum(1 for k in ("configMapRef", "secretRef") if ef.get(k) is not None)
        if n == 0:
            errs.append(invalid(f"{path}.envFrom", "", "must specify one of: `configMapRef` or `secretRef`"))
        elif n > 1:
            errs.append(invalid(f"{path}.envFrom", "", "may not have more than one field specified at a time"))
    mount_paths: set[str] = set()
    for i, m in enumerate(_list(c.get("volumeMounts"))):
        mp = f"{path}.volumeMounts[{i}]"
        m = _dict(m)
        mname = m.get("name") or ""
        if not mname:
            errs.append(required(f"{mp}.name"))
        if mname not in volumes:
            errs.append(not_found(f"{mp}.name", mname))
        mpath = m.get("mountPath") or ""
        if not mpath:
            errs.append(required(f"{mp}.mountPath"))
        if mpath in mount_paths:
            errs.append(invalid(f"{mp}.mountPath", mpath, "must be unique"))
        mount_paths.add(mpath)
    ipp = c.get("imagePullPolicy")
    if not ipp:
        errs.append(required(f"{path}.imagePullPolicy"))
    elif ipp not in PULL_POLICIES:
        errs.append(not_supported(f"{path}.imagePullPolicy", ipp, PULL_POLICIES))
    errs += validate_resource_requirements(c.get("resources"), claim_names, f"{path}.resources")
    for i, rp in enumerate(_list(c.get("resizePolicy"))):
        rp = _dict(rp)
        if rp.get("resourceName") not in ("cpu", "memory"):
            errs.append(not_supported(f"{path}.resizePolicy", rp.get("resourceName", ""), ("cpu", "memory")))
        if rp.get("restartPolicy") not in ("NotRequired", "RestartContainer"):
            errs.append(not_supported(f"{path}.resizePolicy", rp.get("restartPolicy", ""),
                                      ("NotRequired", "RestartContainer")))
        elif restart_policy == "Never" and rp.get("restartPolicy") != "NotRequired":
            errs.append(invalid(f"{path}.resizePolicy", rp.get("restartPolicy"),
                                "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return errs


def _host_port_conflicts(containers: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ci, c in enumerate(containers):
        for pi, p in enumerate(_list(_dict(c).get("ports"))):
            p = _dict(p)
            hp = p.get("hostPort")
            if not hp:
                continue
            key = f"{p.get('protocol', '')}/{p.get('hostIP', '')}/{hp}"
            if key in seen:
                errs.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return errs


def _validate_containers(containers: list, volumes: set[str], claim_names: set[str], grace: Any,
                         path: str, restart_policy: Any) -> list[FieldError]:
    if not containers:
        return [required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, c in enumerate(containers):
        cp = f"{path}[{i}]"
        c = _dict(c)
        errs += _validate_container_common(c, volumes, claim_names, cp, restart_policy)
        name = c.get("name") or ""
        if name in names:
            errs.append(duplicate(f"{cp}.name", name))
        else:
            names.add(name)
        if c.get("lifecycle") is not None:
            errs += _validate_lifecycle(c["lifecycle"], f"{cp}.lifecycle", grace)
        errs += _validate_probe(c.get("livenessProbe"), f"{cp}.livenessProbe", grace, "liveness")
        errs += _validate_probe(c.get("readinessProbe"), f"{cp}.readinessProbe", grace, "readiness")
        errs += _validate_probe(c.get("startupProbe"), f"{cp}.startupProbe", grace, "startup")
        if c.get("restartPolicy") is not None:
            errs.append(forbidden(f"{cp}.restartPolicy", "may not be set for non-init containers"))
    errs += _host_port_conflicts(containers, path)
    return errs


def is_restartable_init_container(c: Any) -> bool:
    return isinstance(c, dict) and c.get("restartPolicy") == "Always"


def _validate_init_containers(inits: list, regular: list, volumes: set[str], claim_names: set[str], grace: Any,
                              path: str, restart_policy: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    names = {_dict(c).get("name") for c in regular}
    for i, c in enumerate(inits):
        cp = f"{path}[{i}]"
        c = _dict(c)
        errs += _validate_container_common(c, volumes, claim_names, cp, restart_policy)
        restart_always = False
        if c.get("restartPolicy") is not None:
            if c["restartPolicy"] != "Always":
                errs.append(not_supported(f"{cp}.restartPolicy", c["restartPolicy"], ("Always",)))
            restart_always = c["restartPolicy"] == "Always"
        name = c.get("name") or ""
        if name in names:
            errs.append(duplicate(f"{cp}.name", name))
        elif name:
            names.add(name)
        errs += _host_port_conflicts([c], path)
        if restart_always:
            if c.get("lifecycle") is not None:
                errs += _validate_lifecycle(c["lifecycle"], f"{cp}.lifecycle", grace)
            errs += _validate_probe(c.get("livenessProbe"), f"{cp}.livenessProbe", grace, "liveness")
            errs += _validate_probe(c.get("readinessProbe"), f"{cp}.readinessProbe", grace, "readiness")
            errs += _validate_probe(c.get("startupProbe"), f"{cp}.startupProbe", grace, "startup")
        else:
            for f in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if c.get(f) is not None:
                    errs.append(forbidden(f"{cp}.{f}", "may not be set for init containers without restartPolicy=Always"))
    return errs


# --- validation: pod-level fields -----------------------------------------------------------------

def _validate_volumes(volumes: list, path: str) -> tuple[set[str], list[FieldError]]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, v in enumerate(volumes):
        vp = f"{path}[{i}]"
        v = _dict(v)
        name = v.get("name") or ""
        if not name:
            errs.append(required(f"{vp}.name"))
        else:
            errs += [invalid(f"{vp}.name", name, m) for m in dns1123_label_errors(name)]
            if name in names:
                errs.append(duplicate(f"{vp}.name", name))
            names.add(name)
        srcs = [k for k in VOLUME_SOURCES if v.get(k) is not None]
        if not srcs:
            errs.append(required(vp, "must specify a volume type"))
        for extra in srcs[1:]:
            errs.append(forbidden(f"{vp}.{extra}", "may not specify more than 1 volume type"))
        pvc = _dict(v.get("persistentVolumeClaim"))
        if v.get("persistentVolumeClaim") is not None and not pvc.get("claimName"):
            errs.append(required(f"{vp}.persistentVolumeClaim.claimName"))
        if v.get("configMap") is not None and not _dict(v["configMap"]).get("name"):
            errs.append(required(f"{vp}.configMap.name"))
        if v.get("secret") is not None and not _dict(v["secret"]).get("secretName"):
            errs.append(required(f"{vp}.secret.secretName"))
    return names, errs


def _validate_pod_resource_claims(claims: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, claim in enumerate(claims):
        cp = f"{path}[{i}]"
        claim = _dict(claim)
        name = claim.get("name") or ""
        if not name:
            errs.append(required(f"{cp}.name"))
        elif name in names:
            errs.append(duplicate(f"{cp}.name", name))
        else:
            errs += [invalid(f"{cp}.name", name, m) for m in dns1123_label_errors(name)]
            names.add(name)
        has_claim = claim.get("resourceClaimName") is not None
        has_tmpl = claim.get("resourceClaimTemplateName") is not None
        if has_claim and has_tmpl:
            errs.append(invalid(cp, claim, "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                                           "may be specified"))
        if not has_claim and not has_tmpl:
            errs.append(invalid(cp, claim, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            val = claim.get(key)
            if val is not None:
                errs += [invalid(f"{cp}.{key}", val, m) for m in dns1123_subdomain_errors(str(val))]
    return errs


def validate_tolerations(tolerations: list, path: str) -> list[FieldError]:
    """`ValidateTolerations`."""
    errs: list[FieldError] = []
    for i, t in enumerate(tolerations):
        tp = f"{path}[{i}]"
        t = _dict(t)
        key = t.get("key") or ""
        op = t.get("operator") or ""
        effect = t.get("effect") or ""
        value = t.get("value") or ""
        if key:
            errs += validate_label_name(key, f"{tp}.key")
        if not key and op != "Exists":
            errs.append(invalid(f"{tp}.operator", op,
                                "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(f"{tp}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = label_value_errors(value)
            if msgs:
                errs.append(invalid(f"{tp}.operator", value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                errs.append(invalid(f"{tp}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(f"{tp}.operator", op, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{tp}.effect", effect, TAINT_EFFECTS))
    return errs


def _validate_node_selector_requirement(rq: Any, path: str, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    rq = _dict(rq)
    op = rq.get("operator")
    values = _list(rq.get("values"))
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(f"{path}.operator", op or "", "not a valid selector operator"))
    errs += validate_label_name(rq.get("key", ""), f"{path}.key")
    if not allow_invalid_values:
        for j, v in enumerate(values):
            errs += [invalid(f"{path}.values[{j}]", v, m) for m in label_value_errors(str(v))]
    return errs


def _validate_node_selector_term(term: Any, path: str, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    term = _dict(term)
    for j, rq in enumerate(_list(term.get("matchExpressions"))):
        errs += _validate_node_selector_requirement(rq, f"{path}.matchExpressions[{j}]", allow_invalid_values)
    for j, rq in enumerate(_list(term.get("matchFields"))):
        fp = f"{path}.matchFields[{j}]"
        rq = _dict(rq)
        if rq.get("operator") in ("In", "NotIn"):
            if len(_list(rq.get("values"))) != 1:
                errs.append(required(f"{fp}.values",
                                     "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
        else:
            errs.append(invalid(f"{fp}.operator", rq.get("operator", ""), "not a valid selector operator"))
        if rq.get("key") != "metadata.name":
            errs.append(invalid(f"{fp}.key", rq.get("key", ""), "not a valid field selector key"))
        else:
            for k, v in enumerate(_list(rq.get("values"))):
                errs += [invalid(f"{fp}.values[{k}]", v, m) for m in dns1123_subdomain_errors(str(v))]
    return errs


def _validate_pod_affinity_term(term: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    term = _dict(term)
    errs += validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    errs += validate_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for ns in _list(term.get("namespaces")):
        errs += [invalid(f"{path}.namespace", ns, m) for m in dns1123_label_errors(str(ns))]
    topo = term.get("topologyKey") or ""
    if not topo:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    errs += validate_label_name(topo, f"{path}.topologyKey")
    return errs


def _validate_weighted_terms(terms: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, wt in enumerate(terms):
        wt = _dict(wt)
        w = wt.get("weight", 0)
        if not isinstance(w, int) or w <= 0 or w > 100:
            errs.append(invalid(f"{path}[{j}].weight", w, "must be in the range 1-100"))
        errs += _validate_pod_affinity_term(wt.get("podAffinityTerm"), f"{path}[{j}].podAffinityTerm")
    return errs


def validate_affinity(aff: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if aff is None:
        return errs
    aff = _dict(aff)
    na = aff.get("nodeAffinity")
    if isinstance(na, dict):
        np = f"{path}.nodeAffinity"
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            rp = f"{np}.requiredDuringSchedulingIgnoredDuringExecution"
            terms = _list(_dict(req).get("nodeSelectorTerms"))
            if not terms:
                errs.append(required(f"{rp}.nodeSelectorTerms", "must have at least one node selector term"))
            for i, t in enumerate(terms):
                errs += _validate_node_selector_term(t, f"{rp}.nodeSelectorTerms[{i}]", False)
        for i, pt in enumerate(_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            pp = f"{np}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            pt = _dict(pt)
            w = pt.get("weight", 0)
            if not isinstance(w, int) or w <= 0 or w > 100:
                errs.append(invalid(f"{pp}.weight", w, "must be in the range 1-100"))
            errs += _validate_node_selector_term(pt.get("preference"), f"{pp}.preference", True)
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = aff.get(kind)
        if not isinstance(pa, dict):
            continue
        kp = f"{path}.{kind}"
        for i, t in enumerate(_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errs += _validate_pod_affinity_term(t, f"{kp}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
        errs += _validate_weighted_terms(_list(pa.get("preferredDuringSchedulingIgnoredDuringExecution")),
                                         f"{kp}.preferredDuringSchedulingIgnoredDuringExecution")
    return errs


def _validate_topology_spread(constraints: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        cp = f"{path}[{i}]"
        c = _dict(c)
        skew = c.get("maxSkew", 0)
        if not isinstance(skew, int) or skew <= 0:
            errs.append(invalid(f"{cp}.maxSkew", skew, "must be greater than zero"))
        key = c.get("topologyKey") or ""
        if not key:
            errs.append(required(f"{cp}.topologyKey", "can not be empty"))
        else:
            errs += validate_label_name(key, f"{cp}.topologyKey")
        wu = c.get("whenUnsatisfiable") or ""
        if wu not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(f"{cp}.whenUnsatisfiable", wu, ("DoNotSchedule", "ScheduleAnyway")))
        pair = (key, wu)
        if pair in seen:
            errs.append(duplicate(f"{cp}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {wu}}}"))
        seen.add(pair)
        errs += validate_label_selector(c.get("labelSelector"), f"{cp}.labelSelector")
    return errs


def validate_scheduling_group(sg: Any, path: str) -> list[FieldError]:
    """`spec.schedulingGroup` (1.36, gate GenericWorkload): a one-member union whose
    `podGroupName` is a DNS-1123 subdomain."""
    errs: list[FieldError] = []
    if sg is None:
        return errs
    if not isinstance(sg, dict):
        return [invalid(path, sg, "must be an object")]
    name = sg.get("podGroupName")
    if name is None:
        errs.append(required(f"{path}.podGroupName", "must specify one of: `podGroupName`"))
    elif not isinstance(name, str) or not name:
        errs.append(required(f"{path}.podGroupName"))
    else:
        errs += [invalid(f"{path}.podGroupName", name, m) for m in dns1123_subdomain_errors(name)]
    return errs


def _validate_dns_config(cfg: Any, dns_policy: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if dns_policy == "None":
        if cfg is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not _list(_dict(cfg).get("nameservers")):
            return [required(f"{path}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if isinstance(cfg, dict):
        ns = _list(cfg.get("nameservers"))
        if len(ns) > 3:
            errs.append(invalid(f"{path}.nameservers", ns, "must not have more than 3 nameservers"))
        searches = _list(cfg.get("searches"))
        if len(searches) > 32:
            errs.append(invalid(f"{path}.searches", searches, "must not have more than 32 search paths"))
        for i, o in enumerate(_list(cfg.get("options"))):
            if not _dict(o).get("name"):
                errs.append(required(f"{path}.options[{i}]", "must not be empty"))
    return errs


def validate_pod_spec(spec: Obj, path: str, ctx: Any = None, *, resource_is_pod: bool = False) -> list[FieldError]:
    """`ValidatePodSpec`: every rule that holds for a Pod and a pod template alike (plus the
    pod-only ones when `resource_is_pod`)."""
    if not isinstance(spec, dict):
        return [required(path)]
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(required(f"{path}.terminationGracePeriodSeconds"))
    grace = spec.get("terminationGracePeriodSeconds")
    vols, verrs = _validate_volumes(_list(spec.get("volumes")), f"{path}.volumes")
    errs += verrs
    claims = _list(spec.get("resourceClaims"))
    claim_names = {_dict(c).get("name") for c in claims if _dict(c).get("name")}
    errs += _validate_pod_resource_claims(claims, f"{path}.resourceClaims")
    rp = spec.get("restartPolicy")
    containers = _list(spec.get("containers"))
    errs += _validate_containers(containers, vols, claim_names, grace, f"{path}.containers", rp)
    errs += _validate_init_containers(_list(spec.get("initContainers")), containers, vols, claim_names, grace,
                                      f"{path}.initContainers", rp)
    if spec.get("hostNetwork"):
        for i, c in enumerate(containers):
            for j, p in enumerate(_list(_dict(c).get("ports"))):
                p = _dict(p)
                hp, cport = p.get("hostPort", 0), p.get("containerPort")
                if (resource_is_pod or hp) and hp != cport:
                    errs.append(invalid(f"{path}.containers[{i}].ports[{j}].hostPort", hp,
                                        "must match `containerPort` when `hostNetwork` is true"))
    if not rp:
        errs.append(required(f"{path}.restartPolicy"))
    elif rp not in RESTART_POLICIES:
        errs.append(not_supported(f"{path}.restartPolicy", rp, RESTART_POLICIES))
    dp = spec.get("dnsPolicy")
    if not dp:
        errs.append(required(f"{path}.dnsPolicy"))
    elif dp not in DNS_POLICIES:
        errs.append(not_supported(f"{path}.dnsPolicy", dp, DNS_POLICIES))
    errs += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for i, ps in enumerate(_list(spec.get("imagePullSecrets"))):
        if set(_dict(ps)) - {"name"}:
            errs.append(invalid(f"{path}.imagePullSecrets[{i}]", ps, "only name may be set"))
    errs += validate_affinity(spec.get("affinity"), f"{path}.affinity")
    errs += _validate_dns_config(spec.get("dnsConfig"), dp, f"{path}.dnsConfig")
    for i, g in enumerate(_list(spec.get("readinessGates"))):
        ct = _dict(g).get("conditionType") or ""
        errs += [invalid(f"{path}.readinessGates[{i}].conditionType", ct, m) for m in qualified_name_errors(ct)]
    seen_gates: set[str] = set()
    for i, g in enumerate(_list(spec.get("schedulingGates"))):
        gname = _dict(g).get("name") or ""
        errs += [invalid(f"{path}.schedulingGates[{i}]", gname, m) for m in qualified_name_errors(gname)]
        if gname in seen_gates:
            errs.append(duplicate(f"{path}.schedulingGates[{i}]", gname))
        seen_gates.add(gname)
    errs += _validate_topology_spread(_list(spec.get("topologySpreadConstraints")),
                                      f"{path}.topologySpreadConstraints")
    sa = spec.get("serviceAccountName")
    if sa:
        errs += [invalid(f"{path}.serviceAccountName", sa, m) for m in dns1123_subdomain_errors(sa)]
    node = spec.get("nodeName")
    if node:
        errs += [invalid(f"{path}.nodeName", node, m) for m in dns1123_subdomain_errors(node)]
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads < 1 or ads > MAX_INT32):
        errs.append(invalid(f"{path}.activeDeadlineSeconds", ads, f"must be between 1 and {MAX_INT32}, inclusive"))
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            errs += [invalid(f"{path}.{key}", spec[key], m) for m in dns1123_label_errors(spec[key])]
    if spec.get("tolerations"):
        errs += validate_tolerations(_list(spec.get("tolerations")), f"{path}.tolerations")
    pcn = spec.get("priorityClassName")
    if pcn:
        errs += [invalid(f"{path}.priorityClassName", pcn, m) for m in dns1123_subdomain_errors(pcn)]
    if spec.get("runtimeClassName") is not None:
        rcn = spec["runtimeClassName"]
        errs += [invalid(f"{path}.runtimeClassName", rcn, m) for m in dns1123_subdomain_errors(str(rcn))]
    pp = spec.get("preemptionPolicy")
    if pp is not None:
        if pp == "":
            errs.append(required(f"{path}.preemptionPolicy"))
        elif pp not in PREEMPTION_POLICIES:
            errs.append(not_supported(f"{path}.preemptionPolicy", pp, PREEMPTION_POLICIES))
    os_ = spec.get("os")
    if isinstance(os_, dict):
        if not os_.get("name"):
            errs.append(required(f"{path}.os.name"))
        elif os_["name"] not in ("linux", "windows"):
            errs.append(not_supported(f"{path}.os.name", os_["name"], ("linux", "windows")))
    if "schedulingGroup" in spec:
        if _gate(ctx, "GenericWorkload"):
            errs += validate_scheduling_group(spec.get("schedulingGroup"), f"{path}.schedulingGroup")
        elif spec.get("schedulingGroup") is not None:
            errs.append(forbidden(f"{path}.schedulingGroup", "disabled by feature-gate GenericWorkload"))
    return errs


def validate_pod_template(template: Any, path: str, ctx: Any = None) -> list[FieldError]:
    """`ValidatePodTemplateSpec`: template labels and annotations, then the pod spec."""
    if not isinstance(template, dict):
        return [required(path)]
    errs: list[FieldError] = []
    md = _dict(template.get("metadata"))
    errs += validate_labels(md.get("labels"), f"{path}.metadata.labels")
    errs += validate_annotations(md.get("annotations"), f"{path}.metadata.annotations")
    spec = template.get("spec")
    errs += validate_pod_spec(_dict(spec), f"{path}.spec", ctx)
    if _list(_dict(spec).get("ephemeralContainers")):
        errs.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return errs


# --- pod update rules -----------------------------------------------------------------------------

def _go_name(field: str) -> str:
    special = {"dnsPolicy": "DNSPolicy", "dnsConfig": "DNSConfig", "hostIPC": "HostIPC", "hostPID": "HostPID",
               "os": "OS"}
    return special.get(field, field[:1].upper() + field[1:])


def pod_spec_diff(old: Obj, new: Obj) -> str:
    """A compact rendering of what changed, in the spirit of upstream's `cmp.Diff` of the specs."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if key in old:
            lines.append(f"- \t{_go_name(key)}: {to_json(old[key])},")
        if key in new:
            lines.append(f"+ \t{_go_name(key)}: {to_json(new[key])},")
    lines.append("  }")
    return "\n".join(lines)


def _toleration_eq_ignoring_seconds(a: Any, b: Any) -> bool:
    a, b = dict(_dict(a)), dict(_dict(b))
    a.pop("tolerationSeconds", None)
    b.pop("tolerationSeconds", None)
    norm = lambda t: {k: v for k, v in t.items() if v not in ("", None)}  # noqa: E731
    return norm(a) == norm(b)


def _with_image_of(c: Any, oc: Any) -> dict:
    m = dict(_dict(c))
    if "image" in _dict(oc):
        m["image"] = oc["image"]
    else:
        m.pop("image", None)
    return m


def validate_pod_spec_update(new: Obj, old: Obj, path: str = "spec", ctx: Any = None) -> list[FieldError]:
    """The pod-update part of `ValidatePodUpdate`: which spec fields may change and how."""
    errs: list[FieldError] = []
    for key in ("containers", "initContainers"):
        nc, oc = _list(new.get(key)), _list(old.get(key))
        if len(nc) != len(oc):
            errs.append(forbidden(f"{path}.{key}", "pod updates may not add or remove containers"))
            return errs
        for i, c in enumerate(nc):
            img = _dict(c).get("image") or ""
            if not img:
                errs.append(required(f"{path}.{key}[{i}].image"))
            elif img != img.strip():
                errs.append(invalid(f"{path}.{key}[{i}].image", img, "must not have leading or trailing whitespace"))
    nads, oads = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if nads is not None:
        if not isinstance(nads, int) or nads < 0 or nads > MAX_INT32:
            errs.append(invalid(f"{path}.activeDeadlineSeconds", nads, f"must be between 0 and {MAX_INT32}, inclusive"))
            return errs
        if oads is not None and oads < nads:
            errs.append(invalid(f"{path}.activeDeadlineSeconds", nads, "must be less than or equal to previous value"))
            return errs
    elif oads is not None:
        errs.append(invalid(f"{path}.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"))
    new_tols, old_tols = _list(new.get("tolerations")), _list(old.get("tolerations"))
    for ot in old_tols:
        if not any(_toleration_eq_ignoring_seconds(ot, nt) for nt in new_tols):
            errs.append(forbidden(f"{path}.tolerations", "existing toleration can not be modified except its tolerationSeconds"))
            break
    else:
        errs += validate_tolerations(new_tols, f"{path}.tolerations")
    old_gates = {_dict(g).get("name") for g in _list(old.get("schedulingGates"))}
    for i, g in enumerate(_list(new.get("schedulingGates"))):
        gname = _dict(g).get("name")
        if gname not in old_gates:
            errs.append(forbidden(f"{path}.schedulingGates[{i}].name",
                                  f"only deletion is allowed, but found new scheduling gate '{gname}'"))
    if new.get("schedulingGroup") != old.get("schedulingGroup") and ("schedulingGroup" in old or "schedulingGroup" in new):
        errs.append(invalid(f"{path}.schedulingGroup", new.get("schedulingGroup"), IMMUTABLE_MSG))
    if new == old:
        return errs
    munged = dict(new)
    for key in ("containers", "initContainers"):
        if key in munged:
            munged[key] = [_with_image_of(c, oc) for c, oc in zip(_list(new.get(key)), _list(old.get(key)))]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations", "schedulingGroup"):
        if key in old:
            munged[key] = old[key]
        else:
            munged.pop(key, None)
    otg, ntg = old.get("terminationGracePeriodSeconds"), munged.get("terminationGracePeriodSeconds")
    if isinstance(otg, int) and otg < 0 and ntg == 1:
        munged["terminationGracePeriodSeconds"] = otg
    if _list(old.get("schedulingGates")):
        ons, nns = _dict(old.get("nodeSelector")), _dict(munged.get("nodeSelector"))
        if ons != nns:
            for k, v in ons.items():
                if nns.get(k) != v:
                    errs.append(invalid(f"{path}.nodeSelector[{k}]", nns.get(k), IMMUTABLE_MSG))
            if "nodeSelector" in old:
                munged["nodeSelector"] = old["nodeSelector"]
            else:
                munged.pop("nodeSelector", None)
    if munged != old:
        detail = ("pod updates may not change fields other than " + ",".join(UPDATABLE_POD_SPEC_FIELDS)
                  + "\n" + pod_spec_diff(old, munged))
        errs.append(forbidden(path, detail))
    return errs


__all__ = [
    "default_pod_spec", "default_pod_only", "default_pod_template", "default_container",
    "validate_pod_spec", "validate_pod_template", "validate_pod_spec_update", "validate_tolerations",
    "validate_affinity", "validate_resource_requirements", "validate_label_selector", "label_selector_matches",
    "label_selector_string", "format_label_selector", "format_labels", "compute_qos_class",
    "drop_disabled_pod_spec_fields", "validate_positive_int_or_percent", "int_or_percent_value",
    "is_not_more_than_100_percent", "validate_nonnegative", "parse_quantity", "image_tag",
    "is_restartable_init_container", "validate_scheduling_group",
]
