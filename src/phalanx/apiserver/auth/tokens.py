"""Signed bearer tokens: the JWTs of ServiceAccount TokenRequests and of `phalanx create kubeconfig`.

    key = signing_key(state_dir)        # pki/sa.key, an ECDSA P-256 key created once per cluster
    token = key.sign({"sub": "alice", "exp": ...})
    claims = key.verify(token)          # None unless the signature is ours (expiry is the caller's)

Tokens are compact JWS with `alg: ES256` (RFC 7518 §3.4: the raw 64-byte r||s signature) and the
key id upstream derives, the URL-safe SHA-256 of the public key's DER. This is written on the
`cryptography` package the PKI already uses rather than adding PyJWT: signing and verifying one
algorithm is a few lines, and the server accepts exactly the tokens it can have issued.

The key lives next to the cluster CA (`pki/sa.key`, 0600), like kubeadm's `sa.key`; the control
plane and the CLI both call `signing_key(state_dir)`, which creates it atomically if it is missing.
A control plane without a state dir (tests) signs with a key of its own process.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

SIGNING_KEY_FILE = Path("pki") / "sa.key"
ALGORITHM = "ES256"
_COORDINATE_BYTES = 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SigningKey:
    def __init__(self, key: ec.EllipticCurvePrivateKey):
        self._key = key
        self._public = key.public_key()
        der = self._public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.key_id = _b64(hashlib.sha256(der).digest())
        self._header = _b64(orjson.dumps({"alg": ALGORITHM, "kid": self.key_id}))

    @classmethod
    def generate(cls) -> "SigningKey":
        return cls(ec.generate_private_key(ec.SECP256R1()))

    def sign(self, claims: dict[str, Any]) -> str:
        signing_input = f"{self._header}.{_b64(orjson.dumps(claims))}"
        r, s = decode_dss_signature(self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64(r.to_bytes(_COORDINATE_BYTES, 'big') + s.to_bytes(_COORDINATE_BYTES, 'big'))}"

    def verify(self, token: str) -> dict[str, Any] | None:
        """The claims of a token this key signed, else None (malformed, other key, other algorithm)."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            header = orjson.loads(_unb64(parts[0]))
            raw = _unb64(parts[2])
            if not isinstance(header, dict) or header.get("alg") != ALGORITHM or len(raw) != 2 * _COORDINATE_BYTES:
                return None
            signature = encode_dss_signature(int.from_bytes(raw[:_COORDINATE_BYTES], "big"),
                                             int.from_bytes(raw[_COORDINATE_BYTES:], "big"))
            self._public.verify(signature, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
            claims = orjson.loads(_unb64(parts[1]))
        except (ValueError, binascii.Error, InvalidSignature, orjson.JSONDecodeError):
            return None
        return claims if isinstance(claims, dict) else None


def signing_key(state_dir: str | os.PathLike) -> SigningKey:
    """The cluster's token signing key, created (atomically, 0600) on first use."""
    path = Path(state_dir) / SIGNING_KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if another process created the key meanwhile: use theirs
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(loaded, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path} is not an ECDSA private key")
    return SigningKey(loaded)
