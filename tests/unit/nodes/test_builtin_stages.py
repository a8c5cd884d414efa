"""phalanx's own lifecycle as named built-in stages: replaced by name from stage files, joined by new
names, printed by `phalanx get stages`, and its KWOK YAML form (package data) compared with the
native transitions on the same pods (golden test)."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from phalanx.cli.main import cli
from phalanx.client import InformerFactory
from phalanx.cluster.spec import NodeSpec
from phalanx.nodes.kubelet import SimulatedKubelets
from phalanx.nodes.stages import load_stages
from phalanx.nodes.stages.builtin import DEFAULT_STAGE_FILES, NODE_TRANSITIONS, POD_TRANSITIONS, default_stage_text

BUILTIN_NAMES = [t.name for t in (*POD_TRANSITIONS, *NODE_TRANSITIONS)]


def default_yaml_stages():
    return [s for f in DEFAULT_STAGE_FILES for s in load_stages(default_stage_text(f), f)]


def stage_doc(name, selector, next_, delay_ms=None):
    spec = {"resourceRef": {"apiGroup": "v1", "kind": "Pod"}, "selector": {"matchExpressions": selector},
            "next": next_}
    if delay_ms is not None:
        spec["delay"] = {"durationMilliseconds": delay_ms}
    return yaml.safe_dump({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name},
                           "spec": spec})


def pod(name, annotations=None, restart="Always", probe_delay=None):
    c = {"name": "c", "image": "busybox:1"}
    if probe_delay is not None:
        c["readinessProbe"] = {"exec": {"command": ["true"]}, "initialDelaySeconds": probe_delay}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
            "spec": {"containers": [c], "restartPolicy": restart, "terminationGracePeriodSeconds": 30}}


async def start(env, stages=None):
    env.bootstrap([NodeSpec("n1")])
    factory = InformerFactory(env.client, clock=env.clock)
    k = SimulatedKubelets(env.client, factory, clock=env.clock, stages=stages)
    k.start()
    await env.run_until(lambda: k.synced, within=5)
    return k, factory


async def run_pod(env, p):
    await env.client.create(p)
    await env.client.bind("default", p["metadata"]["name"], "n1")


def status(k, name):
    return ((k.pods.get(f"default/{name}") or {}).get("status")) or {}


# -- the built-in set, printed --------------------------------------------------------------------
def test_get_stages_lists_every_builtin_stage_and_prints_them_as_kwok_yaml():
    table = CliRunner().invoke(cli, ["get", "stages"])
    assert table.exit_code == 0, table.output
    assert [line.split()[0] for line in table.output.splitlines()[1:]] == BUILTIN_NAMES
    printed = CliRunner().invoke(cli, ["get", "stages", "-o", "yaml"])
    assert printed.exit_code == 0, printed.output
    assert [s.name for s in load_stages(printed.output, "stdout")] == BUILTIN_NAMES
    one = CliRunner().invoke(cli, ["get", "stages", "-o", "yaml", "pod-exit"])
    assert [s.name for s in load_stages(one.output, "stdout")] == ["pod-exit"]


def test_get_stages_names_an_unknown_stage():
    out = CliRunner().invoke(cli, ["get", "stages", "-o", "yaml", "pod-nope"])
    assert out.exit_code != 0 and "no built-in stage named pod-nope" in out.output


def test_get_stages_with_a_config_shows_file_stages_replacing_builtins(tmp_path):
    (tmp_path / "exit.yaml").write_text(stage_doc("pod-exit", [], {"delete": True}))
    (tmp_path / "cluster.yaml").write_text("apiVersion: phalanx.dev/v1alpha1\nkind: Cluster\n"
                                           "kubelet:\n  stages:\n  - exit.yaml\n")
    out = CliRunner().invoke(cli, ["get", "stages", "--config", str(tmp_path / "cluster.yaml")])
    assert out.exit_code == 0, out.output
    rows = [line.split()[:3] for line in out.output.splitlines()[1:]]
    assert rows[0] == ["pod-exit", "Pod", str(tmp_path / "exit.yaml")]
    assert [r[0] for r in rows].count("pod-exit") == 1 and len(rows) == len(BUILTIN_NAMES)


# -- replacing and adding stages ------------------------------------------------------------------
async def test_a_file_stage_replaces_the_builtin_stage_of_its_name(env):
    replacement = stage_doc("pod-exit", [
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": '.metadata.annotations["phalanx.dev/run-for"]', "operator": "Exists"}],
        {"statusTemplate": "phase: Failed\nreason: Replaced\n"}, delay_ms=1000)
    k, f = await start(env, load_stages(replacement, "exit.yaml"))
    await run_pod(env, pod("short", {"phalanx.dev/run-for": "1s"}, restart="Never"))
    assert await env.run_until(lambda: status(k, "short").get("phase") == "Failed", within=10)
    assert status(k, "short").get("reason") == "Replaced"  # not the built-in pod-exit (Succeeded)
    assert status(k, "short")["containerStatuses"][0]["state"].get("running")  # the built-in pod-ready ran
    await k.stop(), await f.stop()


async def test_a_file_stage_with_a_new_name_acts_first_on_the_pods_it_selects(env):
    evict = stage_doc("pod-evict", [{"key": '.metadata.annotations["evict"]', "operator": "Exists"},
                                    {"key": ".status.phase", "operator": "In", "values": ["Running"]}],
                      {"statusTemplate": "phase: Failed\nreason: Evicted\n"})
    k, f = await start(env, load_stages(evict, "evict.yaml"))
    await run_pod(env, pod("marked", {"evict": "yes"}))
    await run_pod(env, pod("plain"))
    assert await env.run_until(lambda: status(k, "marked").get("reason") == "Evicted"
                        and status(k, "plain").get("phase") == "Running", within=10)
    await env.run_until(lambda: False, within=5)
    assert status(k, "plain").get("phase") == "Running"
    await k.stop(), await f.stop()


# -- golden: the YAML form against the native transitions ----------------------------------------
GOLDEN_PODS = [
    ("plain", {}, "Always", None),
    ("probed", {}, "Always", 5),
    ("succeeds", {"phalanx.dev/run-for": "3s"}, "Never", None),
    ("fails", {"phalanx.dev/run-for": "3s", "phalanx.dev/exit-code": "3"}, "Never", None),
]


def summary(st: dict) -> dict:
    """What the YAML form reproduces exactly (see the header of defaults/pod-stages.yaml)."""
    conds = {c["type"]: (c["status"], c.get("reason")) for c in st.get("conditions") or []
             if c["type"] != "PodScheduled"}
    containers = []
    for cs in st.get("containerStatuses") or []:
        state = cs.get("state") or {}
        kind = next((s for s in ("running", "terminated", "waiting") if state.get(s)), None)
        term = state.get("terminated") or {}
        containers.append((cs["name"], cs.get("ready"), cs.get("started"), kind, term.get("exitCode"),
                           term.get("reason"), cs.get("restartCount")))
    return {"phase": st.get("phase"), "conditions": conds, "containers": containers,
            "podIP": bool(st.get("podIP")), "hostIP": st.get("hostIP")}


async def observe(env, stages, moments=(1, 4, 6)):
    k, f = await start(env, stages)
    for name, annotations, restart, probe in GOLDEN_PODS:
        await run_pod(env, pod(name, annotations, restart, probe))
    seen, elapsed = [], 0.0
    for t in moments:
        await env.run_until(lambda: False, within=t - elapsed)
        elapsed = t
        seen.append({name: summary(status(k, name)) for name, *_ in GOLDEN_PODS})
    await env.client.delete("v1", "Pod", "default", "plain")
    await env.run_until(lambda: k.pods.get("default/plain") is None, within=10)
    gone = k.pods.get("default/plain") is None
    await k.stop(), await f.stop()
    return seen, gone


async def test_golden_the_yaml_defaults_give_the_statuses_of_the_native_transitions(make_env):
    native_seen, native_gone = await observe(make_env(), None)
    yaml_seen, yaml_gone = await observe(make_env(), default_yaml_stages())
    for moment, (want, got) in enumerate(zip(native_seen, yaml_seen)):
        for name in want:
            assert got[name] == want[name], (moment, name)
    assert native_gone and yaml_gone
    # the moments show the lifecycle, not only its end
    assert native_seen[0]["probed"]["conditions"]["Ready"] == ("False", "ContainersNotReady")
    assert native_seen[2]["probed"]["conditions"]["Ready"] == ("True", None)
    assert (native_seen[2]["succeeds"]["phase"], native_seen[2]["fails"]["phase"]) == ("Succeeded", "Failed")
