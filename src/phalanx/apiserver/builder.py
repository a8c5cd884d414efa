"""The one way to assemble a resource API: `build_api`.

    api = build_api(MemoryStore(), gates, now=clock.datetime, runtime_config={"api/alpha": "false"})

It loads the kind registry (`phalanx.api`), serves the group-versions the runtime config allows
(kube-apiserver's `--runtime-config`) and connects each kind's REST storage work that upstream keeps
outside the strategies (Service cluster IPs and node ports). Strict field validation, patch
metadata and server-side apply (`api/openapi.py`, `machinery/apply.py`) are part of every `API`.

`phalanx serve` (`cluster.controlplane.ControlPlane`), the benchmark harness, the benchmarks and the
tests all build their API here, so every one of them validates, patches and records managed
fields the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Mapping

from .. import api as api_groups
from ..api import registry
from ..api.registry import ResourceType
from ..store import Store
from .customresources import CustomResourceTypes
from .rest import API, FeatureGateReader, KindStorage
from .serviceip import ServiceIPAllocator


def served(rt: ResourceType, runtime_config: Mapping[str, str]) -> bool:
    """Whether `--runtime-config` serves the group-version of `rt`: an explicit `<group>/<version>`
    entry decides; alpha (beta) versions also follow `api/alpha` (`api/beta`), then `api/all`; phalanx
    serves alpha and beta versions unless told otherwise."""
    gv = rt.api_version
    explicit = runtime_config.get(gv) or runtime_config.get(f"{gv}/")
    if explicit is not None:
        return str(explicit).lower() == "true"
    if rt.alpha or rt.beta:
        for switch in ("api/alpha" if rt.alpha else "api/beta", "api/all"):
            value = runtime_config.get(switch)
            if value is not None:
                return str(value).lower() == "true"
    return True


def kind_storage() -> dict[str, KindStorage]:
    """Per-kind REST storage work, by `ResourceType.key`."""
    return {"core/services": ServiceIPAllocator()}


def build_api(store: Store, gates: FeatureGateReader, *, now: Callable[[], datetime] | None = None,
              runtime_config: Mapping[str, str] | None = None, release: str | None = None) -> API:
    """An `API` over `store` serving every kind of Kubernetes `release` (the gates' release when None)
    that `runtime_config` allows, with its timestamps read from `now` (wall-clock UTC when None)."""
    api_groups.load_all()
    config = runtime_config or {}
    release = release or str(getattr(gates, "release", "1.36"))
    of_release = [rt for rt in registry.all_types() if registry.served_in(rt, release)]
    types = [rt for rt in of_release if served(rt, config)]
    api = API(store, gates, types=types, kind_storage=kind_storage(), now=now,
              storage_versions=storage_versions(of_release))
    if any(rt.group == "apiextensions.k8s.io" for rt in types):
        CustomResourceTypes.attach(api)  # the custom types of the stored CRDs, then of each CRD written
    return api


def storage_versions(types: list[ResourceType]) -> dict[str, str]:
    """The apiVersion each resource served in several versions is stored in, by `ResourceType.key`."""
    keys_with_others = {rt.key for rt in types if not rt.storage_version}
    return {rt.key: rt.api_version for rt in types if rt.storage_version and rt.key in keys_with_others}
