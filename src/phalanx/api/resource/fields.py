"""Field validators the DRA kinds share: reading loosely typed fields, upstream's validateSlice /
validateSet / validateMap, DNS labels and subdomains, driver, pool and qualified names, quantities,
raw extensions, UIDs and node selectors (core ValidateNodeSelector as DRA uses it)."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Callable

import orjson

from ...machinery import errors, quantity
from ...machinery.errors import FieldError
from ...machinery.meta import dict_at as field_dict, items_at as field_items, list_at as field_list  # noqa: F401
from ...machinery.names import (dns1123_label_errors, dns1123_subdomain_errors, is_c_identifier, qualified_name_errors,
                                regex_error)
from .constants import DEVICE_MAX_ID_LENGTH, DRIVER_NAME_MAX_LENGTH, POOL_NAME_MAX_LENGTH






_C_IDENT_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENT_MSG = regex_error("a valid C identifier must start with alphabetic character or '_', followed by a "
                            "string of alphanumeric characters or '_'", _C_IDENT_FMT, "my_name", "MY_NAME", "MyName")
# Go's regexp `$` is the end of the text; Python's also accepts a final newline, hence `\Z`.
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_ANY_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\Z")
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def parse_quantity(value: Any) -> Fraction | None:
    """A resource.Quantity string (or number) as an exact value; None when it is not a quantity."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return quantity.parse_quantity(value.strip() if isinstance(value, str) else value)
    except ValueError:
        return None


def _truncate_key(key: str, max_len: int) -> str:
    max_len = max(max_len, 16)
    if len(key) <= max_len:
        return key
    remaining = max_len - 3
    return key[:(remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]


def validate_slice(items: list, max_size: int, validate_item: Callable[[Any, str], list[FieldError]],
                    path: str) -> list[FieldError]:
    """`validateSlice`: at most max_size entries (checked first, short-circuits), each valid."""
    if max_size >= 0 and len(items) > max_size:
        return [errors.too_many(path, len(items), max_size)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += validate_item(item, f"{path}[{i}]")
    return errs


def validate_set(items: list, max_size: int, validate_item: Callable[[Any, str], list[FieldError]],
                  key: Callable[[Any], Any], path: str) -> list[FieldError]:
    """`validateSet`: like `validate_slice`, plus a Duplicate for each repeated key."""
    if max_size >= 0 and len(items) > max_size:
        return [errors.too_many(path, len(items), max_size)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += validate_item(item, f"{path}[{i}]")
    seen: set = set()
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            errs.append(errors.duplicate(f"{path}[{i}]", k))
        else:
            seen.add(k)
    return errs


def validate_map(m: Any, max_size: int, truncate_len: int, validate_key: Callable[[str, str], list[FieldError]],
                  validate_item: Callable[[Any, str], list[FieldError]], path: str) -> list[FieldError]:
    m = m if isinstance(m, dict) else {}
    if max_size >= 0 and len(m) > max_size:
        return [errors.too_many(path, len(m), max_size)]
    errs: list[FieldError] = []
    for k in sorted(m):
        errs += validate_key(k, path)
        errs += validate_item(m[k], f"{path}[{_truncate_key(k, truncate_len)}]")
    return errs


def validate_label(value: str, path: str) -> list[FieldError]:
    """core `ValidateDNS1123Label`: one Invalid per message."""
    return [errors.invalid(path, value, m) for m in dns1123_label_errors(value)]


def validate_subdomain(value: str, path: str) -> list[FieldError]:
    return [errors.invalid(path, value, m) for m in dns1123_subdomain_errors(value)]


def validate_label_name(value: str, path: str) -> list[FieldError]:
    """metav1 `ValidateLabelName` (a qualified name)."""
    if value == "":
        return [errors.invalid(path, value, "name part must be non-empty"),
                errors.invalid(path, value, "name part must consist of alphanumeric characters, '-', '_' or '.', "
                                            "and must start and end with an alphanumeric character (e.g. 'MyName',"
                                            "  or 'my.name',  or '123-abc', regex used for validation is "
                                            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]
    return [errors.invalid(path, value, m) for m in qualified_name_errors(value)]


def validate_driver_name(name: Any, path: str) -> list[FieldError]:
    """core `ValidateCSIDriverName`, used for every DRA driver name."""
    name = name if isinstance(name, str) else ""
    errs: list[FieldError] = []
    if not name:
        errs.append(errors.required(path, ""))
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        errs.append(errors.too_long(path, DRIVER_NAME_MAX_LENGTH))
    errs += [errors.invalid(path, name, m) for m in dns1123_subdomain_errors(name.lower())]
    return errs


def validate_pool_name(name: Any, path: str) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    if not name:
        return [errors.required(path, "")]
    errs: list[FieldError] = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        errs.append(errors.too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        errs += validate_subdomain(part, path)
    return errs


def _validate_c_identifier(ident: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        errs.append(errors.too_long(path, DEVICE_MAX_ID_LENGTH))
    if not is_c_identifier(ident):
        errs.append(errors.invalid(path, ident, _C_IDENT_MSG))
    return errs


def validate_qualified_name(name: str, path: str) -> list[FieldError]:
    """An attribute or capacity name: a C identifier, optionally `<driver-like domain>/`-prefixed."""
    parts = name.split("/")
    if len(parts) == 1:
        return _validate_c_identifier(parts[0], path)
    if len(parts) == 2:
        errs: list[FieldError] = []
        if not parts[0]:
            errs.append(errors.invalid(path, "", "the domain must not be empty"))
        else:
            errs += validate_driver_name(parts[0], path)
        if not parts[1]:
            errs.append(errors.invalid(path, "", "the name must not be empty"))
        else:
            errs += _validate_c_identifier(parts[1], path)
        return errs
    return [errors.invalid(path, name, "must not contain more than one slash")]


def validate_fully_qualified_name(name: str, path: str) -> list[FieldError]:
    errs = validate_qualified_name(name, path)
    if "/" not in name:
        errs.append(errors.invalid(path, name, "a fully qualified name must be a domain and a name separated by a "
                                               "slash"))
    return errs


def validate_raw_extension(raw: Any, path: str, stored: bool, max_len: int) -> list[FieldError]:
    if raw is None:
        return [errors.required(path, "")]
    encoded = orjson.dumps(raw)
    if not stored and len(encoded) > max_len:
        return [errors.too_long(path, max_len)]
    if not isinstance(raw, dict):
        return [errors.invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def validate_uid(uid: Any, path: str) -> list[FieldError]:
    uid = uid if isinstance(uid, str) else ""
    if not _ANY_UUID_RE.match(uid):
        return [errors.invalid(path, uid, "error validating uid: invalid UUID format")]
    if not _UUID_RE.match(uid):
        return [errors.invalid(path, uid, "uid must be in RFC 4122 normalized form, "
                                          "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                                          "characters")]
    return []


# -- node selectors (core ValidateNodeSelector, as DRA uses it) -------------------------------------

_NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def validate_node_selector(ns: Any, path: str) -> list[FieldError]:
    terms = field_list(ns, "nodeSelectorTerms")
    tpath = f"{path}.nodeSelectorTerms"
    if not terms:
        return [errors.required(tpath, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        p = f"{tpath}[{i}]"
        for j, req in enumerate(field_items(term, "matchExpressions")):
            rp = f"{p}.matchExpressions[{j}]"
            op, values = req.get("operator"), field_list(req, "values")
            if op in ("In", "NotIn"):
                if not values:
                    errs.append(errors.required(f"{rp}.values",
                                                "must be specified when `operator` is 'In' or 'NotIn'"))
            elif op in ("Exists", "DoesNotExist"):
                if values:
                    errs.append(errors.forbidden(f"{rp}.values",
                                                 "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
            elif op in ("Gt", "Lt"):
                if len(values) != 1:
                    errs.append(errors.required(f"{rp}.values",
                                                "must be specified single value when `operator` is 'Lt' or 'Gt'"))
            else:
                errs.append(errors.invalid(f"{rp}.operator", op, "not a valid selector operator"))
            errs += validate_label_name(req.get("key") or "", f"{rp}.key")
        for j, req in enumerate(field_items(term, "matchFields")):
            rp = f"{p}.matchFields[{j}]"
            op, values = req.get("operator"), field_list(req, "values")
            if op in ("In", "NotIn"):
                if len(values) != 1:
                    errs.append(errors.required(f"{rp}.values", "must be only one value when `operator` is 'In' "
                                                                "or 'NotIn' for node field selector"))
            else:
                errs.append(errors.invalid(f"{rp}.operator", op, "not a valid selector operator"))
            if req.get("key") != "metadata.name":
                errs.append(errors.not_supported(f"{rp}.key", req.get("key"), ["metadata.name"]))
    return errs

