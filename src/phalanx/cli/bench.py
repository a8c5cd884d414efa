"""`phalanx bench WORKLOAD.yaml`: run scheduler_perf-style workloads in-process and report.

    phalanx bench benchmarks/workloads/scheduling-basic.yaml --workload 5000Nodes_10000Pods --runs 3 \
        --json out.json --plot out.png --profile out.prof

Workloads are chosen with `--workload` (repeatable: `Case/Workload`, a workload name, or a case
name) and/or `--label` (upstream's label filter, e.g. `performance,-short`); with neither, every
workload labelled `performance` runs. `--list` shows what the file holds. Each run builds a fresh
in-process cluster (`phalanx.sim.harness`) in a forked process of its own (`--in-process`: in
this one), so runs do not inherit each other's heap and peak RSS is per run; the table goes to
stdout, progress to stderr. The exit code is 0 when every run completed and passed its correctness
checks, 1 otherwise (thresholds are reported, not enforced). `--profile` profiles only the measured ops (cProfile) and prints the top
costs; profiled runs are slower, so read their timings as relative.

`--kubernetes-version v1.37.1` (or `1.37`) runs the workloads on a Kubernetes 1.37 cluster (default:
v1.36.4, the release the workload files are written for): 1.37's gates and API, GangScheduling and
WorkloadAwarePreemption mapped to GenericWorkload, the templates' v1alpha2 Workloads and PodGroups
created as v1beta1. The JSON records the version of every run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import click

CLUSTER_SHAPES = ("deployment", "indexed-job", "jobset", "basic", "gang", "fanout")  # sim.clustershapes.SHAPES


def _kubernetes_version(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The full version (`v1.37.1`) of what the user typed (`1.37`, `v1.37`, `v1.37.1`)."""
    from ..machinery.releases import UnsupportedVersion, parse_version
    try:
        return parse_version(value)[1]
    except UnsupportedVersion as e:
        raise click.BadParameter(str(e)) from None


def _top_costs(profile_path: str, limit: int = 25) -> str:
    import io
    import pstats
    buf = io.StringIO()
    stats = pstats.Stats(profile_path, stream=buf)
    stats.sort_stats("tottime").print_stats(limit)
    return buf.getvalue()


@click.command("bench")
@click.argument("workload_file", type=click.Path(exists=True, dir_okay=False), required=False)
@click.option("--cluster", "cluster_shape", type=click.Choice(list(CLUSTER_SHAPES)), default=None,
              help="instead of WORKLOAD_FILE: an end-to-end run on a real cluster (phalanx create cluster, "
                   "kubectl apply, the HTTP API) of this shape")
@click.option("--pods", default=None, type=click.IntRange(1),
              help="--cluster: pods of the shape (replicas, completions, gangs x size) [default: deployment 2000, "
                   "indexed-job 10000, jobset 4096, basic 10000, gang 3000, fanout 1000]")
@click.option("--parallelism", default=None, type=click.IntRange(1),
              help="--cluster indexed-job: the Job's parallelism [default: 5000]")
@click.option("--gangs", default=None, type=click.IntRange(1), help="--cluster jobset: PodGroups [default: 512]")
@click.option("--nodes", default=None, type=click.IntRange(1),
              help="--cluster basic, gang, fanout without --config: nodes of the generated cluster [default: 5000; "
                   "fanout 20]")
@click.option("--watchers", default=200, show_default=True, type=click.IntRange(0),
              help="--cluster fanout: HTTP watches of the pods")
@click.option("--run-for", default="10s", show_default=True, help="--cluster indexed-job: how long each pod runs")
@click.option("--config", "cluster_config", default=None, type=click.Path(exists=True, dir_okay=False),
              help="--cluster: the cluster config (e.g. examples/clusters/phalanx-gpu-topology.yaml; basic, gang "
                   "and fanout generate their own nodes when none is given)")
@click.option("--external-scheduler", is_flag=True,
              help="--cluster: turn the built-in scheduler off and run `phalanx scheduler --kubeconfig` as its "
                   "own process (a phalanx.dev/v1alpha1 --config, or none)")
@click.option("--compare", "compare_dir", default="benchmarks/workloads", show_default=True, metavar="DIR",
              help="--cluster: after each run, the shape's scheduler-alone workload from this directory (empty: skip)")
@click.option("--profile-out", "profile_out_raw", default=None, metavar="OUT.raw",
              help="--cluster: keep py-spy's collapsed stacks of the control plane (the last run's)")
@click.option("--workload", "-w", "names", multiple=True, metavar="NAME",
              help="Case/Workload, a workload name or a case name (repeatable)")
@click.option("--label", "label_filter", default=None, metavar="FILTER",
              help="label filter, e.g. performance,-short (default: performance when no --workload)")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1), help="runs of each workload")
@click.option("--json", "json_out", default=None, metavar="OUT", help="write the summary and every run as JSON")
@click.option("--plot", "plot_out", default=None, metavar="OUT.png", help="plot pods/s over time per run")
@click.option("--profile", "profile_out", default=None, metavar="OUT.prof",
              help="cProfile the measured ops of every run into this file")
@click.option("--timeout", default=1800.0, show_default=True, type=float, metavar="SECONDS",
              help="longest wait of any op")
@click.option("--stall-timeout", default=60.0, show_default=True, type=float, metavar="SECONDS",
              help="give up on a wait when nothing progressed for this long")
@click.option("--kubelets/--no-kubelets", default=None,
              help="run the simulated kubelets (default: as the test case says; scheduler_perf runs none)")
@click.option("--overlap-create", is_flag=True,
              help="create the measured pods while the scheduler runs (default: create them first, "
                   "then release the scheduler, so creation does not share its CPU)")
@click.option("--no-store-limit", is_flag=True, help="skip the store-only write measurement")
@click.option("--in-process", is_flag=True,
              help="run every run in this process (default: each run in a forked process of its own, so "
                   "runs do not inherit each other's heap and peak RSS is per run)")
@click.option("--kubernetes-version", default="v1.36.4", show_default=True, metavar="VERSION",
              callback=_kubernetes_version,
              help="the cluster's Kubernetes version: v1.36.x or v1.37.x (1.36, 1.37 accepted); on 1.37 "
                   "GangScheduling and WorkloadAwarePreemption become GenericWorkload and v1alpha2 "
                   "Workloads/PodGroups are created as v1beta1")
@click.option("--list", "list_only", is_flag=True, help="list the workloads and exit")
@click.option("--quiet", "-q", is_flag=True, help="no progress lines on stderr")
def bench(workload_file, cluster_shape, pods, parallelism, gangs, nodes, watchers, run_for, cluster_config,
          external_scheduler, compare_dir, profile_out_raw, names, label_filter, runs, json_out, plot_out, profile_out,
          timeout, stall_timeout, kubelets, overlap_create, no_store_limit, in_process, kubernetes_version, list_only,
          quiet) -> None:
    """Run scheduler_perf-style workloads against an in-process cluster and report
    SchedulingThroughput, attempt durations, extension points, peak RSS and wall time; or, with
    --cluster, time a shape end to end on a real cluster as a user runs it."""
    from ..sim.harness import RunOptions, stderr_progress
    from ..sim.report import summarize

    if cluster_shape is not None:
        from ..sim.clusterbench import RunSpec
        from ..sim.clustershapes import ShapeParams
        shape = ShapeParams(cluster_shape, pods, parallelism, gangs, run_for, watchers=watchers, nodes=nodes)
        compare = Path(compare_dir) if compare_dir and Path(compare_dir).is_dir() else None
        spec = RunSpec(shape, cluster_config, f"kindest/node:{kubernetes_version}", timeout, profile_out_raw,
                       external_scheduler=external_scheduler, compare=compare)
        sys.exit(_cluster_bench(spec, runs, json_out))
    if workload_file is None:
        raise click.UsageError("give a WORKLOAD_FILE, or --cluster SHAPE")

    chosen = _chosen_workloads(workload_file, names, label_filter, list_only)
    if chosen is None:
        return
    progress = None if quiet else stderr_progress

    def options_for(run_index: int) -> RunOptions:
        return RunOptions(timeout=timeout, stall=stall_timeout, kubelets=kubelets, profiler=None,
                          store_limit=not no_store_limit, overlap_create=overlap_create, seed=run_index,
                          kubernetes_version=kubernetes_version, progress=progress)

    results = _run_all(chosen, runs, options_for, in_process, profile_out)
    _report(summarize(results), results, json_out, plot_out, profile_out, kubernetes_version)
    ok = all(r["status"] == "completed" and all(c["ok"] for c in r.get("checks") or []) for r in results)
    sys.exit(0 if ok else 1)


def _chosen_workloads(workload_file: str, names: tuple[str, ...], label_filter: str | None,
                      list_only: bool) -> list[tuple[Any, Any]] | None:
    """The (test case, workload) pairs to run; None after `--list` printed them. Exits 1 on a bad
    file or when nothing matches."""
    from ..sim.workload import WorkloadError, load_workload_file, select

    try:
        cases = load_workload_file(workload_file)
        if list_only:
            for tc in cases:
                for w in tc.workloads:
                    labels = ",".join(tc.labels + w.labels)
                    click.echo(f"{tc.name}/{w.name}" + (f"  [{labels}]" if labels else ""))
            return None
        chosen = select(cases, names, label_filter)
    except WorkloadError as e:
        click.echo(f"ERROR: {e}", err=True)
        sys.exit(1)
    if not chosen:
        click.echo("ERROR: no workload matches (see --list)", err=True)
        sys.exit(1)
    return chosen


def _run_all(chosen: list[tuple[Any, Any]], runs: int, options_for: Callable[[int], Any], in_process: bool,
             profile_out: str | None) -> list[dict[str, Any]]:
    """Every run of every chosen workload, in order; with `profile_out`, their profiles merged there."""
    import os
    import tempfile

    from ..sim.harness import run_workload, run_workload_isolated

    profiler, profile_parts = None, []
    if profile_out and in_process:
        import cProfile
        profiler = cProfile.Profile()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="phalanx-bench-") as tmp:
        for tc, w in chosen:
            for i in range(runs):
                options = options_for(i)
                progress = options.progress
                if progress:
                    progress(f"== {tc.name}/{w.name} run {i + 1}/{runs}")
                options.profiler = profiler
                if in_process:
                    r = run_workload(tc, w, options)
                else:
                    if profile_out:
                        options.profile_path = os.path.join(tmp, f"run-{len(results)}.prof")
                    r = run_workload_isolated(tc, w, options)
                    if options.profile_path and os.path.exists(options.profile_path):
                        profile_parts.append(options.profile_path)
                r["run"] = i + 1
                if profile_out:
                    r["profiled"] = True
                results.append(r)
                if progress:
                    progress(f"== {tc.name}/{w.name} run {i + 1}: {r['status']}"
                             + (f" ({r['error']})" if r.get("error") else ""))
        if profile_out:
            _write_profile(profile_out, profiler, profile_parts)
    return results


def _write_profile(profile_out: str, profiler: Any, profile_parts: list[str]) -> None:
    import pstats
    if profiler is not None:
        profiler.dump_stats(profile_out)
    elif profile_parts:
        pstats.Stats(*profile_parts).dump_stats(profile_out)


def _report(summary: dict[str, Any], results: list[dict[str, Any]], json_out: str | None, plot_out: str | None,
            profile_out: str | None, kubernetes_version: str) -> None:
    """The table on stdout; the profile's top costs, the plot and the JSON as asked for."""
    import os

    from ..sim.report import format_table, plot_throughput, write_json

    click.echo(f"Kubernetes {kubernetes_version}")
    for gates in sorted({tuple(sorted(r.get("mappedFeatureGates", {}).items())) for r in results} - {()}):
        click.echo("  feature gates mapped: " + ", ".join(f"{old} -> {new}" for old, new in gates))
    click.echo(format_table(summary))
    extra: dict[str, Any] = {"kubernetesVersion": kubernetes_version}
    if profile_out and os.path.exists(profile_out):
        top = _top_costs(profile_out)
        extra["profileTop"] = top
        click.echo(f"profile of the measured ops written to {profile_out}; top costs (tottime):", err=True)
        click.echo(top, err=True)
    if plot_out:
        why = plot_throughput(plot_out, results)
        click.echo(f"plot: {why}" if why else f"plot written to {plot_out}", err=True)
    if json_out:
        write_json(json_out, summary, results, extra)
        click.echo(f"JSON written to {json_out}", err=True)


def _cluster_bench(spec: Any, runs: int, json_out: str | None) -> int:
    """--cluster: `runs` end-to-end runs of one shape, each on a fresh cluster; one JSON line per
    run on stdout (and all of them in `json_out`), the medians on stderr."""
    import statistics

    from ..sim.clusterbench import ShapeTooLarge, run_once

    results = []
    for _ in range(runs):
        try:
            result = run_once(spec)
        except (ShapeTooLarge, ValueError) as e:
            raise click.UsageError(str(e)) from None
        results.append(result)
        click.echo(json.dumps(result))
        for c in result.get("checks") or []:
            if not c["ok"]:
                click.echo(f"check {c['name']} FAILED: {c['detail']}", err=True)
    for key in ("podsPerSecondEndToEnd", "podsPerSecondToBound", "podsPerSecondSchedulerProcess",
                "ratioToSchedulerAlone", "createClusterSeconds"):
        values = [r[key] for r in results if key in r]
        if values:
            click.echo(f"{key}: median {statistics.median(values)} of {len(values)} run(s)", err=True)
    if json_out:
        Path(json_out).write_text(json.dumps({"runs": results}, indent=2))
    ok = all(r["completed"] and all(c["ok"] for c in r.get("checks") or []) for r in results)
    return 0 if ok else 1
