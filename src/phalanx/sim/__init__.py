"""Simulation and benchmarks: scheduler_perf-style workloads run against an in-process cluster.

    from phalanx.sim.workload import load_workload_file, select
    from phalanx.sim.harness import RunOptions, run_workload
    from phalanx.sim.report import summarize, format_table

    cases = load_workload_file("benchmarks/workloads/gang-scheduling.yaml")
    results = [run_workload(c, w, RunOptions()) for c, w in select(cases, ["smoke"])]
    print(format_table(summarize(results)))

- `workload`: the file format (test cases, op templates, `$param` workloads, labels);
- `template`: the Go-template subset object templates are written in;
- `ops`: the opcodes (`createNodes`, `createPods`, `createPodGroups`, `createAny`,
  `createResourceDriver`, `allocResourceClaims`, `churn`, `barrier`, ...);
- `harness`: one run: the cluster, the ops, waits that give up, measurements, checks;
- `metrics`: throughput sampling, attempt and extension-point timings, RSS, the store-only limit;
- `checks`: correctness of the cluster a run leaves behind;
- `report`: medians over runs, the table, JSON and the throughput plot.

`phalanx bench WORKLOAD.yaml` (`phalanx.cli.bench`) is the command line over these.
"""
