"""The outputs of `phalanx simulate`: per-variant JSON and CSV, and one self-contained HTML report.

    write_variant(result, "out/rack")          # out/rack/{result.json, jobs.csv, samples.csv, events.jsonl}
    write_report(scenario, ["out/rack", "out/no-constraint"], "out")   # out/report.html, summary.json/.csv

`result.json` holds the run's metadata (scenario, variant, seed, Kubernetes and phalanx versions, wall
time, simulated/wall ratio, peak RSS), the summary, every sample and every job. `jobs.csv` and
`samples.csv` are the same rows for a spreadsheet; `events.jsonl` is the event log, one JSON array
per line (`[t, "bind", pod, node]`), what the determinism test compares.

The HTML report needs nothing beside it (plots are embedded PNGs, no scripts, no CDN): the summary
table with every variant side by side and, from the second variant on, its change against the first,
changes that matter highlighted (> 10 %, or from 0, on the headline metrics: green better, red
worse); the plots
with the variants overlaid; how each run went; the scenario as written and each variant's
configuration.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import os
from typing import Any, Iterable

import yaml

from .engine import RunResult
from .scenario import Scenario

SIGNIFICANT = 0.10  # a relative change that gets highlighted
# (key, label, kind, higher_is_better); kind: duration | percent | count | ratio
METRICS: list[tuple[str, str, str, bool | None]] = [
    ("jobs_submitted", "jobs submitted", "count", None),
    ("jobs_completed", "jobs completed", "count", True),
    ("jobs_never_started", "jobs never started", "count", False),
    ("queueing_delay_p50", "queueing delay p50", "duration", False),
    ("queueing_delay_p90", "queueing delay p90", "duration", False),
    ("queueing_delay_p99", "queueing delay p99", "duration", False),
    ("gang_wait_p90", "gang wait p90", "duration", False),
    ("jct_p50", "JCT p50", "duration", False),
    ("jct_p90", "JCT p90", "duration", False),
    ("jct_p99", "JCT p99", "duration", False),
    ("gpu_allocation_mean", "GPU allocation (mean)", "percent", True),
    ("gpu_allocation_max", "GPU allocation (max)", "percent", True),
    ("cpu_allocation_mean", "CPU allocation (mean)", "percent", True),
    ("pending_gangs_mean", "pending gangs (mean)", "ratio", False),
    ("fragmentation_mean", "fragmentation (mean)", "percent", False),
    ("makespan", "makespan", "duration", False),
    ("preemptions", "preemptions", "count", False),
    ("evictions", "evictions", "count", False),
]
HEADLINE = {"jct_p90", "queueing_delay_p90", "gpu_allocation_mean", "jobs_completed", "makespan",
            "jobs_never_started", "pending_gangs_mean"}


# -- files of one variant -------------------------------------------------------------------------

def write_variant(result: RunResult, directory: str) -> str:
    """Write one run's files; returns the path of its result.json."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "result.json")
    doc = {"meta": result.meta(), "summary": result.summary, "samples": result.samples, "jobs": result.jobs}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=_json_default)
    _write_csv(os.path.join(directory, "jobs.csv"), result.jobs)
    _write_csv(os.path.join(directory, "samples.csv"), result.samples)
    with open(os.path.join(directory, "events.jsonl"), "w", encoding="utf-8") as f:
        for event in result.events:
            f.write(json.dumps(event, default=_json_default) + "\n")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


def load_variant(directory: str) -> dict[str, Any]:
    with open(os.path.join(directory, "result.json"), encoding="utf-8") as f:
        return dict(json.load(f))


# -- comparison -----------------------------------------------------------------------------------

def change(base: float | None, value: float | None) -> float | None:
    """The relative change from `base` to `value` (None when either is missing or base is 0)."""
    if base is None or value is None or base == 0:
        return None
    return (value - base) / abs(base)


def comparison(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per metric: each variant's value and, against the first variant, its change and
    whether it matters (`better` / `worse` when over SIGNIFICANT on a metric with a direction)."""
    rows = []
    for key, label, kind, higher_better in METRICS:
        values = [r["summary"].get(key) for r in results]
        row: dict[str, Any] = {"metric": key, "label": label, "kind": kind, "values": values, "changes": []}
        for v in values[1:]:
            row["changes"].append({**_judge(values[0], v, higher_better), "headline": key in HEADLINE})
        rows.append(row)
    return rows


def _judge(base: float | None, value: float | None, higher_better: bool | None) -> dict[str, Any]:
    """The change from `base` to `value`, its text and whether it matters: relative over
    SIGNIFICANT, or anything at all from a base of 0 (no queueing at all, then some)."""
    c = change(base, value)
    if c is not None:
        text = f"{100 * c:+.1f} %"
        significant = abs(c) > SIGNIFICANT
    elif base == 0 and value:
        text, significant = "from 0", True
        c = None
    else:
        return {"change": None, "text": "–", "verdict": None}
    direction = (c if c is not None else value) or 0
    verdict = None
    if significant and higher_better is not None:
        verdict = "better" if (direction > 0) == higher_better else "worse"
    return {"change": c, "text": text, "verdict": verdict}


def write_summary(results: list[dict[str, Any]], directory: str) -> None:
    """summary.json (every variant's metadata and summary, and the comparison) and summary.csv."""
    doc = {"variants": [{"meta": r["meta"], "summary": r["summary"]} for r in results],
           "comparison": comparison(results) if len(results) > 1 else []}
    with open(os.path.join(directory, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    _write_csv(os.path.join(directory, "summary.csv"),
               [{"variant": r["meta"]["variant"], **r["summary"]} for r in results])


# -- HTML -----------------------------------------------------------------------------------------

def fmt(value: Any, kind: str) -> str:
    if value is None:
        return "–"
    if kind == "duration":
        return human_duration(float(value))
    if kind == "percent":
        return f"{100 * value:.1f} %"
    if kind == "ratio":
        return f"{value:.2f}"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def human_duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} m {s:02d} s"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m:02d} m"


def _esc(text: Any) -> str:
    return html.escape(str(text))


STYLE = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 70em; color: #222; line-height: 1.4; }
h1 { margin-bottom: 0.2em; } .sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f3f3f3; }
td.better { background: #dff3e0; font-weight: 600; } td.worse { background: #f8dcdc; font-weight: 600; }
tr.headline td:first-child { font-weight: 600; }
.plots img { max-width: 100%; display: block; margin: 0.6em 0; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.note { color: #555; font-size: 0.9em; }
"""


def _summary_table(results: list[dict[str, Any]]) -> str:
    names = [r["meta"]["variant"] for r in results]
    head = "".join(f"<th>{_esc(n)}</th>" for n in names)
    head += "".join(f"<th>{_esc(n)} vs {_esc(names[0])}</th>" for n in names[1:])
    body = []
    for row in comparison(results):
        cells = "".join(f"<td>{fmt(v, row['kind'])}</td>" for v in row["values"])
        for c in row["changes"]:
            cls = f' class="{c["verdict"]}"' if c["verdict"] else ""
            cells += f"<td{cls}>{c['text']}</td>"
        tr = ' class="headline"' if row["metric"] in HEADLINE else ""
        body.append(f"<tr{tr}><td>{_esc(row['label'])}</td>{cells}</tr>")
    return f"<table><thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _highlights(results: list[dict[str, Any]]) -> str:
    if len(results) < 2:
        return ""
    items = []
    names = [r["meta"]["variant"] for r in results]
    for row in comparison(results):
        for name, c in zip(names[1:], row["changes"]):
            if c["verdict"] and c["headline"]:
                values = f"{fmt(row['values'][0], row['kind'])} → {fmt(row['values'][names.index(name)], row['kind'])}"
                items.append(f"<li><b>{_esc(name)}</b>: {_esc(row['label'])} {values} ({c['text']}, "
                             f"{c['verdict']} than {_esc(names[0])})</li>")
    if not items:
        return f"<p>No headline metric differs by more than {SIGNIFICANT:.0%} between the variants.</p>"
    return "<h2>What differs</h2><ul>" + "".join(items) + "</ul>"


def _runs_table(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        m = r["meta"]
        rows.append(f"<tr><td>{_esc(m['variant'])}</td><td>{m.get('nodes', '–')}</td>"
                    f"<td>{human_duration(m['simulatedSeconds'])}</td><td>{m['wallSeconds']:.1f} s</td>"
                    f"<td>{(m.get('speedup') or 0):,.0f}×</td><td>{m['peakRSSBytes'] / 2**20:,.0f} MiB</td>"
                    f"<td>{m.get('informerEvents', 0):,}</td></tr>")
    return ("<table><thead><tr><th>variant</th><th>nodes</th><th>simulated</th><th>wall time</th>"
            "<th>simulated / wall</th><th>peak RSS</th><th>events</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _variants_config(scenario: Scenario) -> str:
    parts = []
    for v in scenario.variants:
        config = {"cluster": v.cluster_source, "nodes": len(v.cluster.nodes),
                  "kubernetesVersion": v.cluster.kubernetes_version, "featureGates": v.cluster.feature_gates,
                  "overrides": v.overrides or None, "schedulerConfig": v.scheduler_config}
        text = yaml.safe_dump({k: val for k, val in config.items() if val is not None}, sort_keys=False)
        parts.append(f"<h3>{_esc(v.name)}</h3><pre>{_esc(text)}</pre>")
    return "".join(parts)


def render_html(scenario: Scenario, results: list[dict[str, Any]], figures: dict[str, bytes]) -> str:
    from .plots import PLOTS
    first = results[0]["meta"]
    title = f"phalanx simulate: {scenario.name}"
    header = (f"<h1>{_esc(title)}</h1><p class='sub'>phalanx {_esc(first['phalanxVersion'])} · Kubernetes "
              f"{_esc(', '.join(sorted({r['meta']['kubernetesVersion'] for r in results})))} · seed {first['seed']} · "
              f"{human_duration(scenario.duration)} simulated · {len(results)} variant(s)</p>")
    plots = "".join(f"<img alt='{_esc(PLOTS[name])}' src='data:image/png;base64,"
                    f"{base64.b64encode(png).decode()}'>" for name, png in figures.items())
    notes = "".join(f"<p class='note'>{_esc(n)}</p>" for n in scenario.notes)
    scenario_text = yaml.safe_dump(scenario.document, sort_keys=False)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
            f"<style>{STYLE}</style></head><body>{header}<h2>Summary</h2>{_summary_table(results)}"
            f"{_highlights(results)}<h2>Plots</h2><div class='plots'>{plots}</div>"
            f"<h2>Runs</h2>{_runs_table(results)}<h2>Configuration</h2>{notes}{_variants_config(scenario)}"
            f"<h3>Scenario ({_esc(scenario.source)})</h3><pre>{_esc(scenario_text)}</pre></body></html>")


def write_report(scenario: Scenario, variant_dirs: Iterable[str], directory: str) -> str:
    """summary.json, summary.csv, plots/*.png and report.html from the variants' result.json files;
    returns the report's path."""
    from .plots import all_plots
    results = [load_variant(d) for d in variant_dirs]
    write_summary(results, directory)
    figures = all_plots({r["meta"]["variant"]: (r["jobs"], r["samples"]) for r in results})
    os.makedirs(os.path.join(directory, "plots"), exist_ok=True)
    for name, png in figures.items():
        with open(os.path.join(directory, "plots", f"{name}.png"), "wb") as f:
            f.write(png)
    path = os.path.join(directory, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_html(scenario, results, figures))
    return path
