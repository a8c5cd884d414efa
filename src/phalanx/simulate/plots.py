"""The plots of a simulation report, one figure per question, every variant overlaid on it.

    figures = all_plots({"rack": (jobs, samples), "no-constraint": (jobs2, samples2)})
    figures["utilization"]          # PNG bytes (matplotlib, Agg: no display needed)

What each shows (time on the x axis in simulated hours):

- `overview`: GPU allocation and pending gangs over time, one above the other (the report's first);
- `utilization`: GPU allocation (solid) and CPU allocation (dashed) over time, in %;
- `pending`: gangs waiting to be scheduled over time;
- `jct_cdf`: the share of finished jobs whose completion time is at most x;
- `queueing_cdf`: the same for queueing delay (submission to running), jobs that started;
- `fragmentation`: the share of free GPUs stranded in domains too small for the next waiting gang.
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)

Rows = list[dict[str, Any]]
Runs = dict[str, tuple[Rows, Rows]]  # variant -> (job rows, samples)

PLOTS = {"overview": "GPU allocation and pending gangs",
         "utilization": "Allocation over time", "pending": "Pending gangs over time",
         "jct_cdf": "Job completion time (CDF)", "queueing_cdf": "Queueing delay (CDF)",
         "fragmentation": "GPU fragmentation over time"}
SIZE = (7.0, 3.4)
DPI = 90


def _hours(samples: Rows) -> list[float]:
    return [s["t"] / 3600.0 for s in samples]


def _duration_axis(values: list[float]) -> tuple[float, str]:
    """A divisor and unit that suit the largest value (seconds, minutes or hours)."""
    top = max(values, default=0.0)
    if top >= 3 * 3600:
        return 3600.0, "hours"
    if top >= 3 * 60:
        return 60.0, "minutes"
    return 1.0, "seconds"


def _finish(fig: Any, ax: Any, title: str, xlabel: str, ylabel: str, legend: bool) -> bytes:
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI)
    plt.close(fig)
    return out.getvalue()


def overview(runs: Runs) -> bytes:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(SIZE[0], SIZE[1] * 1.6), sharex=True)
    for i, (name, (_, samples)) in enumerate(runs.items()):
        top.plot(_hours(samples), [100 * s["gpu_allocation"] for s in samples], color=f"C{i}", label=name)
        bottom.step(_hours(samples), [s["pending_gangs"] for s in samples], where="post", color=f"C{i}", label=name)
    top.set_ylim(0, 100)
    top.set_ylabel("GPUs allocated (%)")
    top.grid(True, alpha=0.3)
    top.legend(fontsize=8, loc="lower right")
    top.set_title(PLOTS["overview"], fontsize=11)
    bottom.set_title("")
    return _finish(fig, bottom, "", "simulated time (hours)", "pending gangs", False)


def utilization(runs: Runs) -> bytes:
    fig, ax = plt.subplots(figsize=SIZE)
    for i, (name, (_, samples)) in enumerate(runs.items()):
        color = f"C{i}"
        ax.plot(_hours(samples), [100 * s["gpu_allocation"] for s in samples], color=color, label=f"{name} GPU")
        ax.plot(_hours(samples), [100 * s["cpu_allocation"] for s in samples], color=color, linestyle="--",
                alpha=0.7, label=f"{name} CPU")
    ax.set_ylim(0, 100)
    return _finish(fig, ax, PLOTS["utilization"], "simulated time (hours)", "allocated (%)", True)


def pending(runs: Runs) -> bytes:
    fig, ax = plt.subplots(figsize=SIZE)
    for i, (name, (_, samples)) in enumerate(runs.items()):
        ax.step(_hours(samples), [s["pending_gangs"] for s in samples], where="post", color=f"C{i}", label=name)
    return _finish(fig, ax, PLOTS["pending"], "simulated time (hours)", "pending gangs", True)


def _cdf(runs: Runs, metric: str, title: str) -> bytes:
    fig, ax = plt.subplots(figsize=SIZE)
    all_values = [r[metric] for jobs, _ in runs.values() for r in jobs if r.get(metric) is not None]
    scale, unit = _duration_axis(all_values)
    for i, (name, (jobs, _)) in enumerate(runs.items()):
        values = sorted(r[metric] / scale for r in jobs if r.get(metric) is not None)
        if values:
            n = len(values)
            ax.step(values, [(k + 1) / n for k in range(n)], where="post", color=f"C{i}", label=f"{name} ({n})")
    ax.set_ylim(0, 1.02)
    return _finish(fig, ax, title, f"{metric.replace('_', ' ')} ({unit})", "share of jobs", True)


def jct_cdf(runs: Runs) -> bytes:
    return _cdf(runs, "jct", PLOTS["jct_cdf"])


def queueing_cdf(runs: Runs) -> bytes:
    return _cdf(runs, "queueing_delay", PLOTS["queueing_cdf"])


def fragmentation(runs: Runs) -> bytes:
    fig, ax = plt.subplots(figsize=SIZE)
    for i, (name, (_, samples)) in enumerate(runs.items()):
        points = [(s["t"] / 3600.0, 100 * s["fragmentation"]) for s in samples if s.get("fragmentation") is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], ".", markersize=3, color=f"C{i}", label=name)
    ax.set_ylim(0, 100)
    return _finish(fig, ax, PLOTS["fragmentation"], "simulated time (hours)", "stranded free GPUs (%)", True)


def all_plots(runs: Runs) -> dict[str, bytes]:
    """Every plot of the report, by name (the keys of PLOTS), as PNG."""
    makers = {"overview": overview, "utilization": utilization, "pending": pending, "jct_cdf": jct_cdf, "queueing_cdf": queueing_cdf,
              "fragmentation": fragmentation}
    return {name: make(runs) for name, make in makers.items()}
