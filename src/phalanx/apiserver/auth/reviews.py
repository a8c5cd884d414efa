"""The create-only endpoints answered from the requester's identity instead of the store.

    reviews = Reviews(api, authorizer, authenticator)
    reviews.handles(attrs)                     # is this request one of them?
    status, body = reviews.answer(attrs, body) # (201, the review or TokenRequest with its status)

- `authorization.k8s.io/v1` SelfSubjectAccessReview (`kubectl auth can-i`), SubjectAccessReview,
  LocalSubjectAccessReview: `status.allowed` and the authorizer's reason;
- SelfSubjectRulesReview (`kubectl auth can-i --list`): the rules RBAC grants in `spec.namespace`;
- `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`) and TokenReview;
- `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token` (TokenRequest, `kubectl create token`):
  a signed token for the ServiceAccount, optionally bound to a Pod, Secret or Node.

Nothing here is stored; the request was authorized (`create` on the resource) before it arrives.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ...api import authentication, authorization
from ...machinery import errors
from ..rest import API
from .attributes import Attributes
from .authenticator import API_AUDIENCE, BOUND_OBJECT_KEYS, TokenAuthenticator
from .rbac import RBACAuthorizer
from .user import UserInfo

Obj = dict[str, Any]
AUTHZ = authorization.GROUP
AUTHN = authentication.GROUP
ACCESS_REVIEWS = {"selfsubjectaccessreviews": "SelfSubjectAccessReview",
                  "subjectaccessreviews": "SubjectAccessReview",
                  "localsubjectaccessreviews": "LocalSubjectAccessReview"}


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def review_attributes(user: UserInfo, spec: Obj, namespace: str | None = None) -> Attributes:
    """The attributes a review asks about (the namespace of a LocalSubjectAccessReview wins)."""
    res = spec.get("resourceAttributes")
    if isinstance(res, dict):
        return Attributes(user, res.get("verb", ""), True, api_group=res.get("group", ""),
                          api_version=res.get("version", ""),
                          namespace=namespace if namespace is not None else res.get("namespace", ""),
                          resource=res.get("resource", ""), subresource=res.get("subresource", ""),
                          name=res.get("name", ""))
    non = _dict(spec.get("nonResourceAttributes"))
    return Attributes(user, non.get("verb", ""), False, path=non.get("path", ""))


def spec_user(spec: Obj) -> UserInfo:
    """The subject of a SubjectAccessReview, as its spec names it."""
    extra = {k: tuple(v) for k, v in _dict(spec.get("extra")).items() if isinstance(v, list)}
    return UserInfo(spec.get("user") or "", spec.get("uid") or "", tuple(spec.get("groups") or ()), extra)


def rules_status(rules: list[Obj]) -> Obj:
    """SubjectRulesReviewStatus from policy rules (resource and non-resource rules apart)."""
    resource_rules, url_rules = [], []
    for r in rules:
        if r.get("nonResourceURLs"):
            url_rules.append({"verbs": list(r.get("verbs") or []), "nonResourceURLs": list(r["nonResourceURLs"])})
            continue
        out: Obj = {"verbs": list(r.get("verbs") or []), "apiGroups": list(r.get("apiGroups") or []),
                    "resources": list(r.get("resources") or [])}
        if r.get("resourceNames"):
            out["resourceNames"] = list(r["resourceNames"])
        resource_rules.append(out)
    return {"resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": False}


class Reviews:
    def __init__(self, api: API, authorizer: RBACAuthorizer, authenticator: TokenAuthenticator):
        self.api = api
        self.authorizer = authorizer
        self.authenticator = authenticator

    @staticmethod
    def handles(attrs: Attributes) -> bool:
        if not attrs.resource_request or attrs.api_version != "v1":
            return False
        if attrs.api_group == "":
            return attrs.resource == "serviceaccounts" and attrs.subresource == "token" and bool(attrs.name)
        if attrs.api_group == AUTHZ:
            return attrs.resource in ACCESS_REVIEWS or attrs.resource == "selfsubjectrulesreviews"
        return attrs.api_group == AUTHN and attrs.resource in ("selfsubjectreviews", "tokenreviews")

    def answer(self, attrs: Attributes, body: Obj) -> Obj:
        if attrs.verb != "create":
            raise errors.method_not_allowed("the server does not allow this method on the requested resource")
        if attrs.resource == "serviceaccounts":
            return self.token_request(attrs.namespace, attrs.name, body)
        if attrs.resource in ACCESS_REVIEWS:
            return self.access_review(attrs, body)
        if attrs.resource == "selfsubjectrulesreviews":
            namespace = _dict(body.get("spec")).get("namespace", "")
            return self._answered(body, AUTHZ, "SelfSubjectRulesReview",
                                  rules_status(self.authorizer.rules_for(attrs.user, namespace)))
        if attrs.resource == "selfsubjectreviews":
            return self._answered(body, AUTHN, "SelfSubjectReview", {"userInfo": attrs.user.as_status()})
        return self.token_review(body)

    # -- answers -----------------------------------------------------------------------------
    @staticmethod
    def _answered(body: Obj, group: str, kind: str, status: Obj) -> Obj:
        out = {k: v for k, v in body.items() if k not in ("status", "metadata")}
        out["kind"], out["apiVersion"] = kind, f"{group}/v1"
        out["metadata"] = {"creationTimestamp": None, **{k: v for k, v in _dict(body.get("metadata")).items()
                                                        if k in ("name", "namespace")}}
        out["status"] = status
        return out

    def access_review(self, attrs: Attributes, body: Obj) -> Obj:
        kind = ACCESS_REVIEWS[attrs.resource]
        spec = _dict(body.get("spec"))
        if kind == "LocalSubjectAccessReview":
            body = {**body, "metadata": {**_dict(body.get("metadata")), "namespace": attrs.namespace}}
            errs = authorization.validate_local_access_review(body)
        else:
            errs = authorization.validate_access_review_spec(spec, subject_required=kind == "SubjectAccessReview")
        if errs:
            raise errors.invalid_error(kind, AUTHZ, "", errs)
        subject = attrs.user if kind == "SelfSubjectAccessReview" else spec_user(spec)
        asked = review_attributes(subject, spec, attrs.namespace if kind == "LocalSubjectAccessReview" else None)
        decision = self.authorizer.authorize(asked)
        status: Obj = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return self._answered(body, AUTHZ, kind, status)

    def token_review(self, body: Obj) -> Obj:
        spec = _dict(body.get("spec"))
        user = self.authenticator.authenticate(spec.get("token") or "") if spec.get("token") else None
        if user is None:
            return self._answered(body, AUTHN, "TokenReview", {"user": {}, "error": "invalid bearer token"})
        audiences = list(spec.get("audiences") or [API_AUDIENCE])
        return self._answered(body, AUTHN, "TokenReview",
                              {"authenticated": True, "user": user.as_status(), "audiences": audiences})

    def token_request(self, namespace: str, name: str, body: Obj) -> Obj:
        sa = self.api.get(self.api.resource("", "v1", "serviceaccounts"), namespace, name)
        request = {k: v for k, v in body.items() if k != "status"}
        authentication.default_token_request(request)
        errs = authentication.validate_token_request(request)
        if errs:
            raise errors.invalid_error("TokenRequest", AUTHN, name, errs)
        spec = request["spec"]
        audiences = list(spec.get("audiences") or [API_AUDIENCE])
        bound = self._bound_object(namespace, spec.get("boundObjectRef"))
        token, expiry = self.authenticator.service_account_token(sa, audiences, int(spec["expirationSeconds"]), bound)
        spec["audiences"] = audiences
        return {"kind": "TokenRequest", "apiVersion": f"{AUTHN}/v1",
                "metadata": {"name": name, "namespace": namespace,
                             "creationTimestamp": _rfc3339(self.authenticator.now())},
                "spec": spec, "status": {"token": token, "expirationTimestamp": _rfc3339(expiry)}}

    def _bound_object(self, namespace: str, ref: Any) -> Obj | None:
        if not isinstance(ref, dict):
            return None
        field, key = BOUND_OBJECT_KEYS[ref["kind"]]
        plural = key.split("/", 1)[1]
        obj = self.api.store.get(key, "" if field == "node" else namespace, ref.get("name", ""))
        if obj is None:
            raise errors.not_found_error(plural, "", ref.get("name", ""))
        uid = obj["metadata"].get("uid", "")
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.conflict(plural, "", ref.get("name", ""),
                                  f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                                  f"in record. The object might have been deleted and then recreated")
        return {**obj, "kind": ref["kind"]}

