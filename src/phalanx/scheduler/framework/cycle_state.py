"""Per-cycle scratch space shared by the plugins that run for one pod (upstream `CycleState`).

Plugins write what they computed once (PreFilter, PreScore) and read it per node:

    state.write("PreFilterNodeResourcesFit", requests)
    requests = state.read("PreFilterNodeResourcesFit")     # raises NotFoundError when absent

`clone()` copies the state for what-if evaluation (preemption dry runs, nominated pods): values
with a `clone()` method are cloned, others are shared (they must then be immutable).
`skip_filter_plugins` / `skip_score_plugins` record the plugins whose PreFilter / PreScore
returned Skip, so the framework does not run their Filter / Score in this cycle.
"""

from __future__ import annotations

from typing import Any, Optional


class NotFoundError(KeyError):
    """The key was never written in this cycle (upstream ErrNotFound)."""

    def __str__(self) -> str:
        return "not found"


class CycleState:
    __slots__ = ("_storage", "skip_filter_plugins", "skip_score_plugins", "skip_pre_bind_plugins",
                 "record_plugin_metrics", "pod_group_cycle")

    def __init__(self) -> None:
        self._storage: dict[str, Any] = {}
        self.skip_filter_plugins: frozenset[str] = frozenset()
        self.skip_score_plugins: frozenset[str] = frozenset()
        self.skip_pre_bind_plugins: frozenset[str] = frozenset()
        self.record_plugin_metrics = False
        # The group cycle's shared state when this pod is evaluated inside a PodGroup cycle.
        self.pod_group_cycle: Optional["CycleState"] = None

    def read(self, key: str) -> Any:
        try:
            return self._storage[key]
        except KeyError:
            raise NotFoundError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        """Like read() but returns `default` instead of raising (a Python convenience)."""
        return self._storage.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._storage[key] = value

    def delete(self, key: str) -> None:
        self._storage.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._storage

    def set_skip_filter_plugins(self, plugins: frozenset[str] | set[str]) -> None:
        self.skip_filter_plugins = frozenset(plugins)

    def set_skip_score_plugins(self, plugins: frozenset[str] | set[str]) -> None:
        self.skip_score_plugins = frozenset(plugins)

    def clone(self) -> "CycleState":
        c = CycleState()
        for k, v in self._storage.items():
            clone = getattr(v, "clone", None)
            c._storage[k] = clone() if clone is not None else v
        c.skip_filter_plugins = self.skip_filter_plugins
        c.skip_score_plugins = self.skip_score_plugins
        c.skip_pre_bind_plugins = self.skip_pre_bind_plugins
        c.record_plugin_metrics = self.record_plugin_metrics
        c.pod_group_cycle = self.pod_group_cycle
        return c

    def __repr__(self) -> str:
        return f"CycleState(keys={sorted(self._storage)!r})"
