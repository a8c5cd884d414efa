"""Strict reading of YAML config files: duplicate keys rejected, every problem reported at once.

    doc = load_strict_yaml(text, "kind.yaml")          # ConfigFileError naming line and column
    reader = DocumentReader("kind.yaml")
    reader.fields(doc, "", ("kind", "apiVersion", "nodes"))
    if reader.expect(doc.get("nodes"), "nodes", "list"): ...
    reader.raise_problems()                             # ConfigFileError listing all of them

Messages name the file, the field path and what was found or allowed
(`kind.yaml: nodes[1].rolez: unknown field; allowed: role, ...`), the way kind's strict decoder
and the Kubernetes API's field errors do. Used by the cluster config (kind's and phalanx's format)
and by the simulated DRA drivers' `draDrivers` section.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import yaml

from .names import label_value_errors, qualified_name_errors

# strconv.ParseBool's spellings, which Go flags and kubeadm's `key=value` lists accept.
GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


class ConfigFileError(ValueError):
    """Every problem found in one config file, each as `<file>: <field path>: <message>`."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _construct_mapping_no_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            continue  # unhashable key: the base constructor reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {quote(key)}",
                key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping_no_duplicates)


def load_strict_yaml(text: str, source: str) -> Any:
    """One YAML document with no duplicate keys, or ConfigFileError naming the line and column."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = e.problem or e.context or "invalid YAML"
        raise ConfigFileError(source, [(where, f"invalid YAML: {problem}")]) from None
    except yaml.YAMLError as e:
        raise ConfigFileError(source, [("", f"invalid YAML: {e}")]) from None


# ---------------------------------------------------------------------------------------------
# field paths and what a type error found


def key_path(parent: str, key: str) -> str:
    """`featureGates.GangScheduling`, but `labels[example.com/rack]` for keys with dots or slashes."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{key}]"


def type_name(value: Any, *, json: bool = False) -> str:
    """The name of a value's type: null, boolean, integer, number, string, then YAML's mapping and
    list, or with `json=True` JSON Schema's object and array (what OpenAPI validation messages say)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array" if json else "list"
    if isinstance(value, dict) or json:
        return "object" if json else "mapping"
    return type(value).__name__


def quote(value: Any) -> str:
    """Quote a value in messages the way Go's %q does: "worker", not 'worker'."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def got(value: Any) -> str:
    """`string "yes"`, `integer 42`, `mapping`: what a type error found."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return f"{type_name(value)} {quote(value)}"
    return type_name(value)


def is_int(value: Any) -> bool:
    """An integer that is not a boolean (YAML's `true` is a Python int)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class DocumentReader:
    """Collects problems and ignored fields while walking one config document."""

    source: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def error(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def raise_problems(self) -> None:
        """ConfigFileError with every problem found so far; nothing when there is none."""
        if self.problems:
            raise ConfigFileError(self.source, self.problems)

    def expect(self, value: Any, path: str, kind: str) -> bool:
        """Whether `value` is a `kind` (mapping, list, string, boolean, integer); a problem if not."""
        ok = {"mapping": isinstance(value, dict), "list": isinstance(value, list),
              "string": isinstance(value, str), "boolean": isinstance(value, bool),
              "integer": is_int(value)}[kind]
        if not ok:
            article = "an" if kind[0] in "aeiou" else "a"
            self.error(path, f"expected {article} {kind}, got {got(value)}")
        return ok

    def fields(self, obj: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
        """A problem for every key of `obj` not in `allowed`."""
        for key in obj:
            if key not in allowed:
                self.error(key_path(path, str(key)), f"unknown field; allowed: {', '.join(allowed)}")

    def list_of(self, value: Any, path: str, kind: str) -> bool:
        if not self.expect(value, path, "list"):
            return False
        ok = True
        for i, item in enumerate(value):
            ok = self.expect(item, f"{path}[{i}]", kind) and ok
        return ok

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        """A mapping of strings (numbers are taken as their text); None is empty."""
        out: dict[str, str] = {}
        if value is None or not self.expect(value, path, "mapping"):
            return out
        for k, v in value.items():
            if not isinstance(k, str):
                self.error(path, f"keys must be strings, got {type_name(k)} {quote(k)}")
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                v = str(v)
            if not isinstance(v, str):
                self.error(key_path(path, k), f"expected a string, got {got(v)}")
                continue
            out[k] = v
        return out

    def labels(self, value: Any, path: str) -> dict[str, str]:
        """A label map: qualified-name keys, label values."""
        labels = self.string_map(value, path)
        for k, v in labels.items():
            for msg in qualified_name_errors(k):
                self.error(key_path(path, k), f"invalid label key: {msg}")
            for msg in label_value_errors(v):
                self.error(key_path(path, k), f"invalid label value {quote(v)}: {msg}")
        return labels

    def ignore(self, path: str) -> None:
        """Note a field that is accepted but has no effect."""
        if path not in self.ignored:
            self.ignored.append(path)
