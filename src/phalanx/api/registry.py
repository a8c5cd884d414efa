"""The catalogue of served resources and the per-kind strategy contract.

Every served kind is described by a `ResourceType` (group, version, kind, plural, scope,
subresources) and a `Strategy` that holds what is specific to the kind, the way upstream's
`pkg/registry/<group>/<kind>/strategy.go` does:

- `default(obj, ctx)`                     fill in defaults (upstream `SetDefaults_*`)
- `prepare_for_create(obj, ctx)`          clear status, drop fields whose feature gate is off
- `prepare_for_update(new, old, ctx)`     keep status from `old` on main-resource updates
- `prepare_for_status_update(new, old, ctx)` keep spec from `old` on `/status` updates
- `validate(obj, ctx)` / `validate_update(new, old, ctx)` / `validate_status_update(new, old, ctx)`
                                          return a list of `FieldError` (empty when valid)
- `columns` + `row(obj, ctx)`             server-side printing (`kubectl get` tables)
- `field_selectors`                       extra `fieldSelector` fields besides metadata.name/namespace

API group modules (`phalanx.api.core`, `phalanx.api.scheduling`, ...) define strategies and call
`register(ResourceType(...))` at import; `phalanx.api.load_all()` imports them all.
Generic metadata validation (names, labels, ownerReferences) is done by the REST layer, so a
strategy validates only its own spec/status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from ..machinery.errors import FieldError
from ..machinery.timestamps import parse_rfc3339

Obj = dict[str, Any]


@dataclass
class Column:
    """One `meta.k8s.io/v1` Table column definition."""

    name: str
    type: str = "string"  # string | integer | number | boolean | date
    format: str = ""  # "name" for the NAME column
    description: str = ""
    priority: int = 0  # >0 only with `-o wide`

    def definition(self) -> dict:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


NAME_COLUMN = Column("Name", "string", "name", "Name must be unique within a namespace.")
AGE_COLUMN = Column("Age", "string", "", "CreationTimestamp is a timestamp representing the server time when this object was created.")


@dataclass
class StrategyContext:
    """What a strategy may consult: the feature gates and the clock."""

    gates: Any  # phalanx.machinery.featuregates.FeatureGates
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    # Read access to other stored objects, for admission: lookup(key, namespace, name) -> obj | None,
    # list_objects(key, namespace | None) -> [obj]; key is ResourceType.key ("core/pods",
    # "scheduling.k8s.io/workloads", ...). Objects returned are shared: do not mutate them.
    lookup: Callable[[str, str, str], Any] = lambda key, ns, name: None
    list_objects: Callable[[str, Any], list] = lambda key, ns: []

    def enabled(self, gate: str) -> bool:
        return self.gates.enabled(gate)


class Strategy:
    """Defaults for a kind with no special behaviour; subclass and override what differs."""

    # Table columns, NAME first (upstream's printer columns for the kind; wide ones have priority 1).
    columns: list[Column] = [NAME_COLUMN, AGE_COLUMN]
    # fieldSelector name -> function(obj) -> str value; metadata.name/namespace are always supported.
    field_selectors: dict[str, Callable[[Obj], str]] = {}
    # Does a main-resource update keep `status` from the old object? (true when there is a /status subresource)
    status_is_subresource: bool = False
    # How metadata.name is validated: "subdomain" (DNS-1123 subdomain, most kinds), "label"
    # (DNS-1123 label, e.g. Namespace), "label1035" (Service), "path_segment" (Node, Event, ...).
    name_validation: str = "subdomain"

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        """Admission for this kind (operation: CREATE | UPDATE | DELETE), after defaulting and
        before validation. Mutating admission changes `obj` in place; validating admission raises
        a StatusError (usually `errors.forbidden_error(...)`, 403) in upstream's words."""

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        pass

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        if self.status_is_subresource:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        if self.status_is_subresource:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        for k in list(new.keys()):
            if k not in ("apiVersion", "kind", "metadata", "status"):
                del new[k]
        for k, v in old.items():
            if k not in ("apiVersion", "kind", "metadata", "status"):
                new[k] = v

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return []

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self.validate(new, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        """One cell per entry of `columns` (use `age_cell` for AGE)."""
        return [obj["metadata"]["name"], age_cell(obj, ctx)]


def human_duration(seconds: float) -> str:
    """Upstream's `duration.HumanDuration`: 45s, 5m3s, 3h, 2d5h, 400d, 3y20d, 10y."""
    s = int(seconds)
    if s < 0:
        s = 0
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m{rem}s" if rem else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h{rem}m" if rem else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d{rem}h" if rem else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age_since(ts: str | None, ctx: StrategyContext) -> str:
    """`<unknown>` when unset, else the human duration until now (as kubectl's printers do)."""
    t = parse_rfc3339(ts)
    if t is None:
        return "<unknown>"
    return human_duration((ctx.now() - t).total_seconds())


def age_cell(obj: Obj, ctx: StrategyContext) -> str:
    return age_since(obj.get("metadata", {}).get("creationTimestamp"), ctx)


@dataclass
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    strategy: Strategy = field(default_factory=Strategy)
    singular: str = ""
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    subresources: list[str] = field(default_factory=list)  # "status", "binding", "log", "scale"
    # Feature gate or runtime-config that must be on for the group-version to be served.
    requires_gate: str | None = None
    alpha: bool = False
    beta: bool = False
    # Kubernetes releases ("1.36", "1.37") that serve this group-version; empty means every release.
    releases: tuple[str, ...] = ()
    # When several versions of one resource are served in a release, the one whose shape the store
    # holds (upstream's storage version); the others are converted on the way in and out.
    storage_version: bool = True
    # A deprecation warning every request for this resource answers with (upstream's
    # `Warning: 299 - "..."`, e.g. v1 Endpoints since 1.33).
    deprecation_warning: str = ""

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def qualified_resource(self) -> str:
        """`pods`, `podgroups.scheduling.k8s.io`: what error messages name."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def key(self) -> str:
        """Storage key prefix: one per group+resource, independent of version."""
        return f"{self.group}/{self.plural}" if self.group else f"core/{self.plural}"

    verbs: list[str] = field(default_factory=lambda: ["create", "delete", "deletecollection", "get", "list",
                                                        "patch", "update", "watch"])


_REGISTRY: dict[tuple[str, str, str], ResourceType] = {}  # (group, version, plural)


def register(rt: ResourceType) -> ResourceType:
    _REGISTRY[(rt.group, rt.version, rt.plural)] = rt
    return rt


def all_types() -> list[ResourceType]:
    return list(_REGISTRY.values())


def served_in(rt: ResourceType, release: str) -> bool:
    """Whether Kubernetes `release` serves `rt`'s group-version."""
    return not rt.releases or release in rt.releases


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return _REGISTRY.get((group, version, plural))


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    group, _, version = api_version.rpartition("/")
    for rt in _REGISTRY.values():
        if rt.group == group and rt.version == version and rt.kind == kind:
            return rt
    return None


def by_key(key: str) -> list[ResourceType]:
    return [rt for rt in _REGISTRY.values() if rt.key == key]
