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

    gates: Any  # phalanx.cluster.featuregates.FeatureGates
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)

    def enabled(self, gate: str) -> bool:
        return self.gates.enabled(gate)


class Strategy:
    """Defaults for a kind with no special behaviour; subclass and override what differs."""

    # Columns after NAME (NAME is always first; AGE is added by `columns` unless a kind says otherwise).
    extra_columns: list[Column] = []
    has_age_column: bool = True
    # fieldSelector name -> function(obj) -> str value; metadata.name/namespace are always supported.
    field_selectors: dict[str, Callable[[Obj], str]] = {}
    # Does a main-resource update keep `status` from the old object? (true when there is a /status subresource)
    status_is_subresource: bool = False

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

    def columns(self) -> list[Column]:
        cols = [NAME_COLUMN, *self.extra_columns]
        if self.has_age_column:
            cols.append(AGE_COLUMN)
        return cols

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        """Cells for `extra_columns` (NAME and AGE are added by the table printer)."""
        return []


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
