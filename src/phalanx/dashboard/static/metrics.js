// phalanx dashboard, the "Metrics" view: the scheduler's metrics as the API server's /metrics
// serves them (phalanx: every component's), polled only while this view is open. Two charts on a
// canvas: the scheduling queue's depths (scheduler_pending_pods by queue) and the attempt
// durations (50th and 99th percentiles of the attempts between two scrapes, pods and PodGroups);
// a table beside them holds the latest numbers.
"use strict";

const METRICS_POLL_MS = 5000;
const QUEUE_COLOURS = { active: "#5fd38d", backoff: "#e8a33d", unschedulable: "#ff7b72", gated: "#8b96a3" };
let metricsTimer = null;
dash.metrics = null;

async function pollMetrics() {
  try {
    const r = await fetch("/api/metrics", { credentials: "same-origin" });
    dash.metrics = await r.json();
  } catch (e) {
    dash.metrics = { available: false, error: String(e), points: [] };
  }
  renderMetrics();
}

dash.metricsView = function (open) {
  if (metricsTimer) { clearInterval(metricsTimer); metricsTimer = null; }
  if (open) { pollMetrics(); metricsTimer = setInterval(pollMetrics, METRICS_POLL_MS); }
};

function fmt(v, unit) {
  if (v === null || v === undefined) return "—";
  if (unit === "s") return v < 1 ? `${(v * 1000).toFixed(1)} ms` : `${v.toFixed(2)} s`;
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

function lineChart(ctx, box, series, title, unit) {
  const { x, y, w, h } = box;
  ctx.strokeStyle = "#2a313b"; ctx.strokeRect(x + 0.5, y + 0.5, w, h);
  ctx.fillStyle = "#8b96a3"; ctx.font = "11px system-ui"; ctx.textBaseline = "top";
  ctx.fillText(title, x + 4, y + 3);
  const values = series.flatMap(s => s.values.filter(v => v !== null));
  const top = Math.max(1e-9, ...values), n = Math.max(2, ...series.map(s => s.values.length));
  ctx.fillText(fmt(top, unit), x + w - 60, y + 3);
  const px = i => x + 4 + (w - 8) * i / (n - 1), py = v => y + h - 4 - (h - 24) * v / top;
  series.forEach((s, k) => {
    ctx.strokeStyle = s.colour; ctx.fillStyle = s.colour; ctx.lineWidth = 1.5; ctx.beginPath();
    let started = false;
    s.values.forEach((v, i) => {
      if (v === null) { started = false; return; }
      if (started) ctx.lineTo(px(i), py(v)); else ctx.moveTo(px(i), py(v));
      started = true;
      ctx.fillRect(px(i) - 1.5, py(v) - 1.5, 3, 3);
    });
    ctx.stroke();
    ctx.fillText(s.label, x + 8 + k * 110, y + 16);
  });
  ctx.lineWidth = 1;
}

function metricRows(last, sinceStart) {
  const rows = Object.entries(last.pending).map(([q, v]) => [`pending.${q}`, `pending pods (${q})`, fmt(v)]);
  for (const [r, v] of Object.entries(last.attempts)) rows.push([`attempts.${r}`, `pod attempts ${r}`, fmt(v)]);
  for (const [r, v] of Object.entries(last.groupAttempts)) rows.push([`groupAttempts.${r}`, `PodGroup attempts ${r}`, fmt(v)]);
  for (const [name, h] of [["podAttemptSeconds", "pod attempt"], ["groupAttemptSeconds", "PodGroup attempt"]]) {
    for (const q of ["p50", "p90", "p99"]) rows.push([`${name}.${q}`, `${h} ${q} since start`, fmt(sinceStart[name][q], "s")]);
  }
  rows.push(["preemptionAttempts", "preemption attempts", fmt(last.preemptionAttempts)]);
  return rows;
}

function renderMetrics() {
  const m = dash.metrics, note = document.getElementById("metrics-note");
  const canvas = document.getElementById("metrics-chart"), ctx = canvas.getContext("2d");
  const w = canvas.width = Math.max(300, canvas.clientWidth), h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const points = (m && m.points) || [];
  canvas.dataset.points = points.length;
  note.textContent = !m ? "scraping…" : m.error ? `cannot read /metrics: ${m.error}`
    : !m.available ? "no scheduler metrics at this API server's /metrics (the scheduler reports elsewhere)"
    : `${points.length} scrape(s), every ${m.interval}s while this view is open`;
  const table = document.querySelector("#metrics-table tbody");
  if (!points.length) { table.replaceChildren(); return; }
  const queues = [...new Set(points.flatMap(p => Object.keys(p.pending)))].sort();
  lineChart(ctx, { x: 0, y: 0, w: w - 1, h: h / 2 - 4 },
    queues.map(q => ({ label: q, colour: QUEUE_COLOURS[q] || "#4fc3f7", values: points.map(p => p.pending[q] ?? null) })),
    "scheduler_pending_pods by queue");
  lineChart(ctx, { x: 0, y: h / 2 + 4, w: w - 1, h: h / 2 - 5 }, [
    { label: "pod p50", colour: "#5fd38d", values: points.map(p => p.podAttemptSeconds.p50) },
    { label: "pod p99", colour: "#e8a33d", values: points.map(p => p.podAttemptSeconds.p99) },
    { label: "PodGroup p50", colour: "#4fc3f7", values: points.map(p => p.groupAttemptSeconds.p50) },
    { label: "PodGroup p99", colour: "#c792ea", values: points.map(p => p.groupAttemptSeconds.p99) },
  ], "scheduling attempt duration", "s");
  table.replaceChildren(...metricRows(points[points.length - 1], m.sinceStart).map(([key, label, value]) => {
    const tr = el("tr");
    tr.appendChild(el("td", label));
    tr.appendChild(el("td", value, { "data-metric": key }));
    return tr;
  }));
}
