"""DefaultBinder (Bind): the Binding through the client; an API error fails the binding cycle
with the API's message."""

from __future__ import annotations

from phalanx.scheduler.framework import Code, CycleState, PodInfo
from phalanx.scheduler.plugins.defaultbinder import DefaultBinder

from .builders import make_node, make_pod


async def test_binds_the_pod_to_the_node(env):
    env.bootstrap()
    await env.client.create(make_node("n1").obj())
    pod = await env.client.create(make_pod("p").obj())
    assert await DefaultBinder(env.client).bind(CycleState(), PodInfo(pod), "n1") is None
    assert (await env.client.get("v1", "Pod", "default", "p"))["spec"]["nodeName"] == "n1"


async def test_an_api_error_is_the_bindings_error(env):
    env.bootstrap()
    st = await DefaultBinder(env.client).bind(CycleState(), PodInfo(make_pod("gone").uid("uid-gone").obj()), "n1")
    assert st is not None and st.code == Code.Error
    assert st.message() == 'pods "gone" not found'
