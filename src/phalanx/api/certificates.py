"""certificates.k8s.io/v1 CertificateSigningRequest: stored and validated as upstream does
(`pkg/apis/certificates/validation`), printed with upstream's columns (`kubectl get csr`: NAME AGE
SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION), with the `/status` and `/approval` subresources
(`kubectl certificate approve|deny` PUTs `/approval` with an `Approved` or `Denied` condition).

The signer is `controllers/csrsigning.py`: it issues certificates from the cluster CA for approved
`kubernetes.io/kube-apiserver-client` requests.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..machinery.errors import FieldError, invalid, not_supported, required
from .common import _dict, _list, creation_age
from .registry import (AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, human_duration,
                       register)

Obj = dict[str, Any]
GROUP = "certificates.k8s.io"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
CONDITION_TYPES = ("Approved", "Denied", "Failed")
KEY_USAGES = ("signing", "digital signature", "content commitment", "key encipherment", "key agreement",
              "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
              "server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system",
              "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc")


def condition(csr: Obj, ctype: str) -> Obj | None:
    for c in _list(_dict(csr.get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def request_pem(csr: Obj) -> bytes | None:
    """The PEM of `spec.request` (base64 in JSON), or None when it is not base64."""
    try:
        return base64.b64decode(_dict(csr.get("spec")).get("request") or "", validate=True)
    except (binascii.Error, ValueError):
        return None


def set_requester(csr: Obj, user: Any) -> None:
    """What upstream's strategy records at create: the requesting user (`spec.username`, `uid`,
    `groups`, `extra`), whatever the body said."""
    spec = csr.get("spec")
    if not isinstance(spec, dict) or user is None:
        return
    for key in ("username", "uid", "groups", "extra"):
        spec.pop(key, None)
    spec["username"] = user.name
    if user.uid:
        spec["uid"] = user.uid
    if user.groups:
        spec["groups"] = list(user.groups)
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}


def _spec_errors(spec: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    if not spec.get("request"):
        errs.append(required("spec.request"))
    else:
        pem = request_pem({"spec": spec})
        if pem is None or b"-----BEGIN CERTIFICATE REQUEST-----" not in pem:
            errs.append(invalid("spec.request", [], "PEM block type must be CERTIFICATE REQUEST"))
    if not spec.get("signerName"):
        errs.append(required("spec.signerName"))
    usages = _list(spec.get("usages"))
    if not usages:
        errs.append(required("spec.usages"))
    for i, u in enumerate(usages):
        if u not in KEY_USAGES:
            errs.append(not_supported(f"spec.usages[{i}]", u, KEY_USAGES))
    seconds = spec.get("expirationSeconds")
    if seconds is not None and (not isinstance(seconds, int) or seconds < 600):
        errs.append(invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 600 seconds "
                                                               "(10 minutes)"))
    return errs


def _conditions_errors(status: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, c in enumerate(_list(status.get("conditions"))):
        c = _dict(c)
        ctype = c.get("type", "")
        if not ctype:
            errs.append(required(f"status.conditions[{i}].type"))
        elif ctype in seen and ctype in CONDITION_TYPES:
            errs.append(invalid(f"status.conditions[{i}].type", ctype, "duplicate condition type"))
        seen.add(ctype)
        if c.get("status") not in ("True", "False", "Unknown"):
            errs.append(not_supported(f"status.conditions[{i}].status", c.get("status", ""),
                                      ("False", "True", "Unknown")))
    if {"Approved", "Denied"} <= seen:
        errs.append(invalid("status.conditions", status.get("conditions"),
                            "Approved and Denied conditions are mutually exclusive"))
    return errs


def _condition_cell(obj: Obj) -> str:
    shown = [c.get("type", "") for c in _list(_dict(obj.get("status")).get("conditions")) if isinstance(c, dict)]
    if _dict(obj.get("status")).get("certificate"):
        shown.append("Issued")
    return ",".join(shown) if shown else "Pending"


class CertificateSigningRequestStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        AGE_COLUMN,
        Column("SignerName", "string", "", "The name of the signer that will sign the certificate."),
        Column("Requestor", "string", "", "Name of the user requesting the certificate."),
        Column("RequestedDuration", "string", "", "The requested duration of the certificate."),
        Column("Condition", "string", "", "Approved, Denied, Failed, Issued or Pending."),
    ]
    status_is_subresource = True
    tracks_generation = False

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _spec_errors(_dict(obj.get("spec")))

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_update(new, old, ctx)
        new["spec"] = old.get("spec")  # as upstream: the spec of a request never changes

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        now = ctx.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        for c in _list(_dict(new.get("status")).get("conditions")):
            if isinstance(c, dict) and not c.get("lastTransitionTime"):
                c["lastTransitionTime"] = now  # as upstream's approval and status strategies do

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = _conditions_errors(_dict(new.get("status")))
        for ctype in ("Approved", "Denied"):
            if condition(old, ctype) is not None and condition(new, ctype) is None:
                errs.append(invalid("status.conditions", new.get("status", {}).get("conditions"),
                                    f"updates may not remove a condition of type {ctype!r}"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj.get("spec"))
        seconds = spec.get("expirationSeconds")
        duration = human_duration(seconds) if isinstance(seconds, int) else "<none>"
        return [obj["metadata"]["name"], creation_age(obj, ctx), spec.get("signerName", ""),
                spec.get("username", ""), duration, _condition_cell(obj)]


register(ResourceType(GROUP, "v1", "CertificateSigningRequest", "certificatesigningrequests", False,
                      CertificateSigningRequestStrategy(), short_names=["csr"], subresources=["status", "approval"]))
