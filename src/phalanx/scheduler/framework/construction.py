"""Building a Framework from a profile (upstream NewFramework): each enabled plugin made once by
its factory, the extension-point lists in the profile's order (MultiPoint expanded), score weights
checked, and the configuration errors upstream reports.

`FrameworkPlugins` is the part of `Framework` that holds the plugins; `runtime.py` runs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, cast

from .config import KubeSchedulerProfile, PluginRef, default_plugins
from .constants import MAX_NODE_SCORE, MAX_TOTAL_SCORE
from .events import ClusterEventWithHint
from .interface import (EXTENSION_POINTS, EnqueueExtensions, PlacementScorePlugin, Plugin, PreFilterPlugin,
                        QueueSortPlugin, ScorePlugin)
from .registry import Registry

if TYPE_CHECKING:
    from phalanx.machinery.featuregates import FeatureGates

    from .interface import Handle


class FrameworkConfigError(ValueError):
    """The profile cannot be built (unknown plugin, wrong extension point, duplicates...)."""


class FrameworkPlugins:
    """The plugins of one profile per extension point (the Framework's construction half)."""

    profile: KubeSchedulerProfile
    registry: Registry
    feature_gates: "FeatureGates"
    plugins_map: dict[str, Plugin]
    unavailable_plugins: list[str]
    score_plugin_weight: dict[str, int]
    placement_score_plugin_weight: dict[str, int]
    queue_sort_plugins: list[QueueSortPlugin]
    pre_filter_plugins: list[PreFilterPlugin]
    score_plugins: list[ScorePlugin]
    _pre_filter_extensions: list[tuple[str, Any]]

    # -- construction (upstream NewFramework) ------------------------------------------------
    _POINT_ATTRS = {
        "preEnqueue": "pre_enqueue_plugins", "queueSort": "queue_sort_plugins", "preFilter": "pre_filter_plugins",
        "filter": "filter_plugins", "postFilter": "post_filter_plugins", "preScore": "pre_score_plugins",
        "score": "score_plugins", "reserve": "reserve_plugins", "permit": "permit_plugins",
        "preBind": "pre_bind_plugins", "bind": "bind_plugins", "postBind": "post_bind_plugins",
        "placementGenerate": "placement_generate_plugins", "placementScore": "placement_score_plugins",
        "placementFeasible": "placement_feasible_plugins",
    }

    def _build(self) -> None:
        prof = self.profile
        plugins = prof.plugins
        optional = {p.name for p in default_plugins(self.feature_gates).multi_point.enabled}
        args_by_name = {pc.name: pc.args for pc in prof.plugin_config}
        for name in _ordered_names(plugins):
            factory = self.registry.get(name)
            if factory is None:
                if name in optional:
                    self.unavailable_plugins.append(name)
                    continue
                continue  # reported below with the extension point that names it
            plugin = factory(args_by_name.get(name), cast("Handle", self))  # the Framework is the Handle
            self.plugins_map[name] = plugin

        for point, iface in EXTENSION_POINTS.items():
            pset = plugins.get(point)
            lst: list[Plugin] = []
            seen = set()
            for ref in pset.enabled:
                pl = self.plugins_map.get(ref.name)
                if pl is None:
                    if ref.name in optional and ref.name not in self.registry:
                        continue
                    raise FrameworkConfigError(f"{iface.__name__} {ref.name!r} does not exist".replace("'", '"'))
                if not isinstance(pl, iface):
                    raise FrameworkConfigError(f'plugin "{ref.name}" does not extend {iface.__name__} plugin')
                if ref.name in seen:
                    raise FrameworkConfigError(f'plugin "{ref.name}" already registered as "{iface.__name__}"')
                seen.add(ref.name)
                lst.append(pl)
            setattr(self, self._POINT_ATTRS[point], lst)

        if plugins.multi_point.enabled:
            self._expand_multi_point()

        if len(self.queue_sort_plugins) != 1:
            raise FrameworkConfigError(
                f'only one queue sort plugin required for profile with scheduler name "{prof.scheduler_name}", '
                f"but got {len(self.queue_sort_plugins)}")
        self.score_plugin_weight = self._score_weights(ScorePlugin, plugins.score.enabled + plugins.multi_point.enabled)
        for pl in self.score_plugins:
            if self.score_plugin_weight.get(pl.name(), 0) == 0:
                raise FrameworkConfigError(f'score plugin "{pl.name()}" is not configured with weight')
        self.placement_score_plugin_weight = self._score_weights(
            PlacementScorePlugin, plugins.placement_score.enabled + plugins.multi_point.enabled)
        self._pre_filter_extensions = [(pl.name(), pl.pre_filter_extensions()) for pl in self.pre_filter_plugins]

    def _expand_multi_point(self) -> None:
        """Upstream expandMultiPointPlugins: per extension point, explicitly configured plugins that
        are also in MultiPoint first (their explicit order), then MultiPoint-only plugins, then the
        other explicit ones."""
        prof = self.profile
        optional = {p.name for p in default_plugins(self.feature_gates).multi_point.enabled}
        for point, iface in EXTENSION_POINTS.items():
            pset = prof.plugins.get(point)
            enabled = [p.name for p in pset.enabled if p.name in self.plugins_map]
            disabled = {p.name for p in pset.disabled}
            if "*" in disabled:
                continue
            multi: list[str] = []
            overrides: set[str] = set()
            for ref in prof.plugins.multi_point.enabled:
                pl = self.plugins_map.get(ref.name)
                if pl is None:
                    if ref.name in optional and ref.name not in self.registry:
                        continue
                    raise FrameworkConfigError(f'{iface.__name__} "{ref.name}" does not exist')
                if not isinstance(pl, iface):
                    continue
                if ref.name in disabled:
                    continue
                if ref.name in enabled:
                    overrides.add(ref.name)
                    continue
                if ref.name in multi:
                    raise FrameworkConfigError(f'plugin "{ref.name}" already registered as "{iface.__name__}"')
                multi.append(ref.name)
            order = [n for n in enabled if n in overrides] + multi + [n for n in enabled if n not in overrides]
            setattr(self, self._POINT_ATTRS[point], [self.plugins_map[n] for n in order])

    def _score_weights(self, iface: type, refs: list[PluginRef]) -> dict[str, int]:
        weights: dict[str, int] = {}
        total = 0
        for ref in refs:
            pl = self.plugins_map.get(ref.name)
            if pl is None or not isinstance(pl, iface) or ref.name in weights:
                continue
            w = ref.weight or 1
            if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
                raise FrameworkConfigError("total score of Score plugins could overflow")
            weights[ref.name] = w
            total += w * MAX_NODE_SCORE
        return weights

    def plugin(self, name: str) -> Optional[Plugin]:
        return self.plugins_map.get(name)

    def list_plugins(self) -> dict[str, list[dict[str, Any]]]:
        """The plugins per extension point, with score weights (upstream ListPlugins)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for point, attr in self._POINT_ATTRS.items():
            lst = getattr(self, attr)
            if not lst:
                continue
            entries = []
            for pl in lst:
                e: dict[str, Any] = {"name": pl.name()}
                if point == "score":
                    e["weight"] = self.score_plugin_weight.get(pl.name(), 1)
                elif point == "placementScore":
                    e["weight"] = self.placement_score_plugin_weight.get(pl.name(), 1)
                entries.append(e)
            out[point] = entries
        return out

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """plugin name -> registered events, for the queue's requeueing."""
        out = {}
        for name, pl in self.plugins_map.items():
            if isinstance(pl, EnqueueExtensions):
                out[name] = pl.events_to_register()
        return out


def _ordered_names(plugins: Any) -> list[str]:
    """Every plugin a profile enables, in first-mention order (multiPoint first)."""
    out: list[str] = []
    seen = set()
    for point in ["multiPoint"] + list(EXTENSION_POINTS):
        for ref in plugins.get(point).enabled:
            if ref.name not in seen:
                seen.add(ref.name)
                out.append(ref.name)
    return out
