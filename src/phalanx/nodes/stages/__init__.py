"""KWOK-compatible Stages for simulated nodes: the Stage API, its jq selectors and Go templates."""

from .stage import Stage, StageError, load_stages, parse_stage, pick

__all__ = ["Stage", "StageError", "load_stages", "parse_stage", "pick"]
