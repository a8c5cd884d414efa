"""KWOK's newer Stage forms: jq and CEL selectors and values, `spec.steps`, `next.patches` of every
type, `immediateNextStage`; read as KWOK reads them and run against the API."""

from __future__ import annotations

import pytest
import yaml

from phalanx.client import InformerFactory
from phalanx.cluster.spec import NodeSpec
from phalanx.nodes.kubelet import SimulatedKubelets
from phalanx.nodes.stages import StageError, load_stages, parse_stage
from phalanx.nodes.stages.runner import StageRunner


def stage(spec, name="s", kind="Pod"):
    return parse_stage({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name},
                        "spec": {"resourceRef": {"apiGroup": "v1", "kind": kind}, **spec}}, "f.yaml")


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "default", "annotations": {"delay": "3s", "w": "7"}},
       "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


@pytest.mark.parametrize("expression, selected", [
    ({"jq": {"key": ".status.phase", "operator": "In", "values": ["Running"]}}, True),
    ({"jq": {"key": ".status.phase", "operator": "NotIn", "values": ["Running"]}}, False),
    ({"cel": {"expression": "self.status.phase == 'Running' && !has(self.metadata.deletionTimestamp)"}}, True),
    ({"cel": {"expression": "has(self.metadata.deletionTimestamp)"}}, False),
    ({"cel": {"expression": "self.spec.missing.field == 1"}}, False),  # an error selects nothing
])
def test_selectors_in_jq_and_cel_forms(expression, selected):
    assert stage({"selector": {"matchExpressions": [expression]}}).matches(POD) is selected


@pytest.mark.parametrize("source", [
    {"expressionFrom": '.metadata.annotations["delay"]'},
    {"jq": {"expression": '.metadata.annotations["delay"]'}},
    {"cel": {"expression": "self.metadata.annotations['delay']"}},
])
def test_values_in_every_form(source):
    s = stage({"delay": {"durationMilliseconds": 1000, "durationFrom": source}})
    assert s.delay(POD, now=0.0) == 3.0


def test_weight_from_cel():
    s = stage({"weight": 1, "weightFrom": {"cel": {"expression": "int(self.metadata.annotations['w'])"}}})
    assert s.weight_of(POD) == 7


@pytest.mark.parametrize("spec, field", [
    ({"selector": {"matchExpressions": [{"cel": {"expression": "self.a ==="}}]}}, "matchExpressions[0].cel.expression"),
    ({"selector": {"matchExpressions": [{"jq": {"key": ".a", "operator": "Has"}}]}}, "matchExpressions[0].jq.operator"),
    ({"steps": [{"patch": {"template": "a: 1", "type": "yaml"}}]}, "spec.steps[0].patch.type"),
    ({"steps": [{"patch": {"type": "merge"}}]}, "spec.steps[0].patch.template"),
    ({"next": {"patches": [{"template": "x", "type": "bogus"}]}}, "spec.next.patches[0].type"),
    ({"delay": {"durationFrom": {"cel": {}}}}, "durationFrom.cel.expression"),
])
def test_bad_forms_are_named(spec, field):
    with pytest.raises(StageError, match=field.replace("[", r"\[").replace("]", r"\]")):
        stage(spec)


def test_next_becomes_steps_in_kwoks_order():
    s = stage({"next": {"delete": True, "statusTemplate": "phase: Failed", "finalizers": {"empty": True},
                        "event": {"type": "Normal", "reason": "R", "message": "m"}}})
    assert [next(iter(x)) for x in s.steps] == ["event", "finalizers", "patch", "delete"]
    assert s.steps[2]["patch"] == {"subresource": "status", "root": "status", "template": "phase: Failed"}
    patched = stage({"next": {"statusTemplate": "ignored", "patches": [{"template": "a: 1", "type": "merge"}]}})
    assert [x["patch"]["template"] for x in patched.steps] == ["a: 1"]


# -- running ----------------------------------------------------------------------------------------
async def start(env, stages):
    env.bootstrap([NodeSpec("n1")])
    factory = InformerFactory(env.client, clock=env.clock)
    k = SimulatedKubelets(env.client, factory, clock=env.clock, stages=stages)
    k.start()
    await env.run_until(lambda: k.synced, within=5)
    return k, factory


STEPS = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-labelled}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - cel: {expression: "self.status.phase == 'Running'"}
    - cel: {expression: "!has(self.metadata.labels) || !('stepped' in self.metadata.labels)"}
  steps:
  - event: {type: Normal, reason: Stepped, message: the steps ran}
  - patch:
      root: metadata
      type: merge
      template: |
        labels: {stepped: "yes"}
  - patch:
      subresource: status
      type: json
      template: |
        - {op: add, path: /conditions/-, value: {type: example.com/Stepped, status: "True"}}
      root: status
"""


async def test_steps_patch_with_every_root_and_type_and_send_events(env):
    k, f = await start(env, load_stages(STEPS, "steps.yaml"))
    await env.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}})
    await env.client.bind("default", "p", "n1")

    def pod():
        return k.pods.get("default/p") or {}

    assert await env.run_until(lambda: (pod().get("metadata") or {}).get("labels", {}).get("stepped") == "yes",
                               within=10)
    assert await env.run_until(lambda: any(c["type"] == "example.com/Stepped"
                                    for c in (pod().get("status") or {}).get("conditions") or []), within=10)
    events, _ = await env.client.list("v1", "Event", "default")
    assert any(e["reason"] == "Stepped" and e["message"] == "the steps ran" for e in events)
    await k.stop(), await f.stop()


class RecordingClient:
    """Returns each patched object with a new resourceVersion, recording the patches."""

    def __init__(self):
        self.patches = []

    async def patch(self, api_version, kind, namespace, name, body, patch_type, subresource=None, force=False):
        self.patches.append((body, patch_type, subresource))
        return yaml.safe_load(yaml.safe_dump({**POD, "metadata": {**POD["metadata"], "resourceVersion":
                                              str(len(self.patches))}, "status": body.get("status")}))


async def test_immediate_next_stage_draws_the_next_stage_on_the_written_object_at_once():
    first = stage({"selector": {"matchExpressions": [{"jq": {"key": ".status.phase", "operator": "In",
                                                            "values": ["Running"]}}]},
                   "immediateNextStage": True, "next": {"statusTemplate": "phase: Succeeded"}}, name="first")
    second = stage({"selector": {"matchExpressions": [{"jq": {"key": ".status.phase", "operator": "In",
                                                             "values": ["Succeeded"]}}]},
                    "next": {"patches": [{"root": "status", "subresource": "status", "type": "strategic",
                                          "template": "reason: Second"}]}}, name="second")
    client = RecordingClient()
    runner = StageRunner(client, [first, second], lambda: 0.0, lambda key, after: None, lambda obj: {})
    assert await runner.step(POD, "default/p")
    assert [p[0]["status"] for p in client.patches] == [{"phase": "Succeeded"}, {"reason": "Second"}]
    assert client.patches[0][1].startswith("application/strategic-merge-patch")
