// phalanx dashboard, the page's start: the tabs (only the open view does work: the workloads tree
// and the timeline are rendered, and the metrics polled, while shown) and the stream. The server
// sends the whole document once (`snapshot`) and then `patch` messages with the rows that changed;
// core.js applies them and every view updates what the patch touched.
"use strict";

dash.activeTab = "gangs";

function showTab(name) {
  dash.activeTab = name;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll("section.tab")) s.hidden = s.dataset.tab !== name;
  document.body.dataset.tab = name;
  if (name === "workloads" && dash.doc) dash.renderWorkloads(true);
  if (name === "timeline" && dash.doc) dash.renderTimeline();
  dash.metricsView(name === "metrics");
}
dash.showTab = showTab;

dash.onChange(function header(change) {
  document.getElementById("levels").textContent = dash.doc.levels.length
    ? dash.doc.levels.join(" → ") + " → node" : "(no topology labels: nodes)";
  if (change.snapshot || change.collections.size) dash.refreshSelectionLater();
});

// The selection's highlight follows the rows it depends on; redrawn on the next frame.
dash.refreshSelectionLater = function () {
  if (!dash.selected) return;
  dash.refreshSelection(false);
};

function connect() {
  const status = document.getElementById("status");
  status.textContent = "reading the cluster…";
  const source = new EventSource("/api/stream");
  const live = () => {
    status.textContent = `live · ${dash.rows.nodes.size} nodes · ${dash.rows.pendingPods.size} pending`;
    status.dataset.state = "live";
  };
  source.addEventListener("snapshot", e => { dash.receive("snapshot", e.data); live(); });
  source.addEventListener("patch", e => { dash.receive("patch", e.data); live(); });
  source.onerror = () => { status.textContent = "connection lost, retrying…"; status.dataset.state = "lost"; };
}

for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
showTab("gangs");
connect();
