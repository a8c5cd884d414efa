"""Plugin name -> factory. A factory builds a plugin from its (defaulted) args and the Handle.

    registry = in_tree_registry()                 # the plugins phalanx ships
    registry.register("GangScheduling", new_gang_scheduling)   # other packages add theirs
    plugin = registry["NodeResourcesFit"](args, handle)

Factories have the signature `factory(args: dict | None, handle: Handle) -> Plugin`. Registering a
name twice is an error (upstream: "a plugin named X already exists").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional

if TYPE_CHECKING:
    from .interface import Handle, Plugin

PluginFactory = Callable[[Optional[Mapping[str, Any]], "Handle"], "Plugin"]


class Registry:
    def __init__(self, factories: Optional[Mapping[str, PluginFactory]] = None):
        self._factories: dict[str, PluginFactory] = {}
        for name, f in (factories or {}).items():
            self.register(name, f)

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self._factories:
            raise ValueError(f"a plugin named {name} already exists")
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        if name not in self._factories:
            raise ValueError(f"no plugin named {name} exists")
        del self._factories[name]

    def merge(self, other: "Registry | Mapping[str, PluginFactory]") -> "Registry":
        items = other._factories.items() if isinstance(other, Registry) else other.items()
        for name, f in items:
            self.register(name, f)
        return self

    def __getitem__(self, name: str) -> PluginFactory:
        return self._factories[name]

    def get(self, name: str) -> Optional[PluginFactory]:
        return self._factories.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def copy(self) -> "Registry":
        return Registry(self._factories)


def in_tree_registry() -> Registry:
    """The plugins implemented in `phalanx.scheduler.plugins`."""
    from phalanx.scheduler.plugins import in_tree_factories

    return Registry(in_tree_factories())
