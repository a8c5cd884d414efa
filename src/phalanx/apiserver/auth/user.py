"""Who is asking: the authenticated user of a request, as upstream's `user.Info` describes it.

    UserInfo("alice", groups=("dev", "system:authenticated"))
    service_account_user("team-a", "builder", uid)   # system:serviceaccount:team-a:builder + its groups
    split_service_account("system:serviceaccount:ns:sa")   # ("ns", "sa"), or None for a plain user

The well-known names (`system:masters`, `system:authenticated`, ...) are upstream's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SYSTEM_MASTERS = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
ADMIN_USER = "kubernetes-admin"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def as_status(self) -> dict:
        """`authentication.k8s.io/v1` UserInfo, as SelfSubjectReview and TokenReview return it."""
        out: dict = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo(ADMIN_USER, groups=(SYSTEM_MASTERS, ALL_AUTHENTICATED))


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}")


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def service_account_user(namespace: str, name: str, uid: str = "",
                         extra: dict[str, tuple[str, ...]] | None = None) -> UserInfo:
    return UserInfo(service_account_username(namespace, name), uid,
                    (*service_account_groups(namespace), ALL_AUTHENTICATED), extra or {})


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account user name, None for any other user."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username[len(SERVICE_ACCOUNT_PREFIX):].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name
