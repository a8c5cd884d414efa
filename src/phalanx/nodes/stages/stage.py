"""KWOK `Stage` objects (`kwok.x-k8s.io/v1alpha1`): reading, matching, delays and weights.

A Stage says, for one kind of object (`spec.resourceRef`), which objects it applies to
(`spec.selector`: `matchLabels`, `matchAnnotations`, and `matchExpressions` whose keys are jq
queries with the operators `In`, `NotIn`, `Exists`, `DoesNotExist`), how long to wait before it
acts (`spec.delay`: `durationMilliseconds` / `durationFrom`, jitter up to
`jitterDurationMilliseconds` / `jitterDurationFrom`), how likely it is among the stages that match
(`spec.weight` / `weightFrom`), and what it does (`spec.next`: a `statusTemplate`, `finalizers`
to add, remove or empty, `delete`, an `event`). The semantics are KWOK's:

- a jq key's results match `In` when one of them (a string, or a bool or integer in its string
  form) is among `values`; `Exists` when one result is not null; no results or only nulls count
  as absent;
- `durationFrom` reads a jq value that is an RFC 3339 time (the delay lasts until then) or a Go
  duration; an empty string means no delay at all; anything else falls back to the fixed value;
- with jitter, the delay is drawn between the duration and the jitter (the jitter alone when it
  is the shorter);
- among the matching stages one is drawn by weight; when every weight is zero, uniformly.

jq queries run on the `jq` package (the bindings of jq itself).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jq

from ...machinery.durations import parse_duration

API_VERSION = "kwok.x-k8s.io/v1alpha1"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class StageError(ValueError):
    """A Stage that cannot be used; the message names the stage (or file) and the field."""


@dataclass
class Expression:
    key: str
    operator: str
    values: list[str]
    program: Any

    def matches(self, obj: dict) -> bool:
        try:
            results = self.program.input_value(obj).all()
        except ValueError:
            results = []
        present = [r for r in results if r is not None]
        if self.operator == "Exists":
            return bool(present)
        if self.operator == "DoesNotExist":
            return not present
        hit = any(_as_text(r) in self.values for r in present)
        return hit if self.operator == "In" else not hit


def _as_text(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return v if isinstance(v, str) else None


def _jq(expr: Any, where: str) -> Any:
    if not isinstance(expr, str) or not expr:
        raise StageError(f"{where}: a jq expression is required")
    try:
        return jq.compile(expr)
    except ValueError as e:
        raise StageError(f"{where}: invalid jq expression {expr!r}: {e}") from None


def _first(program: Any, obj: dict) -> Any:
    try:
        out = program.input_value(obj).all()
    except ValueError:
        return None
    return out[0] if out else None


@dataclass
class Stage:
    name: str
    api_group: str
    kind: str
    match_labels: dict[str, str] = field(default_factory=dict)
    match_annotations: dict[str, str] = field(default_factory=dict)
    expressions: list[Expression] = field(default_factory=list)
    weight: int = 0
    weight_from: Any = None
    duration_ms: int | None = None
    duration_from: Any = None
    jitter_ms: int | None = None
    jitter_from: Any = None
    next: dict = field(default_factory=dict)
    immediate_next: bool = False
    source: str = ""

    @property
    def has_delay(self) -> bool:
        return self.duration_ms is not None or self.duration_from is not None

    def matches(self, obj: dict) -> bool:
        md = obj.get("metadata") or {}
        labels, annotations = md.get("labels") or {}, md.get("annotations") or {}
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        if any(annotations.get(k) != v for k, v in self.match_annotations.items()):
            return False
        return all(e.matches(obj) for e in self.expressions)

    def weight_of(self, obj: dict) -> int:
        if self.weight_from is not None:
            v = _first(self.weight_from, obj)
            if isinstance(v, str):
                try:
                    return int(v)
                except ValueError:
                    pass
            elif isinstance(v, int) and not isinstance(v, bool):
                return v
        return self.weight

    def delay(self, obj: dict, now: float, rng: random.Random | None = None) -> float:
        """Seconds to wait before the stage acts on `obj` (0: act now)."""
        base = _duration(self.duration_ms, self.duration_from, obj, now)
        if base is None:
            return 0.0
        jitter = _duration(self.jitter_ms, self.jitter_from, obj, now)
        if jitter is None:
            return max(0.0, base)
        if jitter <= base:
            return max(0.0, jitter)
        return max(0.0, base + (rng or random).random() * (jitter - base))


def _duration(ms: int | None, program: Any, obj: dict, now: float) -> float | None:
    fixed = ms / 1000.0 if ms is not None else None
    if program is None:
        return fixed
    v = _first(program, obj)
    if isinstance(v, str):
        if v == "":
            return None
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() - now
        except ValueError:
            pass
        try:
            return parse_duration(v)
        except ValueError:
            pass
    return fixed


def pick(stages: list[Stage], obj: dict, rng: random.Random | None = None) -> Stage | None:
    """The stage that acts next on `obj`: one of those that match, drawn by weight."""
    matching = [s for s in stages if s.matches(obj)]
    if not matching:
        return None
    r = rng or random
    weights = [max(0, s.weight_of(obj)) for s in matching]
    total = sum(weights)
    if total == 0:
        return matching[int(r.random() * len(matching)) % len(matching)]
    off = r.random() * total
    for s, w in zip(matching, weights):
        if off < w:
            return s
        off -= w
    return matching[-1]


# -- reading ----------------------------------------------------------------------------------
def _expressions(sel: dict, where: str) -> list[Expression]:
    out = []
    for i, e in enumerate(sel.get("matchExpressions") or []):
        at = f"{where}.spec.selector.matchExpressions[{i}]"
        if not isinstance(e, dict):
            raise StageError(f"{at}: must be an object")
        op = e.get("operator")
        if op not in OPERATORS:
            raise StageError(f"{at}.operator: Unsupported value: {op!r}: supported values: "
                             + ", ".join(f'"{o}"' for o in OPERATORS))
        values = [str(v) for v in e.get("values") or []]
        if op in ("In", "NotIn") and not values:
            raise StageError(f"{at}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
        out.append(Expression(e.get("key", ""), op, values, _jq(e.get("key"), f"{at}.key")))
    return out


def _expr_from(spec: dict, name: str, where: str) -> Any:
    src = spec.get(name)
    if src is None:
        return None
    if not isinstance(src, dict) or "expressionFrom" not in src:
        raise StageError(f"{where}.{name}.expressionFrom: Required value")
    return _jq(src["expressionFrom"], f"{where}.{name}.expressionFrom")


def _int(v: Any, where: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise StageError(f"{where}: must be a non-negative integer, got {v!r}")
    return v


def _name_of(doc: Any, source: str) -> str:
    where = source or "stage"
    if not isinstance(doc, dict) or doc.get("kind") != "Stage" or doc.get("apiVersion") != API_VERSION:
        raise StageError(f"{where}: expected apiVersion {API_VERSION} and kind Stage")
    name = (doc.get("metadata") or {}).get("name") or ""
    if not name:
        raise StageError(f"{where}: metadata.name: Required value")
    return str(name)


def _delay_fields(delay: dict, where: str) -> dict[str, Any]:
    at = f"{where}: spec.delay"
    return {"duration_ms": _int(delay.get("durationMilliseconds"), f"{at}.durationMilliseconds"),
            "duration_from": _expr_from(delay, "durationFrom", at),
            "jitter_ms": _int(delay.get("jitterDurationMilliseconds"), f"{at}.jitterDurationMilliseconds"),
            "jitter_from": _expr_from(delay, "jitterDurationFrom", at)}


def parse_stage(doc: Any, source: str = "") -> Stage:
    """A `Stage` from its object form; `StageError` names `source` and the field at fault."""
    name = _name_of(doc, source)
    where = f"{source}: stage {name}" if source else f"stage {name}"
    spec = doc.get("spec") or {}
    ref = spec.get("resourceRef") or {}
    if not ref.get("kind"):
        raise StageError(f"{where}: spec.resourceRef.kind: Required value")
    sel = spec.get("selector") or {}
    nxt = spec.get("next") or {}
    if not isinstance(nxt, dict):
        raise StageError(f"{where}: spec.next: must be an object")
    return Stage(
        name=name, api_group=ref.get("apiGroup") or "v1", kind=ref["kind"],
        match_labels=dict(sel.get("matchLabels") or {}), match_annotations=dict(sel.get("matchAnnotations") or {}),
        expressions=_expressions(sel, where),
        weight=_int(spec.get("weight"), f"{where}: spec.weight") or 0,
        weight_from=_expr_from(spec, "weightFrom", f"{where}: spec"),
        **_delay_fields(spec.get("delay") or {}, where),
        next=nxt, immediate_next=bool(spec.get("immediateNextStage")), source=source)


def load_stages(text: str, source: str) -> list[Stage]:
    """Every Stage in a YAML stream (other documents are an error naming the file)."""
    import yaml
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        raise StageError(f"{source}: not YAML: {e}") from None
    out: list[Stage] = []
    for i, d in enumerate(docs):
        if isinstance(d, dict) and d.get("kind") == "List":
            out.extend(parse_stage(x, f"{source}[{i}]") for x in d.get("items") or [])
        else:
            out.append(parse_stage(d, source if len(docs) == 1 else f"{source}[{i}]"))
    return out
