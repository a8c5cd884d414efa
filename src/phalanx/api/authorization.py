"""authorization.k8s.io/v1 access reviews: "may this user do this?" asked of the API server.

SelfSubjectAccessReview (`kubectl auth can-i`), SelfSubjectRulesReview (`kubectl auth can-i
--list`), SubjectAccessReview and LocalSubjectAccessReview are create-only: nothing is stored, the
answer comes back in `status`. This module registers them (so discovery and `kubectl
api-resources` list them) and validates a review's spec as upstream's
`pkg/apis/authorization/validation` does; `phalanx.apiserver.auth.reviews` answers them.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, invalid
from .common import _dict
from .registry import ResourceType, Strategy, register

Obj = dict[str, Any]

GROUP = "authorization.k8s.io"
CREATE_ONLY = ["create"]


def validate_access_review_spec(spec: Any, *, subject_required: bool) -> list[FieldError]:
    """Exactly one of resourceAttributes / nonResourceAttributes; SubjectAccessReviews name a subject."""
    spec = _dict(spec)
    errs: list[FieldError] = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        errs.append(invalid("spec.nonResourceAttributes", non_resource,
                            "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        errs.append(invalid("spec.resourceAttributes", non_resource,
                            "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if subject_required and not spec.get("user") and not spec.get("groups"):
        errs.append(invalid("spec.user", spec.get("user") or "", "at least one of user or group must be specified"))
    return errs


def validate_local_access_review(obj: Obj) -> list[FieldError]:
    """A LocalSubjectAccessReview asks about its own namespace, and only about resources."""
    spec = _dict(obj.get("spec"))
    errs = validate_access_review_spec(spec, subject_required=True)
    namespace = _dict(obj.get("metadata")).get("namespace", "")
    attrs = spec.get("resourceAttributes")
    if isinstance(attrs, dict) and attrs.get("namespace", "") != namespace:
        errs.append(invalid("spec.resourceAttributes.namespace", attrs.get("namespace", ""),
                            "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        errs.append(invalid("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                            "disallowed on this kind of request"))
    return errs


class ReviewStrategy(Strategy):
    """Reviews are answered, never stored: no defaults or validation beyond the review's own."""

    tracks_generation = False


REVIEW_STRATEGY = ReviewStrategy()

for _kind, _plural, _namespaced in (("SelfSubjectAccessReview", "selfsubjectaccessreviews", False),
                                    ("SelfSubjectRulesReview", "selfsubjectrulesreviews", False),
                                    ("SubjectAccessReview", "subjectaccessreviews", False),
                                    ("LocalSubjectAccessReview", "localsubjectaccessreviews", True)):
    register(ResourceType(GROUP, "v1", _kind, _plural, _namespaced, REVIEW_STRATEGY, verbs=list(CREATE_ONLY)))
