"""Shared pieces for controller tests: a small in-process cluster around the controllers under
test, with simulated kubelets, the garbage collector and the real scheduler (pods of workload
controllers get nodes the way they would in a cluster)."""

from __future__ import annotations

from phalanx.client import InformerFactory, InProcessClient
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.garbagecollector import GarbageCollector
from phalanx.nodes.kubelet import SimulatedKubelets
from phalanx.scheduler.scheduler import Scheduler


def scheduler(env, factory, **kw) -> Scheduler:
    """A Scheduler on the test's API and clock, sharing the controllers' informer factory."""
    return Scheduler(env.client, factory, gates=env.api.gates, **kw)


def shared_factory(env) -> InformerFactory:
    """An informer factory whose caches share the store's objects, as in a cluster (under
    PHALANX_STORE_CHECKS the store fails a test whose controller changes one in place)."""
    return InformerFactory(InProcessClient(env.api, clock=env.clock, shared_reads=True), clock=env.clock)


class Running:
    """`async with`: start `self.controllers`, wait until they synced; stop them and `self.factory`."""

    env: object
    factory: InformerFactory
    controllers: list

    async def __aenter__(self):
        for c in self.controllers:
            c.start()
        assert await self.env.run_until(lambda: all(c.synced for c in self.controllers), within=10)
        return self

    async def __aexit__(self, *exc):
        for c in self.controllers:
            await c.stop()
        await self.factory.stop()


class ControllerCluster(Running):
    """`async with Sub(env) as cl:` starts `self.controllers` (set up by `make_controllers`) plus
    kubelets, the garbage collector and (with `bind=True`) the scheduler, on `nodes`."""

    nodes: list[str] = ["n1", "n2", "n3"]

    def __init__(self, env, bind: bool = True):
        env.bootstrap([NodeSpec(n) for n in self.nodes])
        self.env = env
        self.factory = shared_factory(env)
        kw = dict(clock=env.clock)
        self.controllers = [*self.make_controllers(env, self.factory, **kw),
                            SimulatedKubelets(env.client, self.factory, **kw),
                            GarbageCollector(env.client, self.factory, **kw)]
        if bind:
            self.controllers.append(scheduler(env, self.factory, **kw))

    def make_controllers(self, env, factory, **kw) -> list:
        raise NotImplementedError
