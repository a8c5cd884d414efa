"""Scheduler profiles, as `KubeSchedulerConfiguration` (kubescheduler.config.k8s.io/v1) has them.

    cfg = load_configuration(yaml.safe_load(text))        # or KubeSchedulerConfiguration() for defaults
    profile = cfg.profiles[0]                             # schedulerName "default-scheduler"
    profile.plugins.score.enabled                         # after merging with the default plugins
    profile.args_for("NodeResourcesFit")                  # {"scoringStrategy": {...}} with defaults

Defaults equal upstream's: the default MultiPoint plugin list with its weights (TaintToleration 3,
NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesFit 1,
NodeResourcesBalancedAllocation 1, ImageLocality 1), plugin args defaulted as upstream's
SetDefaults_* functions do, `percentageOfNodesToScore` 0 meaning adaptive. A custom plugin set
is merged into the defaults the way upstream's mergePluginSet does (`disabled: [{name: "*"}]`
drops every default of that extension point; re-enabling a default keeps its position).

Plugins that phalanx does not implement (volume plugins, ImageLocality) stay in the default
list so the profile reads like upstream's; the Framework skips default plugins that no registry
provides and reports them in `Framework.unavailable_plugins`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from phalanx.machinery.featuregates import FeatureGates

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_WEIGHT = (1 << 63) - 1  # upstream bounds weights by the total-score overflow check


@dataclass
class PluginRef:
    """One plugin in a plugin set (upstream `Plugin`): a name and, for Score, a weight."""

    name: str
    weight: int = 0


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[PluginRef] = field(default_factory=list)


# Config field name (camelCase, as in YAML) -> Python attribute.
PLUGIN_SET_FIELDS = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
    "multiPoint": "multi_point",
    "placementGenerate": "placement_generate",
    "placementScore": "placement_score",
    "placementFeasible": "placement_feasible",
}


@dataclass
class Plugins:
    pre_enqueue: PluginSet = field(default_factory=PluginSet)
    queue_sort: PluginSet = field(default_factory=PluginSet)
    pre_filter: PluginSet = field(default_factory=PluginSet)
    filter: PluginSet = field(default_factory=PluginSet)
    post_filter: PluginSet = field(default_factory=PluginSet)
    pre_score: PluginSet = field(default_factory=PluginSet)
    score: PluginSet = field(default_factory=PluginSet)
    reserve: PluginSet = field(default_factory=PluginSet)
    permit: PluginSet = field(default_factory=PluginSet)
    pre_bind: PluginSet = field(default_factory=PluginSet)
    bind: PluginSet = field(default_factory=PluginSet)
    post_bind: PluginSet = field(default_factory=PluginSet)
    multi_point: PluginSet = field(default_factory=PluginSet)
    placement_generate: PluginSet = field(default_factory=PluginSet)
    placement_score: PluginSet = field(default_factory=PluginSet)
    placement_feasible: PluginSet = field(default_factory=PluginSet)

    def get(self, point: str) -> PluginSet:
        """The set for a config field name ("filter", "multiPoint", ...)."""
        plugin_set: PluginSet = getattr(self, PLUGIN_SET_FIELDS.get(point, point))
        return plugin_set

    def names(self) -> list[str]:
        """Every enabled plugin name, sorted (upstream pluginsNames)."""
        out = set()
        for attr in PLUGIN_SET_FIELDS.values():
            for p in getattr(self, attr).enabled:
                out.add(p.name)
        return sorted(out)


@dataclass
class PluginConfig:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class KubeSchedulerProfile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: Optional[int] = None
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = field(default_factory=list)

    def args_for(self, name: str) -> Optional[dict[str, Any]]:
        for pc in self.plugin_config:
            if pc.name == name:
                return pc.args
        return None


@dataclass
class KubeSchedulerConfiguration:
    profiles: list[KubeSchedulerProfile] = field(default_factory=list)
    percentage_of_nodes_to_score: Optional[int] = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    parallelism: int = 16
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10

    def __post_init__(self) -> None:
        if not self.profiles:
            self.profiles = [default_profile()]


# -- defaults ----------------------------------------------------------------------------------

def default_plugins(gates: Optional[FeatureGates] = None) -> Plugins:
    """Upstream's getDefaultPlugins (v1) plus what the 1.36 feature gates add."""
    enabled = [
        PluginRef("SchedulingGates"),
        PluginRef("PrioritySort"),
        PluginRef("NodeUnschedulable"),
        PluginRef("NodeName"),
        PluginRef("TaintToleration", 3),
        PluginRef("NodeAffinity", 2),
        PluginRef("NodePorts"),
        PluginRef("NodeResourcesFit", 1),
        PluginRef("VolumeRestrictions"),
        PluginRef("NodeVolumeLimits"),
        PluginRef("VolumeBinding"),
        PluginRef("VolumeZone"),
        PluginRef("PodTopologySpread", 2),
        PluginRef("InterPodAffinity", 2),
        PluginRef("DefaultPreemption"),
        PluginRef("NodeResourcesBalancedAllocation", 1),
        PluginRef("ImageLocality", 1),
        PluginRef("DefaultBinder"),
    ]
    gates = gates or FeatureGates()
    if gates.enabled("DynamicResourceAllocation"):
        # Before DefaultPreemption: freeing an idle claim beats evicting a pod.
        i = next(i for i, p in enumerate(enabled) if p.name == "DefaultPreemption")
        enabled.insert(i, PluginRef("DynamicResources"))
    if gates.enabled("NodeDeclaredFeatures"):
        enabled.append(PluginRef("NodeDeclaredFeatures"))
    if gates.enabled("GenericWorkload") and gates.enabled("GangScheduling"):
        enabled.append(PluginRef("GangScheduling"))
    if gates.enabled("GenericWorkload") and gates.enabled("TopologyAwareWorkloadScheduling"):
        enabled.append(PluginRef("TopologyPlacementGenerator"))  # KEP-5732; NodeResourcesFit scores placements too
        enabled.append(PluginRef("PodGroupPodsCount", 1))
    return Plugins(multi_point=PluginSet(enabled=enabled))


def default_profile(gates: Optional[FeatureGates] = None, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> KubeSchedulerProfile:
    prof = KubeSchedulerProfile(scheduler_name=scheduler_name)
    set_profile_defaults(prof, gates)
    return prof


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream mergePluginSet: custom disables drop defaults ("*" drops all); a default that is
    re-enabled is replaced in place; other custom plugins are appended."""
    disabled_names = {p.name for p in custom.disabled} | {p.name for p in default.disabled}
    disabled = [PluginRef(p.name) for p in custom.disabled] + [PluginRef(p.name) for p in default.disabled]
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for p in default.enabled:
            if p.name in disabled_names:
                continue
            hit = custom_by_name.get(p.name)
            if hit is not None:
                p = hit[1]
                replaced.add(hit[0])
            enabled.append(PluginRef(p.name, p.weight))
    for i, p in enumerate(custom.enabled):
        if i not in replaced:
            enabled.append(PluginRef(p.name, p.weight))
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Optional[Plugins]) -> Plugins:
    if custom is None:
        return default
    out = Plugins()
    for attr in PLUGIN_SET_FIELDS.values():
        setattr(out, attr, merge_plugin_set(getattr(default, attr), getattr(custom, attr)))
    return out


_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def _default_resources(resources: Optional[list[Any]]) -> list[dict[str, Any]]:
    if not resources:
        return copy.deepcopy(_DEFAULT_RESOURCES)
    out = []
    for r in resources:
        r = dict(r)
        if not r.get("weight"):
            r["weight"] = 1
        out.append(r)
    return out


def _defaults_node_resources_fit(args: dict[str, Any]) -> None:
    strategy = args.get("scoringStrategy")
    if strategy is None:
        args["scoringStrategy"] = {"type": "LeastAllocated", "resources": copy.deepcopy(_DEFAULT_RESOURCES)}
        return
    strategy = args["scoringStrategy"] = dict(strategy)
    strategy.setdefault("type", "LeastAllocated")
    strategy["resources"] = _default_resources(strategy.get("resources"))


def _defaults_balanced_allocation(args: dict[str, Any]) -> None:
    args["resources"] = _default_resources(args.get("resources"))


def _defaults_default_preemption(args: dict[str, Any]) -> None:
    args.setdefault("minCandidateNodesPercentage", 10)
    args.setdefault("minCandidateNodesAbsolute", 100)


def _defaults_inter_pod_affinity(args: dict[str, Any]) -> None:
    args.setdefault("hardPodAffinityWeight", 1)
    args.setdefault("ignorePreferredTermsOfExistingPods", False)


def _defaults_pod_topology_spread(args: dict[str, Any]) -> None:
    if not args.get("defaultingType"):
        args["defaultingType"] = "System"
    args.setdefault("defaultConstraints", [])


def _defaults_node_affinity(args: dict[str, Any]) -> None:
    args.setdefault("addedAffinity", None)


# Plugins that take an "<Name>Args" object, with their defaulting functions.
PLUGIN_ARGS_DEFAULTERS = {
    "NodeResourcesFit": _defaults_node_resources_fit,
    "NodeResourcesBalancedAllocation": _defaults_balanced_allocation,
    "DefaultPreemption": _defaults_default_preemption,
    "InterPodAffinity": _defaults_inter_pod_affinity,
    "PodTopologySpread": _defaults_pod_topology_spread,
    "NodeAffinity": _defaults_node_affinity,
}


def default_plugin_args(name: str, args: Optional[Mapping[str, Any]] = None) -> Optional[dict[str, Any]]:
    """`args` with upstream's defaults filled in; None for plugins without an Args type."""
    fn = PLUGIN_ARGS_DEFAULTERS.get(name)
    if fn is None:
        return dict(args) if args is not None else None
    out = copy.deepcopy(dict(args or {}))
    out.pop("apiVersion", None)
    out.pop("kind", None)
    fn(out)
    return out


def set_profile_defaults(prof: KubeSchedulerProfile, gates: Optional[FeatureGates] = None,
                         custom_plugins: Optional[Plugins] = None) -> None:
    """Merge the profile's plugins into the defaults and default every plugin's args."""
    prof.plugins = merge_plugins(default_plugins(gates), custom_plugins if custom_plugins is not None else prof.plugins)
    existing = set()
    for pc in prof.plugin_config:
        existing.add(pc.name)
        defaulted = default_plugin_args(pc.name, pc.args)
        pc.args = defaulted if defaulted is not None else {}
    for name in prof.plugins.names():
        if name in existing or name not in PLUGIN_ARGS_DEFAULTERS:
            continue
        prof.plugin_config.append(PluginConfig(name, default_plugin_args(name) or {}))


# -- validation --------------------------------------------------------------------------------

class ConfigurationError(ValueError):
    """Invalid configuration; the message lists every field error as upstream formats them."""


def validate_configuration(cfg: KubeSchedulerConfiguration) -> None:
    errs: list[str] = []
    pct = cfg.percentage_of_nodes_to_score
    if pct is not None and not 0 <= pct <= 100:
        errs.append(f"percentageOfNodesToScore: Invalid value: {pct}: not in valid range [0-100]")
    names = set()
    for i, prof in enumerate(cfg.profiles):
        path = f"profiles[{i}]"
        if not prof.scheduler_name:
            errs.append(f"{path}.schedulerName: Required value")
        elif prof.scheduler_name in names:
            errs.append(f"{path}.schedulerName: Duplicate value: {prof.scheduler_name!r}".replace("'", '"'))
        names.add(prof.scheduler_name)
        p = prof.percentage_of_nodes_to_score
        if p is not None and not 0 <= p <= 100:
            errs.append(f"{path}.percentageOfNodesToScore: Invalid value: {p}: not in valid range [0-100]")
        for j, pc in enumerate(prof.plugin_config):
            errs.extend(_validate_args(f"{path}.pluginConfig[{j}].args", pc.name, pc.args))
    if errs:
        raise ConfigurationError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")


def _validate_resources(path: str, resources: list[Mapping[str, Any]]) -> list[str]:
    errs = []
    for k, r in enumerate(resources or []):
        w = r.get("weight", 0)
        if not 1 <= int(w) <= 100:
            errs.append(f"{path}[{k}].weight: Invalid value: {w}: resource weight of {r.get('name')} not in valid range [1, 100]")
    return errs


def _validate_args(path: str, name: str, args: Mapping[str, Any]) -> list[str]:
    """Upstream's per-plugin args validation (ValidateNodeResourcesFitArgs and friends)."""
    validate = _ARGS_VALIDATORS.get(name)
    return validate(path, args) if validate is not None else []


def _validate_fit_args(path: str, args: Mapping[str, Any]) -> list[str]:
    errs: list[str] = []
    s = args.get("scoringStrategy") or {}
    t = s.get("type")
    if t not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
        errs.append(f'{path}.scoringStrategy.type: Unsupported value: "{t}": supported values: '
                    '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"')
    errs.extend(_validate_resources(f"{path}.scoringStrategy.resources", s.get("resources") or []))
    if t == "RequestedToCapacityRatio":
        errs.extend(_validate_shape(f"{path}.scoringStrategy.requestedToCapacityRatio.shape",
                                    ((s.get("requestedToCapacityRatio") or {}).get("shape")) or []))
    return errs


def _validate_shape(path: str, shape: list[Mapping[str, Any]]) -> list[str]:
    errs: list[str] = []
    if not shape:
        errs.append(f"{path}: Required value: at least one point must be specified")
    prev = None
    for k, pt in enumerate(shape):
        u, sc = pt.get("utilization", 0), pt.get("score", 0)
        if not 0 <= u <= 100:
            errs.append(f"{path}[{k}].utilization: Invalid value: {u}: not in valid range [0, 100]")
        elif prev is not None and u <= prev:
            errs.append(f"{path}[{k}].utilization: Invalid value: {u}: utilization values must be sorted in "
                        "increasing order")
        prev = u
        if not 0 <= sc <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(f"{path}[{k}].score: Invalid value: {sc}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    return errs


def _validate_balanced_allocation_args(path: str, args: Mapping[str, Any]) -> list[str]:
    return _validate_resources(f"{path}.resources", args.get("resources") or [])


def _validate_default_preemption_args(path: str, args: Mapping[str, Any]) -> list[str]:
    errs: list[str] = []
    pct = args.get("minCandidateNodesPercentage", 10)
    if not 0 <= pct <= 100:
        errs.append(f"{path}.minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
    ab = args.get("minCandidateNodesAbsolute", 100)
    if ab < 0:
        errs.append(f"{path}.minCandidateNodesAbsolute: Invalid value: {ab}: not in valid range [0, inf)")
    if pct == 0 and ab == 0:
        errs.append(f"{path}: Invalid value: {{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}}: "
                    "both minCandidateNodesPercentage and minCandidateNodesAbsolute cannot be zero")
    return errs


def _validate_inter_pod_affinity_args(path: str, args: Mapping[str, Any]) -> list[str]:
    w = args.get("hardPodAffinityWeight", 1)
    if not 0 <= w <= 100:
        return [f"{path}.hardPodAffinityWeight: Invalid value: {w}: not in valid range [0, 100]"]
    return []


def _validate_pod_topology_spread_args(path: str, args: Mapping[str, Any]) -> list[str]:
    errs: list[str] = []
    dt = args.get("defaultingType")
    if dt not in ("System", "List"):
        errs.append(f'{path}.defaultingType: Unsupported value: "{dt}": supported values: "List", "System"')
    if dt == "System" and args.get("defaultConstraints"):
        errs.append(f"{path}.defaultConstraints: Invalid value: when .defaultingType is \"System\"")
    return errs


_ARGS_VALIDATORS: dict[str, Callable[[str, Mapping[str, Any]], list[str]]] = {
    "NodeResourcesFit": _validate_fit_args,
    "NodeResourcesBalancedAllocation": _validate_balanced_allocation_args,
    "DefaultPreemption": _validate_default_preemption_args,
    "InterPodAffinity": _validate_inter_pod_affinity_args,
    "PodTopologySpread": _validate_pod_topology_spread_args,
}


# -- loading from YAML/JSON objects -------------------------------------------------------------

def _plugin_set_from(obj: Optional[Mapping[str, Any]]) -> PluginSet:
    obj = obj or {}
    return PluginSet(enabled=[PluginRef(p["name"], int(p.get("weight") or 0)) for p in obj.get("enabled") or []],
                     disabled=[PluginRef(p["name"]) for p in obj.get("disabled") or []])


def plugins_from_object(obj: Optional[Mapping[str, Any]]) -> Plugins:
    obj = obj or {}
    unknown = set(obj) - set(PLUGIN_SET_FIELDS)
    if unknown:
        raise ConfigurationError(f'unknown field "{sorted(unknown)[0]}" in plugins')
    p = Plugins()
    for key, attr in PLUGIN_SET_FIELDS.items():
        if key in obj:
            setattr(p, attr, _plugin_set_from(obj[key]))
    return p


def load_configuration(obj: Optional[Mapping[str, Any]], gates: Optional[FeatureGates] = None) -> KubeSchedulerConfiguration:
    """Parse and default a KubeSchedulerConfiguration object (as loaded from YAML), then validate."""
    obj = dict(obj or {})
    api_version = obj.get("apiVersion", API_VERSION)
    if api_version != API_VERSION:
        raise ConfigurationError(f'no kind "{obj.get("kind", KIND)}" is registered for version "{api_version}"')
    raw_profiles = obj.get("profiles") or [{}]
    profiles = []
    for rp in raw_profiles:
        name = rp.get("schedulerName")
        if name is None and len(raw_profiles) == 1:
            name = DEFAULT_SCHEDULER_NAME
        prof = KubeSchedulerProfile(
            scheduler_name=name or "",
            percentage_of_nodes_to_score=rp.get("percentageOfNodesToScore"),
            plugin_config=[PluginConfig(pc["name"], dict(pc.get("args") or {})) for pc in rp.get("pluginConfig") or []],
        )
        set_profile_defaults(prof, gates, plugins_from_object(rp.get("plugins")))
        profiles.append(prof)
    cfg = KubeSchedulerConfiguration(
        profiles=profiles,
        percentage_of_nodes_to_score=obj.get("percentageOfNodesToScore", DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE),
        parallelism=int(obj.get("parallelism", 16)),
        pod_initial_backoff_seconds=int(obj.get("podInitialBackoffSeconds", 1)),
        pod_max_backoff_seconds=int(obj.get("podMaxBackoffSeconds", 10)),
    )
    validate_configuration(cfg)
    return cfg
