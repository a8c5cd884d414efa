"""Pod spec defaulting: `SetDefaults_PodSpec` / `SetDefaults_Container` and the declarative defaults
inside a PodSpec, the Pod-only defaults, and dropping fields whose feature gate is off."""

from __future__ import annotations

from typing import Any

from .common import Obj, _dict, _gate, _list
from .computeresources import canonicalize_resource_list
from .volumes import VOLUME_SOURCES

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
TERMINATION_MESSAGE_PATH_DEFAULT = "/dev/termination-log"


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


def default_pod_template(template: object, ctx: Any = None) -> None:
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
