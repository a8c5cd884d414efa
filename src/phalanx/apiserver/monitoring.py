"""What the API server says about itself: `/metrics`, `/livez` and `/readyz`, and the labels of
request metrics.

Health checks, as kube-apiserver's `healthz` package serves them:

    GET /readyz              200 `ok`, or 500 listing the failed checks
    GET /readyz?verbose      one line per check: `[+]ping ok` ... `readyz check passed`
    GET /readyz/storage      one check alone
    GET /readyz?exclude=log  skip a check (`[+]log excluded: ok`)

Checks named as upstream names them where they hold: `ping` (the server answers), `log` (the
process's log handlers flush), `shutdown` (readyz: fails once the server stops taking requests). Upstream's `etcd` (and `etcd-readiness`) become `storage`: phalanx
keeps objects in SQLite or memory, and the check reads the store. Upstream's post-start hooks and
`informer-sync` have no counterpart here and are not listed.

`/metrics` is the process's Prometheus registry (`phalanx.metrics`): the API server's, the
scheduler's and the controllers' metrics together. It is a non-resource URL: `get` on `/metrics`
(cluster-admin, or the `system:monitoring` ClusterRole bound to the group `system:monitoring`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from aiohttp import web
from multidict import MultiMapping

from .. import metrics
from ..metrics import apiserver as apimetrics
from ..store import Store

log = logging.getLogger("phalanx.apiserver")

Check = Callable[[], str | None]  # None: healthy; else why not
LABELS_KEY = web.RequestKey("phalanx.metric_labels", tuple)


def storage_check(store: Store) -> Check:
    def check() -> str | None:
        try:
            store.resource_version  # noqa: B018 - the read is the check
            store.count("core/namespaces")
        except Exception as e:  # noqa: BLE001 - any failure of the store is the answer
            return f"{type(e).__name__}: {e}"
        return None
    return check


def log_check() -> str | None:
    """The root logger's handlers flush (upstream's `log` check: klog is not stuck)."""
    try:
        for handler in logging.getLogger().handlers:
            handler.flush()
    except Exception as e:  # noqa: BLE001 - a handler that cannot flush is the answer
        return f"{type(e).__name__}: {e}"
    return None


class HealthChecks:
    """The named checks of `/livez` and `/readyz` and their answers."""

    def __init__(self, store: Store, is_ready: Callable[[], bool]):
        base: list[tuple[str, Check]] = [("ping", lambda: None), ("log", log_check),
                                         ("storage", storage_check(store))]
        self.checks: dict[str, list[tuple[str, Check]]] = {
            "livez": base, "healthz": base,
            "readyz": [*base, ("shutdown", lambda: None if is_ready() else "process is shutting down")]}

    def routes(self, router: web.UrlDispatcher) -> None:
        for endpoint in self.checks:
            router.add_get(f"/{endpoint}", self.answer)
            router.add_get(f"/{endpoint}/", self.answer)
            router.add_get(f"/{endpoint}/{{check}}", self.answer_one)

    async def answer(self, request: web.Request) -> web.Response:
        endpoint = request.path.strip("/")
        excluded = set(request.query.getall("exclude", []))
        lines, failed = [], False
        for name, check in self.checks[endpoint]:
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok")
                continue
            reason = check()
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                log.warning("%s check %s failed: %s", endpoint, name, reason)
                lines.append(f"[-]{name} failed: reason withheld")
                failed = True
        if failed:
            return _text("\n".join(lines) + f"\n{endpoint} check failed\n", 500)
        if "verbose" in request.query:
            return _text("\n".join(lines) + f"\n{endpoint} check passed\n")
        return _text("ok")

    async def answer_one(self, request: web.Request) -> web.Response:
        endpoint, name = request.path.strip("/").split("/", 1)
        check = dict(self.checks[endpoint]).get(name)
        if check is None:
            return _text("404 page not found\n", 404)
        reason = check()
        if reason is not None:
            return _text(f"internal server error: {name} check failed\n", 500)
        return _text("ok")


def _text(body: str, status: int = 200) -> web.Response:
    resp = web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp


def register_storage_source(store: Store) -> None:
    """`apiserver_storage_objects` reads this store's counts when scraped (the latest server's store)."""
    def counts(s: Store) -> dict[tuple[str, ...], float]:
        return {(apimetrics.storage_resource_label(key),): float(s.count(key)) for key in s.keys()}
    apimetrics.STORAGE_OBJECTS.set_source(store, counts)


async def serve_metrics(request: web.Request) -> web.Response:
    resp = web.Response(body=metrics.render(), content_type=None)
    resp.headers["Content-Type"] = metrics.CONTENT_TYPE
    return resp


def request_labels(method: str, query: "MultiMapping[str]", content_type: str, group: str, version: str,
                   resource: str, subresource: str | None, namespace: str | None, name: str | None) -> tuple:
    """The labels of a resource request, without its code: as `MonitorRequest` reports them."""
    watch = query.get("watch") in ("1", "t", "T", "TRUE", "true", "True")
    verb = apimetrics.canonical_verb(method, collection=name is None, watch=watch,
                                     apply=content_type.startswith("application/apply-patch"))
    dry_run = ",".join(sorted(query.getall("dryRun", [])))
    return (verb, dry_run, group, version, resource, subresource or "",
            apimetrics.scope_of(name=name, namespace=namespace), apimetrics.COMPONENT)


# (request labels, code) -> the request counter's and the latency histogram's series: looked up once
# per label set instead of on every request.
_REQUEST_SERIES: dict[tuple[tuple, int], tuple[Any, Any]] = {}


def observe_request(labels: tuple, code: int, seconds: float) -> None:
    """One finished resource request (`apiserver_request_total`, `apiserver_request_duration_seconds`)."""
    series = _REQUEST_SERIES.get((labels, code))
    if series is None:
        series = _REQUEST_SERIES[(labels, code)] = (apimetrics.REQUESTS.labels(*labels, str(code)),
                                                    apimetrics.REQUEST_DURATION.labels(*labels))
    series[0].inc()
    series[1].observe(seconds)
