"""KWOK-compatible Stages for simulated nodes: the Stage API, its jq selectors and Go templates."""

from typing import Any

from .stage import Stage, StageError, load_stages, parse_stage, pick

__all__ = ["Stage", "StageError", "load_stages", "parse_stage", "pick", "stages_from_config"]


def stages_from_config(entries: Any) -> list[Stage]:
    """The stages a cluster spec keeps (`kubelet.stages`: `{source, text}` per file, checked when
    the config was read)."""
    out: list[Stage] = []
    for e in entries or ():
        out += load_stages(e["text"], e["source"])
    return out
