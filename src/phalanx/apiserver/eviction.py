"""`POST pods/<name>/eviction` (policy/v1 Eviction): a pod deletion that honours PodDisruptionBudgets.

As upstream's `EvictionREST` (`pkg/registry/core/pod/storage/eviction.go`):

- a pod that is terminal, pending or already terminating is deleted without looking at budgets;
- more than one budget selecting the pod is a 500 (the subresource does not support it);
- a budget whose status has not observed its generation answers 429 ("... is still being
  processed by the server"); one with `disruptionsAllowed` 0 answers 429 TooManyRequests with
  "Cannot evict pod as it would violate the pod's disruption budget." and a `DisruptionBudget`
  cause naming the healthy pods it needs;
- otherwise the budget's `disruptionsAllowed` is decremented and the pod recorded in its
  `disruptedPods` (the disruption controller forgets it once the pod is gone), a not-ready pod
  passes without a decrement when the budget is healthy (`IfHealthyBudget`) or always
  (`AlwaysAllow`);
- the evicted pod gets `DisruptionTarget=True` (reason `EvictionByEvictionAPI`) before it is deleted
  with the Eviction's delete options; a pod that passed as not ready is deleted only if it has not
  changed since (its resourceVersion as precondition; a conflict answers 429 "... is still being
  processed by the server").
"""

from __future__ import annotations

from typing import Any

from ..api.labelselectors import label_selector_matches
from ..api.policy import set_disruption_allowed_condition
from ..api.registry import ResourceType
from ..machinery import errors
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339

Obj = dict[str, Any]

VIOLATION_MSG = "Cannot evict pod as it would violate the pod's disruption budget."
MAX_DISRUPTED_PODS = 2000


def _too_many_requests(cause: str, retry_after: int) -> errors.StatusError:
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.StatusError(429, "TooManyRequests", VIOLATION_MSG, details)


def _is_ready(pod: Obj) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def _can_ignore_budget(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def budgets_for(pdbs: list[Obj], pod: Obj) -> list[Obj]:
    """The budgets whose (non-empty) selector selects the pod."""
    labels = pod["metadata"].get("labels") or {}
    out = []
    for pdb in pdbs:
        sel = (pdb.get("spec") or {}).get("selector")
        if not sel or (not sel.get("matchLabels") and not sel.get("matchExpressions")):
            continue  # a nil or empty selector matches nothing here
        if label_selector_matches(sel, labels):
            out.append(pdb)
    return out


class Evictions:
    """The eviction subresource over a `rest.API`."""

    def __init__(self, api: Any):
        self.api = api

    def _rt(self, group: str, plural: str) -> ResourceType:
        rt: ResourceType = self.api.resource(group, "v1", plural)
        return rt

    def evict(self, namespace: str, name: str, body: Obj, *, dry_run: bool = False) -> Obj:
        bname = (body.get("metadata") or {}).get("name")
        if bname and bname != name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        opts = body.get("deleteOptions") or {}
        dry_run = dry_run or bool(opts.get("dryRun"))
        pods = self._rt("", "pods")
        pod = self.api.get(pods, namespace, name)
        pdb_name, unready = None, False
        if not _can_ignore_budget(pod):
            pdb_name, unready = self._check_budget(namespace, pod, dry_run)
        preconditions = dict(opts.get("preconditions") or {})
        ours = unready and not preconditions.get("resourceVersion")
        if ours:
            # the pod passed because it was not ready: it must not have become ready since
            preconditions["resourceVersion"] = pod["metadata"].get("resourceVersion")
        try:
            self._disrupt_and_delete(pods, namespace, name, preconditions, opts, dry_run)
        except errors.StatusError as e:
            if e.code == 409 and ours:
                raise _too_many_requests(f"The disruption budget {pdb_name} is still being processed by the server.",
                                         10) from None
            raise
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _check_budget(self, namespace: str, pod: Obj, dry_run: bool) -> tuple[str | None, bool]:
        """Decrements the pod's budget, or raises; returns the budget's name and whether the pod
        passed as not ready without a decrement."""
        pdb_rt = self._rt("policy", "poddisruptionbudgets")
        pdbs = budgets_for(self.api.list(pdb_rt, namespace)["items"], pod)
        if len(pdbs) > 1:
            # upstream answers a bare Failure Status with code 500 (no reason)
            raise errors.StatusError(500, "", "This pod has more than one PodDisruptionBudget, which the eviction "
                                              "subresource does not support.")
        if not pdbs:
            return None, False
        pdb = pdbs[0]
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        name = pdb["metadata"]["name"]
        if not _is_ready(pod):
            if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
                return name, True
            desired = int(status.get("desiredHealthy") or 0)
            if desired > 0 and int(status.get("currentHealthy") or 0) >= desired:
                return name, True
        for _ in range(3):
            try:
                self._check_and_decrement(pdb_rt, namespace, pod["metadata"]["name"], pdb, dry_run)
                return name, False
            except errors.StatusError as e:
                if e.code != 409:
                    raise
                pdb = self.api.get(pdb_rt, namespace, name)
        raise errors.StatusError(504, "Timeout", f'Timeout: couldn\'t update PodDisruptionBudget "{name}" due to '
                                 "conflicts", {"retryAfterSeconds": 10})

    def _check_and_decrement(self, rt: ResourceType, namespace: str, pod_name: str, pdb: Obj, dry_run: bool) -> None:
        md, status = pdb["metadata"], pdb.get("status") or {}
        name = md["name"]
        if int(status.get("observedGeneration") or 0) < int(md.get("generation") or 0):
            raise _too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise errors.forbidden_error("poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise errors.forbidden_error("poddisruptionbudget", "policy", name, "DisruptedPods map too big - too "
                                         "many evictions not confirmed by PDB controller")
        if allowed == 0:
            raise _too_many_requests(f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
                                     f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently", 0)
        if dry_run:
            return
        new = deep_copy(pdb)
        st = new.setdefault("status", {})
        st["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            set_disruption_allowed_condition(st, now_rfc3339(self.api.now()))
        st.setdefault("disruptedPods", {})[pod_name] = now_rfc3339(self.api.now())
        self.api.update(rt, namespace, name, new, subresource="status")

    def _disrupt_and_delete(self, rt: ResourceType, namespace: str, name: str, preconditions: Obj, opts: Obj,
                            dry_run: bool) -> None:
        """`addConditionAndDeletePod`: DisruptionTarget on the latest pod (the preconditions checked
        against it), then the deletion, its resourceVersion precondition moved to our write."""
        for _ in range(5):
            if dry_run:
                break
            latest = self.api.get(rt, namespace, name)
            _check_preconditions(latest, preconditions)
            if latest["metadata"].get("deletionTimestamp"):
                break
            new = deep_copy(latest)
            conds = new.setdefault("status", {}).setdefault("conditions", [])
            conds[:] = [c for c in conds if c.get("type") != "DisruptionTarget"]
            conds.append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": now_rfc3339(self.api.now()), "reason": "EvictionByEvictionAPI",
                          "message": "Eviction API: evicting"})
            try:
                updated = self.api.update(rt, namespace, name, new, subresource="status")
            except errors.StatusError as e:
                if e.code != 409:
                    raise
                continue  # changed meanwhile: read it again
            if preconditions.get("resourceVersion"):
                preconditions["resourceVersion"] = updated["metadata"].get("resourceVersion")
            break
        self.api.delete(rt, namespace, name, grace_period=opts.get("gracePeriodSeconds"),
                        preconditions=preconditions or None, dry_run=dry_run)


def _check_preconditions(pod: Obj, preconditions: Obj) -> None:
    md = pod["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != md.get("uid"):
        raise errors.conflict("pods", "", md["name"], f"the UID in the precondition ({uid}) does not match the UID in "
                              f"record ({md.get('uid')}). The object might have been deleted and then recreated")
    if rv and rv != md.get("resourceVersion"):
        raise errors.conflict("pods", "", md["name"], f"the ResourceVersion in the precondition ({rv}) does not match "
                              f"the ResourceVersion in record ({md.get('resourceVersion')}). The object might have "
                              "been modified")
