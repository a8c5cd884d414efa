"""The service account controller: a `default` ServiceAccount in every active namespace."""

from __future__ import annotations

from phalanx.controllers.serviceaccount import ServiceAccountsController

from .harness import shared_factory


def has_default(env, namespace):
    return env.store.get("core/serviceaccounts", namespace, "default") is not None


async def start(env):
    ctrl = ServiceAccountsController(env.client, shared_factory(env), clock=env.clock)
    ctrl.start()
    assert await env.run_until(lambda: ctrl.synced)
    return ctrl


async def test_existing_and_new_namespaces_get_a_default_service_account(env):
    await env.namespace("before")
    ctrl = await start(env)
    await env.namespace("after")
    assert await env.run_until(lambda: has_default(env, "before") and has_default(env, "after"))
    sa = env.store.get("core/serviceaccounts", "after", "default")
    assert (sa["apiVersion"], sa["kind"]) == ("v1", "ServiceAccount")
    await ctrl.stop()


async def test_a_deleted_default_service_account_comes_back(env):
    await env.namespace("team")
    ctrl = await start(env)
    assert await env.run_until(lambda: has_default(env, "team"))
    first_uid = env.store.get("core/serviceaccounts", "team", "default")["metadata"]["uid"]
    await env.client.delete("v1", "ServiceAccount", "team", "default")
    assert await env.run_until(lambda: has_default(env, "team")
                               and env.store.get("core/serviceaccounts", "team", "default")["metadata"]["uid"] != first_uid)
    await ctrl.stop()


async def test_a_terminating_namespace_gets_none(env):
    await env.namespace("doomed")
    await env.client.delete("v1", "Namespace", None, "doomed")
    ctrl = await start(env)
    await env.clock.advance(60)
    assert not has_default(env, "doomed")
    await ctrl.stop()
