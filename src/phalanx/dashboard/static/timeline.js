// phalanx dashboard, the "Timeline" view: the cluster's Events as the server keeps them (the newest
// entries only), newest first, filterable by category, namespace and object; a strip above them
// counts bindings, preemptions and failures over time. Clicking an entry selects its object, and
// the map highlights the nodes it is on (or the nodes the event names, for an object now gone).
"use strict";

const TIMELINE_SHOWN = 300;
const CATEGORY_COLOURS = { binding: "#5fd38d", preemption: "#c792ea", failure: "#ff7b72", scheduling: "#4fc3f7", other: "#8b96a3" };
const SELECT_KIND = { PodGroup: "podgroup", Job: "job", JobSet: "jobset", CompositePodGroup: "cpg", Node: "node",
  ResourceClaim: "claim", Workload: "workload", Pod: "pod" };

function timelineFilter() {
  const categories = new Set([...document.querySelectorAll("#timeline-categories input:checked")].map(i => i.value));
  const ns = document.getElementById("timeline-namespace").value.trim();
  const text = document.getElementById("timeline-object").value.trim().toLowerCase();
  return e => categories.has(e.category) && (!ns || e.object.namespace === ns) &&
    (!text || `${e.object.kind}/${e.object.namespace}/${e.object.name}`.toLowerCase().includes(text));
}

function selectEntry(e) {
  const kind = SELECT_KIND[e.object.kind];
  if (!kind) return;
  const key = kind === "node" ? e.object.name : `${e.object.namespace}/${e.object.name}`;
  dash.select(kind, key, { fallbackNodes: e.nodes });
  if (!HIGHLIGHTS[kind] || (kind !== "pod" && !dash.highlightedNodes.length && e.nodes.length)) {
    dash.highlightedNodes = [...e.nodes].sort();  // the object is gone: what the event names
    dash.requestDraw(true);
  }
}

function timeText(t) {
  const d = new Date(t);
  return isNaN(d) ? t : d.toLocaleTimeString([], { hour12: false });
}

function entryItem(e) {
  const li = el("li", undefined, { "data-uid": e.uid, "data-reason": e.reason, "data-category": e.category,
    "data-object": `${e.object.kind}/${e.object.namespace ? e.object.namespace + "/" : ""}${e.object.name}`,
    "data-nodes": e.nodes.join(",") });
  li.appendChild(el("span", timeText(e.time), { class: "when" }));
  li.appendChild(el("span", e.reason, { class: `reason ${e.category}` }));
  li.appendChild(el("span", `${e.object.kind} ${e.object.namespace ? e.object.namespace + "/" : ""}${e.object.name}`, { class: "object" }));
  li.appendChild(el("span", e.message + (e.count > 1 ? ` (×${e.count})` : ""), { class: "message" }));
  li.addEventListener("click", () => selectEntry(e));
  return li;
}

function drawStrip(entries) {
  const canvas = document.getElementById("timeline-strip"), ctx = canvas.getContext("2d");
  const w = canvas.width = Math.max(200, canvas.clientWidth), h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const times = entries.map(e => e.at * 1000).filter(t => t > 0);
  if (!times.length) return;
  let t0 = Infinity, t1 = -Infinity;
  for (const t of times) { t0 = Math.min(t0, t); t1 = Math.max(t1, t); }
  t1 = Math.max(t1, t0 + 1000);
  const buckets = 60;
  const counts = ["binding", "preemption", "failure"].map(() => new Array(buckets).fill(0));
  entries.forEach(e => {
    const i = ["binding", "preemption", "failure"].indexOf(e.category), t = e.at * 1000;
    if (i >= 0 && t > 0) counts[i][Math.min(buckets - 1, Math.floor((t - t0) / (t1 - t0) * buckets))] += e.count || 1;
  });
  const top = counts.flat().reduce((a, b) => Math.max(a, b), 1), bw = w / buckets;
  counts.forEach((series, i) => {
    ctx.fillStyle = CATEGORY_COLOURS[["binding", "preemption", "failure"][i]];
    series.forEach((n, b) => { if (n) { const bh = (h - 14) * n / top; ctx.fillRect(b * bw + i * bw / 3, h - 12 - bh, bw / 3 - 1, bh); } });
  });
  ctx.fillStyle = "#8b96a3"; ctx.font = "10px system-ui"; ctx.textBaseline = "bottom";
  ctx.fillText(timeText(new Date(t0).toISOString()), 2, h);
  ctx.textAlign = "right"; ctx.fillText(timeText(new Date(t1).toISOString()), w - 2, h); ctx.textAlign = "left";
  canvas.dataset.bindings = counts[0].reduce((a, b) => a + b, 0);
}

function renderTimeline() {
  const all = dash.list("timeline").sort((a, b) => b.at - a.at || b.seq - a.seq);
  const shown = all.filter(timelineFilter());
  const list = document.getElementById("timeline-list");
  list.replaceChildren(...shown.slice(0, TIMELINE_SHOWN).map(entryItem));
  document.getElementById("timeline-count").textContent =
    `${shown.length} of ${all.length} entries` + (shown.length > TIMELINE_SHOWN ? ` (newest ${TIMELINE_SHOWN} shown)` : "");
  drawStrip(shown);
}
dash.renderTimeline = renderTimeline;

dash.onChange(function timelineView(change) {
  if (dash.activeTab === "timeline" && change.collections.has("timeline")) renderTimeline();
});
for (const id of ["timeline-namespace", "timeline-object"]) document.getElementById(id).addEventListener("input", renderTimeline);
document.getElementById("timeline-categories").addEventListener("change", renderTimeline);
