"""`phalanx get clusters` and `phalanx export logs`: what a user asks about their local clusters.

    phalanx get clusters                  NAME  STATUS  VERSION  NODES  SERVER, one row per cluster
    phalanx get clusters -o json          the same as a JSON array (`cluster.status.ClusterInfo.to_json`)
    phalanx get clusters -o name          only the names, one a line (what `kind get clusters` prints)
    phalanx export logs [--name NAME] [DIR]   logs, config, version and a dump into DIR (default: a
                                              temporary directory), printed on stdout

A cluster whose control plane crashed or whose API does not answer gets a `WARNING:` line on
stderr naming its log; the table still lists it. The work is in `phalanx.cluster.status` and
`phalanx.cluster.exportlogs`; this module parses flags and prints.
"""

from __future__ import annotations

import json
import sys

import click

from phalanx.cluster import lifecycle
from phalanx.cluster.exportlogs import export_logs
from phalanx.cluster.status import ClusterInfo, describe_clusters

OUTPUT_FORMATS = ("table", "json", "name")


def _say(text: str, err: bool = True) -> None:
    click.echo(text, err=err)


def _table(infos: list[ClusterInfo]) -> str:
    rows = [("NAME", "STATUS", "VERSION", "NODES", "SERVER")]
    for info in infos:
        nodes = "<unknown>" if info.nodes is None else str(info.nodes)
        rows.append((info.name, info.status, info.kubernetes_version or "<unknown>", nodes, info.server or "<none>"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(row)).rstrip() for row in rows)


@click.command("clusters")
@click.option("--output", "-o", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True,
              help="table, json, or name (names only, as `kind get clusters`)")
def get_clusters(output: str) -> None:
    """List clusters: running or stopped, Kubernetes version, node count and API address."""
    infos = describe_clusters()
    for info in infos:
        if info.problem:
            _say(f"WARNING: {info.problem}")
    if output == "json":
        _say(json.dumps([info.to_json() for info in infos], indent=2), err=False)
    elif output == "name":
        for info in infos:
            _say(info.name, err=False)
    elif not infos:
        _say("No phalanx clusters found.")
    else:
        _say(_table(infos), err=False)


@click.command("logs")
@click.option("--name", "-n", default=None, help="the cluster name (default: $PHALANX_CLUSTER_NAME or phalanx)")
@click.argument("directory", required=False, metavar="[DIR]")
def export_logs_command(name: str | None, directory: str | None) -> None:
    """Export a cluster's control-plane log, config, version and a dump of its objects into DIR.

    DIR defaults to a new temporary directory; it is printed on stdout. A stopped cluster is not
    started: its files are copied and the dump is skipped."""
    name = name or lifecycle.default_cluster_name()
    _say(f'Exporting logs for cluster "{name}" ...')
    try:
        result = export_logs(name, directory, progress=_say)
    except lifecycle.ClusterError as e:
        _say(f"ERROR: failed to export logs: {e}")
        sys.exit(1)
    for note in result.notes:
        _say(note)
    _say(f'Exported logs for cluster "{name}" to:')
    _say(str(result.directory), err=False)
