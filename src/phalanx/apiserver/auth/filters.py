"""The HTTP request's way through authentication, impersonation and authorization, as upstream's
handler chain (`WithAuthentication` → `WithImpersonation` → `WithAuthorization`) takes it.

    auth = RequestAuth.for_cluster(api, admin_token, state_dir)   # or RequestAuth.open(api): no token
    response = await auth.check(request)     # None: go on to the handler; a Response: answered here;
                                             # raises StatusError 401/403 (500 for a malformed impersonation)

1. Authentication: `Authorization: Bearer <token>` (`TokenAuthenticator`); a request without
   credentials may reach only the anonymous paths (health and version), any other gets 401.
   A server started without an admin token authenticates every request as the admin.
2. Impersonation: `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
   `Impersonate-Extra-<key>` (`kubectl --as`, `--as-group`) need the `impersonate` verb on
   `users` / `serviceaccounts` (for `system:serviceaccount:NS:NAME`), `groups`, `uids` and
   `userextras/<key>`; the request then runs as that user, in `system:authenticated`.
3. Authorization: the RBAC authorizer on the request's attributes; a denial is upstream's 403
   (`pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the
   namespace "default"`). Writes of Roles and bindings are then checked for escalation
   (`escalation`): nobody grants what they do not hold.
4. The reviews and TokenRequests (`reviews.Reviews`) are answered here, from the user's identity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Collection

import orjson
from aiohttp import web

from ...machinery import errors
from ..rest import API
from . import escalation
from .attributes import Attributes, forbidden_error, request_attributes
from .authenticator import TokenAuthenticator
from .rbac import RBACAuthorizer
from .reviews import Reviews
from .tokens import SigningKey, signing_key
from .user import (ADMIN, ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo, service_account_groups,
                   split_service_account)

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_EXTRA = "Impersonate-Extra-"
ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/healthz/", "/livez/", "/readyz/",
                             "/version/"})
USER_KEY = web.RequestKey("phalanx.user", UserInfo)  # the authenticated (or impersonated) user of a request


def _json_response(body: Any, status: int) -> web.Response:
    resp = web.Response(body=orjson.dumps(body), status=status, content_type="application/json")
    resp.headers["Cache-Control"] = "no-cache, private"
    return resp


class RequestAuth:
    def __init__(self, api: API, authenticator: TokenAuthenticator, authorizer: RBACAuthorizer, *,
                 require_token: bool = True, anonymous_paths: Collection[str] = ANONYMOUS_PATHS):
        self.api = api
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.require_token = require_token
        self.anonymous_paths = anonymous_paths
        self.reviews = Reviews(api, authorizer, authenticator)

    @classmethod
    def for_cluster(cls, api: API, admin_token: str | None, state_dir: str | Path | None = None, *,
                    anonymous_paths: Collection[str] = ANONYMOUS_PATHS) -> "RequestAuth":
        """The cluster's chain: tokens signed with the state dir's key (a process key without one);
        without an admin token every request is the admin's, as before authorization existed."""
        key = signing_key(state_dir) if state_dir else SigningKey.generate()
        authenticator = TokenAuthenticator(admin_token, key, api.ctx.lookup, now=lambda: api.now().timestamp())
        return cls(api, authenticator, RBACAuthorizer(api.ctx.lookup, api.ctx.list_objects),
                   require_token=admin_token is not None, anonymous_paths=anonymous_paths)

    async def check(self, request: web.Request) -> web.StreamResponse | None:
        user = self.authenticate(request)
        if user is None:
            return None  # an anonymous path
        user = self.impersonate(request, user)
        request[USER_KEY] = user
        attrs = request_attributes(user, request.method, request.path, request.query)
        decision = self.authorizer.authorize(attrs)
        if not decision.allowed:
            raise forbidden_error(attrs, decision.reason)
        if escalation.guards(attrs) and not self._privileged(user):
            written = await self._written_object(request, attrs)
            if written is not None:
                escalation.check_rbac_write(self.authorizer, user, attrs.resource, attrs.namespace, written)
        if not self.reviews.handles(attrs):
            return None
        body = await self._body(request)
        return _json_response(self.reviews.answer(attrs, body), 201)

    # -- the steps ---------------------------------------------------------------------------
    def authenticate(self, request: web.Request) -> UserInfo | None:
        if not self.require_token:
            return ADMIN
        header = request.headers.get("Authorization", "")
        if not header:
            if request.path in self.anonymous_paths:
                return None
            raise errors.unauthorized()
        scheme, _, token = header.partition(" ")
        user = self.authenticator.authenticate(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise errors.unauthorized()
        return user

    def impersonate(self, request: web.Request, requestor: UserInfo) -> UserInfo:
        headers = request.headers
        username = headers.get(IMPERSONATE_USER, "")
        groups = tuple(headers.getall(IMPERSONATE_GROUP, ()))
        uid = headers.get(IMPERSONATE_UID, "")
        extra: dict[str, tuple[str, ...]] = {}
        for header in headers:
            if header.lower().startswith(IMPERSONATE_EXTRA.lower()):
                key = header[len(IMPERSONATE_EXTRA):].lower()
                extra[key] = tuple(headers.getall(header))
        if not username:
            if groups or uid or extra:
                raise errors.internal_error("requested impersonation of groups, uid or extra without impersonating a user")
            return requestor
        asked = [self._impersonation_attributes(requestor, "users", username)]
        asked += [Attributes(requestor, "impersonate", True, resource="groups", name=g) for g in groups]
        if uid:
            asked.append(Attributes(requestor, "impersonate", True, api_group="authentication.k8s.io",
                                    resource="uids", name=uid))
        for key, values in extra.items():
            asked += [Attributes(requestor, "impersonate", True, api_group="authentication.k8s.io",
                                 resource="userextras", subresource=key, name=v) for v in values]
        for attrs in asked:
            decision = self.authorizer.authorize(attrs)
            if not decision.allowed:
                raise forbidden_error(attrs, decision.reason)
        sa = split_service_account(username)
        if sa is not None and not groups:
            groups = service_account_groups(sa[0])
        implied = ALL_UNAUTHENTICATED if username == ANONYMOUS else ALL_AUTHENTICATED
        if implied not in groups:
            groups = (*groups, implied)
        return UserInfo(username, uid, groups, extra)

    @staticmethod
    def _impersonation_attributes(requestor: UserInfo, resource: str, username: str) -> Attributes:
        sa = split_service_account(username)
        if sa is not None:
            return Attributes(requestor, "impersonate", True, namespace=sa[0], resource="serviceaccounts", name=sa[1])
        return Attributes(requestor, "impersonate", True, resource=resource, name=username)

    def _privileged(self, user: UserInfo) -> bool:
        return any(g in user.groups for g in self.authorizer.privileged_groups)

    async def _written_object(self, request: web.Request, attrs: Attributes) -> dict | None:
        """The Role or binding a create, update or patch would store (a patch is tried as a dry
        run); None when the request is malformed, so that the handler reports that."""
        try:
            if attrs.verb != "patch":
                return await self._body(request)
            rt = self.api.resource(attrs.api_group, attrs.api_version, attrs.resource)
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            obj, _ = self.api.patch(rt, attrs.namespace, attrs.name, content_type, await request.read(),
                                    dry_run=True, field_manager=request.query.get("fieldManager") or "escalation-check",
                                    force=request.query.get("force") in ("1", "true", "True"))
            return obj
        except errors.StatusError:
            return None

    @staticmethod
    async def _body(request: web.Request) -> dict:
        raw = await request.read()
        content_type = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if content_type.startswith("application/vnd.kubernetes.protobuf"):
            from .. import protobuf
            body = protobuf.decode(raw)
        else:
            try:
                body = orjson.loads(raw) if raw.strip() else {}
            except orjson.JSONDecodeError as e:
                raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
        if not isinstance(body, dict):
            raise errors.bad_request("couldn't get version/kind; json parse error: the body is not a JSON object")
        return body
