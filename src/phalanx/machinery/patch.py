"""PATCH bodies as kube-apiserver applies them: JSON merge patch, JSON patch, strategic merge patch.

Three content types reach a PATCH handler (server-side apply is handled elsewhere):

    application/merge-patch+json           json_merge_patch(original, patch)      RFC 7386
    application/json-patch+json            json_patch(original, operations)       RFC 6902
    application/strategic-merge-patch+json strategic_merge_patch(original, patch, meta)
                                           (see `phalanx.machinery.strategic`)

`apply_patch(original, content_type, body, meta)` decodes a raw body and dispatches on the
content type; anything else is a 415.

All functions are pure: inputs are never mutated and a new top-level object is returned. To stay
fast they do not deep-copy: containers are rebuilt only along the paths a patch touches, and
untouched subtrees of `original` (and values taken from the patch) are shared with the result.
Treat the result as read-only where it may share with an input, or copy before mutating it.

Errors are `StatusError`s shaped the way kube-apiserver reports them:

- a body that does not decode into the expected shape is 400 BadRequest
  (`error decoding patch: json: cannot unmarshal ...`), as with `fieldValidation=Strict`, which
  kubectl always sends;
- a JSON patch operation that cannot be applied (failed `test`, missing path, bad index) is
  422 Invalid with upstream's generic message `the server rejected our request due to an error in
  our request` and empty details; the specific reason (the words of the Go json-patch library
  kube-apiserver uses) is kept on the exception's `__cause__` for logs and tests;
- more than 10000 operations is 413.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import orjson

from phalanx.machinery import errors
from phalanx.machinery.errors import StatusError
from phalanx.machinery.patchmeta import PatchMeta

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

PATCH_CONTENT_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)

MAX_JSON_PATCH_OPERATIONS = 10000

REJECTED_MESSAGE = "the server rejected our request due to an error in our request"


class PatchApplyError(Exception):
    """Why a patch could not be applied, in upstream's words (kept as `__cause__` of the 422)."""


def patch_rejected(reason: str) -> StatusError:
    """The 422 kube-apiserver answers for a patch it cannot apply (`NewGenericServerResponse`).

    Upstream hides the reason from the client; here it rides along as the error's `__cause__`
    (a `PatchApplyError`), for logs and tests.
    """
    err = StatusError(422, "Invalid", REJECTED_MESSAGE, {})
    err.__cause__ = PatchApplyError(reason)
    return err


# -- JSON value helpers --------------------------------------------------------------------

def json_type_word(value: Any) -> str:
    """The word Go's encoding/json uses for a JSON value in `cannot unmarshal X into ...`."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


def json_equal(a: Any, b: Any) -> bool:
    """Structural JSON equality: `true` is not `1`, `1` is not `1.0`, key order is irrelevant."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not json_equal(v, b[k]):
                return False
        return True
    if ta is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    same: bool = a == b
    return same


def prune_nulls(value: Any) -> Any:
    """A copy of a patch value with `null` members removed from every object, at any depth.

    Nulls that are array elements stay (they are values, not deletions). This is what the Go
    json-patch library kube-apiserver uses does to a value that is added rather than merged.
    """
    if isinstance(value, dict):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value


def merge_patch_value(original: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch(original, patch) on any JSON values; `original` None means absent.

    Objects merge member by member, a `null` member deletes, everything else replaces. Values
    that are added (no object to merge into) have their nulls pruned.
    """
    if isinstance(patch, dict):
        if not isinstance(original, dict):
            return prune_nulls(patch)
        result = dict(original)
        for key, value in patch.items():
            if value is None:
                result.pop(key, None)
                continue
            current = result.get(key)
            if current is None:
                result[key] = prune_nulls(value)
            else:
                result[key] = merge_patch_value(current, value)
        return result
    if isinstance(original, dict):
        return patch
    return prune_nulls(patch)


# -- JSON merge patch ----------------------------------------------------------------------

def json_merge_patch(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply an RFC 7386 JSON merge patch (`application/merge-patch+json`) to an object.

    `{"metadata": {"labels": {"app": null, "tier": "x"}}}` deletes label `app` and sets `tier`;
    lists are replaced as a whole. A patch that is not a JSON object is a 400, as upstream.
    """
    if patch is None:
        raise errors.bad_request("Invalid JSON Patch")
    if not isinstance(patch, dict):
        raise errors.bad_request(
            f"error decoding patch: json: cannot unmarshal {json_type_word(patch)} into Go value "
            f"of type map[string]interface {{}}")
    merged: dict[str, Any] = merge_patch_value(original, patch)
    return merged


# -- JSON patch ----------------------------------------------------------------------------

_ATOI = re.compile(r"[+-]?[0-9]+\Z")
_POINTER_ESCAPE = re.compile(r"~[01]")


def _unescape(token: str) -> str:
    if "~" not in token:
        return token
    return _POINTER_ESCAPE.sub(lambda m: "/" if m.group(0) == "~1" else "~", token)


def _atoi(token: str) -> int | None:
    """Go's strconv.Atoi: optional sign, ASCII digits, nothing else."""
    if not _ATOI.match(token):
        return None
    value = int(token)
    if not -(1 << 63) <= value < (1 << 63):
        return None
    return value


class _OpError(Exception):
    """A JSON patch operation failed; `missing` marks upstream's ErrMissing cause."""

    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing


def _atoi_or_raise(key: str) -> int:
    idx = _atoi(key)
    if idx is None:
        raise _OpError(f'strconv.Atoi: parsing "{key}": invalid syntax')
    return idx


def _invalid_index(idx: int) -> _OpError:
    return _OpError(f"Unable to access invalid index: {idx}: invalid index referenced")


def _container_get(container: dict[str, Any] | list[Any], key: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise _OpError(f"unable to get nonexistent key: {key}: missing value", missing=True)
        return container[key]
    idx = _atoi_or_raise(key)
    n = len(container)
    if idx < 0:
        if idx < -n:
            raise _invalid_index(idx)
        idx += n
    if idx >= n:
        raise _invalid_index(idx)
    return container[idx]


def _container_set(container: dict[str, Any] | list[Any], key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    idx = _atoi_or_raise(key)
    n = len(container)
    if idx < 0:
        if idx < -n:
            raise _invalid_index(idx)
        idx += n
    container[idx] = value


def _container_add(container: dict[str, Any] | list[Any], key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    idx = _atoi(key)
    if idx is None:
        raise _OpError(f"value was not a proper array index: '{key}': "
                       f'strconv.Atoi: parsing "{key}": invalid syntax')
    size = len(container) + 1
    if idx >= size or idx < -size:
        raise _invalid_index(idx)
    if idx < 0:
        idx += size
    container.insert(idx, value)


def _container_remove(container: dict[str, Any] | list[Any], key: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise _OpError(f"Unable to remove nonexistent key: {key}: missing value", missing=True)
        return container.pop(key)
    idx = _atoi_or_raise(key)
    n = len(container)
    if idx >= n or idx < -n:
        raise _invalid_index(idx)
    if idx < 0:
        idx += n
    return container.pop(idx)


def _child(container: dict[str, Any] | list[Any], token: str) -> Any:
    """The container a pointer walks through next, or None when the path does not exist."""
    if isinstance(container, dict):
        nxt = container.get(token)
    else:
        try:
            nxt = _container_get(container, token)
        except _OpError:
            return None
    return nxt if isinstance(nxt, (dict, list)) else None


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


class _Document:
    """The document a JSON patch edits, copying containers on first write (never the input)."""

    def __init__(self, original: dict[str, Any]):
        self.root: dict[str, Any] = dict(original)
        self._owned: dict[int, Any] = {id(self.root): self.root}

    def _own(self, parent: dict[str, Any] | list[Any], token: str, child: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
        if id(child) in self._owned:
            return child
        copy = dict(child) if isinstance(child, dict) else list(child)
        self._owned[id(copy)] = copy
        _container_set(parent, token, copy)
        return copy

    def find(self, path: str | None, writable: bool) -> tuple[dict[str, Any] | list[Any] | None, str]:
        """Upstream's findObject: the parent container of `path` and the last reference token."""
        if path is None:
            return None, ""
        split = path.split("/")
        if len(split) < 2:
            return None, ""
        node: dict[str, Any] | list[Any] = self.root
        for raw in split[1:-1]:
            token = _unescape(raw)
            nxt = _child(node, token)
            if nxt is None:
                return None, ""
            if writable:
                nxt = self._own(node, token, nxt)
            node = nxt
        return node, _unescape(split[-1])


def _string_member(op: dict[str, Any], name: str) -> str | None:
    value = op.get(name)
    return value if isinstance(value, str) else None


def _apply_operation(doc: _Document, op: dict[str, Any] | None) -> None:
    op = op or {}
    name = op.get("op")
    kind = name if isinstance(name, str) else "unknown"
    apply = _OPERATIONS.get(kind)
    if apply is None:
        raise _OpError(f"Unexpected kind: {kind}")
    apply(doc, op, _string_member(op, "path"), op.get("value"))


def _op_add(doc: _Document, op: dict[str, Any], path: str | None, value: Any) -> None:
    if path is None:
        raise _OpError("add operation failed to decode path: missing value")
    con, key = doc.find(path, writable=True)
    if con is None:
        raise _OpError(f'add operation does not apply: doc is missing path: "{path}": missing value')
    try:
        _container_add(con, key, value)
    except _OpError as e:
        raise _OpError(f"error in add for path: '{path}': {e}") from None


def _op_remove(doc: _Document, op: dict[str, Any], path: str | None, value: Any) -> None:
    if path is None:
        raise _OpError("remove operation failed to decode path: missing value")
    con, key = doc.find(path, writable=True)
    if con is None:
        raise _OpError(f'remove operation does not apply: doc is missing path: "{path}": missing value')
    try:
        _container_remove(con, key)
    except _OpError as e:
        raise _OpError(f"error in remove for path: '{path}': {e}") from None


def _op_replace(doc: _Document, op: dict[str, Any], path: str | None, value: Any) -> None:
    if path is None:
        raise _OpError("replace operation failed to decode path: operation missing path field: missing value")
    con, key = doc.find(path, writable=True)
    if con is None:
        raise _OpError(f"replace operation does not apply: doc is missing path: {path}: missing value")
    try:
        _container_get(con, key)
    except _OpError:
        raise _OpError(f"replace operation does not apply: doc is missing key: {path}: missing value") from None
    _container_set(con, key, value)


def _op_move(doc: _Document, op: dict[str, Any], path: str | None, value: Any) -> None:
    source = _string_member(op, "from")
    if source is None:
        raise _OpError("move operation failed to decode from: operation, missing from field: missing value")
    con, key = doc.find(source, writable=True)
    if con is None:
        raise _OpError(f"move operation does not apply: doc is missing from path: {source}: missing value")
    try:
        moved = _container_get(con, key)
        _container_remove(con, key)
    except _OpError as e:
        raise _OpError(f"error in move for path: '{key}': {e}") from None
    if path is None:
        raise _OpError("move operation failed to decode path: operation missing path field: missing value")
    con, key = doc.find(path, writable=True)
    if con is None:
        raise _OpError(f"move operation does not apply: doc is missing destination path: {path}: missing value")
    try:
        _container_add(con, key, moved)
    except _OpError as e:
        raise _OpError(f"error in move for path: '{path}': {e}") from None


def _op_copy(doc: _Document, op: dict[str, Any], path: str | None, value: Any) -> None:
    source = _string_member(op, "from")
    if source is None:
        raise _OpError("copy operation failed to decode from: operation, missing from field: missing value")
    con, key = doc.find(source, writable=False)
    if con is None:
        raise _OpError(f"copy operation does not apply: doc is missing from path: {source}: missing value")
    try:
        copied = _container_get(con, key)
    except _OpError as e:
        raise _OpError(f"error in copy for from: '{source}': {e}") from None
    if path is None:
        raise _OpError("copy operation failed to decode path: missing value")
    con, key = doc.find(path, writable=True)
    if con is None:
        raise _OpError(f"copy operation does not apply: doc is missing destination path: {path}: missing value")
    try:
        _container_add(con, key, _deep_copy(copied))
    except _OpError as e:
        raise _OpError(f"error while adding value during copy: {e}") from None


def _op_test(doc: _Document, op: dict[str, Any], path: str | None, value: Any) -> None:
    if path is None:
        raise _OpError("test operation failed to decode path: operation missing path field: missing value")
    con, key = doc.find(path, writable=False)
    if con is None:
        raise _OpError(f"test operation does not apply: is missing path: {path}: missing value")
    try:
        current = _container_get(con, key)
    except _OpError as e:
        if not e.missing:
            raise _OpError(f"error in test for path: '{path}': {e}") from None
        current = None
    if current is None:
        if value is None:
            return
    elif value is not None and json_equal(current, value):
        return
    raise _OpError(f"testing value {path} failed: test failed")


# RFC 6902 operations by their `op`, with upstream's (evanphx/json-patch) error messages.
_OPERATIONS: dict[str, Callable[[_Document, dict[str, Any], Any, Any], None]] = {
    "add": _op_add, "remove": _op_remove, "replace": _op_replace, "move": _op_move, "copy": _op_copy,
    "test": _op_test,
}


_OP_STRING_FIELDS = ("op", "path", "from")


def _check_operations(operations: Any) -> list[Any]:
    """Reject what decoding into upstream's `[]jsonPatchOp` rejects (400 BadRequest)."""
    if operations is None:
        return []
    if not isinstance(operations, list):
        raise errors.bad_request(
            f"error decoding patch: json: cannot unmarshal {json_type_word(operations)} into Go "
            f"value of type []handlers.jsonPatchOp")
    for op in operations:
        if op is None:
            continue
        if not isinstance(op, dict):
            raise errors.bad_request(
                f"error decoding patch: json: cannot unmarshal {json_type_word(op)} into Go value "
                f"of type handlers.jsonPatchOp")
        for name in _OP_STRING_FIELDS:
            member = op.get(name)
            if member is not None and not isinstance(member, str):
                raise errors.bad_request(
                    f"error decoding patch: json: cannot unmarshal {json_type_word(member)} into Go "
                    f"struct field jsonPatchOp.{name} of type string")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise errors.too_large(
            f"Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}")
    return operations


def json_patch(original: dict[str, Any], operations: list[Any]) -> dict[str, Any]:
    """Apply an RFC 6902 JSON patch (`application/json-patch+json`) to an object.

    Operations run in order (`add`, `remove`, `replace`, `move`, `copy`, `test`); JSON pointers
    use `~0`/`~1` escapes, `-` appends to an array, and negative array indices count from the end
    as in the library kube-apiserver uses. The whole patch fails if one operation does (422).
    """
    ops = _check_operations(operations)
    doc = _Document(original)
    for op in ops:
        try:
            _apply_operation(doc, op)
        except _OpError as e:
            reason = str(e)
            break
    else:
        return doc.root
    raise patch_rejected(reason)


# -- dispatch ------------------------------------------------------------------------------

def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _decode(body: bytes | str | dict[str, Any] | list[Any] | None, prefix: str) -> Any:
    if isinstance(body, (bytes, bytearray, memoryview, str)):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"{prefix}{e}") from None
    return body


def apply_patch(original: dict[str, Any], patch_type: str, body: bytes | str | dict[str, Any] | list[Any] | None,
                meta: PatchMeta | None = None) -> dict[str, Any]:
    """Apply a PATCH body of content type `patch_type` to `original`.

    `body` is the raw request body (bytes) or an already decoded JSON value. `meta` is the
    `PatchMeta` of the object's schema, used by strategic merge patch only. Content types other
    than the three patch types (including server-side apply's) are a 415.
    """
    media = _media_type(patch_type or "")
    if media == JSON_PATCH:
        return json_patch(original, _decode(body, "error decoding patch: "))
    if media == MERGE_PATCH:
        return json_merge_patch(original, _decode(body, "error decoding patch: "))
    if media == STRATEGIC_MERGE_PATCH:
        from phalanx.machinery.strategic import strategic_merge_patch

        return strategic_merge_patch(original, _decode(body, ""), meta)
    raise errors.unsupported_media_type(patch_type)
