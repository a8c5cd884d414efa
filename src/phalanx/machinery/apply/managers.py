"""managedFields bookkeeping: one entry per manager, decoded from and encoded to the wire form
(memoized), 409 conflict errors, and the updater that moves fields between managers on an update
or an apply (structured-merge-diff merge.Updater, apiserver managedfields' strip and cap steps)."""

from __future__ import annotations

from ..timestamps import rfc3339_seconds
from typing import AbstractSet, Any, Iterable, Optional

from ..errors import StatusError, go_repr
from ..patchmeta import PatchMeta
from .fieldsets import (_pe_order, _tree, ensure_named_fields_are_members, fields_to_set, recursive_difference,
                        set_to_fields, to_field_set)
from .merge import Comparison, compare, merge, remove_items
from .values import Path, PathSet, PathTrie, _equal, _go_json, path_string

MAX_UPDATE_MANAGERS = 10  # upstream DefaultMaxUpdateManagers
ANCIENT_CHANGES = "ancient-changes"
_CURRENT_OPERATION = "current-operation"

# Fields never recorded in managedFields (upstream stripMetaManager).
_STRIPPED = frozenset({
    (("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),),
    (("f", "metadata"), ("f", "name")), (("f", "metadata"), ("f", "namespace")),
    (("f", "metadata"), ("f", "creationTimestamp")), (("f", "metadata"), ("f", "selfLink")),
    (("f", "metadata"), ("f", "uid")), (("f", "metadata"), ("f", "clusterName")),
    (("f", "metadata"), ("f", "generation")), (("f", "metadata"), ("f", "managedFields")),
    (("f", "metadata"), ("f", "resourceVersion")),
})


# A managedFields entry's identity: (manager, operation, apiVersion or "" for Apply, subresource).
ManagerKey = tuple[str, str, str, str]


class _Entry:
    """One manager's fields (upstream VersionedSet) plus its timestamp."""

    __slots__ = ("fields", "api_version", "applied")

    def __init__(self, fields: AbstractSet[Path], api_version: str, applied: bool):
        self.fields = fields
        self.api_version = api_version
        self.applied = applied


# Each manager's entry, and the time each manager last wrote.
Managers = dict[ManagerKey, _Entry]
Times = dict[ManagerKey, Optional[str]]


def _manager_key(manager: str, operation: str, api_version: str, subresource: str) -> ManagerKey:
    # Apply entries are keyed without the apiVersion (upstream BuildManagerIdentifier).
    return (manager, operation, "" if operation == "Apply" else api_version, subresource)


def _identifier(key: ManagerKey) -> str:
    manager, operation, api_version, subresource = key
    parts = [f'"manager":{_go_json(manager)}', f'"operation":{_go_json(operation)}']
    if api_version:
        parts.append(f'"apiVersion":{_go_json(api_version)}')
    if subresource:
        parts.append(f'"subresource":{_go_json(subresource)}')
    return "{" + ",".join(parts) + "}"


def _print_manager(key: ManagerKey) -> str:
    manager, operation, api_version, subresource = key
    s = go_repr(manager)
    if subresource:
        s += f" with subresource {go_repr(subresource)}"
    if operation == "Update":
        s += f" using {api_version}"
    return s


# fieldsV1 objects are shared between objects of one shape (see _create_from_shape) and stay the
# same from write to write for managers a request does not touch: decoding and encoding them is
# memoized (by the fieldsV1 object's identity, kept alive by the memo, and by the field set).
_DECODED: dict[int, tuple[Any, frozenset[Path]]] = {}
_ENCODED: dict[frozenset[Path], dict[str, Any]] = {}
_FIELDS_MEMO_MAX = 8192


def _decoded_fields(fields_v1: Any) -> frozenset[Path]:
    hit = _DECODED.get(id(fields_v1))
    if hit is not None and hit[0] is fields_v1:
        return hit[1]
    fields = frozenset(fields_to_set(fields_v1))
    if isinstance(fields_v1, dict):
        if len(_DECODED) >= _FIELDS_MEMO_MAX:
            _DECODED.clear()
        _DECODED[id(fields_v1)] = (fields_v1, fields)
    return fields


def _encoded_fields(fields: Iterable[Path]) -> dict[str, Any]:
    key = fields if isinstance(fields, frozenset) else frozenset(fields)
    out = _ENCODED.get(key)
    if out is None:
        out = set_to_fields(key)
        if len(_ENCODED) >= _FIELDS_MEMO_MAX or len(_DECODED) >= _FIELDS_MEMO_MAX:
            _ENCODED.clear()
            _DECODED.clear()
        _ENCODED[key] = out
        _DECODED[id(out)] = (out, key)
    return out


def remember_fields(fields_v1: dict[str, Any], fields: frozenset[Path]) -> None:
    """Record that `fields_v1` encodes `fields` (computed elsewhere), so neither is recomputed."""
    if len(_ENCODED) >= _FIELDS_MEMO_MAX or len(_DECODED) >= _FIELDS_MEMO_MAX:
        _ENCODED.clear()
        _DECODED.clear()
    _ENCODED[fields] = fields_v1
    _DECODED[id(fields_v1)] = (fields_v1, fields)


def decode_managed_fields(entries: Any) -> tuple[Managers, Times]:
    """managedFields → ({key: _Entry}, {key: time}); raises ValueError as upstream's decoder."""
    managers: Managers = {}
    times: Times = {}
    if not entries:
        return managers, times
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} must be an object")
        op = e.get("operation")
        if op not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = e.get("apiVersion") or ""
        if not api_version:
            raise ValueError("apiVersion must not be empty")
        ft = e.get("fieldsType") or ""
        if ft == "":
            raise ValueError(f"missing fieldsType in managed fields entry {i}")
        if ft != "FieldsV1":
            raise ValueError(f"invalid fieldsType {go_repr(ft)} in managed fields entry {i}")
        key = _manager_key(e.get("manager") or "", op, api_version, e.get("subresource") or "")
        managers[key] = _Entry(_decoded_fields(e.get("fieldsV1")), api_version, op == "Apply")
        times[key] = e.get("time")
    return managers, times


def _time_seconds(t: Optional[str]) -> float:
    return rfc3339_seconds(t) or 0


def encode_managed_fields(managers: Managers, times: Times) -> list[dict[str, Any]]:
    entries = []
    for key, entry in managers.items():
        manager, operation, _, subresource = key
        e: dict[str, Any] = {"manager": manager, "operation": "Apply" if entry.applied else operation,
                   "apiVersion": entry.api_version}
        t = times.get(key)
        if t:
            e["time"] = t
        e["fieldsType"] = "FieldsV1"
        e["fieldsV1"] = _encoded_fields(entry.fields)
        if subresource:
            e["subresource"] = subresource
        entries.append(e)
    entries.sort(key=lambda e: (e["operation"], _time_seconds(e.get("time")), e["manager"], e["apiVersion"],
                                e.get("subresource", "")))
    return entries


# The fields each other manager owns that a write changes.
Conflicts = dict[ManagerKey, AbstractSet[Path]]


class _Conflicts(Exception):
    def __init__(self, conflicts: Conflicts):
        super().__init__("conflicts")
        self.conflicts = conflicts  # {manager key: set of paths}


def _iteration_order(paths: Iterable[Path]) -> list[Path]:
    """Upstream Set.Iterate order: at each level the members first, then the children."""
    out: list[Path] = []

    def walk(tree: PathTrie, prefix: Path) -> None:
        ordered = sorted(tree, key=_pe_order)
        for pe in ordered:
            if tree[pe][0]:
                out.append(prefix + (pe,))
        for pe in ordered:
            if tree[pe][1]:
                walk(tree[pe][1], prefix + (pe,))

    walk(_tree(paths), ())
    return out


def conflict_error(conflicts: Conflicts) -> StatusError:
    """409 Conflict with upstream's message and FieldManagerConflict causes."""
    keys = sorted(conflicts, key=_identifier)
    flat = [(k, p) for k in keys for p in _iteration_order(conflicts[k])]
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(k)}",
               "field": path_string(p)} for k, p in flat]
    if len(flat) == 1:
        k, p = flat[0]
        message = f"Apply failed with 1 conflict: conflict with {_print_manager(k)}: {path_string(p)}"
    else:
        lines = []
        for k in keys:
            lines.append(f"conflicts with {_print_manager(k)}:")
            lines.extend(f"- {path_string(p)}" for p in _iteration_order(conflicts[k]))
        message = f"Apply failed with {len(flat)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


# -- the updater (structured-merge-diff merge.Updater) --------------------------------------------

class _Updater:
    def __init__(self, meta: PatchMeta, ignored: tuple[Path, ...]):
        self.meta = meta
        self.ignored = ignored

    def _update(self, old: Any, new: Any, managers: Managers, workflow: ManagerKey, force: bool) -> tuple[Managers, Comparison]:
        c = compare(old, new, self.meta, self.ignored).exclude(self.ignored)
        conflicts: Conflicts = {}
        changed = c.modified | c.added
        for key, entry in managers.items():
            if key == workflow:
                continue
            clash = entry.fields & changed
            if clash:
                conflicts[key] = clash
        if conflicts and not force:
            raise _Conflicts(conflicts)
        out: Managers = {}
        for key, entry in managers.items():
            fields = entry.fields
            if key != workflow:
                if key in conflicts:
                    fields = fields - conflicts[key]
                if c.removed:
                    fields = fields - c.removed
            if fields:
                out[key] = _Entry(fields, entry.api_version, entry.applied)
        return out, c

    def update(self, old: Any, new: Any, version: str, managers: Managers, workflow: ManagerKey) -> Managers:
        managers, c = self._update(old, new, managers, workflow, True)
        prev = managers.get(workflow)
        fields = set(prev.fields) if prev else set()
        fields = ((fields | c.modified | c.added) - c.removed)
        fields = recursive_difference(fields, self.ignored)
        if fields:
            managers[workflow] = _Entry(fields, version, False)
        else:
            managers.pop(workflow, None)
        return managers

    def apply(self, live: Any, config: Any, version: str, managers: Managers, workflow: ManagerKey,
              force: bool) -> tuple[Optional[Any], Managers]:
        merged = merge(live, config, self.meta)
        last = managers.get(workflow)
        fields = recursive_difference(to_field_set(config, self.meta), self.ignored)
        managers = dict(managers)
        managers[workflow] = _Entry(fields, version, True)
        merged = self._prune(merged, managers, last)
        managers, _ = self._update(live, merged, managers, workflow, force)
        if _equal(live, merged):
            return None, managers
        return merged, managers

    def _prune(self, merged: Any, managers: Managers, last: Optional[_Entry]) -> Any:
        if last is None or not last.fields:
            return merged
        meta = self.meta
        last_set = ensure_named_fields_are_members(last.fields, meta)
        pruned = remove_items(merged, meta, last_set)
        # Add back what anybody (the applier's new configuration included) still owns.
        managed: PathSet = set()
        for entry in managers.values():
            managed |= entry.fields
        merged_set = ensure_named_fields_are_members(to_field_set(merged, meta), meta)
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, meta), meta)
        managed = ensure_named_fields_are_members(managed, meta)
        pruned = remove_items(merged, meta, merged_set - (pruned_set | managed))
        # Only remove what the applier itself set last time.
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, meta), meta)
        return remove_items(merged, meta, (merged_set - pruned_set) & last_set)


# -- the field manager pipeline (apiserver managedfields) ----------------------------------------

def _strip(managers: Managers, key: ManagerKey) -> None:
    entry = managers.get(key)
    if entry is None:
        return
    fields = entry.fields - _STRIPPED
    if fields:
        managers[key] = _Entry(fields, entry.api_version, entry.applied)
    else:
        del managers[key]


def _cap_update_managers(managers: Managers, times: Times) -> None:
    updaters = [k for k, e in managers.items() if not e.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (_time_seconds(times.get(k)), _identifier(k)))
    first_by_version: dict[str, ManagerKey] = {}
    length = len(updaters)
    for key in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry = managers[key]
        version = entry.api_version
        bucket = _manager_key(ANCIENT_CHANGES, "Update", version, "")
        first = first_by_version.get(version)
        if first is None:
            first_by_version[version] = key
            continue
        if bucket not in managers:
            managers[bucket] = managers.pop(first)
            times[bucket] = times.pop(first, None)
        managers[bucket] = _Entry(entry.fields | managers[bucket].fields, version, False)
        del managers[key]
        times[bucket] = times.pop(key, None)
        length -= 1


def _record_update(upd: _Updater, old: Any, new: Any, version: str, managers: Managers, times: Times,
                   key: ManagerKey, now: str) -> Managers:
    """managedFieldsUpdater + stripMeta + capManagers around a structured Update."""
    current = (_CURRENT_OPERATION, "Update", version, key[3])
    managers = upd.update(old, new, version, managers, current)
    _strip(managers, current)
    entry = managers.pop(current, None)
    if entry is not None:
        prev = managers.get(key)
        fields = entry.fields | prev.fields if prev else entry.fields
        managers[key] = _Entry(fields, entry.api_version, False)
        times[key] = now
    _cap_update_managers(managers, times)
    return managers
