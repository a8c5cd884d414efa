"""Container validation: names, images, ports, env, probes and lifecycle handlers, volume mounts,
resize policy, for regular and init containers (upstream `validateContainers`,
`validateInitContainers`)."""

from __future__ import annotations

import re
from typing import Any

from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_found, not_supported, required
from ..machinery.names import dns1123_label_errors
from .common import Obj, _dict, _list
from .computeresources import validate_resource_requirements
from .fieldchecks import validate_nonnegative

PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"


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


def valid_port_num(p: Any) -> bool:
    """An integer port number in 1-65535 (booleans are not numbers)."""
    return isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 65535


def validate_port_num_or_name(port: Any, path: str) -> list[FieldError]:
    if isinstance(port, int) and not isinstance(port, bool):
        return [] if valid_port_num(port) else [invalid(path, port, PORT_RANGE_MSG)]
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
        elif not valid_port_num(cp):
            errs.append(invalid(f"{ip}.containerPort", cp, PORT_RANGE_MSG))
        hp = p.get("hostPort")
        if hp and not valid_port_num(hp):
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
    if c.get("envFrom"):
        errs += _env_from_errors(_list(c.get("envFrom")), f"{path}.envFrom")
    if c.get("volumeMounts"):
        errs += _volume_mount_errors(_list(c.get("volumeMounts")), volumes, f"{path}.volumeMounts")
    ipp = c.get("imagePullPolicy")
    if not ipp:
        errs.append(required(f"{path}.imagePullPolicy"))
    elif ipp not in PULL_POLICIES:
        errs.append(not_supported(f"{path}.imagePullPolicy", ipp, PULL_POLICIES))
    errs += validate_resource_requirements(c.get("resources"), claim_names, f"{path}.resources")
    if c.get("resizePolicy"):
        errs += _resize_policy_errors(_list(c.get("resizePolicy")), restart_policy, f"{path}.resizePolicy")
    return errs


def _env_from_errors(env_from: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for ef in env_from:
        ef = _dict(ef)
        n = sum(1 for k in ("configMapRef", "secretRef") if ef.get(k) is not None)
        if n == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif n > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _volume_mount_errors(mounts: list, volumes: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_paths: set[str] = set()
    for i, m in enumerate(mounts):
        mp = f"{path}[{i}]"
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
    return errs


def _resize_policy_errors(policies: list, restart_policy: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for rp in policies:
        rp = _dict(rp)
        if rp.get("resourceName") not in ("cpu", "memory"):
            errs.append(not_supported(path, rp.get("resourceName", ""), ("cpu", "memory")))
        if rp.get("restartPolicy") not in ("NotRequired", "RestartContainer"):
            errs.append(not_supported(path, rp.get("restartPolicy", ""), ("NotRequired", "RestartContainer")))
        elif restart_policy == "Never" and rp.get("restartPolicy") != "NotRequired":
            errs.append(invalid(path, rp.get("restartPolicy"),
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


def validate_containers(containers: list, volumes: set[str], claim_names: set[str], grace: Any,
                         path: str, restart_policy: Any) -> list[FieldError]:
    """`validateContainers`: each container, unique names, host ports used once."""
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


def validate_init_containers(inits: list, regular: list, volumes: set[str], claim_names: set[str], grace: Any,
                              path: str, restart_policy: Any) -> list[FieldError]:
    """`validateInitContainers`: names unique among all containers; probes and lifecycle only on
    restartable (sidecar) init containers."""
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
