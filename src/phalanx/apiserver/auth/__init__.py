"""Authentication, impersonation and RBAC authorization of the HTTP API, as upstream's API server
does them; the reviews (`kubectl auth can-i|whoami`) and TokenRequests (`kubectl create token`).

- `user`: UserInfo and the well-known users and groups;
- `tokens`: the ES256 JWT signing key of a cluster (`pki/sa.key`);
- `authenticator`: admin token, ServiceAccount tokens, `phalanx create kubeconfig` user tokens;
- `attributes`: a request's authorization attributes and upstream's 403 wording;
- `rbac`: the RBAC authorizer (and `system:masters`);
- `policy`: upstream's default ClusterRoles and bindings, written at start;
- `reviews`: the create-only review endpoints and TokenRequest;
- `filters`: `RequestAuth`, the per-request chain `apiserver.server` calls.

In-process components (controllers, scheduler, simulated kubelets) call `rest.API` directly and
are not subject to any of this, as upstream's loopback client is privileged.
"""
