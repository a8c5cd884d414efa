"""The CSR signer (kube-controller-manager's `csrsigning` controller for
`kubernetes.io/kube-apiserver-client`), through `Client`.

    CSRSigningController(client, factory, ca_cert_pem=..., ca_key_pem=...).start()

An approved, not denied or failed, CertificateSigningRequest of signer
`kubernetes.io/kube-apiserver-client` with no certificate yet gets one: the request's subject and
public key, signed by the cluster CA (the CA kubeconfigs trust), valid for `spec.expirationSeconds`
(at most, and by default, one year as upstream's `--cluster-signing-duration`), with the usages
asked for (`client auth`). It is written to `status.certificate` (PEM); `kubectl get csr` then shows
`Approved,Issued`. Requests for other signers are left for their own signers, as upstream does.
Without a CA (an in-memory test cluster) the controller does nothing.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from ..client.controller import Controller
from ..client.informer import InformerFactory
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy

Obj = dict[str, Any]
API_VERSION = "certificates.k8s.io/v1"
KIND = "CertificateSigningRequest"
SIGNER = "kubernetes.io/kube-apiserver-client"
MAX_DURATION = datetime.timedelta(days=365)
BACKDATE = datetime.timedelta(minutes=5)


def _condition(csr: Obj, ctype: str) -> bool:
    return any(isinstance(c, dict) and c.get("type") == ctype and c.get("status", "True") == "True"
               for c in (csr.get("status") or {}).get("conditions") or [])


def wants_certificate(csr: Obj) -> bool:
    spec, status = csr.get("spec") or {}, csr.get("status") or {}
    return (spec.get("signerName") == SIGNER and _condition(csr, "Approved") and not _condition(csr, "Denied")
            and not _condition(csr, "Failed") and not status.get("certificate"))


def sign(csr: Obj, ca_cert_pem: bytes, ca_key_pem: bytes, now: datetime.datetime) -> bytes:
    """The PEM certificate for a CSR object, signed by the CA; ValueError for a bad request."""
    spec = csr.get("spec") or {}
    request = x509.load_pem_x509_csr(base64.b64decode(spec.get("request") or ""))
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    seconds = spec.get("expirationSeconds")
    duration = min(MAX_DURATION, datetime.timedelta(seconds=seconds)) if isinstance(seconds, int) else MAX_DURATION
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if "client auth" in (spec.get("usages") or []) else []
    builder = (x509.CertificateBuilder().subject_name(request.subject).issuer_name(ca_cert.subject)
               .public_key(request.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - BACKDATE).not_valid_after(now + duration)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, content_commitment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True))
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    return cert.public_bytes(serialization.Encoding.PEM)


class CSRSigningController(Controller[str]):
    name = "csrsigning"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, ca_cert_pem: bytes | None = None,
                 ca_key_pem: bytes | None = None, **kwargs: Any):
        super().__init__(client, factory, **kwargs)
        self.ca = (ca_cert_pem, ca_key_pem) if ca_cert_pem and ca_key_pem else None
        self.csrs = self.informer(API_VERSION, KIND)
        self.enqueue_on(self.csrs)

    async def sync(self, key: str) -> None:
        csr = self.csrs.get(key)
        if csr is None or self.ca is None or not wants_certificate(csr):
            return
        new = deep_copy(csr)
        try:
            pem = sign(csr, self.ca[0], self.ca[1], datetime.datetime.now(datetime.timezone.utc))
            new.setdefault("status", {})["certificate"] = base64.b64encode(pem).decode()
        except ValueError as e:
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            new.setdefault("status", {}).setdefault("conditions", []).append(
                {"type": "Failed", "status": "True", "reason": "SignerValidationFailure", "message": str(e),
                 "lastUpdateTime": now, "lastTransitionTime": now})
        try:
            await self.client.update_status(new)
        except StatusError as e:
            if e.code != 404:
                raise


__all__ = ["CSRSigningController", "sign", "wants_certificate"]
