"""The hand-written rules kube-apiserver 1.37 applies to a Workload's template tree.

Declarative validation checks each template on its own; these rules look at the whole tree of
`podGroupTemplates` and nested `compositePodGroupTemplates`, on create and on every update:

- template names are unique across the tree (repeats inside one list are the declarative
  `Duplicate`; these are the repeats across lists);
- the tree is at most `WORKLOAD_MAX_TREE_DEPTH` (4) levels deep, counting the PodGroupTemplates at
  the bottom: three levels of composite templates at most;
- every template carries the same `priorityClassName` and `priority`;
- every composite template has at least one child template.
"""

from __future__ import annotations

from typing import Any, Iterator

from ...machinery import errors
from ...machinery.errors import FieldError
from .common import list_at

WORKLOAD_MAX_TREE_DEPTH = 4
PGT = "podGroupTemplates"
CPGT = "compositePodGroupTemplates"


def _templates(holder: Any, key: str, path: str) -> Iterator[tuple[str, dict]]:
    for i, t in enumerate(list_at(holder, key)):
        if isinstance(t, dict):
            yield f"{path}.{key}[{i}]", t


def _name(t: dict) -> str:
    name = t.get("name")
    return name if isinstance(name, str) else ""


# -- unique names ----------------------------------------------------------------------------------

def _composite_list_names(holder: dict, path: str, names: set[str]) -> list[FieldError]:
    """A list of composite templates: names seen before it are repeats; then each one's children."""
    errs = [errors.duplicate(f"{p}.name", _name(t)) for p, t in _templates(holder, CPGT, path) if _name(t) in names]
    names.update(_name(t) for _, t in _templates(holder, CPGT, path))
    for p, t in _templates(holder, CPGT, path):
        errs += _composite_names(t, p, names)
    return errs


def _composite_names(cpgt: dict, path: str, names: set[str]) -> list[FieldError]:
    errs = [errors.duplicate(f"{p}.name", _name(t)) for p, t in _templates(cpgt, PGT, path) if _name(t) in names]
    names.update(_name(t) for _, t in _templates(cpgt, PGT, path))
    return errs + _composite_list_names(cpgt, path, names)


def unique_names(spec: dict) -> list[FieldError]:
    names = {_name(t) for _, t in _templates(spec, PGT, "spec")}
    return _composite_list_names(spec, "spec", names)


# -- depth ---------------------------------------------------------------------------------------------

def _within_depth(cpgt: dict, depth: int) -> bool:
    if depth == WORKLOAD_MAX_TREE_DEPTH:
        return False
    return all(_within_depth(child, depth + 1) for _, child in _templates(cpgt, CPGT, ""))


def tree_depth(spec: dict) -> list[FieldError]:
    return [errors.invalid(p, None, f"maximum tree depth is {WORKLOAD_MAX_TREE_DEPTH}")
            for p, t in _templates(spec, CPGT, "spec") if not _within_depth(t, 1)]


# -- one priority ----------------------------------------------------------------------------------------

def _priority(t: dict) -> tuple[str, str]:
    return str(t.get("priorityClassName") or ""), repr(t.get("priority"))


def _priorities(holder: dict) -> Iterator[tuple[str, str]]:
    """(priorityClassName, priority) of every template: the flat ones, then each composite tree
    (the composite template, its composite children, then its pod group templates)."""
    for _, t in _templates(holder, PGT, ""):
        yield _priority(t)
    for _, t in _templates(holder, CPGT, ""):
        yield from _composite_priorities(t)


def _composite_priorities(cpgt: dict) -> Iterator[tuple[str, str]]:
    yield _priority(cpgt)
    for _, child in _templates(cpgt, CPGT, ""):
        yield from _composite_priorities(child)
    for _, child in _templates(cpgt, PGT, ""):
        yield _priority(child)


def one_priority(spec: dict) -> list[FieldError]:
    if len(set(_priorities(spec))) > 1:
        return [errors.invalid("spec", None, "detected multiple priority configurations")]
    return []


# -- children ----------------------------------------------------------------------------------------------

def _has_children(cpgt: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not list_at(cpgt, PGT) and not list_at(cpgt, CPGT):
        errs.append(errors.invalid(path, _name(cpgt),
                                   "must have at least one child PodGroupTemplate or CompositePodGroupTemplate"))
    for p, child in _templates(cpgt, CPGT, path):
        errs += _has_children(child, p)
    return errs


def composites_have_children(spec: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    for p, t in _templates(spec, CPGT, "spec"):
        errs += _has_children(t, p)
    return errs


def validate_tree(spec: dict) -> list[FieldError]:
    """Every rule above, in upstream's order."""
    return unique_names(spec) + tree_depth(spec) + one_priority(spec) + composites_have_children(spec)
