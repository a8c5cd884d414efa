"""Bearer-token authentication: which user a request's `Authorization: Bearer ...` stands for.

    authn = TokenAuthenticator(admin_token, key, lookup)
    authn.authenticate(token)      # UserInfo, or None (the request gets 401 Unauthorized)

Three kinds of token are accepted:

- the cluster's static admin token (the one in `phalanx get kubeconfig`): user `kubernetes-admin`
  in `system:masters`, which RBAC lets do everything;
- ServiceAccount tokens from the TokenRequest API (`kubectl create token SA`): JWTs with upstream's
  claims (`sub: system:serviceaccount:NS:NAME`, `kubernetes.io: {namespace, serviceaccount,
  pod|secret|node}`), valid while unexpired, for the API server's audience, and while the
  ServiceAccount (and the bound object) still exists with the same uid. They authenticate as the
  service account in `system:serviceaccounts`, `system:serviceaccounts:NS`, `system:authenticated`;
- user tokens minted by `phalanx create kubeconfig` (`sub` the user, `groups` its groups), signed
  with the same key, authenticating as that user in those groups and `system:authenticated`.

Signature checks are cached per token; expiry and the ServiceAccount lookups are not.
"""

from __future__ import annotations

import hmac
import time
import uuid
from typing import Any, Callable, Iterable

from .tokens import SigningKey
from .user import ADMIN, ALL_AUTHENTICATED, UserInfo, service_account_user, service_account_username

Obj = dict[str, Any]
Lookup = Callable[[str, str, str], Any]

API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ISSUER = API_AUDIENCE
KUBERNETES_CLAIM = "kubernetes.io"
CREDENTIAL_ID_EXTRA = "authentication.kubernetes.io/credential-id"
BOUND_OBJECT_KEYS = {"Pod": ("pod", "core/pods"), "Secret": ("secret", "core/secrets"), "Node": ("node", "core/nodes")}
MAX_CACHED_TOKENS = 4096
CLOCK_SKEW_SECONDS = 60


def user_token_claims(user: str, groups: Iterable[str], seconds: int, now: float) -> dict[str, Any]:
    """Claims of a `phalanx create kubeconfig` token."""
    issued = int(now)
    return {"aud": [API_AUDIENCE], "exp": issued + seconds, "groups": list(groups), "iat": issued,
            "iss": ISSUER, "jti": str(uuid.uuid4()), "nbf": issued, "sub": user}


class TokenAuthenticator:
    def __init__(self, admin_token: str | None, key: SigningKey, lookup: Lookup, *,
                 now: Callable[[], float] = time.time, audiences: tuple[str, ...] = (API_AUDIENCE,)):
        self.admin_token = admin_token.encode() if admin_token else None
        self.key = key
        self.lookup = lookup
        self.now = now
        self.audiences = audiences
        self._verified: dict[str, dict[str, Any]] = {}

    def authenticate(self, token: str) -> UserInfo | None:
        if self.admin_token is not None and hmac.compare_digest(token.encode(), self.admin_token):
            return ADMIN
        claims = self._claims(token)
        if claims is None or not self._current(claims):
            return None
        if KUBERNETES_CLAIM in claims:
            return self._service_account(claims)
        sub, groups = claims.get("sub"), claims.get("groups") or []
        if not isinstance(sub, str) or not sub or not all(isinstance(g, str) for g in groups):
            return None
        return UserInfo(sub, groups=tuple(dict.fromkeys([*groups, ALL_AUTHENTICATED])))

    # -- issuing -----------------------------------------------------------------------------
    def service_account_token(self, service_account: Obj, audiences: list[str], seconds: int,
                              bound: Obj | None = None) -> tuple[str, int]:
        """(token, expiry as a Unix time) for a TokenRequest; `bound` is the looked-up bound object."""
        md = service_account["metadata"]
        issued = int(self.now())
        private: dict[str, Any] = {"namespace": md["namespace"],
                                   "serviceaccount": {"name": md["name"], "uid": md.get("uid", "")}}
        if bound is not None:
            field, _ = BOUND_OBJECT_KEYS[bound["kind"]]
            private[field] = {"name": bound["metadata"]["name"], "uid": bound["metadata"].get("uid", "")}
        claims = {"aud": list(audiences), "exp": issued + seconds, "iat": issued, "iss": ISSUER,
                  "jti": str(uuid.uuid4()), KUBERNETES_CLAIM: private, "nbf": issued,
                  "sub": service_account_username(md["namespace"], md["name"])}
        return self.key.sign(claims), issued + seconds

    # -- checks ------------------------------------------------------------------------------
    def _claims(self, token: str) -> dict[str, Any] | None:
        claims = self._verified.get(token)
        if claims is None:
            claims = self.key.verify(token)
            if claims is None:
                return None
            if len(self._verified) >= MAX_CACHED_TOKENS:
                self._verified.clear()
            self._verified[token] = claims
        return claims

    def _current(self, claims: dict[str, Any]) -> bool:
        now = self.now()
        exp, nbf = claims.get("exp"), claims.get("nbf", 0)
        if not isinstance(exp, (int, float)) or exp <= now or not isinstance(nbf, (int, float)):
            return False
        if nbf > now + CLOCK_SKEW_SECONDS or claims.get("iss") != ISSUER:
            return False
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences or []
        return any(a in self.audiences for a in audiences)

    def _service_account(self, claims: dict[str, Any]) -> UserInfo | None:
        private = claims.get(KUBERNETES_CLAIM)
        if not isinstance(private, dict):
            return None
        namespace, sa = private.get("namespace"), private.get("serviceaccount") or {}
        if not isinstance(namespace, str) or not isinstance(sa, dict):
            return None
        stored = self.lookup("core/serviceaccounts", namespace, sa.get("name", ""))
        if stored is None or stored["metadata"].get("uid", "") != sa.get("uid", ""):
            return None
        for field, key in BOUND_OBJECT_KEYS.values():
            ref = private.get(field)
            if isinstance(ref, dict):
                bound = self.lookup(key, "" if field == "node" else namespace, ref.get("name", ""))
                if bound is None or bound["metadata"].get("uid", "") != ref.get("uid", ""):
                    return None
        extra: dict[str, tuple[str, ...]] = {CREDENTIAL_ID_EXTRA: (f"JTI={claims['jti']}",)} if claims.get("jti") else {}
        return service_account_user(namespace, sa.get("name", ""), stored["metadata"].get("uid", ""), extra)
