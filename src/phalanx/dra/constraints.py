"""The constraints of a claim while the allocator searches: `matchAttribute` (every chosen device
has the same value) and `distinctAttribute` (every chosen device a different one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from .devices import Device, attribute_match_key

if TYPE_CHECKING:
    from .plans import Request


class MatchAttribute:
    __slots__ = ("requests", "attribute", "value", "count")

    def __init__(self, requests: Iterable[str], attribute: str):
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.value: Any = None
        self.count = 0

    def applies(self, req: Request) -> bool:
        if not self.requests:
            return True
        return req.base in self.requests or (bool(req.sub) and req.name in self.requests)

    def add(self, req: Request, device: Device) -> bool:
        attr = device.attribute(self.attribute)
        if attr is None:
            return False
        key = attribute_match_key(attr)
        if self.count == 0:
            self.value = key
            self.count = 1
            return True
        if key is None or key != self.value:
            return False
        self.count += 1
        return True

    def remove(self, req: Request, device: Device) -> None:
        self.count -= 1

    def describe(self) -> str:
        return f"matchAttribute {self.attribute}"


class DistinctAttribute:
    __slots__ = ("requests", "attribute", "values")

    def __init__(self, requests: Iterable[str], attribute: str):
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.values: dict[Any, int] = {}

    def applies(self, req: Request) -> bool:
        if not self.requests:
            return True
        return req.base in self.requests or (bool(req.sub) and req.name in self.requests)

    def add(self, req: Request, device: Device) -> bool:
        attr = device.attribute(self.attribute)
        key = attribute_match_key(attr) if attr is not None else None
        if key is None or key in self.values:
            return False
        self.values[key] = 1
        return True

    def remove(self, req: Request, device: Device) -> None:
        attr = device.attribute(self.attribute)
        self.values.pop(attribute_match_key(attr) if attr is not None else None, None)

    def describe(self) -> str:
        return f"distinctAttribute {self.attribute}"
