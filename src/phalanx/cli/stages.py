"""`phalanx get stages`: the stages the simulated kubelets run, built-in and from stage files.

    phalanx get stages                      NAME KIND SOURCE DESCRIPTION of the built-in stages
    phalanx get stages --config FILE        the stages a cluster config gives: its `kubelet.stages`
                                            files first (drawn first), then the built-in stages they
                                            do not replace (same `metadata.name`)
    phalanx get stages --name NAME          the same for an existing cluster
    phalanx get stages -o yaml [STAGE...]   the built-in stages as KWOK Stage YAML, a starting point
                                            for a file that replaces one

The built-in stages are `phalanx.nodes.stages.builtin`; this module reads and prints.
"""

from __future__ import annotations

import click
import yaml

from phalanx.cluster import lifecycle
from phalanx.cluster.config import load_cluster_config
from phalanx.machinery.strictyaml import ConfigFileError
from phalanx.nodes.stages import StageError, stages_from_config
from phalanx.nodes.stages.builtin import (DEFAULT_STAGE_FILES, NODE_TRANSITIONS, POD_TRANSITIONS,
                                          default_stage_text)


def _rows(file_stages: list) -> list[tuple[str, str, str, str]]:
    rows = [("NAME", "KIND", "SOURCE", "DESCRIPTION")]
    replaced = {s.name for s in file_stages}
    rows += [(s.name, s.kind, s.source, "") for s in file_stages]
    rows += [(t.name, t.kind, t.source, t.summary) for t in (*POD_TRANSITIONS, *NODE_TRANSITIONS)
             if t.name not in replaced]
    return rows


def _table(rows: list[tuple[str, str, str, str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("   ".join([*(f"{r[i]:<{widths[i]}}" for i in range(3)), r[3]]).rstrip() for r in rows)


def _builtin_yaml(names: tuple[str, ...]) -> str:
    if not names:
        return "---\n".join(default_stage_text(f) for f in DEFAULT_STAGE_FILES)
    docs = [d for f in DEFAULT_STAGE_FILES for d in yaml.safe_load_all(default_stage_text(f))
            if d and d["metadata"]["name"] in names]
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)


@click.command("stages")
@click.argument("names", nargs=-1, metavar="[STAGE]...")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="show the stages a cluster config gives (its kubelet.stages files and the built-ins)")
@click.option("--name", default=None, help="show the stages of this existing cluster")
@click.option("-o", "--output", type=click.Choice(["table", "yaml"]), default="table", show_default=True,
              help="yaml: the built-in stages as KWOK Stage YAML")
def get_stages(names: tuple[str, ...], config_path: str | None, name: str | None, output: str) -> None:
    """Show the stages the simulated kubelets run (NAME KIND SOURCE DESCRIPTION)."""
    known = {t.name for t in (*POD_TRANSITIONS, *NODE_TRANSITIONS)}
    unknown = [n for n in names if n not in known]
    if output == "yaml":
        if unknown:
            raise click.ClickException(f"no built-in stage named {', '.join(unknown)} "
                                       f"(built-in: {', '.join(sorted(known))})")
        click.echo(_builtin_yaml(names).rstrip("\n"))
        return
    try:
        spec = load_cluster_config(config_path, None) if config_path else \
            lifecycle.load_cluster_spec(name) if name else None
        file_stages = stages_from_config(spec.kubelet.get("stages")) if spec is not None else []
    except (ConfigFileError, lifecycle.ClusterError, StageError) as e:
        raise click.ClickException(f"failed to get stages: {e}") from None
    rows = _rows(file_stages)
    if names:
        rows = [rows[0], *(r for r in rows[1:] if r[0] in names)]
    click.echo(_table(rows))
