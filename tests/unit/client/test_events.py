"""create_event: core/v1 Events in client-go's shape, repeats aggregated into `count`."""

from __future__ import annotations

from phalanx.client.clock import to_datetime
from phalanx.machinery.timestamps import now_rfc3339


def ts(clock):
    return now_rfc3339(to_datetime(clock.now()))


async def test_first_event_has_upstreams_shape(env):
    await env.namespace("default")
    cm = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "cfg", "namespace": "default"}})
    ev = await env.client.create_event(cm, "Synced", "all good", component="my-controller", host="node-a")
    nanos = int(env.clock.now() * 1e9)
    assert ev["metadata"]["name"] == f"cfg.{nanos:x}"
    assert ev["metadata"]["namespace"] == "default"
    assert ev["involvedObject"] == {"kind": "ConfigMap", "namespace": "default", "name": "cfg",
                                    "uid": cm["metadata"]["uid"], "apiVersion": "v1",
                                    "resourceVersion": cm["metadata"]["resourceVersion"]}
    assert (ev["reason"], ev["message"], ev["type"], ev["count"]) == ("Synced", "all good", "Normal", 1)
    assert ev["source"] == {"component": "my-controller", "host": "node-a"}
    assert (ev["reportingComponent"], ev["reportingInstance"]) == ("my-controller", "node-a")
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == ts(env.clock)


async def test_repeats_increment_count_and_keep_the_first_timestamp(env):
    await env.namespace("default")
    cm = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "cfg", "namespace": "default"}})
    first = await env.client.create_event(cm, "FailedSync", "boom", type="Warning", component="c")
    first_ts = ts(env.clock)
    await env.clock.advance(90)
    await env.client.create_event(cm, "FailedSync", "boom", type="Warning", component="c")
    third = await env.client.create_event(cm, "FailedSync", "boom", type="Warning", component="c")
    other = await env.client.create_event(cm, "FailedSync", "a different message", type="Warning", component="c")
    events, _ = await env.client.list("v1", "Event", "default")
    by_name = {e["metadata"]["name"]: e for e in events}
    assert len(events) == 2
    assert third["metadata"]["name"] == first["metadata"]["name"]
    stored = by_name[first["metadata"]["name"]]
    assert stored["count"] == 3
    assert stored["firstTimestamp"] == first_ts and stored["lastTimestamp"] == ts(env.clock)
    assert by_name[other["metadata"]["name"]]["count"] == 1


async def test_events_of_cluster_scoped_objects_go_to_default(env):
    await env.namespace("default")
    node = await env.client.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    ev = await env.client.create_event(node, "NodeReady", "ready", component="kubelet")
    assert ev["metadata"]["namespace"] == "default"
    assert "namespace" not in ev["involvedObject"]


async def test_an_event_deleted_meanwhile_is_created_again_with_its_count(env):
    await env.namespace("default")
    cm = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "cfg", "namespace": "default"}})
    first = await env.client.create_event(cm, "R", "m", component="c")
    await env.client.delete("v1", "Event", "default", first["metadata"]["name"])
    again = await env.client.create_event(cm, "R", "m", component="c")
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["count"] == 2


async def test_recording_never_raises(env):
    # No namespace "nowhere": the create fails, the event is dropped, the caller carries on.
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g", "namespace": "nowhere", "uid": "u"}}
    assert await env.client.create_event(ghost, "R", "m", component="c") is None


async def _config_map(env, name="rs"):
    if name == "rs":
        await env.namespace("default")
    return await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "namespace": "default"}})


async def test_ten_similar_messages_in_ten_minutes_become_one_combined_event(env):
    owner = await _config_map(env)
    for i in range(15):
        await env.client.create_event(owner, "SuccessfulCreate", f"Created pod: web-{i}", component="replicaset-controller")
    events, _ = await env.client.list("v1", "Event", "default")
    plain = sorted(e["message"] for e in events if not e["message"].startswith("(combined"))
    combined = [e for e in events if e["message"].startswith("(combined from similar events): ")]
    assert plain == sorted(f"Created pod: web-{i}" for i in range(9))
    assert len(combined) == 1
    assert combined[0]["count"] == 6 and combined[0]["message"] == "(combined from similar events): Created pod: web-14"


async def test_similar_messages_further_apart_than_ten_minutes_are_not_combined(env):
    owner = await _config_map(env)
    for i in range(12):
        await env.client.create_event(owner, "SuccessfulCreate", f"Created pod: web-{i}", component="c")
        await env.clock.advance(601)
    events, _ = await env.client.list("v1", "Event", "default")
    assert len(events) == 12 and not any(e["message"].startswith("(combined") for e in events)


async def test_a_source_writes_25_events_about_an_object_then_one_every_five_minutes(env):
    owner = await _config_map(env)
    written = [await env.client.create_event(owner, f"Reason{i}", "m", component="c") for i in range(30)]
    assert sum(e is not None for e in written) == 25
    assert await env.client.create_event(owner, "Late", "m", component="c") is None
    await env.clock.advance(300)
    assert await env.client.create_event(owner, "Later", "m", component="c") is not None
    # another object, or another source, has a bucket of its own
    other = await _config_map(env, "other")
    assert await env.client.create_event(other, "Reason", "m", component="c") is not None
    assert await env.client.create_event(owner, "Reason", "m", component="another") is not None


async def test_a_recorder_that_does_not_correlate_only_counts_repeats(env):
    owner = await _config_map(env)
    env.client.events.correlate = False
    for i in range(30):
        assert await env.client.create_event(owner, "FailedScheduling", f"0/{i} nodes", component="s") is not None
    events, _ = await env.client.list("v1", "Event", "default")
    assert len(events) == 30 and not any(e["message"].startswith("(combined") for e in events)
