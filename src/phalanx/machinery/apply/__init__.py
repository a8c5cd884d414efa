"""Server-side apply and `metadata.managedFields`, with structured-merge-diff semantics.

Two entry points, both pure functions over JSON-shaped dicts:

    new = server_side_apply(live, applied, "kubectl", meta, force=False, now="2025-01-01T00:00:00Z")
    new = update_managed_fields(old, new, "kubectl-client-side-apply", meta=meta, now=now)

`server_side_apply` merges an `application/apply-patch+yaml` body into the live object (None
when the object does not exist yet) and returns the object to persist, managedFields included.
It raises `StatusError` 409 `Conflict` when the body changes a field another manager owns (unless
`force`), 400 for bodies the API server refuses, 500 (reason "") for malformed bodies, as
kube-apiserver does.

`update_managed_fields` is what every create, update and non-apply patch calls on the final object:
it records the fields the manager changed (an `Update` entry) and takes them away from the other
managers, so a later apply by someone else conflicts.

How fields merge is read from the OpenAPI schema through `PatchMeta` (`x-kubernetes-list-type`
map/set/atomic with `x-kubernetes-list-map-keys`, `x-kubernetes-map-type: atomic`, and the
`x-kubernetes-patch-strategy: merge` fallback upstream uses for lists without a list type).
Where there is no schema, maps merge key by key and lists are atomic (upstream's "deduced" type).

Field sets are Python sets of paths; a path is a tuple of path elements:
`("f", name)`, `("k", ((key, value), ...))`, `("v", value)`, `("i", index)`, values wrapped by
`_hv` so that they hash and compare exactly. `fields_to_set` / `set_to_fields` convert to and from
the `fieldsV1` wire encoding (`f:`, `k:`, `v:`, `i:`, `.`).

The package's modules: `values` (JSON values, schema classification, paths), `fieldsets` (field
sets and their fieldsV1 encoding), `merge` (compare, merge, remove), `managers` (managedFields
entries, conflicts and the updater); this module is the entry point.

Not covered (the caller's business): converting between API versions (every manager's fields are
read in the object's own version), defaulting the merged object, and the strategy's reset of
`status` on the main resource / `spec` on the status subresource (apply does not track those
fields; the strategy must still restore them).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import orjson

from ..errors import StatusError, bad_request
from ..patchmeta import PatchMeta
from ..interning import trimmed
from ..names import token_volume_names_by_position
from ..yamldecode import YAMLDecodeError, decode_yaml
from .fieldsets import to_field_set
from .managers import (ManagerKey, Managers, Times, _Conflicts, _decoded_fields, _manager_key, _record_update, _strip, _Updater,
                       conflict_error, remember_fields,
                       decode_managed_fields, encode_managed_fields)
from .merge import compare
from .values import _MISSING, Path, PathSet, _copy, _go_json, _TypedError

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY = "before-first-apply"


def _zero_object(meta: PatchMeta, template: Optional[dict[str, Any]]) -> dict[str, Any]:
    """The empty object a create starts from: the Go zero value of the kind, approximated from the
    schema (metadata/spec/status present, required struct fields present and empty, required
    lists null). Pass the real zero value as `template` where it matters."""
    if template is not None:
        copied: dict[str, Any] = _copy(template)
        return copied
    zero: dict[str, Any] = {}
    for name in ("metadata", "spec", "status"):
        if meta.has_field(name):
            zero[name] = _zero_struct(meta.field(name), 0)
    return zero


def _zero_struct(meta: PatchMeta, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    s = meta.schema
    if not s or depth > 8:
        return out
    for name in s.get("required") or ():
        child = meta.field(name)
        cs = child.schema or {}
        if cs.get("type") == "array" or "items" in cs:
            out[name] = None
        elif "properties" in cs and cs.get("x-kubernetes-map-type") != "atomic":
            out[name] = _zero_struct(child, depth + 1)
    return out


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value if v is not None]
    return value


def _type_meta_first(obj: dict[str, Any]) -> dict[str, Any]:
    """apiVersion and kind lead, as the API server serialises typed objects."""
    if "apiVersion" not in obj and "kind" not in obj:
        return obj
    out: dict[str, Any] = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out)
    return out


def _reset_fields(subresource: str, reset_fields: Optional[Iterable[Iterable[str]]]) -> tuple[Path, ...]:
    if reset_fields is None:
        reset_fields = [("status",)] if not subresource else [("spec",)] if subresource == "status" else []
    return tuple(tuple(("f", n) for n in p) for p in reset_fields)


def _gvk_string(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def load_apply_body(body: bytes | bytearray | str | dict[str, Any]) -> dict[str, Any]:
    """Decode an apply-patch body (JSON, which kubectl sends, or YAML)."""
    if isinstance(body, dict):
        return body
    if isinstance(body, bytearray):
        body = bytes(body)  # PyYAML would read a bytearray as a stream
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            obj = decode_yaml(body)
        except YAMLDecodeError as e:
            raise bad_request(f"error decoding YAML: {e}") from None
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise bad_request("error decoding YAML: the body is not a JSON/YAML object")
    return obj


def _typed_failure(what: str, obj: dict[str, Any], error: _TypedError) -> StatusError:
    md = obj.get("metadata") or {}
    where = f"{md.get('namespace', '')}/{md.get('name', '')}; {_gvk_string(obj.get('apiVersion', ''), obj.get('kind', ''))}"
    return StatusError(500, "", f"failed to {what} ({where}): {error}")


def _last_applied_allowed(live: dict[str, Any], version: str, meta: PatchMeta) -> Optional[PathSet]:
    """Fields the client-side-apply annotation proves the applier already set (upstream
    lastAppliedManager); None when there is no usable annotation."""
    annotation = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED_ANNOTATION)
    if not annotation:
        return None
    try:
        last = orjson.loads(annotation)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != version:
        return None
    try:
        fields = to_field_set(last, meta)
        c = compare(last, live, meta)
    except _TypedError:
        return None
    return fields - c.modified - c.added - c.removed


def _last_applied_value(applied: dict[str, Any]) -> str:
    obj = _copy(applied)
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED_ANNOTATION, None)
    return _go_json(obj) + "\n"


def server_side_apply(live: Optional[dict[str, Any]], applied: dict[str, Any] | bytes | str, manager: str, meta: PatchMeta,
                      force: bool, now: str, *, subresource: str = "",
                      reset_fields: Optional[Iterable[Iterable[str]]] = None,
                      api_version: Optional[str] = None, kind: Optional[str] = None,
                      empty_object: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Apply `applied` as `manager`; returns the object to persist with its managedFields.

    `now` is the RFC 3339 timestamp written into the managedFields entries that change.
    `api_version`/`kind`, when given, are what the endpoint serves (a body of another type is a
    400). `reset_fields` are the top-level paths the strategy resets (default: `status` on the main
    resource, `spec` on `status`); `empty_object` is the kind's zero value a create starts from.
    """
    config = load_apply_body(applied)
    version = config.get("apiVersion") or api_version or ""
    _check_apply_body(config, api_version, kind)
    live_obj = _copy(live) if live else _zero_object(meta, empty_object)
    md = live_obj.get("metadata")
    try:
        managers, times = decode_managed_fields(md.pop("managedFields", None) if isinstance(md, dict) else None)
    except ValueError as e:
        raise StatusError(500, "", f"failed to decode managed fields: {e}") from None
    upd = _Updater(meta, _reset_fields(subresource, reset_fields))
    key = _manager_key(manager or "unknown", "Apply", version, subresource)
    try:
        if not managers and live:
            zero = _zero_object(meta, empty_object)
            before = _manager_key(BEFORE_FIRST_APPLY, "Update", version, subresource)
            managers = _record_update(upd, zero, live_obj, version, managers, times, before, now)
        result, new_managers = _apply_as(upd, live_obj, config, version, managers, key, force,
                                         kubectl=manager == "kubectl")
    except _TypedError as e:
        raise _typed_failure("create typed patch object", config, e) from None

    _strip(new_managers, key)
    if result is None:
        result = live_obj
    else:
        times[key] = now
    result = _type_meta_first(_strip_nulls(result))
    if manager == "kubectl":
        annotations = (result.get("metadata") or {}).get("annotations") or {}
        if annotations.get(LAST_APPLIED_ANNOTATION):
            annotations[LAST_APPLIED_ANNOTATION] = _last_applied_value(config)
    _write_managed_fields(result.setdefault("metadata", {}), new_managers, times)
    return result


def _write_managed_fields(md: dict[str, Any], managers: Managers, times: Times) -> None:
    """Set `md["managedFields"]` from the managers (with the times of those still there); none
    when no manager is left."""
    entries = encode_managed_fields(managers, {k: v for k, v in times.items() if k in managers})
    if entries:
        md["managedFields"] = entries
    else:
        md.pop("managedFields", None)


def _check_apply_body(config: dict[str, Any], api_version: Optional[str], kind: Optional[str]) -> None:
    """400 for a body of another type than the endpoint serves, or one that sets managedFields."""
    if (api_version is not None and config.get("apiVersion") != api_version) or \
            (kind is not None and config.get("kind") != kind):
        raise bad_request(f"invalid object type: {_gvk_string(config.get('apiVersion') or '', config.get('kind') or '')}")
    if isinstance((config.get("metadata") or {}).get("managedFields"), list):
        raise bad_request("metadata.managedFields must be nil")


def _apply_as(upd: _Updater, live_obj: dict[str, Any], config: dict[str, Any], version: str, managers: Managers, key: ManagerKey,
              force: bool, *, kubectl: bool) -> tuple[Optional[Any], Managers]:
    """The updater's apply; on conflicts, kubectl's client-side-apply annotation may prove the
    applier already set the conflicting fields (then they are taken over), else 409."""
    try:
        return upd.apply(live_obj, config, version, managers, key, force)
    except _Conflicts as c:
        conflicts = c.conflicts
    allowed = _last_applied_allowed(live_obj, version, upd.meta) if kubectl else None
    if allowed is None:
        raise conflict_error(conflicts) from None
    remaining = {k: s - allowed for k, s in conflicts.items()}
    remaining = {k: s for k, s in remaining.items() if s}
    if remaining:
        raise conflict_error(remaining) from None
    return upd.apply(live_obj, config, version, managers, key, True)


# A create's managedFields depend only on the object's shape (its keys, the types of its scalars and
# its lists' items), the request and the schema: objects made from one template (the pods of a Job,
# the scheduler's Events) share one computed entry, and only its time differs.
_CREATE_SHAPES: dict[tuple[Any, ...], Any] = {}
_CREATE_SHAPES_MAX = 4096
# Names an admission plugin generates per object inside lists (the ServiceAccount admission's
# projected token volume `kube-api-access-<5 random>`, in `volumes` and every `volumeMounts`): they
# are list keys, so they appear in the field set, but two pods that differ only by them have the
# same field set up to that name. The shape stands them in by position
# (`names.token_volume_names_by_position`); a cached entry gets the object's own names back.


def _shape(value: dict[str, Any], generated: list[bytes]) -> Any:
    """The shape of a dict: its keys with the shapes of their values (a scalar's type; a list's
    encoding, its generated names replaced by their position in `generated`, where they are added)."""
    out = []
    for k, v in value.items():
        t = type(v)
        if t is dict:
            out.append((k, _shape(v, generated)))
        elif t is list:  # list items are identified by their values (keys, set members)
            out.append((k, _list_shape(v, generated)))
        else:
            out.append((k, t))
    return tuple(out)


def _list_shape(value: list[Any], generated: list[bytes]) -> bytes:
    return trimmed(token_volume_names_by_position(orjson.dumps(value), generated))  # kept in _CREATE_SHAPES' keys


def _create_from_shape(new: dict[str, Any], manager: str, operation: str, meta: PatchMeta, now: str,
                       subresource: str, reset_fields: Optional[Iterable[Iterable[str]]]) -> dict[str, Any]:
    """update_managed_fields for a create without requested managedFields, memoized by shape."""
    reset = _reset_fields(subresource, reset_fields)
    generated: list[bytes] = []
    key = (id(meta), new.get("apiVersion"), manager, operation, subresource, reset, _shape(new, generated))
    cached = _CREATE_SHAPES.get(key, _MISSING)
    if cached is _MISSING:
        update_managed_fields(None, new, manager, operation, meta, now, subresource=subresource,
                              reset_fields=reset_fields, empty_object=_zero_object(meta, None))
        entries = new["metadata"].get("managedFields")
        if entries is None:
            template = None
        elif len(entries) == 1 and entries[0].get("time") == now:
            template = entries[0]
        else:
            return new  # not a single timed entry: not memoized
        if len(_CREATE_SHAPES) >= _CREATE_SHAPES_MAX:
            _CREATE_SHAPES.clear()
        _CREATE_SHAPES[key] = (template, generated)
        return new
    template, names = cached
    if template is not None:
        entry = {k: (now if k == "time" else v) for k, v in template.items()}
        if names != generated:
            entry["fieldsV1"] = _renamed_entry_fields(template, [n.decode() for n in names],
                                                      [n.decode() for n in generated])
        new["metadata"]["managedFields"] = [entry]
    return new


class _RenamePlan:
    """Where a template's generated names (`names`, by position) appear: `tree` the fieldsV1 keys
    to follow ({key: (position of the name in the key or -1, the plan below it or None)}), `fixed`
    the field paths without a name, `named` those with one (each with the indexes of its elements
    that hold a name). Made once per template; a create then copies only what holds a name."""

    __slots__ = ("template", "tree", "fixed", "named")

    def __init__(self, template: Any, names: list[str]):
        self.template = template
        fields_v1 = template["fieldsV1"]
        self.tree = _name_tree(fields_v1, names) or {}
        marker = dict.fromkeys(names, "")
        fixed: list[Path] = []
        named: list[tuple[Path, tuple[int, ...]]] = []
        for path in _decoded_fields(fields_v1):
            idxs = tuple(i for i, el in enumerate(path) if _renamed_path((el,), marker) != (el,))
            if idxs:
                named.append((path, idxs))
            else:
                fixed.append(path)
        self.fixed = frozenset(fixed)
        self.named = tuple(named)


def _name_tree(tree: dict[str, Any], names: list[str]) -> dict[str, Any] | None:
    """The keys of `tree` under which (or in which) one of `names` appears, as _RenamePlan.tree."""
    out: dict[str, Any] = {}
    for key, child in tree.items():
        position = next((i for i, n in enumerate(names) if n in key), -1)
        below = _name_tree(child, names) if child else None
        if position >= 0 or below:
            out[key] = (position, below)
    return out or None


# template managedFields entry id -> its _RenamePlan
_RENAME_PLANS: dict[int, _RenamePlan] = {}


def _rename_plan(template: Any, names: list[str]) -> _RenamePlan:
    plan = _RENAME_PLANS.get(id(template))
    if plan is None or plan.template is not template:
        plan = _RenamePlan(template, names)
        if len(_RENAME_PLANS) >= _CREATE_SHAPES_MAX:
            _RENAME_PLANS.clear()
        _RENAME_PLANS[id(template)] = plan
    return plan


def _renamed_entry_fields(template: Any, names: list[str], generated: list[str]) -> dict[str, Any]:
    """The template's fieldsV1 with its generated names (`names`) replaced by another object's
    (`generated`, the same number in the same places). Subtrees without such a name are the
    template's own (shared, never changed); only the paths down to a renamed key are new. The
    decoded field set is remembered with it, so a later update does not decode it again."""
    plan = _rename_plan(template, names)
    fields_v1 = _renamed_along(template["fieldsV1"], plan.tree, names, generated)
    renames = dict(zip(names, generated))
    elements: dict[Any, Any] = {}
    paths = []
    for path, idxs in plan.named:
        parts = list(path)
        for i in idxs:
            el = path[i]
            renamed = elements.get(el)
            if renamed is None:
                renamed = elements[el] = _renamed_path((el,), renames)[0]
            parts[i] = renamed
        paths.append(tuple(parts))
    renamed_set = plan.fixed.union(paths)
    if paths != [p for p, _ in plan.named]:  # never let another object's encoding stand for the template's
        remember_fields(fields_v1, renamed_set)
    return fields_v1


def _renamed_along(tree: dict[str, Any], plan: dict[str, Any], names: list[str],
                   generated: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, child in tree.items():
        step = plan.get(key)
        if step is not None:
            position, below = step
            if below:
                child = _renamed_along(child, below, names, generated)
            if position >= 0:
                key = key.replace(names[position], generated[position])
        out[key] = child
    return out


def _renamed_path(path: Path, renames: dict[str, str]) -> Path:
    """A field path with the generated names in its list keys and set values replaced."""
    out = []
    for kind, value in path:
        if kind == "k":
            value = tuple((n, _renamed_value(v, renames)) for n, v in value)
        elif kind == "v":
            value = _renamed_value(value, renames)
        out.append((kind, value))
    return tuple(out)


def _renamed_value(hv: Any, renames: dict[str, str]) -> Any:
    """A path element's hashable value (`("s", text)` for a string) with a generated name replaced."""
    if isinstance(hv, tuple) and len(hv) == 2 and hv[0] == "s" and hv[1] in renames:
        return ("s", renames[hv[1]])
    return hv


def _without_managed_fields(old: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy whose metadata can lose managedFields: the comparison only reads both objects."""
    old_obj = dict(old)
    if isinstance(old.get("metadata"), dict):
        old_obj["metadata"] = dict(old["metadata"])
    return old_obj


def _decode_or_empty(entries: Any) -> tuple[Managers, Times]:
    try:
        return decode_managed_fields(entries)
    except ValueError:
        return {}, {}


def _managers_before_update(subresource: str, requested: Any, live_entries: Any) -> tuple[Managers, Times]:
    """The managers an update starts from: the live ones on a subresource, none when the request
    resets them (`managedFields: []`), else the requested ones, falling back to the live ones."""
    if subresource:
        return _decode_or_empty(live_entries)
    if _is_reset(requested):
        return {}, {}
    managers, times = _decode_or_empty(requested)
    if not managers:
        managers, times = _decode_or_empty(live_entries)
    return managers, times


def _is_reset(entries: Any) -> bool:
    if isinstance(entries, list):
        return len(entries) == 0 or (len(entries) == 1 and entries[0] in ({}, None))
    return False


def update_managed_fields(old: Optional[dict[str, Any]], new: dict[str, Any], manager: str, operation: str = "Update",
                          meta: Optional[PatchMeta] = None, now: str = "", *, subresource: Optional[str] = "",
                          reset_fields: Optional[Iterable[Iterable[str]]] = None,
                          empty_object: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Record the fields `manager` changed from `old` (None on create) to `new`.

    Sets `new["metadata"]["managedFields"]` in place (and returns `new`): an `Update` entry for the
    manager, and the other managers' entries minus the fields this request took over or removed.
    Call it with the final (defaulted) object of a create, update or non-apply patch. Like
    upstream, an existing object that has never had managedFields is not tracked until its first
    apply, and a request that sends `managedFields: []` resets them. `old` is not modified.
    """
    meta = meta or PatchMeta.empty()
    subresource = subresource or ""
    new_md = new.setdefault("metadata", {})
    requested = new_md.pop("managedFields", None)
    if old is None and requested is None and empty_object is None and now:
        return _create_from_shape(new, manager, operation, meta, now, subresource, reset_fields)
    current = new  # read only below (its managedFields were taken out above)
    old_obj = _without_managed_fields(old) if old else _zero_object(meta, empty_object)
    old_md = old_obj.get("metadata")
    if not isinstance(old_md, dict):
        old_md = {}
    live_entries = old_md.pop("managedFields", None)
    version = current.get("apiVersion") or old_obj.get("apiVersion") or ""
    managers, times = _managers_before_update(subresource, requested, live_entries)
    if not managers and old and (old_md.get("uid") or ""):
        return new  # an existing object without managedFields is not tracked before its first apply

    upd = _Updater(meta, _reset_fields(subresource, reset_fields))
    key = _manager_key(manager or "unknown", operation, version, subresource)
    try:
        managers = _record_update(upd, old_obj, current, version, managers, times, key, now)
    except _TypedError:
        if live_entries:
            new_md["managedFields"] = live_entries  # upstream keeps the live entries on failure
        return new
    _write_managed_fields(new_md, managers, times)
    return new

