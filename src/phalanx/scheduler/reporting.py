"""What users see about a scheduling decision besides conditions: the diagnosis kept on each
Scheduled / FailedScheduling Event as the annotation `scheduler.phalanx.dev/diagnosis` (per
reason, per plugin, per node; `phalanx explain` reads it), and the one-line summary a PodGroup's
condition carries (`4/6 pods fit, 6 required; 2 pods: 3 node(s) Insufficient cpu ...`)."""

from __future__ import annotations

from collections import Counter
from typing import Optional, Sequence

from phalanx.api.scheduling.fields import SCHEDULED_CONDITION_1_36, SCHEDULED_CONDITION_1_37, WORKLOAD_API_BY_RELEASE

from .framework.diagnosis import FitError
from .framework.types import QueuedPodInfo
from .placement_outcome import PlacementOutcome
from .placementsearch import summarize as summarize_placements

DIAGNOSIS_ANNOTATION = "scheduler.phalanx.dev/diagnosis"
POD_GROUP_API = "scheduling.k8s.io/v1alpha2"  # Kubernetes 1.36's; `pod_group_api(release)` for a cluster's
MAX_NODES_PER_REASON = 20

Failures = dict[str, tuple[QueuedPodInfo, FitError]]  # pod key -> (the member, why it fits nowhere)


def release_of(gates: object) -> str:
    """The Kubernetes release ("1.36", "1.37") of a `FeatureGates`; 1.36 for anything else."""
    release = getattr(gates, "release", None)
    return release if isinstance(release, str) and release in WORKLOAD_API_BY_RELEASE else "1.36"


def pod_group_api(release: str) -> str:
    """The group-version the scheduler reads and writes PodGroups in on a cluster of `release`."""
    return WORKLOAD_API_BY_RELEASE.get(release, POD_GROUP_API)


def scheduled_condition(release: str) -> str:
    """`PodGroupScheduled` (1.36) or `PodGroupInitiallyScheduled` (1.37)."""
    return SCHEDULED_CONDITION_1_36 if release == "1.36" else SCHEDULED_CONDITION_1_37


def diagnosis_record(fit_error: Optional[FitError], message: str) -> dict:
    """An unschedulable pod's diagnosis: per reason its count, plugin and (some) nodes."""
    rec: dict = {"result": "Unschedulable", "message": message}
    if fit_error is None:
        return rec
    by_reason: dict[str, list[str]] = {}
    reason_plugin: dict[str, str] = {}
    by_plugin: Counter = Counter()
    for node, st in fit_error.diagnosis.node_to_status.items():
        for r in st.reasons():
            lst = by_reason.setdefault(r, [])
            if len(lst) < MAX_NODES_PER_REASON:
                lst.append(node)
            if st.plugin:
                reason_plugin.setdefault(r, st.plugin)
        if st.plugin:
            by_plugin[st.plugin] += 1
    rec["nodes"] = fit_error.num_all_nodes
    rec["reasons"] = {r: {"count": len(v), "plugin": reason_plugin.get(r, ""), "nodes": v}
                      for r, v in by_reason.items()}
    counts = fit_error.diagnosis.reason_counts(getattr(fit_error, "num_all_nodes", 0) or 0)
    for r, n in counts.items():
        if r in rec["reasons"]:
            rec["reasons"][r]["count"] = n
    rec["plugins"] = dict(by_plugin)
    if fit_error.diagnosis.post_filter_msg:
        rec["preemption"] = fit_error.diagnosis.post_filter_msg
    return rec


def group_summary(placed: int, total: int, min_count: int, already: int, failures: Failures, status_message: str,
                  n_nodes: int, placements: Sequence[PlacementOutcome]) -> str:
    """`4/6 pods fit, 6 required; 2 pods: 3 node(s) Insufficient cpu, 1 node(s) had untolerated taint ...`"""
    need = f"{min_count} required" if min_count else "at least 1 required"
    head = f"{placed + already}/{total + already} pods fit, {need}"
    parts = _failure_parts(failures, n_nodes)
    not_tried = total - placed - len(failures)
    if not_tried > 0 and status_message:
        parts.append(f"{not_tried} pod{'s' if not_tried != 1 else ''} not evaluated ({status_message})")
    elif status_message and not failures:
        parts.append(status_message)
    if parts:
        head += "; " + "; ".join(parts)
    tried = summarize_placements(placements)  # the domains evaluated and why each failed
    if tried:
        head += "; " + tried
    return head


def _failure_parts(failures: Failures, n_nodes: int) -> list[str]:
    """`2 pods: 3 Insufficient cpu, 1 ...`: the members that fit nowhere, grouped by their reasons."""
    by_msg: Counter = Counter()
    for _, fe in failures.values():
        counts = fe.diagnosis.reason_counts(n_nodes)
        by_msg[", ".join(f"{v} {k}" for k, v in sorted(counts.items()))] += 1
    return [f"{n} pod{'s' if n != 1 else ''}: {text}" for text, n in by_msg.most_common()]
