"""KWOK `Stage` objects (`kwok.x-k8s.io/v1alpha1`): reading, matching, delays and weights.

A Stage says, for one kind of object (`spec.resourceRef`), which objects it applies to
(`spec.selector`: `matchLabels`, `matchAnnotations`, and `matchExpressions` whose keys are jq
queries with the operators `In`, `NotIn`, `Exists`, `DoesNotExist`), how long to wait before it
acts (`spec.delay`: `durationMilliseconds` / `durationFrom`, jitter up to
`jitterDurationMilliseconds` / `jitterDurationFrom`), how likely it is among the stages that match
(`spec.weight` / `weightFrom`), and what it does: `spec.steps` in order (each a `patch` with a
`template`, `type` json / merge / strategic / apply, `root` and `subresource`; an `apply` of a
rendered object; an `event`; `finalizers` to add, remove or empty; `delete`), or the older
`spec.next` (`event`, `finalizers`, `patches`, `statusTemplate`, `delete`), which is read as the
steps KWOK makes of it. `immediateNextStage` draws the next stage at once on the object the stage
wrote. Selectors and values take KWOK's jq and CEL forms (`expressions`). The semantics are KWOK's:

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

from ...machinery.durations import parse_duration
from .expressions import OPERATORS, CELRequirement, Expression, ExpressionError, parse_requirement, parse_value

API_VERSION = "kwok.x-k8s.io/v1alpha1"
PATCH_TYPES = ("json", "merge", "strategic", "apply")
__all__ = ["API_VERSION", "OPERATORS", "PATCH_TYPES", "Stage", "StageError", "load_stages", "parse_stage", "pick"]


class StageError(ValueError):
    """A Stage that cannot be used; the message names the stage (or file) and the field."""


@dataclass
class Stage:
    name: str
    api_group: str
    kind: str
    match_labels: dict[str, str] = field(default_factory=dict)
    match_annotations: dict[str, str] = field(default_factory=dict)
    expressions: list[Expression | CELRequirement] = field(default_factory=list)
    weight: int = 0
    weight_from: Any = None
    duration_ms: int | None = None
    duration_from: Any = None
    jitter_ms: int | None = None
    jitter_from: Any = None
    next: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)  # what it does, in order (`spec.steps`, or from `next`)
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
            v = self.weight_from.first(obj)
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
    v = program.first(obj)
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
def _expressions(sel: dict, where: str) -> list[Expression | CELRequirement]:
    try:
        return [parse_requirement(e, f"{where}.spec.selector.matchExpressions[{i}]")
                for i, e in enumerate(sel.get("matchExpressions") or [])]
    except ExpressionError as e:
        raise StageError(str(e)) from None


def _expr_from(spec: dict, name: str, where: str) -> Any:
    try:
        return parse_value(spec.get(name), f"{where}.{name}")
    except ExpressionError as e:
        raise StageError(str(e)) from None


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
        next=nxt, steps=_steps(spec, nxt, where), immediate_next=bool(spec.get("immediateNextStage")),
        source=source)


def _check_patch(patch: Any, at: str, template_required: bool = True) -> None:
    if not isinstance(patch, dict):
        raise StageError(f"{at}: must be an object")
    if template_required and not isinstance(patch.get("template"), str):
        raise StageError(f"{at}.template: Required value")
    kind = patch.get("type")
    if kind is not None and kind not in PATCH_TYPES:
        raise StageError(f"{at}.type: Unsupported value: {kind!r}: supported values: "
                         + ", ".join(f'"{t}"' for t in PATCH_TYPES))


def _check_step(step: Any, at: str) -> dict:
    if not isinstance(step, dict):
        raise StageError(f"{at}: must be an object")
    for name in ("event", "finalizers"):
        if step.get(name) is not None and not isinstance(step[name], dict):
            raise StageError(f"{at}.{name}: must be an object")
    if step.get("patch") is not None:
        _check_patch(step["patch"], f"{at}.patch")
    if step.get("apply") is not None:
        _check_patch(step["apply"], f"{at}.apply")
        if step["apply"].get("type") == "json":
            raise StageError(f"{at}.apply.type: Unsupported value: 'json': supported values: "
                             '"merge", "strategic", "apply"')
    return step


def _steps(spec: dict, nxt: dict, where: str) -> list[dict]:
    """What the stage does, in order: `spec.steps`, or the steps KWOK makes of `spec.next` (its
    event, its finalizers, its patches or else its statusTemplate as a patch of `status`, delete)."""
    if spec.get("steps"):
        if not isinstance(spec["steps"], list):
            raise StageError(f"{where}: spec.steps: must be a list")
        return [_check_step(x, f"{where}: spec.steps[{i}]") for i, x in enumerate(spec["steps"])]
    steps: list[dict] = []
    if nxt.get("event") is not None:
        steps.append(_check_step({"event": nxt["event"]}, f"{where}: spec.next"))
    if nxt.get("finalizers") is not None:
        steps.append(_check_step({"finalizers": nxt["finalizers"]}, f"{where}: spec.next"))
    patches = nxt.get("patches") or []
    if not isinstance(patches, list):
        raise StageError(f"{where}: spec.next.patches: must be a list")
    for i, p in enumerate(patches):
        _check_patch(p, f"{where}: spec.next.patches[{i}]")
        steps.append({"patch": p})
    if not patches and nxt.get("statusTemplate"):
        steps.append({"patch": {"subresource": nxt.get("statusSubresource") or "status", "root": "status",
                                "template": str(nxt["statusTemplate"])}})
    if nxt.get("delete"):
        steps.append({"delete": True})
    return steps


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
