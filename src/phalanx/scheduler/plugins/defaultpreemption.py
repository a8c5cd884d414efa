"""DefaultPreemption (PostFilter): when a pod fits nowhere, find a node where evicting
lower-priority pods would make it fit, and propose that node and those victims.

Nothing is evicted here: the result (`PostFilterResult.victims`, the nominated node, and the
lower-priority pods nominated to that node whose nomination must be cleared) is for the caller
to act on. Upstream's algorithm:

1. A pod with `preemptionPolicy: Never` does not preempt ("not eligible due to
   preemptionPolicy=Never."); nor does a pod whose nominated node still has a victim terminating.
2. Candidate nodes are those whose Filter verdict was Unschedulable (not ...AndUnresolvable).
   Starting at a random offset, each is dry-run on a copy: remove every lower-priority pod, check
   the pod fits, then add victims back from the most important down (PDB-violating ones first)
   while it still fits. The search stops once enough candidates are found
   (`minCandidateNodesPercentage` 10% / `minCandidateNodesAbsolute` 100).
3. The node is picked by: fewest PDB violations, lowest highest-victim priority, smallest sum of
   victim priorities, fewest victims, latest start time of the highest-priority victims, first.

Failures read like upstream's: "preemption: 0/5 nodes are available: 5 No preemption victims
found for incoming pod." (the framework puts it after the Filter reasons in the event message).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from phalanx.machinery.selectors import LabelSelector, label_selector_from_object
from phalanx.scheduler.framework.config import default_plugin_args
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.diagnosis import Diagnosis, NodeToStatus, fit_error_message
from phalanx.scheduler.framework.interface import Handle, PostFilterPlugin, PostFilterResult
from phalanx.scheduler.framework.status import Code, Status, as_status
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.types import NodeInfo, PodInfo, more_important_pod, pod_start_time_key

from . import names

MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING = "not eligible due to a terminating pod on the nominated node."


class Victims:
    """The pods to evict on one node (most important first) and how many PDBs that violates."""

    __slots__ = ("pods", "num_pdb_violations")

    def __init__(self, pods: list[PodInfo], num_pdb_violations: int = 0):
        self.pods = pods
        self.num_pdb_violations = num_pdb_violations

    def __repr__(self) -> str:
        return f"Victims({[p.name for p in self.pods]!r}, pdb_violations={self.num_pdb_violations})"


class Candidate:
    __slots__ = ("name", "victims")

    def __init__(self, name: str, victims: Victims):
        self.name = name
        self.victims = victims

    def __repr__(self) -> str:
        return f"Candidate({self.name!r}, {self.victims!r})"


def _pod_terminating_by_preemption(pi: PodInfo) -> bool:
    if pi.deletion_timestamp is None:
        return False
    for c in (pi.pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "DisruptionTarget":
            return c.get("status") == "True" and c.get("reason") == "PreemptionByScheduler"
    return False


def filter_pods_with_pdb_violation(pods: Sequence[PodInfo], pdbs: Sequence[Obj]) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split victims into (violating, non-violating) their PodDisruptionBudgets, keeping order."""
    allowed = [int(((p.get("status") or {}).get("disruptionsAllowed")) or 0) for p in pdbs]
    selectors: list[Optional[LabelSelector]] = []
    for p in pdbs:
        try:
            selectors.append(label_selector_from_object((p.get("spec") or {}).get("selector")))
        except ValueError:
            selectors.append(None)
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pods:
        violated = False
        if pi.labels:
            for i, pdb in enumerate(pdbs):
                md = pdb.get("metadata") or {}
                if md.get("namespace", "") != pi.namespace:
                    continue
                sel = selectors[i]
                if sel is None or sel.empty or not sel.matches(pi.labels):
                    continue
                if pi.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def earliest_start_time_of_highest_priority(victims: Victims) -> str:
    top = max(p.priority for p in victims.pods)
    return min(pod_start_time_key(p) for p in victims.pods if p.priority == top)


def pick_one_node_for_preemption(nodes_to_victims: Mapping[str, Victims],
                                 score_funcs: Optional[list[Callable[[str], Any]]] = None) -> str:
    """Upstream pickOneNodeForPreemption: each criterion in turn narrows the tie; then the first."""
    if not nodes_to_victims:
        return ""
    candidates = list(nodes_to_victims)
    if not score_funcs:
        v = nodes_to_victims
        score_funcs = [
            lambda n: -v[n].num_pdb_violations,
            lambda n: -v[n].pods[0].priority,
            lambda n: -sum(p.priority + (1 << 31) for p in v[n].pods),
            lambda n: -len(v[n].pods),
            lambda n: earliest_start_time_of_highest_priority(v[n]),
        ]
    for f in score_funcs:
        best = None
        selected: list[str] = []
        for n in candidates:
            s = f(n)
            if best is None or s > best:
                best, selected = s, [n]
            elif s == best:
                selected.append(n)
        if len(selected) == 1:
            return selected[0]
        candidates = selected
    return candidates[0]


class DefaultPreemption(PostFilterPlugin):
    NAME = names.DefaultPreemption

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        self.min_candidate_nodes_percentage = int(args.get("minCandidateNodesPercentage", 10))
        self.min_candidate_nodes_absolute = int(args.get("minCandidateNodesAbsolute", 100))
        # Hooks upstream exposes on the plugin struct.
        self.is_eligible_pod: Callable[[NodeInfo, PodInfo, PodInfo], bool] = lambda ni, victim, preemptor: True
        self.more_important_pod: Callable[[PodInfo, PodInfo], bool] = more_important_pod

    # -- PostFilter --------------------------------------------------------------------------------
    def post_filter(self, state: CycleState, pod: PodInfo,
                    node_to_status: NodeToStatus) -> tuple[Optional[PostFilterResult], Optional[Status]]:
        result, status = self.preempt(state, pod, node_to_status)
        msg = status.message() if status is not None else ""
        if status is not None and msg:
            return result, Status.new(status.code, "preemption: " + msg)
        return result, status

    def preempt(self, state: CycleState, pod: PodInfo,
                m: NodeToStatus) -> tuple[Optional[PostFilterResult], Optional[Status]]:
        ok, msg = self.pod_eligible_to_preempt_others(pod, m.get(pod.nominated_node_name))
        if not ok:
            return None, Status.new(Code.Unschedulable, msg)
        snap = self.handle.snapshot_shared_lister()
        all_nodes = snap.list()
        if not all_nodes:
            return None, as_status("no nodes available")
        candidates, statuses, err = self.find_candidates(state, pod, all_nodes, m)
        if err is not None and not candidates:
            return None, err
        if not candidates:
            d = Diagnosis(statuses)
            d.node_to_status.set_absent_nodes_status(Status.new(Code.UnschedulableAndUnresolvable, MSG_NOT_HELPFUL))
            return (PostFilterResult.with_nominated_node(""),
                    Status.new(Code.Unschedulable, fit_error_message(len(all_nodes), d)))
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status.new(Code.Unschedulable, "no candidate node for preemption")
        lower = [p for p in self.handle.nominated_pods_for_node(best.name) if p.priority < pod.priority]
        return PostFilterResult.with_nominated_node(best.name, best.victims.pods, lower), Status.new(Code.Success)

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, MSG_POLICY_NEVER
        nnn = pod.nominated_node_name
        if nnn:
            if nominated_node_status.code == Code.UnschedulableAndUnresolvable:
                return True, ""
            ni = self.handle.snapshot_shared_lister().node_info_map.get(nnn)
            if ni is not None:
                for p in ni.pods:
                    if self._is_preemption_allowed(ni, p, pod) and _pod_terminating_by_preemption(p):
                        return False, MSG_TERMINATING
        return True, ""

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        if n < self.min_candidate_nodes_absolute:
            n = self.min_candidate_nodes_absolute
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def find_candidates(self, state: CycleState, pod: PodInfo, all_nodes: Sequence[NodeInfo],
                        m: NodeToStatus) -> tuple[list[Candidate], NodeToStatus, Optional[Status]]:
        names_ = [ni.name for ni in all_nodes]
        potential = m.nodes_for_status_code(names_, Code.Unschedulable)
        if not potential:
            return [], NodeToStatus(), None
        by_name = {ni.name: ni for ni in all_nodes}
        potential_nodes = [by_name[n] for n in potential]
        pdbs = self.handle.pod_disruption_budgets()
        offset, num = self.get_offset_and_num_candidates(len(potential_nodes))
        return self.dry_run_preemption(state, pod, potential_nodes, pdbs, offset, num)

    def dry_run_preemption(self, state: CycleState, pod: PodInfo, potential_nodes: Sequence[NodeInfo],
                           pdbs: Sequence[Obj], offset: int, num_candidates: int
                           ) -> tuple[list[Candidate], NodeToStatus, Optional[Status]]:
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[str] = []
        n = len(potential_nodes)
        for i in range(n):
            ni = potential_nodes[(offset + i) % n].snapshot()
            victims, num_violations, st = self.select_victims_on_node(state.clone(), pod, ni, pdbs)
            if (st is None or st.code == Code.Success) and victims:
                c = Candidate(ni.name, Victims(victims, num_violations))
                (non_violating if num_violations == 0 else violating).append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if (st is None or st.code == Code.Success) and not victims:
                st = as_status(f'expected at least one victim pod on node "{ni.name}"')
            assert st is not None
            if st.code == Code.Error:
                errors.append(st.message())
            statuses.set(ni.name, st)
        err = as_status("[" + ", ".join(errors) + "]" if len(errors) > 1 else errors[0]) if errors else None
        return non_violating + violating, statuses, err

    def _is_preemption_allowed(self, ni: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        return victim.priority < preemptor.priority and self.is_eligible_pod(ni, victim, preemptor)

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, ni: NodeInfo,
                               pdbs: Sequence[Obj]) -> tuple[list[PodInfo], int, Optional[Status]]:
        """The fewest lower-priority pods to evict from `ni` (a copy) for `pod` to fit."""
        h = self.handle

        def remove(p: PodInfo) -> Optional[Status]:
            ni.remove_pod(p)
            return h.run_pre_filter_extension_remove_pod(state, pod, p, ni)

        def add(p: PodInfo) -> Optional[Status]:
            ni.add_pod_info(p)
            return h.run_pre_filter_extension_add_pod(state, pod, p, ni)

        potential = []
        for p in list(ni.pods):
            if self._is_preemption_allowed(ni, p, pod):
                potential.append(p)
                st = remove(p)
                if st is not None:
                    return [], 0, st
        if not potential:
            return [], 0, Status.new(Code.UnschedulableAndUnresolvable, MSG_NO_VICTIMS)
        st = h.run_filter_plugins_with_nominated_pods(state, pod, ni)
        if st is not None and st.code != Code.Success:
            return [], 0, st
        potential.sort(key=_cmp_key(self.more_important_pod))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0

        def reprieve(p: PodInfo) -> tuple[bool, Optional[Status]]:
            st = add(p)
            if st is not None:
                return False, st
            fits = h.run_filter_plugins_with_nominated_pods(state, pod, ni) is None
            if not fits:
                st = remove(p)
                if st is not None:
                    return False, st
                victims.append(p)
            return fits, None

        for p in violating:
            fits, st = reprieve(p)
            if st is not None:
                return [], 0, st
            if not fits:
                num_violating += 1
        for p in non_violating:
            _, st = reprieve(p)
            if st is not None:
                return [], 0, st
        if violating and non_violating:
            victims.sort(key=_cmp_key(self.more_important_pod))
        return victims, num_violating, Status.new(Code.Success)

    def select_candidate(self, candidates: list[Candidate]) -> Optional[Candidate]:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims_map = {c.name: c.victims for c in candidates}
        name = pick_one_node_for_preemption(victims_map)
        return Candidate(name, victims_map[name]) if name in victims_map else candidates[0]


def _cmp_key(more_important: Callable[[PodInfo, PodInfo], bool]) -> Any:
    from functools import cmp_to_key

    return cmp_to_key(lambda a, b: -1 if more_important(a, b) else (1 if more_important(b, a) else 0))


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(default_plugin_args(names.DefaultPreemption, args) or {}, handle)

