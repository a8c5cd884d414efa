"""Per-cluster PKI: the chain verifies, TLS to 127.0.0.1 works with only the cluster CA, keys are private."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import stat

import pytest
from cryptography import x509

from phalanx.cluster.pki import ensure_pki

NOW = datetime.datetime(2026, 5, 1, tzinfo=datetime.timezone.utc)


def load(path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def sans(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(ext.get_values_for_type(x509.DNSName)), {str(i) for i in ext.get_values_for_type(x509.IPAddress)}


def tls_handshake(server_cert, server_key, ca_file, hostname: str) -> None:
    """A full TLS handshake in memory: client trusts only `ca_file` and checks `hostname`."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(server_cert, server_key)
    client_ctx = ssl.create_default_context(cafile=str(ca_file))
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=hostname)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for name, side in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


def test_server_certificate_chains_to_the_cluster_ca(tmp_path):
    pki = ensure_pki(tmp_path, "dev", now=NOW)
    ca, server = load(pki.ca_cert_file), load(pki.server_cert_file)
    server.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    dns, ips = sans(server)
    assert {"localhost", "kubernetes.default.svc", "dev-control-plane"} <= dns
    assert {"127.0.0.1", "::1"} <= ips


@pytest.mark.parametrize("hostname", ["127.0.0.1", "localhost"])
def test_tls_handshake_succeeds_with_only_the_cluster_ca(tmp_path, hostname):
    pki = ensure_pki(tmp_path, "dev")
    tls_handshake(pki.server_cert_file, pki.server_key_file, pki.ca_cert_file, hostname)


def test_another_clusters_ca_is_not_trusted(tmp_path):
    ours = ensure_pki(tmp_path / "a", "a")
    theirs = ensure_pki(tmp_path / "b", "b")
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_handshake(ours.server_cert_file, ours.server_key_file, theirs.ca_cert_file, "127.0.0.1")


def test_keys_and_token_are_private(tmp_path):
    pki = ensure_pki(tmp_path, "dev")
    for path in (pki.ca_key_file, pki.server_key_file, pki.token_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert len(pki.token) >= 40 and pki.token == pki.token_file.read_text().strip()


def test_ensure_is_idempotent(tmp_path):
    first = ensure_pki(tmp_path, "dev")
    before = {p: p.read_bytes() for p in (first.ca_cert_file, first.server_cert_file, first.token_file)}
    second = ensure_pki(tmp_path, "dev")
    assert {p: p.read_bytes() for p in before} == before
    assert second == first


def test_listen_address_is_added_by_reissuing_only_the_server_certificate(tmp_path):
    pki = ensure_pki(tmp_path, "dev")
    ca_before, token_before = pki.ca_cert_file.read_bytes(), pki.token
    ensure_pki(tmp_path, "dev", "192.0.2.7")
    assert "192.0.2.7" in sans(load(pki.server_cert_file))[1]
    assert pki.ca_cert_file.read_bytes() == ca_before and pki.token == token_before
    load(pki.server_cert_file).verify_directly_issued_by(load(pki.ca_cert_file))


def test_expiring_server_certificate_is_renewed(tmp_path):
    pki = ensure_pki(tmp_path, "dev", now=NOW - datetime.timedelta(days=350))
    old_expiry = load(pki.server_cert_file).not_valid_after_utc
    assert old_expiry - NOW < datetime.timedelta(days=30)
    ensure_pki(tmp_path, "dev", now=NOW)
    assert load(pki.server_cert_file).not_valid_after_utc > NOW + datetime.timedelta(days=300)


def test_unspecified_listen_address_is_not_put_in_the_certificate(tmp_path):
    pki = ensure_pki(tmp_path, "dev", "0.0.0.0")
    _, ips = sans(load(pki.server_cert_file))
    assert "0.0.0.0" not in ips and all(ipaddress.ip_address(i) for i in ips)
