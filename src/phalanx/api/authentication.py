"""authentication.k8s.io/v1: who am I (SelfSubjectReview), whose token is this (TokenReview),
and the TokenRequest a ServiceAccount's `token` subresource takes.

SelfSubjectReview (`kubectl auth whoami`) and TokenReview are create-only and never stored;
this module registers them for discovery and holds the TokenRequest defaults and validation of
upstream's `pkg/apis/authentication/validation` and `pkg/registry/core/serviceaccount/storage`.
`phalanx.apiserver.auth.reviews` answers them.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, invalid, not_supported
from .authorization import REVIEW_STRATEGY
from .common import _dict
from .registry import ResourceType, register

Obj = dict[str, Any]

GROUP = "authentication.k8s.io"
DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600
MIN_TOKEN_EXPIRATION_SECONDS = 600
MAX_TOKEN_EXPIRATION_SECONDS = 1 << 32
BOUND_OBJECT_KINDS = ("Pod", "Secret", "Node")


def default_token_request(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("expirationSeconds") is None:
        spec["expirationSeconds"] = DEFAULT_TOKEN_EXPIRATION_SECONDS


def validate_token_request(obj: Obj) -> list[FieldError]:
    """Upstream `ValidateTokenRequest` plus the storage's bound-object kind check."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    seconds = spec.get("expirationSeconds")
    if not isinstance(seconds, int) or seconds < MIN_TOKEN_EXPIRATION_SECONDS:
        errs.append(invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"))
    elif seconds > MAX_TOKEN_EXPIRATION_SECONDS:
        errs.append(invalid("spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds"))
    ref = spec.get("boundObjectRef")
    if isinstance(ref, dict) and ref.get("kind") not in BOUND_OBJECT_KINDS:
        errs.append(not_supported("spec.boundObjectRef.kind", ref.get("kind") or "", BOUND_OBJECT_KINDS))
    return errs


register(ResourceType(GROUP, "v1", "SelfSubjectReview", "selfsubjectreviews", False, REVIEW_STRATEGY,
                      verbs=["create"]))
register(ResourceType(GROUP, "v1", "TokenReview", "tokenreviews", False, REVIEW_STRATEGY, verbs=["create"]))
