"""Shared fixtures for unit and integration tests: a real `API` over a `MemoryStore`, on virtual time.

`async def` tests run on a fresh event loop each (no plugin needed). `env` gives the API, its
store, a VirtualClock driving both the API's timestamps and the client side, and an
InProcessClient; `env.run_until(pred)` runs the loop, jumping virtual time, until pred holds.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InProcessClient, VirtualClock
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(asyncio.wait_for(pyfuncitem.obj(**args), 60))
        return True
    return None


class Env:
    def __init__(self, history: int | None = None):
        self.clock = VirtualClock()
        self.store = MemoryStore(history=history)
        self.api = build_api(self.store, FeatureGates.from_config({}), now=self.clock.datetime)
        self.client = InProcessClient(self.api, clock=self.clock, field_manager="unit-test")

    def bootstrap(self, nodes: list | None = None) -> None:
        """What a new cluster holds: system namespaces, priority classes and the given NodeSpecs."""
        from phalanx.cluster.bootstrap import bootstrap
        from phalanx.cluster.spec import ClusterSpec
        bootstrap(self.api, ClusterSpec(nodes=list(nodes or [])))

    async def namespace(self, name: str) -> dict:
        return await self.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def run_until(self, predicate, within: float = 600.0) -> bool:
        return await self.clock.run_until(predicate, within=within)


@pytest.fixture
def env() -> Env:
    return Env()


@pytest.fixture
def make_env():
    return Env

