"""Label selectors (`metav1.LabelSelector`): validation, matching against labels, and the
string forms kubectl prints (`format_label_selector`, `format_labels`)."""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, forbidden, invalid, required
from ..machinery.names import label_value_errors, qualified_name_errors, validate_labels
from .common import _dict, _list


def validate_label_name(key: Any, path: str) -> list[FieldError]:
    if not isinstance(key, str):
        return [invalid(path, key, "must be a string")]
    return [invalid(path, key, m) for m in qualified_name_errors(key)]


def validate_label_selector(sel: Any, path: str, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """apimachinery `ValidateLabelSelector` (matchLabels + matchExpressions)."""
    errs: list[FieldError] = []
    if sel is None:
        return errs
    if not isinstance(sel, dict):
        return [invalid(path, sel, "must be an object")]
    errs += validate_labels(sel.get("matchLabels"), f"{path}.matchLabels")
    for i, req in enumerate(_list(sel.get("matchExpressions"))):
        rp = f"{path}.matchExpressions[{i}]"
        req = _dict(req)
        op = req.get("operator")
        values = _list(req.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(required(f"{rp}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(f"{rp}.values",
                                      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(invalid(f"{rp}.operator", op or "", "not a valid selector operator"))
        errs += validate_label_name(req.get("key", ""), f"{rp}.key")
        if not allow_invalid_values:
            for j, v in enumerate(values):
                for m in label_value_errors(v if isinstance(v, str) else str(v)):
                    errs.append(invalid(f"{rp}.values[{j}]", v, m))
    return errs


def label_selector_matches(sel: Any, labels: dict | None) -> bool:
    """`metav1.LabelSelectorAsSelector(sel).Matches(labels)`: a nil selector matches nothing, `{}`
    matches everything."""
    if sel is None:
        return False
    labels = labels or {}
    for k, v in _dict(sel.get("matchLabels")).items():
        if labels.get(k) != v:
            return False
    for req in _list(sel.get("matchExpressions")):
        req = _dict(req)
        k, op, values = req.get("key"), req.get("operator"), _list(req.get("values"))
        if op == "In":
            if k not in labels or labels[k] not in values:
                return False
        elif op == "NotIn":
            if k in labels and labels[k] in values:
                return False
        elif op == "Exists":
            if k not in labels:
                return False
        elif op == "DoesNotExist":
            if k in labels:
                return False
        else:
            return False
    return True


def label_selector_string(sel: Any) -> str:
    """`LabelSelectorAsSelector(sel).String()`: requirements sorted by key, "" when empty or nil."""
    if not isinstance(sel, dict):
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in _dict(sel.get("matchLabels")).items():
        reqs.append((k, f"{k}={v}"))
    for req in _list(sel.get("matchExpressions")):
        req = _dict(req)
        k, op = req.get("key", ""), req.get("operator")
        vals = ",".join(sorted(str(v) for v in _list(req.get("values"))))
        if op == "In":
            reqs.append((k, f"{k} in ({vals})"))
        elif op == "NotIn":
            reqs.append((k, f"{k} notin ({vals})"))
        elif op == "Exists":
            reqs.append((k, k))
        elif op == "DoesNotExist":
            reqs.append((k, f"!{k}"))
    reqs.sort(key=lambda r: r[0])
    return ",".join(r[1] for r in reqs)


def format_label_selector(sel: Any) -> str:
    """`metav1.FormatLabelSelector`: `<none>` for an empty selector."""
    s = label_selector_string(sel)
    return s if s else "<none>"


def format_labels(labels: dict | None) -> str:
    """`labels.FormatLabels`: `k=v,...` sorted by key, `<none>` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))
