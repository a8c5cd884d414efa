"""The simulated kubelet as users see it: recognised commands, Job pods, CrashLoopBackOff with
upstream's back-off, readiness probes, graceful termination and the kubelet's events."""

from __future__ import annotations

from phalanx.client import InformerFactory
from phalanx.cluster.spec import NodeSpec
from phalanx.nodes.kubelet import SimulatedKubelets, StageDelays


def pod(name, *, command=None, restart="Never", annotations=None, owner=None, **container):
    c = {"name": "c", "image": "busybox:1.36", **container}
    if command is not None:
        c["command"] = command
    md = {"name": name, "namespace": "default", "annotations": annotations or {}}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 30, "containers": [c]}}


async def start(env, bootstrap=True, **kw):
    if bootstrap:
        env.bootstrap([NodeSpec("n1")])
    factory = InformerFactory(env.client, clock=env.clock)
    k = SimulatedKubelets(env.client, factory, clock=env.clock, **kw)
    k.start()
    await env.run_until(lambda: k.synced, within=5)
    return k, factory


async def run(env, p):
    await env.client.create(p)
    await env.client.bind("default", p["metadata"]["name"], "n1")


def status(k, name):
    return (k.pods.get(f"default/{name}") or {}).get("status") or {}


async def events(env, name):
    items, _ = await env.client.list("v1", "Event", "default")
    return [(e["reason"], e["message"]) for e in sorted(items, key=lambda e: e["metadata"]["name"])
            if e["involvedObject"]["name"] == name]


async def test_sleep_runs_its_time_then_succeeds(env):
    k, f = await start(env)
    await run(env, pod("s", command=["sleep", "30"]))
    await env.run_until(lambda: status(k, "s").get("phase") == "Running", within=5)
    await env.run_until(lambda: False, within=20)
    assert status(k, "s").get("phase") == "Running"
    await env.run_until(lambda: status(k, "s").get("phase") == "Succeeded", within=20)
    term = status(k, "s")["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    await k.stop(), await f.stop()


async def test_shell_exit_code_fails_the_pod_and_unknown_commands_run_on(env):
    k, f = await start(env)
    await run(env, pod("x", command=["sh", "-c", "echo bye; exit 3"]))
    await run(env, pod("srv", command=["nginx", "-g", "daemon off;"]))
    await env.run_until(lambda: status(k, "x").get("phase") == "Failed", within=10)
    assert status(k, "x")["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    await env.run_until(lambda: False, within=120)
    assert status(k, "srv").get("phase") == "Running"
    await k.stop(), await f.stop()


async def test_job_pods_with_unrecognised_commands_complete_as_kwok_does(env):
    k, f = await start(env)
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "u1", "controller": True}
    await run(env, pod("pi", command=["perl", "-e", "1"], owner=owner))
    await run(env, pod("no-command", owner=owner))
    await env.run_until(lambda: status(k, "pi").get("phase") == "Succeeded", within=10)
    assert status(k, "no-command").get("phase") == "Running"  # an image's entrypoint is unknown
    await k.stop(), await f.stop()


async def test_crash_loop_backs_off_10s_doubling_with_backoff_events(env):
    k, f = await start(env)
    await run(env, pod("crash", command=["sh", "-c", "exit 1"], restart="Always"))

    def waiting():
        cs = (status(k, "crash").get("containerStatuses") or [{}])[0]
        return (cs.get("state") or {}).get("waiting") or {}

    seen = []
    for _ in range(4):
        await env.run_until(lambda: waiting().get("reason") == "CrashLoopBackOff"
                            and waiting().get("message") not in seen, within=400)
        seen.append(waiting()["message"])
    assert [m.split(" restarting")[0] for m in seen] == ["back-off 10s", "back-off 20s", "back-off 40s",
                                                         "back-off 1m20s"]
    cs = status(k, "crash")["containerStatuses"][0]
    assert cs["lastState"]["terminated"]["exitCode"] == 1 and cs["restartCount"] == 4
    assert {c["type"]: c["status"] for c in status(k, "crash")["conditions"]}["Ready"] == "False"
    reasons = [r for r, _ in await events(env, "crash")]
    assert "BackOff" in reasons and reasons[:3] == ["Pulled", "Created", "Started"]
    backoff = [m for r, m in await events(env, "crash") if r == "BackOff"][0]
    assert backoff.startswith("Back-off restarting failed container c in pod crash_default(")
    await k.stop(), await f.stop()


async def test_readiness_probe_turns_ready_after_its_initial_delay(env):
    k, f = await start(env)
    await run(env, pod("web", readinessProbe={"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 15}))
    await env.run_until(lambda: status(k, "web").get("phase") == "Running", within=5)
    conds = {c["type"]: c["status"] for c in status(k, "web")["conditions"]}
    assert conds["Ready"] == "False" and status(k, "web")["containerStatuses"][0]["ready"] is False
    await env.run_until(lambda: status(k, "web")["containerStatuses"][0]["ready"], within=30)
    assert {c["type"]: c["status"] for c in status(k, "web")["conditions"]}["Ready"] == "True"
    await k.stop(), await f.stop()


async def test_deletion_goes_not_ready_then_terminated_then_gone(env):
    k, f = await start(env)
    await run(env, pod("d", lifecycle={"preStop": {"sleep": {"seconds": 5}}}))
    await env.run_until(lambda: status(k, "d").get("phase") == "Running", within=5)
    seen: list[tuple[str, str]] = []

    def record(p):
        st = p.get("status") or {}
        ready = {c["type"]: c["status"] for c in st["conditions"]}["Ready"]
        state = (ready, next(iter(st["containerStatuses"][0]["state"])))
        if not seen or seen[-1] != state:
            seen.append(state)

    record(k.pods.get("default/d"))
    k.pods.add_event_handler(on_update=lambda old, new: record(new))
    await env.client.delete("v1", "Pod", "default", "d")
    await env.run_until(lambda: k.pods.get("default/d") is None, within=60)
    assert seen == [("True", "running"), ("False", "running"), ("False", "terminated")]
    assert ("Killing", "Stopping container c") in await events(env, "d")
    await k.stop(), await f.stop()


async def test_events_for_a_started_container_use_upstream_messages(env):
    k, f = await start(env)
    await run(env, pod("e", image="nginx"))
    await env.run_until(lambda: status(k, "e").get("phase") == "Running", within=5)
    await env.run_until(lambda: False, within=1)
    assert await events(env, "e") == [
        ("Pulling", 'Pulling image "nginx"'),
        ("Pulled", 'Successfully pulled image "nginx" in 0s (0s including waiting). Image size: 0 bytes.'),
        ("Created", "Created container: c"), ("Started", "Started container c")]
    await k.stop(), await f.stop()


async def test_terminating_delay_still_applies(env):
    k, f = await start(env, delays=StageDelays(terminating=8))
    await run(env, pod("t"))
    await env.run_until(lambda: status(k, "t").get("phase") == "Running", within=5)
    await env.client.delete("v1", "Pod", "default", "t")
    await env.run_until(lambda: False, within=5)
    assert k.pods.get("default/t") is not None
    await env.run_until(lambda: k.pods.get("default/t") is None, within=10)
    await k.stop(), await f.stop()


async def test_a_restarted_kubelet_carries_on_from_what_the_store_holds(env):
    k, f = await start(env)
    await run(env, pod("crash", command=["false"], restart="Always"))
    await run(env, pod("d", lifecycle={"preStop": {"sleep": {"seconds": 20}}}))
    await env.run_until(lambda: (status(k, "crash").get("containerStatuses") or [{}])[0].get("restartCount", 0) >= 2,
                        within=60)
    await env.run_until(lambda: status(k, "d").get("phase") == "Running", within=5)
    await env.client.delete("v1", "Pod", "default", "d")
    await env.run_until(lambda: False, within=2)
    await k.stop(), await f.stop()

    k2, f2 = await start(env, bootstrap=False)  # a new kubelet: no memory of back-offs or stops under way
    count = status(k2, "crash")["containerStatuses"][0]["restartCount"]
    assert await env.run_until(lambda: status(k2, "crash")["containerStatuses"][0]["restartCount"] > count, within=400)
    assert await env.run_until(lambda: k2.pods.get("default/d") is None, within=60)
    await k2.stop(), await f2.stop()
