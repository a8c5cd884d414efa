"""`spec.podFailurePolicy`: which rule a failed pod matches, and what that means for the Job
(FailJob, FailIndex, Ignore or Count)."""

from __future__ import annotations

from typing import Any

from .util import is_pod_failed

Obj = dict[str, Any]


def _matching_container(statuses: list[Obj] | None, req: Obj) -> Obj | None:
    name, op, values = req.get("containerName"), req.get("operator"), req.get("values") or []
    for cs in statuses or []:
        term = (cs.get("state") or {}).get("terminated")
        if not term:
            continue
        if name is not None and name != cs.get("name"):
            continue
        code = term.get("exitCode", 0)
        if code == 0:
            continue
        if (op == "In" and code in values) or (op == "NotIn" and code not in values):
            return cs
    return None


def match_pod_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str | None, bool, str | None]:
    """(FailJob message or None, count the failure?, matched action or None)."""
    if not policy:
        return None, True, None
    for index, rule in enumerate(policy.get("rules") or []):
        matched, message = _match_rule(rule, pod, index)
        if not matched:
            continue
        action = rule.get("action")
        if action == "FailJob":
            return message, True, action
        if action == "Ignore":
            return None, False, action
        if action in ("FailIndex", "Count"):
            return None, True, action
    return None, True, None


def _match_rule(rule: Obj, pod: Obj, index: int) -> tuple[bool, str]:
    """Whether the pod matches the rule, and the message a FailJob action would give."""
    st = pod.get("status") or {}
    md = pod.get("metadata") or {}
    if rule.get("onExitCodes") is not None:
        cs = _matching_container(st.get("containerStatuses"), rule["onExitCodes"]) or \
            _matching_container(st.get("initContainerStatuses"), rule["onExitCodes"])
        if cs is None:
            return False, ""
        code = cs["state"]["terminated"].get("exitCode")
        return True, (f"Container {cs.get('name')} for pod {md.get('namespace')}/{md.get('name')} failed with exit "
                      f"code {code} matching FailJob rule at index {index}")
    if rule.get("onPodConditions") is not None:
        cond = _matching_condition(st.get("conditions") or [], rule["onPodConditions"])
        if cond is None:
            return False, ""
        return True, (f"Pod {md.get('namespace')}/{md.get('name')} has condition {cond.get('type')} matching "
                      f"FailJob rule at index {index}")
    return False, ""


def _matching_condition(conditions: list[Obj], patterns: list[Obj]) -> Obj | None:
    for c in conditions:
        if any(c.get("type") == p.get("type") and c.get("status") == (p.get("status") or "True") for p in patterns):
            return c
    return None


def count_not_ignored(policy: Obj | None, failed: list[Obj]) -> int:
    """How many of the failed pods count toward the backoff limit (rules with Ignore do not)."""
    if not policy:
        return len(failed)
    return sum(1 for p in failed if match_pod_failure_policy(policy, p)[1])


def fail_job_message(job: Obj, pods: list[Obj]) -> str | None:
    """The message of the first FailJob rule a failed pod of the Job matches, if any."""
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    if not policy:
        return None
    for p in pods:
        if is_pod_failed(p, job):
            msg = match_pod_failure_policy(policy, p)[0]
            if msg is not None:
                return msg
    return None
