"""Taints and tolerations: parsed once per node and pod, matched as upstream's helpers match them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional

from .constants import TAINT_EFFECT_NO_EXECUTE, TAINT_EFFECT_NO_SCHEDULE


# -- taints and tolerations ----------------------------------------------------------------------

class Taint(NamedTuple):
    key: str
    value: str
    effect: str

    def __str__(self) -> str:  # "{key: value}" is how rejections name it
        return f"{{{self.key}: {self.value}}}"


class Toleration(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """Upstream Toleration.ToleratesTaint (Equal/Exists; an empty key with Exists matches all)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op == "" or op == "Equal":
            return self.value == taint.value
        return op == "Exists"


def parse_taints(raw: Optional[Iterable[Mapping[str, Any]]]) -> tuple[Taint, ...]:
    return tuple(Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "") for t in raw or ())


def parse_tolerations(raw: Optional[Iterable[Mapping[str, Any]]]) -> tuple[Toleration, ...]:
    return tuple(Toleration(t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")
                 for t in raw or ())


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False


def find_matching_untolerated_taint(taints: Iterable[Taint], tolerations: tuple[Toleration, ...],
                                    include: Callable[[Taint], bool]) -> Optional[Taint]:
    """The first taint (in node order) passing `include` that no toleration tolerates."""
    for taint in taints:
        if not include(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def do_not_schedule_taint(taint: Taint) -> bool:
    """NoSchedule and NoExecute taints keep pods away (helper.DoNotScheduleTaintsFilterFunc)."""
    return taint.effect == TAINT_EFFECT_NO_SCHEDULE or taint.effect == TAINT_EFFECT_NO_EXECUTE


