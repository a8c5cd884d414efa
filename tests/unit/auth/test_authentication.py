"""Token authentication: the signing key's JWTs, the admin token, ServiceAccount tokens (expiry,
audience, the account and bound object still existing) and `phalanx create kubeconfig` user tokens."""

from __future__ import annotations

import base64
import os
import stat

import orjson
import pytest

from phalanx.apiserver.auth.authenticator import API_AUDIENCE, TokenAuthenticator, user_token_claims
from phalanx.apiserver.auth.tokens import SigningKey, signing_key

NOW = 1_800_000_000.0


class Clock:
    def __init__(self):
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def sa(name="builder", namespace="team-a", uid="uid-1"):
    return {"kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace, "uid": uid}}


class Objects:
    def __init__(self, *objs):
        self.by_key = {}
        for o in objs:
            self.put(o)

    def put(self, obj):
        key = {"ServiceAccount": "core/serviceaccounts", "Pod": "core/pods"}[obj["kind"]]
        md = obj["metadata"]
        self.by_key[(key, md.get("namespace", ""), md["name"])] = obj

    def drop(self, obj):
        self.by_key = {k: v for k, v in self.by_key.items() if v is not obj}

    def __call__(self, key, namespace, name):
        return self.by_key.get((key, namespace, name))


@pytest.fixture
def clock():
    return Clock()


def authenticator(objects, clock, key=None):
    return TokenAuthenticator("admin-token", key or SigningKey.generate(), objects, now=clock)


def test_signatures_verify_only_with_the_signing_key():
    key, other = SigningKey.generate(), SigningKey.generate()
    token = key.sign({"sub": "alice"})
    header = orjson.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "ES256", "kid": key.key_id}
    assert key.verify(token) == {"sub": "alice"}
    assert other.verify(token) is None
    head, body, sig = token.split(".")
    forged = base64.urlsafe_b64encode(orjson.dumps({"sub": "root"})).rstrip(b"=").decode()
    for bad in (f"{head}.{forged}.{sig}", f"{head}.{body}", "not-a-token", f"{head}.{body}.{sig[:-4]}"):
        assert key.verify(bad) is None


def test_signing_key_is_created_once_and_private(tmp_path):
    first = signing_key(tmp_path)
    again = signing_key(tmp_path)
    assert first.key_id == again.key_id
    assert stat.S_IMODE(os.stat(tmp_path / "pki" / "sa.key").st_mode) == 0o600
    assert again.verify(first.sign({"a": 1})) == {"a": 1}


def test_admin_token_is_system_masters(clock):
    user = authenticator(Objects(), clock).authenticate("admin-token")
    assert (user.name, user.groups) == ("kubernetes-admin", ("system:masters", "system:authenticated"))
    assert authenticator(Objects(), clock).authenticate("admin-tokem") is None


def test_service_account_token_authenticates_as_the_account(clock):
    account = sa()
    authn = authenticator(Objects(account), clock)
    token, expiry = authn.service_account_token(account, [API_AUDIENCE], 3600)
    assert expiry == NOW + 3600
    user = authn.authenticate(token)
    assert user.name == "system:serviceaccount:team-a:builder"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated")
    assert user.uid == "uid-1"
    assert list(user.extra) == ["authentication.kubernetes.io/credential-id"]


# What makes a ServiceAccount token stop working.
REJECTIONS = [
    ("expired", lambda objs, clock, acct, pod: setattr(clock, "t", NOW + 3601)),
    ("account deleted", lambda objs, clock, acct, pod: objs.drop(acct)),
    ("account recreated", lambda objs, clock, acct, pod: objs.put(sa(uid="uid-2"))),
    ("bound pod deleted", lambda objs, clock, acct, pod: objs.drop(pod)),
]


@pytest.mark.parametrize("case,change", REJECTIONS, ids=[c for c, _ in REJECTIONS])
def test_service_account_token_rejected(case, change, clock):
    account = sa()
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "team-a", "uid": "pod-uid"}}
    objs = Objects(account, pod)
    authn = authenticator(objs, clock)
    token, _ = authn.service_account_token(account, [API_AUDIENCE], 3600, bound=pod)
    assert authn.authenticate(token) is not None
    change(objs, clock, account, pod)
    assert authn.authenticate(token) is None


def test_token_for_another_audience_does_not_authenticate(clock):
    account = sa()
    authn = authenticator(Objects(account), clock)
    token, _ = authn.service_account_token(account, ["vault"], 3600)
    assert authn.authenticate(token) is None


def test_user_token_carries_user_and_groups(clock):
    key = SigningKey.generate()
    authn = authenticator(Objects(), clock, key)
    token = key.sign(user_token_claims("alice", ["dev", "ops"], 600, NOW))
    user = authn.authenticate(token)
    assert (user.name, user.groups) == ("alice", ("dev", "ops", "system:authenticated"))
    clock.t = NOW + 601
    assert authn.authenticate(token) is None
    assert authenticator(Objects(), Clock()).authenticate(token) is None  # another cluster's key
