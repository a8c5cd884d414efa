"""Affinity: parsed pod (anti-)affinity terms and node affinity (component-helpers nodeaffinity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple, Optional

from phalanx.machinery.selectors import LabelSelector, NodeSelectorTerm, compile_node_selector_term, label_selector_from_object

if TYPE_CHECKING:
    from .types import NodeInfo, PodInfo


# -- pod (anti-)affinity terms --------------------------------------------------------------------

class AffinityTerm:
    """A parsed PodAffinityTerm: namespaces, label selector, topology key, namespace selector."""

    __slots__ = ("namespaces", "selector", "topology_key", "namespace_selector")

    def __init__(self, namespaces: frozenset[str], selector: LabelSelector, topology_key: str,
                 namespace_selector: LabelSelector):
        self.namespaces = namespaces
        self.selector = selector
        self.topology_key = topology_key
        self.namespace_selector = namespace_selector

    @classmethod
    def from_object(cls, pod: Mapping[str, Any], term: Mapping[str, Any]) -> "AffinityTerm":
        selector = label_selector_from_object(term.get("labelSelector"))
        namespaces = term.get("namespaces") or []
        ns_selector_obj = term.get("namespaceSelector")
        if not namespaces and ns_selector_obj is None:
            ns_set = frozenset((((pod.get("metadata") or {}).get("namespace")) or "",))
        else:
            ns_set = frozenset(namespaces)
        ns_selector = label_selector_from_object(ns_selector_obj)
        return cls(ns_set, selector, term.get("topologyKey") or "", ns_selector)

    def matches(self, pod_info: "PodInfo", ns_labels: Optional[Mapping[str, str]]) -> bool:
        """True when the pod is in one of the term's namespaces and its labels match."""
        if pod_info.namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(pod_info.labels)
        return False

    def with_namespaces(self, extra: Iterable[str]) -> "AffinityTerm":
        """The term with `extra` namespaces merged in and its namespace selector consumed."""
        return AffinityTerm(self.namespaces | frozenset(extra), self.selector, self.topology_key,
                            LabelSelector.nothing())

    def __repr__(self) -> str:
        return (f"AffinityTerm(namespaces={sorted(self.namespaces)!r}, selector={str(self.selector)!r}, "
                f"topology_key={self.topology_key!r})")


class WeightedAffinityTerm(NamedTuple):
    term: AffinityTerm
    weight: int


def _affinity_terms(pod: Mapping[str, Any], terms: Optional[Iterable[Mapping[str, Any]]]) -> list[AffinityTerm]:
    return [AffinityTerm.from_object(pod, t) for t in terms or ()]


def _weighted_terms(pod: Mapping[str, Any], terms: Optional[Iterable[Mapping[str, Any]]]) -> list[WeightedAffinityTerm]:
    return [WeightedAffinityTerm(AffinityTerm.from_object(pod, t.get("podAffinityTerm") or {}), int(t.get("weight") or 0))
            for t in terms or ()]


# -- node affinity (component-helpers nodeaffinity) ------------------------------------------

class RequiredNodeAffinity:
    """A pod's nodeSelector AND its required node affinity, matched against nodes."""

    __slots__ = ("node_selector", "terms")

    def __init__(self, pod: Mapping[str, Any]):
        spec = pod.get("spec") or {}
        ns = spec.get("nodeSelector")
        self.node_selector: Optional[tuple[tuple[str, str], ...]] = tuple(ns.items()) if ns else None
        required = (((spec.get("affinity") or {}).get("nodeAffinity")) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        self.terms: Optional[list[NodeSelectorTerm]] = None
        if required is not None:
            self.terms = [compile_node_selector_term(t) for t in required.get("nodeSelectorTerms") or ()]

    def match(self, node_info: "NodeInfo") -> bool:
        if self.node_selector is not None:
            labels = node_info.labels
            for k, v in self.node_selector:
                if labels.get(k) != v:
                    return False
        if self.terms is not None:
            node = node_info.node
            assert node is not None, "node affinity is matched against a NodeInfo with its Node"
            for t in self.terms:
                if t.matches(node):
                    return True
            return False
        return True

    def is_empty(self) -> bool:
        return self.node_selector is None and self.terms is None


class PreferredSchedulingTerms:
    """Weighted preferred node-affinity terms; score = sum of the weights of matching terms."""

    __slots__ = ("terms",)

    def __init__(self, terms: Optional[Iterable[Mapping[str, Any]]]):
        parsed = []
        errors = []
        for t in terms or ():
            weight = int(t.get("weight") or 0)
            pref = t.get("preference") or {}
            if weight == 0 or not (pref.get("matchExpressions") or pref.get("matchFields")):
                continue
            term = compile_node_selector_term(pref)
            if term.errors:
                errors.extend(term.errors)
            else:
                parsed.append((weight, term))
        if errors:
            raise ValueError("; ".join(errors) if len(errors) > 1 else errors[0])
        self.terms = parsed

    def score(self, node_info: "NodeInfo") -> int:
        node = node_info.node
        assert node is not None, "node affinity is scored on a NodeInfo with its Node"
        total = 0
        for weight, term in self.terms:
            if term.matches(node):
                total += weight
        return total


