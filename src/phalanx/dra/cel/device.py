"""A device as the `device` variable sees it (`CELDevice`): attributes and capacity by domain,
converted once, with a CEL context per set of fields a selector reads."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping, Optional

import cel as _celrs  # PyPI common-expression-language (Rust `cel` crate via PyO3)

from ...machinery.quantity import parse_quantity
from .. import semver as _semver
from .compiler import SELECTORS
from .environment import CELFeatures
from .library import BASE_FUNCTIONS, LIST_FUNCTIONS
from .values import encode_quantity, encode_semver

def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """`domain/id` -> (domain, id); a bare id belongs to `default_domain` (the driver)."""
    sep = name.find("/")
    if sep == -1:
        return default_domain, name
    return name[:sep], name[sep + 1:]


def attribute_cel_value(attr: Mapping[str, Any], list_type_attributes: bool) -> Any:
    """The CEL value of one DeviceAttribute; ValueError (upstream's text) when unsupported."""
    if list_type_attributes:
        for key in ("ints", "bools", "strings"):
            values = attr.get(key)
            if values is not None:
                return list(values)
        versions = attr.get("versions")
        if versions is not None:
            try:
                return [encode_semver(_semver.parse_semver(v)) for v in versions]
            except ValueError as e:
                raise ValueError(f"parse semantic version: {e}") from None
    for key in ("int", "bool", "string"):
        value = attr.get(key)
        if value is not None:
            return value
    version = attr.get("version")
    if version is not None:
        try:
            return encode_semver(_semver.parse_semver(version))
        except ValueError as e:
            raise ValueError(f"parse semantic version: {e}") from None
    raise ValueError("unsupported attribute value")


class CELDevice:
    """A device converted for CEL once; contexts are built per set of `device` fields used."""

    __slots__ = ("driver", "features", "conversion_error", "fields", "_contexts")

    def __init__(self, driver: str, device: Mapping[str, Any], features: CELFeatures = CELFeatures(),
                 parsed_capacity: Optional[Mapping[str, Fraction]] = None):
        self.driver = driver
        self.features = features
        self.conversion_error: Optional[str] = None
        attributes: dict[str, dict[str, Any]] = {}
        for name, attr in (device.get("attributes") or {}).items():
            try:
                value = attribute_cel_value(attr or {}, features.list_type_attributes)
            except ValueError as e:
                if self.conversion_error is None:
                    self.conversion_error = f"attribute {name}: {e}"
                continue
            domain, ident = split_qualified_name(name, driver)
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        if parsed_capacity is not None:  # fully qualified names -> exact values (devices.Device)
            for name, value in parsed_capacity.items():
                domain, ident = split_qualified_name(name, driver)
                capacity.setdefault(domain, {})[ident] = encode_quantity(value)
        else:
            for name, cap in (device.get("capacity") or {}).items():
                domain, ident = split_qualified_name(name, driver)
                try:
                    value = parse_quantity((cap or {}).get("value", "0"))
                except ValueError:
                    value = Fraction(0)
                capacity.setdefault(domain, {})[ident] = encode_quantity(value)
        fields: dict[str, Any] = {"driver": driver, "attributes": attributes, "capacity": capacity}
        if features.consumable_capacity:
            fields["allowMultipleAllocations"] = bool(device.get("allowMultipleAllocations") or False)
        self.fields = fields  # the `device` variable, as the Python evaluator reads it
        self._contexts: dict[Optional[frozenset[str]], Any] = {}

    def context(self, fields: Optional[frozenset[str]] = None) -> Any:
        ctx = self._contexts.get(fields)
        if ctx is None:
            if fields is None:
                variables = self.fields
            else:
                variables = {k: v for k, v in self.fields.items() if k in fields}
            functions = LIST_FUNCTIONS if self.features.list_type_attributes else BASE_FUNCTIONS
            ctx = _celrs.Context(variables={"device": variables}, functions=functions)
            self._contexts[fields] = ctx
        return ctx


def evaluate(expression: str, device: Mapping[str, Any], driver: str,
             features: CELFeatures = CELFeatures()) -> bool:
    """One-shot convenience for tests and tools: compile (cached) and evaluate."""
    selector = SELECTORS.get(expression, features)
    return selector.matches(CELDevice(driver, device, features))
