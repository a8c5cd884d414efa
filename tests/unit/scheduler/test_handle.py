"""The Handle gives plugins what kube-scheduler's framework.Handle gives them: the client, the
shared informer factory, an event recorder, the DRA manager, the PodGroup lister, the clock and
off-cycle API calls. Plugins here are built from a Framework's Handle alone, no Scheduler."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from phalanx.client.informer import InformerFactory
from phalanx.scheduler.framework import CycleState, Framework, PodInfo
from phalanx.scheduler.framework.config import KubeSchedulerConfiguration, KubeSchedulerProfile, set_profile_defaults
from phalanx.scheduler.framework.dra_manager import DRAManager
from phalanx.scheduler.framework.interface import BindPlugin, Handle
from phalanx.scheduler.framework.registry import in_tree_registry
from phalanx.scheduler.framework.services import HandleServices
from phalanx.scheduler.plugins import defaultbinder, dynamicresources
from phalanx.scheduler.scheduler import Scheduler

from .builders import make_node, make_pod
from .harness import only, snapshot


class PodGroups:
    def __init__(self, *groups: dict):
        self.groups = {f"{g['metadata']['namespace']}/{g['metadata']['name']}": g for g in groups}

    def get(self, key: str) -> Optional[dict]:
        return self.groups.get(key)


GROUP = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
         "metadata": {"name": "g", "namespace": "default", "uid": "uid-g"},
         "spec": {"schedulingPolicy": {"basic": {}}}}


def framework_with(services: Optional[HandleServices], *plugins: str, scheduler_name: str = "default-scheduler",
                   extra: Optional[dict[str, Any]] = None) -> Framework:
    reg = in_tree_registry()
    reg.register("DefaultBinder", defaultbinder.new)
    reg.register("DynamicResources", dynamicresources.new)
    for name, factory in (extra or {}).items():
        reg.register(name, factory)
    prof = KubeSchedulerProfile(scheduler_name=scheduler_name)
    set_profile_defaults(prof, custom_plugins=only(*plugins))
    return Framework(prof, registry=reg, snapshot=snapshot([make_node("n1").obj()]), services=services)


def services_for(env, **kw: Any) -> HandleServices:
    return HandleServices(client=env.client, informer_factory=InformerFactory(env.client, clock=env.clock),
                          dra_manager=kw.pop("dra_manager", DRAManager()), pod_groups=PodGroups(GROUP),
                          clock=env.clock, **kw)


def test_dynamic_resources_is_built_from_the_handle(env):
    manager = DRAManager()
    fw = framework_with(services_for(env, dra_manager=manager), "DynamicResources")
    plugin = fw.plugin("DynamicResources")
    assert plugin.tracker is manager and plugin.client is env.client and plugin.clock is env.clock
    member = make_pod("p").obj()
    member["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    assert plugin.pod_group_of(member) is GROUP  # through the Handle's PodGroup lister
    assert plugin.pod_group_of(make_pod("q").obj()) is None


def test_dynamic_resources_needs_the_shared_dra_manager():
    with pytest.raises(ValueError, match="shared DRA manager"):
        framework_with(None, "DynamicResources")


async def test_default_binder_binds_with_the_handles_client(env):
    env.bootstrap()
    await env.client.create(make_node("n1").obj())
    created = await env.client.create(make_pod("p").obj())
    fw = framework_with(services_for(env), "DefaultBinder")
    st = await fw.run_bind_plugins(CycleState(), PodInfo(created), "n1")
    assert st is None
    assert (await env.client.get("v1", "Pod", "default", "p"))["spec"]["nodeName"] == "n1"


async def test_binding_without_a_client_fails_the_binding_cycle():
    fw = framework_with(None, "DefaultBinder")
    st = await fw.run_bind_plugins(CycleState(), PodInfo(make_pod("p").obj()), "n1")
    assert st is not None and st.message() == "no API client to bind with"


async def test_event_recorder_reports_as_the_profile(env):
    env.bootstrap()
    pod = await env.client.create(make_pod("p").obj())
    fw = framework_with(services_for(env), "DefaultBinder", scheduler_name="gang-scheduler")
    await fw.event_recorder().eventf(pod, "Scheduled", "Successfully assigned default/p to n1",
                                     annotations={"example.com/note": "x"})
    events, _ = await env.client.list("v1", "Event", "default")
    (ev,) = [e for e in events if e.get("reason") == "Scheduled"]
    assert ev["message"] == "Successfully assigned default/p to n1"
    assert (ev.get("source") or {}).get("component") == "gang-scheduler"
    assert ev["metadata"]["annotations"]["example.com/note"] == "x"



def scheduler_with_informer_user(env: Any) -> tuple[Scheduler, list["InformerUser"]]:
    """A Scheduler whose one custom plugin, InformerUser, is built from its Handle; the plugins made."""
    made: list[InformerUser] = []

    def new(args: Any, handle: Handle) -> InformerUser:
        made.append(InformerUser(handle))
        return made[-1]
    prof = KubeSchedulerProfile()
    set_profile_defaults(prof, custom_plugins=only("InformerUser"))
    reg = in_tree_registry()
    reg.register("InformerUser", new)
    sched = Scheduler(env.client, config=KubeSchedulerConfiguration(profiles=[prof]), registry=reg, clock=env.clock)
    return sched, made

async def test_the_scheduler_waits_for_informers_plugins_made(env):
    sched, made = scheduler_with_informer_user(env)
    sched.start()
    try:
        assert await env.run_until(lambda: sched.synced, within=10)
        assert made[0].config_maps.has_synced
    finally:
        await sched.stop()


async def test_spawn_api_call_runs_through_the_services_runner(env):
    ran: list[str] = []
    calls: list = []

    async def write() -> None:
        ran.append("written")
    fw = framework_with(services_for(env, spawn_api_call=calls.append), "DefaultBinder")
    fw.spawn_api_call(write())
    assert not ran and len(calls) == 1
    await calls[0]
    assert ran == ["written"]


def test_a_framework_without_services_offers_no_client():
    fw = framework_with(None, "DefaultBinder")
    assert fw.client() is None and fw.shared_informer_factory() is None and fw.shared_dra_manager() is None
    assert fw.pod_group_lister() is None and fw.clock().now() > 0


class InformerUser(BindPlugin):
    """A plugin that needs Pods and ConfigMaps: it gets them from the Handle's informer factory."""

    NAME = "InformerUser"

    def __init__(self, handle: Handle):
        factory = handle.shared_informer_factory()
        assert factory is not None
        self.pods = factory.informer("v1", "Pod")
        self.config_maps = factory.informer("v1", "ConfigMap")


def test_plugins_share_the_schedulers_informers(env):
    sched, made = scheduler_with_informer_user(env)
    (plugin,) = made
    assert plugin.pods is sched.pods  # one shared informer per kind
    assert plugin.config_maps in sched.factory.informers
