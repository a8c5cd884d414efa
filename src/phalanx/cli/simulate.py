"""`phalanx simulate SCENARIO.yaml`: what-if in virtual time, with a report to decide on.

    phalanx simulate examples/simulate/small.yaml -o out [--seed 7] [--parallel 2] [--quiet]

Runs every variant of the scenario (`phalanx.simulate.scenario` has the format) in its own process
on a cluster built in process from the scenario's cluster config, in virtual time; progress goes to
stderr (simulated time, jobs, events/s, ETA, at most once a second per variant), the report's path
to stdout. The output directory (`-o`, default `./simulation-<scenario name>`) gets report.html
(self-contained: plots embedded), summary.json / summary.csv, plots/*.png and, per variant, its
result.json, jobs.csv, samples.csv and events.jsonl. A bad scenario is an error naming the file and
the field (exit 1) before anything runs.
"""

from __future__ import annotations

import os
import sys

import click


@click.command("simulate")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out_dir", default=None, metavar="DIR",
              help="where the report and data go (default: ./simulation-<scenario name>)")
@click.option("--seed", type=int, default=None, help="the seed (default: the scenario's)")
@click.option("--parallel", type=click.IntRange(min=1), default=None,
              help="variants run at once, each in its own process (default: the number of CPUs)")
@click.option("--ray-address", default=None, metavar="ADDRESS",
              help='run the variants on a Ray cluster ("auto", "host:6379", "local"); needs the ray extra')
@click.option("--quiet", "-q", is_flag=True, help="no progress; print only where the report is")
def simulate_cmd(scenario, out_dir, seed, parallel, ray_address, quiet) -> None:
    """Run a scenario (cluster, workload stream, failures, variants) in virtual time and report."""
    from phalanx.machinery.strictyaml import ConfigFileError
    from phalanx.simulate.run import simulate
    from phalanx.simulate.scenario import load_scenario

    try:
        name = load_scenario(scenario).name
    except ConfigFileError as e:
        click.echo(f"ERROR: invalid scenario:\n{e}", err=True)
        sys.exit(1)
    out_dir = out_dir or f"simulation-{name}"
    try:
        report = simulate(scenario, out_dir, seed=seed, parallel=parallel, quiet=quiet, ray_address=ray_address)
    except ConfigFileError as e:
        click.echo(f"ERROR: invalid scenario:\n{e}", err=True)
        sys.exit(1)
    except (RuntimeError, OSError) as e:
        click.echo(f"ERROR: simulation failed: {e}", err=True)
        sys.exit(1)
    if not quiet:
        click.echo(f"report: {os.path.relpath(report)}", err=True)
    click.echo(report)
