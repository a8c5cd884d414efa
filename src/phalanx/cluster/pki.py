"""Per-cluster certificates and the client token: what makes `https://127.0.0.1:PORT` trustworthy.

    pki = ensure_pki(state_dir, cluster_name="dev", listen_address="127.0.0.1")
    pki.ca_cert_pem        # goes into the kubeconfig as certificate-authority-data
    pki.server_cert_file   # the API server's TLS certificate (+ server_key_file)
    pki.token              # the bearer token kubectl sends (`user: {token: ...}`)

Layout under the cluster state dir:

    pki/ca.crt  pki/ca.key               self-signed ECDSA P-256 CA, 10 years
    pki/server.crt  pki/server.key       server certificate signed by the CA, 1 year, SANs
                                         localhost, kubernetes(.default(.svc(.cluster.local))),
                                         <cluster>-control-plane, 127.0.0.1, ::1 and the listen
                                         address
    token                                `secrets.token_urlsafe(32)`

Keys and the token are written 0600, atomically. `ensure_pki` is idempotent: it keeps what
exists and reissues only the server certificate when it is missing, expires within 30 days or
lacks the listen address (so `phalanx start cluster` can call it every time).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
SERVER_VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
CLOCK_SKEW = datetime.timedelta(minutes=5)  # backdate notBefore a little, as kubeadm does

SERVICE_DNS_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                     "kubernetes.default.svc.cluster.local")
UNSPECIFIED_ADDRESSES = ("0.0.0.0", "::")


@dataclass(frozen=True)
class ClusterPKI:
    """Paths of one cluster's credentials, plus the two values clients need inline."""

    ca_cert_file: Path
    ca_key_file: Path
    server_cert_file: Path
    server_key_file: Path
    token_file: Path

    @property
    def ca_cert_pem(self) -> bytes:
        return self.ca_cert_file.read_bytes()

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()


def pki_paths(state_dir: str | os.PathLike) -> ClusterPKI:
    root = Path(state_dir)
    pki = root / "pki"
    return ClusterPKI(ca_cert_file=pki / "ca.crt", ca_key_file=pki / "ca.key",
                      server_cert_file=pki / "server.crt", server_key_file=pki / "server.key",
                      token_file=root / "token")


def ensure_pki(state_dir: str | os.PathLike, cluster_name: str, listen_address: str = "127.0.0.1",
               *, now: datetime.datetime | None = None) -> ClusterPKI:
    """Create whatever credentials are missing (or stale) under `state_dir`; return their paths."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    paths = pki_paths(state_dir)
    paths.ca_cert_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)

    if paths.ca_cert_file.exists() and paths.ca_key_file.exists():
        ca_cert = x509.load_pem_x509_certificate(paths.ca_cert_file.read_bytes())
        ca_key = serialization.load_pem_private_key(paths.ca_key_file.read_bytes(), password=None)
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _issue_ca(ca_key, cluster_name, now)
        _write_private(paths.ca_key_file, _key_pem(ca_key))
        _write(paths.ca_cert_file, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
        for stale in (paths.server_cert_file, paths.server_key_file):
            stale.unlink(missing_ok=True)

    if _server_cert_needs_renewal(paths, ca_cert, cluster_name, listen_address, now):
        server_key = ec.generate_private_key(ec.SECP256R1())
        server_cert = _issue_server(server_key, ca_key, ca_cert, cluster_name, listen_address, now)  # type: ignore[arg-type]
        _write_private(paths.server_key_file, _key_pem(server_key))
        _write(paths.server_cert_file, server_cert.public_bytes(serialization.Encoding.PEM), 0o644)

    if not paths.token_file.exists() or not paths.token_file.read_text().strip():
        _write_private(paths.token_file, (secrets.token_urlsafe(32) + "\n").encode())
    return paths


def server_addresses(cluster_name: str, listen_address: str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the API server certificate is valid for."""
    dns = ["localhost", *SERVICE_DNS_NAMES, f"{cluster_name}-control-plane"]
    ips = ["127.0.0.1", "::1"]
    try:
        ip = ipaddress.ip_address(listen_address)
    except ValueError:
        if listen_address not in dns:
            dns.append(listen_address)
    else:
        if listen_address in UNSPECIFIED_ADDRESSES:
            hostname = socket.gethostname()
            if hostname and hostname not in dns:
                dns.append(hostname)
        elif str(ip) not in ips:
            ips.append(str(ip))
    return dns, ips


# ---------------------------------------------------------------------------------------------


def _issue_ca(key: ec.EllipticCurvePrivateKey, cluster_name: str, now: datetime.datetime) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "phalanx"),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster_name}-ca")])
    public = key.public_key()
    return (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(key, hashes.SHA256()))


def _issue_server(key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate,
                  cluster_name: str, listen_address: str, now: datetime.datetime) -> x509.Certificate:
    dns, ips = server_addresses(cluster_name, listen_address)
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    not_after = min(now + SERVER_VALIDITY, ca_cert.not_valid_after_utc)
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=False,
                                         crl_sign=False, content_commitment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))


def _server_cert_needs_renewal(paths: ClusterPKI, ca_cert: x509.Certificate, cluster_name: str,
                               listen_address: str, now: datetime.datetime) -> bool:
    if not (paths.server_cert_file.exists() and paths.server_key_file.exists()):
        return True
    cert = x509.load_pem_x509_certificate(paths.server_cert_file.read_bytes())
    if cert.issuer != ca_cert.subject or cert.not_valid_after_utc - now < RENEW_BEFORE:
        return True
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (InvalidSignature, ValueError, TypeError):  # the CA was replaced
        return True
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    have_ips = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    have_dns = set(san.get_values_for_type(x509.DNSName))
    dns, ips = server_addresses(cluster_name, listen_address)
    return not (set(ips) <= have_ips and set(dns) <= have_dns)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write_private(path: Path, data: bytes) -> None:
    _write(path, data, 0o600)


def _write(path: Path, data: bytes, mode: int) -> None:
    """Atomic write with `mode` set before any byte lands on disk."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
