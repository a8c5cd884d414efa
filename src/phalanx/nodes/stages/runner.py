"""Running KWOK Stages against the API: which stage acts next on an object, when, and its effect.

`StageRunner.step(obj, key)` is called by the simulated kubelet for each pod and node it serves.
The runner draws the stage that acts next among those that match (by weight), remembers when it
is due (its delay), and when the time comes and the stage still matches, does its steps in order
(`Stage.steps`: `spec.steps`, or those KWOK makes of `spec.next`): an `event`, `finalizers`
(`add`, `remove`, `empty`), `delete`, a `patch` (its template rendered with the object as dot, under
its `root`, as a json, merge, strategic (pods' and nodes' default) or apply patch, of its
`subresource`), an `apply` of a rendered object. The object's own update then comes back through
the informer and the next stage is drawn; with `immediateNextStage` the next stage is drawn at once
on the object the patch returned.
An update of the object draws its stage again (as KWOK does). What is due lives in memory only:
after a restart each object's stage is drawn again, its delay counted anew, as KWOK does.

One draw serves both kinds of stages. The stages of stage files are drawn first; when none of them
selects the object, the built-in transitions (`builtin.BuiltinStages`, phalanx's own lifecycle) are,
except those a file stage replaces by having the same `metadata.name`. A built-in transition's
choice and delay are computed anew at every step (they read the kubelet's memory: back-off, a node
that came back), which costs what one pass of a hand-written lifecycle does.

Template functions, as KWOK's: `Now`, `StartTime`, `Version`, `NodeConditions`, `NodeName`,
`NodeIP`, `NodePort`, `NodeIPWith`, `NodeIPsWith`, `PodIP`, `PodIPWith`, `PodIPsWith`, plus the Go builtins and those sprig
functions `gotemplate` provides.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable

import yaml

from ...client.interface import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, Client
from ...machinery.errors import StatusError
from .builtin import BuiltinStages
from .gotemplate import TemplateError, render
from .stage import Stage, pick

log = logging.getLogger("phalanx.nodes.stages")

VERSION = "phalanx"
STARTED = datetime.now(timezone.utc)

# The conditions a healthy kubelet reports (KWOK's NodeConditions, upstream's words).
NODE_CONDITIONS = [
    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
     "message": "kubelet has sufficient memory available"},
    {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
     "message": "kubelet has no disk pressure"},
    {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
     "message": "kubelet has sufficient PID available"},
    {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated",
     "message": "RouteController created a route"},
]


def rfc3339_nano(t: float) -> str:
    d = datetime.fromtimestamp(t, timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond * 1000:09d}Z"


class StageRunner:
    """Draws, times and applies the stages of one kind of object."""

    def __init__(self, client: Client, stages: list[Stage], now: Callable[[], float],
                 enqueue_after: Callable[[str, float], None],
                 funcs_for: Callable[[dict], dict[str, Callable[..., Any]]], builtin: BuiltinStages | None = None):
        self.client = client
        self.stages = stages
        self.builtin = builtin
        self.replaced = {s.name for s in stages}  # built-in transitions that file stages replace
        self.now = now
        self.enqueue_after = enqueue_after
        self.funcs_for = funcs_for
        self._due: dict[str, tuple[str, float, str]] = {}  # object key -> (stage, when it acts, at version)

    def forget(self, key: str) -> None:
        self._due.pop(key, None)

    async def step(self, obj: dict, key: str, immediate: bool = False) -> bool:
        """Act on `obj` if a stage selects it; False when none does. `immediate`: a stage with
        `immediateNextStage` wrote `obj` (the next stage is drawn on it once, at once)."""
        now = self.now()
        version = (obj.get("metadata") or {}).get("resourceVersion", "")
        held = self._due.get(key)
        stage = next((s for s in self.stages if held and s.name == held[0]), None) if held else None
        if stage is not None and held is not None and held[2] == version:
            due = held[1]
        else:  # new or changed: the stage is drawn again, as KWOK does on every update
            stage = pick(self.stages, obj) if self.stages else None
            if stage is None:
                self._due.pop(key, None)
                return await self._builtin_step(obj, key, now)
            due = now + stage.delay(obj, now)
            self._due[key] = (stage.name, due, version)
        if now < due:
            self.enqueue_after(key, due - now)
            return True
        self._due.pop(key, None)
        try:
            written = await self.apply(stage, obj)
        except (TemplateError, yaml.YAMLError, ValueError) as e:
            log.warning("stage %s on %s %s: %s", stage.name, obj.get("kind"), key, e)
            return True
        if stage.immediate_next and written is not None and not immediate:
            await self.step(written, key, immediate=True)
        return True

    async def _builtin_step(self, obj: dict, key: str, now: float) -> bool:
        if self.builtin is None:
            return False
        chosen = self.builtin.select(obj, key, now)
        if chosen is None or chosen[0].name in self.replaced:
            return False
        transition, delay = chosen
        if delay > 0:
            self.enqueue_after(key, delay)
        else:
            await self.builtin.apply(transition, obj, key)
        return True

    async def apply(self, stage: Stage, obj: dict) -> dict | None:
        """Do the stage's steps in order, as KWOK does (an event is sent even after a delete);
        returns the object as the last patch left it (None when deleted or unchanged)."""
        md = obj.get("metadata") or {}
        api_version, kind = obj.get("apiVersion", "v1"), obj.get("kind", stage.kind)
        ns, name = md.get("namespace"), md.get("name", "")
        written: dict | None = None
        deleted = False
        for step in stage.steps:
            event = step.get("event")
            if isinstance(event, dict) and event.get("reason"):
                await self.client.create_event(obj, event["reason"], event.get("message", ""),
                                               type=event.get("type") or "Normal", component="kwok")
            if deleted:
                continue
            await self._finalizers(step.get("finalizers"), obj, api_version, kind, ns, name)
            if step.get("delete"):
                await _ignore_gone(self.client.delete(api_version, kind, ns, name, grace_period=0))
                deleted = True
                continue
            if step.get("patch"):
                written = await self._patch(step["patch"], written or obj) or written
            if step.get("apply"):
                await self._apply(step["apply"], written or obj)
        return None if deleted else written

    async def _patch(self, patch: dict, obj: dict) -> dict | None:
        """A `patch` step: the template rendered with `obj` as dot, under `root`, as its `type`
        says (strategic for pods and nodes, merge for other kinds, when not given)."""
        md = obj.get("metadata") or {}
        kind = obj.get("kind", "")
        body = yaml.safe_load(render(patch.get("template") or "", obj, self.funcs_for(obj)))
        ptype = patch.get("type") or ("strategic" if kind in ("Pod", "Node") and obj.get("apiVersion") == "v1"
                                      else "merge")
        root = patch.get("root") or ""
        if ptype == "json":
            if not isinstance(body, list):
                return None
            body = [dict(op, path=f"/{root}{op.get('path', '')}") if root and isinstance(op, dict) else op
                    for op in body]
        elif not isinstance(body, dict):
            return None
        elif root:
            body = {root: body}
        if ptype == "apply":
            body = {"apiVersion": obj.get("apiVersion"), "kind": kind,
                    "metadata": {k: md[k] for k in ("name", "namespace") if k in md}, **body}
        content = {"json": JSON_PATCH, "merge": MERGE_PATCH, "strategic": STRATEGIC_MERGE_PATCH,
                   "apply": APPLY_PATCH}[ptype]
        return await _ignore_gone(self.client.patch(obj.get("apiVersion", "v1"), kind, md.get("namespace"),
                                                    md.get("name", ""), body, content,
                                                    subresource=patch.get("subresource") or None,
                                                    force=ptype == "apply"))

    async def _apply(self, apply: dict, obj: dict) -> None:
        """An `apply` step: the rendered object (any kind) applied server-side, or patched into its
        `subresource` with `type` merge or strategic."""
        target = yaml.safe_load(render(apply.get("template") or "", obj, self.funcs_for(obj)))
        if not isinstance(target, dict) or not target.get("kind") or not (target.get("metadata") or {}).get("name"):
            raise ValueError("apply: the template must render an object with kind and metadata.name")
        md = target["metadata"]
        ptype = apply.get("type") or "apply"
        content = {"merge": MERGE_PATCH, "strategic": STRATEGIC_MERGE_PATCH, "apply": APPLY_PATCH}[ptype]
        await _ignore_gone(self.client.patch(target.get("apiVersion", "v1"), target["kind"], md.get("namespace"),
                                             md["name"], target, content, subresource=apply.get("subresource") or None,
                                             force=ptype == "apply"))

    async def _finalizers(self, spec: Any, obj: dict, api_version: str, kind: str, ns: str | None,
                          name: str) -> None:
        if not isinstance(spec, dict):
            return
        current = list((obj.get("metadata") or {}).get("finalizers") or [])
        wanted = wanted_finalizers(spec, current)
        if wanted != current:
            await _ignore_gone(self.client.patch(api_version, kind, ns, name,
                                                 {"metadata": {"finalizers": wanted or None}}, MERGE_PATCH))


def wanted_finalizers(spec: dict, current: list[str]) -> list[str]:
    """The finalizers after a stage's `next.finalizers`: `empty`, then `remove`, then `add`."""
    wanted = [] if spec.get("empty") else list(current)
    gone = {f.get("value") for f in spec.get("remove") or [] if isinstance(f, dict)}
    wanted = [f for f in wanted if f not in gone]
    for f in spec.get("add") or []:
        if isinstance(f, dict) and f.get("value") and f["value"] not in wanted:
            wanted.append(f["value"])
    return wanted


async def _ignore_gone(call: Awaitable[Any]) -> Any:
    try:
        return await call
    except StatusError as e:
        if e.code not in (404, 409):
            raise
    return None
