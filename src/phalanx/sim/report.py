"""Benchmark reports: JSON for machines, a table for people, a PNG of throughput over time.

    summary = summarize(results)        # results: run_workload() dicts, several runs per workload
    print(format_table(summary))
    write_json("out.json", summary, results)
    plot_throughput("out.png", results) # None, or why not (matplotlib missing: `pip install .[bench]`)

`summarize` groups runs by `TestCase/Workload` and takes the median of each figure over the
runs (with min and max beside it): SchedulingThroughput Average and Perc50/90/95/99, pod-group and
pod attempt durations, the slowest extension points, peak RSS, wall time, the store-only limit
and the ratio of throughput to it. A workload any of whose runs did not complete says so; its
figures are still shown for the runs that measured something.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any, Callable, Iterable

MiB = 1024 * 1024


def _median(values: Iterable[float | None]) -> dict[str, float] | None:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "runs": len(vals)}


def _m(result: dict) -> dict:
    ms = result.get("measurements") or []
    return ms[0] if ms else {}


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _measured(*path: str) -> Callable[[list[dict]], Any]:
    """The median over the runs of a figure of the measured op."""
    return lambda runs: _median(_get(_m(r), *path) for r in runs)


def _per_run(*path: str) -> Callable[[list[dict]], Any]:
    """The median over the runs of a figure of the whole run."""
    return lambda runs: _median(_get(r, *path) for r in runs)


def _buckets(path: tuple[str, ...], buckets: tuple[str, ...]) -> Callable[[list[dict]], Any]:
    """The median of each bucket (Average, Perc50, ...) of a distribution of the measured op."""
    return lambda runs: {b: _median(_get(_m(r), *path, b) for r in runs) for b in buckets}


def _extension_points(runs: list[dict]) -> dict[str, Any]:
    points: dict[str, list[float]] = {}
    for r in runs:
        for name, d in (_m(r).get("extensionPoints") or {}).items():
            points.setdefault(name, []).append(d.get("Average"))
    return {n: _median(v) for n, v in points.items()}


# What a workload's summary holds beside its status, in this order.
_SUMMARY_FIGURES: list[tuple[str, Callable[[list[dict]], Any]]] = [
    ("SchedulingThroughput", _buckets(("SchedulingThroughput",), ("Average", "Perc50", "Perc90", "Perc95", "Perc99"))),
    ("overallThroughput", _measured("overallThroughput")),
    ("cpuThroughput", _measured("cpuThroughput")),
    ("podCreationSeconds", _measured("podCreationSeconds")),
    ("gcSeconds", _measured("garbageCollector", "seconds")),
    ("cpuSeconds", _measured("cpuSeconds")),
    ("podGroupAttemptMs", _buckets(("podGroupAttempts", "scheduled"), ("Average", "Perc50", "Perc90", "Perc99"))),
    ("podAttemptMs", _buckets(("podAttempts", "scheduled"), ("Average", "Perc50", "Perc99"))),
    ("extensionPointAvgMs", _extension_points),
    ("measuredWallSeconds", _measured("wallSeconds")),
    ("wallSeconds", _per_run("wallSeconds")),
    ("peakRSSBytes", _per_run("peakRSSBytes")),
    ("storePodsPerSecond", _per_run("storeWriteLimit", "podsPerSecond")),
    ("ratioToStoreLimit", _per_run("ratioToStoreLimit")),
    ("sqlitePodsPerSecond", _per_run("sqliteWriteLimit", "podsPerSecond")),
    ("ratioToSQLiteLimit", _per_run("ratioToSQLiteLimit")),
    ("checksFailed", lambda runs: sorted({c["name"] for r in runs for c in r.get("checks") or [] if not c["ok"]})),
    ("incomplete", lambda runs: [i for r in runs for i in r.get("incomplete") or []][:3]),
    ("errors", lambda runs: [r["error"] for r in runs if r.get("error")][:3]),
    ("unavailablePlugins", lambda runs: runs[0].get("unavailablePlugins") or []),
    ("ignoredFeatureGates", lambda runs: runs[0].get("ignoredFeatureGates") or []),
]


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(f"{r['testCase']}/{r['workload']}", []).append(r)
    out: dict[str, Any] = {}
    for key, runs in groups.items():
        statuses = [r["status"] for r in runs]
        s: dict[str, Any] = {"status": _overall_status(statuses), "runs": len(runs), "statuses": statuses}
        s.update((name, figure(runs)) for name, figure in _SUMMARY_FIGURES)
        threshold = _threshold(runs)
        if threshold is not None:
            s["threshold"] = threshold
        out[key] = s
    return out


def _overall_status(statuses: list[str]) -> str:
    if all(s == "completed" for s in statuses):
        return "completed"
    return "error" if any(s == "error" for s in statuses) else "did not complete"


def _threshold(runs: list[dict]) -> dict[str, Any] | None:
    """The workload's threshold with the median measured figure and whether it is met."""
    thr = [t for r in runs if (t := r.get("threshold"))]
    if not thr:
        return None
    measured = _median(t.get("measured") for t in thr)
    t0 = thr[0]
    met = None
    if measured is not None:
        met = measured["median"] <= t0["threshold"] if t0["expectLower"] else measured["median"] >= t0["threshold"]
    return {**{k: t0[k] for k in ("metric", "dataBucket", "threshold", "expectLower")},
            "measured": measured, "met": met}


def _fmt(d: dict | None, fmt: str = "{:.0f}", spread: bool = True) -> str:
    if not d:
        return "-"
    text = fmt.format(d["median"])
    if spread and d["runs"] > 1:
        text += f" ({fmt.format(d['min'])}-{fmt.format(d['max'])})"
    return text


def format_table(summary: dict[str, Any]) -> str:
    """One block per workload: status, throughput, attempts, slowest extension points, memory."""
    lines = []
    for key, s in summary.items():
        lines += _status_lines(key, s)
        lines += _speed_lines(s)
        lines += _cost_lines(s)
        lines += _verdict_lines(s)
        lines.append("")
    return "\n".join(lines)


def _status_lines(key: str, s: dict[str, Any]) -> list[str]:
    lines = [f"{key}  [{s['status'].upper()}, {s['runs']} run(s); median (min-max)]"]
    if s["status"] != "completed":
        for inc in s["incomplete"]:
            lines.append(f"  did not complete: {inc['op']}: waiting for {inc['waitingFor']}: {inc['reason']}"
                         + (f" (progress {inc['progress']})" if "progress" in inc else ""))
        for err in s["errors"]:
            lines.append(f"  error: {err}")
    return lines


def _speed_lines(s: dict[str, Any]) -> list[str]:
    """Throughput, attempt durations and the slowest extension points."""
    st = s["SchedulingThroughput"]
    lines = [f"  SchedulingThroughput pods/s  avg {_fmt(st['Average'])}  p50 {_fmt(st['Perc50'], spread=False)}"
             f"  p90 {_fmt(st['Perc90'], spread=False)}  p99 {_fmt(st['Perc99'], spread=False)}"
             f"  (overall {_fmt(s['overallThroughput'], spread=False)},"
             f" per CPU second {_fmt(s['cpuThroughput'], spread=False)})"]
    pg = s["podGroupAttemptMs"]
    if pg["Average"]:
        lines.append(f"  podgroup attempt ms (scheduled)  avg {_fmt(pg['Average'], '{:.2f}')}"
                     f"  p50 {_fmt(pg['Perc50'], '{:.2f}', False)}  p90 {_fmt(pg['Perc90'], '{:.2f}', False)}"
                     f"  p99 {_fmt(pg['Perc99'], '{:.2f}', False)}")
    pa = s["podAttemptMs"]
    if pa["Average"]:
        lines.append(f"  pod attempt ms (scheduled)  avg {_fmt(pa['Average'], '{:.2f}')}"
                     f"  p50 {_fmt(pa['Perc50'], '{:.2f}', False)}  p99 {_fmt(pa['Perc99'], '{:.2f}', False)}")
    eps = sorted(((n, d) for n, d in s["extensionPointAvgMs"].items() if d), key=lambda kv: -kv[1]["median"])
    if eps:
        lines.append("  extension points avg ms  " + "  ".join(f"{n} {d['median']:.3f}" for n, d in eps[:8]))
    return lines


def _cost_lines(s: dict[str, Any]) -> list[str]:
    """Memory, wall and CPU time, and the store-only limits."""
    rss = s["peakRSSBytes"]
    line = f"  peak RSS {rss['median'] / MiB:.0f} MiB" if rss else "  peak RSS -"
    line += (f"  measured wall {_fmt(s['measuredWallSeconds'], '{:.1f}')} s"
             f"  run wall {_fmt(s['wallSeconds'], '{:.1f}')} s")
    if s["podCreationSeconds"]:
        line += f"  (measured pods created beforehand in {_fmt(s['podCreationSeconds'], '{:.1f}', False)} s)"
    lines = [line]
    if s["gcSeconds"] and s["cpuSeconds"]:
        lines.append(f"  measured CPU {_fmt(s['cpuSeconds'], '{:.1f}', False)} s, of which garbage collector "
                     f"{_fmt(s['gcSeconds'], '{:.1f}', False)} s")
    if s["storePodsPerSecond"]:
        lines.append(f"  store-only limit {_fmt(s['storePodsPerSecond'], spread=False)} pods/s"
                     f"  throughput/limit {_fmt(s['ratioToStoreLimit'], '{:.3f}', False)}")
    if s.get("sqlitePodsPerSecond"):
        lines.append(f"  store-only limit on SQLite (a cluster's default storage) "
                     f"{_fmt(s['sqlitePodsPerSecond'], spread=False)} pods/s"
                     f"  throughput/limit {_fmt(s['ratioToSQLiteLimit'], '{:.3f}', False)}")
    return lines


def _verdict_lines(s: dict[str, Any]) -> list[str]:
    """The threshold's verdict, failed checks, and what the build could not run."""
    lines = []
    if s.get("threshold"):
        t = s["threshold"]
        op = "<=" if t["expectLower"] else ">="
        measured = t["measured"]["median"] if t["measured"] else None
        verdict = {True: "MET", False: "NOT MET", None: "not measured"}[t["met"]]
        lines.append(f"  threshold {t['metric']} {t['dataBucket']} {op} {t['threshold']:g}: "
                     f"{'-' if measured is None else f'{measured:.4g}'} -> {verdict}")
    if s["checksFailed"]:
        lines.append(f"  CHECKS FAILED: {', '.join(s['checksFailed'])}")
    if s["unavailablePlugins"]:
        lines.append(f"  plugins not in this build: {', '.join(s['unavailablePlugins'])}")
    if s["ignoredFeatureGates"]:
        lines.append(f"  feature gates ignored (unknown to phalanx): {', '.join(s['ignoredFeatureGates'])}")
    return lines


def write_json(path: str, summary: dict[str, Any], results: list[dict[str, Any]], extra: dict | None = None) -> None:
    with open(path, "w") as f:
        json.dump({"summary": summary, "runs": results, **(extra or {})}, f, indent=1, default=str)


def plot_throughput(path: str, results: list[dict[str, Any]]) -> str | None:
    """Pods/s over time, one line per run, one panel per workload. Returns None when written, else
    why it was skipped."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install 'phalanx[bench]'); no plot written"
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(f"{r['testCase']}/{r['workload']}", []).append(r)
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, 3.2 * len(groups)), squeeze=False)
    for ax, (key, runs) in zip(axes[:, 0], groups.items()):
        for i, r in enumerate(runs):
            tl = _m(r).get("timeline") or []
            pts = [(t, rate) for t, _, rate in tl if rate > 0]
            avg = _get(_m(r), "SchedulingThroughput", "Average")
            label = f"run {i + 1}" + (f" (avg {avg:.0f})" if avg else "") + \
                ("" if r["status"] == "completed" else f" [{r['status']}]")
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label)
            else:
                ax.plot([], [], label=label + " (no samples)")
        ax.set_title(key)
        ax.set_xlabel("seconds since the measured op started")
        ax.set_ylabel("pods scheduled / s")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return None
