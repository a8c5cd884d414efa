"""kube-apiserver's request and storage metrics (`k8s.io/apiserver` endpoints and storage).

- `apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}`
- `apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,component}`
- `apiserver_longrunning_requests{verb,group,version,resource,subresource,scope,component}`: open
  watches and followed logs (upstream's replacement of the removed `apiserver_registered_watchers`)
- `apiserver_storage_objects{resource}`: objects stored per resource (`pods`, `deployments.apps`),
  read from the store when scraped.

`request_labels(...)` gives the label values as upstream's `MonitorRequest` reports them: the verb
is the canonical one (`LIST` for a GET of a collection, `WATCH`, `APPLY` for a server-side apply
patch), the scope `resource`, `namespace` or `cluster`, the component `apiserver`.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from .registry import REGISTRY, ScrapeGauge

COMPONENT = "apiserver"
REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
LONGRUNNING_LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "component")
# component-base's request latency buckets for the API server
REQUEST_DURATION_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8,
                            10, 15, 20, 30, 45, 60)

REQUESTS = Counter(
    "apiserver_request_total",
    "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, "
    "resource, scope, component, and HTTP response code.",
    (*REQUEST_LABELS, "code"), registry=REGISTRY)
REQUEST_DURATION = Histogram(
    "apiserver_request_duration_seconds",
    "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, "
    "resource, subresource, scope and component.",
    REQUEST_LABELS, buckets=REQUEST_DURATION_BUCKETS, registry=REGISTRY)
LONGRUNNING = Gauge(
    "apiserver_longrunning_requests",
    "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, "
    "resource, scope and component. Not all requests are tracked this way.",
    LONGRUNNING_LABELS, registry=REGISTRY)
STORAGE_OBJECTS = ScrapeGauge(
    "apiserver_storage_objects",
    "[STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching "
    "error, the value will be -1.",
    ("resource",))


def canonical_verb(method: str, *, collection: bool, watch: bool, apply: bool) -> str:
    """The verb label: GET of a collection is LIST, a watch WATCH, an apply patch APPLY."""
    if watch:
        return "WATCH"
    if method in ("GET", "HEAD"):
        return "LIST" if collection else "GET"
    if method == "PATCH" and apply:
        return "APPLY"
    return method


def scope_of(*, name: str | None, namespace: str | None) -> str:
    """`resource` for a named object, `namespace` for a namespaced collection, else `cluster`."""
    if name:
        return "resource"
    return "namespace" if namespace else "cluster"


def storage_resource_label(key: str) -> str:
    """A store key (`core/pods`, `apps/deployments`) as the `resource` label (`pods`, `deployments.apps`)."""
    group, _, plural = key.partition("/")
    return plural if group == "core" else f"{plural}.{group}"


def observe_request(labels: tuple[str, ...], code: int, seconds: float) -> None:
    """One finished request: its counter by code and its latency."""
    REQUESTS.labels(*labels, str(code)).inc()
    REQUEST_DURATION.labels(*labels).observe(seconds)
