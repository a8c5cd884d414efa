"""List and watch options as upstream reads them, and paginated lists served from one snapshot.

Query parameters (`limit`, `timeoutSeconds`) are Go int64s: anything `strconv.ParseInt` rejects
(`nan`, `inf`, `1e400`, `1.5`) is 400 BadRequest with Go's message; a `limit` of zero or less
means no paging. `resourceVersion` must be an unsigned integer (400 `invalid resource version`).
`resourceVersionMatch` is checked as upstream's ListOptions validation does (422 Invalid).

Which state a list reads:
- `continue`: the first page's resourceVersion, carried in the token. Every page of one list is
  the same snapshot and carries the same resourceVersion. If that version has left the watch
  history, 410 Expired (`inconsistent continue`) with a fresh token that continues at the
  current state (upstream's answer for a compacted revision; the token's rv is -1);
- `resourceVersionMatch=Exact`, or a `limit` with a resourceVersion and no match (upstream's
  legacy exact read): that resourceVersion (410 `too old` past the history);
- otherwise the current state; a resourceVersion ahead of the store is 504 Timeout `Too large
  resource version` (the HTTP server first waits a bounded time for the store to catch up).

`FrameCache` shares encoded watch events among the watches that send them.
"""

from __future__ import annotations

import base64
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Hashable

import orjson

from ..machinery import errors
from ..machinery.errors import StatusError
from ..machinery.interning import trimmed
from ..store import Store, StoreGone, StoreTooNew
from ..store.snapshot import Snapshot

Obj = dict[str, Any]

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"
# How long a read ahead of the store waits before 504 (upstream's watch cache blocks 3 s).
TOO_LARGE_RV_WAIT_SECONDS = 3.0
TOO_LARGE_RV_RETRY_SECONDS = 1

_INT64 = re.compile(r"[+-]?[0-9]+")
_UINT64 = re.compile(r"[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list.")


def parse_int64(value: str) -> int:
    """A query parameter as Go's `strconv.ParseInt(value, 10, 64)` reads it; 400 otherwise."""
    if not _INT64.fullmatch(value):
        raise errors.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    n = int(value)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return n


def parse_resource_version(value: str | None) -> int:
    """A resourceVersion parameter: "" and "0" are 0; anything but an unsigned integer is 400."""
    if not value or value == "0":
        return 0
    problem = None
    if not _UINT64.fullmatch(value):
        problem = f'strconv.ParseUint: parsing "{value}": invalid syntax'
    elif int(value) >= 1 << 64:
        problem = f'strconv.ParseUint: parsing "{value}": value out of range'
    if problem:
        raise errors.bad_request(f'invalid resource version: resourceVersion: Invalid value: "{value}": {problem}')
    return int(value)


def too_large_resource_version(requested: int, current: int) -> StatusError:
    """504 Timeout, as upstream answers a read at a resourceVersion it has not reached."""
    return StatusError(504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
                       {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": TOO_LARGE_RV_RETRY_SECONDS})


class ExpiredContinue(StatusError):
    """410 Expired whose Status carries a continue token for the rest of the list."""

    def __init__(self, message: str, continue_token: str):
        super().__init__(410, "Expired", message)
        self.continue_token = continue_token

    def status(self) -> dict:
        body = super().status()
        body["metadata"] = {"continue": self.continue_token}
        return body


# -- continue tokens ---------------------------------------------------------------------------
def encode_continue(after: tuple[str, str], rv: int) -> str:
    raw = orjson.dumps({"ns": after[0], "name": after[1], "rv": rv})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[tuple[str, str], int]:
    """(key to continue after, resourceVersion: > 0 a snapshot, -1 the current state)."""
    try:
        tok = orjson.loads(base64.urlsafe_b64decode(token.encode() + b"=="))
        after = (tok["ns"], tok["name"])
        rv = tok.get("rv", -1)
        if not all(isinstance(x, str) for x in after) or not isinstance(rv, int) or isinstance(rv, bool):
            raise ValueError(token)
    except Exception:
        raise errors.bad_request("continue key is not valid: invalid continue token") from None
    if rv == 0 or rv < -1:
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                                 "(version meta.k8s.io/v1)")
    return after, rv


# -- options -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ListOptions:
    limit: int = 0
    after: tuple[str, str] | None = None
    at_rv: int | None = None  # a snapshot to read; None: the current state
    min_rv: int = 0  # NotOlderThan: the current state must have reached this
    continuing: bool = False

    @classmethod
    def parse(cls, *, limit: int = 0, continue_token: str | None = None, resource_version: str | None = None,
              resource_version_match: str | None = None) -> "ListOptions":
        rv_text = resource_version or ""
        match = resource_version_match or ""
        _validate_match(rv_text, match, bool(continue_token))
        if continue_token:
            if rv_text not in ("", "0"):
                raise errors.bad_request("specifying resource version is not allowed when using continue")
            after, token_rv = decode_continue(continue_token)
            return cls(limit=limit, after=after, at_rv=token_rv if token_rv > 0 else None, continuing=True)
        rv = parse_resource_version(rv_text)
        if rv and (match == EXACT or (not match and limit > 0)):
            return cls(limit=limit, at_rv=rv)
        return cls(limit=limit, min_rv=rv)


def _validate_match(rv_text: str, match: str, continuing: bool) -> None:
    if not match:
        return
    problems = []
    if not rv_text:
        problems.append(errors.forbidden("resourceVersionMatch",
                                         "resourceVersionMatch is forbidden unless resourceVersion is provided"))
    if continuing:
        problems.append(errors.forbidden("resourceVersionMatch",
                                         "resourceVersionMatch is forbidden when continue is provided"))
    if match not in (EXACT, NOT_OLDER_THAN):
        problems.append(errors.not_supported("resourceVersionMatch", match, [EXACT, NOT_OLDER_THAN, ""]))
    if match == EXACT and rv_text == "0":
        problems.append(errors.forbidden("resourceVersionMatch",
                                         'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if problems:
        raise errors.invalid_error("ListOptions", "meta.k8s.io", "", problems)


# -- the list ----------------------------------------------------------------------------------
def list_page(store: Store, key: str, namespace: str | None, pred: Callable[[Obj], bool] | None,
              opts: ListOptions) -> tuple[list[Obj], dict[str, Any]]:
    """One page: (items, list metadata with resourceVersion, continue, remainingItemCount)."""
    if opts.min_rv > store.resource_version:
        raise too_large_resource_version(opts.min_rv, store.resource_version)
    try:
        with store.snapshot(key, namespace, opts.at_rv) as snap:
            return _read_page(snap, pred, opts)
    except StoreTooNew as e:
        raise too_large_resource_version(e.requested, e.current) from None
    except StoreGone:
        if opts.continuing and opts.after is not None:
            raise ExpiredContinue(INCONSISTENT_CONTINUE, encode_continue(opts.after, -1)) from None
        raise errors.gone(LIST_TOO_OLD) from None


def _read_page(snap: Snapshot, pred: Callable[[Obj], bool] | None,
               opts: ListOptions) -> tuple[list[Obj], dict[str, Any]]:
    limit = opts.limit
    out: list[Obj] = []
    more = False
    for obj in snap.items_after(opts.after):
        if pred is not None and not pred(obj):
            continue
        if 0 < limit <= len(out):
            more = True
            break
        out.append(obj)
    meta: dict[str, Any] = {"resourceVersion": str(snap.rv)}
    if more:
        last = out[-1]["metadata"]
        last_key = (last.get("namespace", ""), last["name"])
        meta["continue"] = encode_continue(last_key, snap.rv)
        if pred is None:
            meta["remainingItemCount"] = snap.count_after(last_key)
    return out, meta


# -- shared watch frames -----------------------------------------------------------------------
class FrameCache:
    """Encoded watch events, shared by every watch that sends the same event in the same form.

    A frame is keyed by (event type, the object's resourceVersion, form, apiVersion): a
    resourceVersion names exactly one object state in one store, so two watches sending it in the
    same version send the same bytes. Only
    the recent frames are kept (watches send an event at about the same time), bounded by count
    and bytes."""

    def __init__(self, max_frames: int = 4096, max_bytes: int = 4 * 1024 * 1024):
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self._frames: OrderedDict[Hashable, bytes] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def frame(self, typ: str, obj: Obj, form: Hashable, encode: Callable[[], bytes]) -> bytes:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if not rv or typ == "BOOKMARK":
            return encode()
        key = (typ, rv, form, obj.get("apiVersion"))
        data = self._frames.get(key)
        if data is not None:
            self.hits += 1
            return data
        self.misses += 1
        data = self._frames[key] = trimmed(encode())
        self._bytes += len(data)
        while self._frames and (len(self._frames) > self.max_frames or self._bytes > self.max_bytes):
            _, dropped = self._frames.popitem(last=False)
            self._bytes -= len(dropped)
        return data


def json_frame(typ: str, obj: Obj) -> bytes:
    return orjson.dumps({"type": typ, "object": obj})
