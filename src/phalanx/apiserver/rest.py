"""The generic resource API: what kube-apiserver's generic registry does for every kind.

`API` sits between the transports (the HTTP server, the in-process client) and the `Store`. For each
request it applies, in upstream's order:

    decode -> system metadata (uid, creationTimestamp, generation, resourceVersion)
           -> strategy.default -> strategy.prepare_for_create/update -> strategy.admit
           -> metadata + strategy validation (422 Invalid) -> store (409 AlreadyExists / Conflict)

and implements the semantics every kind shares: `generateName`, optimistic concurrency, `status`
subresources, finalizers and `deletionTimestamp`, graceful pod deletion, deletion propagation
(Background / Foreground / Orphan, completed by the garbage collector), `dryRun`, label and field
selectors, `limit`/`continue`, and watch with selector transitions and bookmarks.

All methods are synchronous and run on the event loop thread; `watch` returns a `WatchStream`
that is consumed asynchronously. Objects handed in are owned by the API afterwards; objects
handed out are shared with the store and must not be mutated (copy with `meta.deep_copy`).
"""

from __future__ import annotations

import builtins
import functools
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Protocol

import orjson

from ..api import openapi
from ..api.registry import ResourceType, StrategyContext
from ..machinery import apply as ssa
from ..machinery import errors
from ..machinery import patch as patching
from ..machinery.errors import FieldError
from ..machinery.meta import deep_copy, new_uid
from ..machinery.timestamps import now_rfc3339
from ..machinery.names import generate_name
from ..machinery.patchmeta import PatchMeta
from ..store import Store, StoreAlreadyExists, StoreConflict, StoreGone, StoreNotFound
from . import listing
from .watchstream import WatchStream
from .objectmeta import FINALIZER_FOREGROUND, FINALIZER_ORPHAN, drop_empty_metadata, validate_object_meta

Obj = dict[str, Any]
Warnings = list[str]  # (named: inside `API`, `list` is the list verb)
Finalizers = list[str]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Kinds whose REST storage answers a completed DELETE with the deleted object (upstream's
# `ReturnDeletedObject: true`); every other kind answers with a Success `Status`.
RETURNS_DELETED_OBJECT = frozenset({"core/pods", "core/services", "core/namespaces", "core/serviceaccounts"})

# Fields the server owns on create: any value the client sends is replaced.
_METADATA_SERVER_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                           "generation", "selfLink")


def _spec_of(obj: Obj) -> dict:
    """Everything but metadata and status: what `generation` tracks."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class FeatureGateReader(Protocol):
    """What the API reads of the cluster's feature gates (`FeatureGates` provides it)."""

    def enabled(self, name: str) -> bool: ...


class KindStorage(Protocol):
    """Work a kind's REST storage does beyond its strategy, as upstream's per-kind storage does
    (Service cluster IPs and node ports): run after `prepare_for_create` / `prepare_for_update`."""

    def before_create(self, obj: Obj) -> None: ...

    def before_update(self, new: Obj, old: Obj) -> None: ...


class API:
    """The resource API over one store. Build it with `apiserver.build_api`, which decides the
    served types and the per-kind storage; the constructor takes them as given."""

    def __init__(self, store: Store, gates: FeatureGateReader, *, types: list[ResourceType],
                 kind_storage: dict[str, KindStorage], now: Callable[[], datetime] | None = None,
                 storage_versions: dict[str, str] | None = None):
        self.store = store
        self.gates = gates
        # The Kubernetes release whose OpenAPI schemas validate, prune and patch this API's objects.
        self.release: str = getattr(gates, "release", openapi.DEFAULT_RELEASE)
        self.now = now or (lambda: datetime.now(timezone.utc))
        self.new_uid: Callable[[], str] = new_uid  # a simulation gives a seeded source (reproducible uids)
        # False: creates, updates and non-apply patches record no managedFields entry (server-side
        # apply still does); a simulation, where nobody reads them, saves a third of its writes' cost.
        self.track_managed_fields = True
        self.ctx = StrategyContext(gates=gates, now=self.now, lookup=self._lookup,
                                   list_objects=self._list_objects)
        self._types = list(types)
        self._by_gvr = {(rt.group, rt.version, rt.plural): rt for rt in self._types}
        self._kind_storage = dict(kind_storage)
        # Resources served in several versions: the apiVersion the store holds them in. A request in
        # another version is converted on the way in and its answer on the way out.
        self._stored_as = dict(storage_versions or {})
        self._stamp_second = -1
        self._groups: frozenset[str] | None = None  # the served API groups, made when first asked
        self._stamp = ""

    def serves_group(self, group: str) -> bool:
        """Whether some served resource is in API group `group`."""
        if self._groups is None:
            self._groups = frozenset(rt.group for rt in self._types)
        return group in self._groups

    def now_stamp(self) -> str:
        """`now_rfc3339(self.now())`, formatted once per second (every write stamps a time)."""
        now = self.now()
        second = int(now.timestamp())
        if second != self._stamp_second:
            self._stamp_second, self._stamp = second, now_rfc3339(now)
        return self._stamp

    @property
    def types(self) -> list[ResourceType]:
        return self._types

    def set_custom_types(self, key: str, types: list[ResourceType], storage_api_version: str = "") -> None:
        """Serve `types` (the versions of one custom resource, storage key `key`) instead of what
        was served under `key`; no types unserves it (`apiserver/customresources.py`)."""
        kept = [rt for rt in self._types if rt.key != key]
        self._types = kept + list(types)
        self._by_gvr = {(rt.group, rt.version, rt.plural): rt for rt in self._types}
        self._groups = None
        if types and storage_api_version:
            self._stored_as[key] = storage_api_version
        else:
            self._stored_as.pop(key, None)

    def resource(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self._by_gvr.get((group, version, plural))
        if rt is None:
            raise errors.requested_resource_not_found()
        return rt

    def resource_for_kind(self, api_version: str, kind: str) -> ResourceType:
        group, _, version = api_version.rpartition("/")
        for rt in self._types:
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        raise errors.StatusError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')

    def output(self, rt: ResourceType, obj: Obj) -> Obj:
        """`obj` as stored, in the version `rt` serves (the same object when that is the stored one).
        The versions phalanx serves side by side share their shape, so converting is naming the
        version."""
        if rt.storage_version or obj.get("apiVersion") == rt.api_version:
            return obj
        return {**obj, "apiVersion": rt.api_version}

    def _lookup(self, key: str, namespace: str, name: str) -> Obj | None:
        return self.store.get(key, namespace, name)

    def _list_objects(self, key: str, namespace: str | None) -> list[Obj]:
        return self.store.list(key, namespace)[0]

    # -- helpers -------------------------------------------------------------------------
    def _not_found(self, rt: ResourceType, name: str) -> errors.StatusError:
        return errors.not_found_error(rt.plural, rt.group, name)

    def _check_namespace(self, rt: ResourceType, namespace: str, *, creating: bool) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise errors.bad_request("the server could not find the requested resource: namespace is required")
        if creating:
            ns = self.store.get("core/namespaces", "", namespace)
            if ns is None:
                raise errors.not_found_error("namespaces", "", namespace)
            if ns["metadata"].get("deletionTimestamp") and rt.key != "core/events":
                raise errors.StatusError(
                    403, "Forbidden",
                    f'{rt.plural} "{"" }" is forbidden: unable to create new content in namespace {namespace} '
                    f"because it is being terminated",
                    {"kind": rt.plural, "group": rt.group,
                     "causes": [{"reason": "NamespaceTerminating",
                                 "message": f"namespace {namespace} is being terminated",
                                 "field": "metadata.namespace"}]})

    def _raise_invalid(self, rt: ResourceType, obj: Obj, errs: list[FieldError]) -> None:
        if errs:
            raise errors.invalid_error(rt.kind, rt.group, (obj.get("metadata") or {}).get("name", ""), errs)

    def _check_type_meta(self, rt: ResourceType, obj: Obj) -> None:
        if not isinstance(obj, dict):
            raise errors.bad_request(f"the object provided is not a valid {rt.kind}")
        av = obj.get("apiVersion")
        if av and av != rt.api_version:
            # Upstream converts between served versions; phalanx serves one version per kind.
            raise errors.bad_request(
                f"the API version in the data ({av}) does not match the expected API version ({rt.api_version})")
        kind = obj.get("kind")
        if kind and kind != rt.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        obj["apiVersion"] = rt.api_version if rt.storage_version else self._stored_as.get(rt.key, rt.api_version)
        obj["kind"] = rt.kind
        md = obj.get("metadata")
        if md is None:
            obj["metadata"] = {}
        elif not isinstance(md, dict):
            raise errors.bad_request(f"the object provided is not a valid {rt.kind}: metadata must be an object")

    def strict_check(self, rt: ResourceType, obj: Obj, field_validation: str | None,
                     raw: bytes | None = None) -> list[str]:
        """Decoding checks on a request body, as upstream's decoder makes them.

        Values of the wrong JSON type are always an error (400). Unknown fields are dropped from
        `obj`, as decoding into a typed object drops them; `fieldValidation` decides what the caller
        hears of them and of duplicate fields: Strict rejects (400), Warn returns them as warnings,
        Ignore says nothing. `field_validation=None` is for in-process callers, which hand over
        objects they built rather than JSON to decode: no checks."""
        if field_validation is None:
            return []
        prefix = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
        custom_unknown = getattr(rt.strategy, "unknown_fields", None)
        if custom_unknown is not None:  # custom resources: pruned by their structural schema
            return self._strict_result(prefix, custom_unknown(obj) + openapi.unknown_fields(
                rt.group, rt.version, rt.kind, {"metadata": obj.get("metadata")}, prune=True, release=self.release),
                field_validation)
        type_errs = openapi.type_errors(rt.group, rt.version, rt.kind, obj, self.release)
        if type_errs:
            raise errors.bad_request(prefix + type_errs[0])
        unknown = openapi.unknown_fields(rt.group, rt.version, rt.kind, obj, prune=True, release=self.release)
        if field_validation == "Ignore":
            return []
        problems = [f'unknown field "{p}"' for p in unknown]
        if raw is not None and openapi.duplicate_fields(raw):  # the decoder's own words and order
            problems = openapi.strict_decoding_errors(rt.group, rt.version, rt.kind, raw, self.release)
        if problems and field_validation == "Strict":
            raise errors.bad_request(prefix + openapi.strict_decoding_message(problems))
        return problems

    @staticmethod
    def _strict_result(prefix: str, unknown: builtins.list[str], field_validation: str) -> builtins.list[str]:
        if field_validation == "Ignore":
            return []
        problems = [f'unknown field "{p}"' for p in unknown]
        if problems and field_validation == "Strict":
            raise errors.bad_request(prefix + openapi.strict_decoding_message(problems))
        return problems

    def _reset_fields(self, rt: ResourceType, subresource: str | None) -> list[tuple[str, ...]] | None:
        """Fields a request cannot own: status on the main resource, spec on /status."""
        if not rt.strategy.status_is_subresource:
            return None
        return [("spec",)] if subresource == "status" else [("status",)]

    def _record_managed_fields(self, rt: ResourceType, old: Obj | None, new: Obj, manager: str | None,
                               operation: str = "Update", subresource: str | None = None) -> None:
        if not manager or not self.track_managed_fields:
            return
        ssa.update_managed_fields(old, new, manager, operation, self.patch_meta(rt), self.now_stamp(),
                                  subresource=subresource or "", reset_fields=self._reset_fields(rt, subresource))

    def patch_meta(self, rt: ResourceType) -> PatchMeta:
        """Merge keys and list types of a kind, from its OpenAPI schema (strategic merge, apply)."""
        return openapi.patch_meta(rt.group, rt.version, rt.kind, self.release)

    # -- create ----------------------------------------------------------------------------
    def create(self, rt: ResourceType, namespace: str, obj: Obj, *, dry_run: bool = False,
               field_manager: str | None = None, field_validation: str | None = None,
               raw: bytes | None = None, warnings: list[str] | None = None,
               keep_managed_fields: bool = False) -> Obj:
        self._check_type_meta(rt, obj)
        md = obj["metadata"]
        if rt.namespaced:
            body_ns = md.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request")
            namespace = namespace or body_ns or ""
            md["namespace"] = namespace
        else:
            md.pop("namespace", None)
            namespace = ""
        w = self.strict_check(rt, obj, field_validation, raw)
        if warnings is not None:
            warnings.extend(w)
        if md.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        self._check_namespace(rt, namespace, creating=True)
        for f in _METADATA_SERVER_FIELDS:
            md.pop(f, None)
        md["uid"] = self.new_uid()
        md["creationTimestamp"] = self.now_stamp()
        if getattr(rt.strategy, "tracks_generation", True):
            md["generation"] = 1
        generated = not md.get("name") and bool(md.get("generateName"))  # an explicit name wins
        if generated:
            md["name"] = generate_name(md["generateName"])
        strategy = rt.strategy
        strategy.default(obj, self.ctx)
        strategy.prepare_for_create(obj, self.ctx)
        storage = self._kind_storage.get(rt.key)
        if storage is not None:
            storage.before_create(obj)
        drop_empty_metadata(md)
        strategy.admit("CREATE", obj, None, self.ctx)
        errs = validate_object_meta(rt, obj, None) + strategy.validate(obj, self.ctx)
        self._raise_invalid(rt, obj, errs)
        if not keep_managed_fields:
            md.pop("managedFields", None)
            self._record_managed_fields(rt, None, obj, field_manager)
        if dry_run:
            return self.output(rt, obj)
        for attempt in range(8):
            try:
                return self.output(rt, self.store.create(rt.key, namespace, md["name"], obj))
            except StoreAlreadyExists:
                if generated and attempt < 7:
                    md["name"] = generate_name(md["generateName"])
                    continue
                raise errors.already_exists(rt.plural, rt.group, md["name"]) from None
        raise errors.already_exists(rt.plural, rt.group, md["name"])  # pragma: no cover

    # -- read ------------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise self._not_found(rt, name)
        return self.output(rt, obj)

    def field_getter(self, rt: ResourceType, obj: Obj) -> Callable[[str], str | None]:
        extra = rt.strategy.field_selectors

        def get(field: str) -> str | None:
            if field == "metadata.name":
                return obj["metadata"].get("name", "")
            if field == "metadata.namespace":
                return obj["metadata"].get("namespace", "")
            fn = extra.get(field)
            if fn is None:
                return None
            return fn(obj)
        return get

    def _selector_predicate(self, rt: ResourceType, label_selector: str | None,
                            field_selector: str | None) -> Callable[[Obj], bool] | None:
        if not label_selector and not field_selector:
            return None
        from ..machinery import selectors
        lsel = fsel = None
        if label_selector:
            try:
                lsel = selectors.parse_label_selector(label_selector)
            except ValueError as e:
                raise errors.bad_request(str(e)) from None
        if field_selector:
            try:
                fsel = selectors.parse_field_selector(field_selector)
            except ValueError as e:
                raise errors.bad_request(str(e)) from None
            supported = {"metadata.name", "metadata.namespace", *rt.strategy.field_selectors}
            for req in fsel.requirements:
                if req[0] not in supported:
                    raise errors.bad_request(
                        f'field label not supported: {req[0]}')
        eq = fsel

        def pred(obj: Obj) -> bool:
            if lsel is not None and not lsel.matches(obj["metadata"].get("labels") or {}):
                return False
            if eq is not None and not eq.matches(self.field_getter(rt, obj)):
                return False
            return True
        return pred

    def list(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
             field_selector: str | None = None, limit: int = 0, continue_token: str | None = None,
             resource_version: str | None = None, resource_version_match: str | None = None) -> Obj:
        """One page of a list; every page of a paginated list reads the first page's snapshot
        (see `phalanx.apiserver.listing` for which resourceVersion a list reads)."""
        ns = namespace if rt.namespaced else None
        pred = self._selector_predicate(rt, label_selector, field_selector)
        opts = listing.ListOptions.parse(limit=limit, continue_token=continue_token,
                                         resource_version=resource_version,
                                         resource_version_match=resource_version_match)
        items, meta = listing.list_page(self.store, rt.key, ns or None, pred, opts)
        if not rt.storage_version:
            items = [self.output(rt, o) for o in items]
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}

    # -- update ----------------------------------------------------------------------------
    def update(self, rt: ResourceType, namespace: str, name: str, obj: Obj, *, subresource: str | None = None,
               dry_run: bool = False, field_manager: str | None = None, field_validation: str | None = None,
               raw: bytes | None = None, warnings: Warnings | None = None,
               operation: str = "Update", _old: Obj | None = None) -> Obj:
        # As upstream's handler: decode and check the body against the URL first, then look up.
        self._check_type_meta(rt, obj)
        ns = namespace if rt.namespaced else ""
        md = obj["metadata"]
        _place_at_url(rt, md, ns, name)
        w = self.strict_check(rt, obj, field_validation, raw)
        if warnings is not None:
            warnings.extend(w)
        old = _old if _old is not None else self.store.get(rt.key, ns, name)
        if old is None:
            raise self._not_found(rt, name)
        omd = old["metadata"]
        rv = md.get("resourceVersion")
        if rv and rv != omd.get("resourceVersion"):
            raise errors.conflict(rt.plural, rt.group, name, errors.OBJECT_MODIFIED)
        _copy_fields(omd, md, _METADATA_SERVER_OWNED)
        if subresource in ("status", "approval"):  # approval: CSR conditions, as status
            errs = self._prepare_status_update(rt, obj, old)
        else:
            errs = self._prepare_update(rt, obj, old)
        self._raise_invalid(rt, obj, errs)
        drop_empty_metadata(md)
        if getattr(rt.strategy, "tracks_generation", True) and "generation" in omd:
            if _spec_of(obj) != _spec_of(old):
                md["generation"] = omd["generation"] + 1
        # Managed fields: the client may not rewrite them except by sending an explicit list.
        if "managedFields" not in md and "managedFields" in omd:
            md["managedFields"] = omd["managedFields"]
        self._record_managed_fields(rt, old, obj, field_manager, operation, subresource)
        # A no-op update writes nothing and keeps the resourceVersion (as upstream).
        md["resourceVersion"] = omd.get("resourceVersion")
        if obj == old:
            return self.output(rt, old)
        if dry_run:
            return self.output(rt, obj)
        return self.output(rt, self._write_update(rt, ns, name, obj, old))

    def _prepare_status_update(self, rt: ResourceType, obj: Obj, old: Obj) -> builtins.list[FieldError]:
        """`/status`: metadata the main resource owns stays as stored; the strategy's status rules."""
        _copy_fields(old["metadata"], obj["metadata"], ("labels", "annotations", "finalizers", "ownerReferences"))
        rt.strategy.prepare_for_status_update(obj, old, self.ctx)
        return rt.strategy.validate_status_update(obj, old, self.ctx)

    def _prepare_update(self, rt: ResourceType, obj: Obj, old: Obj) -> builtins.list[FieldError]:
        """The main resource: defaults, the strategy's update rules, the kind's storage work,
        admission, then metadata and strategy validation."""
        strategy = rt.strategy
        strategy.default(obj, self.ctx)
        strategy.prepare_for_update(obj, old, self.ctx)
        storage = self._kind_storage.get(rt.key)
        if storage is not None:
            storage.before_update(obj, old)
        _no_finalizers_added_while_deleting(rt, obj["metadata"], old["metadata"])
        strategy.admit("UPDATE", obj, old, self.ctx)
        return validate_object_meta(rt, obj, old) + strategy.validate_update(obj, old, self.ctx)

    def _write_update(self, rt: ResourceType, ns: str, name: str, obj: Obj, old: Obj) -> Obj:
        """Store the update; a terminating object left with nothing holding it is deleted instead."""
        md, omd = obj["metadata"], old["metadata"]
        if (omd.get("deletionTimestamp") and not md.get("finalizers") and not omd.get("deletionGracePeriodSeconds")
                and not self._spec_finalizers(rt, obj)):
            self._finish_delete(rt, ns, name, omd.get("resourceVersion"))
            return obj
        try:
            return self.store.update(rt.key, ns, name, obj, expected_rv=omd.get("resourceVersion"))
        except StoreConflict:
            raise errors.conflict(rt.plural, rt.group, name, errors.OBJECT_MODIFIED) from None
        except StoreNotFound:
            raise self._not_found(rt, name) from None

    # -- patch -----------------------------------------------------------------------------
    def patch(self, rt: ResourceType, namespace: str, name: str, patch_type: str, body: bytes | Any, *,
              subresource: str | None = None, dry_run: bool = False, field_manager: str | None = None,
              force: bool = False, field_validation: str | None = None,
              warnings: Warnings | None = None) -> tuple[Obj, bool]:
        """Returns (object, created). Server-side apply may create the object."""
        ns = namespace if rt.namespaced else ""
        old = self.store.get(rt.key, ns, name)
        meta = self.patch_meta(rt)
        if patch_type == "application/apply-patch+yaml":
            return self._apply(rt, ns, name, old, body, subresource=subresource, dry_run=dry_run,
                               field_manager=field_manager, force=force, field_validation=field_validation,
                               meta=meta, warnings=warnings)
        if old is None:
            raise self._not_found(rt, name)
        if isinstance(body, (bytes, bytearray, str)):
            try:
                doc = orjson.loads(body)
            except orjson.JSONDecodeError as e:
                raise errors.bad_request(f"error decoding patch: {e}") from None
        else:
            doc = body
        if patch_type != "application/json-patch+json" and doc is not None and not isinstance(doc, dict):
            raise errors.bad_request("error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}")
        base = deep_copy(old)
        base["apiVersion"] = rt.api_version  # a patch sees the object in the version it names
        patched = patching.apply_patch(base, patch_type, doc, meta)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch produced an object that is not a JSON object")
        # A resourceVersion in the patch is a precondition; otherwise the patch applies to the current state.
        prv = (doc.get("metadata") or {}).get("resourceVersion") if isinstance(doc, dict) else None
        patched.setdefault("metadata", {})
        if not isinstance(patched["metadata"], dict):
            raise self._undecodable_patch(rt, doc, patched["metadata"])
        if not prv:
            patched["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
        w = self.strict_check(rt, patched, field_validation)
        if warnings is not None:
            warnings.extend(w)
        result = self.update(rt, ns, name, patched, subresource=subresource, dry_run=dry_run,
                             field_manager=field_manager, _old=old)
        return result, False

    @staticmethod
    def _undecodable_patch(rt: ResourceType, doc: Any, metadata: Any) -> errors.StatusError:
        """The patched object cannot be decoded into its kind (metadata is not an object): upstream
        answers 422 Invalid on the field path `patch`, naming no kind or object."""
        found = "bool" if isinstance(metadata, bool) else "number" if isinstance(metadata, (int, float)) \
            else "string" if isinstance(metadata, str) else "array"
        why = f"json: cannot unmarshal {found} into Go struct field {rt.kind}.metadata of type v1.ObjectMeta"
        return errors.invalid_error("", "", "", [errors.invalid("patch", orjson.dumps(doc).decode(), why)])

    def _apply(self, rt: ResourceType, ns: str, name: str, old: Obj | None, body: Any, *, subresource, dry_run,
               field_manager, force, field_validation, meta, warnings) -> tuple[Obj, bool]:
        if not field_manager:
            raise errors.bad_request("PATCH, application/apply-patch+yaml requires fieldManager parameter")
        applied = ssa.load_apply_body(body) if isinstance(body, (bytes, bytearray, str)) else body
        if not isinstance(applied, dict):
            raise errors.bad_request("the body of an apply patch must be an object")
        self._check_type_meta(rt, applied)
        amd = applied["metadata"]
        if amd.get("name") and amd["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({amd['name']}) does not match the name on the URL ({name})")
        w = self.strict_check(rt, applied, field_validation)
        if warnings is not None:
            warnings.extend(w)
        now = self.now_stamp()
        merged = ssa.server_side_apply(deep_copy(old) if old is not None else None, applied, field_manager,
                                       meta, force, now, subresource=subresource or "",
                                       reset_fields=self._reset_fields(rt, subresource),
                                       api_version=rt.api_version, kind=rt.kind)
        if old is None:
            merged["metadata"]["name"] = name
            if rt.namespaced:
                merged["metadata"]["namespace"] = ns
            return self.create(rt, ns, merged, dry_run=dry_run, keep_managed_fields=True), True
        merged["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
        result = self.update(rt, ns, name, merged, subresource=subresource, dry_run=dry_run,
                             field_manager=None, _old=old)
        return result, False

    # -- delete ----------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str, name: str, *, propagation: str | None = None,
               grace_period: int | None = None, preconditions: dict | None = None,
               dry_run: bool = False) -> tuple[Obj, bool]:
        """Returns (object, deleted_now). When finalizers or graceful deletion hold the object,
        it is returned with `deletionTimestamp` set and deleted_now is False."""
        obj, deleted_now = self._delete(rt, namespace, name, propagation=propagation, grace_period=grace_period,
                                        preconditions=preconditions, dry_run=dry_run)
        return self.output(rt, obj), deleted_now

    def _delete(self, rt: ResourceType, namespace: str, name: str, *, propagation: str | None,
                grace_period: int | None, preconditions: dict | None, dry_run: bool) -> tuple[Obj, bool]:
        ns = namespace if rt.namespaced else ""
        obj = self.store.get(rt.key, ns, name)
        if obj is None:
            raise self._not_found(rt, name)
        md = obj["metadata"]
        _check_delete_preconditions(rt, name, md, preconditions or {})
        finalizers = _finalizers_for_propagation(rt, md, propagation)
        if rt.key == "core/namespaces" and name in SYSTEM_NAMESPACES:  # NamespaceLifecycle: immortal
            raise errors.forbidden_error("namespaces", "", name, "this namespace may not be deleted")
        grace = self._grace_period(rt, obj, grace_period)
        if dry_run:
            return obj, not finalizers and not grace
        if not finalizers and not grace and not self._spec_finalizers(rt, obj):
            return self._finish_delete(rt, ns, name, None), True
        if md.get("deletionTimestamp") and finalizers == (md.get("finalizers") or []) and not grace:
            return obj, False  # already terminating; nothing changes
        new = self._marked_for_deletion(rt, obj, grace, finalizers)
        try:
            return self.store.update(rt.key, ns, name, new, expected_rv=md.get("resourceVersion")), False
        except StoreConflict:
            raise errors.conflict(rt.plural, rt.group, name, errors.OBJECT_MODIFIED) from None

    def _marked_for_deletion(self, rt: ResourceType, obj: Obj, grace: int, finalizers: Finalizers) -> Obj:
        """A copy of `obj` with `deletionTimestamp` (now + grace, or sooner than before), the
        finalizers that hold it and, for a namespace, phase Terminating."""
        new = deep_copy(obj)
        nmd = new["metadata"]
        now = self.now()
        if not nmd.get("deletionTimestamp"):
            nmd["deletionTimestamp"] = now_rfc3339(now + timedelta(seconds=grace or 0))
            nmd["deletionGracePeriodSeconds"] = grace or 0
            if "generation" in nmd:
                nmd["generation"] = nmd["generation"] + 1
        elif grace is not None and grace < (nmd.get("deletionGracePeriodSeconds") or 0):
            nmd["deletionTimestamp"] = now_rfc3339(now + timedelta(seconds=grace))
            nmd["deletionGracePeriodSeconds"] = grace
        if finalizers:
            nmd["finalizers"] = finalizers
        if rt.key == "core/namespaces":
            new.setdefault("status", {})["phase"] = "Terminating"
        return new

    @staticmethod
    def delete_result(rt: ResourceType, obj: Obj, deleted_now: bool) -> Obj:
        """What a DELETE answers, given `delete`'s result: the object while finalizers or a grace
        period hold it; once it is gone, the object for the kinds that return it and otherwise a
        Success `Status` naming it (details.kind is the resource, as upstream writes it)."""
        if not deleted_now or rt.key in RETURNS_DELETED_OBJECT:
            return obj
        md = obj["metadata"]
        details = {"name": md.get("name", "")}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        if md.get("uid"):
            details["uid"] = md["uid"]
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    @staticmethod
    def _spec_finalizers(rt: ResourceType, obj: Obj) -> Finalizers:
        """Namespaces also wait for `spec.finalizers` (the namespace controller's `kubernetes`)."""
        if rt.key != "core/namespaces":
            return []
        return list((obj.get("spec") or {}).get("finalizers") or [])

    def finalize(self, rt: ResourceType, name: str, body: Obj) -> Obj:
        """`PUT namespaces/<name>/finalize`: only spec.finalizers changes; a terminating namespace
        whose finalizers are all gone is removed. A resourceVersion in the body is a precondition."""
        if rt.key != "core/namespaces":
            raise errors.method_not_allowed("finalize is only served for namespaces")
        old = self.get(rt, "", name)
        self._check_type_meta(rt, body)
        bmd = body["metadata"]
        if bmd.get("name") and bmd["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({bmd['name']}) does not match the name on the URL ({name})")
        rv = bmd.get("resourceVersion")
        if rv and rv != old["metadata"].get("resourceVersion"):
            raise errors.conflict(rt.plural, rt.group, name, errors.OBJECT_MODIFIED)
        new = deep_copy(body)
        new["metadata"]["name"] = name
        _copy_fields(old["metadata"], new["metadata"], _METADATA_SERVER_OWNED)
        prepare = getattr(rt.strategy, "prepare_for_finalize_update", None)
        if prepare is not None:
            prepare(new, old, self.ctx)
            self._raise_invalid(rt, new, getattr(rt.strategy, "validate_finalize_update")(new, old, self.ctx))
        else:
            new = deep_copy(old)
            new.setdefault("spec", {})["finalizers"] = list((body.get("spec") or {}).get("finalizers") or [])
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return old
        omd = old["metadata"]
        if omd.get("deletionTimestamp") and not self._spec_finalizers(rt, new) and not omd.get("finalizers"):
            return self._finish_delete(rt, "", name, omd["resourceVersion"])
        try:
            return self.store.update(rt.key, "", name, new, expected_rv=omd["resourceVersion"])
        except StoreConflict:
            raise errors.conflict(rt.plural, rt.group, name, errors.OBJECT_MODIFIED) from None

    def _grace_period(self, rt: ResourceType, obj: Obj, requested: int | None) -> int:
        """Graceful deletion applies to pods that a (simulated) kubelet must stop first."""
        if rt.key != "core/pods":
            return 0
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(0, requested)
        md = obj["metadata"]
        if md.get("deletionTimestamp"):
            return md.get("deletionGracePeriodSeconds") or 0
        return spec.get("terminationGracePeriodSeconds", 30) or 0

    def _finish_delete(self, rt: ResourceType, ns: str, name: str, expected_rv: str | None) -> Obj:
        try:
            return self.store.delete(rt.key, ns, name, expected_rv=expected_rv)
        except StoreNotFound:
            raise self._not_found(rt, name) from None
        except StoreConflict:
            raise errors.conflict(rt.plural, rt.group, name, errors.OBJECT_MODIFIED) from None

    def delete_collection(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                          field_selector: str | None = None, propagation: str | None = None,
                          dry_run: bool = False) -> Obj:
        lst = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)
        deleted = []
        for o in lst["items"]:
            md = o["metadata"]
            try:
                d, _ = self.delete(rt, md.get("namespace", ""), md["name"], propagation=propagation, dry_run=dry_run)
                deleted.append(d)
            except errors.StatusError as e:
                if e.code != 404:
                    raise
        return {"kind": rt.list_kind, "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)}, "items": deleted}

    # -- subresources ----------------------------------------------------------------------
    def bind(self, namespace: str, name: str, binding: Obj, *, dry_run: bool = False) -> Obj:
        """`POST pods/<name>/binding`: set spec.nodeName once, as upstream's BindingREST does."""
        rt = self.resource("", "v1", "pods")
        pod = self.store.get(rt.key, namespace, name)
        if pod is None:
            raise self._not_found(rt, name)
        target = (binding.get("target") or {})
        node = target.get("name")
        if not node:
            raise errors.invalid_error("Binding", "", name, [errors.required("target.name", "")])
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            raise errors.conflict("pods", "", name, "pod is being deleted, cannot be assigned to a host")
        if (pod.get("spec") or {}).get("nodeName"):
            raise errors.conflict("pods/binding", "", name,
                                  f"pod {name} is already assigned to node \"{pod['spec']['nodeName']}\"")
        bmd = binding.get("metadata") or {}
        if bmd.get("uid") and bmd["uid"] != md.get("uid"):
            raise errors.conflict("pods/binding", "", name,
                                  f"Precondition failed: UID in precondition: {bmd['uid']}, UID in object meta: {md.get('uid')}")
        new = _binding_copy(pod)
        new["spec"]["nodeName"] = node
        conds = new["status"]["conditions"]
        now = self.now_stamp()
        for c in conds:
            if c.get("type") == "PodScheduled":
                c.update({"status": "True", "lastTransitionTime": now})
                c.pop("reason", None)
                c.pop("message", None)
                break
        else:
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now})
        if bmd.get("annotations"):
            new["metadata"]["annotations"] = {**(new["metadata"].get("annotations") or {}), **bmd["annotations"]}
        if dry_run:
            return deep_copy(new)
        try:
            self.store.update(rt.key, namespace, name, new, expected_rv=md.get("resourceVersion"))
        except StoreConflict:
            raise errors.conflict("pods", "", name, errors.OBJECT_MODIFIED) from None
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    # -- watch -----------------------------------------------------------------------------
    def watch(self, rt: ResourceType, namespace: str | None, *, resource_version: str | None = None,
              label_selector: str | None = None, field_selector: str | None = None,
              send_initial_events: bool = False, allow_bookmarks: bool = False) -> "WatchStream":
        """A watch from `resource_version` (events after it; one ahead of the store waits for the
        store to pass it), or from now after the current objects as ADDED ("" or "0"). With
        `send_initial_events` the current objects come first, then the initial-events-end
        bookmark; a resource_version ahead of the store is then 504 Too large resource version."""
        ns = (namespace or None) if rt.namespaced else None
        pred = self._selector_predicate(rt, label_selector, field_selector)
        rv: int | None = listing.parse_resource_version(resource_version) or None
        if send_initial_events:
            if not allow_bookmarks:
                raise errors.invalid_error("ListOptions", "meta.k8s.io", "", [errors.forbidden(
                    "allowWatchBookmarks", "allowWatchBookmarks must be set to true when sendInitialEvents is true")])
            if rv is not None and rv > self.store.resource_version:
                raise listing.too_large_resource_version(rv, self.store.resource_version)
            initial = True
            rv = None
        else:
            initial = rv is None  # rv unset or "0": start with the current state as ADDED events
        try:
            watcher = self.store.watch(rt.key, ns, from_rv=rv, initial=initial)
        except StoreGone as e:
            raise errors.gone(f"too old resource version: {e.requested} ({e.oldest})") from None
        start_rv = max(self.store.resource_version, rv or 0)
        return WatchStream(self, rt, watcher, pred, send_initial_events=send_initial_events,
                           allow_bookmarks=allow_bookmarks, initial_rv=start_rv)

    @functools.cached_property
    def watch_frames(self) -> listing.FrameCache:
        """Encoded watch events, shared by the HTTP watches on this API's store."""
        return listing.FrameCache()


# Metadata only the server writes: an update or finalize takes it from the stored object.
_METADATA_SERVER_OWNED = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def _copy_fields(source: dict[str, Any], target: dict[str, Any], fields: tuple[str, ...]) -> None:
    """Make `target` hold exactly what `source` holds for each of `fields` (absent stays absent)."""
    for f in fields:
        if f in source:
            target[f] = source[f]
        else:
            target.pop(f, None)


def _place_at_url(rt: ResourceType, md: dict[str, Any], ns: str, name: str) -> None:
    """The body of a PUT names the object the URL names (400 otherwise); fill in what it omits."""
    if md.get("name") and md["name"] != name:
        raise errors.bad_request(f"the name of the object ({md['name']}) does not match the name on the URL ({name})")
    md["name"] = name
    if rt.namespaced:
        if md.get("namespace") and md["namespace"] != ns:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request")
        md["namespace"] = ns


def _no_finalizers_added_while_deleting(rt: ResourceType, md: dict[str, Any], omd: dict[str, Any]) -> None:
    """A terminating object may only lose finalizers, not gain new ones (422 otherwise)."""
    if not omd.get("deletionTimestamp"):
        return
    added = set(md.get("finalizers") or []) - set(omd.get("finalizers") or [])
    if added:
        raise errors.invalid_error(rt.kind, rt.group, md.get("name", ""), [errors.forbidden(
            "metadata.finalizers",
            f"no new finalizers can be added if the object is being deleted, found new finalizers "
            f"{sorted(added)!r}".replace("'", '"'))])


def _check_delete_preconditions(rt: ResourceType, name: str, md: dict[str, Any], preconditions: dict) -> None:
    """DeleteOptions.preconditions: the uid and resourceVersion the caller expects (409 otherwise)."""
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != md.get("uid"):
        raise errors.conflict(rt.plural, rt.group, name,
                              f"Precondition failed: UID in precondition: {uid}, UID in object meta: {md.get('uid')}")
    if rv and rv != md.get("resourceVersion"):
        raise errors.conflict(rt.plural, rt.group, name,
                              f"Precondition failed: ResourceVersion in precondition: {rv}, "
                              f"ResourceVersion in object meta: {md.get('resourceVersion')}")


def _finalizers_for_propagation(rt: ResourceType, md: dict[str, Any], propagation: str | None) -> Finalizers:
    """The finalizers a delete leaves on the object: Foreground adds `foregroundDeletion`, Orphan
    adds `orphan` (each replacing the other); an explicit Background drops a pending intent of
    either kind unless the object is already terminating. No policy: the kind's default."""
    if propagation not in (None, "Background", "Foreground", "Orphan"):
        raise errors.invalid_error("DeleteOptions", "", "", [errors.not_supported(
            "propagationPolicy", propagation, ["Foreground", "Background", "Orphan", "nil"])])
    if propagation is None:
        propagation = getattr(rt.strategy, "default_propagation", "Background")
    finalizers = list(md.get("finalizers") or [])
    if propagation == "Foreground" and FINALIZER_FOREGROUND not in finalizers:
        return [f for f in finalizers if f != FINALIZER_ORPHAN] + [FINALIZER_FOREGROUND]
    if propagation == "Orphan" and FINALIZER_ORPHAN not in finalizers:
        return [f for f in finalizers if f != FINALIZER_FOREGROUND] + [FINALIZER_ORPHAN]
    if propagation == "Background" and not md.get("deletionTimestamp"):
        return [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
    return finalizers


def _binding_copy(pod: Obj) -> Obj:
    """The next version of a stored pod for a binding: new dicts for what a binding writes
    (metadata, spec, status and its conditions); the rest is shared with the stored object, which
    nobody changes in place (a full deep copy of the pod cost a serialization round trip per bind)."""
    new = dict(pod)
    new["metadata"] = dict(pod["metadata"])
    new["spec"] = dict(pod["spec"])
    status = new["status"] = dict(pod.get("status") or {})
    status["conditions"] = [dict(c) for c in status.get("conditions") or []]
    return new
